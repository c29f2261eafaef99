"""Shared machinery of the RKNN API mirror: platform gating, context lookup, struct coercion, attr conversion.
The status table and the `@mirror` boundary are in `npurt.rknn.boundary`.
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.memory.cargs import as_struct
from npurt.model.attrs import QntType, TensorAttr
from npurt.rknn import constants as c
from npurt.rknn import handles
from npurt.rknn.structs import rknn_tensor_attr
from npurt.soc import get_profile
from npurt.tensor import DType, Layout

TYPE_TO_DTYPE = {
    c.RKNN_TENSOR_FLOAT32: DType.FLOAT32, c.RKNN_TENSOR_FLOAT16: DType.FLOAT16, c.RKNN_TENSOR_INT8: DType.INT8,
    c.RKNN_TENSOR_UINT8: DType.UINT8, c.RKNN_TENSOR_INT16: DType.INT16, c.RKNN_TENSOR_UINT16: DType.UINT16,
    c.RKNN_TENSOR_INT32: DType.INT32, c.RKNN_TENSOR_UINT32: DType.UINT32, c.RKNN_TENSOR_INT64: DType.INT64,
    c.RKNN_TENSOR_BOOL: DType.BOOL, c.RKNN_TENSOR_INT4: DType.INT4, c.RKNN_TENSOR_BFLOAT16: DType.BFLOAT16,
}
DTYPE_TO_TYPE = {v: k for k, v in TYPE_TO_DTYPE.items()}
FMT_TO_LAYOUT = {c.RKNN_TENSOR_NCHW: Layout.NCHW, c.RKNN_TENSOR_NHWC: Layout.NHWC,
                 c.RKNN_TENSOR_NC1HWC2: Layout.NC1HWC2, c.RKNN_TENSOR_UNDEFINED: Layout.UNDEFINED}
LAYOUT_TO_FMT = {v: k for k, v in FMT_TO_LAYOUT.items()}
QNT_TO_RKNN = {QntType.NONE: c.RKNN_TENSOR_QNT_NONE, QntType.DFP: c.RKNN_TENSOR_QNT_DFP,
               QntType.AFFINE_ASYMMETRIC: c.RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC}
RKNN_TO_QNT = {v: k for k, v in QNT_TO_RKNN.items()}


def require_api(func: str, profile: Any = None) -> Any:
    """`profile` (default: the board's, from $NPURT_SOC) if seed table 3-1 marks `func` supported on it."""
    profile = profile or get_profile(None)
    if not profile.supports(func):
        raise NpuError(ErrorCode.NOT_SUPPORTED, f"not supported on {profile.name} (seed table 3-1)")
    return profile


def _handle_cell(obj: Any) -> Any:
    """The rknn_context (uint64, or uint32 under __arm__) that `obj` names, or None."""
    for cls in (ctypes.c_uint64, ctypes.c_uint32):
        cell = as_struct(obj, cls)
        if cell is not None:            # (a ctypes integer 0 is falsy)
            return cell
    return None


def ctx_value(ctx: Any) -> int | None:
    """The integer handle in what a caller passed as a context (rknn_context, pointer/byref to one, or int)."""
    cell = _handle_cell(ctx)
    value = ctx if cell is None else cell.value
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        return None
    return int(value)                               # a numpy integer holds a handle as well as an int


@dataclass
class RknnContext:
    """The mirror's side of one `rknn_context`: the neutral `Context`, the init flags, the runtime-allocated
    output buffers of `rknn_outputs_get`, and a device reference of its own (released last in rknn_destroy)."""

    context: Any                       # npurt.runtime.Context
    flags: int
    device: Any
    handle: int = 0
    outputs: dict[int, Any] = field(default_factory=dict)     # virt_addr -> Buffer handed out by outputs_get
    perf_text: bytes = b""             # keeps RKNN_QUERY_PERF_DETAIL's perf_data alive


def get_ctx(ctx: Any) -> RknnContext:
    """The live model context of `ctx`; RKNN_ERR_CTX_INVALID otherwise."""
    value = ctx_value(ctx)
    obj = handles.contexts.get(value, "rknn") if value is not None else None
    if obj is None:
        shown = f"{value:#x}" if isinstance(value, int) else repr(ctx)
        raise NpuError(ErrorCode.INVALID_CONTEXT, f"invalid context {shown}: not created by rknn_init / "
                                                  f"rknn_dup_context, or destroyed")
    return obj


def any_ctx(ctx: Any) -> Any:
    """The live context object of any kind (model or matmul) — for memory calls; CTX_INVALID otherwise."""
    value = ctx_value(ctx)
    obj = handles.contexts.get(value) if value is not None else None
    if obj is None:
        shown = f"{value:#x}" if isinstance(value, int) else repr(ctx)
        raise NpuError(ErrorCode.INVALID_CONTEXT, f"invalid context {shown}")
    return obj


def _checked(find: Callable[[Any], Any]) -> Callable[[Any, str], Any]:
    def resolve(ctx: Any, func: str) -> Any:
        obj = find(ctx)
        require_api(func, obj.device.profile)
        return obj
    return resolve


MODEL_CTX = _checked(get_ctx)
"""`@mirror(ctx=MODEL_CTX)`: the live model context of the handle, on a SoC whose API table lists the function."""
ANY_CTX = _checked(any_ctx)
"""`@mirror(ctx=ANY_CTX)`: the live context of any kind (memory calls), on a SoC whose API table lists the
function."""


def struct_arg(obj: Any, cls: type, what: str) -> Any:
    """The `cls` struct `obj` names (`npurt.memory.cargs.as_struct`); PARAM_INVALID naming `what` otherwise."""
    struct = as_struct(obj, cls)
    if struct is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"invalid {what}: expected {cls.__name__}, got "
                                                   f"{type(obj).__name__}")
    return struct


def fill_attr(dst: rknn_tensor_attr, a: TensorAttr) -> None:
    """Write a neutral TensorAttr into an rknn_tensor_attr in place (every field)."""
    ctypes.memset(ctypes.addressof(dst), 0, ctypes.sizeof(dst))
    dst.index = a.index
    dst.n_dims = a.n_dims
    for i, d in enumerate(a.dims[:c.RKNN_MAX_DIMS]):
        dst.dims[i] = int(d)
    dst.name = a.name.encode("utf-8")[:c.RKNN_MAX_NAME_LEN - 1]
    dst.n_elems = a.n_elems
    dst.size = a.size
    dst.fmt = LAYOUT_TO_FMT[a.fmt]
    dst.type = DTYPE_TO_TYPE[a.type]
    dst.qnt_type = QNT_TO_RKNN[a.qnt_type]
    dst.fl = a.fl
    dst.zp = a.zp
    dst.scale = a.scale
    dst.w_stride = a.w_stride
    dst.size_with_stride = a.size_with_stride
    dst.pass_through = a.pass_through
    dst.h_stride = a.h_stride


def read_attr(src: rknn_tensor_attr) -> TensorAttr:
    """A neutral TensorAttr from an rknn_tensor_attr (PARAM_INVALID naming an unknown type / fmt)."""
    dtype = TYPE_TO_DTYPE.get(src.type)
    if dtype is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tensor type : {c.get_type_string(src.type)} ({src.type}) not "
                                                   f"supported")
    layout = FMT_TO_LAYOUT.get(src.fmt)
    if layout is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tensor layout : {c.get_format_string(src.fmt)} ({src.fmt}) not "
                                                   f"supported")
    n_dims = min(int(src.n_dims), c.RKNN_MAX_DIMS)
    return TensorAttr(index=int(src.index), name=src.name.decode("utf-8", "replace"), n_dims=n_dims,
                      dims=[int(d) for d in src.dims[:n_dims]], n_elems=int(src.n_elems), size=int(src.size),
                      fmt=layout, type=dtype, qnt_type=RKNN_TO_QNT.get(src.qnt_type, QntType.NONE), fl=int(src.fl),
                      zp=int(src.zp), scale=float(src.scale), w_stride=int(src.w_stride),
                      size_with_stride=int(src.size_with_stride), pass_through=int(src.pass_through),
                      h_stride=int(src.h_stride))


def store_ctx(out: Any, value: int) -> None:
    """Write a handle into a C out-parameter (rknn_context, a pointer to it, or ctypes.byref of it)."""
    target = _handle_cell(out)
    if target is None:
        if isinstance(out, ctypes._Pointer) and not out:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, "context out-parameter is NULL")
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"context out-parameter must be an rknn_context, got "
                                                   f"{type(out).__name__}")
    target.value = value
