"""The compiled float16 Add / Sub / Mul with a fused Relu or Clip (`_kernels.binary_f16_fn(..., act, bounds)`) stores
the numpy path's bytes: the ufunc in float32, `apply_activation` (np.maximum for Relu: a tie gives +0; np.clip for
Clip: a tie keeps the value; NaN kept either way), then the casting store."""
from __future__ import annotations

import numpy as np
import pytest

import npurt._kernels as K
from npurt.exec.inplace.elementwise import _clip_bounds
from npurt.exec.kernels import apply_activation

pytestmark = pytest.mark.skipif(not K.available(), reason="compiled kernels not built")

SPECIAL = np.array([0.0, -0.0, np.nan, np.inf, -np.inf, 6.0, -6.0, 65504.0, -65504.0, 1e-7, 3.0, -1.0], np.float16)


@pytest.mark.parametrize("op, ufunc", [("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply)])
@pytest.mark.parametrize("attrs", [{"activation": "Relu"}, {"activation": "Clip", "activation_params": (0.0, 6.0)},
                                   {"activation": "Clip", "activation_params": (None, 3.0)},
                                   {"activation": "Clip", "activation_params": (-1.0, None)},
                                   {"activation": "Clip", "activation_params": (-0.0, 0.0)}, {}])
def test_fused_activation_stores_the_numpy_bytes(op, ufunc, attrs):
    rng = np.random.default_rng(11)
    n = 3001                                         # blocks of 256 and a tail
    a = (rng.standard_normal(n) * 8).astype(np.float16)
    b = (rng.standard_normal(n) * 8).astype(np.float16)
    a[:SPECIAL.size * SPECIAL.size] = np.repeat(SPECIAL, SPECIAL.size)[:n]
    b[:SPECIAL.size * SPECIAL.size] = np.tile(SPECIAL, SPECIAL.size)[:n]
    want = np.empty(n, np.float32)
    with np.errstate(all="ignore"):
        ufunc(a, b, out=want, dtype=np.float32)
        apply_activation(want, attrs)
        want = want.astype(np.float16)
    got = np.full(n, 7, np.float16)
    run = K.binary_f16_fn(op, got, a, b, attrs.get("activation"), _clip_bounds(attrs))
    assert run is not None
    for level in K.LEVELS[:K.LEVELS.index(K.cpu_level()) + 1]:
        K.set_level(level)
        try:
            got[:] = 7
            run()
        finally:
            K.set_level("")
        np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16), err_msg=f"{level} {op} {attrs}")


def test_an_activation_the_kernel_does_not_fuse_is_declined():
    x = np.zeros(4, np.float16)
    assert K.binary_f16_fn("Add", x.copy(), x, x, "Sigmoid") is None
