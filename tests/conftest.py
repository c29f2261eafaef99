"""Shared fixtures: onnxruntime as the numerical oracle, single-node ONNX models, the leak check (`open_fds()`,
`no_leaks`; tests import `from conftest import open_fds`) and `dev`, an RK3588 device closed without leaks."""
from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper


def _single_node(op: str, inputs: dict[str, np.ndarray], consts: dict[str, np.ndarray] | None = None,
                 n_outputs: int = 1, opset: int = 17, out_types=None, **attrs) -> onnx.ModelProto:
    """A one-node model: `inputs` become graph inputs, `consts` initializers (in that order;
    a name mapped to None is an omitted optional input); outputs y0.. of `out_types` (FLOAT)."""
    out_types = out_types or [TensorProto.FLOAT] * n_outputs
    consts = consts or {}
    names = list(inputs) + [k if v is not None else "" for k, v in consts.items()]
    outs = [f"y{i}" for i in range(n_outputs)]
    graph = helper.make_graph(
        [helper.make_node(op, names, outs, **attrs)], op,
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info(o, t, None) for o, t in zip(outs, out_types)],
        [numpy_helper.from_array(v, k) for k, v in consts.items() if v is not None],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def _ort(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


@pytest.fixture
def single_node():
    """Factory: single_node(op, inputs, consts=None, n_outputs=1, opset=17, **attrs) -> ModelProto."""
    return _single_node


@pytest.fixture
def run_ort():
    """run_ort(model, feeds) -> list of onnxruntime outputs (CPU, one thread)."""
    return _ort


def open_fds() -> int:
    """How many file descriptors this process has open."""
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def no_leaks(monkeypatch):
    """NPURT_SOC / NPURT_COHERENCE cleared; the test must give back every fd, device buffer and byte it took
    (the default device is held open for the test, so its accounting can be compared)."""
    from npurt.memory import open_device

    monkeypatch.delenv("NPURT_SOC", raising=False)
    monkeypatch.delenv("NPURT_COHERENCE", raising=False)
    fds = open_fds()
    dev = open_device()
    base = dev.stats()
    yield
    after = dev.stats()
    assert (after.buffers, after.ddr_bytes, after.sram_bytes) == (base.buffers, base.ddr_bytes, base.sram_bytes)
    dev.close()
    assert open_fds() == fds


@pytest.fixture
def dev():
    """The RK3588 device, opened for the test; closing it must report no leaked buffers."""
    from npurt.memory import open_device

    device = open_device("rk3588")
    yield device
    leaks = device.close()
    assert leaks == [], leaks
