"""`npurt demo`: the main job (for now: the SoC profiles and the seed's worked NC1HWC2 example)."""
from __future__ import annotations

import argparse

import numpy as np
from rich import box
from rich.console import Console
from rich.table import Table

from npurt.soc import PROFILES, get_profile
from npurt.tensor import c1_for, native_shape, nc1hwc2_to_nchw, nchw_to_nc1hwc2, size_with_stride


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the main job on the embedded default (emulated RK3588)")
    p.set_defaults(func=run)


def _soc_table() -> Table:
    table = Table(title="npurt SoC profiles")
    for col in ("SoC", "NPU cores", "C2 int8", "C2 fp16", "input align", "SRAM", "API calls", "queries"):
        table.add_column(col)
    for p in PROFILES.values():
        table.add_row(p.name, str(p.npu_cores), str(p.c2.get("int8", "-")), str(p.c2.get("float16", "-")),
                      str(p.input_align), f"{p.sram_size // 1024} KiB" if p.sram_size else "-",
                      f"{len(p.api)}/34", f"{len(p.queries)}/20")
    return table


def _nc1hwc2_example(console: Console) -> None:
    """The seed's example: int8 (1,13,4,4) on RK3568 is stored as (1,2,4,4,8); lanes 5..7 of block 1 are padding."""
    soc, shape = "rk3568", (1, 13, 4, 4)
    c2 = get_profile(soc).c2_for("int8")
    n, c, h, w = shape
    x = (9 * np.arange(c)[:, None, None] + 4 * np.arange(h)[:, None] + np.arange(w)).astype(np.int8)[None]
    native = nchw_to_nc1hwc2(x, c2)
    dims = native_shape(shape, c2)
    console.print(f"\n[bold]NC1HWC2[/bold]: int8 NCHW {shape} on {soc} (C2 = {c2}) -> native {dims}, "
                  f"C1 = ceil({c}/{c2}) = {c1_for(c, c2)}, "
                  f"{size_with_stride(dims, 'NC1HWC2', 'int8')} bytes for {x.size} values; x[0,c,h,w] = 9c + 4h + w")
    table = Table(title="stored bytes: first pixels of each C2 block", title_style="", box=box.SIMPLE_HEAD)
    for col in ("C1", "h,w", "offset", "channels"):
        table.add_column(col, justify="right")
    for lane in range(c2):
        table.add_column(f"L{lane}", justify="right")
    flat = native.reshape(-1)
    for c1 in range(dims[1]):
        for hh, ww in ((0, 0), (0, 1), (h - 1, w - 1)):
            offset = c1 * h * w * c2 + (hh * w + ww) * c2
            first, last = c1 * c2, min(c, (c1 + 1) * c2) - 1
            channels = f"{first}..{last}"
            cells = [str(int(v)) if c1 * c2 + lane < c else f"[red]{int(v)}[/red]"
                     for lane, v in enumerate(flat[offset:offset + c2])]
            table.add_row(str(c1), f"{hh},{ww}", str(offset), channels, *cells)
    console.print(table)
    back = nc1hwc2_to_nchw(native, c)
    ok = np.array_equal(back, x) and not native[0, 1, :, :, c - c2:].any()
    console.print(f"lanes {c - c2 * (dims[1] - 1)}..{c2 - 1} of block C1={dims[1] - 1} (red) are padding: zero in all "
                  f"{h * w} pixels\nback to NCHW: {'[green]equal[/green]' if ok else '[red]MISMATCH[/red]'}")


def run(args: argparse.Namespace) -> int:
    console = Console()
    console.print(_soc_table())
    _nc1hwc2_example(console)
    return 0
