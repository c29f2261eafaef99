"""The OpenBLAS thread-count helpers used to pin the kernels' sgemm threads."""
from __future__ import annotations

import numpy as np
import pytest

from npurt.exec.kernels.blas import blas_threads, get_blas_threads, set_blas_threads


def test_blas_threads_set_and_restore():
    before = get_blas_threads()
    if before is None:
        pytest.skip("numpy is not linked against OpenBLAS")
    with blas_threads(1):
        assert get_blas_threads() == 1
        a = np.ones((64, 64), np.float32)
        assert float((a @ a)[0, 0]) == 64.0
    assert get_blas_threads() == before
    assert set_blas_threads(before) == before


def test_compile_is_the_same_whatever_blas_threads_the_process_has():
    """Calibration sums floats through OpenBLAS, whose results change with its thread count: the compiler pins the
    executor's count, so a CLI process (OpenBLAS's default) and a long-lived one compile the same bytes."""
    import npurt
    samples = [np.random.default_rng(k).random((1, 3, 32, 32), dtype=np.float32) for k in range(2)]
    blobs = []
    for n in (2, 1):
        with blas_threads(n):
            blobs.append(npurt.compile("small_convnet", quantize=samples, progress=False).weight_blob)
            assert get_blas_threads() in (None, n)          # restored after the compile
    assert np.array_equal(*blobs)
