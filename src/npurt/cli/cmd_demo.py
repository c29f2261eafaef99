"""`npurt demo`: the main job (for now: the SoC profiles as a table)."""
from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from npurt.soc import PROFILES


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the main job on the embedded default (emulated RK3588)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    console = Console()
    table = Table(title="npurt SoC profiles")
    for col in ("SoC", "NPU cores", "C2 int8", "C2 fp16", "input align", "SRAM", "API calls", "queries"):
        table.add_column(col)
    for p in PROFILES.values():
        table.add_row(p.name, str(p.npu_cores), str(p.c2.get("int8", "-")), str(p.c2.get("float16", "-")),
                      str(p.input_align), f"{p.sram_size // 1024} KiB" if p.sram_size else "-",
                      f"{len(p.api)}/34", f"{len(p.queries)}/20")
    console.print(table)
    return 0
