"""onnxruntime as the tests' numerical oracle, built in one place: a CPU session with one intra-op thread (the same
results on every machine and under xdist, where the 2 workers share the cores), from a ModelProto, bytes or a path."""
from __future__ import annotations

import os

import numpy as np
import onnx


def ort_session(model: onnx.ModelProto | bytes | str | os.PathLike, threads: int = 1, quiet: bool = False):
    """An onnxruntime InferenceSession of `model` on the CPU provider with `threads` intra-op threads; `quiet` hides
    onnxruntime's warnings (log severity ERROR)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    if quiet:
        so.log_severity_level = 3
    source = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    return ort.InferenceSession(source if isinstance(source, bytes) else str(source), so,
                                providers=["CPUExecutionProvider"])


def run_ort(model: onnx.ModelProto | bytes | str | os.PathLike, feeds: dict[str, np.ndarray],
            threads: int = 1) -> list[np.ndarray]:
    """onnxruntime's outputs of `model` for `feeds` (input name -> array), in graph output order."""
    return ort_session(model, threads).run(None, feeds)
