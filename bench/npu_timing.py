"""NPU timing model benchmark: predicted vs published FPS on every row of rknn_model_zoo's current benchmark table
that npurt can build, per SoC, per model family and per precision, the naive MACs / peak-TOPS estimate's error on
the same rows, the rows npurt does not predict (and why), and how long a prediction takes on a YOLO-sized model.

Rows (`npurt.timing.rows`, from `published_rows.csv`): a fixed split of the current table's predicted rows into the
four calibration rows (the only ones `FIT` was fitted on) and the validation rows (predicted, never fitted). Each
model is the published structure at the published input size with random weights (`npurt.model.zoo_published`),
compiled for the row's SoC (int8 with one seeded random calibration sample, or fp16), cached as .npurt under the
zoo cache (`timing/`). The RK3566/RK3568 column is predicted as rk3568 and as rk3566 (the two must agree). The
speed goal: `npurt perf` under 1 s on a YOLO-sized model; measured in-process (`predict` alone) and as the command.
Run: `python bench/npu_timing.py [--quick] [--fit] [--markdown] [--write-bands]` (`--fit` re-runs the fit on the
calibration rows and prints the constants to record in `npurt.soc.npu_timing.FIT`; `--markdown` also prints the
tables of docs/npu-timing.md; `--write-bands` records the validation error per SoC and family in
`npurt/timing/error_bands.json`, which `npurt perf` prints), or `npurt bench --only npu_timing`.
"""
from __future__ import annotations

import functools
import hashlib
import json
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
from npurt.timing.bands import BANDS

SPEED_GOAL_S = 1.0


@functools.lru_cache(maxsize=1)
def _source_digest() -> str:
    """Changes when the compiler or the planner does (the cached .npurt files are then rebuilt); the model
    generators (zoo, zoo_published) are keyed by their own cache."""
    root = Path(npurt.__file__).parent
    h = hashlib.sha1()
    for p in sorted([*root.glob("model/*.py"), *root.glob("plan/*.py"), *root.glob("tensor/*.py")]):
        if not p.name.startswith("zoo"):
            h.update(p.read_bytes())
    return h.hexdigest()[:10]


def compiled_path(model: str, soc: str, dtype: str = "int8") -> Path:
    """The .npurt of a row's model for `soc` (compiled once: int8 with one seeded random calibration sample, or
    fp16)."""
    path = zoo.cache_dir() / "timing" / f"{model}-{soc}-{dtype}-{_source_digest()}.npurt"
    if not path.exists():
        fn = getattr(zoo_published, model, None) or getattr(zoo, model)
        onnx_path = zoo.cached(fn)
        quantize = [sources.random_inputs(onnx_path, seed=0)] if dtype == "int8" else None
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        npurt.compile(str(onnx_path), soc=soc, quantize=quantize, progress=False).save(tmp)
        os.replace(tmp, path)
    return path


def _compiled(model: str, soc: str, dtype: str):
    return npurt.load_compiled(compiled_path(model, soc, dtype))


def _row(kind: str, pub: rows.Published, fit=None) -> dict:
    return {**rows.check(pub, _compiled, fit), "kind": kind}


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
    """`npurt perf` on a YOLO-sized .npurt (YOLOv5s: 199 ONNX nodes): the command (a new process), the same work
    in-process (load the .npurt, predict, the JSON document), and `import onnx` alone (which the command no longer
    pays: a .npurt's attributes are read without onnx), all in the same run."""
    path = compiled_path(model, soc)
    import onnx
    onnx_nodes = len(onnx.load(zoo.cached(getattr(zoo_published, model, None) or getattr(zoo, model))).graph.node)
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
    return {"name": f"npurt perf {model} ({onnx_nodes} ONNX nodes, {len(compiled.graph.nodes)} scheduled ops) on {soc}",
            "kind": "speed",
            "ratio": wall / SPEED_GOAL_S, "cli_seconds": wall, "cli_cpu_seconds": statistics.median(c for _, c in cli),
            "import_onnx_seconds": statistics.median(w for w, _ in onnx_only),
            "in_process_seconds": statistics.median(inproc), "predict_seconds": statistics.median(pred),
            "goal_seconds": SPEED_GOAL_S, "load_average": os.getloadavg()[0], "cpu": cpu()}


def run(quick: bool = False, fit=None) -> list[dict]:
    """Calibration rows, then (unless `quick`) validation rows, then the speed row. `ratio` = predicted / published
    FPS (1 is exact), for the speed row `npurt perf` seconds / the 1 s goal. `fit`: other constants than `FIT`."""
    cal, val, _ = rows.split()
    out = [_row("calibration", p, fit) for p in cal]
    if not quick:
        out += [_row("validation", p, fit) for p in val]
    out.append(_speed(repeats=3 if quick else 5))
    return out


def not_predicted() -> list[dict]:
    """The current table's rows npurt does not predict, each with its reason and source."""
    return [{"name": f"{p.model} {p.column}", "kind": "not predicted", "model": p.model, "family": p.demo,
             "soc": "/".join(p.socs), "dtype": p.dtype, "reason": p.reason, "source": p.source_ref}
            for p in rows.split()[2]]


def summary(result: list[dict]) -> list[str]:
    lines = []
    for kind in ("calibration", "validation"):
        rs = [r for r in result if r["kind"] == kind]
        if rs:
            s = rows.stats(rs)
            worst = max(rs, key=lambda r: abs(r["error_pct"]))
            lines.append(f"{kind}: {s['rows']} rows, median |error| {s['median_error_pct']:.1f} %, "
                         f"{100 * s['within_20_pct']:.0f} % within ±20 %, {100 * s['within_35_pct']:.0f} % within "
                         f"±35 %, worst {worst['error_pct']:+.1f} % ({worst['name']}); naive MACs/peak-TOPS median "
                         f"|error| {s['naive_median_error_pct']:.0f} %")
    skipped = [r for r in result if r["kind"] == "not predicted"]
    if skipped:
        reasons: dict[str, int] = {}
        for r in skipped:
            reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
        lines.append(f"not predicted: {len(skipped)} rows (" + "; ".join(f"{n}: {k}" for k, n in reasons.items()) + ")")
    same = [r for r in result if "rk3566_fps" in r]
    if same:
        worst = max(abs(r["rk3566_fps"] / r["predicted_fps"] - 1) for r in same)
        lines.append(f"RK3566/RK3568 column: rk3566 and rk3568 predictions differ by at most {100 * worst:.2f} %")
    return lines


def _markdown_groups(result: list[dict]) -> None:
    print("| group | rows | median abs error | median predicted / published | range | within ±20 % | within ±35 % "
          "| naive median abs error |")
    print("|---|---|---|---|---|---|---|---|")
    for kind in ("calibration", "validation"):
        for key, table in rows.groups(result, kind).items():
            for value, s in table.items():
                label = f"{kind}" if key == "all" else f"{kind}, {key} {value}"
                print(f"| {label} | {s['rows']} | {s['median_error_pct']:.1f} % | {s['median_ratio']:.2f} "
                      f"| {s['min_ratio']:.2f} – {s['max_ratio']:.2f} | {100 * s['within_20_pct']:.0f} % "
                      f"| {100 * s['within_35_pct']:.0f} % | {s['naive_median_error_pct']:.0f} % |")


def main(argv: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table
    console = Console(width=max(Console().width, 140))
    if "--fit" in argv:
        cal = rows.split()[0]
        cases = [(npurt.load_compiled(compiled_path(p.row().model, p.soc, p.dtype)), p.row()) for p in cal]
        fitted = rows.rounded(rows.fit(cases))
        console.print(f"fitted on the {len(cases)} calibration rows: {fitted}")
        for compiled, r in cases:
            p = predict(compiled, r.soc, fit=fitted)
            console.print(f"  {r.name} {r.soc}: {p.fps:.1f} FPS predicted, {r.fps} published "
                          f"({100 * rows.error(p.fps, r.fps):+.1f} %)")
        return
    result = run("--quick" in argv) + not_predicted()
    predicted = [r for r in result if r["kind"] in ("calibration", "validation")]
    if "--markdown" in argv:        # the tables of docs/npu-timing.md
        _markdown_groups(result)
        print()
        print("| row | kind | GMACs | published FPS | predicted FPS | error | naive MACs/peak-TOPS | naive error |")
        print("|---|---|---|---|---|---|---|---|")
        for r in predicted:
            print(f"| {r['name']} | {r['kind']} | {r['gmacs']:.2f} | {r['published_fps']:.1f} "
                  f"| {r['predicted_fps']:.1f} | {r['error_pct']:+.1f} % | {r['naive_fps']:.0f} "
                  f"| {r['naive_error_pct']:+.0f} % |")
    if "--write-bands" in argv:
        BANDS.write_text(json.dumps(rows.bands(result), indent=1, sort_keys=True) + "\n")
        console.print(f"error bands written to {BANDS.name}")
    table = Table(title=f"npurt timing model vs rknn_model_zoo {rows.CURRENT_SDK} (single core, FPS)")
    for col in ("row", "kind", "dtype", "GMACs", "published", "predicted", "error", "naive", "naive error"):
        table.add_column(col, justify="left" if col in ("row", "kind", "dtype") else "right")
    for r in predicted:
        table.add_row(r["name"], r["kind"], r["dtype"], f"{r['gmacs']:.2f}", f"{r['published_fps']:.1f}",
                      f"{r['predicted_fps']:.1f}", f"{r['error_pct']:+.1f} %", f"{r['naive_fps']:.0f}",
                      f"{r['naive_error_pct']:+.0f} %")
    console.print(table)
    for key in ("soc", "family", "dtype"):
        for value, s in rows.groups(result).get(key, {}).items():
            console.print(f"validation, {key} {value}: {s['rows']} rows, median |error| {s['median_error_pct']:.1f} %,"
                          f" median predicted/published {s['median_ratio']:.2f}")
    for line in summary(result):
        console.print(line)
    s = next(r for r in result if r["kind"] == "speed")
    console.print(f"{s['name']}: `npurt perf --json` {s['cli_seconds']:.2f} s as a command "
                  f"({s['cli_cpu_seconds']:.2f} s CPU; goal < {s['goal_seconds']:.0f} s; `import onnx`, which it no "
                  f"longer needs, alone takes {s['import_onnx_seconds']:.2f} s); in-process (load .npurt + predict + JSON) "
                  f"{s['in_process_seconds']:.2f} s, predict() {1000 * s['predict_seconds']:.0f} ms; load average "
                  f"{s['load_average']:.1f}; {s['cpu']}")


if __name__ == "__main__":
    main(sys.argv[1:])
