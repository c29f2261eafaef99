"""The compiled depthwise conv on int8 NC1HWC2 slots stores the same bytes at every instruction set (the AVX-512 path
takes 16 lanes and up to eight output pixels at a time; AVX2 eight lanes, four pixels; portable C one value): odd
widths (8 + 4 + 1 pixel remainders), strides, pads, 3x3 and 5x5 taps, int8 codes and float32 sums."""
from __future__ import annotations

import numpy as np
import pytest

import npurt._kernels as K


@pytest.mark.parametrize("c1, hw, stride, k, mode", [(2, 29, 1, 3, "int8"), (3, 23, 2, 3, "int8"),
                                                     (2, 15, 1, 5, "float32"), (1, 13, 2, 5, "int8"),
                                                     (4, 7, 1, 3, "float32")])
def test_depthwise_levels_store_the_same_bytes(c1, hw, stride, k, mode):
    rng = np.random.default_rng(c1 * 100 + hw)
    x = rng.integers(-128, 128, (c1, hw, hw, 16), dtype=np.int8)
    weights = (rng.standard_normal((k * k, c1, 16)) * 0.02).astype(np.float32)
    bias = rng.standard_normal((c1, 16)).astype(np.float32)
    pad = k // 2
    ho = (hw + 2 * pad - k) // stride + 1
    results = {}
    try:
        for level in K.LEVELS[:K.LEVELS.index(K.cpu_level()) + 1]:
            K.set_level(level)
            if mode == "int8":
                dst = np.empty((c1, ho, ho, 16), np.int8)
                run = K.depthwise(x, -5.0, weights, bias, (k, k), (stride, stride), (pad, pad), out=dst,
                                  bounds=(-100.0, 120.0))
            else:
                dst = np.empty((c1, ho, ho, 16), np.float32)
                run = K.depthwise(x, -5.0, weights, bias, (k, k), (stride, stride), (pad, pad), y=dst)
            assert run is not None
            run()
            results[level] = dst.view(np.uint8).copy()
    finally:
        K.set_level("")
    assert len(results) >= 1
    first = results["portable"]
    for level, got in results.items():
        np.testing.assert_array_equal(got, first, err_msg=level)
    if mode == "int8":
        assert first.view(np.int8).min() >= -100 and first.view(np.int8).max() <= 120
