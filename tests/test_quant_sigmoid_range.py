"""A Sigmoid's int8 input keeps only ±7 (rknn-toolkit2 clips it there too: beyond it the [0, 1] output moves by less
than half a step), and the cut reaches back through Concat and Split to the convs that feed them — YOLOv8's head,
where class logits far below -7 otherwise widen the range of the box coordinates concatenated with them."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import npurt
from helpers.oracle import ort_session
from npurt.model.calibrate import SIGMOID_INPUT_BOUND


def _head(extra_reader: bool = False) -> onnx.ModelProto:
    """x -> Conv "box" (values about -3..5) and Conv "cls" (about -16..-8) -> Concat -> Split -> box out, Sigmoid(cls)
    out (with `extra_reader`, "cls" is also read by an Add that is an output)."""
    rng = np.random.default_rng(11)
    inits = [numpy_helper.from_array(rng.normal(0, 0.5, (2, 4, 1, 1)).astype(np.float32), "wb"),
             numpy_helper.from_array(np.array([1.0, 1.0], np.float32), "bb"),
             numpy_helper.from_array(rng.normal(0, 0.3, (2, 4, 1, 1)).astype(np.float32), "wc"),
             numpy_helper.from_array(np.array([-12.0, -12.0], np.float32), "bc"),
             numpy_helper.from_array(np.array([2, 2], np.int64), "parts")]
    nodes = [helper.make_node("Conv", ["x", "wb", "bb"], ["box"], kernel_shape=[1, 1]),
             helper.make_node("Conv", ["x", "wc", "bc"], ["cls"], kernel_shape=[1, 1]),
             helper.make_node("Concat", ["box", "cls"], ["cat"], axis=1),
             helper.make_node("Split", ["cat", "parts"], ["box_out", "cls_logits"], axis=1),
             helper.make_node("Sigmoid", ["cls_logits"], ["scores"])]
    outs = [helper.make_tensor_value_info("box_out", TensorProto.FLOAT, [1, 2, 6, 6]),
            helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 2, 6, 6])]
    if extra_reader:
        nodes.append(helper.make_node("Add", ["cls", "cls"], ["twice"]))
        outs.append(helper.make_tensor_value_info("twice", TensorProto.FLOAT, [1, 2, 6, 6]))
    graph = helper.make_graph(nodes, "head", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
                              outs, inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def _compiled(model: onnx.ModelProto) -> npurt.CompiledModel:
    rng = np.random.default_rng(3)
    samples = [[rng.normal(0, 2, (1, 4, 6, 6)).astype(np.float32)] for _ in range(4)]
    return npurt.compile(model, soc="rk3588", quantize=samples, progress=False)


def _float_range(model: onnx.ModelProto, name: str) -> tuple[float, float]:
    """The float range of tensor `name` over the calibration samples (onnxruntime)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    m.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    sess = ort_session(m)
    rng = np.random.default_rng(3)
    values = [sess.run([name], {"x": rng.normal(0, 2, (1, 4, 6, 6)).astype(np.float32)})[0] for _ in range(4)]
    return float(min(v.min() for v in values)), float(max(v.max() for v in values))


def test_sigmoid_input_range_is_cut_back_through_split_and_concat():
    model = _head()
    c = _compiled(model)
    lo, hi = _float_range(model, "cls")
    assert lo < -SIGMOID_INPUT_BOUND - 3 and hi < 0                 # the logits reach far below the bound
    assert c.storage["cls"].scale == np.float32(SIGMOID_INPUT_BOUND / 255)     # [-7, 0], not [lo, 0]
    box_lo, box_hi = _float_range(model, "box")
    cat_scale = (box_hi + SIGMOID_INPUT_BOUND) / 255                 # the concat: box's top down to -7
    assert abs(c.storage["cat"].scale - cat_scale) <= 1e-6 * cat_scale
    assert c.storage["box_out"].scale == c.storage["cat"].scale     # a Split's outputs keep its input's params


def test_a_tensor_another_op_reads_keeps_its_range():
    model = _head(extra_reader=True)
    c = _compiled(model)
    lo, _ = _float_range(model, "cls")
    assert abs(c.storage["cls"].scale - (0 - lo) / 255) <= 1e-6 * c.storage["cls"].scale


def test_the_cut_scores_match_onnxruntime_within_int8():
    model = _head()
    c = _compiled(model)
    sess = ort_session(model)
    x = np.random.default_rng(3).normal(0, 2, (1, 4, 6, 6)).astype(np.float32)     # a calibration sample
    ref = sess.run(None, {"x": x})
    got = npurt.Session(c).run([x])
    assert np.abs(got[1] - ref[1]).max() <= 2 / 255                 # scores: sigmoid of ≤ -7 is ≈ 0 either way
    assert np.abs(got[0] - ref[0]).max() <= 2 * c.storage["box_out"].scale
