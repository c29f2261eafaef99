"""`npurt bench [--quick] [--only NAME]`: run every benchmark in the repository's `bench/` and print one table.

Each `bench/NAME.py` defines `run(quick: bool = False) -> list[dict]`; this command imports them by file path
(they are scripts, not part of the installed package), runs them in name order, and prints one row per result
with its ratio: what the ratio compares is the benchmark's own definition (listed under the table). A benchmark
that raises is reported (stderr, and FAILED under the table) and the others still run; the exit status is then 1. `bench/` is
`$NPURT_BENCH_DIR` when set, else the folder beside the package's source tree (`<repo>/bench`), else `./bench`.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Any

from rich import box
from rich.table import Table

from npurt.cli._output import make_console, print_json
from npurt.errors import ErrorCode, NpuError

# What each benchmark's ratio means (the key used, and how to read it).
RATIO_KEYS = {"planner": "solve_ratio"}
MEANING = {
    "capi": "the call from C (librknnrt.so, libQnnHtp.so) / the same call from Python on the mirror (1 = the C face "
            "adds nothing)",
    "executor": "npurt time / onnxruntime time, same model and thread count (int8 rows: vs_ort_int8 = against "
                "onnxruntime's own int8; 2-thread rows: fp16 against float32, int8 against onnxruntime int8; lower is "
                "better)",
    "layout": "conversion GB/s / np.copyto GB/s of the same bytes (higher is better, 1 = memory bandwidth)",
    "memory": "npurt time / the same syscalls or copy done directly (lower is better)",
    "npu_timing": "predicted FPS / rknn_model_zoo's published FPS (1 = exact); speed row: `npurt perf` seconds / "
                  "the 1 s goal",
    "planner": "arena / lower bound (peak live bytes); 1 is optimal",
    "qnn_ort": "onnxruntime's QNN EP run on npurt's libQnnHtp.so / npurt's own graphExecute, same binary (goal <= 1.1); "
               "the decoder pair: two sessions' load from one weight-shared binary / from a binary each",
    "quant_vs_toolkit": "npurt int8 cosine to onnxruntime fp32 / rknn-toolkit2 2.3.2's int8 cosine, same script, "
                        "calibration and held-out inputs (>= 1: npurt at least as close; the toolkit runs in a "
                        "separate venv in the cache, skipped when it cannot be made)",
    "quant_techniques": "int8 mean cosine to onnxruntime fp32 with the quantisation techniques (cle, bias, adaround) "
                        "/ without them, same model, weights, calibration and held-out inputs (> 1: they help)",
    "real_models": "npurt Session.run(x) time / onnxruntime time on a real trained model (the optional tier's, its "
                   "wheels downloaded once), 1 thread each (lower is better)",
    "sequential_bias": "int8 mean cosine with bias correction from the int8 model's own layer inputs, sequentially "
                       "(an experiment) / with npurt's correction from the float model's inputs (> 1: it helps)",
    "technique_cost": "compile time with the techniques bias / cle,bias (and `npurt optimize` writing them) / the "
                      "plain int8 compile, same model and calibration inputs (goal <= 2)",
    "toolkit": "npurt.toolkit.RKNN.inference time / onnxruntime fp32 (1 thread), same model (lower is better)",
    "toolkit_weights": "a conv recomputed from rknn-toolkit2's own layer dumps with symmetric int8 weights / with "
                       "asymmetric ones, difference to its dumped output (> 1: the toolkit's weights are "
                       "asymmetric; the toolkit venv of quant_vs_toolkit)",
    "zero_copy": "path time / Executor.run() alone on bound memory (1 = the I/O path adds nothing)",
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run npurt's benchmarks and print one table of ratios")
    p.add_argument("--quick", action="store_true", help="short runs (smaller sizes, fewer repeats)")
    p.add_argument("--only", action="append", metavar="NAME", help="run only bench/NAME.py (repeatable)")
    p.add_argument("--json", action="store_true", help="print the rows as one JSON object")
    p.set_defaults(func=run)


def bench_dir() -> Path:
    """The `bench/` folder: `$NPURT_BENCH_DIR`, beside the source tree, or in the current directory."""
    env = os.environ.get("NPURT_BENCH_DIR")
    candidates = [Path(env)] if env else [Path(__file__).resolve().parents[3] / "bench", Path.cwd() / "bench"]
    for c in candidates:
        if c.is_dir() and any(c.glob("*.py")):
            return c
    raise NpuError(ErrorCode.INVALID_ARGUMENT, "no bench/ folder found (looked at "
                   + ", ".join(str(c) for c in candidates) + "); run from a source checkout or set $NPURT_BENCH_DIR")


def available(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))


def load(folder: Path, name: str) -> Any:
    """Import bench/NAME.py by path (with bench/ on sys.path for its own helpers)."""
    path = folder / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"npurt_bench_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(folder))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
    if not callable(getattr(module, "run", None)):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{path} defines no run(quick) function")
    return module


def case_name(row: dict) -> str:
    """A readable name for one result row, whatever keys the benchmark uses."""
    for key in ("name", "instance", "case"):
        if key in row:
            return str(row[key])
    parts = [str(row[k]) for k in ("model", "precision", "mode", "path") if k in row]
    return " ".join(parts) if parts else "-"


def _fmt(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def details(row: dict, skip: set[str]) -> str:
    return ", ".join(f"{k}={_fmt(v)}" for k, v in row.items()
                     if k not in skip and k not in ("name", "instance", "case", "model", "precision"))


def run(args: argparse.Namespace) -> int:
    console = make_console(quiet=args.json)
    folder = bench_dir()
    names = available(folder)
    if args.only:
        unknown = [n for n in args.only if n not in names]
        if unknown:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"unknown benchmark(s) {', '.join(unknown)}; "
                                                       f"available: {', '.join(names)}")
        names = [n for n in names if n in args.only]
    results: list[dict] = []
    timings: dict[str, float] = {}
    errors: dict[str, str] = {}
    for name in names:
        console.print(f"running bench/{name}.py{' (quick)' if args.quick else ''} ...")
        t = time.perf_counter()
        try:
            with console.status(f"bench/{name}.py", spinner="dots") if console.is_terminal else _null():
                rows = load(folder, name).run(quick=args.quick)
        except Exception as exc:            # one broken benchmark must not lose the others' results
            errors[name] = f"{type(exc).__name__}: {exc}"
            print(f"npurt bench: bench/{name}.py failed: {errors[name]}", file=sys.stderr)
            rows = []
        timings[name] = time.perf_counter() - t
        for row in rows:
            results.append({"bench": name, **row})
    status = 1 if errors else 0
    if args.json:
        print_json({"quick": args.quick, "seconds": timings, "rows": results, "errors": errors})
        return status
    table = Table(title=f"npurt bench{' --quick' if args.quick else ''}", box=box.SIMPLE_HEAD)
    for col in ("bench", "case", "ratio", "details"):
        table.add_column(col, justify="right" if col == "ratio" else "left", overflow="fold")
    for row in results:
        key = RATIO_KEYS.get(row["bench"], "ratio")
        ratio = row.get(key)
        table.add_row(row["bench"], case_name(row), "-" if ratio is None else f"{ratio:.3f}",
                      details(row, {"bench", key}))
    console.print(table)
    for name in names:
        if name in errors:
            console.print(f"  {name}: FAILED ({errors[name]}) [{timings[name]:.1f} s]")
        else:
            console.print(f"  {name}: ratio = {MEANING.get(name, 'see bench/' + name + '.py')} "
                          f"[{timings[name]:.1f} s]")
    return status


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None
