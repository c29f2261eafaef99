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
