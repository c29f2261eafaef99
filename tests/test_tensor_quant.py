"""Quantisation: rounding ties, saturation, per-channel, DFP, float16, normalise-quantise vs a float reference."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npurt.errors import ErrorCode, NpuError
from npurt.tensor import (DType, choose_affine_params, choose_dfp_fl, dequantize, dequantize_dfp,
                          normalize_quantize, quantize, quantize_dfp, quantize_per_channel, to_float16)


def test_round_half_to_even_at_ties():
    x = np.array([0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 0.49999997, 0.50000006], np.float32)
    assert quantize(x, 1.0, 0).tolist() == [0, 2, 2, 4, 0, -2, -2, 0, 1]
    # the tie is decided on x/scale, before the zero point is added (as ONNX QuantizeLinear)
    assert quantize(x, 1.0, 3).tolist() == [3, 5, 5, 7, 3, 1, 1, 3, 4]
    assert quantize(np.array([0.25, 0.75]), 0.5, 0, "uint8").tolist() == [0, 2]


@pytest.mark.parametrize("dtype,lo,hi", [("int8", -128, 127), ("uint8", 0, 255), ("int16", -32768, 32767)])
def test_saturation(dtype, lo, hi):
    x = np.array([-1e9, -1e3, 0.0, 1e3, 1e9, np.inf, -np.inf, np.nan], np.float32)
    q = quantize(x, 0.01, 0 if dtype != "uint8" else 10, dtype)
    assert q.dtype == DType(dtype).numpy_dtype
    zp = 0 if dtype != "uint8" else 10
    assert q.tolist() == [lo, lo, zp, hi, hi, hi, lo, zp]


def test_quantize_matches_onnx_formula_and_round_trips():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(10_000).astype(np.float32) * 3
    scale, zp = choose_affine_params(x.min(), x.max(), "int8")
    q = quantize(x, scale, zp)
    ref = np.clip(np.rint(x / np.float32(scale)) + zp, -128, 127).astype(np.int8)
    np.testing.assert_array_equal(q, ref)
    back = dequantize(q, scale, zp)
    assert back.dtype == np.float32
    assert np.max(np.abs(back - x)) <= scale / 2 + 1e-6
    out = np.empty_like(q)
    assert quantize(x, scale, zp, out=out) is out
    fout = np.empty(x.shape, np.float16)
    assert dequantize(q, scale, zp, out=fout, dtype="float16") is fout


def test_per_axis_affine_broadcast():
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    q = quantize(x, np.array([[1.0], [0.5]]), np.array([[0], [1]]))
    assert q.tolist() == [[1, 2], [7, 9]]
    with pytest.raises(NpuError):
        quantize(x, np.ones((3, 1)), 0)


@settings(max_examples=50, deadline=None)
@given(st.floats(-1e4, 1e4), st.floats(0, 1e4), st.sampled_from(["int8", "uint8", "int16"]))
def test_choose_affine_params_includes_zero_exactly(lo, span, dtype):
    hi = lo + span
    scale, zp = choose_affine_params(lo, hi, dtype)
    qmin, qmax = DType(dtype).range()
    assert scale > 0 and qmin <= zp <= qmax
    assert dequantize(quantize(np.zeros(1, np.float32), scale, zp, dtype), scale, zp)[0] == 0.0
    if span > 1e-3:
        x = np.array([lo, hi, 0.0], np.float64)
        assert np.max(np.abs(dequantize(quantize(x, scale, zp, dtype), scale, zp, dtype="float64") - x)) \
            <= scale * 0.5 + 1e-9 * max(abs(lo), abs(hi))


def test_choose_affine_params_bad_ranges():
    for lo, hi in ((1.0, 0.0), (np.nan, 1.0), (0.0, np.inf)):
        with pytest.raises(NpuError) as e:
            choose_affine_params(lo, hi)
        assert e.value.code == ErrorCode.INVALID_ARGUMENT
    assert choose_affine_params(0.0, 0.0) == (1.0, 0)
    assert choose_affine_params(2.0, 4.0, "uint8")[1] == 0    # widened to [0, 4]


def test_per_channel_symmetric():
    rng = np.random.default_rng(3)
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    w[5] = 0.0
    q, scales = quantize_per_channel(w, axis=0)
    assert q.dtype == np.int8 and scales.shape == (8,) and scales.dtype == np.float32
    assert scales[5] == 1.0 and not q[5].any()
    for c in range(8):
        if c != 5:
            assert np.abs(q[c]).max() == 127
            np.testing.assert_allclose(q[c] * scales[c], w[c], atol=scales[c] / 2 + 1e-7)
    assert q.min() >= -127
    q1, s1 = quantize_per_channel(w, axis=-1, dtype="int16")
    assert q1.dtype == np.int16 and s1.shape == (3,)
    for bad in (dict(axis=4), dict(dtype="uint8")):
        with pytest.raises(NpuError):
            quantize_per_channel(w, **bad)


def test_dfp():
    x = np.array([0.3, -5.0, 7.96875, 100.0, 0.03125, 0.09375], np.float32)
    q = quantize_dfp(x, 4)
    assert q.tolist() == [5, -80, 127, 127, 0, 2]            # 0.5 -> 0, 1.5 -> 2: half to even
    np.testing.assert_array_equal(dequantize_dfp(q, 4), q.astype(np.float32) / 16)
    assert quantize_dfp(np.array([256.0]), -2).tolist() == [64]
    assert choose_dfp_fl(3.0) == 5 and choose_dfp_fl(127.0) == 0 and choose_dfp_fl(0.9, "int16") == 15
    assert quantize_dfp(np.array([3.0]), choose_dfp_fl(3.0)).tolist() == [96]
    with pytest.raises(NpuError):
        quantize_dfp(x, 1.5)
    with pytest.raises(NpuError):
        quantize_dfp(x, 2, "uint8")


def test_float16():
    x = np.array([1.0, 1e5, -1e5, 0.1, 2049.0], np.float32)
    h = to_float16(x)
    assert h.dtype == np.float16
    assert h[0] == 1 and np.isposinf(h[1]) and np.isneginf(h[2]) and h[4] == 2048   # tie to even


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["int8", "uint8", "int16"]), st.sampled_from([-1, 1]))
def test_normalize_quantize_against_float_reference(seed, dtype, axis):
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, size=(2, 5, 7, 3), dtype=np.uint8)
    if axis == 1:
        img = np.ascontiguousarray(img.transpose(0, 3, 1, 2))
    mean = rng.uniform(0, 255, 3)
    std = rng.uniform(1, 80, 3)
    scale = float(rng.uniform(0.005, 0.1))
    qmin, qmax = DType(dtype).range()
    zp = int(rng.integers(max(qmin, -20), min(qmax, 20) + 1))
    shape = [1] * 4
    shape[axis] = 3
    ref_t = ((img.astype(np.float64) - mean.reshape(shape)) / std.reshape(shape)) / scale
    ref = np.clip(np.rint(ref_t) + zp, qmin, qmax)
    q = normalize_quantize(img, mean, std, scale, zp, dtype, channel_axis=axis)
    assert q.dtype == DType(dtype).numpy_dtype
    diff = np.abs(q.astype(np.int64) - ref)
    near_tie = np.abs(np.abs(ref_t - np.floor(ref_t)) - 0.5) < 1e-3
    assert np.all(diff[~near_tie] == 0) and np.all(diff <= 1)


def test_normalize_quantize_saturates_and_out():
    img = np.array([[[0, 255]]], np.uint8)
    out = np.empty((1, 1, 2), np.int8)
    assert normalize_quantize(img, 0.0, 1.0, 0.5, 0, out=out) is out
    assert out.tolist() == [[[0, 127]]]
    assert normalize_quantize(img, [0, 255], [1, 1], 0.5, 0).tolist() == [[[0, 0]]]
    for kw in (dict(mean=[1, 2, 3]), dict(std=[0, 1])):
        args = dict(mean=0.0, std=1.0) | kw
        with pytest.raises(NpuError):
            normalize_quantize(img, args["mean"], args["std"], 0.5, 0)
    with pytest.raises(NpuError):
        normalize_quantize(img.astype(np.float32), 0, 1, 0.5, 0)
    with pytest.raises(NpuError):
        normalize_quantize(img, 0, 1, 0.5, 0, out=np.empty((1, 1, 2), np.uint8))


def test_bad_quant_arguments():
    x = np.ones(4, np.float32)
    for kw in (dict(scale=0.0), dict(scale=-1.0), dict(scale=np.nan), dict(zero_point=0.5),
               dict(zero_point=300), dict(dtype="float32"), dict(dtype="nope")):
        args = dict(scale=1.0, zero_point=0, dtype="int8") | kw
        with pytest.raises(NpuError) as e:
            quantize(x, **args)
        assert e.value.code == ErrorCode.INVALID_ARGUMENT
    with pytest.raises(NpuError):
        quantize(x, 1.0, 0, out=np.empty(4, np.uint8))
    with pytest.raises(NpuError):
        dequantize(x, 1.0, 0)
    with pytest.raises(NpuError):
        dequantize(np.ones(4, np.int8), np.ones(3), 0)
    with pytest.raises(NpuError):
        dequantize(np.ones(4, np.int8), 1.0, 0, out=np.empty(4, np.float64))
