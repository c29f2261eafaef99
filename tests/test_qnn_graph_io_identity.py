"""graphExecute pairs the client's tensors with the graph's by id, else by name, in any order (as onnxruntime's QNN
EP lists a multi-output model's outputs in its own order): from the Python mirror on a built graph, on a loaded
context binary, and through the EP on a model whose first output is also consumed inside."""
from __future__ import annotations

import ctypes

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npurt.qnn as q
from helpers.capi import prefix
from helpers.oracle import qnn_ep_session, run_ort
from helpers.qnn import code
from helpers.qnn_build import Client

W, R = q.QNN_TENSOR_TYPE_APP_WRITE, q.QNN_TENSOR_TYPE_APP_READ


@pytest.fixture
def client(qnn_graph_client):
    return qnn_graph_client


def _two_outputs(c: Client) -> None:
    """x -> Relu -> a (an output, also read inside) -> Neg -> b (an output); float graphs compute in fp16."""
    c.tensor("x", W, (2, 3))
    c.tensor("a", R, (2, 3))
    c.tensor("b", R, (2, 3))
    c.node("relu", "Relu", ["x"], ["a"])
    c.node("neg", "ElementWiseNeg", ["a"], ["b"])
    c.finalize()


def _client_tensor(c: Client, name: str, arr: np.ndarray, *, id_=None, label=None) -> q.Qnn_Tensor_t:
    t = q.Qnn_Tensor_t()
    ctypes.memmove(ctypes.addressof(t), ctypes.addressof(c.tensors[name]), ctypes.sizeof(t))
    c.keep.append(arr)
    t.v2.clientBuf.data, t.v2.clientBuf.dataSize = arr.ctypes.data, arr.nbytes
    if id_ is not None:
        t.v2.id = id_
    if label is not None:
        c.keep.append(label)
        t.v2.name = label
    return t


def test_outputs_in_any_order_by_id_or_by_name(client):
    _two_outputs(client)
    x = np.random.default_rng(5).normal(size=(2, 3)).astype(np.float16).astype(np.float32)   # exact in fp16
    a, b = np.zeros((2, 3), np.float32), np.zeros((2, 3), np.float32)
    ins = [_client_tensor(client, "x", x)]
    outs = [_client_tensor(client, "b", b), _client_tensor(client, "a", a)]           # the graph's order reversed
    assert code(client.qi.graphExecute(client.graph, ins, 1, outs, 2, None, None)) == q.QNN_SUCCESS
    assert np.array_equal(a, np.maximum(x, 0)) and np.array_equal(b, -np.maximum(x, 0))
    a[:], b[:] = 7, 7
    outs = [_client_tensor(client, "b", b, id_=999999), _client_tensor(client, "a", a, id_=999998)]  # by name
    assert code(client.qi.graphExecute(client.graph, ins, 1, outs, 2, None, None)) == q.QNN_SUCCESS
    assert np.array_equal(a, np.maximum(x, 0)) and np.array_equal(b, -np.maximum(x, 0))


def test_a_tensor_the_graph_does_not_have_is_refused_with_its_name(client, caplog):
    _two_outputs(client)
    x = np.ones((2, 3), np.float32)
    a, b = np.full((2, 3), 7, np.float32), np.full((2, 3), 7, np.float32)
    ins = [_client_tensor(client, "x", x)]
    stranger = _client_tensor(client, "b", b, id_=424242, label=b"not_here")
    with caplog.at_level("ERROR", logger="npurt.qnn"):
        rc = client.qi.graphExecute(client.graph, ins, 1, [_client_tensor(client, "a", a), stranger], 2, None, None)
    assert code(rc) == q.QNN_GRAPH_ERROR_INVALID_TENSOR and "'not_here'" in caplog.text
    twice = [_client_tensor(client, "a", a), _client_tensor(client, "a", b)]
    assert code(client.qi.graphExecute(client.graph, ins, 1, twice, 2, None, None)) == q.QNN_GRAPH_ERROR_INVALID_TENSOR
    assert (a == 7).all() and (b == 7).all()                                        # nothing was written


def _block_and_logits() -> onnx.ModelProto:
    """A block output `res_r` that the logits after it read, listed after them (the EP creates the graph's outputs
    in the order their producers are added, and lists them at execute in the model's order)."""
    rng = np.random.default_rng(9)
    n = helper.make_node
    nodes = [n("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1]), n("Relu", ["c"], ["res_r"]),
             n("GlobalAveragePool", ["res_r"], ["g"]), n("Flatten", ["g"], ["f"]), n("Gemm", ["f", "F"], ["logits"])]
    graph = helper.make_graph(nodes, "two_outputs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10]),
                               helper.make_tensor_value_info("res_r", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [numpy_helper.from_array(rng.normal(0, 0.3, (4, 3, 3, 3)).astype(np.float32), "W"),
                               numpy_helper.from_array(rng.normal(0, 0.3, (4, 10)).astype(np.float32), "F")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.timeout(300)
def test_the_qnn_ep_runs_a_model_whose_output_is_also_consumed_inside(tmp_path):
    model = _block_and_logits()
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    x = np.random.default_rng(2).normal(size=(1, 3, 8, 8)).astype(np.float32)
    ctx = tmp_path / "m_ctx.onnx"
    got = qnn_ep_session(path, prefix() / "lib", config={"ep.context_enable": 1, "ep.context_file_path": ctx}
                         ).run(None, {"x": x})
    for g, r in zip(got, run_ort(model, {"x": x})):
        assert g.shape == r.shape
        assert np.abs(g - r).max() <= 4e-3 * max(1.0, float(np.abs(r).max()))
    again = qnn_ep_session(ctx, prefix() / "lib").run(None, {"x": x})          # the binary's graph, retrieved
    assert all(np.array_equal(g, a) for g, a in zip(got, again))
