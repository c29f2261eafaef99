"""Where the board runs each op (`npurt.timing.placement`): against the RKNN compiler's support list
(op_support.json), and as `npurt perf` and `npurt report` show it."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import npurt
from helpers.cli import npurt as run_cli, ok_json
from npurt.soc import PROFILES
from npurt.timing import placement, predict


def _model(nodes, inputs, outputs, inits=()) -> onnx.ModelProto:
    g = helper.make_graph(nodes, "m", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _places(model: onnx.ModelProto, soc: str) -> dict[str, tuple[str, str]]:
    compiled = npurt.compile(model, soc=soc, progress=False)
    return {n.op_type: placement.place(n, compiled, soc) for n in compiled.graph.nodes}


def test_support_list_covers_every_rknn_soc_and_names_its_source():
    doc = placement.support()
    assert doc["version"] == "2.3.2" and "05_RKNN_Compiler_Support_Operator_List_V2.3.2.pdf" in doc["source"]
    assert set(doc["npu"]) == set(PROFILES)
    for soc, lists in doc["npu"].items():
        assert {"Convolution", "Depthwise Convolution", "Concat", "Add", "MaxPool"} <= set(lists["npu"]), soc
        assert lists["npu"]["Convolution"]["kernel_h"][0] >= 1
    assert doc["npu"]["rk3588"]["npu"]["Convolution"]["kernel_h"] == [1, 31]
    assert doc["npu"]["rk3588"]["npu"]["Concat"]["axis"] == {"in": [0, 1, 2, 3]}
    assert "Softmax" in doc["npu"]["rk3588"]["npu"] and "Softmax" not in doc["npu"]["rk3568"]["npu"]
    assert [0, 2, 3, 1] in doc["npu"]["rk3568"]["transpose_unsupported"]
    assert [0, 2, 3, 1] not in doc["npu"]["rk3588"]["transpose_unsupported"]
    assert "ReduceSum" in doc["cpu"] and "TopK" in doc["cpu"]


def test_ops_are_placed_as_the_list_says():
    x = _vi("x", [1, 8, 16, 16])
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 3, 1]),
             helper.make_node("Softmax", ["t"], ["s"], axis=-1),
             helper.make_node("ReduceSum", ["s", "axes"], ["y"], keepdims=1)]
    axes = numpy_helper.from_array(np.array([3], np.int64), "axes")
    model = _model(nodes, [x], [_vi("y", [1, 16, 16, 1])], [axes])
    rk3588, rk3568 = _places(model, "rk3588"), _places(model, "rk3568")
    assert rk3588["Relu"] == ("NPU", "") and rk3588["Transpose"] == ("NPU", "") and rk3588["Softmax"] == ("NPU", "")
    assert rk3568["Transpose"][0] == "CPU" and "perm=[0, 2, 3, 1]" in rk3568["Transpose"][1]
    assert rk3568["Softmax"][0] == "CPU" and "not in rk3568's NPU op list" in rk3568["Softmax"][1]
    for places in (rk3588, rk3568):
        assert places["ReduceSum"][0] == "CPU" and "ReduceSum" in places["ReduceSum"][1]


def test_conv_attributes_outside_the_ranges_run_on_the_cpu():
    rng = np.random.default_rng(0)
    x = _vi("x", [1, 4, 40, 40])
    w_ok = numpy_helper.from_array(rng.normal(0, 0.1, (8, 4, 3, 3)).astype(np.float32), "w_ok")
    w_big = numpy_helper.from_array(rng.normal(0, 0.1, (8, 8, 33, 1)).astype(np.float32), "w_big")
    nodes = [helper.make_node("Conv", ["x", "w_ok"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["a", "w_big"], ["y"], pads=[16, 0, 16, 0], name="tall")]
    model = _model(nodes, [x], [_vi("y", [1, 8, 40, 40])], [w_ok, w_big])
    compiled = npurt.compile(model, soc="rk3588", progress=False)
    got = {n.name or n.op_type: placement.place(n, compiled, "rk3588") for n in compiled.graph.nodes}
    tall = got.pop("tall")
    assert tall[0] == "CPU" and "kernel_h=33" in tall[1] and "[1, 31]" in tall[1]
    assert list(got.values()) == [("NPU", "")]
    p = predict(compiled, "rk3588")
    cpu = [layer for layer in p.layers if layer.target == "CPU"]
    assert len(cpu) == 1 and cpu[0].why == tall[1] and cpu[0].bound == "cpu" and cpu[0].macs == 0
    assert all(layer.why == "" for layer in p.layers if layer.target == "NPU")


def test_perf_and_report_say_where_the_board_runs_each_op(tmp_path):
    x = _vi("x", [1, 8, 16, 16])
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("ReduceSum", ["r", "axes"], ["y"], keepdims=1)]
    path = tmp_path / "m.npurt"
    npurt.compile(_model(nodes, [x], [_vi("y", [1, 1, 16, 16])], [axes]), soc="rk3588", progress=False).save(path)
    perf = ok_json("perf", str(path), "--soc", "rk3588")
    cpu = [layer for layer in perf["layers"] if layer["target"] == "CPU"]
    assert [layer["op"] for layer in cpu] == ["ReduceSum"] and "not in rk3588's NPU op list" in cpu[0]["why"]
    assert [layer["why"] for layer in perf["layers"] if layer["target"] == "NPU"] == [""]
    report = ok_json("report", str(path), "--soc", "rk3588")
    assert report["cpu_ops"] == [{"name": cpu[0]["name"], "op": "ReduceSum", "why": cpu[0]["why"]}]
    text = run_cli("report", str(path), "--soc", "rk3588")
    assert text.returncode == 0 and "1 of 2 ops on the NPU" in text.stdout and "CPU: " in text.stdout
    assert ok_json("report", "small_convnet", "--soc", "sm8550")["cpu_ops"] is None   # QNN: no such list
