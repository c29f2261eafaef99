"""Recurrent, detection and quantisation kernels against onnxruntime on single-node models."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

from npurt.exec.reference import run_reference



def _compare(model, feeds, run_ort, rtol=1e-4, atol=1e-5):
    want = run_ort(model, feeds)
    got = list(run_reference(model, feeds).values())
    for g, w in zip(got, want):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_recurrent_with_sequence_lens(single_node, run_ort, op, direction, rng):
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


def test_non_max_suppression(single_node, run_ort, rng):
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
def test_quantize_dequantize_roundtrip(single_node, run_ort, axis, rng):
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


# The integer ops are checked against exact int64 references written here, not against onnxruntime: its u8 x s8
# kernels on x86 without VNNI (pmaddubsw) saturate int16 pair sums, so its results depend on the machine.
def _conv2d_int64(x: np.ndarray, w: np.ndarray, pads: list[int], stride: int = 1) -> np.ndarray:
    """Exact 2-D convolution (group 1) of integer NCHW `x` by MCkk `w` in int64, tap by tap; pads are zeros."""
    x = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    m, _, kh, kw = w.shape
    oh, ow = x.shape[2] - kh + 1, x.shape[3] - kw + 1
    acc = np.zeros((x.shape[0], m, oh, ow), np.int64)
    for i in range(kh):
        for j in range(kw):
            acc += np.einsum("nchw,mc->nmhw", x[:, :, i:i + oh, j:j + ow], w[:, :, i, j].astype(np.int64))
    return acc[:, :, ::stride, ::stride]


def _requantize(acc: np.ndarray, scale: np.ndarray, zero_point: np.ndarray) -> np.ndarray:
    """round_half_even(acc * scale) + zero point, saturated to the zero point's type (ONNX QLinear* outputs)."""
    info = np.iinfo(zero_point.dtype)
    return np.clip(np.rint(acc * scale) + int(zero_point), info.min, info.max).astype(zero_point.dtype)


def _full_range(rng: np.random.Generator, dtype, shape) -> np.ndarray:
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


@pytest.mark.parametrize("per_channel", [True, False])
@pytest.mark.parametrize("stride", [1, 2])
def test_qlinear_conv_u8s8_is_exact(single_node, rng, per_channel, stride):
    """Full-range u8 activations by full-range s8 weights (the pairs that overflow int16), per-channel or
    per-tensor weight scales, an int32 bias."""
    x, w = _full_range(rng, np.uint8, (1, 4, 9, 9)), _full_range(rng, np.int8, (6, 4, 3, 3))
    ws = rng.uniform(0.001, 0.01, 6 if per_channel else 1).astype(np.float32)
    xs, xz, ys, yz = np.float32(0.02), np.uint8(128), np.float32(0.05), np.uint8(100)
    bias = rng.integers(-500, 500, 6).astype(np.int32)
    consts = {"xs": np.asarray(xs), "xz": np.asarray(xz), "w": w, "ws": ws if per_channel else ws.reshape(()),
              "wz": np.zeros(6 if per_channel else (), np.int8), "ys": np.asarray(ys), "yz": np.asarray(yz), "b": bias}
    model = single_node("QLinearConv", {"x": x}, consts, out_types=[TensorProto.UINT8], pads=[1, 1, 1, 1],
                        strides=[stride, stride])
    acc = _conv2d_int64(x.astype(np.int64) - int(xz), w, [1, 1, 1, 1], stride) + bias.reshape(1, -1, 1, 1)
    scale = np.float64(xs) * ws.astype(np.float64).reshape(1, -1, 1, 1) / np.float64(ys)
    np.testing.assert_array_equal(run_reference(model, {"x": x})["y0"], _requantize(acc, scale, yz))


@pytest.mark.parametrize("w_dtype, w_zero", [(np.uint8, 100), (np.int8, -3)])
def test_conv_integer_is_exact(single_node, rng, w_dtype, w_zero):
    x, w = _full_range(rng, np.uint8, (1, 3, 8, 8)), _full_range(rng, w_dtype, (5, 3, 3, 3))
    model = single_node("ConvInteger", {"x": x}, {"w": w, "xz": np.array(7, np.uint8), "wz": np.array(w_zero, w_dtype)},
                        out_types=[TensorProto.INT32], pads=[1, 0, 1, 0])
    want = _conv2d_int64(x.astype(np.int64) - 7, w.astype(np.int64) - w_zero, [1, 0, 1, 0])
    got = run_reference(model, {"x": x})["y0"]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("b_dtype, b_zero", [(np.int8, 0), (np.int8, 5), (np.uint8, 131)])
def test_matmul_integer_is_exact(single_node, rng, b_dtype, b_zero):
    a, b = _full_range(rng, np.uint8, (2, 7, 64)), _full_range(rng, b_dtype, (64, 5))
    model = single_node("MatMulInteger", {"a": a}, {"b": b, "az": np.array(3, np.uint8),
                                                    "bz": np.array(b_zero, b_dtype)}, out_types=[TensorProto.INT32])
    got = run_reference(model, {"a": a})["y0"]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, (a.astype(np.int64) - 3) @ (b.astype(np.int64) - b_zero))


def test_qlinear_matmul_u8s8_is_exact(single_node, rng):
    a, b = _full_range(rng, np.uint8, (7, 64)), _full_range(rng, np.int8, (64, 5))
    a_s, a_z, b_s, y_s, y_z = np.float32(0.02), np.uint8(128), np.float32(0.004), np.float32(0.05), np.uint8(120)
    consts = {"as": np.asarray(a_s), "az": np.asarray(a_z), "b": b, "bs": np.asarray(b_s), "bz": np.array(0, np.int8),
              "ys": np.asarray(y_s), "yz": np.asarray(y_z)}
    model = single_node("QLinearMatMul", {"a": a}, consts, out_types=[TensorProto.UINT8])
    acc = (a.astype(np.int64) - int(a_z)) @ b.astype(np.int64)
    want = _requantize(acc, np.float64(a_s) * np.float64(b_s) / np.float64(y_s), y_z)
    assert 0 < (want == 0).mean() + (want == 255).mean() < 0.5      # some outputs saturate, most do not
    np.testing.assert_array_equal(run_reference(model, {"a": a})["y0"], want)
