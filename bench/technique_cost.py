"""What the data-driven quantisation techniques cost (`npurt.model.techniques`, goal of bias correction: at most twice
a plain calibration): an int8 compile with `optimize="bias"` and `"cle,bias"`, and `npurt optimize` (the techniques
written into the float ONNX, `npurt.exec.compile.optimize_onnx`) with the same, against the plain int8 compile of
the same model on the same calibration inputs. Models: the zoo's `mobilenet_v2_like` (224x224, 16 normal-distributed
calibration inputs; 96x96 and 8 with --quick) and PP-OCRv4 det of the optional tier when it is in the cache (16
calibration images as `bench/quant_vs_toolkit.py` makes them, 8 with --quick; skipped with one line otherwise).
Every case runs once per round, the order rotated and reversed from round to round so all see the same load; per
case the median wall and CPU (process) seconds over the rounds and the 1-minute load average around the runs.

ratio (for `npurt bench`) = median wall seconds of the case / of the plain int8 compile (goal <= 2 without adaround).
Run: python bench/technique_cost.py [--quick] [--rounds=N] [model ...]
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
from _timing import cpu  # bench/ is on sys.path: the script's folder, or `npurt bench`'s

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import quant_vs_toolkit as qt  # noqa: E402  (the real model's calibration images and normalisation)
from helpers import real_models as rm  # noqa: E402

MODELS = ("mobilenet_v2_like", "ppocr_det")
CASES = (("compile", None), ("compile", "bias"), ("compile", "cle,bias"), ("optimize", "bias"),
         ("optimize", "cle,bias"))


def _setup(name: str, quick: bool) -> tuple[object, list[np.ndarray], dict] | None:
    if name == "mobilenet_v2_like":
        from npurt.model import zoo
        size = 96 if quick else 224
        rng = np.random.default_rng(0)
        calib = [rng.normal(0, 1, (1, 3, size, size)).astype(np.float32) for _ in range(8 if quick else 16)]
        return zoo.mobilenet_v2_like(size=size), calib, {}
    if not (rm.cache() / "real" / f"{name}.onnx").exists():
        print(f"{name}: skipped, not in the cache (make test-real fetches the real models)", file=sys.stderr)
        return None
    spec = rm.MODELS[name]
    calib, _ = qt.inputs(name, quick)
    mean, std = qt.NORM[name]
    return (str(rm.model_path(name)), [qt.nchw(img) for img in calib],
            {"mean": [mean], "std": [std], "input_shapes": {spec.input: list(spec.shape)}})


def _timed(model, calib: list[np.ndarray], options: dict, case: tuple[str, str | None]) -> tuple[float, float]:
    import npurt
    from npurt.exec.compile import optimize_onnx
    kind, techniques = case
    t0, c0 = time.perf_counter(), time.process_time()
    if kind == "compile":
        npurt.compile(model, soc="rk3588", quantize=calib, optimize=techniques, progress=False, **options)
    else:
        optimize_onnx(model, techniques, calib, options.get("mean"), options.get("std"),
                      input_shapes=options.get("input_shapes"))
    return time.perf_counter() - t0, time.process_time() - c0


def _rows(name: str, quick: bool, rounds: int) -> list[dict]:
    setup = _setup(name, quick)
    if setup is None:
        return []
    model, calib, options = setup
    _timed(model, calib, options, CASES[0])                        # warm-up: imports, kernels
    times: dict[tuple, list[tuple[float, float]]] = {c: [] for c in CASES}
    loads = [os.getloadavg()[0]]
    for r in range(rounds):
        order = list(CASES[r % len(CASES):] + CASES[:r % len(CASES)])
        for case in (order[::-1] if r % 2 else order):
            times[case].append(_timed(model, calib, options, case))
        loads.append(os.getloadavg()[0])
    wall0 = float(np.median([t[0] for t in times[CASES[0]]]))
    rows = []
    for case in CASES:
        wall = float(np.median([t[0] for t in times[case]]))
        cpu_s = float(np.median([t[1] for t in times[case]]))
        rows.append({"name": f"{name} {case[0]} {case[1] or 'plain'}", "model": name, "case": case[0],
                     "techniques": case[1] or "none", "inputs": len(calib), "seconds": wall, "cpu_seconds": cpu_s,
                     "ratio": wall / wall0, "load_min": min(loads), "load_max": max(loads)})
    return rows


def run(quick: bool = False, names: list[str] | None = None, rounds: int | None = None) -> list[dict]:
    """The rows of every model (PP-OCRv4 det only when in the cache)."""
    rounds = rounds or (2 if quick else 3)
    return [row for name in (names or MODELS) for row in _rows(name, quick, rounds)]


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rounds = next((int(a.split("=", 1)[1]) for a in sys.argv[1:] if a.startswith("--rounds=")), None)
    print(cpu())
    print("| model | inputs | case | techniques | wall s (median) | ratio to plain | CPU s (median) | CPU ratio | "
          "load average |\n|---|---|---|---|---|---|---|---|---|")
    for name in args or MODELS:
        rows = run(quick="--quick" in sys.argv, names=[name], rounds=rounds)
        for row in rows:
            cpu0 = rows[0]["cpu_seconds"]
            print(f"| {row['model']} | {row['inputs']} | {row['case']} | {row['techniques']} | {row['seconds']:.2f} | "
                  f"{row['ratio']:.2f} | {row['cpu_seconds']:.2f} | {row['cpu_seconds'] / cpu0:.2f} | "
                  f"{row['load_min']:.1f}-{row['load_max']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
