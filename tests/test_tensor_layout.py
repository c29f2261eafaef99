"""Layout conversions against a per-element reference written from the seed's NC1HWC2 index formula."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import npurt._kernels as native_kernels
from npurt.errors import ErrorCode, NpuError
from npurt.soc import get_profile
from npurt.tensor import (Layout, native_shape, nc1hwc2_to_nchw, nc1hwc2_to_nhwc, nchw_to_nc1hwc2, nchw_to_nhwc,
                          nhwc_to_nc1hwc2, nhwc_to_nchw, size_with_stride, w_stride)

from helpers.data import nc1hwc2_examples

DTYPES = [np.int8, np.uint8, np.float16, np.float32, np.int16, np.bool_, ml_dtypes.bfloat16, np.int64]


@pytest.fixture(autouse=True, params=["compiled", "numpy"])
def conversion_path(request):
    """Every test here runs twice: with the compiled kernels doing the conversions and with the numpy code alone."""
    before = native_kernels.set_enabled(request.param == "compiled")
    yield request.param
    native_kernels.set_enabled(before)


# ---- reference: flat offsets from the RKNN runtime guide's layouts section, loops over n, c, h, w -----------------------------------

def ref_pack(x: np.ndarray, c2: int, c1: int, ws: int) -> np.ndarray:
    """NCHW -> flat NC1HWC2 buffer, element by element; untouched lanes stay zero."""
    n_, c_, h_, w_ = x.shape
    flat = np.zeros(n_ * c1 * h_ * ws * c2, dtype=x.dtype)
    for n in range(n_):
        for c in range(c_):
            for h in range(h_):
                for w in range(w_):
                    off = n * (c1 * h_ * ws * c2) + (c // c2) * (h_ * ws * c2) + (h * ws + w) * c2 + c % c2
                    flat[off] = x[n, c, h, w]
    return flat.reshape(n_, c1, h_, ws, c2)


def ref_unpack(y: np.ndarray, channels: int, width: int) -> np.ndarray:
    """Flat NC1HWC2 buffer -> NCHW, element by element."""
    n_, c1, h_, ws, c2 = y.shape
    flat = y.reshape(-1)
    x = np.empty((n_, channels, h_, width), dtype=y.dtype)
    for n in range(n_):
        for c in range(channels):
            for h in range(h_):
                for w in range(width):
                    x[n, c, h, w] = flat[n * (c1 * h_ * ws * c2) + (c // c2) * (h_ * ws * c2) + (h * ws + w) * c2
                                         + c % c2]
    return x


def rand(shape, dtype, rng) -> np.ndarray:
    if np.dtype(dtype) == np.bool_:
        return rng.integers(0, 2, size=shape).astype(bool)
    if np.dtype(dtype).kind in "fV":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)


case = st.fixed_dictionaries({
    "n": st.integers(1, 3), "c": st.integers(1, 40), "h": st.integers(1, 5), "w": st.integers(1, 7),
    "c2": st.sampled_from([4, 8, 16]), "extra_c1": st.sampled_from([0, 0, 1, 2]),
    "pad_w": st.sampled_from([0, 0, 1, 9]), "dtype": st.sampled_from(DTYPES), "seed": st.integers(0, 2**32 - 1),
})


def packed_case(p):
    """A drawn `case` made concrete: (rng, x (n, c, h, w), c2, c1, w_stride, ref_pack(x)); rng has drawn x."""
    rng = np.random.default_rng(p["seed"])
    c, w, c2 = p["c"], p["w"], p["c2"]
    c1 = -(-c // c2) + p["extra_c1"]
    ws = w + p["pad_w"]
    x = rand((p["n"], c, p["h"], w), p["dtype"], rng)
    return rng, x, c2, c1, ws, ref_pack(x, c2, c1, ws)


@settings(max_examples=120, deadline=None)
@given(case)
def test_nc1hwc2_round_trip_matches_reference(p):
    rng, x, c2, c1, ws, expect = packed_case(p)
    n, c, h, w = x.shape

    y = nchw_to_nc1hwc2(x, c2, c1=c1, w_stride=ws)
    assert y.shape == (n, c1, h, ws, c2) == native_shape(x.shape, c2, c1, ws)
    assert y.dtype == x.dtype
    np.testing.assert_array_equal(y, expect)

    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(nhwc_to_nc1hwc2(nhwc, c2, c1=c1, w_stride=ws), expect)

    # unpack ignores garbage in the padding lanes
    dirty = expect.copy()
    mask = ref_pack(np.ones_like(x), c2, c1, ws) == 0
    dirty[mask] = rand(dirty.shape, p["dtype"], rng)[mask]
    back = nc1hwc2_to_nchw(dirty, c, width=w)
    np.testing.assert_array_equal(back, x)
    np.testing.assert_array_equal(back, ref_unpack(dirty, c, w))
    np.testing.assert_array_equal(nc1hwc2_to_nhwc(dirty, c, width=w), nhwc)


@settings(max_examples=60, deadline=None)
@given(case)
def test_out_paths_overwrite_garbage(p):
    rng, x, c2, c1, ws, expect = packed_case(p)
    _, c, _, w = x.shape
    out = rand(expect.shape, p["dtype"], rng)
    assert nchw_to_nc1hwc2(x, c2, c1, ws, out=out) is out
    np.testing.assert_array_equal(out, expect)
    out = rand(expect.shape, p["dtype"], rng)
    nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
    assert nhwc_to_nc1hwc2(nhwc, c2, c1, ws, out=out) is out
    np.testing.assert_array_equal(out, expect)
    back = rand(x.shape, p["dtype"], rng)
    assert nc1hwc2_to_nchw(expect, c, w, out=back) is back
    np.testing.assert_array_equal(back, x)
    back = rand(nhwc.shape, p["dtype"], rng)
    assert nc1hwc2_to_nhwc(expect, c, w, out=back) is back
    np.testing.assert_array_equal(back, nhwc)


@settings(max_examples=60, deadline=None)
@given(case)
def test_nchw_nhwc_with_padded_rows(p):
    rng = np.random.default_rng(p["seed"])
    n, c, h, w = p["n"], p["c"], p["h"], p["w"]
    ws = w + p["pad_w"]
    x = rand((n, c, h, w), p["dtype"], rng)
    padded = np.zeros((n, h, ws, c), dtype=x.dtype)
    padded[:, :, :w, :] = x.transpose(0, 2, 3, 1)
    out = rand(padded.shape, p["dtype"], rng)
    np.testing.assert_array_equal(nchw_to_nhwc(x, w_stride=ws, out=out), padded)
    np.testing.assert_array_equal(nchw_to_nhwc(x, w_stride=ws), padded)
    np.testing.assert_array_equal(nhwc_to_nchw(padded, width=w), x)
    # padded NHWC rows (the zero-copy input) -> NC1HWC2 and back to padded NHWC
    c2 = p["c2"]
    y = nhwc_to_nc1hwc2(padded, c2, width=w)
    np.testing.assert_array_equal(y, ref_pack(x, c2, -(-c // c2), w))
    np.testing.assert_array_equal(nc1hwc2_to_nhwc(y, c, w_stride=ws), padded)


@pytest.mark.parametrize("example", nc1hwc2_examples(), ids=lambda e: "x".join(map(str, e["shape"])))
def test_seed_example_rk3568(example):
    """(1,13,4,4) and (1,13,2,2) int8 on RK3568 -> (1,2,h,w,8); lanes 5..7 of block C1=1 are padding."""
    c2 = get_profile(example["soc"]).c2_for(example["dtype"])
    assert c2 == example["c2"]
    shape, valid = tuple(example["shape"]), example["valid_lanes_in_last_block"]
    x = np.arange(1, np.prod(shape) + 1).reshape(shape).astype(np.int16).astype(np.int8)
    y = nchw_to_nc1hwc2(x, c2)
    assert y.shape == tuple(example["native_shape"]) and y.shape[1] == example["c1"]
    assert (y[0, -1, :, :, valid:] == 0).all()
    np.testing.assert_array_equal(y[0, -1, :, :, :valid], x[0, (example["c1"] - 1) * c2:].transpose(1, 2, 0))
    assert y.reshape(-1)[:8].tolist() == x[0, :8, 0, 0].tolist()


def test_batch_gt_1_uses_the_right_offsets():
    # the seed's C sample accumulates `src += i * ...`: batch 2 would read batch 1 at offset 1, batch 2 at 3
    x = np.arange(3 * 5 * 2 * 2, dtype=np.float32).reshape(3, 5, 2, 2)
    y = nchw_to_nc1hwc2(x, 4)
    for n in range(3):
        np.testing.assert_array_equal(y[n], nchw_to_nc1hwc2(x[n:n + 1], 4)[0])
    np.testing.assert_array_equal(nc1hwc2_to_nchw(y, 5), x)


def test_large_tensor_fast_paths():
    rng = np.random.default_rng(1)
    for dtype, c2 in ((np.int8, 16), (np.int8, 8), (np.float16, 8), (np.float16, 4), (np.float32, 4), (np.int8, 3)):
        for c in (64, 70):
            x = rand((2, c, 37, 45), dtype, rng)
            y = nchw_to_nc1hwc2(x, c2, w_stride=48)
            np.testing.assert_array_equal(y[:, :, :, :45].transpose(0, 1, 4, 2, 3).reshape(2, -1, 37, 45)[:, :c], x)
            assert not y[:, :, :, 45:].any()
            np.testing.assert_array_equal(nc1hwc2_to_nchw(y, c, 45), x)
            nhwc = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
            np.testing.assert_array_equal(nhwc_to_nc1hwc2(nhwc, c2, w_stride=48), y)
            np.testing.assert_array_equal(nc1hwc2_to_nhwc(y, c, 45), nhwc)
            np.testing.assert_array_equal(nchw_to_nhwc(x), nhwc)
            np.testing.assert_array_equal(nhwc_to_nchw(nhwc), x)


def test_non_contiguous_inputs():
    rng = np.random.default_rng(2)
    base = rand((2, 20, 6, 10), np.int8, rng)
    x = base[:, ::2, :, 1::2]
    np.testing.assert_array_equal(nc1hwc2_to_nchw(nchw_to_nc1hwc2(x, 8), 10), x)
    nhwc = base.transpose(0, 2, 3, 1)
    np.testing.assert_array_equal(nhwc_to_nc1hwc2(nhwc, 16), nchw_to_nc1hwc2(base, 16))
    np.testing.assert_array_equal(nhwc_to_nchw(nhwc), base)


# ---- shapes, strides and sizes -------------------------------------------------------------------------------

def test_native_shape_rules():
    assert native_shape((1, 13, 4, 4), 8) == (1, 2, 4, 4, 8)
    assert native_shape((1, 255, 40, 40), 8, c1=34) == (1, 34, 40, 40, 8)
    assert native_shape((1, 32, 112, 112), 16) == (1, 2, 112, 112, 16)
    assert native_shape((1, 1000, 1, 1), 16, c1=64) == (1, 64, 1, 1, 16)
    assert native_shape((2, 3, 5, 5), 16, w_stride=16) == (2, 1, 5, 16, 16)
    with pytest.raises(NpuError) as e:
        native_shape((1, 255, 40, 40), 8, c1=31)
    assert e.value.code == ErrorCode.INVALID_ARGUMENT and "C1" in e.value.message
    for bad in ((1, 3, 4), (1, -3, 4, 4)):
        with pytest.raises(NpuError):
            native_shape(bad, 8)
    with pytest.raises(NpuError):
        native_shape((1, 3, 4, 4), 8, w_stride=3)


def test_w_stride_and_size_with_stride():
    assert w_stride(640, 16) == 640 and w_stride(641, 16) == 656 and w_stride(5, 8) == 8 and w_stride(0, 8) == 0
    with pytest.raises(NpuError):
        w_stride(10, 0)
    # NHWC zero-copy input: H rows of w_stride*C elements
    assert size_with_stride((1, 640, 640, 3), Layout.NHWC, "uint8", w_stride=640) == 640 * 640 * 3
    assert size_with_stride((1, 10, 30, 3), "NHWC", "uint8", w_stride=w_stride(30, 16)) == 10 * 32 * 3
    assert size_with_stride((2, 10, 30, 3), "NHWC", "float16", w_stride=32) == 2 * 10 * 32 * 3 * 2
    # NC1HWC2 observed in the facts: C1(2)*H*align(W,16)*C2(16) bytes
    assert size_with_stride((1, 2, 48, 80, 16), "NC1HWC2", "int8", w_stride=80) == 122880
    assert size_with_stride((1, 2, 12, 20, 16), "NC1HWC2", "int8", w_stride=32) == 12288
    assert size_with_stride((1, 18, 4, 4), "NCHW", "int4") == 144
    assert size_with_stride((3, 5), "UNDEFINED", "float32") == 60
    for args in (((1, 2, 3), "NHWC", "int8"), ((1, 4, 4, 3), "NHWC", "int8", 3), ((3,), "UNDEFINED", "int8", 4),
                 ((1, 4, 4, 3), "NHWC", "complex64"), ((1, 4, 4, 3), "NHWX", "int8")):
        with pytest.raises((NpuError, ValueError)):
            size_with_stride(*args)


# ---- bad input: clear errors, nothing written ----------------------------------------------------------------

def _raises_invalid(fn, *args, match: str, **kw):
    with pytest.raises(NpuError) as e:
        fn(*args, **kw)
    assert e.value.code == ErrorCode.INVALID_ARGUMENT
    assert match in str(e.value), str(e.value)


def test_bad_inputs_raise_before_writing():
    x = np.ones((1, 13, 4, 4), np.int8)
    y = nchw_to_nc1hwc2(x, 8)
    sentinel = lambda shape, dt=np.int8: np.full(shape, 7, dt)  # noqa: E731

    _raises_invalid(nchw_to_nc1hwc2, np.ones((13, 4, 4), np.int8), 8, match="4-D")
    _raises_invalid(nc1hwc2_to_nchw, x, 13, match="5-D")
    _raises_invalid(nchw_to_nhwc, np.ones((2, 2)), match="4-D")
    _raises_invalid(nchw_to_nc1hwc2, x, 8, c1=1, match="C1")
    _raises_invalid(nchw_to_nc1hwc2, x, 8, w_stride=2, match="w_stride")
    _raises_invalid(nc1hwc2_to_nchw, y, 17, match="channels")
    _raises_invalid(nc1hwc2_to_nchw, y, 13, width=5, match="width")
    _raises_invalid(nc1hwc2_to_nhwc, y, 13, w_stride=3, match="w_stride")
    _raises_invalid(nhwc_to_nchw, x, width=9, match="width")
    _raises_invalid(nchw_to_nc1hwc2, np.array([[[[object()]]]]), 8, match="object")

    cases = [
        (nchw_to_nc1hwc2, (x, 8), (1, 2, 4, 4, 8)),
        (nhwc_to_nc1hwc2, (x.transpose(0, 2, 3, 1), 8), (1, 2, 4, 4, 8)),
        (nc1hwc2_to_nchw, (y, 13), (1, 13, 4, 4)),
        (nc1hwc2_to_nhwc, (y, 13), (1, 4, 4, 13)),
        (nchw_to_nhwc, (x,), (1, 4, 4, 13)),
        (nhwc_to_nchw, (x.transpose(0, 2, 3, 1),), (1, 13, 4, 4)),
    ]
    for fn, args, shape in cases:
        wrong_shape = sentinel((1,) + shape[1:-1] + (shape[-1] + 1,))
        _raises_invalid(fn, *args, out=wrong_shape, match="shape")
        assert (wrong_shape == 7).all()
        wrong_dtype = sentinel(shape, np.uint8)
        _raises_invalid(fn, *args, out=wrong_dtype, match="dtype")
        assert (wrong_dtype == 7).all()
        strided = sentinel(shape[:-1] + (shape[-1] * 2,))[..., ::2]
        _raises_invalid(fn, *args, out=strided, match="contiguous")
        assert (strided == 7).all()
        ro = sentinel(shape)
        ro.flags.writeable = False
        _raises_invalid(fn, *args, out=ro, match="read-only")
        _raises_invalid(fn, *args, out=[0], match="numpy array")
    _raises_invalid(nchw_to_nhwc, x, out=x.reshape(1, 4, 4, 13), match="overlaps")


def test_out_in_the_same_arena_as_the_input():
    arena = np.zeros(4096, np.int8)
    x = arena[:208].reshape(1, 13, 4, 4)
    x[...] = np.arange(208).reshape(x.shape).astype(np.int8)
    out = arena[256:512].reshape(1, 2, 4, 4, 8)        # disjoint slice of one buffer: fine
    nchw_to_nc1hwc2(x, 8, out=out)
    np.testing.assert_array_equal(nc1hwc2_to_nchw(out, 13), x)
    inter = np.zeros(2 * 208, np.int8)
    xi, oi = inter[0::2].reshape(1, 13, 4, 4), inter[1::2]  # interleaved, disjoint: allowed only if contiguous
    xi[...] = x
    with pytest.raises(NpuError):                        # out= must be contiguous
        nchw_to_nhwc(xi, out=oi.reshape(1, 4, 4, 13))


# ---- kernel paths: tiny tiles (tile splitting inside and across blocks), unaligned buffers -----------------------

@pytest.fixture
def tiny_tiles(conversion_path, monkeypatch):
    """The numpy kernels with tiny tiles (the compiled ones are off: the tiles are numpy's). Set up after, and torn
    down before, `conversion_path`, which restores the kernels' state as it found it."""
    from npurt.tensor import _kernels
    native_kernels.set_enabled(False)
    monkeypatch.setattr(_kernels, "TILE_BYTES", 96)
    monkeypatch.setattr(_kernels, "GROUP_TILE_BYTES", 40)
    monkeypatch.setattr(_kernels, "PACK_LANES", 3)
    monkeypatch.setattr(_kernels, "PLAIN_TILE_BYTES", 50)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case)
def test_tiled_kernels_match_reference(tiny_tiles, p):
    test_nc1hwc2_round_trip_matches_reference.hypothesis.inner_test(p)
    test_nchw_nhwc_with_padded_rows.hypothesis.inner_test(p)


@pytest.mark.parametrize("offset", [1, 2, 3])
def test_unaligned_buffers(offset):
    rng = np.random.default_rng(offset)
    x = rand((2, 32, 3, 5), np.int8, rng)
    buf = np.zeros(x.nbytes + 8, np.uint8)
    ux = np.frombuffer(buf.data, np.int8, x.size, offset).reshape(x.shape)
    ux[...] = x
    y = nchw_to_nc1hwc2(ux, 16)
    np.testing.assert_array_equal(y, ref_pack(x, 16, 2, 5))
    ubuf = np.zeros(y.nbytes + 8, np.uint8)
    uy = np.frombuffer(ubuf.data, np.int8, y.size, offset).reshape(y.shape)
    uy[...] = y
    np.testing.assert_array_equal(nc1hwc2_to_nchw(uy, 32), x)
    np.testing.assert_array_equal(nc1hwc2_to_nhwc(uy, 32), x.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(nhwc_to_nchw(nchw_to_nhwc(ux)), x)


@pytest.mark.parametrize("shape", [(1, 8, 0, 4), (0, 8, 2, 2), (1, 0, 2, 2), (2, 16, 2, 0)])
def test_empty_tensors(shape):
    x = np.zeros(shape, np.int8)
    y = nchw_to_nc1hwc2(x, 8)
    assert y.shape == native_shape(shape, 8)
    assert nc1hwc2_to_nchw(y, shape[1]).shape == shape
    assert nc1hwc2_to_nhwc(y, shape[1]).shape == (shape[0], shape[2], shape[3], shape[1])
    assert nhwc_to_nchw(nchw_to_nhwc(x)).shape == shape


def test_array_likes_are_accepted():
    x = [[[[1, 2]], [[3, 4]]]]                     # (1, 2, 1, 2) nested lists
    np.testing.assert_array_equal(nc1hwc2_to_nchw(nchw_to_nc1hwc2(x, 4), 2), np.asarray(x))
