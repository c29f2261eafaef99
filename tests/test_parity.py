"""Numerical parity with onnxruntime (float32) on zoo models, through the full path: compile, bind host memory,
pack inputs, run with every activation in native layout and type, unpack outputs.

fp16: cosine >= 0.9999 and max abs error <= 1e-2 of the output range. int8: cosine >= 0.999 against the float
reference, on inputs drawn from the calibration distribution.
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest

import npurt
from npurt.runtime.user_io import run_once
from npurt.model import zoo

from helpers.oracle import run_ort

FP16_COS, FP16_ERR, INT8_COS = 0.9999, 1e-2, 0.999


def _feeds(model: onnx.ModelProto, rng: np.random.Generator) -> dict[str, np.ndarray]:
    feeds = {}
    for vi in model.graph.input:
        if vi.name in {i.name for i in model.graph.initializer}:
            continue
        shape = [d.dim_value or 1 for d in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = rng.normal(size=shape).astype(np.float32)
    return feeds


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))


def _check_fp16(model: onnx.ModelProto, seed: int = 0) -> None:
    feeds = _feeds(model, np.random.default_rng(seed))
    ref = run_ort(model, feeds)
    got = run_once(npurt.compile(model, precision="fp16"), feeds)
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        assert g.shape == r.shape
        cos = _cos(g, r)
        err = float(np.abs(g - r).max()) / (float(np.ptp(r)) or 1.0)
        assert cos >= FP16_COS and err <= FP16_ERR, (cos, err)


ZOO_FP16 = {
    "small_convnet": lambda: zoo.small_convnet(),
    "mobilenet_v1": lambda: zoo.mobilenet_v1(size=128),
    "mobilenet_v2_like": lambda: zoo.mobilenet_v2_like(),
    "yolo_head": lambda: zoo.yolo_head(),
    "yolov8n_like": lambda: zoo.yolov8n_like(size=320),
    "transformer_block": lambda: zoo.transformer_block(),
}


@pytest.mark.parametrize("name", list(ZOO_FP16))
def test_fp16_zoo(name):
    _check_fp16(ZOO_FP16[name]())


_HEAVY_LIGHT = {"vgg19", "bvlc_alexnet", "zfnet512", "resnet50", "densenet121"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in _HEAVY_LIGHT else n
                                  for n in zoo.LIGHT_MODELS])
def test_fp16_light_models(name):
    _check_fp16(zoo.light_model(name))


INT8_MODELS = {
    "small_convnet": lambda: zoo.small_convnet(),
    "mobilenet_v2_like": lambda: zoo.mobilenet_v2_like(size=96),
    "yolo_head": lambda: zoo.yolo_head(size=160),
}


@pytest.mark.parametrize("name", list(INT8_MODELS))
def test_int8_against_float_reference(name):
    model = INT8_MODELS[name]()
    rng = np.random.default_rng(0)
    calib = [_feeds(model, rng) for _ in range(12)]
    cm = npurt.compile(model, quantize=calib, progress=False)
    assert cm.precision == "int8"
    for _ in range(2):
        feeds = _feeds(model, rng)                     # same distribution as the calibration data
        for g, r in zip(run_once(cm, feeds), run_ort(model, feeds)):
            assert _cos(g, r) >= INT8_COS, _cos(g, r)


def test_float32_reference_mode_is_exactish():
    model = zoo.mobilenet_v2_like(size=64)
    feeds = _feeds(model, np.random.default_rng(5))
    got = run_once(npurt.compile(model, precision="float32"), feeds)[0]
    np.testing.assert_allclose(got, run_ort(model, feeds)[0], rtol=1e-3, atol=1e-5)
