"""Gemm and MatMul: single float32 BLAS calls, with the fused activation hook."""
from __future__ import annotations

from typing import Any

import numpy as np

from npurt.exec.kernels import apply_activation, as_f32, kernel


def gemm_operands(a: np.ndarray, b: np.ndarray, attrs: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Gemm's A' and B' (views, transposed as transA / transB say), float32 when they are float."""
    if attrs.get("transA", 0):
        a = a.T
    if attrs.get("transB", 0):
        b = b.T
    if np.issubdtype(np.result_type(a, b), np.floating):
        return as_f32(a), as_f32(b)
    return a, b


@kernel("Gemm")
def gemm(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Y = alpha * A' @ B' + beta * C (A', B' optionally transposed)."""
    a, b = gemm_operands(inputs[0], inputs[1], attrs)
    c = inputs[2] if len(inputs) > 2 else None
    is_float = np.issubdtype(np.result_type(a, b), np.floating)
    y = np.matmul(a, b)
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    if alpha != 1.0:
        y *= y.dtype.type(alpha)
    if c is not None and beta != 0.0:
        c = as_f32(c) if is_float else c
        y += c * y.dtype.type(beta) if beta != 1.0 else c
    if is_float:
        apply_activation(y, attrs)
    return [y]


@kernel("MatMul")
def matmul(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """numpy matmul semantics (batched, 1-D promotion), float32 for float inputs."""
    a, b = inputs
    if np.issubdtype(a.dtype, np.floating):
        y = np.matmul(as_f32(a), as_f32(b))
        return [apply_activation(np.asarray(y, np.float32), attrs)]
    return [np.matmul(a, b)]
