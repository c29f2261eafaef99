"""The RKNN_LOG_LEVEL=3 internal-memory table and totals, rendered from plain rows; plan plots.

Definitions pinned by the seed's own numbers (MobileNet v1 in the RKNN NPU SRAM guide, transcribed in
`tests/data/seed/memory_table.txt`):
- Total Internal Memory Size = highest end − base of the internal rows (rows with a SramHit value);
- Predict Internal Memory RW Amount = 2 × Σ internal sizes + Σ sizes of the I/O rows (SramHit "\\");
- Predict SRAM Hit RW Amount = 2 × Σ SramHit (each internal tensor is written once and read once).
Weight totals are not derivable from the rows and are passed in.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Sequence

from npurt.errors import ErrorCode, NpuError
from npurt.files import save_figure

LEFT_WIDTH = 69     # the seed's separator: 69 '-' + '+' + 34 '-' + '+' + 11 '-'
MID_WIDTH = 34
HIT_WIDTH = 11
TOTALS_RULE = "-" * 40
SRAM_RULE = "-" * 75


@dataclass(frozen=True)
class MemoryRow:
    """One tensor line. `start`/`end`/`size` are device addresses and bytes; `sram_hit` is None for
    tensors outside the internal arena (model inputs/outputs: printed as a backslash)."""

    id: int
    user: str
    tensor: str
    dtype: str
    orig_shape: tuple[int, ...] | str
    native_shape: tuple[int, ...] | str
    start: int
    end: int
    size: int
    sram_hit: int | None


@dataclass(frozen=True)
class MemoryTotals:
    """The five totals printed under the table."""

    weight_size: int
    internal_size: int
    internal_rw: int
    weight_rw: int
    sram_hit_rw: int


def _shape(shape: tuple[int, ...] | str) -> str:
    if isinstance(shape, str):
        return shape
    return "(" + ",".join(str(int(d)) for d in shape) + ")"


def sram_hit(start: int, end: int, sram_start: int, sram_size: int) -> int:
    """Bytes of [start, end) inside the SRAM range [sram_start, sram_start + sram_size)."""
    return max(0, min(end, sram_start + sram_size) - max(start, sram_start))


def compute_totals(rows: Iterable[MemoryRow], weight_size: int, weight_rw: int,
                   internal_base: int | None = None) -> MemoryTotals:
    """Totals from the rows (definitions in the module docstring). `internal_base` defaults to the
    lowest start of the internal rows."""
    rows = list(rows)
    internal = [r for r in rows if r.sram_hit is not None]
    io = [r for r in rows if r.sram_hit is None]
    base = internal_base if internal_base is not None else min((r.start for r in internal), default=0)
    top = max((r.end for r in internal), default=base)
    return MemoryTotals(
        weight_size=int(weight_size),
        internal_size=top - base,
        internal_rw=2 * sum(r.size for r in internal) + sum(r.size for r in io),
        weight_rw=int(weight_rw),
        sram_hit_rw=2 * sum(r.sram_hit for r in internal),
    )


def _left(cells: Sequence[str]) -> str:
    widths = (3, 14, 8, 8, 14, 16)
    return " ".join(c.ljust(w) for c, w in zip(cells, widths)) + " "


def format_memory_table(rows: Iterable[MemoryRow], totals: MemoryTotals,
                        sram: tuple[int, int] | None = None) -> str:
    """The seed's table: optional SRAM header (`sram` = (size, base address)), the per-tensor rows
    `ID User Tensor DataType OrigShape NativeShape | [Start End) Size | SramHit` (the End of the
    row(s) reaching the arena top is joined with '*', as in the seed), then the five totals."""
    rows = list(rows)
    lines: list[str] = []
    if sram is not None:
        size, base = sram
        lines += [SRAM_RULE, f"Total allocated Internal SRAM Size: {size}, Addr: [{base:#x}, {base + size:#x})",
                  SRAM_RULE]
    lefts = [_left((str(r.id), r.user, r.tensor, r.dtype, _shape(r.orig_shape), _shape(r.native_shape)))
             for r in rows]
    width = max([LEFT_WIDTH] + [len(s) for s in lefts])
    rule = "-" * width + "+" + "-" * MID_WIDTH + "+" + "-" * HIT_WIDTH
    top = max((r.end for r in rows if r.sram_hit is not None), default=None)
    lines.append(rule)
    lines.append(_left(("ID", "User", "Tensor", "DataType", "OrigShape", "NativeShape")).ljust(width) + "|"
                 + " [Start      End)       Size".ljust(MID_WIDTH) + "|" + " SramHit")
    lines.append(rule)
    for r, left in zip(rows, lefts):
        join = "*" if r.sram_hit is not None and r.end == top else " "
        mid = f" 0x{r.start:08x}{join}0x{r.end:08x} 0x{r.size:08x} ".ljust(MID_WIDTH)
        hit = " \\" if r.sram_hit is None else f" 0x{r.sram_hit:08x}"
        lines.append(left.ljust(width) + "|" + mid + "|" + hit)
    lines.append(rule)
    lines += [TOTALS_RULE,
              f"Total Weight Memory Size: {totals.weight_size}",
              f"Total Internal Memory Size: {totals.internal_size}",
              f"Predict Internal Memory RW Amount: {totals.internal_rw}",
              f"Predict Weight Memory RW Amount: {totals.weight_rw}",
              f"Predict SRAM Hit RW Amount: {totals.sram_hit_rw}",
              TOTALS_RULE]
    return "\n".join(lines) + "\n"


def memory_table_dict(rows: Iterable[MemoryRow], totals: MemoryTotals,
                      sram: tuple[int, int] | None = None) -> dict:
    """The same content as a JSON-able dict: {"sram": {...}|None, "tensors": [...], "totals": {...}}."""
    tensors = []
    for r in rows:
        d = asdict(r)
        d["orig_shape"], d["native_shape"] = _shape(r.orig_shape), _shape(r.native_shape)
        tensors.append(d)
    return {"sram": None if sram is None else {"size": sram[0], "address": sram[1]},
            "tensors": tensors, "totals": asdict(totals)}


def plot_plan(problem, solution, path: str | Path, fast_size: int | None = None, title: str | None = None) -> None:
    """Draw the plan as time × offset rectangles (one per buffer) with the fast-memory band
    [0, fast_size) shaded, and save it to `path` (PNG/SVG/PDF by suffix). matplotlib is imported
    lazily with the Agg backend, so the plan layer does not depend on it."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.collections import PolyCollection
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise NpuError(ErrorCode.NOT_SUPPORTED, f"plot_plan needs matplotlib: {exc}") from None
    fig, ax = plt.subplots(figsize=(10, 5))
    polys = []
    for b in problem.buffers:
        lo = solution.offsets[b.id]
        hi = lo + b.size
        polys.append([(b.start, lo), (b.end, lo), (b.end, hi), (b.start, hi)])
    ax.add_collection(PolyCollection(polys, facecolors="tab:blue", edgecolors="black", linewidths=0.2, alpha=0.7, zorder=2))
    t0 = min((b.start for b in problem.buffers), default=0)
    t1 = max((b.end for b in problem.buffers), default=1)
    if fast_size:
        ax.axhspan(0, fast_size, color="tab:orange", alpha=0.25, zorder=0, label=f"fast memory ({fast_size} B)")
        ax.legend(loc="upper right")
    ax.axhline(solution.arena, color="red", linewidth=0.8)
    if solution.lower_bound:
        ax.axhline(solution.lower_bound, color="green", linewidth=0.8, linestyle="--")
    ax.set_xlim(t0, t1)
    ax.set_ylim(0, max(solution.arena, fast_size or 0, 1) * 1.05)
    ax.set_xlabel("time")
    ax.set_ylabel("offset (bytes)")
    ax.set_title(title or f"{solution.method}: arena {solution.arena} B, lower bound {solution.lower_bound} B")
    fig.tight_layout()
    try:
        save_figure(fig, path)
    finally:
        plt.close(fig)
