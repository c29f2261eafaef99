"""Layout-conversion bandwidth against np.copyto of the same bytes, measured in the same run.

Rows: int8 (C2=16) and fp16 (C2=8) NC1HWC2 <-> NCHW and <-> NHWC, plus NCHW <-> NHWC, on 1.5 MiB, 80 x 80 (1.6 MB),
16 MiB and 25 MiB tensors, each through the public function (`npurt.tensor`: checks and argument preparation on every
call); "NC1HWC2->NCHW bound" is the same kernel prepared once, as the executor binds its output conversions
(`_kernels.lanes_to_planes_fn`). GB/s is tensor bytes / median time; ratio = conversion GB/s / copyto GB/s.
Run: python bench/layout.py
"""
from __future__ import annotations

import sys

import numpy as np

from _timing import median_pair  # bench/ is on sys.path: the script's folder, or `npurt bench`'s
import npurt._kernels as _kernels
from npurt.tensor import (nc1hwc2_to_nchw, nc1hwc2_to_nhwc, nchw_to_nc1hwc2, nchw_to_nhwc, nhwc_to_nc1hwc2,
                          nhwc_to_nchw)

# (label, H, W) of 256-byte pixels (int8 C = 256, fp16 C = 128): a plane stride of 6144 bytes (1.5 MiB), the
# 80 x 80 detection-head map, and two tensors past the last-level cache share (16 MiB, 25 MiB)
SIZES = [("1.5MiB", 64, 96), ("80x80", 80, 80), ("16MiB", 256, 256), ("25MiB", 320, 320)]


_placed = [0]


def _aligned(a: np.ndarray) -> np.ndarray:
    """A copy of `a` on a cache line, at the next of a fixed series of offsets in a page (13 lines apart): every
    run places its buffers alike, so that no row's number depends on where the allocator happened to put them (16
    bytes off a line cost up to 0.1 of copyto; buffers at one page offset alias in the store buffer)."""
    raw = np.empty(a.nbytes + 8192, np.uint8)
    start = (-raw.ctypes.data) % 4096 + (_placed[0] * 13 * 64) % 4096
    _placed[0] += 1
    out = raw[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def _cases(dtype: np.dtype, c2: int, channels: int, h: int, w: int):
    rng = np.random.default_rng(0)
    nchw = _aligned(rng.integers(-100, 100, size=(1, channels, h, w)).astype(dtype))
    nhwc = _aligned(nchw.transpose(0, 2, 3, 1))
    native = _aligned(nchw_to_nc1hwc2(nchw, c2))
    o_native, o_nchw, o_nhwc = _aligned(native), _aligned(nchw), _aligned(nhwc)
    bound = _kernels.lanes_to_planes_fn(o_nchw, native)
    return ([("NC1HWC2->NCHW bound", bound)] if bound is not None else []) + [
        ("NCHW->NC1HWC2", lambda: nchw_to_nc1hwc2(nchw, c2, out=o_native)),
        ("NC1HWC2->NCHW", lambda: nc1hwc2_to_nchw(native, channels, out=o_nchw)),
        ("NHWC->NC1HWC2", lambda: nhwc_to_nc1hwc2(nhwc, c2, out=o_native)),
        ("NC1HWC2->NHWC", lambda: nc1hwc2_to_nhwc(native, channels, out=o_nhwc)),
        ("NCHW->NHWC", lambda: nchw_to_nhwc(nchw, out=o_nhwc)),
        ("NHWC->NCHW", lambda: nhwc_to_nchw(nhwc, out=o_nchw)),
    ], nchw.nbytes


def run(quick: bool = False) -> list[dict]:
    """Measure every conversion and np.copyto on the same byte count; one row per conversion and size."""
    repeats = 5 if quick else 31
    sizes = SIZES[:1] if quick else SIZES
    rows = []
    for label, h, w in sizes:
        for dt_name, dtype, c2 in (("int8", np.int8, 16), ("fp16", np.float16, 8)):
            itemsize = np.dtype(dtype).itemsize
            channels = 256 // itemsize
            cases, nbytes = _cases(np.dtype(dtype), c2, channels, h, w)
            src = _aligned(np.random.default_rng(1).integers(0, 255, nbytes, dtype=np.uint8))
            dst = _aligned(src)
            for name, fn in cases:
                t_conv, t_copy = median_pair(fn, lambda: np.copyto(dst, src), repeats)
                gbps, copy_gbps = nbytes / t_conv / 1e9, nbytes / t_copy / 1e9
                rows.append({"name": f"{dt_name} {name} {label}", "bytes": nbytes, "gbps": gbps,
                             "copy_gbps": copy_gbps, "ratio": gbps / copy_gbps})
    return rows


def main(argv: list[str]) -> int:
    from rich.console import Console
    from rich.table import Table

    rows = run(quick="--quick" in argv)
    table = Table(title="layout conversion vs np.copyto (same bytes, same run, median)")
    for col in ("conversion", "bytes", "GB/s", "copyto GB/s", "ratio"):
        table.add_column(col, justify="left" if col == "conversion" else "right")
    for r in rows:
        style = "green" if r["ratio"] >= 0.5 else "yellow"
        table.add_row(r["name"], f"{r['bytes']:,}", f"{r['gbps']:.2f}", f"{r['copy_gbps']:.2f}",
                      f"[{style}]{r['ratio']:.2f}[/{style}]")
    Console().print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
