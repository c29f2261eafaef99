"""The first layer's weights in int8: a dense Conv reading a model input stores its weights asymmetric per channel
(each channel's [min, max], widened to hold 0, onto all 256 int8 codes, with an int8 zero point per channel), as
rknn-toolkit2 quantises them (its simulator's first conv reproduced code for code: docs/quantization.md, section 5);
the other convs keep symmetric per-channel weights."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import npurt
from npurt.exec.executor import Executor, allocate
from npurt.model.weights import WeightEntry, quantize_weight_asymmetric
from npurt.runtime.user_io import pack_input


def _model(w1: np.ndarray, b1: np.ndarray, w2: np.ndarray) -> onnx.ModelProto:
    """x (1, 3, 16, 16) -> Conv 3x3 stride 2 (w1, b1) -> c1 -> Conv 1x1 (w2) -> y."""
    inits = [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"),
             numpy_helper.from_array(w2, "w2")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                              strides=[2, 2]),
             helper.make_node("Conv", ["c1", "w2"], ["y"], kernel_shape=[1, 1])]
    graph = helper.make_graph(nodes, "first", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def _weights(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lopsided first-layer weights (mostly positive: symmetric int8 would waste half its codes); channel 0 all
    positive, so its largest weight is code - zero point 255 (three int8 parts in the kernel)."""
    rng = np.random.default_rng(seed)
    w1 = rng.uniform(-0.3, 1.0, (8, 3, 3, 3)).astype(np.float32)
    w1[0] = np.abs(w1[0])
    return w1, rng.normal(0, 0.2, 8).astype(np.float32), rng.normal(0, 0.3, (4, 8, 1, 1)).astype(np.float32)


def _pixels(rng, n: int) -> list[np.ndarray]:
    """Inputs on the 1/255 grid (pixels / 255), as the first layer of an image model sees them."""
    return [(rng.integers(0, 256, (1, 3, 16, 16)) / 255.0).astype(np.float32) for _ in range(n)]


def _run(cm, x: np.ndarray, inplace: bool) -> Executor:
    w, a, i, o = allocate(cm)
    ex = Executor(cm, inplace=inplace)
    ex.bind(w, a, i, o)
    pack_input(cm.native_input_attrs[0], x, i[0])
    ex.run()
    return ex


def _conv(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The first conv in float64 (3x3, stride 2, pad 1)."""
    p = np.pad(x[0].astype(np.float64), ((0, 0), (1, 1), (1, 1)))
    cols = np.stack([p[:, i:i + 16:2, j:j + 16:2] for i in range(3) for j in range(3)], axis=1).reshape(27, -1)
    return (w.reshape(len(w), 27).astype(np.float64) @ cols + b[:, None]).reshape(1, len(w), 8, 8)


def test_asymmetric_weights_use_all_256_codes_per_channel():
    w1, _, _ = _weights(3)
    q, scales, zps = quantize_weight_asymmetric(w1, 0)
    assert q.dtype == np.int8 and zps.dtype == np.int32
    k = q.astype(np.int32) - zps[:, None, None, None]
    span = np.maximum(k.max(axis=(1, 2, 3)), 0) - np.minimum(k.min(axis=(1, 2, 3)), 0)
    assert np.all(span == 255), span                            # [min, max] with 0: all 256 codes
    assert k[0].max() == 255 and zps[0] == -128                 # an all-positive channel: 0 is code -128
    lo, hi = np.minimum(w1.min(axis=(1, 2, 3)), 0), np.maximum(w1.max(axis=(1, 2, 3)), 0)
    np.testing.assert_allclose(scales, (hi - lo) / 255, rtol=1e-6)
    err = np.abs(k * scales[:, None, None, None] - w1).max(axis=(1, 2, 3))
    assert np.all(err <= scales * 0.5001)                       # round to nearest
    assert np.all(scales < np.abs(w1).max(axis=(1, 2, 3)) / 127)  # finer than symmetric weights here


def test_first_conv_stores_asymmetric_weights_the_second_symmetric():
    rng = np.random.default_rng(5)
    w1, b1, w2 = _weights(5)
    cm = npurt.compile(_model(w1, b1, w2), soc="rk3588", quantize=_pixels(rng, 8), progress=False)
    first, second = cm.weights["w1"], cm.weights["w2"]
    assert first.zero_points == "w1#zp" and second.zero_points is None
    assert cm.weights["w1#zp"].dtype.value == "int8" and cm.weights["w1#zp"].shape == (8,)
    assert WeightEntry.from_json(first.to_json()) == first
    # the layer's weight bytes at their real types: one int8 byte per weight, an int8 zero point and a float32
    # scale per channel
    assert cm.plan.weight_sizes["w1"] == w1.size
    assert cm.plan.weight_sizes["w1#zp"] == 8 and cm.plan.weight_sizes["w1#scale"] == 8 * 4


def test_first_conv_codes_are_asymmetric_weights_then_one_rounding():
    """The in-place int8 conv (codes beyond int8 split over repeated input lanes) and the generic path store the
    first conv's output as float conv with the asymmetric weights, rounded once to the output's grid."""
    rng = np.random.default_rng(11)
    w1, b1, w2 = _weights(11)
    cm = npurt.compile(_model(w1, b1, w2), soc="rk3588", quantize=_pixels(rng, 8), progress=False)
    q, scales, zps = quantize_weight_asymmetric(w1, 0)
    wq = ((q.astype(np.int32) - zps[:, None, None, None]) * scales[:, None, None, None]).astype(np.float64)
    st = cm.storage["c1"]
    sym_identical = []
    for x in _pixels(rng, 3):
        want = np.clip(np.rint(_conv(x, wq, b1) / st.scale) + st.zp, -128, 127)
        sym = np.clip(np.rint(_conv(x, np.round(w1 / (np.abs(w1).max(axis=(1, 2, 3), keepdims=True) / 127))
                                     * (np.abs(w1).max(axis=(1, 2, 3), keepdims=True) / 127), b1) / st.scale)
                      + st.zp, -128, 127)
        for inplace in (True, False):
            ex = _run(cm, x, inplace)
            assert (not ex._steps[0][2]) == inplace            # the in-place step took the first conv
            got = np.rint(ex.read_tensor("c1") / st.scale) + st.zp
            diff = np.abs(got - want)
            assert diff.max() <= 1 and (diff == 0).mean() >= 0.99, (inplace, (diff == 0).mean())
        sym_identical.append(float((sym == want).mean()))
    assert min(sym_identical) < 0.9     # the symmetric grid would give other codes: the test tells them apart


def test_first_conv_stores_the_same_bytes_at_every_level(level):
    """The split weights (two or three int8 parts over repeated input lanes) give the compiled kernel at each
    instruction set the bytes of the numpy path."""
    import npurt._kernels as K
    rng = np.random.default_rng(13)
    w1, b1, w2 = _weights(13)
    cm = npurt.compile(_model(w1, b1, w2), soc="rk3588", quantize=_pixels(rng, 4), progress=False)
    x = _pixels(rng, 1)[0]
    before = K.set_enabled(False)
    try:
        want = _run(cm, x, True).tensor_view("c1").copy()
    finally:
        K.set_enabled(before)
    np.testing.assert_array_equal(_run(cm, x, True).tensor_view("c1"), want)


def test_saved_model_keeps_the_zero_points():
    """The .npurt file carries the zero-point entry: the model read back stores the same first-layer codes."""
    from npurt.model.compiled import read_compiled
    rng = np.random.default_rng(17)
    w1, b1, w2 = _weights(17)
    cm = npurt.compile(_model(w1, b1, w2), soc="rk3588", quantize=_pixels(rng, 4), progress=False)
    back = read_compiled(cm.to_bytes())
    assert back.weights["w1"].zero_points == "w1#zp"
    x = _pixels(rng, 1)[0]
    for inplace in (True, False):
        np.testing.assert_array_equal(_run(back, x, inplace).read_tensor("c1"), _run(cm, x, inplace).read_tensor("c1"))


def test_an_htp_soc_keeps_the_first_layer_symmetric():
    # the HTP's int8 per-channel weights are symmetric: compiling for an HTP SoC stores no zero points
    from npurt.model import zoo
    rng = np.random.default_rng(7)
    data = [rng.standard_normal((1, 3, 32, 32)).astype(np.float32) for _ in range(2)]
    rknn = npurt.compile(zoo.small_convnet(), soc="rk3588", precision="int8", quantize=data)
    htp = npurt.compile(zoo.small_convnet(), soc="sm8650", precision="int8", quantize=data)
    assert any(e.zero_points for e in rknn.weights.values())
    assert not any(e.zero_points for e in htp.weights.values())
