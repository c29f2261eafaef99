"""Teardown during a run releases everything once the run ends; absurd sizes are refused before anything is
allocated; handle tables do not grow with create/free cycles; bad arguments of the public Python API are NpuError
(or the vendor's status / NULL), never a raw Python exception."""
from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

import npurt
import npurt.qnn as q
import npurt.runtime.context as runtime_context
from conftest import open_fds
from npurt.errors import ErrorCode, NpuError
from npurt.memory import open_devices
from helpers.models import Y_SHAPE, convnet, image


@pytest.fixture
def paused_run(monkeypatch):
    """(started, go): the next runs block inside the executor until `go` is set."""
    started, go = threading.Event(), threading.Event()
    real = runtime_context.run_executor

    def slow(*args, **kwargs):
        started.set()
        assert go.wait(30)
        return real(*args, **kwargs)
    monkeypatch.setattr(runtime_context, "run_executor", slow)
    return started, go


def _devices() -> dict[str, int]:
    return {d.soc: d._refs for d in open_devices()}


def test_session_close_during_a_run_waits_for_it_then_releases_everything(no_leaks, paused_run):
    started, go = paused_run
    devices = _devices()
    s = npurt.Session(convnet())
    result: dict = {}
    runner = threading.Thread(target=lambda: result.setdefault("y", s.run(image())))
    runner.start()
    assert started.wait(30)
    closer = threading.Thread(target=s.close)
    closer.start()
    time.sleep(0.3)
    assert closer.is_alive() and not s.closed            # waits: nothing is freed under the running executor
    go.set()
    runner.join(30)
    closer.join(30)
    assert result["y"][0].shape == Y_SHAPE and s.closed
    assert _devices() == devices                         # the session's device references are gone too
    s.close()                                            # idempotent


def test_session_close_from_inside_its_own_run_is_busy_with_nothing_released(no_leaks, monkeypatch):
    s = npurt.Session(convnet())
    seen = []
    real = runtime_context.run_executor

    def closing(*args, **kwargs):
        with pytest.raises(NpuError) as err:
            s.close()
        seen.append(err.value.code)
        return real(*args, **kwargs)
    monkeypatch.setattr(runtime_context, "run_executor", closing)
    y = s.run(image())
    assert seen == [ErrorCode.BUSY] and not s.closed and y[0].shape == Y_SHAPE
    monkeypatch.setattr(runtime_context, "run_executor", real)
    s.close()


def test_lite_release_during_inference_never_raises_and_frees_everything(no_leaks, paused_run, tmp_path):
    from npurt.rknn.lite import RKNNLite
    started, go = paused_run
    (tmp_path / "m.onnx").write_bytes(convnet())
    devices = _devices()
    lite = RKNNLite()
    assert lite.load_rknn(str(tmp_path / "m.onnx")) == 0 and lite.init_runtime() == 0
    result: dict = {}
    runner = threading.Thread(target=lambda: result.setdefault("y", lite.inference([image()])))
    runner.start()
    assert started.wait(30)
    releaser = threading.Thread(target=lite.release)
    releaser.start()
    time.sleep(0.3)
    go.set()
    runner.join(30)
    releaser.join(30)
    assert result["y"] is not None and result["y"][0].shape == Y_SHAPE
    assert _devices() == devices
    lite.release()


@pytest.mark.parametrize("size", [-1, 1 << 63, (1 << 64) - 1, 1 << 50])
def test_rpcmem_alloc2_absurd_size_is_null_and_leaks_nothing(size):
    fds, devices = open_fds(), _devices()
    for _ in range(20):
        assert q.rpcmem_alloc2(q.RPCMEM_HEAP_ID_SYSTEM, q.RPCMEM_DEFAULT_FLAGS, size) == 0
    assert open_fds() == fds and _devices() == devices


@pytest.mark.parametrize("args", [(None, 1, 4096), (q.RPCMEM_HEAP_ID_SYSTEM, "1", 4096),
                                  (q.RPCMEM_HEAP_ID_SYSTEM, 1, 4096.0), (q.RPCMEM_HEAP_ID_SYSTEM, 1, None)])
def test_rpcmem_alloc_non_integer_arguments_are_null(args):
    assert q.rpcmem_alloc(*args) == 0 and q.rpcmem_alloc2(*args) == 0


def test_rpcmem_free_does_not_close_a_reused_fd_number():
    from helpers.qnn import Htp
    h = Htp()
    try:
        p = q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, q.RPCMEM_DEFAULT_FLAGS, 4096)
        fd = q.rpcmem_to_fd(p)
        os.close(fd)                                    # the caller closes it behind the allocator's back
        r, w = os.pipe()                                # ... and the number is reused by an unrelated file
        try:
            assert fd in (r, w)
            q.rpcmem_free(p)
            os.fstat(fd)                                # still open: rpcmem_free did not close the caller's file
        finally:
            os.close(r)
            os.close(w)
    finally:
        h.close()


def test_register_a_closed_rpcmem_fd_is_a_qnn_error():
    from test_qnn_rules import ion_case, one_handle
    from helpers.qnn import Htp, ion_descriptor
    h = Htp()
    try:
        ctx, _, ins, _, ispec, _ = ion_case(h)
        p = h.alloc(ispec.nbytes)
        fd = q.rpcmem_to_fd(p)
        os.close(fd)                                    # closed behind the allocator's back
        assert one_handle(h.qi, ctx, ion_descriptor(ins[0], fd))[0] == q.QNN_MEM_ERROR_MAPPING   # was a raw OSError
    finally:
        h.close()


def test_qnn_handle_table_does_not_grow_with_context_cycles():
    from npurt.qnn.backend import HANDLES, RETIRED_MAX
    from helpers.qnn import Htp, binary, ok
    before = len(HANDLES)
    h = Htp()
    model = binary()
    for _ in range(RETIRED_MAX + 40):
        ctx = h.context(model)
        ok(h.qi.contextFree(ctx, None))
    assert len(HANDLES) <= before + 2 + RETIRED_MAX          # backend + device + the retired graphs
    h.close()
    assert len(HANDLES) <= before


def test_double_free_of_backend_and_device_are_named_errors():
    from helpers.qnn import Htp
    h = Htp()
    h.close()
    assert q.error_string(h.qi.backendFree(h.backend)) == "QNN_BACKEND_ERROR_INVALID_HANDLE"
    assert q.error_string(h.qi.deviceFree(h.device)) == "QNN_DEVICE_ERROR_INVALID_HANDLE"


def test_context_binary_size_is_checked_before_it_is_read(monkeypatch):
    import npurt.memory.raw as raw
    from helpers.qnn import Htp, binary
    h = Htp()
    try:
        data = np.frombuffer(binary().to_bytes(), np.uint8).copy()
        asked = []
        real = raw.safe_read
        import sys
        monkeypatch.setattr(sys.modules["npurt.qnn.members.context"], "safe_read", lambda a, n: asked.append(n) or real(a, n))
        ctx = q.Qnn_ContextHandle_t()
        ret = h.qi.contextCreateFromBinary(h.backend, h.device, None, data.ctypes.data, 1 << 31, ctx, None)
        assert q.qnn_error_code(ret) == q.QNN_CONTEXT_ERROR_INVALID_ARGUMENT
        assert max(asked) < 1 << 20                         # only the header was read, nothing of 2 GiB allocated
    finally:
        h.close()


def test_rknn_init_rejects_a_huge_non_model_file_without_reading_it(tmp_path, capsys):
    from npurt.rknn import RKNN_ERR_MODEL_INVALID, rknn_context, rknn_init
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        f.truncate(1 << 30)                                 # sparse: 1 GiB of zeros, nothing written
    t0 = time.perf_counter()
    assert rknn_init(rknn_context(), str(big), 0, 0, None) == RKNN_ERR_MODEL_INVALID
    assert time.perf_counter() - t0 < 5
    assert "neither an npurt compiled model nor ONNX" in capsys.readouterr().err


@pytest.mark.parametrize("w_stride", [1 << 24, 1 << 28])
def test_nc1hwc2_result_size_is_checked_before_it_is_allocated(w_stride):
    x = np.zeros((1, 3, 1, 4), np.float32)                 # 48 bytes
    with pytest.raises(NpuError) as err:
        npurt.tensor.nchw_to_nc1hwc2(x, 8, w_stride=w_stride)
    assert err.value.code == ErrorCode.INVALID_ARGUMENT and "past any alignment" in err.value.message
    assert npurt.tensor.nchw_to_nc1hwc2(x, 8, w_stride=4096).shape == (1, 1, 1, 4096, 8)    # the coarsest one


# --- one rule: NpuError for every bad argument ----------------------------------------------------------------
T = npurt.tensor
X = np.zeros((1, 3, 2, 4), np.float32)


@pytest.mark.parametrize("call", [
    lambda: T.nchw_to_nc1hwc2(X, 0), lambda: T.nchw_to_nc1hwc2(X, "8"), lambda: T.nchw_to_nc1hwc2(X, 8, w_stride=2**70),
    lambda: T.nchw_to_nc1hwc2(X, 8, c1=2**40), lambda: T.nc1hwc2_to_nchw(np.zeros((1, 1, 2, 4, 8)), "3"),
    lambda: T.quantize(np.array(["a"]), 0.1, 0), lambda: T.quantize(X, "a", 0), lambda: T.quantize_dfp(X, 10**20),
    lambda: T.to_float16(np.array(["a"])), lambda: T.size_with_stride((1, 2, 3, 4), "NCHW", "float32", w_stride="x"),
    lambda: T.native_shape((1, 2, 3, "a"), 8), lambda: T.align_up(3, "x"), lambda: T.dequantize(X, None),
    lambda: T.unpack_int4(np.zeros(2, np.uint8), 10**20), lambda: T.pack_int4(None),
])
def test_tensor_functions_raise_npu_error(call):
    with pytest.raises(NpuError) as err:
        call()
    assert err.value.code == ErrorCode.INVALID_ARGUMENT


def test_zero_dimensional_quantize_works():
    assert T.quantize(np.float32(1.0), 0.1, 0).shape == () and int(T.quantize(np.array(1.0), 0.1, 0)) == 10
    assert int(T.quantize_dfp(np.array(1.0, np.float32), 3)) == 8


@pytest.mark.parametrize("kwargs", [dict(model=None), dict(quantize=12345), dict(soc=5), dict(mean="x"),
                                    dict(model=12345)])
def test_session_bad_arguments_raise_npu_error(no_leaks, kwargs):
    kwargs = {"model": convnet(), **kwargs}
    with pytest.raises(NpuError):
        npurt.Session(kwargs.pop("model"), **kwargs)
