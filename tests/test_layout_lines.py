"""The whole-line layout kernels (16-byte pixel groups <-> planes, a 64-byte line of every plane per step: int8
C2 = 16, float16 C2 = 8) give numpy's bytes at every instruction set, both directions: rows of several steps plus
a tail, whole planes in one run (contiguous) and padded rows (w_stride), a partly used last C1 block, batch > 1."""
from __future__ import annotations

import numpy as np
import pytest
from helpers.models import numpy_path

import npurt._kernels as K
from npurt.tensor import nc1hwc2_to_nchw, nchw_to_nc1hwc2

LEVELS = K.LEVELS[:K.LEVELS.index(K.cpu_level()) + 1] if K.available() else ()




@pytest.fixture
def restore_level():
    yield
    K.set_level(K.cpu_level())


@pytest.mark.skipif(not K.available(), reason="compiled kernels not built")
@pytest.mark.parametrize("dtype, c2", [(np.int8, 16), (np.float16, 8)])
@pytest.mark.parametrize("n, c, h, w, pad_w", [(1, 32, 3, 130, 0), (2, 40, 2, 97, 5), (1, 16, 1, 64, 0),
                                               (1, 48, 5, 7, 0), (1, 16, 2, 200, 3)])
def test_line_kernels_match_numpy(restore_level, dtype, c2, n, c, h, w, pad_w):
    rng = np.random.default_rng(n * 1000 + c * 10 + w)
    x = rng.integers(-128, 128, size=(n, c, h, w)).astype(dtype)
    if dtype == np.float16:
        x = (rng.standard_normal((n, c, h, w)) * 100).astype(dtype)
    c1, ws = -(-c // c2), w + pad_w
    expect = numpy_path(nchw_to_nc1hwc2, x, c2, c1, ws)
    for level in LEVELS:
        K.set_level(level)
        packed = np.full((n, c1, h, ws, c2), 5, x.dtype)
        assert K.planes_to_lanes(packed, x)
        assert np.array_equal(packed.view(np.uint8), expect.view(np.uint8)), level
        back = np.full(x.shape, 7, x.dtype)
        assert K.lanes_to_planes(back, packed)
        assert np.array_equal(back.view(np.uint8), numpy_path(nc1hwc2_to_nchw, packed, c, w).view(np.uint8)), level
        assert np.array_equal(back.view(np.uint8), x.view(np.uint8)), level


def _at(offset: int, shape: tuple[int, ...], dtype) -> np.ndarray:
    """A C-contiguous array of `shape` starting `offset` bytes past a 64-byte boundary."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.zeros(nbytes + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    return raw[start:start + nbytes].view(dtype).reshape(shape)


@pytest.mark.skipif(not K.available(), reason="compiled kernels not built")
@pytest.mark.parametrize("dtype, c2", [(np.int8, 16), (np.float16, 8)])
@pytest.mark.parametrize("items", [1, 8, 24])
def test_line_kernels_any_alignment(restore_level, dtype, c2, items):
    """Arrays `items` elements off a 64-byte boundary (a head of pixels aligns the stores' side when it can)."""
    offset = items * np.dtype(dtype).itemsize
    rng = np.random.default_rng(offset)
    n, c, h, w = 1, 32, 3, 150
    x = _at(offset, (n, c, h, w), dtype)
    x[...] = rng.integers(-100, 100, size=x.shape)
    expect = numpy_path(nchw_to_nc1hwc2, x, c2)
    for level in LEVELS:
        K.set_level(level)
        packed = _at(offset, expect.shape, dtype)
        assert K.planes_to_lanes(packed, x)
        assert np.array_equal(packed.view(np.uint8), expect.view(np.uint8)), level
        back = _at(offset, x.shape, dtype)
        assert K.lanes_to_planes(back, packed)
        assert np.array_equal(back.view(np.uint8), x.view(np.uint8)), level


@pytest.mark.skipif(not K.available(), reason="compiled kernels not built")
@pytest.mark.parametrize("dtype", [np.int8, np.float16])
@pytest.mark.parametrize("n, c, h, w, pad_w", [(1, 256, 2, 70, 0), (2, 48, 3, 97, 5), (1, 32, 1, 130, 0),
                                               (1, 24, 2, 80, 0)])
def test_nhwc_rows_as_slices_match_numpy(restore_level, dtype, n, c, h, w, pad_w):
    """NCHW <-> NHWC: pixel rows of C channels as C * e / 16 slices of 16 bytes (C = 24 int8: not whole slices,
    the plain transpose), padded NHWC rows included."""
    from npurt.tensor import nchw_to_nhwc, nhwc_to_nchw
    rng = np.random.default_rng(c * 100 + w)
    x = rng.integers(-100, 100, size=(n, c, h, w)).astype(dtype)
    ws = w + pad_w
    expect = numpy_path(nchw_to_nhwc, x, w_stride=ws)
    for level in LEVELS:
        K.set_level(level)
        nhwc = np.full((n, h, ws, c), 5, x.dtype)
        nchw_to_nhwc(x, w_stride=ws, out=nhwc)
        assert np.array_equal(nhwc.view(np.uint8), expect.view(np.uint8)), level
        back = np.full(x.shape, 7, x.dtype)
        nhwc_to_nchw(nhwc, width=w, out=back)
        assert np.array_equal(back.view(np.uint8), x.view(np.uint8)), level


@pytest.mark.skipif(not K.available(), reason="compiled kernels not built")
@pytest.mark.parametrize("dtype, c2, shape", [(np.int8, 16, (1, 256, 130, 256)), (np.float16, 8, (1, 64, 256, 257)),
                                              (np.float16, 8, (1, 66, 259, 260))])
def test_outputs_beyond_the_caches_stream_the_same_bytes(restore_level, dtype, c2, shape):
    """Conversions writing 8 MiB or more stream their lines (non-temporal stores) at AVX-512 where every line is
    aligned (planes a multiple of 64 bytes apart) and store them normally where not: the bytes of the numpy path,
    both directions, a partly used last block included."""
    rng = np.random.default_rng(3)
    x = rng.integers(-128, 128, size=shape).astype(dtype)
    assert x.nbytes >= 8 << 20
    c1 = -(-shape[1] // c2)
    expect = numpy_path(nchw_to_nc1hwc2, x, c2, c1, shape[3])
    for level in LEVELS:
        K.set_level(level)
        packed = np.full((1, c1) + shape[2:] + (c2,), 5, x.dtype)
        assert K.planes_to_lanes(packed, x)
        assert np.array_equal(packed.view(np.uint8), expect.view(np.uint8)), level
        back = np.full(x.shape, 7, x.dtype)
        assert K.lanes_to_planes(back, packed)
        assert np.array_equal(back.view(np.uint8), x.view(np.uint8)), level
