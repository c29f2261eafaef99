"""The C face's cost over the Python mirror, in one run: the same calls from a C program linked against npurt's
librknnrt.so (bench/capi_bench.c) and from Python on `npurt.rknn` — rknn_query (INPUT_ATTR),
rknn_create_mem + rknn_destroy_mem, and a zero-copy rknn_run on a tiny convnet and on a MobileNet-sized model;
plus the first call (rknn_init starting the interpreter inside the C program) against a fresh Python process
importing npurt.rknn and calling rknn_init.
Each time is the best of several batches, and the two sides alternate for a few rounds (best of each kept), so a
machine busy with other work skews both alike; µs per call; ratio = C / Python (goal: <= 1.05 on the MobileNet
run, <= 50 µs extra on the tiny calls). Rows also give the load average during the run.

`run(quick)` returns rows {name, c_us, python_us, extra_us, ratio}; `python bench/capi.py [--quick]` prints them.
The libraries are built first (needs gcc and the Python headers, as `npurt capi` does).
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _best(fn, iters: int, batches: int) -> float:
    best = float("inf")
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        best = min(best, (time.perf_counter() - t0) / iters)
    return best * 1e6


def _bind_io(r, ctx) -> list:
    mems = []
    for cmd in (r.RKNN_QUERY_NATIVE_INPUT_ATTR, r.RKNN_QUERY_NATIVE_OUTPUT_ATTR):
        attr = r.rknn_tensor_attr(index=0)
        r.rknn_query(ctx, cmd, attr, ctypes.sizeof(attr))
        mem = r.rknn_create_mem(ctx, attr.size_with_stride)
        r.rknn_set_io_mem(ctx, mem, attr)
        mems.append(mem)
    return mems


def _python_side(models: list[Path], iters: int, batches: int) -> dict[str, float]:
    import npurt.rknn as r
    out = {}
    for m, path in enumerate(models):
        ctx = r.rknn_context()
        assert r.rknn_init(ctx, str(path), 0, 0, None) == 0
        if m == 0:
            def query():
                attr = r.rknn_tensor_attr(index=0)
                r.rknn_query(ctx, r.RKNN_QUERY_INPUT_ATTR, attr, ctypes.sizeof(attr))
            out["rknn_query"] = _best(query, iters * 10, batches)
            out["rknn_create_mem+rknn_destroy_mem"] = _best(
                lambda: r.rknn_destroy_mem(ctx, r.rknn_create_mem(ctx, 4096)), iters * 2, batches)
        mems = _bind_io(r, ctx)
        r.rknn_run(ctx, None)
        out[f"rknn_run:{m}"] = _best(lambda: r.rknn_run(ctx, None), iters if m == 0 else max(2, iters // 20),
                                     batches)
        for mem in mems:
            r.rknn_destroy_mem(ctx, mem)
        r.rknn_destroy(ctx)
    return out


_FRESH = """
import sys, time
t0 = time.perf_counter()
import npurt.rknn as r
ctx = r.rknn_context()
assert r.rknn_init(ctx, sys.argv[1], 0, 0, None) == 0
print((time.perf_counter() - t0) * 1e6)
"""


def _first_call_python(model: Path) -> float:
    proc = subprocess.run([sys.executable, "-c", _FRESH, str(model)], capture_output=True, text=True, check=True)
    return float(proc.stdout.split()[-1])


def _c_side(prefix: Path, work: Path, models: list[Path], iters: int, batches: int) -> dict[str, float]:
    exe = work / "capi_bench"
    subprocess.run(["gcc", "-O2", "-I", str(prefix / "include"), str(HERE / "capi_bench.c"), "-o", str(exe),
                    "-L", str(prefix / "lib"), "-lrknnrt", f"-Wl,-rpath,{prefix / 'lib'}"], check=True)
    proc = subprocess.run([str(exe), str(batches), str(iters), *map(str, models)], capture_output=True, text=True,
                          check=True)
    return {name: float(v) for name, v in (line.split() for line in proc.stdout.splitlines())}


def run(quick: bool = False) -> list[dict]:
    import npurt
    from npurt.capi.install import install
    from npurt.model import zoo
    iters, batches = (40, 3) if quick else (200, 5)
    with tempfile.TemporaryDirectory(prefix="npurt-bench-capi-") as tmp:
        work = Path(tmp)
        prefix = work / "prefix"
        install(prefix)
        tiny = work / "tiny.npurt"
        tiny.write_bytes(npurt.compile(zoo.small_convnet(16), progress=False).to_bytes())
        big = work / "mobilenet.npurt"
        big.write_bytes(npurt.compile(zoo.mobilenet_v1(size=128 if quick else 224), progress=False).to_bytes())
        models = [tiny, big]
        c_us: dict[str, float] = {}
        py_us: dict[str, float] = {}
        for _ in range(2 if quick else 3):
            py = _python_side(models, iters, batches)
            py["first_call"] = _first_call_python(tiny)
            for side, got in ((c_us, _c_side(prefix, work, models, iters, batches)), (py_us, py)):
                for key, value in got.items():
                    side[key] = min(value, side.get(key, float("inf")))
    labels = {"first_call": "first call: rknn_init (+ interpreter start / import)",
              "rknn_run:0": "rknn_run small_convnet 16", "rknn_run:1": f"rknn_run mobilenet_v1 {128 if quick else 224}"}
    rows = []
    for key, c in c_us.items():
        p = py_us[key]
        rows.append({"name": labels.get(key, key), "c_us": round(c, 2), "python_us": round(p, 2),
                     "extra_us": round(c - p, 2), "ratio": c / p, "load": round(os.getloadavg()[0], 1)})
    return rows


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    for row in run(quick):
        print(f"{row['name']:<40} C {row['c_us']:>10.2f} µs   Python {row['python_us']:>10.2f} µs   "
              f"extra {row['extra_us']:>8.2f} µs   ratio {row['ratio']:.3f}")
