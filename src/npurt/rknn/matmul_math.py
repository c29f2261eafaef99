"""Pure numpy core of the RKNN matmul mirror: type table, per-SoC tiles and limits, operand layouts (normal,
transposed, native B, "perf" A/C), int4 packing, quantisation and the computation itself.

Nothing here knows about contexts, handles or device memory: functions take numpy byte views and return or fill
arrays, so they can be tested alone and reused by `npurt.rknn.matmul`.

Facts (restated from `rknn_matmul_api.h` V2.3.2 and the RKNNRT API reference §3.5):

- C = A · B with A [M, K], B [K, N], C [M, N]. `B_layout`: NORM = [K, N] row-major, TP_NORM = [N, K] (B
  transposed), NATIVE = [N/subN, K/subK, subN, subK]. `AC_layout`: NORM, or the high-performance ("perf") layout
  A = [K/subK_A, M, subK_A], C = [N/subN_C, M, subN_C].
- Tile sizes per platform (header comments and table 3-5). The header calls the K/N alignments "bytes" but they are
  the element counts of the native tiles (e.g. RK3588 int8 B tile 32×32, fp16 16×32, int4 64×32); npurt requires
  K % subK == 0 and N % subN == 0 (the header's alignment limits).
- RK3588 splits a native B into ceil(K/8192) K-segments, RK3576 into ceil(K/4096); each segment is laid out natively
  on its own and the segments follow each other.
- RK3576 accepts mixed A/B types; B's tiles and alignment then follow A's type (table 3-5 note, table 3-7 note).

npurt's choices where the sources are silent (documented, easy to change):

- int4 packing (`npurt.tensor.pack_int4` / `unpack_int4`): two per byte, **low nibble first** in NORM / TP_NORM /
  perf layouts (what the vendor demo writes and the runtime reads), **high nibble first** in the native B layout
  (the vendor demo's native converter).
- C perf tile: 4 elements for 4-byte outputs (documented), 8 for 2-byte outputs (documented for int16; npurt
  uses it for float16 / bfloat16 too), 16 for int8 outputs.
- Supported types per SoC: npurt's reading of table 3-6 (flattened in the public text), with the types added
  after it (6, 12, 15 — mixed A/B types) on RK3576, the platform that takes mixed inputs. See `SOC_TYPES`.
- Rounding: round half to even, then saturate (int8 and int16 outputs).
- Per-group scales are stored as a [K/group_size, N] row-major array (scale of group g of column n at g*N + n).
- Per-channel B with an int32 output (get_quant_params' "scale normalisation"): C[m, n] = rint(acc[m, n] · s_n /
  s_max) with s_max = max_n s_n, the value `rknn_matmul_get_quant_params` reports; C's real scale is sA · s_max.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.rknn import constants as c
from npurt.tensor.dtypes import DType, pack_int4, unpack_int4

__all__ = [
    "TypeSpec", "MATMUL_TYPES", "SOC_TYPES", "RKNN_TYPE", "Tiles", "Shape", "Quant", "tiles_for", "k_segment",
    "check_info", "check_shape", "operand_attrs", "work_dtype", "pack_int4", "unpack_int4", "b_normal_to_native",
    "b_native_to_normal", "a_normal_to_perf", "c_perf_to_normal", "read_a", "read_b", "write_c", "check_quant",
    "compute", "normalised_b_scale",
]

MAX_K_SINGLE_CORE = 10240      # header: "K max: k <= 10240" (RK3588/RK3576 go beyond it by K-segmentation)


def _bad(message: str) -> NpuError:
    return NpuError(ErrorCode.INVALID_ARGUMENT, message)


# --- types ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TypeSpec:
    """Element types of A, B and C for one `rknn_matmul_type`."""

    value: int
    name: str
    a: DType
    b: DType
    c: DType

    @property
    def mixed(self) -> bool:
        """A and B have different element types (only RK3576 accepts these)."""
        return self.a is not self.b


_F16, _BF16, _F32 = DType.FLOAT16, DType.BFLOAT16, DType.FLOAT32
_I4, _I8, _I16, _I32 = DType.INT4, DType.INT8, DType.INT16, DType.INT32
MATMUL_TYPES: dict[int, TypeSpec] = {s.value: s for s in (
    TypeSpec(c.RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32, "RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32", _F16, _F16, _F32),
    TypeSpec(c.RKNN_INT8_MM_INT8_TO_INT32, "RKNN_INT8_MM_INT8_TO_INT32", _I8, _I8, _I32),
    TypeSpec(c.RKNN_INT8_MM_INT8_TO_INT8, "RKNN_INT8_MM_INT8_TO_INT8", _I8, _I8, _I8),
    TypeSpec(c.RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT16, "RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT16", _F16, _F16, _F16),
    TypeSpec(c.RKNN_FLOAT16_MM_INT8_TO_FLOAT32, "RKNN_FLOAT16_MM_INT8_TO_FLOAT32", _F16, _I8, _F32),
    TypeSpec(c.RKNN_FLOAT16_MM_INT8_TO_FLOAT16, "RKNN_FLOAT16_MM_INT8_TO_FLOAT16", _F16, _I8, _F16),
    TypeSpec(c.RKNN_FLOAT16_MM_INT4_TO_FLOAT32, "RKNN_FLOAT16_MM_INT4_TO_FLOAT32", _F16, _I4, _F32),
    TypeSpec(c.RKNN_FLOAT16_MM_INT4_TO_FLOAT16, "RKNN_FLOAT16_MM_INT4_TO_FLOAT16", _F16, _I4, _F16),
    TypeSpec(c.RKNN_INT8_MM_INT8_TO_FLOAT32, "RKNN_INT8_MM_INT8_TO_FLOAT32", _I8, _I8, _F32),
    TypeSpec(c.RKNN_INT4_MM_INT4_TO_INT16, "RKNN_INT4_MM_INT4_TO_INT16", _I4, _I4, _I16),
    TypeSpec(c.RKNN_INT8_MM_INT4_TO_INT32, "RKNN_INT8_MM_INT4_TO_INT32", _I8, _I4, _I32),
    TypeSpec(c.RKNN_FLOAT16_MM_INT4_TO_BFLOAT16, "RKNN_FLOAT16_MM_INT4_TO_BFLOAT16", _F16, _I4, _BF16),
    TypeSpec(c.RKNN_INT8_MM_INT4_TO_FLOAT16, "RKNN_INT8_MM_INT4_TO_FLOAT16", _I8, _I4, _F16),
)}

# rknn_tensor_type of each element type, for rknn_matmul_tensor_attr.type
RKNN_TYPE: dict[DType, int] = {
    _F32: c.RKNN_TENSOR_FLOAT32, _F16: c.RKNN_TENSOR_FLOAT16, _BF16: c.RKNN_TENSOR_BFLOAT16,
    _I4: c.RKNN_TENSOR_INT4, _I8: c.RKNN_TENSOR_INT8, _I16: c.RKNN_TENSOR_INT16, _I32: c.RKNN_TENSOR_INT32,
}

_SINGLE_CORE_TYPES = frozenset({c.RKNN_INT8_MM_INT8_TO_INT32, c.RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32})
SOC_TYPES: dict[str, frozenset[int]] = {
    "rk3562": _SINGLE_CORE_TYPES,
    "rk3566": _SINGLE_CORE_TYPES,
    "rk3568": _SINGLE_CORE_TYPES,
    "rv1126b": _SINGLE_CORE_TYPES,      # npurt's choice: grouped with RK3562 in table 3-1, absent from table 3-6
    "rk3576": frozenset({
        c.RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT16, c.RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32, c.RKNN_INT8_MM_INT8_TO_INT32,
        c.RKNN_FLOAT16_MM_INT8_TO_FLOAT32, c.RKNN_FLOAT16_MM_INT4_TO_FLOAT16, c.RKNN_FLOAT16_MM_INT4_TO_FLOAT32,
        c.RKNN_INT8_MM_INT4_TO_INT32,
        # added to the header after table 3-6; mixed A/B types, which only RK3576 takes (npurt's placement)
        c.RKNN_FLOAT16_MM_INT8_TO_FLOAT16, c.RKNN_FLOAT16_MM_INT4_TO_BFLOAT16, c.RKNN_INT8_MM_INT4_TO_FLOAT16,
    }),
    "rk3588": frozenset({
        c.RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT16, c.RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32, c.RKNN_INT8_MM_INT8_TO_INT32,
        c.RKNN_INT8_MM_INT8_TO_FLOAT32, c.RKNN_INT8_MM_INT8_TO_INT8, c.RKNN_INT4_MM_INT4_TO_INT16,
    }),
}


# --- tiles and limits ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tiles:
    """Native tile sizes: A perf [K/a_k, M, a_k], B native [N/b_n, K/b_k, b_n, b_k], C perf [N/c_n, M, c_n]."""

    a_k: int
    b_n: int
    b_k: int
    c_n: int


# (A perf subK, B native (subN, subK)) by platform group and element type (table 3-5, header comments)
_TILES = {
    "rk3566": {_I8: (8, (16, 32)), _F16: (4, (8, 16))},
    "rk3562": {_I8: (16, (16, 32)), _F16: (8, (8, 32))},
    "rk3588": {_I4: (32, (64, 32)), _I8: (16, (32, 32)), _F16: (8, (16, 32))},
}
_GROUP = {"rk3566": "rk3566", "rk3568": "rk3566", "rk3562": "rk3562", "rv1126b": "rk3562",
          "rk3576": "rk3588", "rk3588": "rk3588"}
_C_TILE = {4: 4, 2: 8, 1: 16}      # C perf subN by output element bytes (see the module doc)
_K_SEGMENT = {"rk3588": 8192, "rk3576": 4096}


def tiles_for(soc: str, spec: TypeSpec) -> Tiles:
    """Tile sizes of `spec` on `soc` (B's tiles follow A's type); INVALID_ARGUMENT if the SoC lacks them."""
    table = _TILES.get(_GROUP.get(soc, ""), {})
    if spec.a not in table:
        raise _bad(f"{spec.a.value} matmul inputs are not supported on {soc}")
    a_k, (b_n, b_k) = table[spec.a]
    return Tiles(a_k, b_n, b_k, _C_TILE[spec.c.numpy_dtype.itemsize])


def k_segment(soc: str) -> int | None:
    """K-segment length of native B on `soc` (RK3588 8192, RK3576 4096), None where B is not segmented."""
    return _K_SEGMENT.get(soc)


@dataclass(frozen=True)
class Shape:
    """One matmul problem as the runtime checked it."""

    M: int
    K: int
    N: int


def check_info(soc: str, type_: int, M: int, K: int, N: int, B_layout: int, AC_layout: int, B_quant_type: int,
               AC_quant_type: int, group_size: int) -> tuple[TypeSpec, Tiles]:
    """Validate one create request against the SoC's rules; INVALID_ARGUMENT naming the first violated rule."""
    spec = MATMUL_TYPES.get(int(type_))
    if spec is None:
        raise _bad(f"invalid matmul type: {int(type_)}")
    if int(type_) not in SOC_TYPES.get(soc, frozenset()):
        raise _bad(f"matmul type {spec.name} is not supported on {soc}")
    tiles = tiles_for(soc, spec)
    if B_layout not in (c.RKNN_MM_LAYOUT_NORM, c.RKNN_MM_LAYOUT_NATIVE, c.RKNN_MM_LAYOUT_TP_NORM):
        raise _bad(f"invalid B_layout: {B_layout}")
    if B_layout == c.RKNN_MM_LAYOUT_TP_NORM and _GROUP.get(soc) == "rk3566":
        raise _bad(f"B_layout RKNN_MM_LAYOUT_TP_NORM is not supported on {soc}")
    if AC_layout not in (c.RKNN_MM_LAYOUT_NORM, c.RKNN_MM_LAYOUT_NATIVE):
        raise _bad(f"invalid AC_layout: {AC_layout}")
    if AC_quant_type != c.RKNN_QUANT_TYPE_PER_LAYER_SYM:
        raise _bad(f"invalid AC_quant_type: {AC_quant_type}, A and C only support per-layer (0)")
    if not c.RKNN_QUANT_TYPE_PER_LAYER_SYM <= B_quant_type <= c.RKNN_QUANT_TYPE_PER_GROUP_ASYM:
        raise _bad(f"invalid B_quant_type: {B_quant_type}")
    if B_quant_type != c.RKNN_QUANT_TYPE_PER_LAYER_SYM and spec.b.is_float:
        raise _bad(f"B_quant_type {B_quant_type} needs an integer B, but {spec.name} has a float16 B")
    if B_quant_type in (c.RKNN_QUANT_TYPE_PER_GROUP_SYM, c.RKNN_QUANT_TYPE_PER_GROUP_ASYM):
        if not spec.c.is_float:
            raise _bad(f"per-group quantization needs a float output, {spec.name} outputs {spec.c.value}")
        if group_size <= 0 or K % group_size:
            raise _bad(f"invalid group_size: {group_size} (must be > 0 and divide K = {K})")
    check_shape(soc, spec, tiles, M, K, N)
    return spec, tiles


def check_shape(soc: str, spec: TypeSpec, tiles: Tiles, M: int, K: int, N: int) -> None:
    """M, K, N positive and aligned to the B tile; K within the single-core limit."""
    if M <= 0 or K <= 0 or N <= 0:
        raise _bad(f"invalid shape: M = {M}, K = {K}, N = {N} (all must be > 0)")
    if K % tiles.b_k:
        raise _bad(f"K = {K} must be aligned with {tiles.b_k} for {spec.name} on {soc}")
    if N % tiles.b_n:
        raise _bad(f"N = {N} must be aligned with {tiles.b_n} for {spec.name} on {soc}")
    if k_segment(soc) is None and K > MAX_K_SINGLE_CORE:
        raise _bad(f"K = {K} exceeds the limit {MAX_K_SINGLE_CORE} on {soc}")
    for value in (M * K, K * N, M * N):
        if value * 4 >= 1 << 32:
            raise _bad(f"shape M = {M}, K = {K}, N = {N} is too large (tensor sizes are uint32)")


def operand_attrs(spec: TypeSpec, tiles: Tiles, shape: Shape, B_layout: int,
                  AC_layout: int) -> dict[str, tuple[list[int], int, DType]]:
    """name -> (dims, size in bytes, element type) of A, B and C, as rknn_matmul_create reports them."""
    M, K, N = shape.M, shape.K, shape.N
    if AC_layout == c.RKNN_MM_LAYOUT_NATIVE:
        a_dims = [K // tiles.a_k, M, tiles.a_k]
        c_dims = [-(-N // tiles.c_n), M, tiles.c_n]
    else:
        a_dims, c_dims = [M, K], [M, N]
    if B_layout == c.RKNN_MM_LAYOUT_NATIVE:
        b_dims = [N // tiles.b_n, K // tiles.b_k, tiles.b_n, tiles.b_k]
    elif B_layout == c.RKNN_MM_LAYOUT_TP_NORM:
        b_dims = [N, K]
    else:
        b_dims = [K, N]
    out = {}
    for name, dims, dt in (("A", a_dims, spec.a), ("B", b_dims, spec.b), ("C", c_dims, spec.c)):
        out[name] = (dims, dt.nbytes(int(np.prod(dims))), dt)
    return out


# --- layouts (logical <-> stored) ----------------------------------------------------------------------------
def _elements(raw: np.ndarray, dt: DType, count: int, high_first: bool = False) -> np.ndarray:
    """The first `count` elements of type `dt` stored in the byte view `raw` (a view, except for int4)."""
    if dt is _I4:
        return unpack_int4(raw, count, high_first)
    return raw.reshape(-1)[: count * dt.numpy_dtype.itemsize].view(dt.numpy_dtype)


def _segments(K: int, seg: int | None) -> list[tuple[int, int]]:
    if seg is None or K <= seg:
        return [(0, K)]
    return [(k0, min(K, k0 + seg)) for k0 in range(0, K, seg)]


def b_native_to_normal(native: np.ndarray, K: int, N: int, dt: DType, tiles: Tiles, seg: int | None,
                       out: np.ndarray | None = None) -> np.ndarray:
    """Logical [K, N] B from native elements (flat, already unpacked), written into `out` (any dtype) if given."""
    out = np.empty((K, N), dtype=native.dtype) if out is None else out
    pos = 0
    for k0, k1 in _segments(K, seg):
        ks = k1 - k0
        count = ks * N
        tile4 = native[pos:pos + count].reshape(N // tiles.b_n, ks // tiles.b_k, tiles.b_n, tiles.b_k)
        dest = out[k0:k1].reshape(ks // tiles.b_k, tiles.b_k, N // tiles.b_n, tiles.b_n).transpose(2, 0, 3, 1)
        np.copyto(dest, tile4, casting="unsafe")
        pos += count
    return out


def b_normal_to_native(normal: np.ndarray, K: int, N: int, tiles: Tiles, seg: int | None) -> np.ndarray:
    """Native element order (flat) of a logical [K, N] B (K-segmented where the SoC does it)."""
    parts = []
    for k0, k1 in _segments(K, seg):
        ks = k1 - k0
        blk = normal[k0:k1].reshape(ks // tiles.b_k, tiles.b_k, N // tiles.b_n, tiles.b_n)
        parts.append(blk.transpose(2, 0, 3, 1).reshape(-1))
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def a_normal_to_perf(a: np.ndarray, sub_k: int) -> np.ndarray:
    """[M, K] -> perf [K/sub_k, M, sub_k] (flat order), the vendor's `norm_layout_to_perf_layout`."""
    M, K = a.shape
    return a.reshape(M, K // sub_k, sub_k).transpose(1, 0, 2).reshape(-1)


def c_perf_to_normal(perf: np.ndarray, M: int, N: int, sub_n: int) -> np.ndarray:
    """Perf [ceil(N/sub_n), M, sub_n] (flat) -> [M, N], dropping padding columns."""
    n1 = -(-N // sub_n)
    return perf[: n1 * M * sub_n].reshape(n1, M, sub_n).transpose(1, 0, 2).reshape(M, n1 * sub_n)[:, :N]


def work_dtype(dt: DType) -> np.dtype:
    """Working dtype of an input: float32 (float16 values are exact in it and the NPU accumulates fp16 in fp32;
    int4/int8 values are exact too, and `compute` keeps integer sums exact by accumulating in bounded K-chunks)."""
    return np.dtype(np.float32)


def read_a(raw: np.ndarray, spec: TypeSpec, tiles: Tiles, shape: Shape, AC_layout: int) -> np.ndarray:
    """Logical [M, K] A in its working dtype: one conversion pass from the bound bytes."""
    M, K = shape.M, shape.K
    flat = _elements(raw, spec.a, M * K)
    out = np.empty((M, K), dtype=work_dtype(spec.a))
    if AC_layout == c.RKNN_MM_LAYOUT_NATIVE:
        src = flat.reshape(K // tiles.a_k, M, tiles.a_k)
        np.copyto(out.reshape(M, K // tiles.a_k, tiles.a_k).transpose(1, 0, 2), src, casting="unsafe")
    else:
        np.copyto(out, flat.reshape(M, K), casting="unsafe")
    return out


def read_b(raw: np.ndarray, spec: TypeSpec, tiles: Tiles, shape: Shape, B_layout: int, seg: int | None,
           work: np.dtype) -> np.ndarray:
    """Logical [K, N] B in the working dtype `work`: one conversion pass from the bound bytes."""
    K, N = shape.K, shape.N
    if B_layout == c.RKNN_MM_LAYOUT_NATIVE:
        flat = _elements(raw, spec.b, K * N, high_first=True)
        return b_native_to_normal(flat, K, N, spec.b, tiles, seg, out=np.empty((K, N), dtype=work))
    flat = _elements(raw, spec.b, K * N)
    if B_layout == c.RKNN_MM_LAYOUT_TP_NORM:
        return flat.reshape(N, K).T.astype(work)
    return flat.reshape(K, N).astype(work)


def write_c(raw: np.ndarray, values: np.ndarray, spec: TypeSpec, tiles: Tiles, shape: Shape, AC_layout: int) -> None:
    """Store [M, N] C values (already in C's numpy dtype) straight into the byte view `raw`, in C's layout
    (perf layout: padding columns of the last tile, if any, are written as 0)."""
    M, N = shape.M, shape.N
    dt = spec.c.numpy_dtype
    if AC_layout == c.RKNN_MM_LAYOUT_NATIVE:
        n1 = -(-N // tiles.c_n)
        dest = raw.reshape(-1)[: n1 * M * tiles.c_n * dt.itemsize].view(dt).reshape(n1, M, tiles.c_n)
        if n1 * tiles.c_n != N:
            padded = np.zeros((M, n1 * tiles.c_n), dtype=dt)
            padded[:, :N] = values
            values = padded
        np.copyto(dest.transpose(1, 0, 2), values.reshape(M, n1, tiles.c_n))
        return
    np.copyto(raw.reshape(-1)[: M * N * dt.itemsize].view(dt).reshape(M, N), values)


# --- quantisation --------------------------------------------------------------------------------------------
@dataclass
class Quant:
    """Quantisation parameters of one operand (scale float32 array, zero point int32 array; zp may be empty)."""

    scale: np.ndarray
    zp: np.ndarray

    @classmethod
    def default(cls) -> "Quant":
        """The runtime's default when set_quant_params was never called: scale 1.0, zero point 0."""
        return cls(np.ones(1, dtype=np.float32), np.zeros(1, dtype=np.int32))

    @property
    def zp_or_zero(self) -> np.ndarray:
        return self.zp if self.zp.size else np.zeros_like(self.scale, dtype=np.int32)


def check_quant(name: str, q: Quant, spec: TypeSpec, shape: Shape, B_quant_type: int, group_size: int) -> None:
    """Validate quantisation parameters for operand `name` ("A", "B" or "C"); INVALID_ARGUMENT if wrong."""
    dt = {"A": spec.a, "B": spec.b, "C": spec.c}[name]
    if dt.is_float:
        raise _bad(f"tensor {name} of {spec.name} is {dt.value}: it takes no quantization parameters")
    if name != "B" or B_quant_type in (c.RKNN_QUANT_TYPE_PER_LAYER_SYM, c.RKNN_QUANT_TYPE_PER_LAYER_ASYM):
        want, kind = 1, "per-layer"
    elif B_quant_type in (c.RKNN_QUANT_TYPE_PER_CHANNEL_SYM, c.RKNN_QUANT_TYPE_PER_CHANNEL_ASYM):
        want, kind = shape.N, "per-channel"
    else:
        want, kind = shape.N * shape.K // group_size, "per-group"
    if q.scale.size != want:
        raise _bad(f"{name} {kind} scale_len must be {want}, but is {q.scale.size}")
    if q.zp.size not in (0, want):
        raise _bad(f"{name} {kind} zp_len must be {want} (or 0), but is {q.zp.size}")
    if not np.all(np.isfinite(q.scale)) or np.any(q.scale <= 0):
        raise _bad(f"{name} scales must be finite and > 0")
    lo, hi = dt.range()
    if q.zp.size and (q.zp.min() < lo or q.zp.max() > hi):
        raise _bad(f"{name} zero points must be in the {dt.value} range {lo}..{hi}")
    symmetric = name != "B" or B_quant_type in (c.RKNN_QUANT_TYPE_PER_LAYER_SYM, c.RKNN_QUANT_TYPE_PER_CHANNEL_SYM,
                                                c.RKNN_QUANT_TYPE_PER_GROUP_SYM)
    if name == "B" and symmetric and np.any(q.zp != 0):
        raise _bad("B quantization is symmetric (B_quant_type): zero points must be 0")


def _broadcast_b(values: np.ndarray, shape: Shape, B_quant_type: int, group_size: int) -> np.ndarray:
    """Per-layer / per-channel / per-group B parameters broadcast to [K, N] (or [1, N] / scalar)."""
    if values.size == 1:
        return values.reshape(1, 1)
    if values.size == shape.N:
        return values.reshape(1, shape.N)
    groups = values.reshape(shape.K // group_size, shape.N)
    return np.repeat(groups, group_size, axis=0)


_EXACT_F32 = 1 << 24          # integers up to 2**24 are exact in float32


def _exact_matmul(a: np.ndarray, b: np.ndarray, bound: int) -> np.ndarray:
    """Exact A·B (float64) of integer-valued float32 operands whose products are at most `bound` in magnitude:
    float32 BLAS over K-chunks short enough that every partial sum stays below 2**24, summed in float64."""
    K = a.shape[1]
    step = max(1, _EXACT_F32 // max(1, bound))
    if step >= K:
        return np.matmul(a, b).astype(np.float64)
    acc = np.zeros((a.shape[0], b.shape[1]), dtype=np.float64)
    for k0 in range(0, K, step):
        acc += np.matmul(a[:, k0:k0 + step], b[k0:k0 + step])
    return acc


def _magnitude(dt: DType, zp: np.ndarray) -> int:
    """Largest |q - zp| of an integer operand."""
    lo, hi = dt.range()
    z = int(np.abs(zp).max()) if zp.size else 0
    return max(-lo, hi) + z


def compute(a: np.ndarray, b: np.ndarray, spec: TypeSpec, shape: Shape, quant: dict[str, Quant],
            B_quant_type: int, group_size: int) -> np.ndarray:
    """C values in C's numpy dtype from logical A [M, K] and B [K, N] (both float32, see `work_dtype`).

    float16 inputs accumulate in float32, like the NPU. Integer accumulations are exact (`_exact_matmul`);
    per-layer / per-channel scales are applied to the exact sums, per-group ones to B before a float64 product.
    Outputs are rounded half to even and saturated.
    """
    qa, qb, qc = quant["A"], quant["B"], quant["C"]
    out_dt = spec.c.numpy_dtype
    if spec.a.is_float and spec.b.is_float:                         # fp16 x fp16, fp32 accumulation
        return np.matmul(a, b).astype(out_dt)
    zp_a = float(qa.zp[0]) if not spec.a.is_float and qa.zp.size else 0.0
    a_c = a - np.float32(zp_a) if zp_a else a
    zp_b = _broadcast_b(qb.zp_or_zero.astype(np.float32), shape, B_quant_type, group_size)
    b_c = b - zp_b if np.any(zp_b) else b
    s_b = _broadcast_b(qb.scale.astype(np.float64), shape, B_quant_type, group_size)
    if spec.a.is_float:                                             # fp16 x int8/int4: dequantised B
        return np.matmul(a_c, (b_c * s_b).astype(np.float32)).astype(out_dt)
    sa = float(qa.scale[0])
    if s_b.shape[0] > 1:                                            # per-group B (float output only)
        return (np.matmul(a_c.astype(np.float64), b_c * s_b) * sa).astype(out_dt)
    acc = _exact_matmul(a_c, b_c, _magnitude(spec.a, qa.zp) * _magnitude(spec.b, qb.zp))
    if spec.c.is_float:
        return (acc * (sa * s_b)).astype(out_dt)
    if spec.c is _I8:
        real = acc * (sa * s_b) / float(qc.scale[0])
        q = np.rint(real) + float(qc.zp_or_zero[0])
        return np.clip(q, -128, 127).astype(np.int8)
    if spec.c is _I32 and qb.scale.size > 1:                        # per-channel scale normalisation
        s = qb.scale.astype(np.float64)
        acc = np.rint(acc * (s / s.max()).reshape(1, -1))
    lo, hi = spec.c.range()
    return np.clip(acc, lo, hi).astype(out_dt)


def normalised_b_scale(q: Quant) -> float:
    """The single B scale of get_quant_params: the largest per-channel scale (see the module doc)."""
    return float(np.max(q.scale))
