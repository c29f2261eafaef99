"""onnxruntime's QNN execution provider (PyPI `onnxruntime-qnn`) running on npurt's libQnnHtp.so: EPContext models
over npurt context binaries with the EP's default options (its API-version check included), embed modes, NCHW and
NHWC graph I/O, sessions on two threads, profiling, performance modes, the HTP shared-memory allocator option and
teardown at interpreter exit; and the members behind them (the 2.40 table, capabilities, profile events, the HTP
perf infrastructure, verbose errors, FastRPC buffer registration) from Python."""
from __future__ import annotations

import csv
import ctypes
import json
import subprocess
import sys
import threading
import textwrap

import numpy as np
import pytest

import npurt.qnn as q
from npurt.qnn import rpcmem, services
from npurt.soc.api_coverage import QNN_INTERFACE_MEMBERS, QNN_INTERFACE_SLOTS

from helpers import models
from helpers.capi import prefix
from helpers.oracle import qnn_ep_session, run_ort
from helpers.qnn_ort import epcontext

pytestmark = pytest.mark.timeout(300)
FP16 = {"atol": 4e-3, "rtol": 4e-3}          # the binaries are fp16 (HTP's default precision for float models)


@pytest.fixture(scope="module")
def lib():
    return prefix() / "lib"


def _x(seed: int, shape=models.X_SHAPE) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def _run(session, x: np.ndarray) -> np.ndarray:
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def _nhwc(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1))


# --- the provider the EP loads -------------------------------------------------------------------------------------
def test_the_c_provider_has_the_2_40_table_with_null_reserved_slots(lib):
    """What the EP copies: core API 2.40 (HTP 5.51), a function in every named slot, NULL in slots 71-75."""
    so = ctypes.CDLL(str(lib / "libQnnHtp.so"))
    providers, n = ctypes.POINTER(ctypes.c_void_p)(), ctypes.c_uint32()
    assert so.QnnInterface_getProviders(ctypes.byref(providers), ctypes.byref(n)) == 0 and n.value == 1
    base = providers[0]
    versions = (ctypes.c_uint32 * 6).from_address(base + 16)
    assert list(versions) == [2, 40, 0, 5, 51, 0]
    slots = (ctypes.c_void_p * QNN_INTERFACE_SLOTS).from_address(base + 40)
    assert all(slots[i] for i in range(len(QNN_INTERFACE_MEMBERS)))
    assert [slots[i] for i in range(len(QNN_INTERFACE_MEMBERS), QNN_INTERFACE_SLOTS)] == [None] * 5


def test_capabilities_the_ep_asks_are_answered_truthfully():
    qi = q.interface("fastrpc", soc="sm8550")
    assert qi.propertyHasCapability(q.QNN_PROPERTY_GROUP_DEVICE) == q.QNN_PROPERTY_SUPPORTED          # 1501
    assert qi.propertyHasCapability(q.QNN_PROPERTY_PROFILE_SUPPORTS_EXTENDED_EVENT) == q.QNN_PROPERTY_SUPPORTED
    assert qi.propertyHasCapability(q.QNN_PROPERTY_TENSOR_SUPPORT_MEMHANDLE_TYPE) == q.QNN_PROPERTY_SUPPORTED
    assert qi.propertyHasCapability(q.QNN_PROPERTY_GROUP_SIGNAL) == q.QNN_PROPERTY_NOT_SUPPORTED
    composition = callable(getattr(q.QnnInterfaceTable, "graphCreate", None))
    assert (qi.propertyHasCapability(q.QNN_PROPERTY_BACKEND_SUPPORT_COMPOSITION) == q.QNN_PROPERTY_SUPPORTED) \
        == composition
    assert qi.propertyHasCapability(999_999) == q.QNN_PROPERTY_ERROR_UNKNOWN_KEY


# --- EPContext models with the EP's default options -------------------------------------------------------------
@pytest.mark.parametrize("layout,embed", [("nchw", False), ("nchw", True), ("nhwc", False)])
def test_epcontext_model_matches_onnxruntime_cpu(lib, tmp_path, layout, embed):
    model = models.convnet()
    path = epcontext(tmp_path, model, layout=layout, embed=embed)
    x = _x(1)
    ref = run_ort(model, {"x": x})[0]
    s = qnn_ep_session(path, lib)
    assert s.get_providers()[0] == "QNNExecutionProvider"
    if layout == "nchw":
        y = _run(s, x)
    else:
        y = _run(s, _nhwc(x)).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(y, ref, **FP16)


def test_nhwc_data_through_an_nchw_binary_is_not_the_answer(lib, tmp_path):
    """The layout is real: the same bytes read in the other layout give other outputs (the bug --qnn-io-layout
    fixes: the EP checks byte sizes only)."""
    model = models.convnet()
    s = qnn_ep_session(epcontext(tmp_path, model, layout="nchw"), lib)
    x = _x(2)
    wrong = _run(s, _nhwc(x).reshape(x.shape))
    assert np.abs(wrong - run_ort(model, {"x": x})[0]).max() > 0.1


def test_two_sessions_on_two_threads(lib, tmp_path):
    model = models.convnet()
    sessions = [qnn_ep_session(epcontext(tmp_path, model, name=f"m{i}"), lib) for i in range(2)]
    inputs = [_x(10 + i) for i in range(4)]
    refs = [run_ort(model, {"x": x})[0] for x in inputs]
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for j in range(3):
                i = (k + j) % len(inputs)
                np.testing.assert_allclose(_run(sessions[k % 2], inputs[i]), refs[i], **FP16)
        except BaseException as exc:        # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors


@pytest.mark.parametrize("level", ["basic", "detailed"])
def test_profiling_produces_events_with_npurts_timings(lib, tmp_path, level):
    csv_path = tmp_path / "profile.csv"
    s = qnn_ep_session(epcontext(tmp_path, models.convnet()), lib, profiling_level=level,
                       profiling_file_path=str(csv_path))
    _run(s, _x(3))
    rows = list(csv.DictReader(csv_path.open()))
    kinds = [r["Message"] for r in rows]
    assert "INIT" in kinds and "EXECUTE" in kinds and "EXECUTE DEVICE" in kinds
    execute = next(r for r in rows if r["Message"] == "EXECUTE")
    assert int(execute["Time"]) > 0 and execute["Unit of Measurement"] == "US"
    nodes = [r for r in rows if r["Message"] == "NODE"]
    assert (len(nodes) > 0) == (level == "detailed")
    if nodes:
        assert any("conv" in r["Event Identifier"].lower() for r in nodes)
    serialized = [json.loads(line) for line in (tmp_path / "profile_qnn.log").read_text().splitlines()]
    assert any(rec["events"] and rec["events"][0]["type"] == q.QNN_PROFILE_EVENTTYPE_EXECUTE for rec in serialized)
    assert serialized[0]["header"]["app"] == "OnnxRuntime"


def test_performance_mode_is_accepted_and_recorded(lib, tmp_path):
    before = set(services.POWER.ids)
    s = qnn_ep_session(epcontext(tmp_path, models.convnet()), lib, htp_performance_mode="burst")
    _run(s, _x(4))
    settings = [services.POWER.ids[i]["settings"] for i in set(services.POWER.ids) - before]
    dcvs = [st["dcvs_v3"] for st in settings if "dcvs_v3" in st]
    assert dcvs and dcvs[-1]["powerMode"] == 0x10          # QNN_HTP_PERF_INFRASTRUCTURE_POWERMODE_PERFORMANCE_MODE
    del s


def test_shared_memory_allocator_option_creates_a_session_that_runs(lib, tmp_path):
    """enable_htp_shared_memory_allocator=1 loads npurt's libcdsprpc.so (rpcmem + remote_register_buf_attr2)."""
    model = models.convnet()
    s = qnn_ep_session(epcontext(tmp_path, model), lib, enable_htp_shared_memory_allocator=1)
    x = _x(5)
    np.testing.assert_allclose(_run(s, x), run_ort(model, {"x": x})[0], **FP16)


def test_shared_memory_allocator_path_from_a_c_client(lib, tmp_path):
    """onnxruntime 1.32's Python API cannot create the EP's HtpSharedMemoryAllocator (the EP device's HOST_ACCESSIBLE
    memory info exists once a session has the option, but OrtValue creation on it finds no shared allocator and the
    EP's factory creates none), so a C client does it through onnxruntime's C API (OrtApi::CreateAllocator on the
    session): rpcmem_alloc per tensor, memRegister of SHARED_BUFFER handles, graphExecute on the handles,
    memDeRegister when the tensors are released — all in npurt's log — and the right output."""
    import onnxruntime
    import onnxruntime_qnn
    from pathlib import Path
    from helpers.capi import compile_c, run_c
    model = models.convnet()
    path = epcontext(tmp_path, model)
    x = _x(7)
    x.tofile(tmp_path / "in.f32")
    ort_lib = next((Path(onnxruntime.__file__).parent / "capi").glob("libonnxruntime.so*"))
    exe = compile_c("qnn_ort_shared", prefix(), libs=(), flags=("-ldl",))
    proc = run_c(exe, ort_lib, onnxruntime_qnn.get_library_path(), lib / "libQnnHtp.so", path, tmp_path / "in.f32",
                 tmp_path / "out.f32", ",".join(map(str, models.X_SHAPE)), ",".join(map(str, models.Y_SHAPE)),
                 env={"LD_LIBRARY_PATH": str(lib), "NPURT_QNN_LOG_LEVEL": "info"}, timeout=240)
    log = proc.stderr
    steps = ["<I> rpcmem_alloc(", "<I> memRegister: handle", "<I> graphExecute 'convnet': 2 of 2 tensors on memory "
             "handles", "<I> memDeRegister: handle"]
    positions = [log.find(step) for step in steps]
    assert all(p >= 0 for p in positions) and positions == sorted(positions), log[-3000:]
    assert log.count("<I> memRegister: handle") == 2 == log.count("<I> memDeRegister: handle")
    y = np.fromfile(tmp_path / "out.f32", np.float32).reshape(models.Y_SHAPE)
    np.testing.assert_allclose(y, run_ort(model, {"x": x})[0], **FP16)


def test_a_qnn_sdk_binary_is_refused_with_one_line(lib, tmp_path, caplog):
    path = epcontext(tmp_path, models.convnet())
    (tmp_path / "m_qnn.bin").write_bytes(bytes(range(256)) * 64)      # not npurt's, not ONNX
    with caplog.at_level("ERROR", logger="npurt.qnn"), pytest.raises(Exception, match="EpContext|context"):
        qnn_ep_session(path, lib)
    lines = [r.getMessage() for r in caplog.records if "not an npurt context binary" in r.getMessage()]
    assert lines and "npurt convert" in lines[0] and "\n" not in lines[0]


_AT_EXIT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    import numpy as np
    from pathlib import Path
    from helpers.oracle import qnn_ep_session
    from helpers.qnn_ort import epcontext
    from helpers import models
    s = qnn_ep_session(epcontext(Path({folder!r}), models.convnet()), {lib!r}, profiling_level="basic",
                       profiling_file_path={csv!r})
    y = s.run(None, {{"x": np.zeros(models.X_SHAPE, np.float32)}})[0]
    print("ran", y.shape, flush=True)
    # the session is left alive: the EP frees its context, device, backend and log during interpreter exit
""")


def test_sessions_alive_at_interpreter_exit_exit_cleanly(lib, tmp_path):
    from pathlib import Path
    script = _AT_EXIT.format(tests=str(Path(__file__).parent), folder=str(tmp_path), lib=str(lib),
                             csv=str(tmp_path / "p.csv"))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ran (1, 4, 8, 10)" in proc.stdout
    assert "<E>" not in proc.stderr and "Failed" not in proc.stderr, proc.stderr[-2000:]


# --- the members behind it, from Python --------------------------------------------------------------------------
def _context(qi, model: bytes):
    from helpers.qnn_ort import binary
    b, d, ctx, g = q.Qnn_BackendHandle_t(), q.Qnn_DeviceHandle_t(), q.Qnn_ContextHandle_t(), q.Qnn_GraphHandle_t()
    assert qi.backendCreate(None, None, b) == 0 and qi.deviceCreate(None, None, d) == 0
    data = binary(model, "nchw")
    assert qi.contextCreateFromBinary(b, d, None, data, len(data), ctx, None) == 0
    assert qi.graphRetrieve(ctx, "convnet", g) == 0
    return b, d, ctx, g


def test_profile_events_of_a_graph_execute():
    import npurt
    from helpers.qnn_ort import binary
    qi = q.interface("fastrpc", soc="sm8550")
    b, d, ctx, g = _context(qi, models.convnet())
    ins, outs = q.io_tensors(npurt.load_compiled(binary(models.convnet(), "nchw")))
    x, y = _x(6), np.zeros(models.Y_SHAPE, np.float32)
    ins[0].v1.clientBuf.data, ins[0].v1.clientBuf.dataSize = x.ctypes.data, x.nbytes
    outs[0].v1.clientBuf.data, outs[0].v1.clientBuf.dataSize = y.ctypes.data, y.nbytes
    profile = q.Qnn_ProfileHandle_t()
    assert qi.profileCreate(b, q.QNN_PROFILE_LEVEL_DETAILED, profile) == 0
    assert qi.graphExecute(g, ins, 1, outs, 1, profile, None) == 0
    np.testing.assert_allclose(y, run_ort(models.convnet(), {"x": x})[0], **FP16)
    ids, n = [], ctypes.c_uint32()
    assert qi.profileGetEvents(profile, ids, n) == 0 and n.value == 1
    data = q.QnnProfile_EventData_t()
    assert qi.profileGetEventData(ids[0], data) == 0
    assert data.type == q.QNN_PROFILE_EVENTTYPE_EXECUTE and data.unit == q.QNN_PROFILE_EVENTUNIT_MICROSEC
    subs, m = [], ctypes.c_uint32()
    assert qi.profileGetSubEvents(ids[0], subs, m) == 0
    kinds = []
    for sid in subs:
        ext = q.QnnProfile_ExtendedEventData_t()
        assert qi.profileGetExtendedEventData(sid, ext) == 0 and ext.version == 1
        kinds.append(ext.v1.type)
        assert ext.v1.value.dataType == q.QNN_DATATYPE_UINT_64 and ext.v1.timestamp > 0
    assert kinds.count(q.QNN_PROFILE_EVENTTYPE_NODE) >= 2          # conv1 (+ relu, fused or not), conv2
    assert q.QNN_PROFILE_EVENTTYPE_EXECUTE_DEVICE in kinds
    # a freed profile's events are gone; a bad profile handle on graphExecute is SET_PROFILE, nothing run
    assert qi.profileFree(profile) == 0
    assert qi.profileGetEventData(ids[0], data) == q.QNN_PROFILE_ERROR_INVALID_HANDLE
    assert qi.graphExecute(g, ins, 1, outs, 1, 0x7777, None) == q.QNN_GRAPH_ERROR_SET_PROFILE
    assert qi.contextFree(ctx, None) == 0 and qi.deviceFree(d) == 0 and qi.backendFree(b) == 0


def test_perf_infrastructure_records_power_configs():
    qi = q.interface("fastrpc", soc="sm8550")
    infra: list = []
    assert qi.deviceGetInfrastructure(infra) == 0
    perf = infra[0]
    assert perf.infraType == q.QNN_HTP_DEVICE_INFRASTRUCTURE_TYPE_PERF
    cid = ctypes.c_uint32()
    assert perf.createPowerConfigId(0, 0, cid) == 0
    cfg = q.QnnHtpPerfInfrastructure_PowerConfig_t()
    cfg.option = q.QNN_HTP_PERF_INFRASTRUCTURE_POWER_CONFIGOPTION_RPC_POLLING_TIME
    cfg.rpcPollingTimeConfig = 9999
    assert perf.setPowerConfig(cid.value, [cfg]) == 0
    assert services.POWER.ids[cid.value]["settings"] == {"rpc_polling_time_us": 9999}
    cfg.option = 77
    assert perf.setPowerConfig(cid.value, [cfg]) == q.QNN_HTP_PERF_INFRASTRUCTURE_ERROR_UNSUPPORTED_CONFIG
    assert services.POWER.ids[cid.value]["settings"] == {"rpc_polling_time_us": 9999}      # nothing changed
    assert perf.createPowerConfigId(0, 3, ctypes.c_uint32()) == q.QNN_HTP_PERF_INFRASTRUCTURE_ERROR_INVALID_INPUT
    assert perf.destroyPowerConfigId(cid.value) == 0
    assert perf.destroyPowerConfigId(cid.value) == q.QNN_HTP_PERF_INFRASTRUCTURE_ERROR_INVALID_INPUT


def test_verbose_error_message_names_the_last_failure():
    qi = q.interface("fastrpc", soc="sm8550")
    ret = qi.contextFree(0xBAD, None)
    assert ret == q.QNN_CONTEXT_ERROR_INVALID_HANDLE
    text: list = []
    assert qi.errorGetVerboseMessage(ret, text) == 0
    assert "QNN_CONTEXT_ERROR_INVALID_HANDLE" in text[0] and "contextFree" in text[0]
    cell = ctypes.c_void_p()
    assert qi.errorGetVerboseMessage(ret, cell) == 0 and b"contextFree" in ctypes.string_at(cell.value)
    assert qi.errorFreeVerboseMessage(cell.value) == 0
    assert qi.errorFreeVerboseMessage(cell.value) != 0                 # freed twice: refused


def test_remote_register_buf_registers_real_rpcmem_memory(caplog):
    ptr = q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, q.RPCMEM_DEFAULT_FLAGS, 3 * 4096)
    fd = q.rpcmem_to_fd(ptr)
    try:
        rpcmem.remote_register_buf_attr2(ptr + 4096, 4096, fd, 4)
        assert rpcmem.remote_registered()[ptr + 4096] == (4096, fd, 4)
        with caplog.at_level("ERROR", logger="npurt.qnn"):
            rpcmem.remote_register_buf_attr2(ptr + 8192, 8192, fd, 0)          # runs past the buffer
            rpcmem.remote_register_buf(ptr, 4096, fd + 1000)                   # no rpcmem buffer's fd
            rpcmem.remote_register_buf_attr(ptr, -1, fd, 0)                    # an int size < 0
            rpcmem.remote_register_buf(ptr + 64, 16, -1)                       # deregistering what is not registered
        assert len([r for r in caplog.records if "remote_register_buf" in r.getMessage()]) == 4
        assert set(rpcmem.remote_registered()) & {ptr, ptr + 8192, ptr + 64} == set()
        rpcmem.remote_register_buf(ptr + 4096, 4096, -1)
        assert ptr + 4096 not in rpcmem.remote_registered()
        rpcmem.remote_register_buf(ptr, 3 * 4096, fd)
    finally:
        q.rpcmem_free(ptr)
    assert ptr not in rpcmem.remote_registered()                            # freed with its buffer
