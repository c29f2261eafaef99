"""Executor latency against onnxruntime, batch 1, same thread count, measured in the same run.

Rows: every vision zoo model — mobilenet_v2_like (224), mobilenet_v1 (224), yolov8n_like (320), yolo_head (320) and
small_convnet (32, the per-op overhead case) — in npurt fp16 and int8 (activations in native layout and
type in a bound arena; `Executor.run()` only, inputs already packed) against onnxruntime float32
(`InferenceSession.run`). ORT's intra_op_num_threads is the executor's BLAS thread count ($NPURT_BLAS_THREADS,
default 1; `--threads N` sets it and the compiled conv steps' $NPURT_EXEC_THREADS). ratio = npurt / onnxruntime
(goals: fp16 <= 2.5, int8 <= 2). With several threads the two alternate in blocks of 10 runs, 0.1 s apart, the
first of each untimed: onnxruntime's idle workers spin (its default, and its best time) on the cores npurt's
workers need, and run for run alternation measured that instead (MobileNetV2-like fp16 at 2 threads: npurt 8.2-12.7
ms beside onnxruntime's runs, about 6 ms in blocks). `NPURT_NATIVE_LEVEL=avx2` runs npurt's kernels at the AVX2 level (a laptop's path) on a bigger CPU;
onnxruntime keeps its own best.
Also reported: how many steps run in place (`npurt.exec.inplace`: computed on their NC1HWC2 slots, with their
conversions fused in, so not separable), the share of npurt time spent in the generic steps' slot conversions
(native layout/type <-> float32), and the kernels-only ratio (npurt time minus those conversions, over ORT).
"glue us/step": one run with every compiled kernel call made a no-op (the module's functions swapped for stubs
before bind), over the number of steps: what each step costs outside the compiled kernels (the executor's loop,
the steps' Python and their remaining numpy calls; goal <= 10 us).
`--generic` runs every step through the generic slot -> float32 -> kernel -> slot path (`Executor(inplace=False)`,
the executor before `npurt.exec.inplace`), for before/after comparisons.
Run: python bench/executor.py [--quick] [--threads N] [--generic]
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np
from _timing import cpu, median_pair  # bench/ is on sys.path: the script's folder, or `npurt bench`'s


def blas_threads() -> int:
    """The executor's thread policy (`npurt.exec.kernels.blas.policy_threads`: $NPURT_BLAS_THREADS, default 1);
    onnxruntime gets the same intra_op thread count."""
    from npurt.exec.kernels.blas import policy_threads
    return policy_threads()




def _conversion_share(ex, repeats: int = 3) -> float:
    """Fraction of one run spent in slot reads/writes (conversions), measured by timing them separately."""
    steps = ex._steps
    t_conv = t_all = 0.0
    for _ in range(repeats):
        for fn, attrs, readers, writers, node in steps:
            t0 = time.perf_counter()
            args = [r() for r in readers]
            t1 = time.perf_counter()
            ys = fn(args, attrs)
            t2 = time.perf_counter()
            for w, y in zip(writers, ys):
                if w is not None:
                    w(y)
            t3 = time.perf_counter()
            t_conv += (t1 - t0) + (t3 - t2)
            t_all += t3 - t0
    return t_conv / t_all if t_all else 0.0


class _NoKernels:
    """Stands in for the compiled module: every function a no-op returning 0."""

    def __getattr__(self, name: str):
        return lambda *args: 0


def _glue_per_step(cm, inplace: bool, repeats: int) -> float:
    """Seconds per step of a run whose compiled kernel calls are no-ops (bound with the stubs in place)."""
    import npurt._kernels as kernels
    from npurt.exec.executor import Executor, allocate
    real, kernels.lib = kernels.lib, _NoKernels()
    try:
        w, a, ins, outs = allocate(cm)
        ex = Executor(cm, inplace=inplace)
        ex.bind(w, a, ins, outs)
        with np.errstate(all="ignore"):         # the stubbed kernels leave scratch unwritten: numpy steps see garbage
            t, _ = median_pair(ex.run, lambda: None, repeats)
    finally:
        kernels.lib = real
    return t / len(ex._steps)


def run(quick: bool = False, inplace: bool = True) -> list[dict]:
    """One row per (model, precision): npurt and ORT median latency (ms) and their ratio."""
    import onnxruntime as ort

    import npurt
    from npurt.runtime.user_io import pack_input
    from npurt.exec.executor import Executor, allocate
    from npurt.model import zoo

    threads = blas_threads()
    repeats = 5 if quick else 20
    models = [("mobilenet_v2_like", zoo.mobilenet_v2_like(size=224)), ("mobilenet_v1", zoo.mobilenet_v1(size=224)),
              ("yolov8n_like", zoo.yolov8n_like(size=320)), ("yolo_head", zoo.yolo_head(size=320)),
              ("small_convnet", zoo.small_convnet(size=32))]
    if quick:
        models = [("mobilenet_v2_like", zoo.mobilenet_v2_like(size=96)), ("yolov8n_like", zoo.yolov8n_like(size=160)),
                  ("small_convnet", zoo.small_convnet(size=32))]
    rows = []
    for name, model in models:
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        sess = ort.InferenceSession(model.SerializeToString(), so)
        iname = sess.get_inputs()[0].name
        shape = [d if isinstance(d, int) else 1 for d in sess.get_inputs()[0].shape]
        rng = np.random.default_rng(0)
        x = rng.normal(size=shape).astype(np.float32)
        for precision in ("fp16", "int8"):
            kw = {"quantize": [x] + [rng.normal(size=shape).astype(np.float32) for _ in range(3)],
                  "progress": False} if precision == "int8" else {"precision": precision}
            cm = npurt.compile(model, **kw)
            w, a, ins, outs = allocate(cm)
            ex = Executor(cm, inplace=inplace)
            ex.bind(w, a, ins, outs)
            pack_input(cm.native_input_attrs[0], x, ins[0])
            t_np, t_ort = median_pair(ex.run, lambda: sess.run(None, {iname: x}), repeats if threads == 1 else 3, 1 if threads == 1 else 10)
            rows.append({"model": name, "precision": precision, "threads": threads,
                         "npurt_ms": t_np * 1e3, "ort_ms": t_ort * 1e3, "ratio": t_np / t_ort,
                         "conversion_share": (share := _conversion_share(ex, 1 if quick else 3)),
                         "inplace_steps": sum(1 for st in ex._steps if not st[2] and not st[3]),
                         "steps": len(ex._steps),
                         "kernel_ratio": t_np * (1 - share) / t_ort,
                         "glue_us": _glue_per_step(cm, inplace, repeats) * 1e6,
                         "arena_bytes": cm.internal_size, "weight_bytes": cm.weight_size})
    return rows


def main() -> None:
    from rich.console import Console
    from rich.table import Table

    quick = "--quick" in sys.argv
    if "--threads" in sys.argv:
        os.environ["NPURT_BLAS_THREADS"] = os.environ["NPURT_EXEC_THREADS"] = sys.argv[sys.argv.index("--threads") + 1]
    rows = run(quick=quick, inplace="--generic" not in sys.argv)
    console = Console(width=160)
    console.print(f"{cpu()}; threads (npurt BLAS = onnxruntime intra_op): {rows[0]['threads'] if rows else blas_threads()}")
    path = "generic steps only" if "--generic" in sys.argv else "in-place steps"
    table = Table(title=f"npurt executor ({path}) vs onnxruntime (batch 1, median)")
    for col in ("model", "precision", "npurt ms", "ORT fp32 ms", "ratio", "in-place steps", "in conversions",
                "kernels-only ratio", "glue us/step", "arena", "weights"):
        table.add_column(col, justify="right" if col not in ("model", "precision") else "left")
    for r in rows:
        table.add_row(r["model"], r["precision"], f"{r['npurt_ms']:.2f}", f"{r['ort_ms']:.2f}", f"{r['ratio']:.2f}x",
                      f"{r['inplace_steps']}/{r['steps']}", f"{r['conversion_share'] * 100:.0f}%",
                      f"{r['kernel_ratio']:.2f}x", f"{r['glue_us']:.1f}",
                      f"{r['arena_bytes'] / 2**20:.2f} MiB",
                      f"{r['weight_bytes'] / 2**20:.2f} MiB")
    console.print(table)


if __name__ == "__main__":
    main()
