"""onnxruntime's QNN execution provider on npurt's libQnnHtp.so against npurt's own Python call, in one run: the same
npurt context binary (NCHW graph I/O, sm8550, fp16) run as an EPContext model through onnxruntime-qnn
(`InferenceSession.run`, default EP options) and through the QNN mirror's graphExecute with client buffers
(`npurt.qnn`, what the EP calls underneath). Models: small_convnet 32x32 and mobilenet_v1 (128 quick / 224).
The two sides alternate (median of each, `_timing.median_pair`), so a busy machine skews both alike;
ratio = EP time / npurt time (goal: <= 1.1). The CPU, its vector instruction set and the load average are in the row.

`run(quick)` returns rows {name, ep_ms, npurt_ms, ratio, cpu, isa, load}; `python bench/qnn_ort.py [--quick]` prints
them.
Needs onnxruntime-qnn (the test extra) and a C compiler (the libraries are built first, as `npurt capi` does).
"""
from __future__ import annotations

import ctypes
import os
import platform
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import median_pair  # noqa: E402


def _cpu() -> tuple[str, str]:
    """CPU model name and the widest x86 vector extension it has (avx512f / avx2 / sse4.2)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "?", "?"
    name = next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("model name")), "?")
    flags = next((ln.split(":", 1)[1].split() for ln in text.splitlines() if ln.startswith("flags")), [])
    isa = next((f for f in ("avx512f", "avx2", "sse4_2") if f in flags), "?")
    return name, isa


def _epcontext(folder: Path, blob: bytes, compiled, name: str) -> Path:
    """An EPContext model over `blob` (embed_mode 0), as `npurt convert --epcontext` writes it."""
    import onnx
    from npurt.qnn.epcontext import epcontext_model
    (folder / f"{name}.bin").write_bytes(blob)
    path = folder / f"{name}_ctx.onnx"
    onnx.save(epcontext_model(compiled, f"{name}.bin", name), path)
    return path


def _session(path: Path, lib: Path):
    import onnxruntime as ort
    import onnxruntime_qnn
    if not any(d.ep_name == "QNNExecutionProvider" for d in ort.get_ep_devices()):
        ort.register_execution_provider_library("QNNExecutionProvider", onnxruntime_qnn.get_library_path())
    devices = [d for d in ort.get_ep_devices() if d.ep_name == "QNNExecutionProvider"]
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    so.add_provider_for_devices(devices, {"backend_path": str(lib / "libQnnHtp.so")})
    return ort.InferenceSession(str(path), sess_options=so)


def _mirror(blob: bytes, compiled, x, y):
    """graphExecute on the QNN mirror with client buffers `x` / `y` (RAW tensors), as the EP calls it."""
    import npurt.qnn as q
    qi = q.interface("fastrpc", soc="sm8550")
    b, d, ctx, g = q.Qnn_BackendHandle_t(), q.Qnn_DeviceHandle_t(), q.Qnn_ContextHandle_t(), q.Qnn_GraphHandle_t()
    assert qi.backendCreate(None, None, b) == 0 and qi.deviceCreate(None, None, d) == 0
    assert qi.contextCreateFromBinary(b, d, None, blob, len(blob), ctx, None) == 0
    assert qi.graphRetrieve(ctx, compiled.graph.name, g) == 0
    ins, outs = q.io_tensors(compiled)
    ins[0].v1.clientBuf.data, ins[0].v1.clientBuf.dataSize = x.ctypes.data, x.nbytes
    outs[0].v1.clientBuf.data, outs[0].v1.clientBuf.dataSize = y.ctypes.data, y.nbytes

    def run() -> None:
        assert qi.graphExecute(g, ins, 1, outs, 1, None, None) == 0

    def close() -> None:
        qi.contextFree(ctx, None), qi.deviceFree(d), qi.backendFree(b)
    return run, close


def run(quick: bool = False) -> list[dict]:
    import numpy as np
    import npurt
    from npurt.capi.install import QNN_LIBRARIES, install
    from npurt.model import zoo
    from npurt.qnn.graph import set_graph_io_layout
    repeats = 15 if quick else 40
    cpu, isa = _cpu()
    rows = []
    with tempfile.TemporaryDirectory(prefix="npurt-bench-qnn-ort-") as tmp:
        work = Path(tmp)
        install(work / "prefix", QNN_LIBRARIES)
        lib = work / "prefix" / "lib"
        ctypes.CDLL(str(lib / "libcdsprpc.so"), mode=ctypes.RTLD_GLOBAL)
        cases = [("small_convnet 32", zoo.small_convnet(32)),
                 (f"mobilenet_v1 {128 if quick else 224}", zoo.mobilenet_v1(size=128 if quick else 224))]
        for name, model in cases:
            compiled = set_graph_io_layout(npurt.compile(model, soc="sm8550", progress=False), "nchw")
            blob = compiled.to_bytes()
            session = _session(_epcontext(work, blob, compiled, name.split()[0]), lib)
            inp = session.get_inputs()[0]
            x = np.random.default_rng(0).normal(size=inp.shape).astype(np.float32)
            y = np.zeros(session.get_outputs()[0].shape, np.float32)
            mirror, close = _mirror(blob, compiled, x, y)
            feeds = {inp.name: x}
            ep_s, npurt_s = median_pair(lambda: session.run(None, feeds), mirror, repeats)
            close()
            del session
            rows.append({"name": f"{name}: EP run / graphExecute", "ep_ms": round(ep_s * 1e3, 3),
                         "npurt_ms": round(npurt_s * 1e3, 3), "ratio": ep_s / npurt_s, "cpu": cpu, "isa": isa,
                         "load": round(os.getloadavg()[0], 1)})
    return rows


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        print(f"{row['name']:<48} EP {row['ep_ms']:>9.3f} ms   npurt {row['npurt_ms']:>9.3f} ms   "
              f"ratio {row['ratio']:.3f}   {row['cpu']} ({row['isa']}), load {row['load']}")
