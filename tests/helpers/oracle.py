"""onnxruntime as the tests' numerical oracle, built in one place: a CPU session with one intra-op thread (the same
results on every machine and under xdist, where the 2 workers share the cores), from a ModelProto, bytes or a path."""
from __future__ import annotations

import functools
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


@functools.cache
def warm_up() -> None:
    """Build one session, once per process: onnxruntime's first session opens fds it keeps for the process's life
    (3 here), which a leak check taken around a test's first oracle call would count as the test's."""
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "warm_up", [x],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    run_ort(helper.make_model(graph), {"x": np.zeros(1, np.float32)})
