"""The float16 convs' fused SiLU, HardSwish and HardSigmoid: the compiled dense and depthwise convs apply them in their
store — SiLU y / (1 + e^(-alpha y)) in the basic float32 operations of `epilogue.silu` (`npurt_silu.h`), the hard ones
in apply_activation's — so they store the numpy path's bytes at every instruction set, threaded or not; the SiLU's
float32 values stay within a few units in the last place of the exact SiLU."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import npurt
import npurt._kernels as K
from helpers.models import assert_every_level_stores_numpy_bytes
from npurt.exec.inplace.epilogue import silu


def test_silu_is_within_a_few_ulp_of_the_float64_silu():
    y = np.concatenate([np.linspace(-120, 120, 400_001, dtype=np.float32), np.float32([0.0, -0.0, np.inf])])
    got = y.copy()
    silu(got, np.float32(1.0))
    exact = (y.astype(np.float64) / (1 + np.exp(-y.astype(np.float64)))).astype(np.float32)
    finite = np.isfinite(exact) & (np.abs(exact) > 1e-30)
    ulp = np.spacing(np.abs(exact[finite]))
    assert np.abs(got[finite] - exact[finite]).max() <= 4 * ulp.max()
    assert np.all(np.abs(got[finite] - exact[finite]) <= 4 * ulp)
    assert got[-1] == np.inf and got[-3] == 0.0


@pytest.mark.parametrize("alpha", [1.0, 1.702])
def test_compiled_fp16_conv_silu_matches_numpy(level, alpha):
    rng = np.random.default_rng(4)
    c1, cc, hp, wp, n = 2, 8, 7, 9, 32
    x = (rng.standard_normal((c1, hp, wp, cc)) * 4).astype(np.float16).astype(np.float32)
    w = (rng.standard_normal((9 * c1 * cc, n)) * 2).astype(np.float16).astype(np.float32)
    bias = rng.uniform(-30, 30, n).astype(np.float32)
    out = np.empty((n // 8, hp - 2, wp - 2, 8), np.float16)
    run = K.float_conv(x, w, bias, (3, 3), (1, 1), (1, 1), (hp - 2, wp - 2), out=out,
                       activation=(4, alpha, 0.0))
    assert run is not None
    run()
    y = np.empty(((hp - 2) * (wp - 2), n), np.float32)
    K.float_conv(x, w, bias, (3, 3), (1, 1), (1, 1), (hp - 2, wp - 2), y=y)()
    assert y.min() < -87 / alpha and y.max() > 87 / alpha          # both clamps of e^z reached
    silu(y, np.float32(alpha))
    want = y.astype(np.float16).reshape(hp - 2, wp - 2, n // 8, 8).transpose(2, 0, 1, 3)
    np.testing.assert_array_equal(out.view(np.uint16), want.view(np.uint16))


def _activation(x: str, y: str, act: str) -> list:
    """Nodes applying `act` to x into y: a SiLU as a Sigmoid and a Mul, else the op itself."""
    if act == "Swish":
        return [helper.make_node("Sigmoid", [x], [y + "_s"]), helper.make_node("Mul", [x, y + "_s"], [y])]
    return [helper.make_node(act, [x], [y])]


def _silu_model(c: int, m: int, size: int, seed: int, act: str = "Swish"):
    """x -> Conv 3x3 -> act -> depthwise Conv 3x3 -> act -> 1x1 Conv -> y."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array((rng.standard_normal((m, c, 3, 3)) * 0.4).astype(np.float32), "w1"),
             numpy_helper.from_array((rng.standard_normal(m) * 0.2).astype(np.float32), "b1"),
             numpy_helper.from_array((rng.standard_normal((m, 1, 3, 3)) * 0.5).astype(np.float32), "w2"),
             numpy_helper.from_array((rng.standard_normal((8, m, 1, 1)) * 0.3).astype(np.float32), "w3")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                              strides=[2, 2]), *_activation("c1", "a1", act),
             helper.make_node("Conv", ["a1", "w2"], ["c2"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=m),
             *_activation("c2", "a2", act), helper.make_node("Conv", ["a2", "w3"], ["y"], kernel_shape=[1, 1])]
    g = helper.make_graph(nodes, "silu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, size, size])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("act", ["Swish", "HardSwish", "HardSigmoid"])
@pytest.mark.parametrize("c, m", [(3, 16), (24, 40)])
def test_fp16_conv_activation_model_stores_the_same_bytes_at_every_level(c, m, act, monkeypatch):
    rng = np.random.default_rng(c)
    cm = npurt.compile(_silu_model(c, m, 13, c, act), soc="rk3588", precision="fp16", progress=False)
    assert [n.activation for n in cm.graph.nodes if n.op_type == "Conv"][:2] == [act, act]
    x = (rng.standard_normal((1, c, 13, 13)) * 3).astype(np.float32)
    assert_every_level_stores_numpy_bytes(cm, x, monkeypatch)
