"""The LLM-shaped flow of onnxruntime's QNN EP on npurt's libQnnHtp.so (docs/qnn-ort.md, "An LLM-shaped pair").

On a phone an LLM ships as a prompt graph (many tokens at once) and a token graph (one token per step) of the same
decoder weights, generated into one weight-shared context binary and loaded into one context both sessions run on.
Here with one small pre-LN decoder block (npurt's zoo `transformer_block`: LayerNorm, attention, GELU MLP) at
sequence 16 (prompt) and 1 (token), the same weights:
1. generated through the EP without sharing (a binary each) and with `ep.share_ep_contexts=1` (the last session with
   `ep.stop_share_ep_contexts=1`): one 2-graph binary holding the weights once;
2. each pair loaded in two sessions (with sharing: `ep.share_ep_contexts=1`, the second session runs on the first's
   context), both run, outputs vs onnxruntime CPU;
3. the QNN memory report (`npurt.qnn.memory_report`) of each load: the weights once instead of twice.
Needs onnxruntime-qnn and a C compiler (npurt's QNN libraries are built into a temporary folder first).
Run: python examples/qnn_llm_pair.py
"""
from __future__ import annotations

import ctypes
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx

SEQ = {"prompt": 16, "token": 1}
DIM, HEADS = 64, 4


def qnn_libraries(folder: Path) -> Path:
    """npurt's libQnnHtp.so, libQnnSystem.so and libcdsprpc.so built into `folder` (as `npurt capi` does), and
    onnxruntime-qnn's plugin EP registered; the lib folder to give as `backend_path`'s folder."""
    import onnxruntime as ort
    import onnxruntime_qnn
    from npurt.capi.install import QNN_LIBRARIES, install
    install(folder, QNN_LIBRARIES)
    lib = folder / "lib"
    ctypes.CDLL(str(lib / "libcdsprpc.so"), mode=ctypes.RTLD_GLOBAL)   # the EP opens libcdsprpc.so by name
    if not any(d.ep_name == "QNNExecutionProvider" for d in ort.get_ep_devices()):
        ort.register_execution_provider_library("QNNExecutionProvider", onnxruntime_qnn.get_library_path())
    return lib


def qnn_session(model: Path, lib: Path, config: dict | None = None):
    """An InferenceSession of `model` on the QNN EP over npurt's libQnnHtp.so (no CPU fallback), with the session
    `config` entries."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.log_severity_level = 3
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    for key, value in (config or {}).items():
        so.add_session_config_entry(key, str(value))
    devices = [d for d in ort.get_ep_devices() if d.ep_name == "QNNExecutionProvider"]
    so.add_provider_for_devices(devices, {"backend_path": str(lib / "libQnnHtp.so")})
    return ort.InferenceSession(str(model), sess_options=so)


def decoder_pair(folder: Path, dim: int = DIM) -> dict[str, Path]:
    """The prompt and token graphs of one decoder block of width `dim` (same seed: same weights), saved as ONNX in
    `folder`."""
    from npurt.model import zoo
    paths = {}
    for name, seq in SEQ.items():
        paths[name] = folder / f"{name}.onnx"
        onnx.save(zoo.transformer_block(seq=seq, dim=dim, heads=HEADS, seed=0), paths[name])
    return paths


def generate(models: dict[str, Path], lib: Path, folder: Path, share: bool) -> dict[str, Path]:
    """EPContext models of `models` written into `folder` by the EP: each its own binary, or (`share`) one
    weight-shared binary of both graphs. The generation sessions are closed before returning."""
    out = {}
    for k, (name, path) in enumerate(models.items()):
        out[name] = folder / f"{name}_ctx.onnx"
        config = {"ep.context_enable": 1, "ep.context_file_path": out[name]}
        if share:
            config["ep.share_ep_contexts"] = 1
            if k == len(models) - 1:
                config["ep.stop_share_ep_contexts"] = 1
        qnn_session(path, lib, config)
    return out


def binaries(folder: Path) -> list[Path]:
    """The context binary files the EP wrote into `folder`."""
    return sorted(folder.glob("*.bin"))


def load(ctx_models: dict[str, Path], lib: Path, share: bool) -> tuple[dict, float]:
    """A session per EPContext model (with `share`: `ep.share_ep_contexts=1`, one context for both) and the seconds
    the loads took."""
    t0 = time.perf_counter()
    sessions = {name: qnn_session(path, lib, {"ep.share_ep_contexts": 1} if share else None)
                for name, path in ctx_models.items()}
    return sessions, time.perf_counter() - t0


def flow(models: dict[str, Path], lib: Path, folder: Path, share: bool, xs: dict, refs: dict) -> dict[str, int]:
    """Generate, load and run the pair (with or without sharing), printing the binaries, the load time, the QNN
    memory report and each graph's error; the report's totals. The sessions are closed on return."""
    import npurt.qnn as q
    label = "shared" if share else "separate"
    folder.mkdir()
    ctx_models = generate(models, lib, folder, share)
    files = binaries(folder)
    print(f"{label}: {len(files)} context binary file(s), {sum(f.stat().st_size for f in files):,} B "
          f"({', '.join(f.name for f in files)})")
    sessions, seconds = load(ctx_models, lib, share)
    report = q.memory_report()
    print(f"{label}: both sessions loaded in {seconds * 1e3:.1f} ms; QNN memory report:")
    print("\n".join("    " + line for line in report.lines()))
    assert len(report.contexts) == (1 if share else 2)         # with sharing both sessions run on one context
    for name, session in sessions.items():
        y = session.run(None, {"x": xs[name]})[0]
        err = float(np.abs(y - refs[name]).max())
        print(f"{label}: {name} graph (seq {SEQ[name]}) on the EP: max |npurt - onnxruntime CPU| = {err:.2e}")
        assert err <= 4e-3 * max(1.0, float(np.abs(refs[name]).max())), f"{name}: {err}"   # fp16 on the HTP
    totals = report.totals()
    print(f"{label}: weights {totals['weights']:,} B stored, {totals['weight_memory']:,} B in device memory")
    return totals


def main() -> None:
    import onnxruntime as ort
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="npurt-qnn-llm-") as tmp:
        work = Path(tmp)
        lib = qnn_libraries(work / "prefix")
        models = decoder_pair(work)
        xs = {name: rng.normal(size=(1, seq, DIM)).astype(np.float32) for name, seq in SEQ.items()}
        refs = {name: ort.InferenceSession(str(models[name]), providers=["CPUExecutionProvider"]).run(
            None, {"x": xs[name]})[0] for name in SEQ}
        separate = flow(models, lib, work / "separate", False, xs, refs)
        shared = flow(models, lib, work / "shared", True, xs, refs)
    saved = separate["weight_memory"] - shared["weight_memory"]
    print(f"sharing saves {separate['weights'] - shared['weights']:,} B of stored weights and {saved:,} B of "
          f"weight memory ({saved / separate['weight_memory']:.0%})")
    assert saved > 0
    print("qnn_llm_pair example OK")


if __name__ == "__main__":
    main()
