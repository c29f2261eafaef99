"""LSTM and GRU compiled and run through npurt (fp16 and int8) against onnxruntime: forward, reverse and
bidirectional, with and without initial states, sequence lengths; and a CRNN-style model
whose initial states come from a shape subgraph (as PyTorch exports them). The ops' semantics are also covered by
the ONNX backend node tests (tests/test_node_backend.py runs every LSTM / GRU case)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import npurt
from npurt.errors import NpuError

from helpers.shape_models import crnn_head
from helpers.oracle import run_ort

SEQ, BATCH, IN, HID = 6, 2, 5, 4


def _recurrent(op: str, direction: str, rng: np.random.Generator, initial: bool, seq_lens: bool = False):
    """A one-node LSTM / GRU model: X (and h0 / c0 when `initial`, sequence_lens when `seq_lens`) as graph inputs,
    W, R, B seeded initializers; outputs Y, Y_h (and Y_c)."""
    gates = 4 if op == "LSTM" else 3
    nd = 2 if direction == "bidirectional" else 1
    w = (rng.standard_normal((nd, gates * HID, IN)) * 0.5).astype(np.float32)
    r = (rng.standard_normal((nd, gates * HID, HID)) * 0.5).astype(np.float32)
    b = (rng.standard_normal((nd, 2 * gates * HID)) * 0.2).astype(np.float32)
    s_shape = [nd, BATCH, HID]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [SEQ, BATCH, IN])]
    names = ["x", "W", "R", "B", "", "", ""]
    if seq_lens:
        inputs.append(helper.make_tensor_value_info("lens", TensorProto.INT32, [BATCH]))
        names[4] = "lens"
    if initial:
        inputs.append(helper.make_tensor_value_info("h0", TensorProto.FLOAT, s_shape))
        names[5] = "h0"
        if op == "LSTM":
            inputs.append(helper.make_tensor_value_info("c0", TensorProto.FLOAT, s_shape))
            names[6] = "c0"
    names = names[:7] if op == "LSTM" else names[:6]
    while names and not names[-1]:
        names.pop()
    outs = ["y", "y_h"] + (["y_c"] if op == "LSTM" else [])
    node = helper.make_node(op, names, outs, hidden_size=HID, direction=direction, name=op.lower())
    graph = helper.make_graph([node], op, inputs, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                                                    for o in outs],
                              [numpy_helper.from_array(v, k) for k, v in (("W", w), ("R", r), ("B", b))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    return model


def _feeds(model, rng: np.random.Generator) -> dict:
    feeds = {}
    for vi in model.graph.input:
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        if vi.name == "lens":
            feeds[vi.name] = np.array([SEQ, SEQ - 2], np.int32)
        else:
            feeds[vi.name] = rng.standard_normal(dims).astype(np.float32) * (1.0 if vi.name == "x" else 0.5)
    return feeds


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.reshape(-1).astype(np.float64), b.reshape(-1).astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _run(compiled, feeds: dict) -> list:
    with npurt.Session(compiled) as s:
        return s.run(dict(feeds))


CASES = [(op, d, init) for op in ("LSTM", "GRU") for d in ("forward", "reverse", "bidirectional")
         for init in (False, True)]


@pytest.mark.parametrize("op, direction, initial", CASES)
def test_fp16_matches_onnxruntime(op, direction, initial):
    rng = np.random.default_rng(280)
    model = _recurrent(op, direction, rng, initial)
    feeds = _feeds(model, rng)
    want = run_ort(model, feeds)
    got = _run(npurt.compile(model, soc="rk3588", progress=False), feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, atol=1e-2, rtol=0)       # |h|, |c| ~ 1: a few fp16 ulps per step


@pytest.mark.parametrize("op, direction", [("LSTM", "bidirectional"), ("GRU", "forward"), ("LSTM", "reverse")])
def test_int8_keeps_cosine_099(op, direction):
    rng = np.random.default_rng(281)
    model = _recurrent(op, direction, rng, initial=False)
    calib = [_feeds(model, rng)["x"] for _ in range(8)]
    feeds = _feeds(model, rng)
    want = run_ort(model, feeds)
    got = _run(npurt.compile(model, soc="rk3588", quantize=calib, progress=False), feeds)
    for g, w in zip(got, want):
        assert g.shape == w.shape and _cos(g, w) >= 0.99


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_sequence_lengths(op):
    """Shorter sequences: padded steps output zeros and keep the state (onnxruntime has no batch-first layout=1;
    the node backend tests cover that against the ONNX generator's outputs)."""
    rng = np.random.default_rng(282)
    model = _recurrent(op, "bidirectional", rng, initial=True, seq_lens=True)
    feeds = _feeds(model, rng)
    want = run_ort(model, feeds)
    for precision, tol in (("float32", 1e-5), ("fp16", 1e-2)):
        got = _run(npurt.compile(model, soc="rk3588", precision=precision, progress=False), feeds)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, atol=tol, rtol=0)


def test_crnn_head_with_initial_states_from_a_shape_subgraph():
    rng = np.random.default_rng(283)
    model = crnn_head(rng)
    x = rng.standard_normal((1, 6, 1, 9)).astype(np.float32)
    want = run_ort(model, {"x": x})[0]
    fp16 = npurt.compile(model, soc="rk3588", input_shapes={"x": [1, 6, 1, 9]}, progress=False)
    assert "ConstantOfShape" not in fp16.graph.op_counts()          # folded from the static shape
    got = _run(fp16, {"x": x})[0]
    np.testing.assert_allclose(got, want, atol=5e-3)
    assert (got.argmax(-1) == want.argmax(-1)).all()
    calib = [rng.standard_normal((1, 6, 1, 9)).astype(np.float32) for _ in range(8)]
    int8 = npurt.compile(model, soc="rk3588", input_shapes={"x": [1, 6, 1, 9]}, quantize=calib, progress=False)
    assert _cos(_run(int8, {"x": x})[0], want) >= 0.99


def test_an_unknown_activation_is_refused_at_compile_naming_the_node():
    rng = np.random.default_rng(284)
    model = _recurrent("GRU", "forward", rng, initial=False)
    model.graph.node[0].attribute.append(helper.make_attribute("activations", ["Sigmoid", "Softsign"]))
    with pytest.raises(NpuError) as e:
        npurt.compile(model, soc="rk3588", progress=False)
    assert e.value.code == npurt.ErrorCode.NOT_SUPPORTED
    assert "node 'gru' (GRU)" in e.value.message and "softsign" in e.value.message.lower()
    model.graph.node[0].attribute[-1].strings[:] = [b"Sigmoid"]          # one activation short
    with pytest.raises(NpuError) as e:
        npurt.compile(model, soc="rk3588", progress=False)
    assert e.value.code == npurt.ErrorCode.INVALID_MODEL and "node 'gru' (GRU)" in e.value.message
