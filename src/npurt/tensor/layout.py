"""Tensor layouts (NCHW / NHWC / NC1HWC2 / UNDEFINED), native NC1HWC2 shapes, row strides and padded sizes.

Rules (the RKNN runtime guide's layouts section; worked examples in `tests/data/seed/nc1hwc2_examples.json`):
- NC1HWC2 dims are (N, C1, H, W, C2); memory order from fastest to slowest is C2, W, H, C1, N. Logical element
  (n, c, h, w) lives at flat index n*(C1*H*W*C2) + (c // C2)*(H*W*C2) + (h*W + w)*C2 + c % C2. C1 defaults to
  ceil(C / C2); the runtime may report a larger C1 (extra all-padding blocks), never a smaller one.
- A padded row stride `w_stride` >= W replaces W in the stored dims (pixels per stored row); padding is zero.
- `size_with_stride` is the byte size of the stored (padded) tensor: the product of the dims in the layout's own
  order with W replaced by w_stride, times the element size.
"""
from __future__ import annotations

import enum
import math
from typing import Sequence

from npurt.errors import ErrorCode, NpuError
from npurt.memory.cargs import as_int
from npurt.tensor.dtypes import DType


MAX_TENSOR_SIZE = (1 << 32) - 1      # n_elems / size / size_with_stride are uint32 in rknn_tensor_attr


class Layout(str, enum.Enum):
    """A tensor memory layout; values are the RKNN format names."""

    NCHW = "NCHW"
    NHWC = "NHWC"
    NC1HWC2 = "NC1HWC2"
    UNDEFINED = "UNDEFINED"

    def __str__(self) -> str:
        return self.value


def _bad(msg: str) -> NpuError:
    return NpuError(ErrorCode.INVALID_ARGUMENT, msg)


def _dims(shape: Sequence[int], ndim: int, what: str) -> tuple[int, ...]:
    dims = tuple(as_int(d, f"{what}: a dimension") for d in shape)
    if len(dims) != ndim:
        raise _bad(f"{what}: expected a {ndim}-D shape, got {dims}")
    if any(d < 0 for d in dims):
        raise _bad(f"{what}: negative dimension in {dims}")
    return dims


def align_up(value: int, align: int) -> int:
    """`value` rounded up to a multiple of `align` (align >= 1)."""
    value, align = as_int(value, "value"), as_int(align, "alignment")
    if align < 1:
        raise _bad(f"alignment must be >= 1, got {align}")
    return -(-value // align) * align


def c1_for(channels: int, c2: int) -> int:
    """The default C1 = ceil(channels / C2)."""
    channels, c2 = as_int(channels, "channels"), as_int(c2, "C2")
    if c2 < 1:
        raise _bad(f"C2 must be >= 1, got {c2}")
    if channels < 0:
        raise _bad(f"negative channel count {channels}")
    return -(-channels // c2)


def w_stride(width: int, align: int) -> int:
    """Pixels per stored row: `width` rounded up to the SoC's input alignment (`SocProfile.input_align`)."""
    if width < 0:
        raise _bad(f"negative width {width}")
    return align_up(width, align)


MAX_W_ALIGN = 4096          # a w_stride is the width aligned up; no alignment is coarser than this (elements)


def native_shape(shape_nchw: Sequence[int], c2: int, c1: int | None = None,
                 w_stride: int | None = None) -> tuple[int, int, int, int, int]:
    """NC1HWC2 dims (N, C1, H, W', C2) for a logical NCHW shape; W' = w_stride if given (>= W), else W.

    C1 defaults to ceil(C/C2); a larger C1 is accepted (extra padding blocks), a smaller one is INVALID_ARGUMENT.
    """
    n, c, h, w = _dims(shape_nchw, 4, "native_shape")
    c2 = as_int(c2, "C2")
    need = c1_for(c, c2)
    if c1 is None:
        c1 = need
    elif as_int(c1, "C1") < need:
        raise _bad(f"C1={c1} holds only {c1 * c2} channels, need {c} (C1 >= {need} for C2={c2})")
    ws = w if w_stride is None or w_stride == 0 else as_int(w_stride, "w_stride")
    if ws < w:
        raise _bad(f"w_stride {ws} is smaller than the width {w}")
    if ws > -(-w // MAX_W_ALIGN) * MAX_W_ALIGN:
        raise _bad(f"w_stride {ws} pads the width {w} past any alignment (at most {MAX_W_ALIGN} elements)")
    dims = (n, c1, h, ws, c2)
    if math.prod(dims) > MAX_TENSOR_SIZE:
        raise _bad(f"native shape {dims} holds {math.prod(dims)} elements, more than a tensor can "
                   f"({MAX_TENSOR_SIZE}: sizes are uint32 in the tensor attrs)")
    return dims


def logical_shape(native_dims: Sequence[int], channels: int, width: int | None = None) -> tuple[int, int, int, int]:
    """The logical NCHW shape stored in NC1HWC2 `native_dims`, given the real channel count (and width)."""
    n, c1, h, ws, c2 = _dims(native_dims, 5, "logical_shape")
    w = ws if width is None else as_int(width, "width")
    channels = as_int(channels, "channels")
    if not 0 <= channels <= c1 * c2:
        raise _bad(f"{channels} channels do not fit C1*C2 = {c1}*{c2} = {c1 * c2}")
    if not 0 <= w <= ws:
        raise _bad(f"width {w} does not fit the stored width {ws}")
    return (n, channels, h, w)


def size_with_stride(dims: Sequence[int], layout: Layout | str, dtype: DType | str,
                     w_stride: int | None = None) -> int:
    """Bytes of a stored tensor: prod(dims, W replaced by w_stride) * element size.

    `dims` are in the layout's own order: NCHW (N,C,H,W), NHWC (N,H,W,C) — each stored row holds w_stride*C
    elements, the zero-copy input rule — NC1HWC2 (N,C1,H,W,C2), UNDEFINED any shape (no w_stride allowed).
    w_stride None or 0 means "equal to the width" (as in `rknn_tensor_attr`).
    """
    lay = Layout(layout)
    dt = DType.parse(dtype)
    dims = tuple(as_int(d, "a dimension") for d in dims)
    if any(d < 0 for d in dims):
        raise _bad(f"negative dimension in {dims}")
    w_axis = {Layout.NCHW: (4, 3), Layout.NHWC: (4, 2), Layout.NC1HWC2: (5, 3)}.get(lay)
    if w_axis is None:
        if w_stride not in (None, 0):
            raise _bad("w_stride has no meaning for the UNDEFINED layout")
        return dt.nbytes(math.prod(dims))
    ndim, axis = w_axis
    dims = _dims(dims, ndim, f"size_with_stride({lay.value})")
    if w_stride not in (None, 0):
        w_stride = as_int(w_stride, "w_stride")
        if w_stride < dims[axis]:
            raise _bad(f"w_stride {w_stride} is smaller than the width {dims[axis]}")
        dims = dims[:axis] + (w_stride,) + dims[axis + 1:]
    return dt.nbytes(math.prod(dims))
