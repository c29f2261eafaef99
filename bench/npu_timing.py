"""NPU timing model benchmark: predicted vs published FPS on every rknn_model_zoo row npurt can build, the naive
MACs / peak-TOPS estimate's error on the same rows, and how long a prediction takes on a YOLO-sized model.

Rows (`npurt.timing.rows`): the four calibration rows (the only ones `FIT` was fitted on) and the validation rows
(same table, other models and SoCs; predicted, not fitted). Each model is the published structure at the published
input size with random weights (`npurt.model.zoo_published`), compiled int8 for the row's SoC with one random
calibration sample, cached as .npurt under the zoo cache (`timing/`). The speed goal: `npurt perf` under 1 s on a
YOLO-sized model; measured in-process (`predict` alone) and as the command (`npurt perf yolov5s.npurt --json`, a
new process: interpreter start, imports, loading the .npurt).
Run: `python bench/npu_timing.py [--quick] [--fit] [--markdown]` (`--fit` re-runs the fit on the calibration rows
and prints the constants to record in `npurt.soc.npu_timing.FIT`; `--markdown` also prints the table of
docs/npu-timing.md), or `npurt bench --only npu_timing`.
"""
from __future__ import annotations

import hashlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _timing import cpu  # bench/ is on sys.path: the script's folder, or `npurt bench`'s

import npurt
from npurt.model import sources, zoo, zoo_published
from npurt.timing import predict, rows

SPEED_GOAL_S = 1.0


def _source_digest() -> str:
    """Changes when the compiler or the planner does (the cached .npurt files are then rebuilt)."""
    root = Path(npurt.__file__).parent
    h = hashlib.sha1()
    for p in sorted([*root.glob("model/*.py"), *root.glob("plan/*.py"), *root.glob("tensor/*.py")]):
        h.update(p.read_bytes())
    return h.hexdigest()[:10]


def compiled_path(model: str, soc: str) -> Path:
    """The .npurt of a row's model for `soc` (compiled once, int8, one seeded random calibration sample)."""
    path = zoo.cache_dir() / "timing" / f"{model}-{soc}-{_source_digest()}.npurt"
    if not path.exists():
        fn = getattr(zoo_published, model, None) or getattr(zoo, model)
        onnx_path = zoo.cached(fn)
        sample = sources.random_inputs(onnx_path, seed=0)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        npurt.compile(str(onnx_path), soc=soc, quantize=[sample], progress=False).save(tmp)
        os.replace(tmp, path)
    return path


def _row(kind: str, row: rows.Row) -> dict:
    compiled = npurt.load_compiled(compiled_path(row.model, row.soc))
    p = predict(compiled, row.soc)
    naive_fps = 1000.0 / p.naive_ms
    return {"name": f"{row.name} {row.soc}", "kind": kind, "published_fps": row.fps, "predicted_fps": p.fps,
            "ratio": p.fps / row.fps, "error_pct": 100 * rows.error(p.fps, row.fps),
            "naive_fps": naive_fps, "naive_error_pct": 100 * rows.error(naive_fps, row.fps), "gmacs": p.macs / 1e9}


def _child_seconds(args: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of a child process."""
    before = os.times()
    t0 = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = os.times()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:4])} failed: {proc.stderr.strip()}")
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def _speed(model: str = "yolov5s", soc: str = "rk3568", repeats: int = 5) -> dict:
    """`npurt perf` on a YOLO-sized .npurt: the command (a new process), the same work in-process (load the .npurt,
    predict, the JSON document), and `import onnx` alone (loading a .npurt needs onnx), all in the same run."""
    path = compiled_path(model, soc)
    inproc, pred = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        compiled = npurt.load_compiled(path)
        t1 = time.perf_counter()
        predict(compiled, soc).to_json()
        t2 = time.perf_counter()
        inproc.append(t2 - t0)
        pred.append(t2 - t1)
    runs = max(1, repeats // 2)
    cli = [_child_seconds([sys.executable, "-m", "npurt.cli.main", "perf", str(path), "--json"]) for _ in range(runs)]
    onnx_only = [_child_seconds([sys.executable, "-c", "import onnx"]) for _ in range(runs)]
    wall = statistics.median(w for w, _ in cli)
    return {"name": f"npurt perf {model} ({len(compiled.graph.nodes)} nodes) on {soc}", "kind": "speed",
            "ratio": wall / SPEED_GOAL_S, "cli_seconds": wall, "cli_cpu_seconds": statistics.median(c for _, c in cli),
            "import_onnx_seconds": statistics.median(w for w, _ in onnx_only),
            "in_process_seconds": statistics.median(inproc), "predict_seconds": statistics.median(pred),
            "goal_seconds": SPEED_GOAL_S, "load_average": os.getloadavg()[0], "cpu": cpu()}


def run(quick: bool = False) -> list[dict]:
    """Calibration rows, then (unless `quick`) validation rows, then the speed row. `ratio` = predicted / published
    FPS (1 is exact), for the speed row `npurt perf` seconds / the 1 s goal."""
    out = [_row("calibration", r) for r in rows.CALIBRATION]
    if not quick:
        out += [_row("validation", r) for r in rows.VALIDATION]
    out.append(_speed(repeats=3 if quick else 5))
    return out


def summary(result: list[dict]) -> list[str]:
    lines = []
    for kind in ("calibration", "validation"):
        rs = [r for r in result if r["kind"] == kind]
        if rs:
            mean = statistics.mean(abs(r["error_pct"]) for r in rs)
            worst = max(rs, key=lambda r: abs(r["error_pct"]))
            naive = statistics.mean(abs(r["naive_error_pct"]) for r in rs)
            lines.append(f"{kind}: {len(rs)} rows, mean |error| {mean:.1f} %, worst {worst['error_pct']:+.1f} % "
                         f"({worst['name']}); naive MACs/peak-TOPS mean |error| {naive:.1f} %")
    return lines


def main(argv: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table
    console = Console(width=max(Console().width, 140))
    if "--fit" in argv:
        cases = [(npurt.load_compiled(compiled_path(r.model, r.soc)), r) for r in rows.CALIBRATION]
        fitted = rows.rounded(rows.fit(cases))
        console.print(f"fitted on the {len(cases)} calibration rows: {fitted}")
        for compiled, r in cases:
            p = predict(compiled, r.soc, fit=fitted)
            console.print(f"  {r.name} {r.soc}: {p.fps:.1f} FPS predicted, {r.fps} published "
                          f"({100 * rows.error(p.fps, r.fps):+.1f} %)")
        return
    result = run("--quick" in argv)
    if "--markdown" in argv:        # the table of docs/npu-timing.md
        print("| row | kind | GMACs | published FPS | predicted FPS | error | naive MACs/peak-TOPS | naive error |")
        print("|---|---|---|---|---|---|---|---|")
        for r in result[:-1]:
            print(f"| {r['name']} | {r['kind']} | {r['gmacs']:.2f} | {r['published_fps']:.1f} "
                  f"| {r['predicted_fps']:.1f} | {r['error_pct']:+.1f} % | {r['naive_fps']:.0f} "
                  f"| {r['naive_error_pct']:+.0f} % |")
    table = Table(title="npurt timing model vs rknn_model_zoo (int8, single core, FPS)")
    for col in ("row", "kind", "GMACs", "published", "predicted", "error", "naive", "naive error"):
        table.add_column(col, justify="left" if col in ("row", "kind") else "right")
    for r in result:
        if r["kind"] == "speed":
            continue
        table.add_row(r["name"], r["kind"], f"{r['gmacs']:.2f}", f"{r['published_fps']:.1f}",
                      f"{r['predicted_fps']:.1f}", f"{r['error_pct']:+.1f} %", f"{r['naive_fps']:.0f}",
                      f"{r['naive_error_pct']:+.0f} %")
    console.print(table)
    for line in summary(result):
        console.print(line)
    s = result[-1]
    console.print(f"{s['name']}: `npurt perf --json` {s['cli_seconds']:.2f} s as a command "
                  f"({s['cli_cpu_seconds']:.2f} s CPU; goal < {s['goal_seconds']:.0f} s), of which `import onnx` "
                  f"alone takes {s['import_onnx_seconds']:.2f} s; in-process (load .npurt + predict + JSON) "
                  f"{s['in_process_seconds']:.2f} s, predict() {1000 * s['predict_seconds']:.0f} ms; load average "
                  f"{s['load_average']:.1f}; {s['cpu']}")


if __name__ == "__main__":
    main(sys.argv[1:])
