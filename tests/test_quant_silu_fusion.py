"""SiLU (`Mul(x, Sigmoid(x))`) becomes one Swish activation fused into the conv before it, as rknn-toolkit2 fuses
it before calibration: the int8 model stores the conv + SiLU result only, not the conv's output rounded to int8
before the activation nor the sigmoid rounded to 1/255 (the cause of npurt's int8 trailing the toolkit's on the
ddddocr detector, a SiLU network: see docs/quantization.md)."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import npurt
from npurt.runtime.user_io import run_once
from helpers.oracle import ort_session


def _model(share_sigmoid: bool = False) -> onnx.ModelProto:
    """x -> Conv 3->16 -> SiLU -> Conv 16->4 -> y (with `share_sigmoid`, the sigmoid is also an output)."""
    rng = np.random.default_rng(7)
    inits = [numpy_helper.from_array(rng.normal(0, 0.6, (16, 3, 3, 3)).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.normal(0, 0.3, 16).astype(np.float32), "b1"),
             numpy_helper.from_array(rng.normal(0, 0.3, (4, 16, 1, 1)).astype(np.float32), "w2")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Sigmoid", ["c1"], ["s1"]),
             helper.make_node("Mul", ["c1", "s1"], ["a1"]),
             helper.make_node("Conv", ["a1", "w2"], ["y"], kernel_shape=[1, 1])]
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 12, 12])]
    if share_sigmoid:
        outs.append(helper.make_tensor_value_info("s1", TensorProto.FLOAT, [1, 16, 12, 12]))
    graph = helper.make_graph(nodes, "silu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12])],
                              outs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def _inputs(n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(0, 2, (1, 3, 12, 12)).astype(np.float32) for _ in range(n)]


def _cosine(a, b) -> float:
    a, b = np.ravel(a).astype(np.float64), np.ravel(b).astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_silu_fuses_into_the_conv_and_only_its_result_is_quantised():
    c = npurt.compile(_model(), progress=False, quantize=_inputs(8, 1))
    assert c.graph.op_counts() == {"ConvSwish": 1, "Conv": 1}
    conv = c.graph.nodes[0]
    assert conv.activation == "Swish" and conv.outputs == ["a1"]
    assert "c1" not in c.storage and "s1" not in c.storage      # neither the pre-activation nor the sigmoid stored
    sess = ort_session(_model())
    test = _inputs(4, 2)
    cos = [_cosine(run_once(c, [x])[0], sess.run(None, {"x": x})[0]) for x in test]
    # measured 0.99987-0.99988; with c1 and s1 each rounded to int8 first (as before the fusion) 0.99979-0.99982
    assert min(cos) > 0.99985, cos


def test_fused_silu_is_float_equivalent():
    c = npurt.compile(_model(), progress=False, precision="float32")
    assert c.graph.nodes[0].activation == "Swish"
    sess = ort_session(_model())
    for x in _inputs(2, 3):
        np.testing.assert_allclose(run_once(c, [x])[0], sess.run(None, {"x": x})[0], rtol=1e-5, atol=1e-5)


def test_a_sigmoid_read_elsewhere_is_not_fused():
    c = npurt.compile(_model(share_sigmoid=True), progress=False, quantize=_inputs(4, 1))
    ops = c.graph.op_counts()
    assert "Swish" not in ops and "ConvSwish" not in ops and ops.get("Mul") == 1
