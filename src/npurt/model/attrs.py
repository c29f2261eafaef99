"""Tensor attributes as the vendor runtime reports them, and how each activation is stored.

`TensorAttr` has the field names of `rknn_tensor_attr` (`rknn_api.h`, SDK V2.3.2) with neutral enums (`Layout`, `DType`,
`QntType`); the RKNN mirror converts it to the ctypes struct. `TensorStorage` says how npurt stores one activation
in device memory (native layout, element type, quantisation, byte size) — the executor and planner read it.

Rules (the RKNN runtime guide's layouts section and the RKNN NPU SRAM guide):
- 4-D float activations are stored NC1HWC2 with the SoC's C2 for the stored type; others plain (UNDEFINED).
- Internal tensor sizes are C1*H*W*C2*elem bytes rounded up to 1 KiB (`INTERNAL_ALIGN`); inputs/outputs are not
  rounded.
- Native input: NHWC for 4-D inputs with 1, 3 or 4 channels (rows padded to `w_stride` = width aligned to the
  SoC's `input_align`), NC1HWC2 for other channel counts, NCHW for 4-D bool/int inputs, UNDEFINED for non-4-D.
- Native output: NC1HWC2 for 4-D, UNDEFINED otherwise; the NHWC variants report NHWC for 4-D.
- INPUT_ATTR of a 4-D float input is NHWC [N,H,W,C] as on the boards (= the NHWC variant); other inputs and
  OUTPUT_ATTR keep the ONNX layout.
- float32 precision (npurt's reference mode, not a vendor type) stores NC1HWC2 with the float16 C2.
"""
from __future__ import annotations

import enum
import math
from dataclasses import asdict, dataclass, field
from typing import Any

from npurt.plan.model_plan import INTERNAL_ALIGN
from npurt.soc import SocProfile
from npurt.tensor import DType, Layout, align_up, native_shape


class QntType(str, enum.Enum):
    """Quantisation kind of a tensor (rknn_tensor_qnt_type). Private here until npurt.tensor provides one."""

    NONE = "NONE"
    DFP = "DFP"
    AFFINE_ASYMMETRIC = "AFFINE"

    def __str__(self) -> str:
        return self.value


@dataclass
class TensorAttr:
    """One `rknn_tensor_attr`, vendor field names, neutral enums."""

    index: int
    name: str
    n_dims: int
    dims: list[int]
    n_elems: int
    size: int
    fmt: Layout
    type: DType
    qnt_type: QntType = QntType.NONE
    fl: int = 0
    zp: int = 0
    scale: float = 1.0
    w_stride: int = 0
    size_with_stride: int = 0
    pass_through: int = 0
    h_stride: int = 0

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["fmt"], d["type"], d["qnt_type"] = self.fmt.value, self.type.value, self.qnt_type.value
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "TensorAttr":
        d = dict(d)
        d["fmt"], d["type"], d["qnt_type"] = Layout(d["fmt"]), DType(d["type"]), QntType(d["qnt_type"])
        d["dims"] = [int(x) for x in d["dims"]]
        return cls(**d)


@dataclass
class TensorStorage:
    """How one activation (or model input/output) is stored: layout, stored type, quantisation, bytes.

    `dims` are in `layout` order (NC1HWC2: N,C1,H,W,C2; NHWC: N,H,w_stride,C; else the logical shape).
    `nbytes` is the stored size (with padding); `size` additionally rounded for internal tensors.
    """

    name: str
    shape: tuple[int, ...]          # logical (ONNX) shape
    logical_dtype: str              # numpy dtype of the logical tensor
    dtype: DType                    # stored element type
    layout: Layout
    dims: tuple[int, ...]
    w_stride: int
    nbytes: int
    size: int
    scale: float = 1.0
    zp: int = 0
    quantized: bool = False
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["dtype"], d["layout"] = self.dtype.value, self.layout.value
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "TensorStorage":
        d = dict(d)
        d["dtype"], d["layout"] = DType(d["dtype"]), Layout(d["layout"])
        d["shape"], d["dims"] = tuple(d["shape"]), tuple(d["dims"])
        return cls(**d)


def _c2(profile: SocProfile, dtype: DType) -> int:
    key = "float16" if dtype in (DType.FLOAT16, DType.FLOAT32) else dtype.value
    return profile.c2_for(key)


def storage_for(name: str, shape: tuple[int, ...], logical_dtype: str, stored: DType, profile: SocProfile,
                role: str = "internal", scale: float = 1.0, zp: int = 0, quantized: bool = False) -> TensorStorage:
    """The storage of a tensor of logical `shape` held as `stored`; role is internal, input or output."""
    is_float_stored = stored in (DType.FLOAT16, DType.FLOAT32, DType.INT8) and logical_dtype.startswith("float")
    n_elems = math.prod(shape)
    if len(shape) == 4 and is_float_stored:
        n, c, h, w = shape
        if role == "input" and c in (1, 3, 4):
            ws = align_up(w, profile.input_align)
            dims: tuple[int, ...] = (n, h, ws, c)
            nbytes = stored.nbytes(n * h * ws * c)
            return TensorStorage(name, tuple(shape), logical_dtype, stored, Layout.NHWC, dims, ws, nbytes, nbytes,
                                 scale, zp, quantized)
        dims = native_shape(shape, _c2(profile, stored))
        nbytes = stored.nbytes(math.prod(dims))
        size = align_up(nbytes, INTERNAL_ALIGN) if role == "internal" else nbytes
        return TensorStorage(name, tuple(shape), logical_dtype, stored, Layout.NC1HWC2, dims, w, nbytes, size,
                             scale, zp, quantized)
    layout = Layout.NCHW if len(shape) == 4 else Layout.UNDEFINED
    nbytes = stored.nbytes(n_elems)
    size = align_up(max(nbytes, 1), INTERNAL_ALIGN) if role == "internal" else nbytes
    return TensorStorage(name, tuple(shape), logical_dtype, stored, layout, tuple(shape),
                         shape[3] if len(shape) == 4 else 0, nbytes, size, scale, zp, quantized)


def _qnt(st: TensorStorage) -> dict[str, Any]:
    if st.quantized:
        return {"qnt_type": QntType.AFFINE_ASYMMETRIC, "zp": int(st.zp), "scale": float(st.scale)}
    return {}


def logical_attr(index: int, st: TensorStorage, profile: SocProfile, is_input: bool) -> TensorAttr:
    """INPUT_ATTR / OUTPUT_ATTR: the stored type and quantisation, in the layout the boards report.

    4-D float inputs are NHWC with dims [N,H,W,C], as the boards report them (and as the toolkit converts image
    models); w_stride is the width aligned to the SoC's input alignment — the NATIVE_NHWC_INPUT_ATTR. Other inputs
    and all outputs keep the ONNX layout and dims (NCHW for 4-D); 4-D float outputs have w_stride 0 and
    size_with_stride the native output's footprint (as librknnrt reports it: an output's size_with_stride is what a
    buffer for the native layout needs), so OUTPUT_ATTR and NATIVE_OUTPUT_ATTR agree on the bytes to allocate.
    """
    shape = list(st.shape)
    four_d_float = len(shape) == 4 and st.logical_dtype.startswith("float")
    if is_input and four_d_float:
        return native_nhwc_attr(index, st, profile, True)
    n_elems = math.prod(shape)
    size = st.dtype.nbytes(n_elems)
    fmt = Layout.NCHW if len(shape) == 4 else Layout.UNDEFINED
    sws = st.nbytes if four_d_float else size
    return TensorAttr(index, st.name, len(shape), shape, n_elems, size, fmt, st.dtype, size_with_stride=sws,
                      **_qnt(st))


def native_attr(index: int, st: TensorStorage) -> TensorAttr:
    """NATIVE_INPUT_ATTR / NATIVE_OUTPUT_ATTR: exactly how the bound buffer is laid out (the storage)."""
    n_elems = math.prod(st.shape)
    dims = list(st.dims)
    if st.layout is Layout.NHWC:        # NHWC reports the valid width; the padded row length is w_stride
        n, c, h, w = st.shape
        dims = [n, h, w, c]
    return TensorAttr(index, st.name, len(dims), dims, n_elems, st.dtype.nbytes(n_elems), st.layout,
                      st.dtype, w_stride=st.w_stride, size_with_stride=st.nbytes, **_qnt(st))


def native_nhwc_attr(index: int, st: TensorStorage, profile: SocProfile, is_input: bool) -> TensorAttr:
    """NATIVE_NHWC_INPUT_ATTR / NATIVE_NHWC_OUTPUT_ATTR: NHWC dims for 4-D float tensors, else as native."""
    if len(st.shape) != 4 or not st.logical_dtype.startswith("float"):
        return native_attr(index, st)
    n, c, h, w = st.shape
    ws = align_up(w, profile.input_align) if is_input else w
    n_elems = n * c * h * w
    return TensorAttr(index, st.name, 4, [n, h, w, c], n_elems, st.dtype.nbytes(n_elems), Layout.NHWC, st.dtype,
                      w_stride=ws, size_with_stride=st.dtype.nbytes(n * h * ws * c), **_qnt(st))
