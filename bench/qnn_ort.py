"""onnxruntime's QNN execution provider on npurt's libQnnHtp.so against npurt's own Python call, in one run: the same
npurt context binary (NCHW graph I/O, sm8550, fp16) run as an EPContext model through onnxruntime-qnn
(`InferenceSession.run`, default EP options) and through the QNN mirror's graphExecute with client buffers
(`npurt.qnn`, what the EP calls underneath). Models: small_convnet 32x32, mobilenet_v1 (128 quick / 224) and a
three-output model (two block outputs also read inside, and the logits; the EP lists its outputs in its own order).
The two sides alternate (median of each, `_timing.median_pair`), so a busy machine skews both alike;
ratio = EP time / npurt time (goal: <= 1.1). The CPU, its vector instruction set and the load average are in the row.

The shared-weights pair (examples/qnn_llm_pair.py's prompt and token graphs of one decoder block, dim 64 quick /
256): the two EPContext models generated separately and with `ep.share_ep_contexts=1`, then loaded in two sessions
each way, alternating; ratio = shared load time / separate load time, with the weights' device memory of each
(`npurt.qnn.memory_report`).

`run(quick)` returns rows {name, ep_ms, npurt_ms, ratio, cpu, isa, load} and {name, shared_ms, separate_ms, ratio,
shared_weight_memory, separate_weight_memory, cpu, isa, load}; `python bench/qnn_ort.py [--quick]` prints them.
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


def _mirror(blob: bytes, compiled, x, ys):
    """graphExecute on the QNN mirror with client buffers `x` / `ys` (RAW tensors, the graph's output order), as the
    EP calls it."""
    import npurt.qnn as q
    qi = q.interface("fastrpc", soc="sm8550")
    b, d, ctx, g = q.Qnn_BackendHandle_t(), q.Qnn_DeviceHandle_t(), q.Qnn_ContextHandle_t(), q.Qnn_GraphHandle_t()
    assert qi.backendCreate(None, None, b) == 0 and qi.deviceCreate(None, None, d) == 0
    assert qi.contextCreateFromBinary(b, d, None, blob, len(blob), ctx, None) == 0
    assert qi.graphRetrieve(ctx, compiled.graph.name, g) == 0
    ins, outs = q.io_tensors(compiled)
    ins[0].v1.clientBuf.data, ins[0].v1.clientBuf.dataSize = x.ctypes.data, x.nbytes
    for t, y in zip(outs, ys):
        t.v1.clientBuf.data, t.v1.clientBuf.dataSize = y.ctypes.data, y.nbytes

    def run() -> None:
        assert qi.graphExecute(g, ins, 1, outs, len(outs), None, None) == 0

    def close() -> None:
        qi.contextFree(ctx, None), qi.deviceFree(d), qi.backendFree(b)
    return run, close


def _three_outputs(size: int):
    """x -> Conv -> Relu (output `block1`) -> Conv -> Relu (output `block2`) -> GlobalAveragePool -> Flatten -> Gemm
    (output `logits`): two outputs also consumed inside the graph, listed after the logits."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    n = helper.make_node
    inits = {"w1": rng.normal(0, 0.2, (16, 3, 3, 3)), "w2": rng.normal(0, 0.1, (16, 16, 3, 3)),
             "fc": rng.normal(0, 0.3, (10, 16)), "b": rng.normal(0, 0.1, 10)}
    nodes = [n("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]), n("Relu", ["c1"], ["block1"]),
             n("Conv", ["block1", "w2"], ["c2"], pads=[1, 1, 1, 1]), n("Relu", ["c2"], ["block2"]),
             n("GlobalAveragePool", ["block2"], ["p"]), n("Flatten", ["p"], ["f"]),
             n("Gemm", ["f", "fc", "b"], ["logits"], transB=1)]
    outs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10]),
            helper.make_tensor_value_info("block1", TensorProto.FLOAT, [1, 16, size, size]),
            helper.make_tensor_value_info("block2", TensorProto.FLOAT, [1, 16, size, size])]
    graph = helper.make_graph(nodes, "three_outputs", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                        [1, 3, size, size])],
                              outs, [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _shared_pair(work: Path, lib: Path, dim: int, repeats: int) -> dict:
    """Load time and weight memory of examples/qnn_llm_pair.py's prompt / token pair: separate binaries vs one
    weight-shared binary, each loaded in two sessions."""
    import gc
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
    import qnn_llm_pair as pair
    import npurt.qnn as q
    models = pair.decoder_pair(work, dim)
    ctx = {}
    for share in (False, True):
        folder = work / f"pair_{'shared' if share else 'separate'}"
        folder.mkdir()
        ctx[share] = pair.generate(models, lib, folder, share)
    memory = {}
    before = q.memory_report().totals()["weight_memory"]          # contexts of the cases before, if still alive

    def loader(share: bool):
        def once() -> None:
            sessions, _ = pair.load(ctx[share], lib, share)
            memory[share] = q.memory_report().totals()["weight_memory"] - before
            del sessions
            gc.collect()
        return once
    shared_s, separate_s = median_pair(loader(True), loader(False), repeats)
    return {"shared_ms": round(shared_s * 1e3, 2), "separate_ms": round(separate_s * 1e3, 2),
            "ratio": shared_s / separate_s, "shared_weight_memory": memory[True],
            "separate_weight_memory": memory[False]}


def run(quick: bool = False) -> list[dict]:
    import numpy as np
    import npurt
    import npurt.qnn as q
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
                 (f"mobilenet_v1 {128 if quick else 224}", zoo.mobilenet_v1(size=128 if quick else 224)),
                 (f"three_outputs {32 if quick else 96}", _three_outputs(32 if quick else 96))]
        for name, model in cases:
            compiled = set_graph_io_layout(npurt.compile(model, soc="sm8550", progress=False), "nchw")
            blob = compiled.to_bytes()
            session = _session(_epcontext(work, blob, compiled, name.split()[0]), lib)
            inp = session.get_inputs()[0]
            x = np.random.default_rng(0).normal(size=inp.shape).astype(np.float32)
            ys = [np.zeros(o.dims, np.float32) for o in q.tensor_specs(compiled)[1]]
            mirror, close = _mirror(blob, compiled, x, ys)
            feeds = {inp.name: x}
            ep_s, npurt_s = median_pair(lambda: session.run(None, feeds), mirror, repeats)
            close()
            del session
            rows.append({"name": f"{name}: EP run / graphExecute", "ep_ms": round(ep_s * 1e3, 3),
                         "npurt_ms": round(npurt_s * 1e3, 3), "ratio": ep_s / npurt_s, "cpu": cpu, "isa": isa,
                         "load": round(os.getloadavg()[0], 1)})
        dim = 64 if quick else 256
        rows.append({"name": f"decoder pair dim {dim}: load shared / separate",
                     **_shared_pair(work, lib, dim, 5 if quick else 15), "cpu": cpu, "isa": isa,
                     "load": round(os.getloadavg()[0], 1)})
    return rows


if __name__ == "__main__":
    for row in run("--quick" in sys.argv):
        if "ep_ms" in row:
            print(f"{row['name']:<48} EP {row['ep_ms']:>9.3f} ms   npurt {row['npurt_ms']:>9.3f} ms   "
                  f"ratio {row['ratio']:.3f}   {row['cpu']} ({row['isa']}), load {row['load']}")
        else:
            print(f"{row['name']:<48} shared {row['shared_ms']:>8.2f} ms   separate {row['separate_ms']:>8.2f} ms   "
                  f"ratio {row['ratio']:.3f}   weight memory {row['shared_weight_memory']:,} B shared, "
                  f"{row['separate_weight_memory']:,} B separate   {row['cpu']} ({row['isa']}), load {row['load']}")
