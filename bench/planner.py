"""Planner benchmark: greedy-by-size vs `solve` on every public instance in planner-benchmarks.

Prints ratio to the lower bound and time per instance for both planners in one run, and whether the
capacity is met on the challenging set. Full mode gives the solver 60 s per instance; `quick` 2 s.
Run: `python bench/planner.py [--quick]`.
"""
from __future__ import annotations

import sys
from pathlib import Path

from npurt.plan import check, greedy_by_size, read_csv, solve

# The public instances are test data of the repository (tests/data/planner-benchmarks, with their sources and licences).
BENCH_DIR = Path(__file__).resolve().parents[1] / "tests" / "data" / "planner-benchmarks"


def instances() -> list[Path]:
    """Every CSV under planner-benchmarks (challenging first); fails loudly if the folder is missing."""
    if not BENCH_DIR.is_dir():
        raise FileNotFoundError(f"planner benchmarks not found at {BENCH_DIR} (run from a source checkout)")
    return sorted(BENCH_DIR.glob("challenging/*.csv")) + sorted(BENCH_DIR.glob("real/*.csv"))


def run(quick: bool = False) -> list[dict]:
    """One row per instance: sizes, lower bound, greedy and solver ratio/time, fits (when a capacity)."""
    budget = 2.0 if quick else 60.0
    rows = []
    for path in instances():
        problem = read_csv(path)
        g = greedy_by_size(problem)
        check(problem, g)
        s = solve(problem, time_limit=budget)
        check(problem, s)
        rows.append({
            "instance": f"{path.parent.name}/{path.name}", "buffers": len(problem), "lower_bound": s.lower_bound,
            "capacity": problem.capacity, "greedy_ratio": g.ratio, "greedy_seconds": g.seconds,
            "greedy_fits": g.fits, "solve_ratio": s.ratio, "solve_seconds": s.seconds, "solve_fits": s.fits,
            "method": s.method,
        })
    return rows


def main(argv: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    quick = "--quick" in argv
    table = Table(title=f"npurt planner vs lower bound ({'quick, 2 s' if quick else '60 s'} solver budget)")
    for col in ("instance", "buffers", "greedy ×LB", "greedy s", "solve ×LB", "solve s", "fits 1 MiB g/s", "method"):
        table.add_column(col)
    console = Console(width=max(Console().width, 150))   # full instance and method names
    rows = run(quick)
    for r in rows:
        fits = "-" if r["capacity"] is None else f"{'yes' if r['greedy_fits'] else 'no'}/{'yes' if r['solve_fits'] else 'no'}"
        table.add_row(r["instance"], str(r["buffers"]), f"{r['greedy_ratio']:.4f}", f"{r['greedy_seconds']:.2f}",
                      f"{r['solve_ratio']:.4f}", f"{r['solve_seconds']:.2f}", fits, r["method"])
    console.print(table)
    capped = [r for r in rows if r["capacity"] is not None]
    console.print(f"fit their capacity: greedy {sum(bool(r['greedy_fits']) for r in capped)}/{len(capped)}, "
                  f"solve {sum(bool(r['solve_fits']) for r in capped)}/{len(capped)}")


if __name__ == "__main__":
    main(sys.argv[1:])
