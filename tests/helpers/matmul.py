"""Helpers shared by the matmul mirror tests: memory like the C demo uses it, operands, references.

Memory is touched the way C does it (`memcpy` to / from `mem->virt_addr`), through ctypes.memmove / string_at on
the real host address the mirror handed out.
"""
from __future__ import annotations

import ctypes

import numpy as np

from npurt.rknn import constants as c
from npurt.rknn import matmul_math as mm
from npurt.rknn.api import rknn_create_mem, rknn_destroy_mem  # noqa: F401 - re-exported for the tests
from npurt.rknn.structs import rknn_quant_params, rknn_tensor_mem
from npurt.tensor.dtypes import DType


def write(mem: rknn_tensor_mem, data: np.ndarray) -> None:
    """memcpy(mem->virt_addr, data, nbytes)."""
    data = np.ascontiguousarray(data)
    ctypes.memmove(mem.virt_addr, data.ctypes.data, data.nbytes)


def read(mem: rknn_tensor_mem, nbytes: int, dtype) -> np.ndarray:
    """A copy of the first `nbytes` at mem->virt_addr, as `dtype`."""
    return np.frombuffer(ctypes.string_at(mem.virt_addr, nbytes), dtype=dtype).copy()


def operands(spec: mm.TypeSpec, M: int, K: int, N: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Random logical A [M, K] and B [K, N] in the types' value ranges (int4 as int8 values)."""
    def one(dt, shape):
        if dt is DType.FLOAT16:
            return rng.uniform(-1, 1, shape).astype(np.float16)
        lo, hi = dt.range()
        return rng.integers(lo, hi + 1, shape).astype(np.int8)
    return one(spec.a, (M, K)), one(spec.b, (K, N))


def stored(values: np.ndarray, dt: DType, high_first: bool = False) -> np.ndarray:
    """The bytes of logical values of type `dt` (int4 packed)."""
    if dt is DType.INT4:
        return mm.pack_int4(values.reshape(-1), high_first=high_first)
    return np.ascontiguousarray(values.reshape(-1))


def stored_a(a: np.ndarray, spec: mm.TypeSpec, tiles: mm.Tiles, AC_layout: int) -> np.ndarray:
    """A as the user writes it: [M, K] or perf [K/subK, M, subK] (the vendor's norm_layout_to_perf_layout)."""
    flat = mm.a_normal_to_perf(a, tiles.a_k) if AC_layout == c.RKNN_MM_LAYOUT_NATIVE else a.reshape(-1)
    return stored(flat, spec.a)


def native_b_reference(b: np.ndarray, sub_n: int, sub_k: int, seg: int | None = None) -> np.ndarray:
    """Native B element order by the documented index formula, dst[((i*K1 + j)*subN + n)*subK + k] =
    B[j*subK + k, i*subN + n], per K-segment — written independently of matmul_math (index arithmetic)."""
    K, N = b.shape
    bounds = [(0, K)] if seg is None or K <= seg else [(k0, min(K, k0 + seg)) for k0 in range(0, K, seg)]
    parts = []
    for k0, k1 in bounds:
        ks = k1 - k0
        n1, k1_ = N // sub_n, ks // sub_k
        i, j, n, k = np.indices((n1, k1_, sub_n, sub_k))
        parts.append(b[k0 + j * sub_k + k, i * sub_n + n].reshape(-1))
    return np.concatenate(parts)


def quant_params(name: str, scales, zps=None) -> tuple[rknn_quant_params, list]:
    """An rknn_quant_params with malloc-like ctypes arrays (returned too, to keep them alive)."""
    scales = [float(s) for s in np.atleast_1d(scales)]
    sc = (ctypes.c_float * len(scales))(*scales)
    keep = [sc]
    p = rknn_quant_params(name=name.encode(), scale=sc, scale_len=len(scales))
    if zps is not None:
        zps = [int(z) for z in np.atleast_1d(zps)]
        zp = (ctypes.c_int32 * len(zps))(*zps)
        keep.append(zp)
        p.zp = zp
        p.zp_len = len(zps)
    return p, keep


def reference(a: np.ndarray, b: np.ndarray, spec: mm.TypeSpec, sa: float = 1.0, sb=1.0, zb=0, sc: float = 1.0,
              group: int = 0) -> np.ndarray:
    """C in float64 from the documented semantics: dequantised A·B for float outputs, the integer accumulation for
    int32/int16 (saturated), requantised for int8. `sb`/`zb` per-layer, per-channel [N] or per-group [K/g, N]."""
    K, N = b.shape
    sb = np.asarray(sb, dtype=np.float32).astype(np.float64)
    zb = np.asarray(zb, dtype=np.float64)
    if group:
        sb = np.repeat(sb.reshape(K // group, N), group, axis=0)
        zb = np.repeat(zb.reshape(K // group, N), group, axis=0) if zb.size > 1 else zb
    sa = float(np.float32(sa))
    sc = float(np.float32(sc))
    a64, b64 = a.astype(np.float64), b.astype(np.float64) - zb
    if spec.a.is_float and spec.b.is_float:
        return a64 @ b64
    if spec.c.is_float:
        return (a64 * (1.0 if spec.a.is_float else sa)) @ (b64 * sb)
    acc = a64 @ b64
    if spec.c is DType.INT8:
        return np.clip(np.rint(acc * sa * sb / sc), -128, 127)
    lo, hi = spec.c.range()
    return np.clip(acc, lo, hi)


def tolerance(spec: mm.TypeSpec, ref: np.ndarray, K: int) -> float:
    """Absolute tolerance: 0 for integer outputs, fp32 accumulation / fp16 / bf16 rounding for float ones."""
    if not spec.c.is_float:
        return 0.0
    scale = max(1.0, float(np.abs(ref).max()))
    eps = {DType.FLOAT32: 2e-6, DType.FLOAT16: 1e-3, DType.BFLOAT16: 8e-3}[spec.c]
    return scale * (eps + K * 1e-7)
