"""Shared fixtures: onnxruntime as the numerical oracle, single-node ONNX models, the one leak check (`no_leaks`,
which a module opts into with `pytestmark = pytest.mark.usefixtures("no_leaks")`; `open_fds()` for tests that count
fds themselves) and `dev`, an RK3588 device closed without leaks. Every test starts without the shell's NPURT_SOC,
NPURT_COHERENCE and RKNN_LOG_LEVEL. Helpers shared by several test modules live in `tests/helpers/`.

Hypothesis runs derandomized (the same examples on every run, no example database), so the suite gives the same
result on every machine and order; `NPURT_HYPOTHESIS=explore` draws new examples, to hunt for bugs by hand."""
from __future__ import annotations

import gc
import os

import numpy as np
import onnx
import pytest
from hypothesis import settings
from onnx import TensorProto, helper, numpy_helper

from helpers import oracle

settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile("explore" if os.environ.get("NPURT_HYPOTHESIS") == "explore" else "deterministic")


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


@pytest.fixture
def single_node():
    """Factory: single_node(op, inputs, consts=None, n_outputs=1, opset=17, **attrs) -> ModelProto."""
    return _single_node


@pytest.fixture
def rng() -> np.random.Generator:
    """A fresh generator with a fixed seed for each test, so its inputs do not depend on which tests ran before it
    (alone, in any order, under xdist)."""
    return np.random.default_rng(20)


@pytest.fixture
def run_ort():
    """run_ort(model, feeds) -> list of onnxruntime outputs (CPU, one thread): `helpers.oracle.run_ort`."""
    return oracle.run_ort


def open_fds() -> int:
    """How many file descriptors this process has open."""
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture(autouse=True)
def _default_environment(monkeypatch):
    for name in ("NPURT_SOC", "NPURT_COHERENCE", "RKNN_LOG_LEVEL", "NPURT_PERF"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _kernel_state_restored():
    """Every test starts and ends with the compiled kernels as a fresh process has them (on unless NPURT_NATIVE=0,
    at the CPU's best instruction set): a test that switches them and forgets changes what later tests compare.
    The start is checked too, since monkeypatch undoes its changes after this fixture's end check."""
    import npurt._kernels as kernels
    default = (kernels.lib is not None and os.environ.get("NPURT_NATIVE", "1") != "0", kernels.cpu_level())
    assert (kernels.enabled(), kernels.level()) == default, "an earlier test left the compiled kernels switched"
    yield
    assert (kernels.enabled(), kernels.level()) == default, "the test left the compiled kernels switched"


def _cpu_levels() -> tuple[str, ...]:
    import npurt._kernels as kernels
    return kernels.LEVELS[:kernels.LEVELS.index(kernels.cpu_level()) + 1] if kernels.available() else ()


@pytest.fixture(params=_cpu_levels())
def level(request):
    """Each instruction set this CPU has, in turn (portable C, AVX2 + F16C, AVX-512, AVX-512 + VNNI), kernels on."""
    import npurt._kernels as kernels
    before = kernels.level()
    assert kernels.set_level(request.param) == request.param
    enabled = kernels.set_enabled(True)
    yield request.param
    kernels.set_level(before)
    kernels.set_enabled(enabled)


def held_resources() -> dict:
    """Everything a test could leak: per-device buffers and bytes (devices holding any), RKNN contexts (models and
    matmul) and mems, QNN memory handles and rpcmem buffers, and this process's open fds."""
    from npurt.memory import open_devices
    from npurt.qnn.mem_registry import REGISTRY
    from npurt.qnn.rpcmem import rpcmem_leaks
    from npurt.rknn import handles

    devices = {}
    for d in open_devices():
        st = d.stats()
        if st.buffers or st.ddr_bytes or st.sram_bytes:
            devices[d.soc] = (st.buffers, st.ddr_bytes, st.sram_bytes)
    return {"device buffers, ddr and sram bytes": devices, "rknn contexts": len(handles.contexts),
            "rknn mems": len(handles.mems), "qnn mem handles": REGISTRY.count(),
            "rpcmem buffers": [leak["base"] for leak in rpcmem_leaks()], "open fds": open_fds()}


@pytest.fixture
def no_leaks():
    """The test gives back every fd, device buffer and byte, RKNN context and mem, QNN handle and rpcmem buffer it
    took. The default device is held open for the test, so user buffers may outlive the contexts that use them."""
    from npurt.memory import open_device

    oracle.warm_up()                    # onnxruntime's process-wide fds are not the test's
    device = open_device()
    before = held_resources()
    yield
    after = held_resources()
    if after != before:        # objects of this test (or an earlier one) may still wait for the cycle collector
        gc.collect()
        after = held_resources()
    device.close()
    leaked = {k: (before[k], after[k]) for k in before if before[k] != after[k]
              and not (k == "open fds" and after[k] < before[k])}     # fewer: an earlier test's garbage went
    assert not leaked, f"leaked (before, after): {leaked}"


@pytest.fixture
def dev():
    """The RK3588 device, opened for the test; closing it must report no leaked buffers."""
    from npurt.memory import open_device

    device = open_device("rk3588")
    yield device
    leaks = device.close()
    assert leaks == [], leaks


@pytest.fixture
def qnn_graph_client():
    """A QNN graph-building client (`helpers.qnn_build.Client`) with one graph created, closed after the test."""
    from helpers.qnn_build import Client

    c = Client()
    c.create_graph()
    yield c
    c.close()
