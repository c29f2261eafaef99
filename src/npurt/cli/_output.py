"""Shared output helpers of the CLI commands: one console, pure JSON, progress bars, number formatting.

- Colour and live progress bars only on a terminal (rich turns them off when stdout is a pipe or a file); off a
  terminal the console is 140 columns wide so the seed-format tables never wrap.
- `--json` prints exactly one JSON document on stdout and nothing else (progress and notes go nowhere).
- Preformatted vendor text (memory tables, SRAM bitmaps) is printed as is, never re-wrapped or highlighted.
"""
from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

if TYPE_CHECKING:  # rich and numpy load when a command prints: `npurt --help` stays light
    from rich.console import Console
    from rich.progress import Progress


def make_console(quiet: bool = False) -> Console:
    """The console for a command's human output (`quiet` for --json runs: prints nothing)."""
    from rich.console import Console
    tty = sys.stdout.isatty()
    return Console(highlight=False, quiet=quiet, width=None if tty else 140)


def _default(obj: Any) -> Any:
    import numpy as np
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (set, tuple)):
        return list(obj)
    if hasattr(obj, "value"):
        return obj.value
    return str(obj)


def print_json(obj: Any) -> None:
    """One JSON document on stdout (numpy scalars/arrays, enums and paths converted)."""
    sys.stdout.write(json.dumps(obj, default=_default, indent=2) + "\n")
    sys.stdout.flush()


def print_text(console: Console, text: str) -> None:
    """Preformatted text as is (no markup, no wrapping, no highlighting)."""
    if not console.quiet:
        console.out(text.rstrip("\n"), highlight=False)


@contextmanager
def progress(console: Console, enabled: bool = True) -> Iterator[Progress]:
    """A transient progress bar on `console` (silent off a terminal or when not `enabled`)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                   TimeElapsedColumn(), console=console, transient=True,
                   disable=not enabled or console.quiet or not console.is_terminal)
    with bar:
        yield bar


def human_bytes(n: float) -> str:
    """1234567 -> '1.18 MiB' (binary units, as the vendor's sizes)."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} GiB"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"
