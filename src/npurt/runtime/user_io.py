"""User arrays in and out of a model's native buffers: `pack_input` writes an input in the ONNX model's layout (or
NHWC images) into a bound input buffer (normalise, cast or quantise, lay out, pad); `unpack_output` reads a bound
output as float32 in the logical layout. `run_once` is the whole round trip on plain host memory (a reference for
tests and tools). The general I/O path (`npurt.runtime.convert`), the Pythonic tensors and the QNN graphs use them.
"""
from __future__ import annotations

import threading
from typing import Sequence

import numpy as np

import npurt._kernels as _kernels
from npurt.errors import ErrorCode, NpuError
from npurt.exec.bind import read_slot, write_slot
from npurt.exec.executor import Executor, allocate
from npurt.memory.mapping import typed_view
from npurt.model.attrs import QntType, TensorAttr, TensorStorage
from npurt.model.compiled import CompiledModel
from npurt.tensor import Layout


def _per_channel(v: Sequence[float] | None, channels: int, ndim: int) -> np.ndarray | None:
    if v is None:
        return None
    a = np.asarray(v, np.float32).reshape(-1)
    if a.size == 1 or ndim < 2:
        return a.reshape(()) if a.size == 1 else a
    if a.size != channels:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{a.size} normalisation values for {channels} channels")
    shape = [1] * ndim
    shape[1] = -1
    return a.reshape(shape)


def attr_storage(attr: TensorAttr, shape: Sequence[int]) -> TensorStorage:
    """The TensorStorage a native attr describes, for a tensor of logical `shape`."""
    dims = tuple(attr.dims)
    if attr.fmt is Layout.NHWC:
        n, h, w, c = dims
        dims = (n, h, attr.w_stride or w, c)
    quantized = attr.qnt_type is QntType.AFFINE_ASYMMETRIC
    logical = "float32" if (attr.type.is_float or quantized) else attr.type.numpy_dtype.name
    return TensorStorage(attr.name, tuple(int(d) for d in shape), logical, attr.type, attr.fmt, dims,
                         attr.w_stride, attr.size_with_stride, attr.size_with_stride, attr.scale, attr.zp, quantized)


def _logical_shape(attr: TensorAttr, shape: Sequence[int] | None) -> tuple[int, ...]:
    if shape is not None:
        return tuple(int(d) for d in shape)
    if attr.fmt is Layout.NHWC:
        n, h, w, c = attr.dims
        return (n, c, h, w)
    if attr.fmt is Layout.NC1HWC2:
        raise NpuError(ErrorCode.INVALID_ARGUMENT,
                       f"tensor {attr.name!r}: an NC1HWC2 attr does not say the channel count; pass shape=")
    return tuple(attr.dims)


def _check_view(attr: TensorAttr, view: np.ndarray) -> np.ndarray:
    if not isinstance(view, np.ndarray) or view.dtype != np.uint8:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tensor {attr.name!r}: expected a uint8 buffer view")
    raw = view.reshape(-1)
    if raw.size < attr.size_with_stride:
        raise NpuError(ErrorCode.INVALID_ARGUMENT,
                       f"tensor {attr.name!r}: buffer has {raw.size} bytes, needs {attr.size_with_stride}")
    return raw


_tls = threading.local()


def _frame_scratch(shape: tuple[int, ...]) -> np.ndarray:
    """A float32 scratch of `shape`, kept per thread and reused while the shape stays the same (a fresh
    allocation per frame costs page faults: about as much as the conversion itself for a 640x640 frame)."""
    buf = getattr(_tls, "frame", None)
    if buf is None or buf.shape != shape:
        buf = _tls.frame = np.empty(shape, np.float32)
    return buf


def _pack_nhwc(st: TensorStorage, x: np.ndarray, raw: np.ndarray, m: np.ndarray | None, s: np.ndarray | None,
               nhwc: bool) -> None:
    """NHWC native input from a user array `x` (NHWC when `nhwc`, else NCHW): normalise into one reused float32
    scratch in the user's order (contiguous passes), quantise in place if int8, then one casting (and, for NCHW,
    transposing) copy into the padded rows. The same arithmetic, in the same order, as the generic path, without
    its temporaries and fresh allocations."""
    n, c, h, w = st.shape
    src = x if nhwc else x.transpose(0, 2, 3, 1)
    float_in = st.logical_dtype.startswith("float")
    dst = typed_view(raw, st.dtype.numpy_dtype, st.dims)
    exact = x.dtype in (np.float32, np.float16, np.uint8, np.int8, np.uint16, np.int16)  # cast via f32 == direct
    if not float_in or (m is None and s is None and not st.quantized and exact):
        np.copyto(dst[:, :, :w, :], src, casting="unsafe")
    elif nhwc and _kernels.normalize_image(dst, x, 0.0 if m is None else m, 1.0 if s is None else s,
                                           (np.float32(1.0 / st.scale), np.float32(st.zp)) if st.quantized else None):
        return                              # one compiled pass (x - 0 and x / 1 are exact: the same bytes)
    else:
        # arithmetic in the user's order (contiguous passes), one transposing copy at the end if NCHW
        y = _frame_scratch(tuple(x.shape))
        chan = (lambda v: v.reshape(-1) if v.ndim else v) if nhwc else (lambda v: v)
        if m is not None:
            np.subtract(x, chan(m), out=y, dtype=np.float32)
        else:
            np.copyto(y, x, casting="unsafe")
        if s is not None:
            np.divide(y, chan(s), out=y)
        if st.quantized:
            np.multiply(y, np.float32(1.0 / st.scale), out=y)
            np.add(y, np.float32(st.zp), out=y)
            np.rint(y, out=y)
            np.clip(y, -128, 127, out=y)
        np.copyto(dst[:, :, :w, :], y if nhwc else y.transpose(0, 2, 3, 1), casting="unsafe")
    if st.dims[2] > w:
        dst[:, :, w:, :] = 0


def pack_input(attr: TensorAttr, user: np.ndarray, out_view: np.ndarray, mean: Sequence[float] | None = None,
               std: Sequence[float] | None = None, layout: str = "nchw", shape: Sequence[int] | None = None) -> None:
    """Write a user input (the ONNX model's layout, `layout="nhwc"` for NHWC images; any numeric dtype) into a
    bound input buffer described by its native attr: normalise with mean/std, cast or quantise, lay out, pad."""
    raw = _check_view(attr, out_view)
    x = np.asarray(user)
    if x.dtype.kind not in "biuf":
        raise NpuError(ErrorCode.INVALID_INPUT, f"input {attr.name!r}: dtype {x.dtype} is not a number an NPU "
                                                f"takes (complex, text and object arrays are refused)")
    if x.dtype.kind == "b":                 # BOOL inputs are the numbers 0 / 1, as the NPU reads them
        x = x.astype(np.uint8)
    nhwc = layout.lower() == "nhwc"
    if nhwc:
        if x.ndim != 4:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"input {attr.name!r}: layout nhwc needs a 4-D array")
    xs = x.transpose(0, 3, 1, 2) if nhwc else x
    logical = _logical_shape(attr, shape if shape is not None else (xs.shape if attr.fmt is Layout.NC1HWC2 else None))
    if tuple(xs.shape) != logical:
        raise NpuError(ErrorCode.INVALID_INPUT, f"input {attr.name!r}: shape {tuple(xs.shape)} != {logical}")
    st = attr_storage(attr, logical)
    is_float = st.logical_dtype.startswith("float")
    m = _per_channel(mean, logical[1] if len(logical) > 1 else 1, len(logical)) if is_float else None
    s = _per_channel(std, logical[1] if len(logical) > 1 else 1, len(logical)) if is_float else None
    if st.layout is Layout.NHWC and x.dtype.kind in "uif":
        _pack_nhwc(st, x, raw, m, s, nhwc)
        return
    x = xs
    if is_float:
        y = np.asarray(x, np.float32)
        if m is not None:
            y = y - m
        if s is not None:
            y = y / s
        if y is x:
            y = y.copy() if st.quantized else y
    else:
        y = x
    write_slot(st, raw, np.asarray(y))


def unpack_output(attr: TensorAttr, view: np.ndarray, shape: Sequence[int] | None = None) -> np.ndarray:
    """A bound output buffer (native attr layout/type) as a float32 array in the logical (ONNX) layout;
    integer outputs keep their dtype. `shape` is the logical shape (required for NC1HWC2)."""
    raw = _check_view(attr, view)
    return read_slot(attr_storage(attr, _logical_shape(attr, shape)), raw)


def run_once(compiled: CompiledModel, feeds: "dict[str, np.ndarray] | list[np.ndarray]") -> list[np.ndarray]:
    """Allocate host memory, pack `feeds` (ONNX layout), run, unpack float32 outputs."""
    weights, internal, ins, outs = allocate(compiled)
    ex = Executor(compiled)
    ex.bind(weights, internal, ins, outs)
    if isinstance(feeds, dict):
        feeds = [feeds[n] for n in compiled.graph.inputs]
    for i, (attr, x) in enumerate(zip(compiled.native_input_attrs, feeds)):
        pack_input(attr, x, ins[i], compiled.mean[i] if compiled.mean else None,
                   compiled.std[i] if compiled.std else None, shape=compiled.storage[attr.name].shape)
    ex.run()
    return [unpack_output(attr, outs[i], compiled.storage[attr.name].shape)
            for i, attr in enumerate(compiled.native_output_attrs)]
