"""The model zoo: every model passes the checker, runs in onnxruntime with finite, non-saturated
outputs, and the float32 reference interpreter (all kernels) matches onnxruntime on it."""
from __future__ import annotations


import numpy as np
import onnx
import pytest

from npurt.exec.reference import run_reference
from npurt.model import zoo

GENERATED = {
    "mobilenet_v1": lambda: zoo.mobilenet_v1(size=96),
    "mobilenet_v1_224_classes10": lambda: zoo.mobilenet_v1(num_classes=10, size=224),
    "mobilenet_v2_like": lambda: zoo.mobilenet_v2_like(size=96),
    "small_convnet": lambda: zoo.small_convnet(),
    "yolo_head": lambda: zoo.yolo_head(size=128),
    "yolov8n_like": lambda: zoo.yolov8n_like(size=128),
    "transformer_block": lambda: zoo.transformer_block(),
}
# The big-FC light models (alexnet 61 M, vgg19 144 M, zfnet 62 M parameters) take ~50 s together.
LIGHT = [pytest.param(n, marks=pytest.mark.slow) if n in ("bvlc_alexnet", "vgg19", "zfnet512") else n
         for n in zoo.LIGHT_MODELS]


def _feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(123)
    inits = {i.name for i in model.graph.initializer}
    feeds = {}
    for inp in model.graph.input:
        if inp.name not in inits:
            shape = [d.dim_value or 1 for d in inp.type.tensor_type.shape.dim]
            feeds[inp.name] = rng.standard_normal(shape, dtype=np.float32)
    return feeds


def _check(model: onnx.ModelProto, run_ort) -> None:
    onnx.checker.check_model(model, full_check=True)
    feeds = _feeds(model)
    want = run_ort(model, feeds)
    got = run_reference(model, feeds)
    for out, w in zip(model.graph.output, want):
        g = got[out.name]
        assert np.isfinite(w).all()
        assert w.std() > 1e-6 * max(1.0, float(np.abs(w).max())), "output is constant"
        if out.name in ("probs", "output57") or "Softmax" == _producer(model, out.name):
            assert w.max() < 0.999, "softmax saturated"
        assert g.shape == w.shape
        cos = float(np.dot(g.ravel().astype(np.float64), w.ravel()) / (np.linalg.norm(g) * np.linalg.norm(w)))
        assert cos >= 0.99999, cos
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4 * max(1.0, float(np.abs(w).max())))


def _producer(model: onnx.ModelProto, name: str) -> str | None:
    return next((n.op_type for n in model.graph.node if name in n.output), None)


@pytest.mark.parametrize("name", GENERATED)
def test_generated_model(name, run_ort):
    _check(GENERATED[name](), run_ort)


@pytest.mark.parametrize("name", LIGHT)
def test_light_model(name, run_ort):
    model = zoo.light_model(name)
    assert not any(n.op_type == "ConstantOfShape" for n in model.graph.node)
    assert model.ir_version >= 4
    _check(model, run_ort)


def test_mobilenet_v1_matches_the_seed_table():
    """Shapes of the seed's RKNN memory table rows (User, Tensor, OrigShape)."""
    m = onnx.shape_inference.infer_shapes(zoo.mobilenet_v1())
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output)}
    users = {i: n.op_type for n in m.graph.node for i in n.input}
    assert shapes["input0"] == [1, 3, 224, 224] and users["input0"] == "Conv"
    assert shapes["output2"] == [1, 32, 112, 112]
    assert shapes["output8"] == [1, 64, 56, 56]
    assert shapes["output26"] == [1, 512, 14, 14]
    assert shapes["output48"] == [1, 512, 7, 7]
    assert shapes["output54"] == [1, 1024, 7, 7] and users["output54"] == "AveragePool"
    assert shapes["output55"] == [1, 1024, 1, 1] and users["output55"] == "Conv"
    assert shapes["output56"] == [1, 1000, 1, 1] and users["output56"] == "Softmax"
    assert shapes["output57"] == [1, 1000, 1, 1]
    ops = [n.op_type for n in m.graph.node]
    assert ops.count("Conv") == 28 and ops.count("Relu") == 27
    assert 4.2e6 < sum(np.prod(t.dims) for t in m.graph.initializer) < 4.3e6


def test_yolov8n_like_size():
    m = zoo.yolov8n_like()
    n_params = sum(int(np.prod(t.dims)) for t in m.graph.initializer)
    assert 2.9e6 < n_params < 3.4e6
    ops = {n.op_type for n in m.graph.node}
    assert {"Split", "Concat", "MaxPool", "Resize", "Sigmoid", "Mul", "Softmax"} <= ops


def test_generators_are_deterministic():
    a, b = zoo.small_convnet(seed=3), zoo.small_convnet(seed=3)
    assert a.SerializeToString() == b.SerializeToString()
    assert zoo.small_convnet(seed=4).SerializeToString() != a.SerializeToString()


def test_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NPURT_CACHE", str(tmp_path))
    key = zoo.cache_key(zoo.small_convnet, size=16, seed=1)
    assert key == "small_convnet-seed=1,size=16"
    p = zoo.cached(zoo.small_convnet, size=16, seed=1)
    assert p.parent == tmp_path and p.name == f"{key}.onnx"
    mtime = p.stat().st_mtime_ns
    assert zoo.cached(zoo.small_convnet, size=16, seed=1) == p and p.stat().st_mtime_ns == mtime
    assert onnx.load(str(p)).SerializeToString() == zoo.small_convnet(size=16, seed=1).SerializeToString()
    assert zoo.save_cached(zoo.small_convnet(), "other") == tmp_path / "other.onnx"
