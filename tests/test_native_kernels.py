"""The compiled kernels (`npurt._kernels`) give numpy's bytes: every kernel on every instruction set this CPU has,
against the numpy code it replaces (casts with NaN / Inf / subnormal inputs, quantisation, layout transposes over
every platform's C2, padded widths, extra C1 blocks, batch > 1, the image-input pass); and the whole executor writes
the same bytes into every activation with and without them, on the zoo models."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from helpers.models import numpy_path

import npurt
import npurt._kernels as K
from npurt.model import zoo
from npurt.tensor import nc1hwc2_to_nchw, nchw_to_nc1hwc2

LEVELS = K.LEVELS[:K.LEVELS.index(K.cpu_level()) + 1] if K.available() else ()


def test_the_compiled_module_is_built():
    assert K.available(), K.BUILD_ERROR
    assert K.cpu_level() in K.LEVELS and K.level() == K.cpu_level()


def _same_bits(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"))


def test_float16_to_float32_every_value(level):
    h = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16)
    out = np.empty(h.shape, np.float32)
    assert K.cast(out, h)
    _same_bits(out, h.astype(np.float32))


def _float32_cases(rng) -> np.ndarray:
    """Random bit patterns (every class: NaN payloads, Inf, subnormals, overflow) plus the exact midpoints between
    neighbouring float16 values and their float32 neighbours (the round-to-nearest-even ties)."""
    bits = rng.integers(0, 1 << 32, 200_000, dtype=np.uint64).astype(np.uint32)
    h = np.arange(0x7c00, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float64)
    mid = ((h[:-1] + h[1:]) / 2).astype(np.float32).view(np.uint32)
    special = np.array([0x7f800001, 0x7fc00000, 0x7f801fff, 0xffa00000, 0x7f800000, 0xff800000, 0x477ff000,
                        0x477fefff, 0x33000000, 0x33000001, 0x32ffffff, 0x00000001, 0x80000000], np.uint32)
    both = np.concatenate([bits, mid, mid + 1, mid - 1, special, special | 0x80000000])
    return both.view(np.float32)


def test_float32_to_float16_bits(level):
    x = _float32_cases(np.random.default_rng(0))
    out = np.empty(x.shape, np.float16)
    assert K.cast(out, x)
    with np.errstate(over="ignore", invalid="ignore"):
        _same_bits(out, x.astype(np.float16))


floats = st.floats(width=32, allow_nan=True, allow_infinity=True, allow_subnormal=True)


@settings(max_examples=60, deadline=None)
@given(values=st.lists(floats, min_size=0, max_size=300), scale=st.floats(0.0001220703125, 50.0, width=32),
       zp=st.integers(-128, 127), pad=st.integers(0, 40))
def test_quantize_and_dequantize(values, scale, zp, pad):
    with np.errstate(over="ignore"):
        x = np.array(values + [v * 7.5 for v in values[:pad]], np.float32)
    inv, szp = np.float32(1.0 / scale), np.float32(zp)
    for name in LEVELS:
        K.set_level(name)
        q = np.empty(x.shape, np.int8)
        assert K.quantize(q, x, inv, szp)
        with np.errstate(invalid="ignore", over="ignore"):
            t = np.multiply(x, inv)
            np.add(t, szp, out=t)
            np.rint(t, out=t)
            np.clip(t, -128, 127, out=t)
            np.testing.assert_array_equal(q, t.astype(np.int8))
        f = np.empty(q.shape, np.float32)
        assert K.dequantize(f, q, np.float32(scale), np.float32(zp * scale))
        ref = np.empty(q.shape, np.float32)
        np.multiply(q, np.float32(scale), out=ref)
        np.subtract(ref, np.float32(zp * scale), out=ref)
        _same_bits(f, ref)
    K.set_level("")


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.integers(1, 9), min_size=1, max_size=5), seed=st.integers(0, 2**32 - 1),
       pair=st.sampled_from([(np.float32, np.float16), (np.float16, np.float32), (np.int8, np.float32),
                             (np.int8, np.int8), (np.float16, np.float16), (np.float32, np.float32)]))
def test_strided_cast_matches_copyto(shape, seed, pair):
    rng = np.random.default_rng(seed)
    src_t, dst_t = pair
    base = (rng.standard_normal([d * 2 for d in shape]) * 300).astype(src_t)
    src = base[tuple(slice(rng.integers(0, 2), None, int(rng.integers(1, 3))) for _ in shape)]
    src = src.transpose(rng.permutation(src.ndim))
    dst_base = np.full([d + 1 for d in src.shape], 3, dst_t)
    dst = dst_base[tuple(slice(0, d) for d in src.shape)]
    ref = dst_base.copy()
    with np.errstate(over="ignore"):
        np.copyto(ref[tuple(slice(0, d) for d in src.shape)], src, casting="unsafe")
    assert K.cast(dst, src)
    _same_bits(dst_base, ref)


layout_case = st.fixed_dictionaries({
    "n": st.integers(1, 3), "c": st.integers(1, 40), "h": st.integers(1, 6), "w": st.integers(1, 37),
    "c2": st.sampled_from([4, 8, 16]), "extra_c1": st.sampled_from([0, 0, 1, 2]), "pad_w": st.sampled_from([0, 0, 3]),
    "dtype": st.sampled_from([np.int8, np.float16, np.float32]), "seed": st.integers(0, 2**32 - 1)})




@settings(max_examples=80, deadline=None)
@given(layout_case)
def test_layout_kernels_match_numpy(p):
    rng = np.random.default_rng(p["seed"])
    n, c, h, w, c2 = p["n"], p["c"], p["h"], p["w"], p["c2"]
    c1, ws = -(-c // c2) + p["extra_c1"], w + p["pad_w"]
    x = (rng.standard_normal((n, c, h, w)) * 100).astype(p["dtype"])
    for name in LEVELS:
        K.set_level(name)
        packed = np.full((n, c1, h, ws, c2), 5, x.dtype)
        assert K.planes_to_lanes(packed, x)
        expect = numpy_path(nchw_to_nc1hwc2, x, c2, c1, ws)
        _same_bits(packed, expect)
        dirty = packed.copy()
        dirty[:, -1, :, :, -1] = 9                       # garbage in padding lanes is never read
        back = np.zeros(x.shape, x.dtype)
        dirty_expect = numpy_path(nc1hwc2_to_nchw, dirty, c, w)
        assert K.lanes_to_planes(back, dirty)
        _same_bits(back, dirty_expect)
        if x.dtype == np.float32:                        # the converting variants: float16, int8 quantisation
            half = np.full(packed.shape, 5, np.float16)
            assert K.planes_to_lanes(half, x)
            with np.errstate(over="ignore"):
                _same_bits(half, numpy_path(nchw_to_nc1hwc2, x.astype(np.float16), c2, c1, ws))
            planes = np.empty(x.shape, np.float32)
            assert K.lanes_to_planes(planes, half)
            _same_bits(planes, numpy_path(nc1hwc2_to_nchw, half, c, w).astype(np.float32))
            inv, zp = np.float32(1 / 0.7), np.float32(-3)
            codes = np.full(packed.shape, 5, np.int8)
            assert K.planes_to_lanes(codes, x, quant=(inv, zp))
            t = np.clip(np.rint(x * inv + zp), -128, 127).astype(np.int8)
            _same_bits(codes, numpy_path(nchw_to_nc1hwc2, t, c2, c1, ws))
            deq = np.empty(x.shape, np.float32)
            assert K.lanes_to_planes(deq, codes, quant=(np.float32(0.7), np.float32(-3 * 0.7)))
            ref = np.empty(x.shape, np.float32)
            np.multiply(numpy_path(nc1hwc2_to_nchw, codes, c, w), np.float32(0.7), out=ref)
            np.subtract(ref, np.float32(-3 * 0.7), out=ref)
            _same_bits(deq, ref)
    K.set_level("")


def _nhwc_input_attr(n: int, h: int, w: int, c: int, w_stride: int, out: str):
    """An NHWC native input attr of type `out` (float32 / float16 / int8 with scale 0.021, zp -7), rows `w_stride`."""
    from npurt.model.attrs import QntType, TensorAttr
    from npurt.tensor import DType, Layout
    dtype = {"float32": DType.FLOAT32, "float16": DType.FLOAT16, "int8": DType.INT8}[out]
    quant = out == "int8"
    return TensorAttr(index=0, name="x", n_dims=4, dims=[n, h, w, c], n_elems=n * h * w * c,
                      size=dtype.nbytes(n * h * w * c), fmt=Layout.NHWC, type=dtype, w_stride=w_stride,
                      qnt_type=QntType.AFFINE_ASYMMETRIC if quant else QntType.NONE, scale=0.021 if quant else 1.0,
                      zp=-7 if quant else 0, size_with_stride=dtype.nbytes(n * h * w_stride * c))


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 2), h=st.integers(1, 9), w=st.integers(1, 40), c=st.integers(1, 4),
       pad_in=st.integers(0, 5), pad_out=st.integers(0, 5), seed=st.integers(0, 2**32 - 1),
       out=st.sampled_from(["float32", "float16", "int8"]))
def test_image_input_pass_matches_numpy(n, h, w, c, pad_in, pad_out, seed, out):
    from npurt.runtime.user_io import pack_input
    rng = np.random.default_rng(seed)
    frame = rng.integers(0, 256, (n, h, w + pad_in, c), dtype=np.uint8)[:, :, :w, :]
    mean, std = list(rng.uniform(0, 255, c)), list(rng.uniform(0.5, 80, c))
    attr = _nhwc_input_attr(n, h, w, c, w + pad_out, out)
    got, ref = (np.full(attr.size_with_stride, 7, np.uint8) for _ in range(2))
    pack_input(attr, frame, got, mean, std, layout="nhwc")
    numpy_path(pack_input, attr, frame, ref, mean, std, layout="nhwc")
    assert np.array_equal(got, ref)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 2), h=st.integers(1, 9), w=st.integers(1, 40), c=st.integers(1, 4),
       pad_out=st.integers(0, 5), seed=st.integers(0, 2**32 - 1), normalise=st.booleans(),
       layout=st.sampled_from(["nchw", "nhwc"]), out=st.sampled_from(["float32", "float16", "int8"]))
def test_float_input_pack_matches_numpy(n, h, w, c, pad_out, seed, normalise, layout, out):
    """float32 user inputs (NCHW, or NHWC) into an NHWC native input: the compiled transposing store (cast or
    quantised) gives numpy's bytes, with and without mean / std."""
    from npurt.runtime.user_io import pack_input
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, c, h, w)) * 3).astype(np.float32)
    x.flat[::11] = 127.5 * 0.021                       # values on a rounding tie after quantisation
    mean, std = (list(rng.uniform(-1, 1, c)), list(rng.uniform(0.5, 2, c))) if normalise else (None, None)
    attr = _nhwc_input_attr(n, h, w, c, w + pad_out, out)
    user = x if layout == "nchw" else np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    got, ref = (np.full(attr.size_with_stride, 7, np.uint8) for _ in range(2))
    pack_input(attr, user, got, mean, std, layout=layout)
    numpy_path(pack_input, attr, user, ref, mean, std, layout=layout)
    assert np.array_equal(got, ref)
    assert np.array_equal(user, x if layout == "nchw" else x.transpose(0, 2, 3, 1))     # the user's array untouched


@pytest.mark.parametrize("op", sorted(K.BINARY_F16))
def test_float16_binary_ops_match_numpy(level, op):
    """Add / Sub / Mul of float16 slots in float32, stored as float16: numpy's bytes, overflow, Inf and NaN included."""
    rng = np.random.default_rng(11)
    a = (rng.standard_normal(10007) * 300).astype(np.float16)
    b = (rng.standard_normal(10007) * 300).astype(np.float16)
    a[::97], b[::89], a[::1001], a[5], b[5] = np.inf, -np.inf, np.nan, 65504, 65504
    got, want = np.empty_like(a), np.empty_like(a)
    K.binary_f16_fn(op, got, a, b)()
    with np.errstate(all="ignore"):
        {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}[op](a, b, out=want, dtype=np.float32, casting="unsafe")
    _same_bits(got, want)


ZOO = {
    "mobilenet_v2_like": lambda: zoo.mobilenet_v2_like(size=64),
    "mobilenet_v1": lambda: zoo.mobilenet_v1(size=64, num_classes=10),
    "yolov8n_like": lambda: zoo.yolov8n_like(size=64),
    "yolo_head": lambda: zoo.yolo_head(size=64),
    "small_convnet": lambda: zoo.small_convnet(),
    "transformer_block": lambda: zoo.transformer_block(seq=16, dim=32, heads=2),
}


@pytest.mark.parametrize("precision", ["fp16", "int8"])
@pytest.mark.parametrize("name", sorted(ZOO))
def test_executor_writes_the_same_bytes_with_and_without_the_kernels(name, precision):
    from npurt.exec.executor import Executor, allocate
    from npurt.runtime.user_io import pack_input
    rng = np.random.default_rng(3)
    model = ZOO[name]()
    shape = tuple(d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim)
    calib = [rng.standard_normal(shape).astype(np.float32) for _ in range(2)] if precision == "int8" else None
    cm = npurt.compile(model, soc="rk3588", quantize=calib, progress=False)
    x = rng.standard_normal(shape).astype(np.float32)
    for inplace_steps in (True, False):
        stored = []
        for compiled in (True, False):
            before = K.set_enabled(compiled)
            try:
                w, a, i, o = allocate(cm)
                ex = Executor(cm, inplace=inplace_steps)
                ex.bind(w, a, i, o)
                pack_input(cm.native_input_attrs[0], x, i[0])
                ex.run()
                stored.append({t: ex.tensor_view(t).copy() for t in list(cm.plan.offsets) + list(cm.graph.outputs)})
            finally:
                K.set_enabled(before)
        for t in stored[0]:
            _same_bits(stored[0][t], stored[1][t])


def test_npurt_native_0_runs_the_numpy_path():
    code = "import npurt._kernels as k; print(k.available(), k.enabled())"
    env = dict(os.environ, NPURT_NATIVE="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "False"]


def test_kernels_decline_what_they_do_not_handle():
    x = np.zeros((2, 3), np.float64)
    assert not K.cast(np.zeros((2, 3), np.float16), x)                  # float64 is numpy's
    assert not K.quantize(np.zeros(4, np.int8), np.zeros(8, np.float32)[::2], 1.0, 0.0)   # strided
    assert not K.planes_to_lanes(np.zeros((1, 1, 2, 2, 8), np.float32), np.zeros((1, 9, 2, 2), np.float32))
    ro = np.zeros((1, 1, 2, 2, 8), np.int8)
    ro.flags.writeable = False
    assert not K.planes_to_lanes(ro, np.zeros((1, 8, 2, 2), np.int8))


def test_threaded_slot_conversions_give_the_same_bytes(monkeypatch):
    """The generic path's slot reads/writes split C1 blocks over $NPURT_EXEC_THREADS threads (the GIL is released in
    the kernels): same bytes as one thread and as numpy."""
    from npurt.exec.executor import Executor, allocate
    from npurt.model.zoo import mobilenet_v2_like
    from npurt.runtime.user_io import pack_input
    cm = npurt.compile(mobilenet_v2_like(size=96), precision="fp16")
    x = np.random.default_rng(1).normal(size=(1, 3, 96, 96)).astype(np.float32)
    results = []
    for threads, compiled in (("3", True), ("1", True), ("1", False)):
        monkeypatch.setenv("NPURT_EXEC_THREADS", threads)
        before = K.set_enabled(compiled)
        try:
            w, a, i, o = allocate(cm)
            ex = Executor(cm, inplace=False)
            ex.bind(w, a, i, o)
            pack_input(cm.native_input_attrs[0], x, i[0])
            ex.run()
            results.append(np.concatenate([a, *o]))
        finally:
            K.set_enabled(before)
    assert np.array_equal(results[0], results[1]) and np.array_equal(results[1], results[2])


@pytest.mark.parametrize("pair", [(np.int8, np.int8), (np.float16, np.float16), (np.float16, np.float32),
                                  (np.float32, np.float16), (np.int8, np.float32), (np.float32, np.float32)])
@pytest.mark.parametrize("channels", [1, 3, 5])
def test_narrow_pixel_rows_match_copyto(pair, channels, level):
    """A few channels per pixel into wider lane groups (a 3-channel image into a padded 4-lane buffer): the
    narrow-row path of `cast` stores numpy's bits, with the other lanes untouched."""
    rng = np.random.default_rng(channels)
    src_t, dst_t = pair
    x = (rng.standard_normal((7, 2050, channels)) * 50).astype(src_t)
    base = np.full((9, 2053, channels + 1), 3, dst_t)
    dst = base[1:8, 2:2052, :channels]
    ref = base.copy()
    np.copyto(ref[1:8, 2:2052, :channels], x, casting="unsafe")
    assert K.cast(dst, x)
    _same_bits(base, ref)


@pytest.mark.parametrize("size", [1, 31, 64, 1000, 4099])
def test_byte_table_lookup_matches_take(size, level):
    """Byte tables over byte indices (int8 unary ops, requantisation) at every level: np.take's bytes; the lane form
    zeroes the bytes past the used lanes of each 16-byte group."""
    rng = np.random.default_rng(size)
    table = rng.integers(0, 256, 256).astype(np.uint8)
    a = rng.integers(0, 256, size * 16).astype(np.uint8)
    out = np.full(a.shape, 7, np.uint8)
    assert K.lookup(out, table, a)
    assert np.array_equal(out, np.take(table, a))
    for used in (0, 3, 15, 16):
        lanes = np.full((size, 16), 7, np.uint8)
        K.lookup_fn(lanes, table, a.reshape(size, 16), lanes=(16, used))()
        expect = np.take(table, a).reshape(size, 16)
        expect[:, used:] = 0
        assert np.array_equal(lanes, expect)


def test_max_pool_refuses_what_it_cannot_compute():
    """A window wholly in the padding, mixed dtypes or a bad plane range: declined (None) or -1 from the C face, with
    nothing written."""
    x = np.arange(2 * 4 * 4 * 8, dtype=np.float16).reshape(2, 4, 4, 8)
    out = np.full((2, 3, 3, 8), 7, np.float16)
    assert K.max_pool(x, out, (1, 1), (2, 2), (1, 1), (2, 0)) is None          # the first row's window is all pad
    assert K.max_pool(x, out.astype(np.float32), (2, 2), (1, 1), (1, 1), (0, 0)) is None
    run = K.max_pool(x, out, (2, 2), (1, 1), (1, 1), (0, 0))
    p = run.arrays[-1]
    assert K.lib.npk_max_pool(p, 0, 3) == -1 and K.lib.npk_max_pool(p, 1, 0) == -1
    assert K.lib.npk_max_pool(K.ffi.NULL, 0, 1) == -1
    assert np.all(out == 7)
    run()
    assert np.array_equal(out, np.maximum.reduce([x[:, i:i + 3, j:j + 3] for i in (0, 1) for j in (0, 1)]))


def _threaded_pool(monkeypatch, seed: int):
    """A 4-way threaded max pool over random float16 planes, with its numpy answer."""
    monkeypatch.setenv("NPURT_EXEC_THREADS", "4")
    x = np.random.default_rng(seed).standard_normal((8, 16, 16, 8)).astype(np.float16)
    out = np.zeros((8, 8, 8, 8), np.float16)
    run = K.max_pool(x, out, (2, 2), (2, 2), (1, 1), (0, 0))
    want = np.maximum.reduce([x[:, i::2, j::2] for i in (0, 1) for j in (0, 1)])
    return run, out, want


def test_parts_on_worker_threads_concurrent_callers_and_fork(monkeypatch):
    """Parts run on the persistent workers give the serial bytes; callers in several Python threads at once (one
    gets the workers, the others run their parts themselves) and a forked child (which has no workers until it
    starts its own) do too; bad arguments are refused."""
    import threading
    run, out, want = _threaded_pool(monkeypatch, 1)
    assert len(run.parts[0]) == 4
    run()
    assert np.array_equal(out, want)
    results = []

    def caller(seed: int) -> None:
        r, o, w = _threaded_pool(monkeypatch, seed)
        for _ in range(50):
            o[:] = 0
            r()
            results.append(np.array_equal(o, w))
    threads = [threading.Thread(target=caller, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 150 and all(results)
    pid = os.fork()
    if pid == 0:                                        # the child: threaded parts again, then report by exit code
        out[:] = 0
        run()
        os._exit(0 if np.array_equal(out, want) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    structs, bounds = run.parts[1], run.parts[2]
    assert K.lib.npk_run_parts(3, K.ffi.NULL, bounds, 4, 4) == -1
    assert K.lib.npk_run_parts(3, structs, bounds, 0, 4) == -1
    assert K.lib.npk_run_parts(9, structs, bounds, 4, 4) == -1
    assert K.lib.npk_run_parts(3, structs, bounds, 4, 0) == -1
    assert K.lib.npk_run_parts(3, structs, bounds, 4, 65) == -1
    out[:] = 0
    assert K.lib.npk_run_parts(3, structs, bounds, 4, 2) == 0            # four parts on two threads
    assert np.array_equal(out, want)


def test_copies_lookups_and_elementwise_calls_split_over_threads(monkeypatch):
    """With $NPURT_EXEC_THREADS = 3 a prepared copy (strided, casting), table lookup (plain and by lanes), float16 /
    int8 elementwise call or layout conversion (by C1 blocks, padding included) of at least SPLIT_BYTES runs as
    parts on the worker threads and stores the serial bytes; a small one stays one call."""
    rng = np.random.default_rng(8)
    src = rng.standard_normal((5, 70, 90, 8)).astype(np.float16)
    a16, b16 = (rng.standard_normal(50_001).astype(np.float16) for _ in range(2))
    a8, b8 = (rng.integers(-128, 128, 70_001).astype(np.int8) for _ in range(2))
    idx = rng.integers(0, 256, (3000, 16)).astype(np.uint8)
    table = rng.integers(0, 256, 256).astype(np.uint8)
    lanes = rng.integers(-128, 128, (1, 5, 40, 41, 16)).astype(np.int8)
    planes = rng.standard_normal((1, 77, 40, 40)).astype(np.float32)

    def outputs() -> list:
        dst = np.zeros((5, 72, 92, 8), np.float32)
        o16, o8 = np.zeros(50_001, np.float16), np.zeros(70_001, np.int8)
        t1, t2 = np.zeros((3000, 16), np.uint8), np.zeros((3000, 16), np.uint8)
        unpacked, packed = np.zeros((1, 77, 40, 40), np.float32), np.ones((1, 10, 40, 48, 8), np.float16)
        calls = [K.cast_fn(dst[:, 1:71, 1:91], src), K.binary_f16_fn("Add", o16, a16, b16, "Clip", (-0.5, 0.75)),
                 K.binary_i8_fn("Mul", o8, a8, b8, (0.05, 0.1), (0.02, -0.3), (12.5, 3.0)),
                 K.lookup_fn(t1, table, idx), K.lookup_fn(t2, table, idx, lanes=(16, 11)),
                 K.lanes_to_planes_fn(unpacked, lanes, (0.03, -0.6)), K.planes_to_lanes_fn(packed, planes)]
        for run in calls:
            run()
        return [calls, dst, o16, o8, t1, t2, unpacked, packed]
    serial = outputs()
    monkeypatch.setenv("NPURT_EXEC_THREADS", "3")
    split = outputs()
    assert all(len(run.parts[0]) == 3 for run in split[0]) and not any(hasattr(run, "parts") for run in serial[0])
    for got, want in zip(split[1:], serial[1:]):
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8))
    small = np.zeros(100, np.float16)
    assert not hasattr(K.binary_f16_fn("Add", small, a16[:100], b16[:100]), "parts")
