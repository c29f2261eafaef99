"""Get and set the thread count of numpy's bundled OpenBLAS (the BLAS behind Conv/Gemm/MatMul).

Why: the kernels spend most of their time in sgemm, and OpenBLAS's threads spin-wait. On a busy
machine (more runnable threads than cores) a 2-thread sgemm was measured 5-8x slower than the
1-thread one, so runtimes and benchmarks want to pin the count. This works without threadpoolctl
by calling the `*_set_num_threads*` symbol of the OpenBLAS library numpy has loaded; if none is
found (another BLAS), the functions return None and change nothing.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import os
from typing import Iterator

# The executor's thread policy: OpenBLAS threads while it runs, $NPURT_BLAS_THREADS (default 1).
# Measured on the 2-core dev machine (single sgemm calls of the models' shapes, and whole executor runs, 1 and 2
# threads alternated, medians):
# - under load (load average ~8 from other work): 2 threads made every sgemm 10-50x slower (0.4-2 ms -> 18-20 ms:
#   spin-waiting threads descheduled) and bench/executor.py 5-8x slower (mobilenet_v2_like fp16 1147 ms at 2
#   threads, 202 ms at 1);
# - idle (load average 1.4): 2 threads made sgemm 1.8x faster, but whole runs only 0-6% faster (mobilenet_v2_like
#   fp16 76.6 ms at 1 thread, 78.9 at 2; yolov8n_like fp16 86.7 / 81.5): the GEMMs are a minority of the time, the
#   numpy passes around them are single-threaded.
# One thread loses at most a few percent on an idle machine and never collapses under load.
DEFAULT_THREADS = 1


@functools.lru_cache(maxsize=1)
def _openblas():
    """(get, set) ctypes functions of the loaded OpenBLAS, or None."""
    import numpy  # noqa: F401  (make sure numpy's BLAS is loaded)

    paths = []
    with open("/proc/self/maps") as maps:  # the shared objects mapped into this process
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and "openblas" in fields[-1].lower() and ".so" in fields[-1]:
                paths.append(fields[-1])
    for path in dict.fromkeys(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in ("scipy_openblas", "openblas"):
            for suffix in ("64_", "_64_", ""):
                get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                set_ = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                if get is not None and set_ is not None:
                    get.restype = ctypes.c_int
                    set_.argtypes = [ctypes.c_int]
                    return get, set_
    return None


def policy_threads() -> int:
    """OpenBLAS threads the executor runs with: $NPURT_BLAS_THREADS if a positive integer, else DEFAULT_THREADS."""
    v = os.environ.get("NPURT_BLAS_THREADS", "")
    return int(v) if v.isdigit() and int(v) > 0 else DEFAULT_THREADS


def get_blas_threads() -> int | None:
    """Threads numpy's OpenBLAS uses, or None when that BLAS is not OpenBLAS."""
    fns = _openblas()
    return int(fns[0]()) if fns else None


def set_blas_threads(n: int) -> int | None:
    """Set numpy's OpenBLAS thread count (process-wide); return the previous count (None: no OpenBLAS)."""
    fns = _openblas()
    if not fns:
        return None
    old = int(fns[0]())
    fns[1](int(n))
    return old


def swap_blas_threads(n: int) -> int | None:
    """Give numpy's OpenBLAS `n` threads; return the count to restore after, or None when it already had `n` (or
    is not OpenBLAS): an executor run pays one get, not a set and a reset (about 1 us each)."""
    fns = _openblas()
    if not fns:
        return None
    old = int(fns[0]())
    if old == n:
        return None
    fns[1](int(n))
    return old


@contextlib.contextmanager
def blas_threads(n: int) -> Iterator[None]:
    """Context manager: run the block with `n` OpenBLAS threads, then restore the previous count."""
    old = swap_blas_threads(n)
    try:
        yield
    finally:
        if old is not None:
            set_blas_threads(old)
