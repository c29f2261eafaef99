"""Executor latency against onnxruntime, batch 1, same thread count, measured in the same run.

Rows: every vision zoo model — mobilenet_v2_like (224), mobilenet_v1 (224), resnet_small (224), yolov8n_like (320),
yolo_head (320) and small_convnet (32, the per-op overhead case) — in npurt fp16 and int8 (activations in native
layout and type in a bound arena; `Executor.run()` only, inputs already packed) against onnxruntime float32
(`InferenceSession.run`). ORT's intra_op_num_threads is the executor's BLAS thread count ($NPURT_BLAS_THREADS,
default 1; `--threads N` sets it and the compiled conv steps' $NPURT_EXEC_THREADS). ratio = npurt / onnxruntime
(goals: fp16 <= 2.5, int8 <= 2).
int8 rows also time npurt against onnxruntime's own int8, in a second alternation: the same float model quantised by
onnxruntime's tool (`quant_pre_process`, then `quantize_static`: QDQ, uint8 activations, int8 weights per channel,
the four calibration inputs npurt's int8 compile uses); "vs ORT int8" = npurt int8 / onnxruntime int8 (goal <= 1).
Then a 2-thread block (not with --threads): mobilenet_v1, resnet_small and yolo_head with $NPURT_EXEC_THREADS=2 and
onnxruntime's intra_op 2, fp16 against onnxruntime float32 and int8 against onnxruntime int8 (goal: each ratio <=
its 1-thread ratio). With several threads the two alternate in blocks of 10 runs, 0.1 s apart, the
first of each untimed: onnxruntime's idle workers spin (its default, and its best time) on the cores npurt's
workers need, and run for run alternation measured that instead (MobileNetV2-like fp16 at 2 threads: npurt 8.2-12.7
ms beside onnxruntime's runs, about 6 ms in blocks). `NPURT_NATIVE_LEVEL=avx2` runs npurt's kernels at the AVX2 level
(a laptop's path) on a bigger CPU; onnxruntime keeps its own best.
Also reported: how many steps run in place (`npurt.exec.inplace`: computed on their NC1HWC2 slots, with their
conversions fused in, so not separable), the share of npurt time spent in the generic steps' slot conversions
(native layout/type <-> float32), and the kernels-only ratio (npurt time minus those conversions, over ORT).
"glue us/step": one run with every compiled kernel call made a no-op (the module's functions swapped for stubs
before bind), over the number of steps: what each step costs outside the compiled kernels (the executor's loop,
the steps' Python and their remaining numpy calls; goal <= 10 us).
`--generic` runs every step through the generic slot -> float32 -> kernel -> slot path (`Executor(inplace=False)`,
the executor before `npurt.exec.inplace`), for before/after comparisons.
`--profile` adds, per int8 model of the 1-thread table, npurt's time per op type (`Executor.run_profiled`, median of
the runs) beside onnxruntime int8's (its profiler: the QuantizeLinear / DequantizeLinear it runs counted apart).
It also times npurt's Conv steps per shape class (1x1, 3x3, strided, depthwise ...) and gives their rate in GMAC/s
against the machine's limit for the instruction set in use, measured in the same run (`npk_int8_peak`: register-only
chains of the conv's own instruction mix, vpmaddwd + vpaddd on int16 at the AVX2 level, vpdpbusd at AVX-512 VNNI; the
step time includes its padding copy and epilogue; depthwise convs run in float32 and get no ratio).
`--convs` times the compiled int8 conv alone on each dense conv shape of the int8 models (random codes, the kernel
call only, the fastest of 25 calls: a load burst cannot make it look faster) and gives its GMAC/s against the same
limit.
`--models a,b` keeps only the named rows' models (e.g. `--models mobilenet_v2_like,small_convnet`); `--repeats N`
times N alternated pairs per row instead of 20 (5 with --quick): a loaded machine needs more for a stable median.
Run: python bench/executor.py [--quick] [--threads N] [--generic] [--profile] [--convs] [--models NAME,...]
                              [--repeats N]
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


def ort_int8(model, inputs: list[np.ndarray], skip_symbolic_shape: bool = True) -> bytes:
    """`model` quantised by onnxruntime's own tool, as its documentation does it: `quant_pre_process` (shape
    inference, BatchNormalization folded), then static QDQ with uint8 activations and int8 weights per output
    channel, calibrated on `inputs` (minmax). Runs in a temporary folder (its shape inference may leave a file in
    the working folder)."""
    import contextlib
    import logging
    import tempfile
    from pathlib import Path

    import onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    name = model.graph.input[0].name

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.feeds = iter([{name: x} for x in inputs])

        def get_next(self):
            return next(self.feeds, None)

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)        # the tool's "consider pre-processing" warnings (it is done) for this call only
    try:
        with tempfile.TemporaryDirectory() as d, contextlib.chdir(d):
            src, pre, out = (str(Path(d) / f) for f in ("float.onnx", "pre.onnx", "int8.onnx"))
            onnx.save(model, src)
            quant_pre_process(src, pre, skip_symbolic_shape=skip_symbolic_shape)
            quantize_static(pre, out, Reader(), quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                            weight_type=QuantType.QInt8, per_channel=True)
            return Path(out).read_bytes()
    finally:
        root.setLevel(level)


def _session(model: bytes, threads: int, profile: bool = False):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    if profile:
        import tempfile
        from pathlib import Path
        so.enable_profiling = True
        so.profile_file_prefix = str(Path(tempfile.gettempdir()) / "npurt-bench-ort-profile")
    return ort.InferenceSession(model, so)


def _executor(cm, x: np.ndarray, inplace: bool, exec_threads: int | None = None):
    """An executor of `cm` bound to a fresh arena with input `x` packed (its compiled steps split over
    `exec_threads` when given: $NPURT_EXEC_THREADS is read at bind)."""
    from npurt.exec.executor import Executor, allocate
    from npurt.runtime.user_io import pack_input
    saved = os.environ.get("NPURT_EXEC_THREADS")
    if exec_threads is not None:
        os.environ["NPURT_EXEC_THREADS"] = str(exec_threads)
    try:
        w, a, ins, outs = allocate(cm)
        ex = Executor(cm, inplace=inplace)
        ex.bind(w, a, ins, outs)
    finally:
        if saved is None:
            os.environ.pop("NPURT_EXEC_THREADS", None)
        else:
            os.environ["NPURT_EXEC_THREADS"] = saved
    pack_input(cm.native_input_attrs[0], x, ins[0])
    return ex


def _models(quick: bool, only: list[str] | None = None) -> list[tuple[str, object]]:
    """(name, ONNX model) of every row, or of the `--models` ones (or `only`) only."""
    from npurt.model import zoo
    if quick:
        sizes = {"mobilenet_v2_like": 96, "resnet_small": 64, "yolov8n_like": 160, "small_convnet": 32}
    else:
        sizes = {"mobilenet_v2_like": 224, "mobilenet_v1": 224, "resnet_small": 224, "yolov8n_like": 320,
                 "yolo_head": 320, "small_convnet": 32}
    wanted = only or (sys.argv[sys.argv.index("--models") + 1].split(",") if "--models" in sys.argv else None)
    if wanted:
        unknown = [n for n in wanted if n not in sizes]
        if unknown:
            raise SystemExit(f"--models: unknown {', '.join(unknown)} (known: {', '.join(sizes)})")
        sizes = {n: sizes[n] for n in wanted}
    return [(name, getattr(zoo, name)(size=size)) for name, size in sizes.items()]


THREADED = ("mobilenet_v1", "resnet_small", "yolo_head")      # the 2-thread block's models (quick: resnet_small)


def row_inputs(sess) -> tuple[dict, np.ndarray, list[np.ndarray]]:
    """(onnxruntime feed, input x, calibration inputs: x and three more) of a row, from a seeded generator."""
    shape = [d if isinstance(d, int) else 1 for d in sess.get_inputs()[0].shape]
    rng = np.random.default_rng(0)
    x = rng.normal(size=shape).astype(np.float32)
    return {sess.get_inputs()[0].name: x}, x, [x] + [rng.normal(size=shape).astype(np.float32) for _ in range(3)]


def compile_row(model, precision: str, calibration: list[np.ndarray]):
    """The row's npurt model: fp16, or int8 calibrated on `calibration`."""
    import npurt
    return npurt.compile(model, **({"quantize": calibration, "progress": False} if precision == "int8" else
                                   {"precision": precision}))


def print_limit(console) -> float:
    """Print and return the int8 conv's measured limit at the level in use (GMAC/s)."""
    from npurt import _kernels
    mix, limit = int8_limit(_kernels.level())
    console.print(f"int8 conv limit at {_kernels.level()} ({mix}, register-only, this run): {limit:.1f} GMAC/s")
    return limit


def _op_profile(ex, sess, feed: dict, runs: int) -> dict[str, tuple[float, float]]:
    """{op type: (npurt us, onnxruntime us)} per run (medians of `runs`); onnxruntime's from its profiler."""
    import json
    import statistics
    npurt_times: dict[str, list[float]] = {}
    for _ in range(runs):
        per: dict[str, float] = {}
        for us, node in ex.run_profiled():
            op = node.op_type + (node.activation or "") if hasattr(node, "op_type") else str(node)
            per[op] = per.get(op, 0.0) + us
        for op, us in per.items():
            npurt_times.setdefault(op, []).append(us)
    for _ in range(runs):
        sess.run(None, feed)
    path = sess.end_profiling()
    with open(path) as f:
        events = json.load(f)
    os.remove(path)
    ort_sum: dict[str, float] = {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            op = e["args"].get("op_name", "?")
            ort_sum[op] = ort_sum.get(op, 0.0) + e["dur"]
    ops = set(npurt_times) | set(ort_sum)
    return {op: (statistics.median(npurt_times[op]) if op in npurt_times else 0.0, ort_sum.get(op, 0.0) / (runs + 1))
            for op in ops}


def int8_limit(level: str) -> tuple[str, float]:
    """(instruction mix, GMAC/s): the int8 conv's limit at `level` on this machine, the best of 50 timed runs of
    `npk_int8_peak` (about 0.3 ms each, so that one of them falls between the load's bursts, as the convs' fastest
    calls do)."""
    from npurt import _kernels
    kind, mix = (2, "vpdpbusd zmm") if level == "avx512vnni" else (0, "vpmaddwd + vpaddd ymm")
    if _kernels.lib is None or _kernels.lib.npk_int8_peak(kind, 1000) <= 0:
        return mix, 0.0
    best = 0.0
    for _ in range(50):
        t0 = time.perf_counter()
        macs = _kernels.lib.npk_int8_peak(kind, 200_000)
        best = max(best, macs / (time.perf_counter() - t0) / 1e9)
    return mix, best


def _conv_class(cm, node) -> tuple[str, int, bool]:
    """(shape class, multiply-adds per run, depthwise) of a Conv node of compiled model `cm`."""
    w = cm.graph.tensor(node.inputs[1]).shape
    out = cm.storage[node.outputs[0]].shape
    group = node.attrs.get("group", 1)
    kh, kw = w[2], w[3]
    sh, sw = node.attrs.get("strides", [1, 1])
    depthwise = group > 1 and w[1] == 1
    name = ("depthwise " if depthwise else "grouped " if group > 1 else "") + f"{kh}x{kw}" \
        + (f" s{sh}" if (sh, sw) != (1, 1) else "")
    return name, int(out[1] * out[2] * out[3] * w[1] * kh * kw), depthwise


def _conv_profile(ex, runs: int) -> dict[str, tuple[float, int, bool]]:
    """{Conv shape class: (npurt us per run (median of `runs`), multiply-adds, depthwise)}."""
    import statistics
    times: dict[str, list[float]] = {}
    info: dict[str, tuple[int, bool]] = {}
    for k in range(runs):
        per: dict[str, float] = {}
        for us, node in ex.run_profiled():
            if getattr(node, "op_type", None) != "Conv":
                continue
            name, macs, dw = _conv_class(ex.model, node)
            per[name] = per.get(name, 0.0) + us
            if k == 0:
                info[name] = (info.get(name, (0, dw))[0] + macs, dw)
        for name, us in per.items():
            times.setdefault(name, []).append(us)
    return {name: (statistics.median(ts), *info[name]) for name, ts in times.items()}


def conv_shapes(quick: bool) -> list[tuple]:
    """The dense Conv shapes of the int8 models, once each in model order: (model, c_in, c_out, (ho, wo), kernel,
    strides); c_in padded to the int8 conv's lanes (16, or 4 for a 3-channel input)."""
    import npurt
    seen, shapes = set(), []
    for name, model in _models(quick):
        cm = npurt.compile(model, precision="fp16")         # the shapes only: no calibration needed
        for node in cm.graph.nodes:
            if node.op_type != "Conv" or node.attrs.get("group", 1) != 1:
                continue
            w = cm.graph.tensor(node.inputs[1]).shape
            out = cm.storage[node.outputs[0]].shape
            cin = 4 if w[1] <= 4 else -(-w[1] // 16) * 16
            key = (cin, -(-out[1] // 16) * 16, (out[2], out[3]), (w[2], w[3]),
                   tuple(node.attrs.get("strides", [1, 1])))
            if key not in seen:
                seen.add(key)
                shapes.append((name,) + key)
    return shapes


def conv_rates(shapes: list[tuple], calls: int = 25) -> list[dict]:
    """GMAC/s of the compiled int8 conv (`_kernels.int8_conv`, int8 store) alone on each shape, at the level in
    use: the fastest of `calls` calls on random codes."""
    from npurt import _kernels
    rng = np.random.default_rng(0)
    rows = []
    for name, cin, cout, (ho, wo), (kh, kw), (sh, sw) in shapes:
        cc = 16 if cin >= 16 else cin
        hp, wp = (ho - 1) * sh + kh, (wo - 1) * sw + kw
        x = rng.integers(-128, 128, (cin // cc, hp, wp, cc), dtype=np.int8)
        w = rng.integers(-128, 128, (kh * kw * cin, cout), dtype=np.int8)
        colsum = w.astype(np.int64).sum(axis=0).astype(np.int32)
        out = np.empty((cout // 16, ho, wo, 16), np.int8)
        run = _kernels.int8_conv(x, w, colsum, 3, np.full(cout, 1e-4, np.float32), np.zeros(cout, np.float32),
                                 (kh, kw), (sh, sw), (1, 1), (ho, wo), out=out, wide=lambda n: np.empty(n, np.int16))
        if run is None:
            continue
        best = float("inf")
        for _ in range(calls):
            t0 = time.perf_counter()
            run()
            best = min(best, time.perf_counter() - t0)
        macs = ho * wo * cout * kh * kw * cin
        rows.append({"model": name, "shape": f"{kh}x{kw}{f' s{sh}' if (sh, sw) != (1, 1) else ''} {cin}->{cout} "
                     f"{ho}x{wo}", "us": best * 1e6, "gmacs": macs / best / 1e9})
    return rows


def run(quick: bool = False, inplace: bool = True, profile: bool = False) -> list[dict]:
    """One row per (model, precision): npurt and ORT median latency (ms) and their ratio; int8 rows also against
    onnxruntime's int8; then, at 1 thread, the 2-thread rows (`mode`)."""
    threads = blas_threads()
    repeats = int(sys.argv[sys.argv.index("--repeats") + 1]) if "--repeats" in sys.argv else 5 if quick else 20
    rows, kept = [], {}
    for name, model in _models(quick):
        sess = _session(model.SerializeToString(), threads)
        feed, x, calibration = row_inputs(sess)
        kept[name, "fp32"] = model.SerializeToString()
        for precision in ("fp16", "int8"):
            cm = compile_row(model, precision, calibration)
            ex = _executor(cm, x, inplace)
            block = 1 if threads == 1 else 10
            t_np, t_ort = median_pair(ex.run, lambda: sess.run(None, feed), repeats if threads == 1 else 3, block)
            share = _conversion_share(ex, 1 if quick else 3)
            row = {"model": name, "precision": precision, "threads": threads,
                   "npurt_ms": t_np * 1e3, "ort_ms": t_ort * 1e3, "ratio": t_np / t_ort,
                   "conversion_share": share,
                   "inplace_steps": sum(1 for st in ex._steps if not st[2] and not st[3]),
                   "steps": len(ex._steps),
                   "kernel_ratio": t_np * (1 - share) / t_ort,
                   "glue_us": _glue_per_step(cm, inplace, repeats) * 1e6,
                   "arena_bytes": cm.internal_size, "weight_bytes": cm.weight_size}
            kept[name, precision] = (cm, x, feed)
            if precision == "int8":
                q = ort_int8(model, calibration)
                kept[name, "ort int8"] = q
                sess8 = _session(q, threads)
                t_np8, t_ort8 = median_pair(ex.run, lambda: sess8.run(None, feed), repeats if threads == 1 else 3,
                                            block)
                row.update({"npurt_int8_ms": t_np8 * 1e3, "ort_int8_ms": t_ort8 * 1e3, "vs_ort_int8": t_np8 / t_ort8})
                if profile:
                    row["profile"] = _op_profile(ex, _session(q, threads, profile=True), feed, repeats)
                    row["conv_profile"] = _conv_profile(ex, repeats)
            rows.append(row)
    if threads == 1 and "--threads" not in sys.argv:
        rows += _two_threads(rows, kept, inplace, 3 if quick else 6)
    return rows


def _two_threads(rows: list[dict], kept: dict, inplace: bool, repeats: int) -> list[dict]:
    """The 2-thread block: npurt ($NPURT_EXEC_THREADS=2) fp16 against onnxruntime float32 and int8 against
    onnxruntime int8, both with 2 intra-op threads, alternating in blocks of 10; beside the 1-thread ratios."""
    out = []
    one = {(r["model"], r["precision"]): r for r in rows}
    for name in [n for n in THREADED if (n, "fp16") in kept]:
        for precision in ("fp16", "int8"):
            cm, x, feed = kept[name, precision]
            sess = _session(kept[name, "ort int8" if precision == "int8" else "fp32"], 2)
            ex = _executor(cm, x, inplace, exec_threads=2)
            t_np, t_ort = median_pair(ex.run, lambda: sess.run(None, feed), repeats, 10)
            r1 = one[name, precision]
            ratio1 = r1["vs_ort_int8"] if precision == "int8" else r1["ratio"]
            out.append({"model": name, "precision": precision, "mode": "2 threads", "threads": 2,
                        "peer": "ort int8" if precision == "int8" else "ort fp32",
                        "npurt_ms": t_np * 1e3, "ort_ms": t_ort * 1e3, "ratio": t_np / t_ort, "ratio_1thread": ratio1,
                        "npurt_ms_1thread": r1["npurt_int8_ms" if precision == "int8" else "npurt_ms"]})
    return out


def main() -> None:
    from rich.console import Console
    from rich.table import Table

    quick = "--quick" in sys.argv
    if "--convs" in sys.argv:
        console = Console(width=180)
        console.print(cpu())
        rows = conv_rates(conv_shapes(quick))
        limit = print_limit(console)
        table = Table(title="the compiled int8 conv alone per dense conv shape (fastest of 25 calls)")
        for col in ("model", "shape (k s cin->cout out)", "us", "GMAC/s", "of limit"):
            table.add_column(col, justify="left" if col in ("model", "shape (k s cin->cout out)") else "right")
        for r in rows:
            table.add_row(r["model"], r["shape"], f"{r['us']:.0f}", f"{r['gmacs']:.1f}",
                          f"{r['gmacs'] / limit:.0%}" if limit else "")
        console.print(table)
        return
    if "--threads" in sys.argv:
        os.environ["NPURT_BLAS_THREADS"] = os.environ["NPURT_EXEC_THREADS"] = sys.argv[sys.argv.index("--threads") + 1]
    rows = run(quick=quick, inplace="--generic" not in sys.argv, profile="--profile" in sys.argv)
    console = Console(width=180)
    console.print(f"{cpu()}; threads (npurt BLAS = onnxruntime intra_op): {rows[0]['threads'] if rows else blas_threads()}")
    path = "generic steps only" if "--generic" in sys.argv else "in-place steps"
    table = Table(title=f"npurt executor ({path}) vs onnxruntime (batch 1, median)")
    for col in ("model", "precision", "npurt ms", "ORT fp32 ms", "ratio", "ORT int8 ms", "vs ORT int8",
                "in-place steps", "in conversions", "kernels-only ratio", "glue us/step", "arena", "weights"):
        table.add_column(col, justify="right" if col not in ("model", "precision") else "left")
    for r in rows:
        if "mode" in r:
            continue
        int8 = "vs_ort_int8" in r
        table.add_row(r["model"], r["precision"], f"{r['npurt_ms']:.2f}", f"{r['ort_ms']:.2f}", f"{r['ratio']:.2f}x",
                      f"{r['ort_int8_ms']:.2f}" if int8 else "", f"{r['vs_ort_int8']:.2f}x" if int8 else "",
                      f"{r['inplace_steps']}/{r['steps']}", f"{r['conversion_share'] * 100:.0f}%",
                      f"{r['kernel_ratio']:.2f}x", f"{r['glue_us']:.1f}",
                      f"{r['arena_bytes'] / 2**20:.2f} MiB",
                      f"{r['weight_bytes'] / 2**20:.2f} MiB")
    console.print(table)
    two = [r for r in rows if r.get("mode") == "2 threads"]
    if two:
        table = Table(title="2 threads: npurt $NPURT_EXEC_THREADS=2 vs onnxruntime intra_op 2 (blocks of 10, median)")
        for col in ("model", "precision", "peer", "npurt ms (1 -> 2 threads)", "peer ms", "ratio", "1-thread ratio"):
            table.add_column(col, justify="right" if col not in ("model", "precision", "peer") else "left")
        for r in two:
            table.add_row(r["model"], r["precision"], r["peer"], f"{r['npurt_ms_1thread']:.2f} -> {r['npurt_ms']:.2f}",
                          f"{r['ort_ms']:.2f}", f"{r['ratio']:.2f}x", f"{r['ratio_1thread']:.2f}x")
        console.print(table)
    if any("conv_profile" in r for r in rows):
        limit = print_limit(console)
        table = Table(title="npurt int8 Conv steps per shape class: rate against that limit")
        for col in ("model", "conv shape", "npurt us", "GMAC", "GMAC/s", "of limit"):
            table.add_column(col, justify="left" if col in ("model", "conv shape") else "right")
        for r in rows:
            for name, (us, macs, dw) in sorted(r.get("conv_profile", {}).items(), key=lambda kv: -kv[1][0]):
                rate = macs / us / 1e3 if us else 0.0
                table.add_row(r["model"], name + (" (float32)" if dw else ""), f"{us:.0f}", f"{macs / 1e9:.3f}",
                              f"{rate:.1f}", "" if dw or not limit else f"{rate / limit:.0%}")
        console.print(table)
    for r in rows:
        if "profile" not in r:
            continue
        table = Table(title=f"{r['model']} int8 per op type, us per run: npurt vs onnxruntime int8")
        for col in ("op", "npurt us", "ORT int8 us"):
            table.add_column(col, justify="left" if col == "op" else "right")
        for op, (a, b) in sorted(r["profile"].items(), key=lambda kv: -max(kv[1])):
            table.add_row(op, f"{a:.0f}", f"{b:.0f}")
        console.print(table)


if __name__ == "__main__":
    main()
