"""The activations in-place steps handle (NC1HWC2 fp16, or quantised int8) and their stored values."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from npurt.exec.inplace.binding import StepBinding
from npurt.tensor import DType, Layout


class Skip(Exception):
    """Raised while preparing a step the in-place path does not handle; the executor keeps the generic path."""


def stored_kind(st) -> str | None:
    """'fp16' / 'int8' for a tensor stored as plain float16 or quantised int8, whatever its layout; else None."""
    if st.dtype is DType.FLOAT16 and not st.quantized:
        return "fp16"
    if st.dtype is DType.INT8 and st.quantized:
        return "int8"
    return None


def kind_of(st) -> str | None:
    """'fp16' / 'int8' for an NC1HWC2 activation the in-place steps handle, else None."""
    if st.layout is not Layout.NC1HWC2 or len(st.shape) != 4 or st.dims[3] != st.shape[3]:
        return None
    return stored_kind(st)


def activation(name: str, ctx: StepBinding, kind: Callable[[Any], str | None] = kind_of) -> tuple[Any, str]:
    """(storage, kind) of activation `name` (`kind`: which storage a step handles, NC1HWC2 by default); Skip when it
    is missing, a constant or not a kind the step handles."""
    if not name or name not in ctx.storage or name in ctx.constants:
        raise Skip
    st = ctx.storage[name]
    found = kind(st)
    if found is None:
        raise Skip
    return st, found


def constant_inputs(names, ctx: StepBinding) -> list:
    """The values of optional constant inputs (None where absent); Skip when one is computed at run time."""
    values = []
    for t in names:
        if not t:
            values.append(None)
        elif t in ctx.constants:
            values.append(ctx.constants[t])
        else:
            raise Skip
    return values


def dequantize(codes: np.ndarray, st) -> np.ndarray:
    """Stored int8 values as float32, exactly as `SlotReader.read` computes them."""
    t = np.empty(codes.shape, np.float32)
    np.multiply(codes, np.float32(st.scale), out=t)
    np.subtract(t, np.float32(st.zp * st.scale), out=t)
    return t


def quantize(y: np.ndarray, st) -> np.ndarray:
    """float32 values as stored int8, exactly as `SlotWriter._quantize` + the casting store compute them."""
    t = np.multiply(np.asarray(y, np.float32), np.float32(1.0 / st.scale))
    np.add(t, np.float32(st.zp), out=t)
    np.rint(t, out=t)
    np.clip(t, -128, 127, out=t)
    return t.astype(np.int8)


def all_values(kind: str, st) -> tuple[np.ndarray, np.ndarray]:
    """(bit pattern, float32 value) of every value `st` can store, in bit-pattern order."""
    if kind == "fp16":
        idx = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
        return idx, idx.view(np.float16).astype(np.float32)
    idx = np.arange(256, dtype=np.uint16).astype(np.uint8)
    return idx, dequantize(idx.view(np.int8), st)


def bits(a: np.ndarray) -> np.ndarray:
    """The same memory as unsigned bit patterns (uint16 for fp16, uint8 for int8)."""
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint8)


def same_storage_type(si, so) -> bool:
    """Stored values of `si` can be copied into `so` unchanged (same type, and same quantisation if int8)."""
    if si.dtype is not so.dtype or si.quantized != so.quantized:
        return False
    return not si.quantized or (si.scale == so.scale and si.zp == so.zp)
