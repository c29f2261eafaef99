"""Conversions between a user's tensor format and a model's native one, for the two I/O paths.

A *format* is a `TensorAttr` as the user describes a buffer (type, fmt, w_stride, pass_through): the native attr
itself (no conversion: the executor reads or writes the user's memory), or an edited copy (e.g. input UINT8/NHWC,
output FLOAT32/NCHW), in which case the runtime converts between the user's buffer and a native staging buffer.
Input packing (normalisation with the model's mean/std, quantisation, layout, row padding) is
`npurt.runtime.user_io.pack_input`; output unpacking to float32 is `user_io.unpack_output`. Everything here works
on uint8 views of device memory.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Sequence

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.model.attrs import QntType, TensorAttr
from npurt.runtime.user_io import pack_input, unpack_output
from npurt.tensor import DType, Layout, nchw_to_nc1hwc2

INPUT_TYPES = (DType.UINT8, DType.INT8, DType.FLOAT16, DType.FLOAT32, DType.INT16, DType.INT32, DType.INT64,
               DType.BOOL)
OUTPUT_TYPES = (DType.FLOAT32, DType.FLOAT16, DType.INT8, DType.UINT8, DType.INT16, DType.INT32, DType.INT64,
                DType.BOOL)


def same_format(user: TensorAttr, native: TensorAttr) -> bool:
    """True when a buffer in `user`'s format is the native bytes (no conversion)."""
    if user.type is not native.type or user.fmt is not native.fmt:
        return False
    if native.fmt is Layout.NHWC and (user.w_stride or native.dims[2]) != (native.w_stride or native.dims[2]):
        return False
    return True


def required_bytes(user: TensorAttr, native: TensorAttr, shape: Sequence[int], is_input: bool) -> int:
    """Bytes a buffer in `user`'s format must have: native `size_with_stride` when unconverted; otherwise the
    edited type's element size times n_elems (inputs in NHWC: times N*H*w_stride*C, rows padded to w_stride)."""
    if same_format(user, native) or user.pass_through:
        return native.size_with_stride
    n_elems = math.prod(shape)
    if user.fmt is Layout.NC1HWC2:          # check_format allows it only where the native layout is NC1HWC2
        return user.type.nbytes(math.prod(native.dims))
    if is_input and user.fmt is Layout.NHWC and len(shape) == 4:
        n, c, h, w = shape
        ws = user.w_stride if user.w_stride and user.w_stride >= w else w
        return user.type.nbytes(n * h * ws * c)
    return user.type.nbytes(n_elems)


def check_format(user: TensorAttr, native: TensorAttr, shape: Sequence[int], is_input: bool) -> None:
    """INVALID_ARGUMENT (naming what is wrong, in the vendor's words) unless `user` is a format the runtime
    can convert to/from `native`."""
    if user.pass_through:
        if user.type is not native.type:
            raise NpuError(ErrorCode.INVALID_ARGUMENT,
                           f"tensor type : {user.type.value.upper()} not supported in pass_through == 1 "
                           f"(tensor type must be: {native.type.value.upper()})")
        if user.fmt is not native.fmt:
            raise NpuError(ErrorCode.INVALID_ARGUMENT,
                           f"tensor layout must be: {native.fmt.value}, but is: {user.fmt.value} (pass_through == 1)")
        return
    if same_format(user, native):
        return
    allowed = INPUT_TYPES if is_input else OUTPUT_TYPES
    if user.type not in allowed:
        raise NpuError(ErrorCode.INVALID_ARGUMENT,
                       f"tensor type : {user.type.value.upper()} not supported for "
                       f"{'input' if is_input else 'output'} {native.name!r}")
    four_d = len(shape) == 4
    if is_input and user.fmt is Layout.NC1HWC2:
        raise NpuError(ErrorCode.INVALID_ARGUMENT,
                       f"input {native.name!r}: NC1HWC2 input needs pass_through=1 with the native type")
    if four_d:
        ok = (Layout.NCHW, Layout.NHWC) + ((Layout.NC1HWC2,) if not is_input and native.fmt is Layout.NC1HWC2 else ())
        if user.fmt not in ok and not (user.fmt is native.fmt):
            raise NpuError(ErrorCode.INVALID_ARGUMENT,
                           f"tensor layout : {user.fmt.value} not supported for {native.name!r} "
                           f"(use {', '.join(x.value for x in ok)})")
    elif user.fmt not in (Layout.UNDEFINED, Layout.NCHW, native.fmt):
        raise NpuError(ErrorCode.INVALID_ARGUMENT,
                       f"tensor layout must be: {native.fmt.value}, but is: {user.fmt.value}")


def read_user_input(user: TensorAttr, raw: np.ndarray, shape: Sequence[int]) -> tuple[np.ndarray, str]:
    """The user's input bytes (`user` format) as an array in logical order: (array, "nchw" | "nhwc")."""
    dt = user.type.numpy_dtype
    if user.fmt is Layout.NHWC and len(shape) == 4:
        n, c, h, w = shape
        ws = user.w_stride if user.w_stride and user.w_stride >= w else w
        count = n * h * ws * c
        arr = raw[:count * dt.itemsize].view(dt).reshape(n, h, ws, c)[:, :, :w, :]
        return arr, "nhwc"
    count = math.prod(shape)
    return raw[:count * dt.itemsize].view(dt).reshape(tuple(shape)), "nchw"


def normalisation(compiled: Any, index: int) -> tuple[Any, Any]:
    """(mean, std) the compiled model applies to input `index`; (None, None) when it has none."""
    mean = compiled.mean[index] if compiled.mean else None
    std = compiled.std[index] if compiled.std else None
    return mean, std


def pack_user_input(user: TensorAttr, native: TensorAttr, src: np.ndarray, dst: np.ndarray,
                    shape: Sequence[int], mean=None, std=None) -> None:
    """Convert an input buffer in `user` format (`src`, uint8 view) into the native input (`dst`, uint8 view)."""
    if user.pass_through or same_format(user, native):
        n = native.size_with_stride
        np.copyto(dst[:n], src[:n])
        return
    arr, layout = read_user_input(user, src, shape)
    pack_input(native, arr, dst, mean, std, layout=layout, shape=tuple(shape))


def unpack_native_output(native: TensorAttr, src: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """A native output buffer as a float32 logical (NCHW / ONNX-order) array (integer outputs keep their type)."""
    return unpack_output(native, src, tuple(shape))


def cast_output(values: np.ndarray, user: TensorAttr, native: TensorAttr) -> np.ndarray:
    """Logical output values (float32 or integer) cast / quantised to `user.type` (quantised with the native
    attr's scale and zero point when the model's output is quantised)."""
    dt = user.type.numpy_dtype
    if user.type in (DType.INT8, DType.UINT8, DType.INT16) and native.qnt_type is QntType.AFFINE_ASYMMETRIC \
            and values.dtype.kind == "f":
        lo, hi = user.type.range()
        q = np.rint(values / np.float32(native.scale) + np.float32(native.zp))
        return np.clip(q, lo, hi).astype(dt)
    return values.astype(dt, copy=False)


def layout_output(values: np.ndarray, user: TensorAttr, native: TensorAttr) -> np.ndarray:
    """Logical NCHW values laid out as `user.fmt` (NHWC transposes; NC1HWC2 packs with the native C2)."""
    if values.ndim != 4:
        return values
    if user.fmt is Layout.NHWC:
        return np.ascontiguousarray(values.transpose(0, 2, 3, 1))
    if user.fmt is Layout.NC1HWC2:
        c2 = native.dims[4] if native.fmt is Layout.NC1HWC2 else 8
        c1 = native.dims[1] if native.fmt is Layout.NC1HWC2 else None
        return nchw_to_nc1hwc2(np.ascontiguousarray(values), c2, c1)
    return values


def write_user_output(user: TensorAttr, native: TensorAttr, src: np.ndarray, dst: np.ndarray,
                      shape: Sequence[int]) -> None:
    """Convert a native output (`src`, uint8 view) into the user's buffer (`dst`, uint8 view) in `user` format."""
    if user.pass_through or same_format(user, native):
        n = native.size_with_stride
        np.copyto(dst[:n], src[:n])
        return
    values = layout_output(cast_output(unpack_native_output(native, src, shape), user, native), user, native)
    b = values.reshape(-1).view(np.uint8)
    np.copyto(dst[:b.size], b)


def output_as(native: TensorAttr, src: np.ndarray, shape: Sequence[int], want_float: bool) -> np.ndarray:
    """General-API output: float32 (want_float) or the model's output type, in the logical (NCHW) layout."""
    values = unpack_native_output(native, src, shape)
    if want_float or values.dtype.kind != "f":
        return values
    as_native = dataclasses.replace(native, fmt=Layout.NCHW if len(shape) == 4 else Layout.UNDEFINED)
    return cast_output(values, as_native, native)
