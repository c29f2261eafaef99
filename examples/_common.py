"""Helpers shared by the examples: a small model from npurt's zoo and onnxruntime as a reference (if installed)."""
from __future__ import annotations

import ctypes

import numpy as np

from npurt.model import zoo

SIZE = 32          # small_convnet input: (1, 3, 32, 32) float32 -> (1, 10) probabilities


def small_model(**kw):
    """The zoo's small convnet (deterministic weights), as an onnx.ModelProto."""
    return zoo.small_convnet(size=SIZE, **kw)


def image(seed: int = 0, shape=(1, 3, SIZE, SIZE)) -> np.ndarray:
    return np.random.default_rng(seed).random(shape, dtype=np.float32)


def reference(model, x: np.ndarray) -> np.ndarray | None:
    """onnxruntime's output for `x`, or None when onnxruntime is not installed."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def compare(label: str, y: np.ndarray, ref: np.ndarray | None, atol: float) -> None:
    """Print how far `y` is from onnxruntime's output, and fail loudly past `atol`."""
    if ref is None:
        print(f"{label}: onnxruntime not installed, not compared")
        return
    err = float(np.abs(np.ravel(y) - np.ravel(ref)).max())
    print(f"{label}: max |npurt - onnxruntime| = {err:.2e}")
    assert err <= atol, f"{label}: {err} > {atol}"


def query(ctx, cmd, info):
    """rknn_query with the struct's size, as C code passes sizeof(info); raises on failure."""
    from npurt.rknn import RKNN_SUCC, rknn_query
    ret = rknn_query(ctx, cmd, info, ctypes.sizeof(info))
    assert ret == RKNN_SUCC, f"rknn_query({cmd}) = {ret}"
    return info


def check(ret: int, what: str) -> None:
    assert ret == 0, f"{what} returned {ret}"
