"""Conv / ConvTranspose kernels against onnxruntime on single-node models."""
from __future__ import annotations

import numpy as np
import pytest

from npurt.exec.kernels import get_kernel
from npurt.exec.reference import run_reference



def _check(single_node, run_ort, op, x, w, b=None, rtol=1e-4, **attrs):
    model = single_node(op, {"x": x}, {"w": w, "b": b}, **attrs)
    want = run_ort(model, {"x": x})[0]
    got = run_reference(model, {"x": x})["y0"]
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-4 * max(1.0, float(np.abs(want).max())))


CONV_CASES = {
    "3x3_pad1": dict(c=8, m=16, k=3, pads=[1, 1, 1, 1]),
    "3x3_stride2": dict(c=8, m=16, k=3, pads=[1, 1, 1, 1], strides=[2, 2]),
    "5x5_asym_pads": dict(c=4, m=6, k=5, pads=[0, 2, 1, 3]),
    "1x1": dict(c=16, m=8, k=1),
    "1x1_stride2": dict(c=16, m=8, k=1, strides=[2, 2]),
    "dilation2": dict(c=4, m=8, k=3, dilations=[2, 2], pads=[2, 2, 2, 2]),
    "groups4": dict(c=16, m=8, k=3, group=4, pads=[1, 1, 1, 1]),
    "depthwise": dict(c=16, m=16, k=3, group=16, pads=[1, 1, 1, 1]),
    "depthwise_s2": dict(c=16, m=16, k=3, group=16, pads=[1, 1, 1, 1], strides=[2, 2]),
    "depthwise_mult2": dict(c=8, m=16, k=3, group=8, pads=[1, 1, 1, 1]),
    "depthwise_dil2": dict(c=8, m=8, k=3, group=8, dilations=[2, 2], pads=[2, 2, 2, 2]),
    # > 4096 output pixels: the tap-loop path in channel blocks instead of im2col
    "depthwise_large": dict(c=24, m=24, k=3, group=24, pads=[1, 1, 1, 1], hw=(70, 66)),
    "depthwise_large_mult2": dict(c=4, m=8, k=3, group=4, pads=[1, 1, 1, 1], hw=(70, 66)),
    "same_upper_s2": dict(c=4, m=4, k=3, auto_pad="SAME_UPPER", strides=[2, 2]),
    "same_lower_s2": dict(c=4, m=4, k=4, auto_pad="SAME_LOWER", strides=[2, 2]),
    "valid": dict(c=4, m=4, k=3, auto_pad="VALID"),
    "rect_kernel": dict(c=4, m=4, k=(1, 7), pads=[0, 3, 0, 3]),
    # pads wider than the kernel: some taps see only padding for whole rows / columns
    "pads_wider_than_kernel": dict(c=2, m=3, k=2, pads=[3, 4, 5, 3], strides=[3, 2]),
    "depthwise_pads_wider_than_kernel": dict(c=6, m=6, k=2, group=6, pads=[3, 1, 0, 4], strides=[2, 3]),
    "dilated_strided_pads": dict(c=3, m=4, k=3, pads=[2, 0, 1, 3], strides=[2, 3], dilations=[3, 2]),
}


@pytest.mark.parametrize("name", CONV_CASES)
@pytest.mark.parametrize("bias", [False, True])
def test_conv2d(single_node, run_ort, name, bias, rng):
    p = dict(CONV_CASES[name])
    c, m, k = p.pop("c"), p.pop("m"), p.pop("k")
    kh, kw = (k, k) if isinstance(k, int) else k
    x = rng.standard_normal((2, c) + p.pop("hw", (13, 11)), dtype=np.float32)
    w = rng.standard_normal((m, c // p.get("group", 1), kh, kw), dtype=np.float32)
    b = rng.standard_normal(m, dtype=np.float32) if bias else None
    _check(single_node, run_ort, "Conv", x, w, b, **p)


@pytest.mark.parametrize("nd", [1, 3])
def test_conv_1d_3d(single_node, run_ort, nd, rng):
    x = rng.standard_normal((1, 4) + (7,) * nd, dtype=np.float32)
    w = rng.standard_normal((6, 4) + (3,) * nd, dtype=np.float32)
    _check(single_node, run_ort, "Conv", x, w, pads=[1] * (2 * nd), strides=[2] * nd)


CONVT_CASES = {
    "basic": dict(),
    "stride2_pads": dict(strides=[2, 2], pads=[1, 1, 1, 1]),
    "output_padding": dict(strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
    "output_shape": dict(strides=[2, 2], output_shape=[12, 14]),
    "dilation": dict(dilations=[2, 2]),
    "groups": dict(group=2),
    "same_upper": dict(strides=[2, 2], auto_pad="SAME_UPPER"),
}


@pytest.mark.parametrize("name", CONVT_CASES)
def test_conv_transpose(single_node, run_ort, name, rng):
    p = CONVT_CASES[name]
    g = p.get("group", 1)
    x = rng.standard_normal((1, 4, 6, 7), dtype=np.float32)
    w = rng.standard_normal((4, 6 // g, 3, 3), dtype=np.float32)
    b = rng.standard_normal(6, dtype=np.float32)
    _check(single_node, run_ort, "ConvTranspose", x, w, b, **p)


ACTIVATIONS = {
    "Relu": (None, lambda y: np.maximum(y, 0)),
    "Clip": ((0.0, 6.0), lambda y: np.clip(y, 0, 6)),
    "LeakyRelu": (0.1, lambda y: np.where(y < 0, 0.1 * y, y)),
    "Sigmoid": (None, lambda y: 1 / (1 + np.exp(-y))),
    "HardSigmoid": ((0.2, 0.5), lambda y: np.clip(0.2 * y + 0.5, 0, 1)),
    "HardSwish": (None, lambda y: y * np.clip(y / 6 + 0.5, 0, 1)),
}


@pytest.mark.parametrize("act", ACTIVATIONS)
@pytest.mark.parametrize("op", ["Conv", "ConvTranspose", "Gemm", "MatMul", "Add"])
def test_fused_activation(op, act, rng):
    """The npurt fusion hook: activation applied to the op's result, identical to unfused."""
    params, ref = ACTIVATIONS[act]
    if op in ("Conv", "ConvTranspose"):
        inputs = [rng.standard_normal((1, 4, 8, 8), dtype=np.float32), rng.standard_normal((4, 4, 3, 3), dtype=np.float32), None]
    elif op == "Add":
        inputs = [rng.standard_normal((3, 5), dtype=np.float32), rng.standard_normal((5,), dtype=np.float32)]
    else:
        inputs = [rng.standard_normal((3, 5), dtype=np.float32), rng.standard_normal((5, 4), dtype=np.float32)]
    fn = get_kernel(op)
    plain = fn(inputs, {"_opset": 17})[0]
    fused = fn(inputs, {"_opset": 17, "activation": act, "activation_params": params})[0]
    np.testing.assert_allclose(fused, ref(plain.astype(np.float64)), rtol=1e-5, atol=1e-6)
