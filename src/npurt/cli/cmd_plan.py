"""`npurt plan INSTANCE.csv`: plan one allocation problem and report arena vs lower bound."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from npurt.errors import ErrorCode, NpuError
from npurt.files import regular_input, regular_output


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="plan buffer offsets for an allocation CSV (id,lower,upper,size)")
    p.add_argument("instance", type=Path, help="CSV file; a capacity in the name (X.1048576.csv) is used by default")
    p.add_argument("--capacity", type=int, default=None, help="arena capacity in bytes (overrides the file name)")
    p.add_argument("--time-limit", type=float, default=10.0, help="solver time budget in seconds (default 10)")
    p.add_argument("--method", choices=("greedy", "solve"), default="solve")
    p.add_argument("--output", type=Path, help="write id,offset rows to this file")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    p.add_argument("--plot", type=Path, help="save a time x offset picture of the plan (png/svg/pdf)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from npurt.plan import greedy_by_size, read_csv, solve, write_offsets_csv
    from npurt.plan.report import plot_plan
    if args.capacity is not None and args.capacity < 0:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"--capacity must be >= 0, got {args.capacity}")
    if not args.time_limit > 0:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"--time-limit must be > 0, got {args.time_limit}")
    regular_input(args.instance, "instance")
    for given, what in ((args.output, "--output"), (args.plot, "--plot")):
        if given:
            regular_output(given, what, [args.instance])
    problem = read_csv(args.instance, capacity=args.capacity)
    solution = greedy_by_size(problem) if args.method == "greedy" else solve(problem, time_limit=args.time_limit)
    if args.output:
        write_offsets_csv(args.output, problem, solution)
    if args.plot:
        plot_plan(problem, solution, args.plot)
    summary = {
        "instance": str(args.instance),
        "buffers": len(problem),
        "lower_bound": solution.lower_bound,
        "arena": solution.arena,
        "ratio": round(solution.ratio, 6),
        "seconds": round(solution.seconds, 3),
        "method": solution.method,
        "capacity": problem.capacity,
        "fits": solution.fits,
    }
    if args.json:
        print(json.dumps(summary))
        return 0
    table = Table(title=f"npurt plan {args.instance.name}")
    table.add_column("quantity")
    table.add_column("value", justify="right")
    fits = "-" if solution.fits is None else ("yes" if solution.fits else "NO")
    for name, value in (("buffers", f"{len(problem):,}"), ("lower bound", f"{solution.lower_bound:,} B"),
                        ("arena", f"{solution.arena:,} B"), ("ratio arena / lower bound", f"{solution.ratio:.4f}"),
                        ("time", f"{solution.seconds:.2f} s"), ("method", solution.method),
                        ("capacity", "-" if problem.capacity is None else f"{problem.capacity:,} B"),
                        ("fits capacity", fits)):
        table.add_row(name, value)
    Console().print(table)
    return 0
