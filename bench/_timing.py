"""What the benches share: timing two callables against each other under the same machine load; the CPU they ran on."""
from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Callable


def median_pair(fa: Callable[[], object], fb: Callable[[], object], repeats: int,
                block: int = 1) -> tuple[float, float]:
    """Median seconds of `fa` and of `fb`, timed alternately (after one warm-up call each) so both see the same
    machine load. `block` > 1 alternates blocks of that many calls, 0.1 s apart, and times all but the first of
    each: with several threads each side's idle workers spin for a while after its calls, taking the cores the
    other's threads need."""
    fa(), fb()
    ta, tb = [], []
    for _ in range(repeats):
        for f, ts in ((fa, ta), (fb, tb)):
            if block > 1:
                time.sleep(0.1)
            for k in range(block):
                t0 = time.perf_counter()
                f()
                if k or block == 1:
                    ts.append(time.perf_counter() - t0)
    return statistics.median(ta), statistics.median(tb)


def cpu() -> str:
    """The CPU model, its SIMD flags of interest and the level npurt's compiled kernels run at."""
    from npurt import _kernels
    name, flags = "unknown CPU", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and name == "unknown CPU":
                name = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    isa = " ".join(f for f in ("avx2", "fma", "f16c", "avx512f", "avx512_fp16", "avx512_vnni") if f in flags)
    return f"{name}; {isa or 'no AVX'}; npurt kernels: {_kernels.level()} (CPU supports {_kernels.cpu_level()})"
