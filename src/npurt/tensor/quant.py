"""Quantisation: affine asymmetric (int8/uint8/int16), per-channel symmetric weights, DFP, float16, and the
fused normalise-then-quantise of uint8 image inputs.

Rounding rule everywhere: **round half to even** (`np.rint`, IEEE default, as ONNX QuantizeLinear), then
saturate to the type's range. Affine: q = sat(rint(x / scale) + zp), x = (q - zp) * scale. DFP: q = sat(rint(x *
2**fl)), x = q * 2**-fl. Arithmetic is float32 (float64 when the input is float64). NaN quantises to zp (0 for DFP).
"""
from __future__ import annotations

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.tensor.dtypes import DType

__all__ = ["quantize", "dequantize", "quantize_per_channel", "choose_affine_params", "quantize_dfp",
           "dequantize_dfp", "choose_dfp_fl", "to_float16", "normalize_quantize"]

QUANT_TYPES = (DType.INT8, DType.UINT8, DType.INT16)


def _bad(msg: str) -> NpuError:
    return NpuError(ErrorCode.INVALID_ARGUMENT, msg)


def _qtype(dtype: DType | str | np.dtype, allowed: tuple[DType, ...] = QUANT_TYPES) -> DType:
    dt = DType.parse(dtype)
    if dt not in allowed:
        raise _bad(f"quantised type must be one of {', '.join(t.value for t in allowed)}, got {dt.value}")
    return dt


def _work_dtype(x: np.ndarray) -> np.dtype:
    return np.dtype(np.float64) if x.dtype == np.float64 else np.dtype(np.float32)


def _scale(scale: object, work: np.dtype) -> np.ndarray:
    s = np.asarray(scale, dtype=np.float64).astype(work)
    if s.size == 0 or not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise _bad(f"scale must be finite and > 0 (in {work}), got {scale!r}")
    return s


def _zero_point(zp: object, dt: DType) -> np.ndarray:
    z = np.asarray(zp)
    if z.dtype.kind == "f":
        if not np.all(np.isfinite(z)) or np.any(z != np.rint(z)):
            raise _bad(f"zero point must be an integer, got {zp!r}")
    elif z.dtype.kind not in "iub":
        raise _bad(f"zero point must be an integer, got {zp!r}")
    lo, hi = dt.range()
    if z.size and (z.min() < lo or z.max() > hi):
        raise _bad(f"zero point {zp!r} is outside the {dt.value} range {lo}..{hi}")
    return z.astype(np.int64)


def _out(out: np.ndarray | None, shape: tuple[int, ...], dtype: np.dtype, what: str) -> np.ndarray:
    if out is None:
        return np.empty(shape, dtype=dtype)
    if not isinstance(out, np.ndarray) or out.shape != shape or out.dtype != dtype:
        got = (getattr(out, "shape", None), getattr(out, "dtype", type(out).__name__))
        raise _bad(f"{what}: out= must be a {dtype} array of shape {shape}, got {got}")
    if not out.flags.writeable:
        raise _bad(f"{what}: out= is read-only")
    return out


def _round_saturate(t: np.ndarray, zp: np.ndarray | float, dt: DType, out: np.ndarray) -> np.ndarray:
    """out = sat(rint(t) + zp); NaN goes to zp. `t` is a float scratch array we may overwrite."""
    lo, hi = dt.range()
    np.rint(t, out=t)
    if np.any(zp):
        np.add(t, zp, out=t, casting="unsafe")
    np.clip(t, lo, hi, out=t)
    if np.isnan(t).any():
        np.copyto(t, np.broadcast_to(np.asarray(zp, t.dtype), t.shape), where=np.isnan(t))
    np.copyto(out, t, casting="unsafe")
    return out


def quantize(x: np.ndarray, scale: object, zero_point: object = 0, dtype: DType | str = DType.INT8,
             out: np.ndarray | None = None) -> np.ndarray:
    """Affine asymmetric quantisation q = sat(rint(x / scale) + zero_point); scale/zp scalars or broadcastable."""
    x = np.asarray(x)
    dt = _qtype(dtype)
    work = _work_dtype(x)
    s = _scale(scale, work)
    z = _zero_point(zero_point, dt)
    try:
        shape = np.broadcast_shapes(x.shape, s.shape, z.shape)
    except ValueError:
        raise _bad(f"scale {s.shape} / zero point {z.shape} do not broadcast to x {x.shape}") from None
    if shape != x.shape:
        raise _bad(f"scale {s.shape} / zero point {z.shape} would change the shape of x {x.shape}")
    out = _out(out, x.shape, dt.numpy_dtype, "quantize")
    t = np.divide(x, s, dtype=work, out=np.empty(x.shape, work))     # out=: a 0-d x stays an array
    return _round_saturate(t, z.astype(work) if z.ndim else work.type(z), dt, out)


def dequantize(q: np.ndarray, scale: object, zero_point: object = 0, out: np.ndarray | None = None,
               dtype: DType | str = DType.FLOAT32) -> np.ndarray:
    """x = (q - zero_point) * scale, as float32 (or float16 / float64 via `dtype`)."""
    q = np.asarray(q)
    if q.dtype.kind not in "iu":
        raise _bad(f"dequantize needs an integer array, got {q.dtype}")
    fdt = np.dtype(np.float64) if dtype == "float64" else _qtype(dtype, (DType.FLOAT32, DType.FLOAT16)).numpy_dtype
    work = np.dtype(np.float64) if fdt == np.float64 else np.dtype(np.float32)
    s = _scale(scale, work)
    z = np.asarray(zero_point)
    if z.dtype.kind not in "iub" and not (z.dtype.kind == "f" and np.all(z == np.rint(z))):
        raise _bad(f"zero point must be an integer, got {zero_point!r}")
    try:
        shape = np.broadcast_shapes(q.shape, s.shape, z.shape)
    except ValueError:
        shape = None
    if shape != q.shape:
        raise _bad(f"scale {s.shape} / zero point {z.shape} do not broadcast to q {q.shape}")
    out = _out(out, q.shape, fdt, "dequantize")
    t = np.subtract(q, z.astype(work), dtype=work)
    np.multiply(t, s, out=out, casting="same_kind")
    return out


def choose_affine_params(min_value: float, max_value: float, dtype: DType | str = DType.INT8) -> tuple[float, int]:
    """(scale, zero_point) mapping [min, max] onto the full range of `dtype`.

    The range is first widened to include 0 (so 0.0 is exactly representable, as zero padding needs); an
    empty range [0, 0] (or one too narrow for a normal float32 scale) gives scale 1.0. min > max or
    non-finite bounds raise INVALID_ARGUMENT.
    """
    dt = _qtype(dtype)
    lo_f, hi_f = float(min_value), float(max_value)
    if not (np.isfinite(lo_f) and np.isfinite(hi_f)) or lo_f > hi_f:
        raise _bad(f"bad range [{min_value}, {max_value}]")
    lo_f, hi_f = min(lo_f, 0.0), max(hi_f, 0.0)
    qmin, qmax = dt.range()
    scale = (hi_f - lo_f) / (qmax - qmin)
    if scale < np.finfo(np.float32).tiny:       # empty (or float32-denormal) range
        return 1.0, 0 if qmin <= 0 <= qmax else qmin
    zp = int(np.clip(np.rint(qmin - lo_f / scale), qmin, qmax))
    return scale, zp


def quantize_per_channel(w: np.ndarray, axis: int = 0, dtype: DType | str = DType.INT8,
                         steps: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric per-channel weights: scale_c = max|w_c| / qmax, q = sat(rint(w / scale_c)) in [-qmax, qmax].

    Returns (q, scales) with scales float32 of length w.shape[axis]; an all-zero channel gets scale 1.0.
    `steps` (one per channel): the grid the weights were already quantized on (a graph that carries its own weight
    quantization); a channel whose values fit [-qmax, qmax] steps keeps that step as its scale, so it is exact.
    """
    w = np.asarray(w)
    dt = _qtype(dtype, (DType.INT8, DType.INT16))
    if w.ndim == 0:
        raise _bad("quantize_per_channel needs at least a 1-D array")
    if not -w.ndim <= axis < w.ndim:
        raise _bad(f"axis {axis} out of range for a {w.ndim}-D array")
    axis %= w.ndim
    qmax = dt.range()[1]
    reduce_axes = tuple(i for i in range(w.ndim) if i != axis)
    absmax = np.max(np.abs(w), axis=reduce_axes).astype(np.float64) if w.size else np.zeros(w.shape[axis])
    if not np.all(np.isfinite(absmax)):
        raise _bad("quantize_per_channel: weights contain inf or NaN")
    scales = np.where(absmax > 0, absmax / qmax, 1.0).astype(np.float32)
    bshape = [1] * w.ndim
    bshape[axis] = -1
    low = np.full(scales.shape, -qmax, np.float32)
    if steps is not None and np.shape(steps) == scales.shape and w.size:
        given = np.asarray(steps, np.float32)
        k = np.rint(np.divide(w, np.where(given > 0, given, 1).reshape(bshape), dtype=np.float32))
        fits = (given > 0) & (np.min(k, axis=reduce_axes) >= -qmax - 1) & (np.max(k, axis=reduce_axes) <= qmax)
        scales = np.where(fits, given, scales).astype(np.float32)
        low = np.where(fits, -qmax - 1, low).astype(np.float32)     # the full int range: -128 is a weight too
    t = np.divide(w, scales.reshape(bshape), dtype=np.float32)
    np.rint(t, out=t)
    np.clip(t, low.reshape(bshape), qmax, out=t)
    return t.astype(dt.numpy_dtype), scales


def choose_dfp_fl(abs_max: float, dtype: DType | str = DType.INT8) -> int:
    """The largest fractional length fl with abs_max * 2**fl <= qmax (so abs_max does not saturate)."""
    dt = _qtype(dtype, (DType.INT8, DType.INT16))
    a = float(abs_max)
    if not np.isfinite(a) or a < 0:
        raise _bad(f"bad abs_max {abs_max!r}")
    if a == 0.0:
        return dt.bits - 1
    return int(np.floor(np.log2(dt.range()[1] / a)))


def quantize_dfp(x: np.ndarray, fl: int, dtype: DType | str = DType.INT8,
                 out: np.ndarray | None = None) -> np.ndarray:
    """Dynamic fixed point: q = sat(rint(x * 2**fl)); fl may be negative."""
    x = np.asarray(x)
    dt = _qtype(dtype, (DType.INT8, DType.INT16))
    if int(fl) != fl:
        raise _bad(f"fl must be an integer, got {fl!r}")
    out = _out(out, x.shape, dt.numpy_dtype, "quantize_dfp")
    work = _work_dtype(x)
    t = np.multiply(x, np.ldexp(1.0, int(fl)), dtype=work, out=np.empty(x.shape, work))
    return _round_saturate(t, 0, dt, out)


def dequantize_dfp(q: np.ndarray, fl: int, out: np.ndarray | None = None) -> np.ndarray:
    """x = q * 2**-fl as float32."""
    q = np.asarray(q)
    if q.dtype.kind not in "iu":
        raise _bad(f"dequantize_dfp needs an integer array, got {q.dtype}")
    if int(fl) != fl:
        raise _bad(f"fl must be an integer, got {fl!r}")
    out = _out(out, q.shape, np.dtype(np.float32), "dequantize_dfp")
    np.multiply(q, np.float32(np.ldexp(1.0, -int(fl))), out=out, casting="unsafe")
    return out


def to_float16(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The float16 "quantisation": IEEE round to nearest even; beyond ±65504 gives ±inf, as the hardware cast."""
    x = np.asarray(x)
    out = _out(out, x.shape, np.dtype(np.float16), "to_float16")
    with np.errstate(over="ignore"):
        np.copyto(out, x, casting="unsafe")
    return out


def normalize_quantize(img_u8: np.ndarray, mean: object, std: object, scale: float, zp: int,
                       dtype: DType | str = DType.INT8, channel_axis: int = -1,
                       out: np.ndarray | None = None) -> np.ndarray:
    """Fused input pre-processing: q = sat(rint(((x - mean_c) / std_c) / scale) + zp), in float32.

    `mean`/`std` are scalars or one value per channel along `channel_axis` (NHWC images: -1).
    """
    x = np.asarray(img_u8)
    if x.dtype != np.uint8:
        raise _bad(f"normalize_quantize takes a uint8 image, got {x.dtype}")
    dt = _qtype(dtype)
    if x.ndim == 0:
        raise _bad("normalize_quantize needs an image, got a scalar")
    if not -x.ndim <= channel_axis < x.ndim:
        raise _bad(f"channel_axis {channel_axis} out of range for a {x.ndim}-D image")
    axis = channel_axis % x.ndim
    bshape = [1] * x.ndim
    bshape[axis] = -1

    def per_channel(v: object, name: str) -> np.ndarray:
        a = np.asarray(v, dtype=np.float32).reshape(-1)
        if a.size not in (1, x.shape[axis]):
            raise _bad(f"{name} has {a.size} values, the image has {x.shape[axis]} channels")
        if not np.all(np.isfinite(a)):
            raise _bad(f"{name} must be finite")
        return a.reshape(bshape) if a.size > 1 else a.reshape(())

    m = per_channel(mean, "mean")
    s = per_channel(std, "std")
    if np.any(s == 0):
        raise _bad("std must be non-zero")
    sc = _scale(scale, np.dtype(np.float32))
    z = _zero_point(zp, dt)
    if sc.size != 1 or z.size != 1:
        raise _bad("normalize_quantize takes one scale and one zero point")
    out = _out(out, x.shape, dt.numpy_dtype, "normalize_quantize")
    t = np.subtract(x, m, dtype=np.float32)
    np.divide(t, s, out=t)
    np.divide(t, sc.reshape(()), out=t)
    return _round_saturate(t, np.float32(z), dt, out)
