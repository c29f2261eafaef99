"""The in-place step path (ops computed on their NC1HWC2 slots) writes the same activations as the generic path
(unpack to float32, kernel, pack) — every intermediate slot, not only the outputs."""
from __future__ import annotations

import numpy as np
import pytest

import npurt
from npurt.runtime.user_io import pack_input
from npurt.exec.executor import Executor, allocate
from npurt.model.zoo import mobilenet_v2_like, yolov8n_like


def _run(cm, x, inplace: bool) -> tuple[Executor, list[np.ndarray]]:
    w, a, i, o = allocate(cm)
    ex = Executor(cm, inplace=inplace)
    ex.bind(w, a, i, o)
    pack_input(cm.native_input_attrs[0], x, i[0])
    ex.run()
    return ex, o


def _calibration(rng, shape, n=4):
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]


@pytest.mark.parametrize("build", [lambda: mobilenet_v2_like(size=64), lambda: yolov8n_like(size=64)],
                         ids=["mobilenet_v2_like", "yolov8n_like"])
@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_inplace_and_generic_paths_agree(build, precision):
    rng = np.random.default_rng(1)
    model = build()
    shape = tuple(d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim)
    cm = npurt.compile(model, soc="rk3588", quantize=_calibration(rng, shape) if precision == "int8" else None,
                       progress=False)
    x = rng.standard_normal(shape).astype(np.float32)
    inplace, out_n = _run(cm, x, inplace=True)
    generic, out_g = _run(cm, x, inplace=False)
    assert sum(1 for s in inplace._steps if not s[2] and not s[3]) > 0, "no step took the in-place path"
    for name in list(cm.plan.offsets) + list(cm.graph.outputs):
        a = inplace.tensor_view(name).astype(np.float32)
        b = generic.tensor_view(name).astype(np.float32)
        if precision == "fp16":                        # same math, other summation order
            assert np.abs(a - b).max() <= 5e-3 * max(np.abs(b).max(), 1.0), name
        else:                                          # int8 codes: folded scales move a value by a few steps (measured: at most 4)
            assert np.abs(a - b).max() <= 4, name


def _assert_steps_store_the_same(cm, first: int, stop: int, src: str, value: np.ndarray) -> None:
    """Steps first..stop-1 take the in-place path (and not with inplace=False) and, run on `value` written into
    `src`, store byte for byte what the generic path stores."""
    stored = []
    for inplace in (True, False):
        ex = Executor(cm, inplace=inplace)
        ex.bind(*allocate(cm))
        assert all((not s[2] and not s[3]) == inplace for s in ex._steps[first:stop])
        ex.write_tensor(src, value)
        for i in range(first, stop):
            ex.run_step(i)
        stored.append([ex.tensor_view(n.outputs[0]).view(np.uint8).copy() for n in cm.graph.nodes[first:stop]])
    for a, b in zip(*stored):
        assert np.array_equal(a, b)


def _pool_model(channels: int, **pool_attrs):
    """input -> 1x1 Conv -> MaxPool(**pool_attrs) -> 1x1 Conv: a MaxPool between two NC1HWC2 slots."""
    from npurt.model.zoo import _Graph
    g = _Graph(0)
    x = g.node("MaxPool", [g.conv("input", 3, channels, 1)], **pool_attrs)
    y = g.conv(x, channels, 4, 1)
    k, s, d = pool_attrs["kernel_shape"], pool_attrs["strides"], pool_attrs.get("dilations", [1, 1])
    p, ceil = pool_attrs.get("pads", [0, 0, 0, 0]), pool_attrs.get("ceil_mode", 0)
    span = [n + p[i] + p[i + 2] - (kk - 1) * dd - 1 for i, (n, kk, dd) in enumerate(zip((13, 12), k, d))]
    out = [(-(-v // ss) if ceil else v // ss) + 1 for v, ss in zip(span, s)]
    return g.model([("input", [1, 3, 13, 12])], [(y, [1, 4] + out)], "pool")


def _compiled_pool(model, op: str, precision: str, rng, shape: tuple, requantise: tuple[float, int]):
    """(compiled model, step index of `op`, its input) in `precision`; "int8-requantised" moves the output's scale
    and zero point by `requantise` so the step goes through the requantisation table."""
    import dataclasses
    int8 = precision.startswith("int8")
    cm = npurt.compile(model, soc="rk3588", quantize=_calibration(rng, shape) if int8 else None, progress=False)
    index, node = next((i, n) for i, n in enumerate(cm.graph.nodes) if n.op_type == op)
    out = node.outputs[0]
    if precision == "int8-requantised":
        st = cm.storage[out]
        cm.storage[out] = dataclasses.replace(st, scale=st.scale * requantise[0], zp=st.zp + requantise[1])
    return cm, index, node.inputs[0]


_POOLS = {
    "2x2": (16, {"kernel_shape": [2, 2], "strides": [2, 2]}),
    "dilated-padded-lanes": (12, {"kernel_shape": [3, 2], "strides": [1, 2], "dilations": [2, 1]}),
    "3x3s2": (20, {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 0}),
    "sppf-5x5-pads": (16, {"kernel_shape": [5, 5], "strides": [1, 1], "pads": [2, 2, 2, 2]}),
    "3x3s2-pads-ceil": (20, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 0, 0, 1], "ceil_mode": 1}),
}


def _pool_value(cm, src: str, rng, int8: bool) -> np.ndarray:
    """An input for the pool with signed zeros, infinities and (fp16) NaNs of both signs in some windows."""
    value = rng.standard_normal(cm.storage[src].shape).astype(np.float32) * 3
    if not int8:
        value[0, 0, 0, :4] = [0.0, -0.0, np.inf, -np.inf]
        value[0, 1, 0:2, 0:2] = [[-0.0, 0.0], [0.0, -0.0]]
        value[0, 2, 1, 1:4] = [np.nan, -np.nan, 5.0]
        value[0, 3, 0:2, 2] = [-np.nan, np.nan]
    return value


@pytest.mark.parametrize("precision", ["fp16", "int8", "int8-requantised"])
@pytest.mark.parametrize("pool", list(_POOLS))
def test_inplace_maxpool_is_byte_identical(precision, pool, level):
    """The in-place MaxPool step (one compiled call) stores exactly the generic path's bytes at every instruction-set
    level — pads, ceil_mode, dilations, padded lanes, NaNs and signed zeros; int8 with the same or another output
    quantisation, which goes through the requantisation table."""
    rng = np.random.default_rng(7)
    channels, attrs = _POOLS[pool]
    cm, index, src = _compiled_pool(_pool_model(channels, **attrs), "MaxPool", precision, rng, (1, 3, 13, 12),
                                    (1.37, 5))
    _assert_steps_store_the_same(cm, index, index + 1, src, _pool_value(cm, src, rng, precision != "fp16"))


@pytest.mark.parametrize("precision", ["fp16", "int8-requantised"])
def test_inplace_maxpool_without_compiled_kernels_is_byte_identical(precision):
    """The numpy fallback (kernels off, no padding) stores the generic path's bytes too."""
    import npurt._kernels as kernels
    rng = np.random.default_rng(7)
    channels, attrs = _POOLS["3x3s2"]
    before = kernels.set_enabled(False)
    try:
        cm, index, src = _compiled_pool(_pool_model(channels, **attrs), "MaxPool", precision, rng, (1, 3, 13, 12),
                                        (1.37, 5))
        _assert_steps_store_the_same(cm, index, index + 1, src, _pool_value(cm, src, rng, precision != "fp16"))
    finally:
        kernels.set_enabled(before)


@pytest.mark.parametrize("precision", ["fp16", "int8", "int8-requantised"])
@pytest.mark.parametrize("channels", [16, 20, 64])
def test_inplace_global_average_pool_is_byte_identical(precision, channels, level):
    """The in-place GlobalAveragePool step stores exactly the generic path's bytes (same sums, same rounding) at every
    instruction-set level."""
    from npurt.model.zoo import _Graph
    rng = np.random.default_rng(8)
    g = _Graph(0)
    x = g.node("GlobalAveragePool", [g.conv("input", 3, channels, 1)])
    model = g.model([("input", [1, 3, 7, 9])], [(g.conv(x, channels, 4, 1), [1, 4, 1, 1])], "gap")
    cm, index, src = _compiled_pool(model, "GlobalAveragePool", precision, rng, (1, 3, 7, 9), (0.61, -3))
    value = rng.standard_normal(cm.storage[src].shape).astype(np.float32) * 3
    _assert_steps_store_the_same(cm, index, index + 1, src, value)


@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_inplace_gemm_softmax_on_plain_slots_are_byte_identical(precision, level):
    """small_convnet's classifier (Gemm, Softmax on plain (1, 10) fp16 or int8 slots) stores the generic path's
    bytes at every instruction-set level."""
    from npurt.model.zoo import small_convnet
    rng = np.random.default_rng(9)
    shape = (1, 3, 16, 16)
    cm = npurt.compile(small_convnet(size=16), soc="rk3588", quantize=_calibration(rng, shape)
                       if precision == "int8" else None, progress=False)
    index = next(i for i, n in enumerate(cm.graph.nodes) if n.op_type == "Gemm")
    src = cm.graph.nodes[index].inputs[0]
    value = rng.standard_normal(cm.storage[src].shape).astype(np.float32) * 4
    _assert_steps_store_the_same(cm, index, len(cm.graph.nodes), src, value)


def _assert_each_step_stores_the_same(cm, x: np.ndarray, exact_ops: set[str]) -> None:
    """Every step of an `exact_ops` type takes the in-place path and, started from the generic run's memory as it is
    before that step, stores the generic path's bytes."""
    bufs = [allocate(cm) for _ in range(2)]
    exs = [Executor(cm, inplace=flag) for flag in (True, False)]
    for ex, (w, a, ins, outs) in zip(exs, bufs):
        a[:] = 0xAB                                    # stale bytes: padding lanes must be written, not inherited
        ex.bind(w, a, ins, outs)
        pack_input(cm.native_input_attrs[0], x, ins[0])
    checked = 0
    for i, node in enumerate(cm.graph.nodes):
        bufs[0][1][:] = bufs[1][1]
        for mine, theirs in zip(bufs[0][3], bufs[1][3]):
            mine[:] = theirs
        for ex in exs:
            ex.run_step(i)
        if node.op_type not in exact_ops:
            continue
        step = exs[0]._steps[i]
        assert not step[2] and not step[3], f"{node.name} ({node.op_type}) is not in place"
        for t in node.outputs:
            assert np.array_equal(exs[0].tensor_view(t).view(np.uint8), exs[1].tensor_view(t).view(np.uint8)), t
        checked += 1
    assert checked


_DECODE_OPS = {"Sigmoid", "Mul", "Add", "Split", "Concat", "Reshape", "Resize"}


@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_inplace_decode_head_steps_are_byte_identical(precision, level):
    """yolo_head's decode tail — (1, 255, H, W) reshaped to (1, 3, 85, H*W) in NC1HWC2 (3 used lanes), Sigmoid, Split
    and Concat along H, Mul / Add with the grid and anchor constants (int8: every step requantises) — stores the
    generic path's bytes at every instruction-set level."""
    from npurt.model.zoo import yolo_head
    rng = np.random.default_rng(11)
    shape = (1, 3, 64, 64)
    cm = npurt.compile(yolo_head(size=64), soc="rk3588", quantize=_calibration(rng, shape) if precision == "int8"
                       else None, progress=False)
    _assert_each_step_stores_the_same(cm, rng.standard_normal(shape).astype(np.float32) * 2, _DECODE_OPS)


@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_inplace_small_convnet_steps_are_byte_identical(precision, level):
    """Every pooling and classifier step of small_convnet (MaxPool, GlobalAveragePool, Flatten, Gemm, Softmax) runs
    in place and stores the generic path's bytes at every instruction-set level."""
    from npurt.model.zoo import small_convnet
    rng = np.random.default_rng(14)
    shape = (1, 3, 32, 32)
    cm = npurt.compile(small_convnet(size=32), soc="rk3588", quantize=_calibration(rng, shape)
                       if precision == "int8" else None, progress=False)
    _assert_each_step_stores_the_same(cm, rng.standard_normal(shape).astype(np.float32) * 2,
                                      {"MaxPool", "GlobalAveragePool", "Flatten", "Gemm", "Softmax"})


def _excitation_model(channels: int):
    """Conv -> squeeze-excitation (GlobalAveragePool, 1x1 Conv, HardSigmoid) -> Mul(x, scale) and Sub(scale, x):
    binary ops between an NC1HWC2 activation and a per-channel (1, C, 1, 1) one computed at run time."""
    from npurt.model.zoo import _Graph
    g = _Graph(0)
    x = g.conv("input", 3, channels, 1)
    scale = g.node("HardSigmoid", [g.conv(g.node("GlobalAveragePool", [x]), channels, channels, 1)])
    y = g.node("Mul", [x, scale])
    y = g.node("Sub", [scale, y])
    return g.model([("input", [1, 3, 9, 12])], [(g.conv(y, channels, 4, 1), [1, 4, 9, 12])], "excitation")


@pytest.mark.parametrize("precision", ["fp16", "int8"])
@pytest.mark.parametrize("channels", [20, 32])
def test_inplace_excitation_ops_are_byte_identical(precision, channels, level):
    """Mul / Sub of an activation and a run-time per-channel scale (either operand order, padded lanes) run in
    place and store the generic path's bytes at every instruction-set level."""
    rng = np.random.default_rng(15)
    shape = (1, 3, 9, 12)
    cm = npurt.compile(_excitation_model(channels), soc="rk3588", quantize=_calibration(rng, shape)
                       if precision == "int8" else None, progress=False)
    _assert_each_step_stores_the_same(cm, rng.standard_normal(shape).astype(np.float32), {"Mul", "Sub"})


def _width_model(channels: int):
    """Conv -> Split on W -> Concat on W (swapped) -> Reshape to other NC1HWC2 dims -> Mul by a (1, 1, H, 1)
    constant -> Add a scalar -> Sub from a per-channel constant -> Conv."""
    from npurt.model.zoo import _Graph
    g = _Graph(0)
    y = g.conv("input", 3, channels, 1)
    a, b = g.node("Split", [y, g.const(np.array([5, 7], np.int64), "split")], n_out=2, axis=3)
    y = g.node("Concat", [b, a], axis=-1)
    y = g.node("Reshape", [y, g.const(np.array([1, 3, channels, 36], np.int64), "shape")])
    rows = np.random.default_rng(0).standard_normal((1, 1, channels, 1)).astype(np.float32)
    y = g.node("Mul", [y, g.const(rows, "rows")])
    y = g.node("Add", [y, g.const(np.array(0.75, np.float32), "scalar")])
    y = g.node("Sub", [g.const(np.array([1.5, -2.0, 0.25], np.float32).reshape(1, 3, 1, 1), "lanes"), y])
    out = g.conv(y, 3, 4, 1)
    return g.model([("input", [1, 3, 9, 12])], [(out, [1, 4, channels, 36])], "width")


@pytest.mark.parametrize("precision", ["fp16", "int8"])
@pytest.mark.parametrize("channels", [9, 24])
def test_inplace_width_split_concat_reshape_and_constants_are_byte_identical(precision, channels, level):
    """Split / Concat on W, an NC1HWC2 -> NC1HWC2 Reshape into 3 used lanes, and Mul / Add / Sub with a
    row constant, a scalar and a per-channel constant (either operand order) store the generic path's bytes."""
    rng = np.random.default_rng(12)
    shape = (1, 3, 9, 12)
    cm = npurt.compile(_width_model(channels), soc="rk3588", quantize=_calibration(rng, shape)
                       if precision == "int8" else None, progress=False)
    _assert_each_step_stores_the_same(cm, rng.standard_normal(shape).astype(np.float32), _DECODE_OPS | {"Sub"})


@pytest.mark.parametrize("build,ops", [(lambda: _width_model(9), _DECODE_OPS | {"Sub"}),
                                       (lambda: _excitation_model(20), {"Mul", "Sub"})], ids=["decode", "excitation"])
def test_inplace_steps_without_compiled_kernels_are_byte_identical(build, ops):
    """The numpy fallbacks of the decode and squeeze-excitation steps (compiled kernels off) store the generic path's
    bytes."""
    import npurt._kernels as kernels
    rng = np.random.default_rng(13)
    shape = (1, 3, 9, 12)
    before = kernels.set_enabled(False)
    try:
        for precision in ("fp16", "int8"):
            cm = npurt.compile(build(), soc="rk3588", quantize=_calibration(rng, shape)
                               if precision == "int8" else None, progress=False)
            _assert_each_step_stores_the_same(cm, rng.standard_normal(shape).astype(np.float32), ops)
    finally:
        kernels.set_enabled(before)
