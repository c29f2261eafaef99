"""Memory benchmarks: allocation rate, 10,000 create/destroy cycles with the open-fd count before and after,
lookups, and the cost per MiB of a sync in `strict` vs `coherent` (and `check`: a CRC-32 snapshot) mode against `np.copyto`
of the same bytes.

`run(quick)` returns rows {name, value, unit, ratio?}; `python bench/memory.py [--quick]` prints them as a table.
"""
from __future__ import annotations

import fcntl
import mmap
import os
import sys
import time

import numpy as np

from npurt.memory import SyncMode, open_device

MIB = 1 << 20


def _fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def _best(fn, repeat: int) -> float:
    """Best wall time of `fn()` over `repeat` runs, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _alloc_rows(quick: bool) -> list[dict]:
    n = 1000 if quick else 5000
    rows = []
    with open_device("rk3588") as dev:
        def cycle_ddr():
            for _ in range(n):
                dev.alloc(4096).free()

        def cycle_split():
            hog = dev.alloc(dev.stats().sram_total - 16 * 4096, placement="sram")
            for _ in range(n):
                dev.alloc(64 * 4096, placement="sram_first").free()
            hog.free()

        def bare_memfd_mmap():           # the peer: the same syscalls alone, through Python's mmap
            for _ in range(n):
                fd = os.memfd_create("peer", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
                os.ftruncate(fd, 4096)
                fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
                m = mmap.mmap(fd, 4096)
                m.close()
                os.close(fd)

        peer = _best(bare_memfd_mmap, 3) / n
        t = _best(cycle_ddr, 3) / n
        rows.append({"name": "alloc+free DDR 4 KiB", "value": 1 / t, "unit": "ops/s",
                     "ratio": t / peer, "peer": "same syscalls"})
        rows.append({"name": "memfd+seal+mmap+munmap+close (peer)", "value": 1 / peer, "unit": "ops/s"})
        t = _best(cycle_split, 3) / n
        rows.append({"name": "alloc+free SRAM+DDR split 256 KiB", "value": 1 / t, "unit": "ops/s",
                     "ratio": t / peer, "peer": "same syscalls"})

        live = 2000 if quick else 10000
        t0 = time.perf_counter()
        bufs = [dev.alloc(4096) for _ in range(live)]
        t_alloc = (time.perf_counter() - t0) / live
        rows.append({"name": f"alloc with {live} live buffers", "value": 1 / t_alloc, "unit": "ops/s"})
        addrs = [b.dev_addr + 100 for b in bufs[::7]]
        t = _best(lambda: [dev.lookup_device(a) for a in addrs], 3) / len(addrs)
        rows.append({"name": f"lookup_device among {live} buffers", "value": t * 1e6, "unit": "us"})
        t0 = time.perf_counter()
        for b in bufs:
            b.free()
        rows.append({"name": f"free with {live} live buffers", "value": live / (time.perf_counter() - t0),
                     "unit": "ops/s"})
    return rows


def _cycle_rows() -> list[dict]:
    cycles = 10_000
    with open_device("rk3588") as dev:
        before = _fd_count()
        t0 = time.perf_counter()
        for i in range(cycles):
            buf = dev.alloc(4096 * (1 + i % 4), placement="sram_first" if i % 3 == 0 else "ddr")
            buf.view()[0] = 1
            buf.free()
        elapsed = time.perf_counter() - t0
        after = _fd_count()
    if after != before:
        raise AssertionError(f"fd leak: {before} open fds before {cycles} cycles, {after} after")
    return [{"name": f"{cycles} create/destroy cycles", "value": elapsed, "unit": "s"},
            {"name": "open fds before cycles", "value": before, "unit": "fds"},
            {"name": "open fds after cycles", "value": after, "unit": "fds", "ratio": after / before}]


def _sync_rows(quick: bool) -> list[dict]:
    size = (4 if quick else 32) * MIB
    repeat = 5 if quick else 10
    src = np.ones(size, np.uint8)
    dst = np.empty(size, np.uint8)
    np.copyto(dst, src)
    copy = _best(lambda: np.copyto(dst, src), repeat) / (size / MIB)
    rows = [{"name": "np.copyto (peer)", "value": copy * 1e6, "unit": "us/MiB"}]
    for mode in ("strict", "coherent", "check"):
        with open_device("rk3588", coherence=mode) as dev:
            buf = dev.alloc(size)
            buf.view()[:] = 1
            buf.sync(SyncMode.TO_DEVICE)
            for direction in (SyncMode.TO_DEVICE, SyncMode.FROM_DEVICE):
                t = _best(lambda: buf.sync(direction), repeat) / (size / MIB)
                rows.append({"name": f"sync {direction.name.lower()} {mode}", "value": t * 1e6, "unit": "us/MiB",
                             "ratio": t / copy, "peer": "np.copyto"})
            buf.free()
    return rows


def run(quick: bool = False) -> list[dict]:
    """All memory benchmark rows: name, value, unit, and ratio (with its peer) where there is one."""
    return _alloc_rows(quick) + _cycle_rows() + _sync_rows(quick)


def _print(rows: list[dict]) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:                      # pragma: no cover - rich is a dependency
        for r in rows:
            print(r)
        return
    table = Table(title="npurt.memory")
    for col in ("benchmark", "value", "unit", "ratio", "peer"):
        table.add_column(col, justify="right" if col in ("value", "ratio") else "left")
    for r in rows:
        value = r["value"]
        text = f"{value:,.0f}" if value >= 100 else f"{value:.3g}"
        ratio = f"{r['ratio']:.3g}x" if "ratio" in r else ""
        table.add_row(r["name"], text, r["unit"], ratio, r.get("peer", ""))
    Console().print(table)


if __name__ == "__main__":
    _print(run(quick="--quick" in sys.argv))
