"""The kernel registry: one numpy function per ONNX op type.

Every kernel has the signature ``fn(inputs, attrs) -> list[np.ndarray]``:

- ``inputs``: numpy arrays in the ONNX logical layout (float tensors as float32, integer and
  bool tensors keep their dtype); missing optional inputs are ``None``.
- ``attrs``: the IR node's attributes (ONNX attributes as `npurt.model.onnx_import.attribute_value`
  decodes them: tensors as numpy arrays, strings as str), plus ``"_opset"`` (the default-domain opset of
  the model, so kernels can honour version differences) and ``"_n_outputs"``; see
  `npurt.exec.evaluate.kernel_attrs`. Conv,
  ConvTranspose, Gemm, MatMul and Add also accept the npurt fusion attrs ``"activation"`` and
  ``"activation_params"`` (see `apply_activation`).

Kernels register themselves with the `kernel` decorator; the family modules are imported at
the bottom of this file so that importing the package fills the registry: `conv`, `gemm`,
`elementwise`, `pool`, `reduce`, `normalization`, `shape`, `resize` (also GridSample), `quant`
(QuantizeLinear and the integer ops), `recurrent` (RNN/GRU/LSTM), `detection`
(NonMaxSuppression), `attention` (Attention, RotaryEmbedding). `blas` pins OpenBLAS threads.
Constant nodes are not kernels: the reference interpreter and the compiler fold them.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from npurt.errors import ErrorCode, NpuError

Kernel = Callable[[list, dict], list]

_REGISTRY: dict[str, Kernel] = {}


def kernel(*op_types: str) -> Callable[[Kernel], Kernel]:
    """Decorator: register the function as the kernel of each of `op_types`."""

    def register(fn: Kernel) -> Kernel:
        for op in op_types:
            _REGISTRY[op] = fn
        return fn

    return register


def get_kernel(op_type: str) -> Kernel:
    """The kernel of `op_type`; NOT_SUPPORTED (listing what is supported) when there is none."""
    try:
        return _REGISTRY[op_type]
    except KeyError:
        raise NpuError(
            ErrorCode.NOT_SUPPORTED,
            f"op '{op_type}' is not supported; supported: {', '.join(supported_ops())}",
        ) from None


def supported_ops() -> list[str]:
    """The registered op types, sorted."""
    return sorted(_REGISTRY)


# --- fused activations ------------------------------------------------------------------------

def _hard_sigmoid(y: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    np.multiply(y, np.float32(alpha), out=y)
    np.add(y, np.float32(beta), out=y)
    return np.clip(y, 0, 1, out=y)


def apply_activation(y: np.ndarray, attrs: dict[str, Any]) -> np.ndarray:
    """Apply the fused ``attrs["activation"]`` to float `y` in place and return it.

    ``activation_params``: Clip ``(min, max)`` (None = unbounded), LeakyRelu ``alpha`` (or
    ``(alpha,)``), HardSigmoid ``(alpha, beta)``, Swish ``(alpha,)`` (x * sigmoid(alpha * x)); others take none.
    """
    act = attrs.get("activation")
    if act is None:
        return y
    p = attrs.get("activation_params")
    if p is not None and not isinstance(p, (list, tuple, np.ndarray)):
        p = (p,)
    if act == "Relu":
        return np.maximum(y, 0, out=y)
    if act == "Clip":
        lo, hi = (p if p is not None else (None, None))
        return np.clip(y, lo if lo is not None else -np.inf, hi if hi is not None else np.inf, out=y)
    if act == "LeakyRelu":
        alpha = np.float32(p[0] if p is not None else 0.01)
        return _leaky(y, alpha)
    if act == "Sigmoid":
        return _sigmoid_inplace(y)
    if act == "HardSigmoid":
        alpha, beta = (p if p is not None else (0.2, 0.5))
        return _hard_sigmoid(y, alpha, beta)
    if act == "HardSwish":
        h = _hard_sigmoid(y.copy(), 1.0 / 6.0, 0.5)
        return np.multiply(y, h, out=y)
    if act == "Swish":
        alpha = np.float32(p[0] if p is not None else 1.0)
        s = _sigmoid_inplace(y * alpha)
        return np.multiply(y, s, out=y)
    raise NpuError(ErrorCode.NOT_SUPPORTED, f"fused activation '{act}' is not supported")


def _leaky(y: np.ndarray, alpha: np.float32) -> np.ndarray:
    neg = y < 0
    y[neg] *= alpha
    return y


def _sigmoid_inplace(y: np.ndarray) -> np.ndarray:
    """Numerically stable logistic, in place: 1/(1+exp(-y)) computed as 0.5*tanh(y/2)+0.5."""
    np.multiply(y, np.float32(0.5), out=y)
    return _half_tanh_plus_half(y)


def _half_tanh_plus_half(h: np.ndarray) -> np.ndarray:
    """In place: 0.5 * tanh(h) + 0.5 (the tail of the logistic; float32 tanh is SIMD in numpy)."""
    np.tanh(h, out=h)
    np.multiply(h, np.float32(0.5), out=h)
    return np.add(h, np.float32(0.5), out=h)


def as_f32(x: np.ndarray) -> np.ndarray:
    """`x` as a float32 array (no copy when it already is one)."""
    return np.asarray(x, dtype=np.float32)


# Import the op families last: they use `kernel` from this module.
from npurt.exec.kernels import (  # noqa: E402,F401
    attention,
    conv,
    detection,
    elementwise,
    gemm,
    normalization,
    pool,
    quant,
    recurrent,
    reduce,
    resize,
    shape,
)
