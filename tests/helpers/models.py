"""Tiny ONNX models for the runtime and RKNN-mirror tests (built in memory) and their onnxruntime references."""
from __future__ import annotations

import functools

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from helpers.oracle import ort_session


def _weights() -> tuple[np.ndarray, ...]:
    """The models' fixed weights, drawn once from their own seeded generator (no generator is left at module level)."""
    rng = np.random.default_rng(1234)
    return tuple((rng.standard_normal(shape) * k).astype(np.float32)
                 for shape, k in (((8, 3, 3, 3), 0.3), (8, 0.1), ((4, 8, 1, 1), 0.3), ((5, 4), 0.5), (4, 0.1)))


W1, B1, W2, WM, BM = _weights()
X_SHAPE = (1, 3, 8, 10)
Y_SHAPE = (1, 4, 8, 10)


def _model(nodes, inputs, outputs, inits, name="t") -> bytes:
    g = helper.make_graph(nodes, name, inputs, outputs, [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m.SerializeToString()


@functools.lru_cache(maxsize=None)
def convnet(w: int = 10) -> bytes:
    """x [1,3,8,w] -> Conv3x3+Relu (8 ch) -> Conv1x1 (4 ch) -> y [1,4,8,w]."""
    nodes = [helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "W2"], ["y"], name="conv2")]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, w])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, w])],
                  {"W1": W1, "B1": B1, "W2": W2}, "convnet")


@functools.lru_cache(maxsize=None)
def convnet_other() -> bytes:
    """Same graph as `convnet` with other weights (a different network of the same shape)."""
    nodes = [helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "W2"], ["y"])]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 10])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 10])],
                  {"W1": -W1, "B1": B1, "W2": W2 * 0.5}, "convnet_other")


@functools.lru_cache(maxsize=None)
def two_io() -> bytes:
    """Two inputs, two outputs: x [1,3,6,6] -> Conv+Relu -> y [1,8,6,6]; z [1,5] -> MatMul+Add -> v [1,4]."""
    nodes = [helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["y"]),
             helper.make_node("MatMul", ["z", "WM"], ["m"]),
             helper.make_node("Add", ["m", "BM"], ["v"])]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6]),
                          helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 5])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 6, 6]),
                   helper.make_tensor_value_info("v", TensorProto.FLOAT, [1, 4])],
                  {"W1": W1, "B1": B1, "WM": WM, "BM": BM}, "two_io")


DYNAMIC_SHAPES = [[[1, 3, 8, 8]], [[1, 3, 16, 16]], [[1, 3, 12, 10]]]


@functools.lru_cache(maxsize=None)
def dynamic_convnet(with_metadata: bool = True) -> bytes:
    """x [1,3,H,W] (symbolic) -> Conv+Relu -> Conv1x1 -> y; ONNX metadata `npurt.dynamic_input` lists 3 shapes."""
    nodes = [helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "W2"], ["y"])]
    g = helper.make_graph(nodes, "dyn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "H", "W"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, "H", "W"])],
                          [numpy_helper.from_array(v, k) for k, v in {"W1": W1, "B1": B1, "W2": W2}.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    if with_metadata:
        import json
        helper.set_model_props(m, {"npurt.dynamic_input": json.dumps(DYNAMIC_SHAPES)})
    return m.SerializeToString()


def reference(model: bytes, *inputs: np.ndarray) -> list[np.ndarray]:
    """onnxruntime's outputs for `inputs` (in graph input order)."""
    sess = ort_session(model)
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, dict(zip(names, inputs)))


def image(shape=X_SHAPE, seed: int = 0) -> np.ndarray:
    """A random float32 NCHW input in [-1, 1)."""
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


@functools.lru_cache(maxsize=None)
def int8_convnet(soc: str = "rk3588"):
    """`convnet` compiled to int8 (calibrated on a few random images) — a CompiledModel."""
    import npurt
    calib = [image(seed=s) for s in range(8)]
    return npurt.compile(convnet(), soc=soc, quantize=calib, progress=False)


@functools.lru_cache(maxsize=None)
def npurt_bytes(soc: str = "rk3588", int8: bool = False) -> bytes:
    """`convnet` as .npurt file bytes for `soc` (fp16, or int8)."""
    import npurt
    if int8:
        return int8_convnet(soc).to_bytes()
    return npurt.compile(convnet(), soc=soc, progress=False).to_bytes()


def stored_bytes(cm, x: np.ndarray) -> dict:
    """Every planned tensor's and output's stored bytes after one run of compiled model `cm` on input `x` (the
    byte-for-byte oracle of the compiled kernels against the numpy path)."""
    from npurt.exec.executor import Executor, allocate
    from npurt.runtime.user_io import pack_input
    w, a, i, o = allocate(cm)
    ex = Executor(cm)
    ex.bind(w, a, i, o)
    pack_input(cm.native_input_attrs[0], x, i[0])
    ex.run()
    return {t: ex.tensor_view(t).view(np.uint8).copy() for t in list(cm.plan.offsets) + list(cm.graph.outputs)}


def numpy_path(fn, *args, **kw):
    """`fn(*args, **kw)` with the compiled kernels off: the numpy reference the kernels are compared with."""
    import npurt._kernels as K
    before = K.set_enabled(False)
    try:
        return fn(*args, **kw)
    finally:
        K.set_enabled(before)


def assert_every_level_stores_numpy_bytes(cm, x: np.ndarray, monkeypatch) -> None:
    """The compiled kernels at every instruction-set level this CPU has, on one and two executor threads, store the
    numpy path's bytes (`stored_bytes`) for every tensor of compiled model `cm` run on `x`."""
    import npurt._kernels as K
    want = numpy_path(stored_bytes, cm, x)
    try:
        for name in K.LEVELS[:K.LEVELS.index(K.cpu_level()) + 1]:
            K.set_level(name)
            for threads in ("1", "2"):
                monkeypatch.setenv("NPURT_EXEC_THREADS", threads)
                got = stored_bytes(cm, x)
                for t in want:
                    np.testing.assert_array_equal(got[t], want[t], err_msg=f"{name} {threads} {t}")
    finally:
        K.set_level("")
