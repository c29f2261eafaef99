"""The seeds' flows as C programs (tests/c/*.c) against npurt's librknnrt.so: each compiled at test time, run as a
subprocess, its outputs compared with onnxruntime and with the Python mirror making the same calls."""
from __future__ import annotations

import numpy as np
import pytest

from capi_helpers import compile_c, prefix, run_c
from test_flows_rknn import ATOL, classifier_model, frame, onnx_ref, uint8_model
from test_runtime_models import convnet

import npurt
from npurt.model import zoo


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict:
    """The demos' models (uint8 input, mean/std fused) as files, their ONNX, and a frame."""
    d = tmp_path_factory.mktemp("capi-models")
    out = {"dir": d}
    (d / "conv.npurt").write_bytes(uint8_model())
    out["conv_onnx"] = convnet()
    (d / "cls.npurt").write_bytes(classifier_model())
    out["cls_onnx"] = zoo.small_convnet(24).SerializeToString()
    return out


def _floats(path) -> np.ndarray:
    return np.fromfile(path, dtype=np.float32)


def test_general_flow_matches_onnxruntime(models, tmp_path):
    img = frame()
    img.tofile(tmp_path / "img.bin")
    proc = run_c(compile_c("general_flow", prefix()), models["dir"] / "conv.npurt", tmp_path / "img.bin",
                 tmp_path / "out.bin")
    assert "OK general_flow" in proc.stdout
    assert "fmt=NCHW" in proc.stdout or "fmt=NHWC" in proc.stdout
    want = onnx_ref(models["conv_onnx"], img).reshape(-1)
    np.testing.assert_allclose(_floats(tmp_path / "out.bin"), want, atol=ATOL)


@pytest.mark.parametrize("size", [8, 24])
def test_zero_copy_flow_with_padded_rows_matches_onnxruntime(models, tmp_path, size):
    name, onnx_bytes = ("conv.npurt", models["conv_onnx"]) if size == 8 else ("cls.npurt", models["cls_onnx"])
    h, w = (8, 10) if size == 8 else (24, 24)
    img = frame(h, w, seed=size)
    img.tofile(tmp_path / "img.bin")
    proc = run_c(compile_c("zero_copy_flow", prefix()), models["dir"] / name, tmp_path / "img.bin", h, w, 3,
                 tmp_path / "out.bin")
    assert "OK zero_copy_flow" in proc.stdout
    want = onnx_ref(onnx_bytes, img).reshape(-1)
    np.testing.assert_allclose(_floats(tmp_path / "out.bin"), want, atol=ATOL)
