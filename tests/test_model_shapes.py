"""Exact static shapes (`npurt.model.shapes`): shape subgraphs are folded from the static shapes, never computed by
running kernels on placeholder data; a shape that depends on data is an INVALID_MODEL naming node and tensor.

The models reproduce what exporters emit in front of a Reshape (PP-OCRv4's recognizer: Shape -> Cast int32 ->
Slice -> Cast -> Concat with constants; CRNNs: Shape -> Gather -> Unsqueeze -> Concat -> ConstantOfShape for the
LSTM's initial state; YOLO heads: Range / Expand / Div on shapes), with dynamic dims resolved by `input_shapes`.
"""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import npurt
from npurt.errors import ErrorCode, NpuError
from npurt.exec.evaluate import evaluate_node
from npurt.exec.compile import supported_ops
from npurt.model.compiler import compile_onnx


def _const(name: str, value) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value)))


def _model(nodes, inputs, outputs, inits=(), opset: int = 13) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "shapes", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _svtr_reshape() -> onnx.ModelProto:
    """PP-OCRv4's pattern, opset 12 as paddle2onnx exports it. x [N, 8, H, W] -> Reshape(x, Concat(Slice(Shape x,
    0, 2), [-1])) -> Transpose -> a [N, HW, 8] (ONNX's inference at import leaves a's dims unknown: its data
    propagation does not go through that Slice); then Reshape(a, Concat(0, Cast(Slice(Cast int32(Shape a), 1, 2)),
    2, Div(8, 2))) -> [N, HW, 2, 4], whose target ONNX knows the length of but not the values; a Mul after it."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s0"]),
        _const("zero", np.array([0], np.int64)), _const("one", np.array([1], np.int64)),
        _const("two", np.array([2], np.int64)), _const("minus1", np.array([-1], np.int64)),
        helper.make_node("Slice", ["s0", "zero", "two", "zero"], ["head"]),
        helper.make_node("Concat", ["head", "minus1"], ["flat"], axis=0),
        helper.make_node("Reshape", ["x", "flat"], ["f"]),
        helper.make_node("Transpose", ["f"], ["a"], perm=[0, 2, 1]),
        helper.make_node("Shape", ["a"], ["s"]),
        helper.make_node("Cast", ["s"], ["s32"], to=TensorProto.INT32),
        helper.make_node("Slice", ["s32", "one", "two", "zero"], ["hw32"]),
        helper.make_node("Cast", ["hw32"], ["hw"], to=TensorProto.INT64),
        _const("c8", np.array([8], np.int64)),
        helper.make_node("Div", ["c8", "two"], ["half"]),
        helper.make_node("Concat", ["zero", "hw", "two", "half"], ["target"], axis=0),
        helper.make_node("Reshape", ["a", "target"], ["r"]),
        _const("k", np.array(0.5, np.float32)),
        helper.make_node("Mul", ["r", "k"], ["y"]),
    ]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8, "H", "W"])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], opset=12)


def _yolo_grid() -> onnx.ModelProto:
    """x [1, 4, H, W]: a grid built from its shape (Gather, Range, Unsqueeze, Expand, Cast, arithmetic) is added to
    x; ConstantOfShape of the shape's tail; Size scales it."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        _const("i3", np.array(3, np.int64)), _const("i0", np.array(0, np.int64)), _const("i1", np.array(1, np.int64)),
        helper.make_node("Gather", ["s", "i3"], ["w"], axis=0),
        helper.make_node("Range", ["i0", "w", "i1"], ["xs"]),
        helper.make_node("Cast", ["xs"], ["xf"], to=TensorProto.FLOAT),
        _const("ax", np.array([0], np.int64)),
        helper.make_node("Unsqueeze", ["xf", "ax"], ["row"]),
        helper.make_node("Shape", ["x"], ["s2"], start=2),
        helper.make_node("Expand", ["row", "s2"], ["grid"]),
        helper.make_node("ConstantOfShape", ["s2"], ["ones"], value=numpy_helper.from_array(np.array([1.0], np.float32))),
        helper.make_node("Size", ["x"], ["n"]),
        helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
        helper.make_node("Div", ["grid", "nf"], ["g"]),
        helper.make_node("Sub", ["g", "ones"], ["g1"]),
        helper.make_node("Add", ["x", "g1"], ["y"]),
    ]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, "H", "W"])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], opset=17)


def _ort(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def _recording(calls: list):
    def evaluate(node, values, opset):
        calls.append(node.name or node.op_type)
        return evaluate_node(node, values, opset)
    return evaluate


@pytest.mark.parametrize("build, shape", [(_svtr_reshape, (1, 8, 3, 5)), (_yolo_grid, (1, 4, 6, 7))])
def test_shape_subgraphs_fold_from_static_shapes_and_match_onnxruntime(build, shape):
    rng = np.random.default_rng(28)
    model = build()
    x = rng.standard_normal(shape).astype(np.float32)
    want = _ort(model, x)
    calls: list = []
    compiled = compile_onnx(model, soc="rk3588", input_shapes={"x": list(shape)}, precision="float32",
                            progress=False, evaluate=_recording(calls), supported=supported_ops())
    # Only the shape subgraph was evaluated (on folded constants): no node on the data path ran at compile time.
    data_path = {"Reshape", "Transpose", "Mul", "Add"}
    assert not [c for c in calls if c in data_path]
    assert {n.op_type for n in compiled.graph.nodes} <= data_path
    assert tuple(compiled.graph.tensors["y"].shape) == want.shape
    with npurt.Session(compiled) as s:
        got = s.run(x)[0]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_the_same_model_compiles_for_each_given_shape():
    rng = np.random.default_rng(7)
    model = _svtr_reshape()
    for shape in [(1, 8, 2, 4), (2, 8, 4, 6)]:
        x = rng.standard_normal(shape).astype(np.float32)
        with npurt.Session(npurt.compile(model, soc="rk3588", input_shapes={"x": list(shape)}, progress=False)) as s:
            np.testing.assert_allclose(s.run(x)[0], _ort(model, x), rtol=2e-3, atol=2e-3)


def test_a_data_dependent_shape_names_node_and_tensor():
    model = _model([helper.make_node("NonZero", ["x"], ["nz"], name="where"),
                    helper.make_node("Cast", ["nz"], ["y"], to=TensorProto.FLOAT, name="to_float")],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    with pytest.raises(NpuError) as e:
        npurt.compile(model, soc="rk3588", progress=False)
    assert e.value.code == ErrorCode.INVALID_MODEL
    assert "'where' (NonZero)" in e.value.message and "'nz'" in e.value.message


def test_a_reshape_target_from_a_graph_input_is_refused_naming_the_node():
    model = _model([helper.make_node("Reshape", ["x", "t"], ["y"], name="reshape_by_input")],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6]),
                    helper.make_tensor_value_info("t", TensorProto.INT64, [2])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    with pytest.raises(NpuError) as e:
        npurt.compile(model, soc="rk3588", progress=False)
    assert e.value.code == ErrorCode.INVALID_MODEL
    assert "'reshape_by_input' (Reshape)" in e.value.message and "'y'" in e.value.message
