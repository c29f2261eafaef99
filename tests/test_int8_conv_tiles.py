"""The int8 conv's pixel tiles at every instruction set: output rows wider than a tile (tiles crossing rows), odd
pixel counts (the AVX2 epilogue stores two pixels at a time), kernel rows read as one run (x dilation 1) or tap by
tap (x dilation 2), several input blocks (the AVX2 path's pixel-major int16 copy, widened in bands of rows when
the rows are long), both output forms, store the same bytes and float32 sums as the numpy path; and
`npk_int8_peak`, the bench's limit probe, counts its multiply-adds."""
from __future__ import annotations

import numpy as np
import pytest

import npurt._kernels as K
from npurt.exec.inplace import conv_int8

CASES = [  # c1, cc, (ho, wo), kernel, strides, dilations, blocks, zp
    (1, 4, (5, 13), (3, 3), (2, 2), (1, 1), 2, -128),      # a first layer: NHWC lanes, stride 2
    (3, 16, (4, 7), (3, 3), (1, 1), (1, 2), 3, 127),        # x dilation 2: tap by tap
    (2, 8, (3, 11), (1, 1), (1, 1), (1, 1), 1, 0),          # 1x1 over two blocks of 8 lanes
    (5, 16, (2, 9), (1, 1), (2, 2), (1, 1), 4, -3),         # 1x1 stride 2, K = 80
    (1, 16, (6, 17), (3, 3), (1, 1), (2, 1), 2, 41),        # y dilation 2, rows of 17 = 2 tiles + 5
    (2, 16, (1, 1), (7, 7), (2, 2), (1, 1), 1, -77),        # one pixel, a 7x7 kernel
    # rows wide enough that the AVX2 path widens the input in several bands of rows
    (8, 16, (5, 100), (3, 3), (1, 1), (2, 1), 1, 5),        # 26 KB int16 rows: one output row per band
    (4, 16, (7, 200), (1, 1), (1, 1), (1, 1), 2, -128),     # 1x1: three rows per band, the last band short
    (3, 16, (4, 120), (3, 3), (2, 2), (1, 1), 1, 127),      # stride 2: bands overlap by a row
]


@pytest.mark.parametrize("case", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_tiles_store_the_numpy_bytes(level, case):
    c1, cc, (ho, wo), kernel, strides, dilations, blocks, zp = case
    rng = np.random.default_rng(CASES.index(case))
    hp = (ho - 1) * strides[0] + (kernel[0] - 1) * dilations[0] + 1
    wp = (wo - 1) * strides[1] + (kernel[1] - 1) * dilations[1] + 1
    n = 16 * blocks
    x = rng.integers(-128, 128, (c1, hp, wp, cc), dtype=np.int8)
    w = rng.integers(-128, 128, (kernel[0] * kernel[1] * c1 * cc, n), dtype=np.int8)
    x[:, 0] = -128                      # (-128) * (-128) products in every tile's first row
    w[:cc] = -128
    colsum = w.astype(np.int64).sum(axis=0).astype(np.int32)
    geometry = (kernel, strides, dilations, (ho, wo))
    acc = conv_int8.accumulate(conv_int8.columns(x, *geometry), w)
    mult = rng.uniform(1e-5, 2e-3, n).astype(np.float32)
    bias = rng.uniform(-30, 30, n).astype(np.float32)
    want = conv_int8.requantize(acc, colsum, zp, mult, bias)

    y = np.full((ho * wo, n), np.nan, np.float32)
    run = K.int8_conv(x, w, colsum, zp, mult, bias, *geometry, y=y, wide=lambda k: np.empty(k, np.int16))
    assert run is not None
    run()
    np.testing.assert_array_equal(y, want)

    out = np.full((blocks, ho, wo, 16), 99, np.int8)
    K.int8_conv(x, w, colsum, zp, mult, bias, *geometry, out=out, bounds=(-120.0, 100.5),
                wide=lambda k: np.empty(k, np.int16))()
    codes = np.rint(np.clip(want, np.float32(-120.0), np.float32(100.5))).astype(np.int8)
    np.testing.assert_array_equal(out, codes.reshape(ho, wo, blocks, 16).transpose(2, 0, 1, 3))


def test_int8_peak_counts_its_multiply_adds():
    lib = K.lib
    if lib is None:
        pytest.skip("the compiled kernels are not built")
    avx2, vnni = K.cpu_level() != "portable", K.cpu_level() == "avx512vnni"
    assert lib.npk_int8_peak(0, 10) == (10 * 8 * 16 if avx2 else 0)       # 8 chains of 16 int16 pairs
    assert lib.npk_int8_peak(1, 10) == (10 * 8 * 32 if avx2 else 0)
    assert lib.npk_int8_peak(2, 10) == (10 * 8 * 64 if vnni else 0)
    assert lib.npk_int8_peak(3, 10) == -1 and lib.npk_int8_peak(0, -1) == -1
