"""Accuracy analysis time against one float onnxruntime run, measured in the same run.

Row: MobileNet v1 int8 (the SRAM seed's network, 224x224), `npurt.api.accuracy.analyse` over 8 inputs (entire and
single errors of every tensor: two executor passes per input, the per-tensor reads and writes, the onnxruntime
reference with every intermediate exposed) against `InferenceSession.run` of the float model on the same 8 inputs
(default graph optimisations, the executor's thread count). ratio = analysis / onnxruntime (goal: <= 30).
Compilation and calibration are not timed. --quick: 96x96 input, 2 inputs.
Run: python bench/accuracy.py [--quick]
"""
from __future__ import annotations

import sys
import time

import numpy as np


def run(quick: bool = False) -> list[dict]:
    import onnxruntime as ort

    import npurt
    from npurt.api.accuracy import analyse
    from npurt.exec.kernels.blas import policy_threads
    from npurt.model import zoo

    size, n = (96, 2) if quick else (224, 8)
    model = zoo.mobilenet_v1(size=size)
    rng = np.random.default_rng(0)
    inputs = [rng.normal(size=(1, 3, size, size)).astype(np.float32) for _ in range(n)]
    compiled = npurt.compile(model, quantize=inputs[:4], progress=False)
    so = ort.SessionOptions()
    so.intra_op_num_threads = policy_threads()
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    sess.run(None, {name: inputs[0]})                                       # warm-up, both sides
    analyse(compiled, model, [[inputs[0]]])
    t0 = time.perf_counter()
    for x in inputs:
        sess.run(None, {name: x})
    t_ort = time.perf_counter() - t0
    t0 = time.perf_counter()
    report = analyse(compiled, model, [[x] for x in inputs])
    t_acc = time.perf_counter() - t0
    out = report.outputs()[0]
    return [{"model": f"mobilenet_v1 {size}", "precision": "int8", "inputs": n, "tensors": len(report.tensors),
             "analysis_s": t_acc, "ort_s": t_ort, "ratio": t_acc / t_ort,
             "output_cosine": out.entire_cosine,
             "lowest_single": min(report.tensors, key=lambda r: r.single_cosine).name,
             "advised": [r.name for r in report.worst()]}]


def main() -> None:
    for row in run(quick="--quick" in sys.argv):
        print(", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))


if __name__ == "__main__":
    main()
