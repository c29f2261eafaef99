"""Elementwise ops with numpy broadcasting: arithmetic, activations, comparisons, Where, Cast.

Float inputs are computed in float32; integer and bool tensors keep their dtype.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from npurt.exec.kernels import (
    _half_tanh_plus_half,
    _hard_sigmoid,
    _sigmoid_inplace,
    apply_activation,
    as_f32,
    kernel,
)

_BINARY = {
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Equal": np.equal,
    "Less": np.less,
    "LessOrEqual": np.less_equal,
    "Greater": np.greater,
    "GreaterOrEqual": np.greater_equal,
    "And": np.logical_and,
    "Or": np.logical_or,
    "Xor": np.logical_xor,
    "BitwiseAnd": np.bitwise_and,
    "BitwiseOr": np.bitwise_or,
    "BitwiseXor": np.bitwise_xor,
}

_UNARY = {
    "Abs": np.abs,
    "Neg": np.negative,
    "Exp": np.exp,
    "Log": np.log,
    "Sqrt": np.sqrt,
    "Floor": np.floor,
    "Ceil": np.ceil,
    "Tanh": np.tanh,
    "Sin": np.sin,
    "Cos": np.cos,
    "Tan": np.tan,
    "Asin": np.arcsin,
    "Acos": np.arccos,
    "Atan": np.arctan,
    "Sinh": np.sinh,
    "Cosh": np.cosh,
    "Asinh": np.arcsinh,
    "Acosh": np.arccosh,
    "Atanh": np.arctanh,
    "Sign": np.sign,
    "Not": np.logical_not,
    "BitwiseNot": np.invert,
    "Round": np.round,  # round half to even, as ONNX specifies
}


def _same_kind(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Float operands as float32; others unchanged."""
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        return as_f32(a), as_f32(b)
    return a, b


def _binary(fn):
    def run(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
        a, b = _same_kind(inputs[0], inputs[1])
        y = fn(a, b)
        if y.dtype != np.bool_ and y.dtype != a.dtype:
            y = y.astype(a.dtype)
        return [y]

    return run


for _op, _fn in _BINARY.items():
    kernel(_op)(_binary(_fn))


def _unary(fn):
    def run(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
        x = inputs[0]
        if x.dtype.kind == "f":
            x = as_f32(x)
        y = fn(x)
        return [y if y.dtype == x.dtype or y.dtype == np.bool_ else y.astype(x.dtype)]

    return run


for _op, _fn in _UNARY.items():
    kernel(_op)(_unary(_fn))


@kernel("Add")
def add(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """A + B with broadcasting; float results take the fused activation hook."""
    a, b = _same_kind(inputs[0], inputs[1])
    y = np.add(a, b)
    if y.dtype.kind == "f":
        return [apply_activation(np.asarray(y, np.float32), attrs)]
    return [y.astype(a.dtype, copy=False)]


@kernel("Div")
def div(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """A / B; integer division truncates toward zero as in C."""
    a, b = _same_kind(inputs[0], inputs[1])
    if a.dtype.kind == "f":
        return [np.divide(a, b)]
    q = np.trunc(np.divide(a.astype(np.float64), b)).astype(a.dtype)
    return [q]


@kernel("Mod")
def mod(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Mod: fmod=1 takes the dividend's sign (C fmod), fmod=0 the divisor's (Python %)."""
    a, b = _same_kind(inputs[0], inputs[1])
    y = np.fmod(a, b) if attrs.get("fmod", 0) else np.mod(a, b)
    return [y.astype(a.dtype, copy=False)]


@kernel("Pow")
def pow_(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """X ** Y, result in X's dtype."""
    x, y = inputs
    if x.dtype.kind == "f":
        return [np.power(as_f32(x), y.astype(np.float32)).astype(np.float32)]
    return [np.power(x.astype(np.float64), y.astype(np.float64)).astype(x.dtype)]


@kernel("Reciprocal")
def reciprocal(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    return [np.float32(1.0) / as_f32(inputs[0])]


@kernel("Relu")
def relu(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = inputs[0]
    return [np.maximum(x, x.dtype.type(0))]


@kernel("LeakyRelu")
def leaky_relu(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = as_f32(inputs[0])
    return [np.where(x < 0, x * np.float32(attrs.get("alpha", 0.01)), x)]


@kernel("PRelu")
def prelu(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x, slope = _same_kind(inputs[0], inputs[1])
    return [np.where(x < 0, x * slope, x).astype(x.dtype, copy=False)]


@kernel("Elu")
def elu(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = as_f32(inputs[0])
    alpha = np.float32(attrs.get("alpha", 1.0))
    return [np.where(x < 0, alpha * np.expm1(np.minimum(x, 0)), x)]


@kernel("Selu")
def selu(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = as_f32(inputs[0])
    alpha = np.float32(attrs.get("alpha", 1.67326319217681884765625))
    gamma = np.float32(attrs.get("gamma", 1.05070102214813232421875))
    return [gamma * np.where(x <= 0, alpha * np.expm1(np.minimum(x, 0)), x)]


@kernel("Softplus")
def softplus(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = as_f32(inputs[0])
    return [np.logaddexp(np.float32(0), x).astype(np.float32)]


@kernel("Softsign")
def softsign(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = as_f32(inputs[0])
    return [x / (np.float32(1) + np.abs(x))]


@kernel("Clip")
def clip(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Clip to [min, max]: attributes before opset 11, optional inputs from 11 on."""
    x = inputs[0]
    if x.dtype.kind == "f":
        x = as_f32(x)
    if attrs["_opset"] < 11:
        lo, hi = attrs.get("min"), attrs.get("max")
    else:
        lo = inputs[1] if len(inputs) > 1 else None
        hi = inputs[2] if len(inputs) > 2 else None
    if lo is None and hi is None:
        return [x.copy()]
    if lo is None:
        return [np.minimum(x, np.asarray(hi).astype(x.dtype))]
    if hi is None:
        return [np.maximum(x, np.asarray(lo).astype(x.dtype))]
    return [np.clip(x, np.asarray(lo).astype(x.dtype), np.asarray(hi).astype(x.dtype))]  # one pass


@kernel("Sigmoid")
def sigmoid(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    return [_half_tanh_plus_half(np.multiply(as_f32(inputs[0]), np.float32(0.5)))]


@kernel("HardSigmoid")
def hard_sigmoid(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    y = np.array(inputs[0], dtype=np.float32)
    return [_hard_sigmoid(y, attrs.get("alpha", 0.2), attrs.get("beta", 0.5))]


@kernel("HardSwish")
def hard_swish(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = as_f32(inputs[0])
    return [x * _hard_sigmoid(x.copy(), 1.0 / 6.0, 0.5)]


def erf(x: np.ndarray) -> np.ndarray:
    """erf to < 2e-7 absolute (Abramowitz & Stegun 7.1.26 evaluated in float64), as float32."""
    z = np.asarray(x, np.float64)
    a = np.abs(z)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    y = 1.0 - poly * np.exp(-a * a)
    return np.copysign(y, z).astype(np.float32)


@kernel("Erf")
def erf_kernel(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    return [erf(inputs[0])]


@kernel("Gelu")
def gelu(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """GELU (opset 20): exact (erf) or the tanh approximation."""
    x = as_f32(inputs[0])
    if attrs.get("approximate", "none") == "tanh":
        inner = np.float32(np.sqrt(2.0 / np.pi)) * (x + np.float32(0.044715) * x * x * x)
        return [np.float32(0.5) * x * (np.float32(1) + np.tanh(inner))]
    return [np.float32(0.5) * x * (np.float32(1) + erf(x * np.float32(1 / np.sqrt(2.0))))]


@kernel("Where")
def where(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    cond, a, b = inputs
    return [np.where(cond, a, b)]


@kernel("IsNaN")
def isnan(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    return [np.isnan(inputs[0])]


_FLOAT8_SATURATING = {TensorProto.FLOAT8E4M3FN, TensorProto.FLOAT8E4M3FNUZ, TensorProto.FLOAT8E5M2,
                      TensorProto.FLOAT8E5M2FNUZ}


def cast_to(x: np.ndarray, to: int, saturate: bool = True, round_mode: str = "up") -> np.ndarray:
    """`x` cast to the ONNX element type `to` (the exact numpy / ml_dtypes dtype). float8 targets
    saturate to the largest finite value unless saturate=0; FLOAT8E8M0 rounds per round_mode."""
    x = np.asarray(x)
    if to == TensorProto.STRING:
        return x.astype(np.str_)
    dtype = helper.tensor_dtype_to_np_dtype(to)
    if to in _FLOAT8_SATURATING and saturate:
        return numpy_helper.saturate_cast(x, dtype)
    if to == getattr(TensorProto, "FLOAT8E8M0", -1):
        return numpy_helper.to_float8e8m0(x, saturate, round_mode).astype(dtype)
    return x.astype(dtype)


@kernel("Cast")
def cast(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Cast to the ONNX element type `to` (the exact numpy dtype, e.g. float16 stays float16)."""
    return [cast_to(inputs[0], attrs["to"], bool(attrs.get("saturate", 1)), attrs.get("round_mode", "up"))]


@kernel("CastLike")
def cast_like(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    to = helper.np_dtype_to_tensor_dtype(inputs[1].dtype)
    return [cast_to(inputs[0], to, bool(attrs.get("saturate", 1)), attrs.get("round_mode", "up"))]


def _variadic(fn):
    def run(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
        xs = [as_f32(x) if x.dtype.kind == "f" else x for x in inputs if x is not None]
        y = xs[0]
        for x in xs[1:]:
            y = fn(y, x)
        return [np.array(y, dtype=xs[0].dtype, copy=True)]

    return run


kernel("Sum")(_variadic(np.add))
kernel("Max")(_variadic(np.maximum))
kernel("Min")(_variadic(np.minimum))


@kernel("Mean")
def mean(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    y = _variadic(np.add)(inputs, attrs)[0]
    return [y / np.float32(len(inputs))]


@kernel("IsInf")
def isinf(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = inputs[0]
    pos, neg = attrs.get("detect_positive", 1), attrs.get("detect_negative", 1)
    return [(np.isposinf(x) & bool(pos)) | (np.isneginf(x) & bool(neg))]


@kernel("Celu")
def celu(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = as_f32(inputs[0])
    alpha = np.float32(attrs.get("alpha", 1.0))
    return [np.maximum(x, 0) + np.minimum(0, alpha * np.expm1(x / alpha))]


@kernel("ThresholdedRelu")
def thresholded_relu(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = as_f32(inputs[0])
    return [np.where(x > np.float32(attrs.get("alpha", 1.0)), x, np.float32(0))]


@kernel("Shrink")
def shrink(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = inputs[0]
    lambd, bias = attrs.get("lambd", 0.5), attrs.get("bias", 0.0)
    xf = x.astype(np.float64)
    y = np.where(xf < -lambd, xf + bias, np.where(xf > lambd, xf - bias, 0))
    return [y.astype(x.dtype if x.dtype.kind != "f" else np.float32)]


@kernel("Swish")
def swish(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = as_f32(inputs[0])
    alpha = np.float32(attrs.get("alpha", 1.0))
    return [x * _sigmoid_inplace(x * alpha)]


@kernel("BitShift")
def bit_shift(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x, s = inputs
    fn = np.left_shift if attrs["direction"] == "LEFT" else np.right_shift
    return [fn(x, s.astype(x.dtype)).astype(x.dtype)]


@kernel("Det")
def det(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    return [np.linalg.det(inputs[0].astype(np.float64)).astype(np.float32)]


@kernel("Mish")
def mish(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """x * tanh(softplus(x)) (YOLOv4-style activation)."""
    x = as_f32(inputs[0])
    return [(x * np.tanh(np.logaddexp(np.float32(0), x))).astype(np.float32)]


@kernel("SwiGLU")
def swiglu(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """swish(A, alpha) * B."""
    a, b = as_f32(inputs[0]), as_f32(inputs[1])
    return [a * _sigmoid_inplace(a * np.float32(attrs.get("alpha", 1.0))) * b]
