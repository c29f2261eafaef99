"""onnxruntime's QNN EP building graphs op by op on npurt's libQnnHtp.so (default EP options): ordinary float and
QDQ models — a MobileNet-like, a YOLO-like head, a small transformer block and one model per op family — with every
node on the QNN EP (CPU fallback disabled: a node left to the CPU fails the session), outputs compared with
onnxruntime CPU; EPContext generation (`ep.context_enable=1`) then reload gives identical outputs; an op npurt does
not build falls back to the CPU per node, with npurt's log line naming it."""
from __future__ import annotations

import functools
import json
import logging

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from npurt.model import zoo

from helpers.capi import prefix
from helpers.oracle import qnn_ep_session, run_ort

pytestmark = pytest.mark.timeout(300)
FP16 = 4e-3                      # float models compile at fp16 (the HTP's float precision): error / max |y|


@pytest.fixture(scope="module")
def lib():
    return prefix() / "lib"


def _feeds(model: onnx.ModelProto, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {i.name: rng.normal(size=[d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
            for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}}


def _save(tmp_path, model: onnx.ModelProto, name: str = "m.onnx"):
    path = tmp_path / name
    onnx.save(model, path)
    return path


def _family(nodes, x_shape, inits: dict, opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "family", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@functools.cache
def families() -> dict:
    """One small model per op family, as ONNX models (the EP maps them onto the QNN ops npurt builds); weights from
    their own seeded generator, built on first use."""
    rng = np.random.default_rng(21)
    w = lambda *s: (rng.normal(size=s) * 0.3).astype(np.float32)     # noqa: E731
    n = helper.make_node
    return {
        "conv": _family([n("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
                         n("Conv", ["c", "D"], ["d"], group=6, pads=[1, 1, 1, 1]),
                         n("ConvTranspose", ["d", "T"], ["y"], strides=[2, 2])],
                        [1, 3, 8, 8], {"W": w(6, 3, 3, 3), "B": w(6), "D": w(6, 1, 3, 3), "T": w(6, 4, 2, 2)}),
        "pool": _family([n("MaxPool", ["x"], ["m"], kernel_shape=[2, 2], strides=[2, 2]),
                         n("AveragePool", ["m"], ["a"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                         n("GlobalAveragePool", ["a"], ["y"])], [1, 4, 8, 8], {}),
        "activation": _family([n("Relu", ["x"], ["r"]), n("Sigmoid", ["x"], ["s"]), n("Tanh", ["x"], ["t"]),
                               n("HardSwish", ["x"], ["h"]), n("LeakyRelu", ["x"], ["l"], alpha=0.1),
                               n("Clip", ["x", "lo", "hi"], ["c"]), n("Gelu", ["x"], ["g"]),
                               n("Sum", ["r", "s", "t", "h", "l", "c", "g"], ["y"])],
                              [1, 4, 5, 6], {"lo": np.float32(0), "hi": np.float32(6)}, opset=20),
        "elementwise": _family([n("Add", ["x", "A"], ["a"]), n("Sub", ["a", "x"], ["s"]), n("Mul", ["s", "x"], ["m"]),
                                n("Div", ["m", "D"], ["d"]), n("Max", ["d", "x"], ["mx"]),
                                n("Min", ["mx", "A"], ["y"])],
                               [1, 4, 5, 6], {"A": w(1, 4, 1, 1), "D": np.full((1, 4, 1, 1), 2.0, np.float32)}),
        "shape": _family([n("Transpose", ["x"], ["t"], perm=[0, 2, 1, 3]), n("Reshape", ["t", "s"], ["r"]),
                          n("Split", ["r", "sp"], ["a", "b"], axis=2), n("Concat", ["b", "a"], ["c"], axis=2),
                          n("Slice", ["c", "st", "en", "ax"], ["sl"]), n("Pad", ["sl", "p"], ["pd"]),
                          n("Gather", ["pd", "i"], ["y"], axis=1)],
                         [1, 4, 6, 8], {"s": np.array([1, 6, 32], np.int64), "sp": np.array([12, 20], np.int64),
                                        "st": np.array([2], np.int64), "en": np.array([30], np.int64),
                                        "ax": np.array([2], np.int64), "p": np.array([0, 1, 0, 0, 1, 0], np.int64),
                                        "i": np.array([0, 3, 7], np.int64)}),
        "resize": _family([n("Resize", ["x", "", "sc"], ["a"], mode="nearest"),
                           n("Resize", ["a", "", "sc"], ["y"], mode="linear")],
                          [1, 3, 4, 5], {"sc": np.array([1, 1, 2, 2], np.float32)}),
        "reduce": _family([n("ReduceMean", ["x"], ["m"], axes=[2, 3], keepdims=1),
                           n("ReduceMax", ["x"], ["x2"], axes=[1], keepdims=1), n("Add", ["m", "x2"], ["y"])],
                          [1, 4, 5, 6], {}),
        "matmul": _family([n("Gemm", ["x", "G", "gb"], ["g"], transB=1), n("MatMul", ["g", "M"], ["y"])],
                          [2, 8], {"G": w(6, 8), "gb": w(6), "M": w(6, 5)}),
        "normalization": _family([n("BatchNormalization", ["x", "bs", "bb", "bm", "bv"], ["b"]),
                                  n("Reshape", ["b", "s"], ["r"]),
                                  n("LayerNormalization", ["r", "lg", "lb"], ["l"], axis=-1),
                                  n("Softmax", ["l"], ["y"], axis=-1)],
                                 [1, 4, 3, 8], {"bs": w(4) + 1, "bb": w(4), "bm": w(4), "bv": np.abs(w(4)) + 0.5,
                                                "s": np.array([1, 12, 8], np.int64), "lg": w(8) + 1, "lb": w(8)}),
    }


FAMILIES = ("activation", "conv", "elementwise", "matmul", "normalization", "pool", "reduce", "resize", "shape")
ZOO = {"mobilenet_v2_like": dict(size=64), "yolo_head": dict(size=64), "transformer_block": dict(seq=16, dim=32)}


@pytest.mark.parametrize("name", sorted(["family_" + k for k in FAMILIES] + list(ZOO)))
def test_float_model_every_node_on_the_ep_matches_cpu(lib, tmp_path, name):
    model = families()[name[7:]] if name.startswith("family_") else getattr(zoo, name)(**ZOO[name])
    feeds = _feeds(model, 1)
    session = qnn_ep_session(_save(tmp_path, model), lib)      # CPU fallback disabled: all nodes on the EP
    got = session.run(None, feeds)
    ref = run_ort(model, feeds)
    for g, r in zip(got, ref):
        assert g.shape == r.shape
        assert np.abs(g - r).max() <= FP16 * max(1.0, float(np.abs(r).max()))


def _qdq(model: onnx.ModelProto, tmp_path) -> tuple[onnx.ModelProto, float]:
    """The QDQ model onnxruntime's quantizer makes (pre-processed: BatchNorm folded; uint8 activations, int8
    symmetric weights), and its output's quantum."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.samples = iter([_feeds(model, 100 + k) for k in range(4)])

        def get_next(self):
            return next(self.samples, None)

    src, pre, dst = tmp_path / "f.onnx", tmp_path / "p.onnx", tmp_path / "q.onnx"
    onnx.save(model, src)
    quant_pre_process(str(src), str(pre))
    quantize_static(str(pre), str(dst), Reader(), quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8)
    q = onnx.load(dst)
    last = [nd for nd in q.graph.node if nd.op_type == "DequantizeLinear" and nd.output[0] == q.graph.output[0].name]
    scale = {t.name: numpy_helper.to_array(t) for t in q.graph.initializer}[last[0].input[1]]
    return q, float(scale)


# Output quanta by which the EP on npurt may differ from onnxruntime CPU on the same QDQ model. One where the
# output is one rounding of a conv / pool chain; the YOLO head's Sigmoid / Mul stages turn a one-quantum difference
# of an inner conv (a value at a rounding tie, computed in another order) into up to 3 output quanta.
QDQ = {"small_convnet": 1, "mobilenet_v2_like": 1, "yolo_head": 3}


@pytest.mark.parametrize("name", sorted(QDQ))
def test_qdq_model_every_node_on_the_ep_matches_cpu(lib, tmp_path, name):
    model, quantum = _qdq(getattr(zoo, name)(**({"size": 64} if name != "small_convnet" else {})), tmp_path)
    feeds = _feeds(model, 2)
    got = qnn_ep_session(_save(tmp_path, model, "qdq.onnx"), lib).run(None, feeds)[0]
    ref = run_ort(model, feeds)[0]
    assert np.abs(got - ref).max() <= QDQ[name] * quantum * 1.001


@pytest.mark.parametrize("embed", [0, 1])
def test_epcontext_generation_then_reload_gives_identical_outputs(lib, tmp_path, embed):
    """ep.context_enable=1 makes the EP call contextGetBinarySize / contextGetBinary on the graph it built; the
    EPContext model it writes reloads (contextCreateFromBinary) to the same outputs, byte for byte."""
    model = families()["conv"]
    src, ctx = _save(tmp_path, model), tmp_path / "m_ctx.onnx"
    feeds = _feeds(model, 3)
    first = qnn_ep_session(src, lib, config={"ep.context_enable": 1, "ep.context_file_path": ctx,
                                             "ep.context_embed_mode": embed}).run(None, feeds)[0]
    assert ctx.exists()
    nodes = onnx.load(ctx).graph.node
    assert [nd.op_type for nd in nodes] == ["EPContext"]
    again = qnn_ep_session(ctx, lib).run(None, feeds)[0]
    assert np.array_equal(first, again)


def test_an_op_npurt_does_not_build_falls_back_per_node(lib, tmp_path, caplog):
    """LogSoftmax (QNN LogSoftmax: not built by npurt) between two ops npurt builds: backendValidateOpConfig says no
    with a log line naming it, the EP leaves that node on the CPU and runs the two others on npurt (two QNN graphs in
    one context), outputs as onnxruntime CPU."""
    n = helper.make_node
    model = _family([n("Relu", ["x"], ["a"]), n("LogSoftmax", ["a"], ["b"], axis=-1), n("Sigmoid", ["b"], ["y"])],
                    [1, 4, 4, 4], {})
    feeds = _feeds(model, 4)
    with caplog.at_level(logging.ERROR, logger="npurt.qnn"):
        session = qnn_ep_session(_save(tmp_path, model), lib, fallback=True, profile=str(tmp_path / "prof"))
        got = session.run(None, feeds)[0]
    assert any("backendValidateOpConfig" in r.getMessage() and "LogSoftmax" in r.getMessage()
               for r in caplog.records)
    events = json.loads(open(session.end_profiling()).read())
    placed = {e["name"]: e["args"]["provider"] for e in events
              if e.get("cat") == "Node" and "provider" in e.get("args", {})}
    assert {p for name, p in placed.items() if "LogSoftmax" in name} == {"CPUExecutionProvider"}
    assert sum(p == "QNNExecutionProvider" for p in placed.values()) == 2
    np.testing.assert_allclose(got, run_ort(model, feeds)[0], atol=FP16)


def test_the_host_survives_the_ep_unloading_the_backend(lib, tmp_path):
    """The EP dlcloses libQnnHtp.so when its session goes; the embedded module's objects stay in sys.modules, so
    the library is never unmapped: walking sys.modules afterwards is safe."""
    import subprocess
    import sys
    import textwrap
    from pathlib import Path
    model = _save(tmp_path, families()["pool"])
    script = textwrap.dedent(f"""
        import gc, inspect, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import numpy as np
        from helpers.oracle import qnn_ep_session
        s = qnn_ep_session({str(model)!r}, {str(lib)!r})
        s.run(None, {{"x": np.zeros((1, 4, 8, 8), np.float32)}})
        del s
        gc.collect()
        assert any("npurt_capi" in k for k in sys.modules)
        for m in list(sys.modules.values()):     # what inspect / pytest / pickle do
            inspect.ismodule(m)
            getattr(m, "__file__", None)
        print("alive")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0 and "alive" in proc.stdout, proc.stdout + proc.stderr[-2000:]
