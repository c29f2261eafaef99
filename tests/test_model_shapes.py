"""Exact static shapes (`npurt.model.shapes`): shape subgraphs are folded from the static shapes, never computed by
running kernels on placeholder data; a shape that depends on data is an INVALID_MODEL naming node and tensor.

The models reproduce what exporters emit in front of a Reshape (PP-OCRv4's recognizer: Shape -> Cast int32 ->
Slice -> Cast -> Concat with constants; CRNNs: Shape -> Gather -> Unsqueeze -> Concat -> ConstantOfShape for the
LSTM's initial state; YOLO heads: Range / Expand / Div on shapes), with dynamic dims resolved by `input_shapes`.
"""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import npurt
from npurt.errors import ErrorCode, NpuError
from npurt.exec.evaluate import evaluate_node
from npurt.exec.compile import supported_ops
from npurt.model.compiler import compile_onnx
from npurt.model.options import CompileOptions

from helpers.shape_models import graph_model, svtr_reshape, yolo_grid
from helpers.oracle import run_ort


def _ort(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    return run_ort(model, {"x": x})[0]


def _recording(calls: list):
    def evaluate(node, values, opset):
        calls.append(node.name or node.op_type)
        return evaluate_node(node, values, opset)
    return evaluate


@pytest.mark.parametrize("build, shape", [(svtr_reshape, (1, 8, 3, 5)), (yolo_grid, (1, 4, 6, 7))])
def test_shape_subgraphs_fold_from_static_shapes_and_match_onnxruntime(build, shape):
    rng = np.random.default_rng(28)
    model = build()
    x = rng.standard_normal(shape).astype(np.float32)
    want = _ort(model, x)
    calls: list = []
    compiled = compile_onnx(model, "rk3588", CompileOptions(input_shapes={"x": list(shape)}, precision="float32"),
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
    model = svtr_reshape()
    for shape in [(1, 8, 2, 4), (2, 8, 4, 6)]:
        x = rng.standard_normal(shape).astype(np.float32)
        with npurt.Session(npurt.compile(model, soc="rk3588", input_shapes={"x": list(shape)}, progress=False)) as s:
            np.testing.assert_allclose(s.run(x)[0], _ort(model, x), rtol=2e-3, atol=2e-3)


def test_a_data_dependent_shape_names_node_and_tensor():
    model = graph_model([helper.make_node("NonZero", ["x"], ["nz"], name="where"),
                    helper.make_node("Cast", ["nz"], ["y"], to=TensorProto.FLOAT, name="to_float")],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    with pytest.raises(NpuError) as e:
        npurt.compile(model, soc="rk3588", progress=False)
    assert e.value.code == ErrorCode.INVALID_MODEL
    assert "'where' (NonZero)" in e.value.message and "'nz'" in e.value.message


def test_a_reshape_target_from_a_graph_input_is_refused_naming_the_node():
    model = graph_model([helper.make_node("Reshape", ["x", "t"], ["y"], name="reshape_by_input")],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6]),
                    helper.make_tensor_value_info("t", TensorProto.INT64, [2])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    with pytest.raises(NpuError) as e:
        npurt.compile(model, soc="rk3588", progress=False)
    assert e.value.code == ErrorCode.INVALID_MODEL
    assert "'reshape_by_input' (Reshape)" in e.value.message and "'y'" in e.value.message
