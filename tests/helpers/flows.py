"""Models and oracles of the RKNN flow tests (Python and C): uint8-input models as the vendor demos use them, a
decoded frame, onnxruntime's answer for it, and the same frame through the mirror's general API."""
from __future__ import annotations

import ctypes

import numpy as np

import npurt
from npurt.rknn import *  # noqa: F403 - the mirror is meant to be used like the C header

from helpers.models import convnet, reference

ATOL = 0.03
MEAN, STD = [[127.5] * 3], [[127.5] * 3]

_cache: dict = {}


def uint8_model(onnx_bytes: bytes = None, soc: str = "rk3588") -> bytes:
    """An .npurt (fp16) whose input takes uint8 images: mean/std 127.5 fused, as the demos' models are."""
    onnx_bytes = convnet() if onnx_bytes is None else onnx_bytes
    key = (onnx_bytes, soc)
    if key not in _cache:
        _cache[key] = npurt.compile(onnx_bytes, soc=soc, mean=MEAN, std=STD, progress=False).to_bytes()
    return _cache[key]


def classifier_model() -> bytes:
    """zoo.small_convnet at 24x24 (w_stride 32 on RK3588: padded rows) with a 2-D (1, 10) output, uint8 input."""
    if "cls" not in _cache:
        from npurt.model import zoo
        _cache["cls_onnx"] = zoo.small_convnet(24).SerializeToString()
        _cache["cls"] = npurt.compile(_cache["cls_onnx"], mean=MEAN, std=STD, progress=False).to_bytes()
    return _cache["cls"]


def classifier_onnx() -> bytes:
    """The ONNX model behind `classifier_model()`."""
    classifier_model()
    return _cache["cls_onnx"]


def frame(h: int = 8, w: int = 10, seed: int = 0) -> np.ndarray:
    """A uint8 H x W x 3 image (the demos' decoded frame)."""
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def onnx_ref(onnx_bytes: bytes, img: np.ndarray) -> np.ndarray:
    x = ((img.astype(np.float32) - 127.5) / 127.5).transpose(2, 0, 1)[None]
    return reference(onnx_bytes, x)[0]


def general_path(model: bytes, img: np.ndarray) -> list[np.ndarray]:
    """The same image through the general API (§4.7: UINT8 / NHWC, want_float)."""
    ctx = rknn_context()
    assert rknn_init(ctx, model, len(model), 0, None) == RKNN_SUCC
    io_num = rknn_input_output_num()
    assert rknn_query(ctx, RKNN_QUERY_IN_OUT_NUM, io_num, ctypes.sizeof(io_num)) == RKNN_SUCC
    inputs = (rknn_input * 1)()
    inputs[0].index, inputs[0].type, inputs[0].fmt = 0, RKNN_TENSOR_UINT8, RKNN_TENSOR_NHWC
    inputs[0].buf, inputs[0].size, inputs[0].pass_through = img.ctypes.data, img.nbytes, 0
    assert rknn_inputs_set(ctx, 1, inputs) == RKNN_SUCC
    assert rknn_run(ctx, None) == RKNN_SUCC
    outputs = (rknn_output * io_num.n_output)()
    for i in range(io_num.n_output):
        outputs[i].index, outputs[i].want_float, outputs[i].is_prealloc = i, 1, 0
    assert rknn_outputs_get(ctx, io_num.n_output, outputs, None) == RKNN_SUCC
    res = [output_view(o).copy() for o in outputs]
    assert rknn_outputs_release(ctx, io_num.n_output, outputs) == RKNN_SUCC
    assert rknn_destroy(ctx) == RKNN_SUCC
    return res
