"""Recurrent, detection and quantisation kernels against onnxruntime on single-node models."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

from npurt.exec.reference import run_reference

rng = np.random.default_rng(2)


def _compare(model, feeds, run_ort, rtol=1e-4, atol=1e-5):
    want = run_ort(model, feeds)
    got = list(run_reference(model, feeds).values())
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_recurrent_with_sequence_lens(single_node, run_ort, op, direction):
    seq, batch, inp, hid = 5, 3, 4, 6
    nd = 2 if direction == "bidirectional" else 1
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    x = rng.standard_normal((seq, batch, inp), dtype=np.float32)
    consts = {
        "W": rng.standard_normal((nd, gates * hid, inp), dtype=np.float32) * 0.5,
        "R": rng.standard_normal((nd, gates * hid, hid), dtype=np.float32) * 0.5,
        "B": rng.standard_normal((nd, 2 * gates * hid), dtype=np.float32) * 0.1,
        "seq_lens": np.array([5, 2, 4], np.int32),
        "h0": rng.standard_normal((nd, batch, hid), dtype=np.float32),
    }
    extra = {"linear_before_reset": 1} if op == "GRU" else {}
    n_out = 3 if op == "LSTM" else 2
    model = single_node(op, {"x": x}, consts, n_outputs=n_out, hidden_size=hid, direction=direction, **extra)
    _compare(model, {"x": x}, run_ort)


def test_non_max_suppression(single_node, run_ort):
    xy = rng.uniform(0, 50, (2, 40, 2)).astype(np.float32)
    wh = rng.uniform(5, 30, (2, 40, 2)).astype(np.float32)
    boxes = np.concatenate([xy, wh], axis=2)
    scores = rng.uniform(0, 1, (2, 3, 40)).astype(np.float32)
    consts = {"max": np.array([7], np.int64), "iou": np.array([0.4], np.float32), "score": np.array([0.2], np.float32)}
    model = single_node("NonMaxSuppression", {"boxes": boxes, "scores": scores}, consts,
                        out_types=[TensorProto.INT64], center_point_box=1)
    want = run_ort(model, {"boxes": boxes, "scores": scores})[0]
    got = run_reference(model, {"boxes": boxes, "scores": scores})["y0"]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("axis", [None, 1])
def test_quantize_dequantize_roundtrip(single_node, run_ort, axis):
    x = rng.standard_normal((2, 4, 3, 3), dtype=np.float32) * 3
    scale = np.float32(0.05) if axis is None else np.array([0.02, 0.05, 0.1, 0.03], np.float32)
    zp = np.int8(-3) if axis is None else np.array([0, -3, 5, 1], np.int8)
    kw = {} if axis is None else {"axis": axis}
    q = single_node("QuantizeLinear", {"x": x}, {"s": np.asarray(scale), "z": np.asarray(zp)},
                    out_types=[TensorProto.INT8], **kw)
    want_q = run_ort(q, {"x": x})[0]
    got_q = run_reference(q, {"x": x})["y0"]
    np.testing.assert_array_equal(got_q, want_q)
    dq = single_node("DequantizeLinear", {"q": want_q}, {"s": np.asarray(scale), "z": np.asarray(zp)}, **kw)
    np.testing.assert_allclose(run_reference(dq, {"q": want_q})["y0"], run_ort(dq, {"q": want_q})[0], rtol=1e-6)


def test_qlinear_conv_per_channel(single_node, run_ort):
    x = rng.integers(0, 255, (1, 4, 9, 9)).astype(np.uint8)
    w = rng.integers(-127, 127, (6, 4, 3, 3)).astype(np.int8)
    consts = {"xs": np.array(0.02, np.float32), "xz": np.array(128, np.uint8), "w": w,
              "ws": rng.uniform(0.001, 0.01, 6).astype(np.float32), "wz": np.zeros(6, np.int8),
              "ys": np.array(0.05, np.float32), "yz": np.array(100, np.uint8),
              "b": rng.integers(-500, 500, 6).astype(np.int32)}
    model = single_node("QLinearConv", {"x": x}, consts, out_types=[TensorProto.UINT8], pads=[1, 1, 1, 1])
    got = run_reference(model, {"x": x})["y0"]
    want = run_ort(model, {"x": x})[0]
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1  # ORT requantises in float32


def test_conv_integer_exact(single_node, run_ort):
    x = rng.integers(0, 255, (1, 3, 8, 8)).astype(np.uint8)
    w = rng.integers(0, 255, (5, 3, 3, 3)).astype(np.uint8)
    model = single_node("ConvInteger", {"x": x}, {"w": w, "xz": np.array(7, np.uint8), "wz": np.array(100, np.uint8)},
                        out_types=[TensorProto.INT32])
    np.testing.assert_array_equal(run_reference(model, {"x": x})["y0"], run_ort(model, {"x": x})[0])
