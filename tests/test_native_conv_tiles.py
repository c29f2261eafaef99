"""The int8 conv's register tiles on every instruction set: each output channel count (16, 32, 48, 64, 80 -> 1 x 12,
2 x 12, 3 x 8, 4 x 6, 4 + 1 x 6 blocks x pixels) on rows long enough for whole tiles within a row (the one-pointer
tiles, pixels 8, 16 or 32 bytes apart) and tiles across rows, stride 1 and 2, 4 to 16 lanes: exact int32 sums, and
the fused int8 store."""
from __future__ import annotations

import numpy as np
import pytest

import npurt._kernels as K
from npurt.exec.inplace import conv_int8


@pytest.mark.parametrize("n", [16, 32, 48, 64, 80])
@pytest.mark.parametrize("stride, width, cc", [(1, 31, 16), (2, 29, 16), (1, 5, 16), (2, 33, 4), (1, 30, 8)])
def test_tiles_sum_exactly(level, n, stride, width, cc):
    rng = np.random.default_rng(n + width)
    c1, kernel = 2, (3, 3)
    hp = 7
    x = rng.integers(-128, 128, (c1, hp, width, cc), dtype=np.int8)
    w = rng.integers(-128, 128, (9 * c1 * cc, n), dtype=np.int8)
    out_hw = ((hp - 3) // stride + 1, (width - 3) // stride + 1)
    colsum = w.astype(np.int64).sum(axis=0).astype(np.int32)
    cols = conv_int8.columns(x, kernel, (stride, stride), (1, 1), out_hw).astype(np.int64)
    want = cols @ w.astype(np.int64) - 5 * colsum.astype(np.int64)
    y = np.empty((out_hw[0] * out_hw[1], n), np.float32)
    K.int8_conv(x, w, colsum, 5, np.ones(n, np.float32), np.zeros(n, np.float32), kernel, (stride, stride), (1, 1),
                out_hw, y=y, wide=lambda k: np.empty(k, np.int16))()
    np.testing.assert_array_equal(y, want.astype(np.float32))
    mult = np.full(n, 3e-4, np.float32)
    bias = rng.uniform(-5, 5, n).astype(np.float32)
    out = np.empty((n // 16,) + out_hw + (16,), np.int8)
    K.int8_conv(x, w, colsum, 5, mult, bias, kernel, (stride, stride), (1, 1), out_hw, out=out, bounds=(-20.0, 127.0),
                wide=lambda k: np.empty(k, np.int16))()
    f = conv_int8.requantize(want + 5 * colsum.astype(np.int64), colsum, 5, mult, bias)
    f = np.rint(np.clip(f, np.float32(-20), np.float32(127))).astype(np.int8)
    np.testing.assert_array_equal(out, f.reshape(out_hw + (n // 16, 16)).transpose(2, 0, 1, 3))
