"""An int8 MobileNetV2-style tail — a residual Add of two int8 slots, GlobalAveragePool, Flatten and a classifier
Gemm — stores the same bytes with the compiled kernels at every instruction set as with them off (the numpy path):
the Add's one-pass arithmetic (`_kernels.binary_i8_fn`, taken only where it reproduces the pair table) and the
Gemm summed in integers (`conv_int8.gemm_int8`, a 1 x 1 conv on a 1 x 1 map)."""
from __future__ import annotations

import numpy as np
import pytest

import npurt
import npurt._kernels as K
from helpers.models import assert_every_level_stores_numpy_bytes
from npurt.exec.executor import Executor, allocate
from npurt.runtime.user_io import pack_input


def _tail_model(channels: int, classes: int, trans_b: int, softmax: bool = False):
    """input -> Conv 3x3 -> Relu -> 1x1 Conv (project) -> Add(project, first) -> GlobalAveragePool -> Flatten ->
    Gemm(transB) (-> Softmax) -> logits."""
    from npurt.model.zoo import _Graph
    g = _Graph(3)
    x = g.node("Relu", [g.conv("input", 3, channels, 3)])
    y = g.node("Add", [g.conv(x, channels, channels, 1), x])
    f = g.node("Flatten", [g.node("GlobalAveragePool", [y])], axis=1)
    w = g.rng.normal(0, 0.3, (classes, channels) if trans_b else (channels, classes)).astype(np.float32)
    b = g.rng.normal(0, 0.1, classes).astype(np.float32)
    logits = g.node("Gemm", [f, g.const(w), g.const(b, "b")], transB=trans_b)
    if softmax:
        logits = g.node("Softmax", [logits], axis=-1)
    return g.model([("input", [1, 3, 11, 10])], [(logits, [1, classes])], "tail")


def _compiled(channels: int, classes: int, trans_b: int, seed: int):
    rng = np.random.default_rng(seed)
    cm = npurt.compile(_tail_model(channels, classes, trans_b), soc="rk3588", progress=False,
                       quantize=[rng.standard_normal((1, 3, 11, 10)).astype(np.float32) for _ in range(3)])
    return cm, rng.standard_normal((1, 3, 11, 10)).astype(np.float32) * 2


@pytest.mark.parametrize("channels, classes, trans_b", [(22, 37, 1), (32, 10, 0), (48, 1000, 1)])
def test_tail_stores_the_numpy_paths_bytes_at_every_level(channels, classes, trans_b, monkeypatch):
    cm, x = _compiled(channels, classes, trans_b, channels)
    ops = [n.op_type for n in cm.graph.nodes]
    assert "Add" in ops and ops[-1] == "Gemm"
    assert_every_level_stores_numpy_bytes(cm, x, monkeypatch)


@pytest.mark.parametrize("channels, classes, trans_b", [(22, 37, 1), (32, 10, 0)])
def test_integer_gemm_is_in_place_and_near_the_float_kernel(channels, classes, trans_b):
    """The int8 Gemm takes the in-place integer step; its codes are within one of the generic float path's."""
    cm, x = _compiled(channels, classes, trans_b, 5)
    out = []
    for inplace in (True, False):
        w, a, i, o = allocate(cm)
        ex = Executor(cm, inplace=inplace)
        ex.bind(w, a, i, o)
        pack_input(cm.native_input_attrs[0], x, i[0])
        ex.run()
        step = ex._steps[-1]
        assert (not step[2] and not step[3]) == inplace
        out.append(ex.tensor_view(cm.graph.outputs[0]).astype(np.int32))
    assert np.abs(out[0] - out[1]).max() <= 1
    assert len(np.unique(out[0])) > classes // 3          # not a constant output


@pytest.mark.parametrize("op", sorted(K.BINARY_F16))
def test_int8_binary_kernel_matches_numpy_for_every_pair(op, level):
    """`binary_i8_fn` on all 65536 code pairs stores what the slots' dequantise, numpy's ufunc and quantise store."""
    from npurt.exec.inplace.elementwise import BINARY
    from npurt.exec.inplace.slots import dequantize, quantize

    class Q:
        def __init__(self, scale: float, zp: int) -> None:
            self.scale, self.zp = scale, zp

    sa, sb, so = Q(0.031, -5), Q(0.0173, 12), Q(0.03 if op != "Mul" else 0.05, -3)
    codes = np.arange(256, dtype=np.uint16).astype(np.uint8).view(np.int8)
    a, b = np.repeat(codes, 256), np.tile(codes, 256)
    want = quantize(BINARY[op](dequantize(a, sa), dequantize(b, sb)), so)
    got = np.empty(65536, np.int8)
    run = K.binary_i8_fn(op, got, a, b, (sa.scale, sa.zp * sa.scale), (sb.scale, sb.zp * sb.scale),
                         (1.0 / so.scale, so.zp))
    assert run is not None
    run()
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(want)) > 100 and want.min() == -128 and want.max() == 127


@pytest.mark.parametrize("precision", ["fp16", "int8"])
@pytest.mark.parametrize("hw", [(2, 3), (1, 1), (13, 13), (16, 17)])
def test_compiled_global_average_pool_stores_the_generic_paths_bytes(precision, hw, level):
    """The one-call GlobalAveragePool (numpy's pairwise sums: under 8 pixels, up to 128, and split runs beyond)
    stores the generic path's bytes, padded lanes zero, at every instruction-set level."""
    from npurt.model.zoo import _Graph
    rng = np.random.default_rng(hw[0] * 31 + hw[1])
    g = _Graph(1)
    x = g.node("GlobalAveragePool", [g.conv("input", 3, 20, 1)])
    shape = (1, 3) + hw
    model = g.model([("input", list(shape))], [(g.conv(x, 20, 4, 1), [1, 4, 1, 1])], "gap")
    calibration = [rng.standard_normal(shape).astype(np.float32) for _ in range(2)] if precision == "int8" else None
    cm = npurt.compile(model, soc="rk3588", progress=False, quantize=calibration)
    index, node = next((i, n) for i, n in enumerate(cm.graph.nodes) if n.op_type == "GlobalAveragePool")
    value = (rng.standard_normal(cm.storage[node.inputs[0]].shape) * np.exp(rng.uniform(-6, 6, (1, 20) + hw)))
    stored = []
    for inplace in (True, False):
        w, a, i, o = allocate(cm)
        a[:] = 0xAB                                    # stale bytes: padding lanes must be written
        ex = Executor(cm, inplace=inplace)
        ex.bind(w, a, i, o)
        assert (not ex._steps[index][2]) == inplace
        if inplace:
            assert getattr(ex._steps[index][0].inplace_run, "arrays", None) is not None   # the compiled call
        ex.write_tensor(node.inputs[0], value.astype(np.float32))
        ex.run_step(index)
        stored.append(ex.tensor_view(node.outputs[0]).view(np.uint8).copy())
    np.testing.assert_array_equal(stored[0], stored[1])


@pytest.mark.parametrize("trans_b", [0, 1])
def test_fp16_gemm_and_softmax_steps_store_the_generic_bytes(trans_b, level):
    """fp16 Gemm and Softmax run as steps prepared at bind (no per-run allocation) and store the generic path's
    bytes at every instruction-set level."""
    rng = np.random.default_rng(21 + trans_b)
    cm = npurt.compile(_tail_model(24, 37, trans_b, softmax=True), soc="rk3588", precision="fp16", progress=False)
    x = rng.standard_normal((1, 3, 11, 10)).astype(np.float32) * 2
    runs, bufs = [], []
    for inplace in (False, True):
        w, a, i, o = allocate(cm)
        a[:] = 0xAB
        ex = Executor(cm, inplace=inplace)
        ex.bind(w, a, i, o)
        pack_input(cm.native_input_attrs[0], x, i[0])
        ex.run()
        runs.insert(0, ex)
        bufs.insert(0, (a, o))
    bufs[0][0][:] = bufs[1][0]                  # the last two steps again, both from the generic run's memory
    for ex in runs:
        for k in (-2, -1):
            ex.run_step(len(cm.graph.nodes) + k)
    names = {s[-1].op_type: s[0].inplace_run.__qualname__ for s in runs[0]._steps if hasattr(s[0], "inplace_run")}
    assert names["Gemm"] == "gemm.<locals>.run" and names["Softmax"] == "softmax.<locals>.run"
    for node in cm.graph.nodes[-2:]:
        t = node.outputs[0]
        np.testing.assert_array_equal(runs[0].tensor_view(t).view(np.uint8), runs[1].tensor_view(t).view(np.uint8))
    probabilities = runs[0].tensor_view(cm.graph.outputs[0]).astype(np.float32)
    assert abs(float(probabilities.sum()) - 1.0) < 1e-2


@pytest.mark.parametrize("value", [0, -7, 1.5])
def test_fill_fn_matches_numpy_fill(value):
    """The compiled fill of strided views (padding lanes, conv borders) writes what ndarray.fill writes, and only
    there."""
    rng = np.random.default_rng(4)
    for dtype in (np.int8, np.float16, np.float32):
        base = rng.integers(-100, 100, (1, 3, 9, 11, 16)).astype(dtype)
        for index in (np.s_[:, 2, :, :, 8:], np.s_[:, 1:], np.s_[:, :, :1], np.s_[:, :, 2:7, :2], np.s_[:, :, :, -1:]):
            if dtype is np.int8 and value == 1.5:
                continue
            want, got = base.copy(), base.copy()
            want[index].fill(value)
            run = K.fill_fn(got[index], value)
            assert run is not None
            run()
            np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
    assert K.fill_fn(np.zeros((4, 4), np.float32)[:, ::2], 0) is None         # no contiguous last axis


def test_int8_conv_leaves_zero_padding_lanes_over_stale_memory(level):
    """A 24-channel int8 project conv (the kernel stores its padding lanes itself) and the residual Add after it
    leave zeros in the padding lanes of arena memory that held other bytes."""
    cm, x = _compiled(24, 10, 1, 24)
    w, a, i, o = allocate(cm)
    a[:] = 0xAB
    ex = Executor(cm)
    ex.bind(w, a, i, o)
    pack_input(cm.native_input_attrs[0], x, i[0])
    ex.run()
    checked = 0
    for node in cm.graph.nodes:
        if node.op_type in ("Conv", "Add"):
            view = ex.tensor_view(node.outputs[0])
            assert view.shape[1] * view.shape[4] == 32 and not view[:, 1, ..., 8:].any(), node.name
            checked += 1
    assert checked >= 3


def test_sequence_drops_empty_parts_and_keeps_order():
    """A step made of parts: empty fills dropped, one part returned as it is, the others run in order."""
    from npurt.exec.inplace.epilogue import filler, nothing, sequence
    calls = []
    first, second = (lambda: calls.append(1)), (lambda: calls.append(2))
    assert filler([]) is nothing and sequence(nothing, filler([np.zeros(0)])) is nothing
    assert sequence(nothing, first, filler([])) is first
    sequence(second, nothing, first)()
    assert calls == [2, 1]
