"""QuantizeLinear / DequantizeLinear: per-tensor, per-axis and blocked (opset 21) affine
quantisation, round half to even and saturation to the integer type, as ONNX specifies."""
from __future__ import annotations

from typing import Any

import numpy as np
from onnx import helper

from npurt.exec.kernels import kernel


def _broadcast(p: np.ndarray, x: np.ndarray, axis: int, block: int) -> np.ndarray:
    """Scale / zero point shaped to broadcast against `x`."""
    p = np.asarray(p)
    if p.size == 1 and not block:
        return p.reshape(())
    axis %= x.ndim
    if block:  # blocked: same rank as x, dim `axis` is ceil(n / block)
        return np.repeat(p, block, axis=axis).take(np.arange(x.shape[axis]), axis=axis)
    shape = [1] * x.ndim
    shape[axis] = -1
    return p.reshape(shape)


def _int_range(dtype: np.dtype) -> tuple[float, float]:
    if dtype.name in ("int4", "uint4", "int2", "uint2"):
        import ml_dtypes

        info = ml_dtypes.iinfo(dtype)
        return float(info.min), float(info.max)
    info = np.iinfo(dtype)
    return float(info.min), float(info.max)


@kernel("QuantizeLinear")
def quantize_linear(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x, scale = inputs[0], inputs[1]
    zp = inputs[2] if len(inputs) > 2 else None
    axis, block = int(attrs.get("axis", 1)), int(attrs.get("block_size", 0))
    if "output_dtype" in attrs and attrs["output_dtype"]:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(attrs["output_dtype"]))
    else:
        dtype = zp.dtype if zp is not None else np.dtype(np.uint8)
    s = _broadcast(scale, x, axis, block).astype(np.float32)
    q = x.astype(np.float32) / s
    if dtype.kind in "iu" or dtype.name in ("int4", "uint4", "int2", "uint2"):
        q = np.rint(q)
        if zp is not None:
            q = q + _broadcast(zp, x, axis, block).astype(np.float32)
        lo, hi = _int_range(dtype)
        return [np.clip(q, lo, hi).astype(dtype)]
    # float8 / float4 targets: scale, add the zero point, then a (saturating) cast
    from npurt.exec.kernels.elementwise import cast_to

    if zp is not None:
        q = q + _broadcast(zp, x, axis, block).astype(np.float32)
    return [cast_to(q, helper.np_dtype_to_tensor_dtype(dtype), bool(attrs.get("saturate", 1)))]


@kernel("DequantizeLinear")
def dequantize_linear(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x, scale = inputs[0], inputs[1]
    zp = inputs[2] if len(inputs) > 2 else None
    axis, block = int(attrs.get("axis", 1)), int(attrs.get("block_size", 0))
    v = x.astype(np.float32)
    if zp is not None:
        v = v - _broadcast(zp, x, axis, block).astype(np.float32)
    return [(v * _broadcast(scale, x, axis, block).astype(np.float32)).astype(np.float32)]


def _zp(inputs: list, i: int) -> np.ndarray | int:
    v = inputs[i] if len(inputs) > i else None
    return 0 if v is None else v


def _requantize(acc: np.ndarray, scale: np.ndarray, y_zp: np.ndarray | None) -> np.ndarray:
    """round_half_even(acc * scale) + zero point, saturated to the zero point's type (uint8 default)."""
    dtype = np.dtype(y_zp.dtype) if y_zp is not None else np.dtype(np.uint8)
    q = np.rint(acc * scale)
    if y_zp is not None:
        q = q + np.asarray(y_zp, np.float64)
    lo, hi = _int_range(dtype)
    return np.clip(q, lo, hi).astype(dtype)


def _per_channel(v: np.ndarray, ndim: int, axis: int = 1) -> np.ndarray:
    """A per-tensor scalar, or a per-channel vector shaped to broadcast along `axis`."""
    v = np.asarray(v, np.float64)
    if v.size == 1:
        return v.reshape(())
    shape = [1] * ndim
    shape[axis] = -1
    return v.reshape(shape)


@kernel("ConvInteger")
def conv_integer(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """int32 convolution of (x - x_zp) by (w - w_zp), computed exactly in float64."""
    from npurt.exec.kernels.conv import conv_nd

    x = inputs[0].astype(np.float64) - np.asarray(_zp(inputs, 2), np.float64)
    wzp = np.asarray(_zp(inputs, 3), np.float64)
    w = inputs[1].astype(np.float64) - (_per_channel(wzp, inputs[1].ndim, 0) if wzp.size > 1 else wzp)
    return [np.rint(conv_nd(x, w, attrs)).astype(np.int32)]


@kernel("MatMulInteger")
def matmul_integer(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """int32 matmul of (A - a_zp) by (B - b_zp); a_zp per row (1-D, rows of A) or scalar,
    b_zp per column or scalar."""
    a_zp = np.asarray(_zp(inputs, 2), np.int32)
    a_zp = a_zp.reshape(-1, 1) if a_zp.size > 1 else a_zp.reshape(())
    a = inputs[0].astype(np.int32) - a_zp
    b = inputs[1].astype(np.int32) - np.asarray(_zp(inputs, 3), np.int32)
    return [np.matmul(a, b).astype(np.int32)]


@kernel("QLinearMatMul")
def qlinear_matmul(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Quantised matmul: ((a - a_zp) @ (b - b_zp)) * a_scale * b_scale / y_scale, requantised."""
    a, a_s, a_zp, b, b_s, b_zp, y_s, y_zp = inputs[:8]
    acc = np.matmul(a.astype(np.float64) - np.asarray(a_zp, np.float64),
                    b.astype(np.float64) - np.asarray(b_zp, np.float64))
    scale = np.asarray(a_s, np.float64) * np.asarray(b_s, np.float64) / np.asarray(y_s, np.float64)
    return [_requantize(acc, scale, y_zp)]


@kernel("QLinearConv")
def qlinear_conv(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Quantised Conv: exact integer accumulation (in float64) plus int32 bias, requantised with
    x_scale * w_scale / y_scale (w_scale per output channel or scalar)."""
    from npurt.exec.kernels.conv import conv_nd

    x, x_s, x_zp, w, w_s, w_zp, y_s, y_zp = inputs[:8]
    bias = inputs[8] if len(inputs) > 8 else None
    xf = x.astype(np.float64) - np.asarray(x_zp, np.float64)
    wzp = np.asarray(w_zp, np.float64)
    wf = w.astype(np.float64) - (_per_channel(wzp, w.ndim, 0) if wzp.size > 1 else wzp)
    acc = conv_nd(xf, wf, attrs)
    if bias is not None:
        acc = acc + bias.astype(np.float64).reshape((1, -1) + (1,) * (acc.ndim - 2))
    scale = np.asarray(x_s, np.float64) * _per_channel(w_s, acc.ndim) / np.asarray(y_s, np.float64)
    return [_requantize(acc, scale, y_zp)]


@kernel("DynamicQuantizeLinear")
def dynamic_quantize_linear(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """uint8 quantisation with the range [min(0, x_min), max(0, x_max)] mapped onto [0, 255]."""
    x = inputs[0].astype(np.float32)
    lo, hi = min(0.0, float(x.min())), max(0.0, float(x.max()))
    scale = np.float32((hi - lo) / 255.0) if hi > lo else np.float32(1.0)
    zp = np.uint8(np.clip(np.rint(-lo / scale), 0, 255))
    y = np.clip(np.rint(x / scale) + np.float32(zp), 0, 255).astype(np.uint8)
    return [y, np.array(scale, np.float32), np.array(zp, np.uint8)]
