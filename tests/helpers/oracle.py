"""onnxruntime as the tests' numerical oracle, built in one place: a CPU session with one intra-op thread (the same
results on every machine and under xdist, where the 2 workers share the cores), from a ModelProto, bytes or a path;
and onnxruntime's QNN execution provider (the `onnxruntime-qnn` plugin) as a client of npurt's libQnnHtp.so."""
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


@functools.cache
def _qnn_ep_devices(cdsprpc: str) -> tuple:
    """Register onnxruntime-qnn's plugin EP once per process and return its devices. npurt's libcdsprpc.so is loaded
    first (RTLD_GLOBAL): the EP opens "libcdsprpc.so" by bare name, which then resolves to the loaded library."""
    import ctypes

    import onnxruntime as ort
    import onnxruntime_qnn

    ctypes.CDLL(cdsprpc, mode=ctypes.RTLD_GLOBAL)
    ort.register_execution_provider_library("QNNExecutionProvider", onnxruntime_qnn.get_library_path())
    return tuple(d for d in ort.get_ep_devices() if d.ep_name == "QNNExecutionProvider")


def qnn_ep_session(model: str | os.PathLike, lib_dir: str | os.PathLike, threads: int = 1, fallback: bool = False,
                   profile: str | None = None, config: dict | None = None, **options: str):
    """An InferenceSession of `model` on onnxruntime's QNN EP with `backend_path` = npurt's libQnnHtp.so in
    `lib_dir` (its libQnnSystem.so beside it), CPU fallback disabled unless `fallback`, onnxruntime's profiling (per
    node: which provider ran it) written to the `profile` prefix if given, session `config` entries (e.g.
    `ep.context_enable`), the EP `options` as given (default options otherwise: no skip_qnn_version_check)."""
    import onnxruntime as ort

    devices = _qnn_ep_devices(os.path.join(lib_dir, "libcdsprpc.so"))
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.log_severity_level = 3
    if profile:
        so.enable_profiling, so.profile_file_prefix = True, profile
    if not fallback:
        so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    for key, value in (config or {}).items():
        so.add_session_config_entry(key, str(value))
    so.add_provider_for_devices(list(devices), {"backend_path": os.path.join(lib_dir, "libQnnHtp.so"),
                                                **{k: str(v) for k, v in options.items()}})
    return ort.InferenceSession(str(model), sess_options=so)
