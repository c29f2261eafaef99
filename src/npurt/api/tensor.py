"""`DeviceTensor`: one model input or output of a `Session`, living in device memory in the model's native layout
and element type — the Pythonic face of a bound `rknn_tensor_mem`.

Why: the vendor's Python Lite API has no zero-copy path; here the tensor *is* the memory the executor reads
(inputs) or writes (outputs). `numpy()` is a view of it (no copy), `write()` converts a frame once straight into
it, `read()` decodes it to the logical float32 array.

    xin = session.input(0)
    xin.write(frame_u8_nhwc, layout="nhwc")   # normalise / quantise / pad once, into device memory
    session.run()                             # no copies
    y = session.output(0).read()              # logical float32 (NCHW / ONNX order)
    raw = session.output(0).numpy()           # native bytes, e.g. (1, C1, H, W, C2) float16, a view
"""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.model.attrs import TensorAttr
from npurt.tensor import Layout


def storage_dims(attr: TensorAttr) -> tuple[int, ...]:
    """The shape of the native bytes: NHWC rows padded to `w_stride`, NC1HWC2 and plain dims as reported."""
    dims = tuple(int(d) for d in attr.dims)
    if attr.fmt is Layout.NHWC and len(dims) == 4:
        n, h, w, c = dims
        return (n, h, attr.w_stride or w, c)
    return dims


class DeviceTensor:
    """An input or output of a `Session` in device memory (native layout and type). See the module doc.

    Attributes: `name`, `index`, `is_input`, `attr` (the native `TensorAttr`), `shape` (native storage dims, what
    `numpy()` returns), `logical_shape` (ONNX order), `dtype` (numpy), `layout` ("NHWC", "NC1HWC2", ...), `fd`,
    `virt_addr`, `dev_addr`, `nbytes`. Using it after its session closed raises `NpuError(INVALID_HANDLE)`.
    """

    def __init__(self, buffer: Any, attr: TensorAttr, logical_shape: Sequence[int], index: int, is_input: bool,
                 mean: Sequence[float] | None = None, std: Sequence[float] | None = None) -> None:
        self._buffer = buffer
        self._attr = attr
        self.index = index
        self.is_input = is_input
        self.logical_shape = tuple(int(d) for d in logical_shape)
        self._mean, self._std = mean, std

    # --- what it is -----------------------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._attr.name

    @property
    def attr(self) -> TensorAttr:
        """A copy of the native attr (type, fmt, dims, w_stride, size_with_stride, quantisation)."""
        return dataclasses.replace(self._attr, dims=list(self._attr.dims))

    @property
    def shape(self) -> tuple[int, ...]:
        return storage_dims(self._attr)

    @property
    def dtype(self) -> np.dtype:
        return self._attr.type.numpy_dtype

    @property
    def layout(self) -> str:
        return self._attr.fmt.value

    @property
    def nbytes(self) -> int:
        return int(self._attr.size_with_stride)

    @property
    def fd(self) -> int:
        self._alive()
        return self._buffer.fd

    @property
    def virt_addr(self) -> int:
        self._alive()
        return self._buffer.virt_addr

    @property
    def dev_addr(self) -> int:
        self._alive()
        return self._buffer.dev_addr

    @property
    def buffer(self) -> Any:
        """The `npurt.memory.Buffer` behind the tensor (shared with other processes via its fd)."""
        self._alive()
        return self._buffer

    def _alive(self) -> None:
        if not self._buffer.alive:
            raise NpuError(ErrorCode.INVALID_HANDLE, f"tensor {self.name!r}: its session has been closed")

    # --- views ------------------------------------------------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """A writable view of the device memory in native layout and type (the CPU's side of the cache)."""
        self._alive()
        return self._buffer.cpu_view(self.dtype, self.shape, nbytes=self.nbytes)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        view = self.numpy()
        if copy:
            view = view.copy()
        return view if dtype is None else view.astype(dtype, copy=False)

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self.numpy().__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)           # kDLCPU: host-mapped device memory

    def _u8(self) -> np.ndarray:
        self._alive()
        return self._buffer.cpu_view(np.uint8, nbytes=self.nbytes)

    # --- conversions --------------------------------------------------------------------------------------------
    def write(self, array: Any, layout: str | None = None) -> "DeviceTensor":
        """Convert `array` (logical values, any numeric dtype) into the tensor: the model's mean/std, cast or
        quantise, lay out, pad rows — one pass into device memory. `layout` "nchw" (the ONNX order) or "nhwc"
        for 4-D inputs; None guesses from the shape (NCHW when both fit)."""
        if not self.is_input:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"output {self.name!r} is written by the model, not by write()")
        from npurt.runtime.user_io import pack_input
        arr = np.asarray(array)
        fmt = (layout or self._guess_layout(arr)).lower()
        if fmt not in ("nchw", "nhwc"):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"layout must be 'nchw' or 'nhwc', got {layout!r}")
        if fmt == "nhwc" and arr.ndim != 4:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"input {self.name!r}: layout nhwc needs a 4-D array")
        want = self.logical_shape if fmt == "nchw" or arr.ndim != 4 else _to_nhwc(self.logical_shape)
        if tuple(arr.shape) != want:
            raise NpuError(ErrorCode.INVALID_INPUT, f"input {self.name!r}: shape {tuple(arr.shape)} != {want} "
                                                    f"({fmt.upper()})")
        pack_input(self._attr, arr, self._u8(), self._mean, self._std, layout=fmt, shape=self.logical_shape)
        return self

    def _guess_layout(self, arr: np.ndarray) -> str:
        if arr.ndim == 4 and tuple(arr.shape) != self.logical_shape and tuple(arr.shape) == _to_nhwc(
                self.logical_shape):
            return "nhwc"
        return "nchw"

    def read(self) -> np.ndarray:
        """The tensor's logical values as a new array: float32 in the ONNX order (integer tensors keep their type)."""
        from npurt.runtime.user_io import unpack_output
        return unpack_output(self._attr, self._u8(), self.logical_shape)

    to_numpy = read
    float = read

    def sync(self, mode: str | int = "both") -> None:
        """Cache maintenance of the memory: "to_device" (after CPU writes), "from_device" (before CPU reads of
        device writes) or "both". Only matters on a `strict`/`check` device and for memory the runtime does not
        sync itself; `Session.run` syncs its own tensors as the vendor runtime does."""
        self._alive()
        self._buffer.sync(mode)

    def __repr__(self) -> str:
        side = "input" if self.is_input else "output"
        state = "" if self._buffer.alive else " closed"
        return (f"<DeviceTensor {side} {self.index} {self.name!r} {self.layout} {self.dtype} {self.shape} "
                f"logical={self.logical_shape}{state}>")


def _to_nhwc(shape: Sequence[int]) -> tuple[int, ...]:
    if len(shape) != 4:
        return tuple(shape)
    n, c, h, w = shape
    return (n, h, w, c)
