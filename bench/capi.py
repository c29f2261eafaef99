"""The C face's cost over the Python mirror, in one run: the same calls from a C program linked against npurt's
librknnrt.so (bench/capi_bench.c) and from Python on `npurt.rknn` — rknn_query (INPUT_ATTR),
rknn_create_mem + rknn_destroy_mem, and a zero-copy rknn_run on a tiny convnet and on a MobileNet-sized model;
plus the first call (rknn_init starting the interpreter inside the C program) against a fresh Python process
importing npurt.rknn and calling rknn_init; and QNN graphExecute through libQnnHtp.so
(examples/c/qnn_shared_buffer.c: small_convnet 32x32 fp16 sm8550, every I/O tensor in one rpcmem SHARED_BUFFER)
against the same registration and calls on `npurt.qnn`.
Each time is the best of several batches, and the two sides alternate for a few rounds (best of each kept), so a
machine busy with other work skews both alike; µs per call; ratio = C / Python (goal: <= 1.05 on the MobileNet
run, <= 50 µs extra on the tiny calls). Rows also give the load average during the run.

`run(quick)` returns rows {name, c_us, python_us, extra_us, ratio}; `python bench/capi.py [--quick]` prints them.
The libraries are built first (needs gcc and the Python headers, as `npurt capi` does).
"""
from __future__ import annotations

import ctypes
import os
import shutil
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


def _qnn_c_us(prefix: Path, work: Path, model: Path, calls: int, batches: int) -> float:
    """Best of `batches` means of `calls` graphExecute calls of examples/c/qnn_shared_buffer.c (µs per call)."""
    shutil.copytree(HERE.parent / "examples" / "c", work / "c", dirs_exist_ok=True)
    subprocess.run(["make", "-s", "-C", str(work / "c"), f"PREFIX={prefix}", "qnn_shared_buffer"], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NPURT_")}
    env["LD_LIBRARY_PATH"] = str(prefix / "lib")
    best = float("inf")
    for _ in range(batches):
        proc = subprocess.run([str(work / "c" / "qnn_shared_buffer"), str(model), str(calls)], capture_output=True,
                              text=True, env=env, check=True)
        best = min(best, float(next(x for x in proc.stdout.splitlines() if x.startswith("graphExecute_us")).split()[1]))
    return best


def _qnn_python_us(model: Path, calls: int, batches: int) -> float:
    """The same flow on the Python mirror: one SHARED_BUFFER for every I/O tensor, then graphExecute calls."""
    import numpy as np
    import npurt
    import npurt.qnn as q
    blob = model.read_bytes()
    qi = q.interface("fastrpc")
    backend, device, ctx, graph = (q.Qnn_BackendHandle_t(), q.Qnn_DeviceHandle_t(), q.Qnn_ContextHandle_t(),
                                   q.Qnn_GraphHandle_t())
    assert qi.backendCreate(None, None, backend) == 0 and qi.deviceCreate(None, None, device) == 0
    assert qi.contextCreateFromBinary(backend, device, None, blob, len(blob), ctx, None) == 0
    compiled = npurt.load_compiled(blob)
    assert qi.graphRetrieve(ctx, compiled.graph.name, graph) == 0
    ins, outs = q.io_tensors(compiled)
    specs = q.tensor_specs(compiled)[0] + q.tensor_specs(compiled)[1]
    total = sum(s.nbytes for s in specs)
    ptr = q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, q.RPCMEM_DEFAULT_FLAGS, total)
    fd, offset, keep = q.rpcmem_to_fd(ptr), 0, []
    for t, spec in zip(ins + outs, specs):
        htp = q.QnnMemHtp_Descriptor_t(type=q.QNN_HTP_MEM_SHARED_BUFFER, size=total)
        htp.sharedBufferConfig.fd, htp.sharedBufferConfig.offset = fd, offset
        desc = q.Qnn_MemDescriptor_t(dataType=spec.data_type, memType=q.QNN_MEM_TYPE_CUSTOM)
        desc.memShape.numDim, desc.memShape.dimSize = t.v1.rank, t.v1.dimensions
        desc.customInfo = ctypes.addressof(htp)
        keep.append(htp)
        t.v1.memType = q.QNN_TENSORMEMTYPE_MEMHANDLE
        assert qi.memRegister(ctx, desc, 1, q.field_ref(t.v1, "memHandle")) == 0
        offset += spec.nbytes
    view = q.rpcmem_view(ptr, specs[0].nbytes, np.float32)
    view[:] = np.sin(0.01 * np.arange(view.size))
    run = lambda: qi.graphExecute(graph, ins, len(ins), outs, len(outs), None, None)  # noqa: E731
    assert run() == 0
    us = _best(run, calls, batches)
    for t in ins + outs:
        qi.memDeRegister([t.v1.memHandle], 1)
    q.rpcmem_free(ptr)
    qi.contextFree(ctx, None)
    qi.backendFree(backend)
    qi.deviceFree(device)
    return us


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
        qnn_model = work / "qnn.bin"
        npurt.compile(zoo.small_convnet(32), soc="sm8550", progress=False).save(qnn_model)
        calls = max(5, iters // 10)
        c_us: dict[str, float] = {}
        py_us: dict[str, float] = {}
        for _ in range(2 if quick else 3):
            py = _python_side(models, iters, batches)
            py["first_call"] = _first_call_python(tiny)
            py["qnn"] = _qnn_python_us(qnn_model, calls, batches)
            c = _c_side(prefix, work, models, iters, batches)
            c["qnn"] = _qnn_c_us(prefix, work, qnn_model, calls, batches)
            for side, got in ((c_us, c), (py_us, py)):
                for key, value in got.items():
                    side[key] = min(value, side.get(key, float("inf")))
    labels = {"first_call": "first call: rknn_init (+ interpreter start / import)",
              "rknn_run:0": "rknn_run small_convnet 16", "rknn_run:1": f"rknn_run mobilenet_v1 {128 if quick else 224}",
              "qnn": "QNN graphExecute small_convnet 32"}
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
