"""What the benches share: timing two callables against each other under the same machine load."""
from __future__ import annotations

import statistics
import time
from typing import Callable


def median_pair(fa: Callable[[], object], fb: Callable[[], object], repeats: int) -> tuple[float, float]:
    """Median seconds of `fa` and of `fb`, timed alternately (after one warm-up call each) so both see the same
    machine load."""
    fa(), fb()
    ta, tb = [], []
    for _ in range(repeats):
        for f, ts in ((fa, ta), (fb, tb)):
            t0 = time.perf_counter()
            f()
            ts.append(time.perf_counter() - t0)
    return statistics.median(ta), statistics.median(tb)
