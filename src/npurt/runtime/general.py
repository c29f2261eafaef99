"""The general (copying) I/O path of a `Context`: user arrays in (`set_inputs`: normalise, quantise, lay out, pad
into runtime-owned native input buffers), new arrays out (`get_outputs`: unpack, dequantise), as the vendor's
rknn_inputs_set / rknn_outputs_get do. The runtime-owned I/O buffers are sized once for the largest shape of the
model family and freed with the context.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.memory import SyncMode
from npurt.runtime import convert
from npurt.runtime.io_path import IoPath
from npurt.tensor import DType, Layout


@dataclass
class InputData:
    """One input of the general path: `data` holds the bytes (any numpy array; its bytes are read) in `dtype`
    and `layout` (the model's logical shape; NHWC for 4-D images), or the native bytes if `pass_through`.
    `dtype` None: UINT8, or the native input type with `pass_through` (which must be given in the native type:
    any other dtype is the vendor's "invalid dtype" error)."""

    index: int
    data: np.ndarray
    dtype: DType | None = None
    layout: Layout = Layout.NHWC
    pass_through: bool = False
    size: int | None = None          # bytes of `data` to consider (default: all)


class GeneralIo(IoPath):
    """The general path's state: runtime-owned native buffers per input and output (allocated on first use), which
    inputs were set for the current shapes, and whether a run left outputs to read (see the module doc)."""

    name = "general"

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        self._inputs: list[Any] = [None] * ctx.n_inputs
        self._outputs: list[Any] = [None] * ctx.n_outputs
        self._is_set = [False] * ctx.n_inputs
        self._has_outputs = False

    def _buffer(self, is_input: bool, index: int) -> Any:
        table = self._inputs if is_input else self._outputs
        if table[index] is None:
            ctx = self._ctx
            side = "native_input_attrs" if is_input else "native_output_attrs"
            size = max(getattr(m, side)[index].size_with_stride for m in ctx.family.all())
            table[index] = ctx.device.alloc(max(size, 1), owner=ctx.name,
                                            name=f"{'input' if is_input else 'output'}{index}")
            self.generation += 1
        return table[index]

    def set_inputs(self, inputs: Sequence[InputData]) -> None:
        """Convert each user input (normalise, quantise, lay out, pad) into runtime memory; every input is checked
        before any is written."""
        ctx = self._ctx
        if len(inputs) != ctx.n_inputs:
            ctx._log("warning", f"inputs_set: {len(inputs)} inputs given, the model has {ctx.n_inputs}")
        plans = []
        for item in inputs:
            if not isinstance(item.index, int) or not 0 <= item.index < ctx.n_inputs:
                raise NpuError(ErrorCode.INVALID_INPUT, f"input index {item.index} >= input_num {ctx.n_inputs}")
            native = ctx.compiled.native_input_attrs[item.index]
            shape = ctx.input_shape(item.index)
            raw = _as_bytes(item.data, item.size)
            dtype = DType.parse(item.dtype) if item.dtype is not None else \
                (native.type if item.pass_through else DType.UINT8)
            user = dataclasses.replace(native, type=dtype, fmt=Layout(item.layout),
                                       pass_through=int(bool(item.pass_through)), w_stride=0)
            if item.pass_through:
                if user.type is not native.type:      # the bytes go to the NPU as they are: only the native type
                    raise NpuError(ErrorCode.INVALID_INPUT,
                                   f"invalid dtype: input {native.name!r} is {user.type.value.upper()}, "
                                   f"request {native.type.value.upper()} (tensor type : "
                                   f"{user.type.value.upper()} not supported in pass_through == 1)")
                need = native.size_with_stride
            else:
                convert.check_format(user, native, shape, True)
                need = user.type.nbytes(math.prod(shape))
            if raw.size < need:
                raise NpuError(ErrorCode.INVALID_INPUT, f"param input size({raw.size}) < model input size({need})")
            plans.append((item.index, user, native, shape, raw))
        for index, user, native, shape, raw in plans:
            dst = self._buffer(True, index).device_view(np.uint8)
            convert.pack_user_input(user, native, raw, dst, shape, *convert.normalisation(ctx.compiled, index))
            self._is_set[index] = True

    def get_outputs(self, want_float: bool | Sequence[bool], indices: Sequence[int] | None) -> list[np.ndarray]:
        """The outputs of the last run as new arrays in the logical (ONNX) layout — float32 (want_float) or the
        model's output type."""
        ctx = self._ctx
        if not self._has_outputs:
            raise NpuError(ErrorCode.INVALID_OUTPUT, "no outputs yet: set the inputs and run first",
                           hint="outputs_before_run")
        indices = list(range(ctx.n_outputs)) if indices is None else list(indices)
        flags = [want_float] * len(indices) if isinstance(want_float, (bool, int)) else list(want_float)
        out = []
        for index, wf in zip(indices, flags):
            if not isinstance(index, int) or not 0 <= index < ctx.n_outputs:
                raise NpuError(ErrorCode.INVALID_OUTPUT, f"output index {index} >= output_num {ctx.n_outputs}")
            native = ctx.compiled.native_output_attrs[index]
            src = self._outputs[index].device_view(np.uint8)
            out.append(convert.output_as(native, src, ctx.output_shape(index), bool(wf)))
        return out

    def check_ready(self) -> None:
        names = self._ctx.compiled.graph.inputs
        for i, done in enumerate(self._is_set):
            if not done:
                raise NpuError(ErrorCode.INVALID_INPUT, f"input({names[i]}) is not set: set every input "
                                                        f"before running", hint="input_unset", name=names[i])
        for i in range(len(self._outputs)):
            self._buffer(False, i)

    def executor_views(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        return [b.device_view(np.uint8) for b in self._inputs], [b.device_view(np.uint8) for b in self._outputs]

    def after_run(self) -> None:
        """The runtime reads its own output memory, so it invalidates it."""
        for buf in self._outputs:
            buf.note_device_write()
            buf.sync(SyncMode.FROM_DEVICE)
        self._has_outputs = True

    def reset(self) -> None:
        self._is_set = [False] * len(self._is_set)
        self._has_outputs = False

    def owned_buffers(self) -> list[Any]:
        return [b for b in self._inputs + self._outputs if b is not None and b.alive]

    def release(self) -> None:
        for table in (self._inputs, self._outputs):
            for i, buf in enumerate(table):
                if buf is not None and buf.alive:
                    buf.free()
                table[i] = None


def _as_bytes(data: Any, size: int | None) -> np.ndarray:
    """The bytes of a user input as a flat uint8 array (no copy for contiguous arrays)."""
    arr = np.ascontiguousarray(data) if not isinstance(data, (bytes, bytearray, memoryview)) else \
        np.frombuffer(data, np.uint8)
    raw = arr.reshape(-1).view(np.uint8)
    if size is not None:
        if size < 0:
            raise NpuError(ErrorCode.INVALID_INPUT, f"input size {size} is negative")
        raw = raw[:size]
    return raw
