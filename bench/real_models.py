"""Real trained models (the real-weights tier's: PP-OCRv4 det / cls / rec, YOLOv8n, ddddocr's detector and CRNN):
npurt fp16 and int8 latency against onnxruntime float32 on the same input, one thread each, in the same run; compile
time and peak RSS of each compile (VmHWM of a fresh process: the compile's plus the interpreter's and imports').

Latency: `Session.run(x)` (the copying path: packing the input, the executor, reading the outputs) against
`InferenceSession.run`, medians of alternate runs. ratio = npurt / onnxruntime (goals: fp16 <= 2.5, int8 <= 2).
int8 calibrates on 4 rendered / generated inputs. The wheels come from the tier's cache (downloaded on first use).
Prints the CPU and the instruction set npurt's compiled kernels use.
Run: python bench/real_models.py [--quick] [model ...]   (--quick: 2 repeats, fp16 only)
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from _timing import cpu, median_pair  # bench/ is on sys.path: the script's folder, or `npurt bench`'s

# The models, their download and their inputs are the real-weights tier's (one place for them).
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers import real_models as rm  # noqa: E402


def _compile_here(name: str, precision: str, out: str) -> None:
    """Compile `name` in this (fresh) process, write it to `out` and print "seconds peak_rss_mib"."""
    import npurt
    spec = rm.MODELS[name]
    kw = {"quantize": [_input(name, k) for k in range(1, 5)]} if precision == "int8" else {}
    t0 = time.perf_counter()
    compiled = npurt.compile(rm.model_path(name), soc="rk3588", progress=False,
                             input_shapes={spec.input: list(spec.shape)}, **kw)
    seconds = time.perf_counter() - t0
    Path(out).write_bytes(compiled.to_bytes())
    print(seconds, peak_rss_mib())


def peak_rss_mib() -> float:
    """This process's peak resident set (VmHWM: the high-water mark of its own address space, which starts afresh at
    exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def compile_in_child(name: str, precision: str, out: str) -> tuple[float, float]:
    """(compile seconds, peak RSS MiB) of compiling `name` in a fresh process (this script run with --compile); the
    result is written to `out`."""
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--compile", name, precision, out],
                          capture_output=True, text=True, check=True)
    seconds, rss = done.stdout.split()[-2:]
    return float(seconds), float(rss)


def _input(name: str, k: int):
    kind = rm.MODELS[name].kind
    if kind == "recognizer":
        return rm.rec_input(name, ["Hello npurt 2026", "paris", "abc123", "RK3588", "world"][k % 5])
    if kind == "classifier":
        return rm.cls_input("Hello npurt 2026", rotated=bool(k % 2))
    return rm.det_input(name, seed=k)




def run(quick: bool = False, names: list[str] | None = None) -> list[dict]:
    """One row per (model, precision); every model of the tier unless `names` (what `npurt bench` runs)."""
    import npurt
    os.environ.setdefault("NPURT_BLAS_THREADS", "1")
    rows = []
    for name in names or list(rm.MODELS):
        rm.model_path(name)                         # download / unzip outside the timed child
        x = _input(name, 0)
        session = rm._ort_session(name)
        feed = {rm.MODELS[name].input: x}
        for precision in ("fp16",) if quick else ("fp16", "int8"):
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, f"{name}.npurt")
                seconds, rss = compile_in_child(name, precision, path)
                with npurt.Session(path) as s:
                    t_npurt, t_ort = median_pair(lambda: s.run(x), lambda: session.run(None, feed),
                                                  2 if quick else 5)
                    cos = min(rm.cosine(a, b) for a, b in zip(s.run(x), session.run(None, feed)))
            rows.append({"model": name, "shape": "x".join(map(str, rm.MODELS[name].shape)), "precision": precision,
                         "npurt_ms": t_npurt * 1e3, "ort_ms": t_ort * 1e3, "ratio": t_npurt / t_ort,
                         "compile_s": seconds, "compile_peak_rss_mib": rss, "cosine": cos})
    return rows


def main() -> None:
    if sys.argv[1:2] == ["--compile"]:
        _compile_here(*sys.argv[2:5])
        return
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    print(cpu())
    for row in run(quick="--quick" in sys.argv, names=args or None):
        print(", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main()
