"""The general (copying) path of a `Context`: user arrays in (`set_inputs`: normalise, quantise, lay out, pad into
runtime-owned native input buffers), new arrays out (`get_outputs`: unpack, dequantise), as the vendor's
rknn_inputs_set / rknn_outputs_get do. The runtime-owned I/O buffers are sized once for the largest shape of the
model family and freed with the context.

A mixin of `npurt.runtime.context.Context`: it uses the context's compiled model, device, options, busy guard and
general tables (`_gen_in`, `_gen_out`, `_gen_set`), and sets `io_mode` to "general".
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


class GeneralPath:
    """`set_inputs` / `get_outputs` and the general path's run hook (see the module doc)."""

    _gen_in: list[Any]
    _gen_out: list[Any]
    _gen_set: list[bool]
    compiled: Any
    device: Any
    options: Any

    def _general_buffer(self, is_input: bool, index: int) -> Any:
        table = self._gen_in if is_input else self._gen_out
        if table[index] is None:
            side = "native_input_attrs" if is_input else "native_output_attrs"
            size = max(getattr(m, side)[index].size_with_stride for m in self.family.all())
            table[index] = self.device.alloc(max(size, 1), owner=self.name,
                                             name=f"{'input' if is_input else 'output'}{index}")
            self._dirty = True
        return table[index]

    def set_inputs(self, inputs: Sequence[InputData]) -> None:
        """General path: convert each user input (normalise, quantise, lay out, pad) into runtime memory."""
        with self._busy("inputs_set"):
            self._require_runnable("inputs_set")
            self._require_io_mode_not("zero_copy")
            if not self.options.flush_inputs:
                raise NpuError(ErrorCode.INVALID_ARGUMENT, "a context that does not flush its inputs (flush_inputs "
                                                           "off) cannot take copied inputs", hint="no_flush_inputs")
            if len(inputs) != self.n_inputs:
                self._log("warning", f"inputs_set: {len(inputs)} inputs given, the model has {self.n_inputs}")
            plans = []
            for item in inputs:
                if not isinstance(item.index, int) or not 0 <= item.index < self.n_inputs:
                    raise NpuError(ErrorCode.INVALID_INPUT, f"input index {item.index} >= input_num {self.n_inputs}")
                native = self.compiled.native_input_attrs[item.index]
                shape = self.input_shape(item.index)
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
                dst = self._general_buffer(True, index).device_view(np.uint8)
                convert.pack_user_input(user, native, raw, dst, shape, *convert.normalisation(self.compiled, index))
                self._gen_set[index] = True
            self.io_mode = "general"

    def get_outputs(self, want_float: bool | Sequence[bool] = True,
                    indices: Sequence[int] | None = None) -> list[np.ndarray]:
        """General path: the outputs of the last run as new arrays in the logical (ONNX) layout — float32
        (want_float) or the model's output type."""
        with self._busy("outputs_get"):
            self._require_runnable("outputs_get")
            self._require_io_mode_not("zero_copy")
            if not self.options.invalidate_outputs:
                raise NpuError(ErrorCode.INVALID_ARGUMENT, "a context that does not invalidate its outputs "
                                                           "(invalidate_outputs off) cannot hand out copied outputs",
                               hint="no_invalidate_outputs")
            if not self._ran or self.io_mode != "general":
                raise NpuError(ErrorCode.INVALID_OUTPUT, "no outputs yet: set the inputs and run first",
                               hint="outputs_before_run")
            indices = list(range(self.n_outputs)) if indices is None else list(indices)
            flags = [want_float] * len(indices) if isinstance(want_float, (bool, int)) else list(want_float)
            out = []
            for index, wf in zip(indices, flags):
                if not isinstance(index, int) or not 0 <= index < self.n_outputs:
                    raise NpuError(ErrorCode.INVALID_OUTPUT, f"output index {index} >= output_num {self.n_outputs}")
                native = self.compiled.native_output_attrs[index]
                src = self._gen_out[index].device_view(np.uint8)
                out.append(convert.output_as(native, src, self.output_shape(index), bool(wf)))
            return out

    def _general_after_run(self) -> None:
        """After a run: the runtime reads its own output memory, so it invalidates it."""
        for buf in self._gen_out:
            buf.note_device_write()
            buf.sync(SyncMode.FROM_DEVICE)


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
