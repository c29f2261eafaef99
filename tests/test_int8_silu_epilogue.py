"""The int8 conv's fused SiLU epilogue: the compiled kernel stores swish(f) / s + zp itself (no float32 round trip
through numpy), byte for byte what `epilogue.swish_codes` computes in numpy, at every instruction set, threaded or
not, and within one code of the exact SiLU; a Conv + SiLU model stores the same bytes with the kernels on at each
level as with them off."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import npurt
import npurt._kernels as K
from helpers.models import assert_every_level_stores_numpy_bytes
from npurt.exec.inplace import conv_int8
from npurt.exec.inplace.epilogue import swish_codes


def _case(rng, c1=2, cc=16, hp=6, wp=9, kernel=(3, 3), blocks=3):
    k = kernel[0] * kernel[1] * c1 * cc
    x = rng.integers(-128, 128, (c1, hp, wp, cc), dtype=np.int8)
    w = rng.integers(-128, 128, (k, 16 * blocks), dtype=np.int8)
    return x, w, (hp - kernel[0] + 1, wp - kernel[1] + 1)


@pytest.mark.parametrize("alpha, inv_scale, zp", [(1.0, 25.0, -100.0), (1.7, 3.0, 5.0), (1.0, 900.0, -128.0)])
def test_compiled_swish_store_matches_numpy(level, alpha, inv_scale, zp):
    rng = np.random.default_rng(11)
    x, w, out_hw = _case(rng)
    n = w.shape[1]
    colsum = w.astype(np.int64).sum(axis=0).astype(np.int32)
    # results from about -120 to 120: both exp clamps (|alpha f| > 87), the minimum of SiLU, the saturations
    mult = rng.uniform(1e-4, 2e-3, n).astype(np.float32)
    bias = rng.uniform(-40, 40, n).astype(np.float32)
    params = tuple(np.float32(v) for v in (alpha, inv_scale, zp))
    out = np.empty((n // 16,) + out_hw + (16,), np.int8)
    run = K.int8_conv(x, w, colsum, -7, mult, bias, (3, 3), (1, 1), (1, 1), out_hw, out=out, swish=params,
                      wide=lambda k: np.empty(k, np.int16))
    assert run is not None
    run()
    acc = conv_int8.accumulate(conv_int8.columns(x, (3, 3), (1, 1), (1, 1), out_hw), w)
    f = conv_int8.requantize(acc, colsum, -7, mult, bias)
    assert f.min() < -87 / alpha and f.max() > 87 / alpha
    real = f.astype(np.float64) / (1 + np.exp(-alpha * f.astype(np.float64)))
    swish_codes(f, *params)
    want = f.astype(np.int8).reshape(out_hw + (n // 16, 16)).transpose(2, 0, 1, 3)
    np.testing.assert_array_equal(out, want)
    exact = np.rint(np.clip(real * inv_scale + zp, -128, 127))
    assert np.abs(f - exact.astype(np.float32)).max() <= 1          # only where the exact value is near a .5


def test_swish_codes_near_the_float64_silu():
    """The float32 Cephes exp: codes equal the float64 SiLU's on all but values within a hair of a rounding edge."""
    y = np.linspace(-100, 100, 200001, dtype=np.float32)
    got = y.copy()
    swish_codes(got, np.float32(1.0), np.float32(50.0), np.float32(0.0))
    yd = y.astype(np.float64)
    exact = np.clip(yd / (1 + np.exp(-yd)) * 50.0, -128, 127)
    diff = got - np.rint(exact)
    assert np.abs(diff).max() <= 1
    assert np.all(np.abs(exact[diff != 0] - np.floor(exact[diff != 0]) - 0.5) < 1e-4)


def test_swish_kernel_declines_without_an_int8_output():
    rng = np.random.default_rng(2)
    x, w, out_hw = _case(rng, blocks=1)
    ones, zeros = np.ones(16, np.float32), np.zeros(16, np.float32)
    y = np.empty((out_hw[0] * out_hw[1], 16), np.float32)
    assert K.int8_conv(x, w, w.astype(np.int32).sum(axis=0, dtype=np.int32), 0, ones, zeros, (3, 3), (1, 1), (1, 1),
                       out_hw, y=y, swish=(1.0, 1.0, 0.0), wide=lambda k: np.empty(k, np.int16)) is None


def _silu_model(c: int, m: int, size: int, seed: int):
    """x -> Conv 3x3 -> Sigmoid, Mul (SiLU, fused into the conv) -> 1x1 Conv -> y."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array((rng.standard_normal((m, c, 3, 3)) * 0.4).astype(np.float32), "w1"),
             numpy_helper.from_array((rng.standard_normal(m) * 0.2).astype(np.float32), "b1"),
             numpy_helper.from_array((rng.standard_normal((8, m, 1, 1)) * 0.3).astype(np.float32), "w2")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                              strides=[2, 2]),
             helper.make_node("Sigmoid", ["c1"], ["s1"]), helper.make_node("Mul", ["c1", "s1"], ["a1"]),
             helper.make_node("Conv", ["a1", "w2"], ["y"], kernel_shape=[1, 1])]
    g = helper.make_graph(nodes, "silu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, size, size])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("c, m", [(3, 16), (24, 40)])
def test_conv_silu_model_stores_the_same_bytes_at_every_level(c, m, monkeypatch):
    rng = np.random.default_rng(c)
    model = _silu_model(c, m, 13, c)
    cm = npurt.compile(model, soc="rk3588", progress=False,
                       quantize=[rng.standard_normal((1, c, 13, 13)).astype(np.float32) for _ in range(2)])
    assert cm.graph.nodes[0].op_type == "Conv" and cm.graph.nodes[0].activation == "Swish"
    x = rng.standard_normal((1, c, 13, 13)).astype(np.float32)
    assert_every_level_stores_numpy_bytes(cm, x, monkeypatch)
