"""The compiled dense Conv kernels on every instruction set this CPU has: the int8 one sums in integers exactly
(against int64 numpy, on adversarial codes: -128 x -128 everywhere, long K, zero points at both ends so the VNNI
path's unsigned input reaches 255), the float16 one matches its numpy reference byte for byte; and whole Conv
models over random shapes (stride, dilation, groups, pads, odd widths, padded lanes) store the same bytes with the
kernels on at each level as with them off."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

import npurt
import npurt._kernels as K
from helpers.models import stored_bytes
from npurt.exec.executor import Executor, allocate
from npurt.exec.inplace import conv_fp16, conv_int8


def _int8_case(rng, c1, cc, hp, wp, kernel, strides, dilations, n, fill):
    kh, kw = kernel
    ho = (hp - (kh - 1) * dilations[0] - 1) // strides[0] + 1
    wo = (wp - (kw - 1) * dilations[1] - 1) // strides[1] + 1
    k = kh * kw * c1 * cc
    if fill == "min":                      # every product is (-128) * (-128)
        x = np.full((c1, hp, wp, cc), -128, np.int8)
        w = np.full((k, n), -128, np.int8)
    else:
        x = rng.integers(-128, 128, (c1, hp, wp, cc), dtype=np.int8)
        w = rng.integers(-128, 128, (k, n), dtype=np.int8)
    return x, w, (ho, wo)


def _int64_conv(x, w, kernel, strides, dilations, out_hw, zp):
    cols = conv_int8.columns(x, kernel, strides, dilations, out_hw).astype(np.int64)
    return cols @ w.astype(np.int64) - zp * w.astype(np.int64).sum(axis=0)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(c1=st.integers(1, 3), cc=st.sampled_from([4, 8, 16]), size=st.tuples(st.integers(1, 9), st.integers(1, 11)),
       kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)), strides=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       dilations=st.tuples(st.integers(1, 2), st.integers(1, 2)), blocks=st.integers(1, 5),
       zp=st.sampled_from([-128, -1, 0, 127]), fill=st.sampled_from(["random", "min"]), seed=st.integers(0, 2**16))
def test_int8_conv_sums_exactly(level, c1, cc, size, kernel, strides, dilations, blocks, zp, fill, seed):
    rng = np.random.default_rng(seed)
    hp = size[0] + (kernel[0] - 1) * dilations[0]
    wp = size[1] + (kernel[1] - 1) * dilations[1]
    n = 16 * blocks
    x, w, out_hw = _int8_case(rng, c1, cc, hp, wp, kernel, strides, dilations, n, fill)
    want = _int64_conv(x, w, kernel, strides, dilations, out_hw, zp)
    colsum = w.astype(np.int64).sum(axis=0).astype(np.int32)
    # mult 1, bias 0 and float32 output: the int32 sum itself (exact in float32 below 2**24)
    ones, zeros = np.ones(n, np.float32), np.zeros(n, np.float32)
    y = np.empty((out_hw[0] * out_hw[1], n), np.float32)
    run = K.int8_conv(x, w, colsum, zp, ones, zeros, kernel, strides, dilations, out_hw, y=y,
                      wide=lambda k: np.empty(k, np.int16))
    assert run is not None
    run()
    np.testing.assert_array_equal(y, want.astype(np.float32))
    np.testing.assert_array_equal(conv_int8.accumulate(conv_int8.columns(x, kernel, strides, dilations, out_hw), w)
                                  - zp * colsum.astype(np.int64), want)
    # the fused requantisation and int8 store into NC1HWC2 blocks, against numpy's float32 sequence
    mult = rng.uniform(1e-5, 1e-3, n).astype(np.float32)
    bias = rng.uniform(-20, 20, n).astype(np.float32)
    lo, hi = (-128.0, 127.0) if seed % 2 else (-3.5, 90.25)
    out = np.empty((blocks,) + out_hw + (16,), np.int8)
    K.int8_conv(x, w, colsum, zp, mult, bias, kernel, strides, dilations, out_hw, out=out, bounds=(lo, hi),
                wide=lambda k: np.empty(k, np.int16))()
    f = conv_int8.requantize(want + zp * colsum.astype(np.int64), colsum, zp, mult, bias)
    f = np.rint(np.clip(f, np.float32(lo), np.float32(hi))).astype(np.int8)
    np.testing.assert_array_equal(out, f.reshape(out_hw + (blocks, 16)).transpose(2, 0, 1, 3))


def test_int8_conv_long_k(level):
    """K = 8192 of (-128) * (-128): sums of 2**27, past float32's exact range, exact in int32 and in the reference."""
    c1, cc, n = 512, 16, 32
    x = np.full((c1, 1, 3, cc), -128, np.int8)
    w = np.full((c1 * cc, n), -128, np.int8)
    w[::3] = 127
    colsum = w.astype(np.int64).sum(axis=0).astype(np.int32)
    y = np.empty((3, n), np.float32)
    K.int8_conv(x, w, colsum, 127, np.ones(n, np.float32), np.zeros(n, np.float32), (1, 1), (1, 1), (1, 1), (1, 3),
                y=y, wide=lambda k: np.empty(k, np.int16))()
    want = _int64_conv(x, w, (1, 1), (1, 1), (1, 1), (1, 3), 127)
    assert np.abs(want).max() > 2 ** 24
    np.testing.assert_array_equal(y, want.astype(np.float32))
    got = conv_int8.accumulate(conv_int8.columns(x, (1, 1), (1, 1), (1, 1), (1, 3)), w) - 127 * colsum.astype(np.int64)
    np.testing.assert_array_equal(got, want)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(c1=st.integers(1, 3), cp=st.integers(1, 20), size=st.tuples(st.integers(1, 7), st.integers(1, 13)),
       kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)), strides=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       blocks=st.integers(1, 4), c2=st.sampled_from([8, 16]),
       act=st.sampled_from([None, "Relu", "Clip", "LeakyRelu", "HardSigmoid", "HardSwish"]),
       seed=st.integers(0, 2**16))
def test_float_conv_matches_the_ordered_sum(level, c1, cp, size, kernel, strides, blocks, c2, act, seed):
    rng = np.random.default_rng(seed)
    hp, wp = size[0] + kernel[0] - 1, size[1] + kernel[1] - 1
    geometry = (kernel, strides, (1, 1), ((hp - kernel[0]) // strides[0] + 1, (wp - kernel[1]) // strides[1] + 1))
    n = 16 * blocks
    x = rng.standard_normal((c1, hp, wp, cp)).astype(np.float16).astype(np.float32)
    x.flat[::7] = 0
    w = (rng.standard_normal((kernel[0] * kernel[1] * c1 * cp, n)) / 4).astype(np.float16).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    ho, wo = geometry[3]
    y = np.empty((ho * wo, n), np.float32)
    K.float_conv(x, w, bias, *geometry, y=y)()
    cols = conv_int8.columns(x, *geometry)
    want = conv_fp16.accumulate(cols, w, np.empty_like(y), np.empty_like(y)) + bias
    np.testing.assert_array_equal(y.view(np.uint32), want.view(np.uint32))
    attrs = {"activation": act, "activation_params": (-0.5, 0.75) if act == "Clip" else None}
    code = conv_fp16.fused_activation(attrs)
    groups = n // c2 - (seed % 2 if n // c2 > 1 else 0)          # the slot may hold fewer channels than n
    out = np.empty((groups, ho, wo, c2), np.float16)
    K.float_conv(x, w, bias, *geometry, out=out, activation=code)()
    from npurt.exec.kernels import apply_activation
    stored = apply_activation(want.copy(), attrs).astype(np.float16)[:, :groups * c2]
    np.testing.assert_array_equal(out.view(np.uint16),
                                  stored.reshape(ho, wo, groups, c2).transpose(2, 0, 1, 3).view(np.uint16))


def _conv_model(c, m, h, w, kernel, strides, dilations, pads, group, act, seed) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    wt = (rng.standard_normal((m, c // group) + kernel) * 0.3).astype(np.float32)
    b = (rng.standard_normal(m) * 0.1).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], kernel_shape=list(kernel), strides=list(strides),
                              dilations=list(dilations), pads=list(pads), group=group)]
    if act:
        nodes.append(helper.make_node(act, ["c"], ["y"]))
    else:
        nodes[0].output[0] = "y"
    g = helper.make_graph(nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, w])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(wt, "W"), numpy_helper.from_array(b, "B")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.timeout(300)
@settings(max_examples=25, deadline=None)
@example(c=20, m=20, size=(3, 12), kernel=(5, 5), strides=(1, 1), dilations=(1, 1), pads=(2, 2, 2, 2),
         depthwise=True, act="Relu", precision="int8", seed=1)             # a 5x5 depthwise on a 3-row map
@example(c=24, m=24, size=(9, 13), kernel=(5, 3), strides=(2, 1), dilations=(1, 1), pads=(2, 1, 1, 0),
         depthwise=True, act=None, precision="fp16", seed=2)
@given(c=st.integers(1, 40), m=st.integers(1, 40), size=st.tuples(st.integers(3, 12), st.integers(3, 13)),
       kernel=st.tuples(st.integers(1, 5), st.integers(1, 5)), strides=st.tuples(st.integers(1, 2), st.integers(1, 2)),
       dilations=st.tuples(st.integers(1, 2), st.integers(1, 2)), pads=st.tuples(*[st.integers(0, 2)] * 4),
       depthwise=st.booleans(), act=st.sampled_from([None, "Relu", "Sigmoid"]),
       precision=st.sampled_from(["fp16", "int8"]), seed=st.integers(0, 2**16))
def test_conv_models_store_the_same_bytes_at_every_level(c, m, size, kernel, strides, dilations, pads, depthwise, act,
                                                          precision, seed):
    h, w = size
    assume(h + pads[0] + pads[2] > (kernel[0] - 1) * dilations[0] and w + pads[1] + pads[3] > (kernel[1] - 1) * dilations[1])
    group, m = (c, c) if depthwise else (1, m)
    dilations = (1, 1) if depthwise else dilations           # the in-place depthwise step takes dilation 1
    rng = np.random.default_rng(seed)
    model = _conv_model(c, m, h, w, kernel, strides, dilations, pads, group, act, seed)
    calib = [rng.standard_normal((1, c, h, w)).astype(np.float32) for _ in range(2)] if precision == "int8" else None
    cm = npurt.compile(model, soc="rk3588", quantize=calib, progress=False,
                       **({} if calib else {"precision": "fp16"}))
    x = rng.standard_normal((1, c, h, w)).astype(np.float32)
    w_, a_, i_, o_ = allocate(cm)
    ex = Executor(cm)
    ex.bind(w_, a_, i_, o_)
    assert depthwise or not ex._steps[0][2], "the dense conv did not take the in-place path"
    before = K.set_enabled(False)
    try:
        want = stored_bytes(cm, x)
    finally:
        K.set_enabled(before)
    levels = K.LEVELS[:K.LEVELS.index(K.cpu_level()) + 1]
    try:
        for name in levels:
            K.set_level(name)
            got = stored_bytes(cm, x)
            for t in want:
                np.testing.assert_array_equal(got[t].view(np.uint8), want[t].view(np.uint8), err_msg=f"{name} {t}")
    finally:
        K.set_level("")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_exec_threads_store_the_same_bytes(level, precision, monkeypatch):
    """$NPURT_EXEC_THREADS splits the compiled conv steps' rows over threads: the same bytes as one thread."""
    from npurt.model import zoo
    rng = np.random.default_rng(5)
    model = zoo.yolov8n_like(size=32)
    shape = (1, 3, 32, 32)
    calib = [rng.standard_normal(shape).astype(np.float32) for _ in range(2)] if precision == "int8" else None
    cm = npurt.compile(model, soc="rk3588", quantize=calib, progress=False, **({} if calib else {"precision": "fp16"}))
    x = rng.standard_normal(shape).astype(np.float32)
    want = stored_bytes(cm, x)
    monkeypatch.setenv("NPURT_EXEC_THREADS", "3")
    got = stored_bytes(cm, x)
    for t in want:
        np.testing.assert_array_equal(got[t].view(np.uint8), want[t].view(np.uint8), err_msg=t)


def test_late_layer_shapes_sum_exactly(level):
    """A late layer — 512 input channels on a 7 x 5 map, 64 outputs: the weights outweigh the input (channel blocks
    outside the pixel tiles) and pixel tiles cross output rows; int8 and float16 sums equal the references."""
    rng = np.random.default_rng(21)
    c1, cc, n, geometry = 32, 16, 64, ((1, 1), (1, 1), (1, 1), (7, 5))
    x, w, out_hw = _int8_case(rng, c1, cc, 7, 5, *geometry[:3], n, "random")
    colsum = w.astype(np.int64).sum(axis=0).astype(np.int32)
    y = np.empty((35, n), np.float32)
    K.int8_conv(x, w, colsum, -3, np.ones(n, np.float32), np.zeros(n, np.float32), *geometry, y=y,
                wide=lambda k: np.empty(k, np.int16))()
    np.testing.assert_array_equal(y, _int64_conv(x, w, *geometry[:3], out_hw, -3).astype(np.float32))
    xf = rng.standard_normal((c1, 7, 5, cc)).astype(np.float16).astype(np.float32)
    wf = (rng.standard_normal((c1 * cc, n)) / 8).astype(np.float16).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    yf = np.empty((35, n), np.float32)
    K.float_conv(xf, wf, bias, *geometry, y=yf)()
    want = conv_fp16.accumulate(conv_int8.columns(xf, *geometry), wf, np.empty_like(yf), np.empty_like(yf)) + bias
    np.testing.assert_array_equal(yf.view(np.uint32), want.view(np.uint32))


def _threaded_convs(rng, c1: int, n: int, hw: tuple, fp16_groups: int, int8_args: dict, act: tuple, monkeypatch):
    """`stored(threads)`: (the int8 and float16 conv calls prepared with $NPURT_EXEC_THREADS = threads, their int8
    output, their float16 output's bits) of a 3x3 conv on random codes (fp16: the same values scaled)."""
    geometry = ((3, 3), (1, 1), (1, 1), hw)
    x, w, _ = _int8_case(rng, c1, 16, hw[0] + 2, hw[1] + 2, *geometry[:3], n, "random")
    colsum = w.astype(np.int64).sum(axis=0).astype(np.int32)
    mult, bias = rng.uniform(1e-4, 1e-3, n).astype(np.float32), rng.uniform(-9, 9, n).astype(np.float32)
    xf = (x.astype(np.float32) / 64).astype(np.float16).astype(np.float32)
    wf = (w.astype(np.float32) / 256).astype(np.float16).astype(np.float32)

    def stored(threads: str):
        monkeypatch.setenv("NPURT_EXEC_THREADS", threads)
        out8 = np.zeros((n // 16,) + hw + (16,), np.int8)
        out16 = np.full((fp16_groups,) + hw + (8,), 7, np.float16)
        runs = [K.int8_conv(x, w, colsum, 3, mult, bias, *geometry, out=out8, wide=lambda k: np.empty(k, np.int16),
                            **int8_args),
                K.float_conv(xf, wf, bias, *geometry, out=out16, activation=act)]
        for run in runs:
            run()
        return runs, out8, out16.view(np.uint16)
    return stored


@pytest.mark.parametrize("c1, n, hw", [(2, 32, (7, 7)), (32, 64, (7, 5)), (1, 48, (13, 11))],
                         ids=["input-outer", "weights-outer", "rows-of-11"])
def test_conv_parts_split_at_pixels_inside_rows(level, c1, n, hw, monkeypatch):
    """Dense conv parts are ranges of output pixels (multiples of the tiles, not of rows): with three threads a part
    starts inside an output row, and the int8 (each thread widening its own rows at the AVX2 level) and float16
    convs store what one thread stores."""
    stored = _threaded_convs(np.random.default_rng(sum(hw) + c1), c1, n, hw, n // 8, {"bounds": (-100.0, 90.0)},
                             (4, 1.0, 0.0), monkeypatch)
    one, three = stored("1"), stored("3")
    starts = [lo for _, lo, _ in three[0][0].parts[0]]
    assert len(starts) == 3 and any(lo % hw[1] for lo in starts)
    np.testing.assert_array_equal(three[1], one[1])
    np.testing.assert_array_equal(three[2], one[2])


@pytest.mark.parametrize("hw", [(1, 1), (3, 5)])
def test_conv_parts_on_small_maps_split_by_channel_blocks(level, hw, monkeypatch):
    """A conv with few output pixels (a classifier's 1 x 1 map) splits its 16-channel blocks over the threads (each
    part the same call on offset weights, sums and outputs; float16 outputs of 72 channels on 80 computed): the
    bytes one thread stores."""
    stored = _threaded_convs(np.random.default_rng(hw[1]), 3, 80, hw, 9, {"swish": (1.0, 20.0, -3.0)}, (1, 0.0, 0.0),
                             monkeypatch)
    one, two = stored("1"), stored("2")
    if level != "portable":                              # the portable int8 weights are not stored by block
        assert len({int(K.ffi.cast("intptr_t", q.w)) for q, _, _ in two[0][0].parts[0]}) == 2
    assert [hi for _, _, hi in two[0][1].parts[0]] == [hw[0] * hw[1]] * 2
    np.testing.assert_array_equal(two[1], one[1])
    np.testing.assert_array_equal(two[2], one[2])


@pytest.mark.skipif(not K.available() or K.LEVELS.index(K.cpu_level()) < K.LEVELS.index("avx2"),
                    reason="the AVX2 int8 conv (per-thread scratch) needs an AVX2 CPU")
def test_a_call_uses_only_its_threads_scratch(monkeypatch):
    """Worker threads started by a call of four threads stay out of a later call of two (its AVX2 int8 conv widens
    rows into two threads' scratch: a third thread's slot would write past it), and the bytes are one thread's."""
    rng = np.random.default_rng(9)
    geometry = ((3, 3), (1, 1), (1, 1), (20, 9))
    x, w, _ = _int8_case(rng, 2, 16, 22, 11, *geometry[:3], 32, "random")
    colsum = w.astype(np.int64).sum(axis=0).astype(np.int32)
    mult, bias = np.full(32, 1e-3, np.float32), np.zeros(32, np.float32)
    try:
        K.set_level("avx2")
        monkeypatch.setenv("NPURT_EXEC_THREADS", "4")
        out4 = np.zeros((2, 20, 9, 16), np.int8)
        K.int8_conv(x, w, colsum, 1, mult, bias, *geometry, out=out4, wide=lambda k: np.empty(k, np.int16))()
        monkeypatch.setenv("NPURT_EXEC_THREADS", "2")
        scratch = np.full(2 * x.size + 4096, 12345, np.int16)             # two threads' scratch, then a canary
        out2 = np.zeros_like(out4)
        run = K.int8_conv(x, w, colsum, 1, mult, bias, *geometry, out=out2, wide=lambda k: scratch[:k])
        assert len(run.parts[0]) == 2
        for _ in range(200):
            run()
        assert np.all(scratch[2 * x.size:] == 12345)
        np.testing.assert_array_equal(out2, out4)
    finally:
        K.set_level("")
