"""Shared helpers for the QNN HTP mirror tests (imported by the other test_qnn_* modules), plus the tests of
rpcmem, the QuRT heap, HTP profiles and the provider table.

The helpers are the tutorial's C boilerplate in Python: build descriptors and configs, read properties, register an
rpcmem tensor. Models: `small_convnet` compiled as the "context binary" (rk3588, float32 or fp16), at 32x32 (fits in
VTCM) and 256x256 float32 (5 MiB of activations: overflows the 4 MiB VTCM of sm8350, so it spills).
"""
from __future__ import annotations

import ctypes
import functools
import os

import numpy as np
import pytest

import npurt
import npurt.qnn as q
from npurt.model import zoo
from npurt.qnn import device as htp_device
from npurt.qnn.mem_registry import REGISTRY
from conftest import open_fds

SMALL = 32
SPILL = 256


@functools.lru_cache(maxsize=None)
def onnx_model(size: int):
    return zoo.small_convnet(size=size)


@functools.lru_cache(maxsize=None)
def binary(size: int = SMALL, precision: str = "float32"):
    """The compiled model used as the QNN context binary."""
    return npurt.compile(onnx_model(size), soc="rk3588", precision=precision, progress=False)


@functools.lru_cache(maxsize=None)
def sample(size: int = SMALL) -> tuple[np.ndarray, np.ndarray]:
    """(input, onnxruntime output) for the small convnet at `size`."""
    import onnxruntime as ort
    x = np.random.default_rng(size).normal(size=(1, 3, size, size)).astype(np.float32)
    sess = ort.InferenceSession(onnx_model(size).SerializeToString(), providers=["CPUExecutionProvider"])
    return x, sess.run(None, {"input": x})[0]


def ok(ret: int) -> None:
    assert q.qnn_error_code(ret) == q.QNN_SUCCESS, q.error_string(ret)


def code(ret: int) -> int:
    return q.qnn_error_code(ret)


class Htp:
    """A table, a backend and a device handle; `close()` frees everything this object created."""

    def __init__(self, use_case: str = "fastrpc", soc: str = "sm8350") -> None:
        self.qi = q.interface(use_case, soc=soc)
        self.backend = q.Qnn_BackendHandle_t()
        self.device = q.Qnn_DeviceHandle_t()
        ok(self.qi.backendCreate(None, None, self.backend))
        ok(self.qi.deviceCreate(None, None, self.device))
        self.rpc: list[int] = []

    def context(self, model=None, configs=None, expect: int = q.QNN_SUCCESS) -> q.Qnn_ContextHandle_t:
        model = model or binary()
        ctx = q.Qnn_ContextHandle_t()
        ret = self.qi.contextCreateFromBinary(self.backend, self.device, configs, model, 0, ctx, None)
        assert code(ret) == expect, q.error_string(ret)
        return ctx

    def graph(self, ctx) -> q.Qnn_GraphHandle_t:
        g = q.Qnn_GraphHandle_t()
        ok(self.qi.graphRetrieve(ctx, binary().graph.name, g))
        return g

    def alloc(self, size: int) -> int:
        p = q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, q.RPCMEM_DEFAULT_FLAGS, size)
        assert p
        self.rpc.append(p)
        return p

    def close(self) -> None:
        self.qi.backendFree(self.backend)
        self.qi.deviceFree(self.device)
        for p in self.rpc:
            q.rpcmem_free(p)


@pytest.fixture
def htp():
    h = Htp()
    yield h
    h.close()


@pytest.fixture
def native():
    h = Htp("native")
    yield h
    h.close()


def defer_config(*, concurrent: bool = False, multi: bool = False, priority: int | None = None,
                 first_group: int = 0) -> list:
    """The tutorial's config list: DEFER_GRAPH_INIT, optional HTP group configs and priority (NULL-terminated)."""
    cfgs: list = []
    defer = q.QnnContext_Config_t()
    defer.option = q.QNN_CONTEXT_CONFIG_OPTION_DEFER_GRAPH_INIT
    defer.isGraphInitDeferred = 1
    for enabled, option, field in ((concurrent, q.QNN_HTP_CONTEXT_CONFIG_OPTION_REGISTER_CONCURRENT_RESOURCE_SHARING,
                                    "concurrentGroupRegistration"),
                                   (multi, q.QNN_HTP_CONTEXT_CONFIG_OPTION_REGISTER_MULTI_CONTEXTS,
                                    "groupRegistration")):
        if enabled:
            htp_cfg = q.QnnHtpContext_CustomConfig_t()
            htp_cfg.option = option
            getattr(htp_cfg, field).firstGroupHandle = first_group or None
            getattr(htp_cfg, field).maxSpillFillBuffer = 0
            cfg = q.QnnContext_Config_t()
            cfg.option = q.QNN_CONTEXT_CONFIG_OPTION_CUSTOM
            cfg.customConfig = ctypes.addressof(htp_cfg)
            cfg._keep = htp_cfg                   # the C code keeps it on its stack; we keep it here
            cfgs.append(ctypes.pointer(cfg))
    if priority is not None:
        pcfg = q.QnnContext_Config_t()
        pcfg.option = q.QNN_CONTEXT_CONFIG_OPTION_PRIORITY
        pcfg.priority = priority
        cfgs.append(ctypes.pointer(pcfg))
    cfgs.append(ctypes.pointer(defer))
    cfgs.append(None)
    return cfgs


def get_property(qi, ctx, option: int) -> tuple[int, int]:
    """(return code, value) of one HTP custom context property."""
    prop = q.QnnContext_Property_t()
    prop.option = q.QNN_CONTEXT_PROPERTY_OPTION_CUSTOM
    custom = q.QnnHtpContext_CustomProperty_t()
    custom.option = option
    custom.bufferStartAlignment = 0xDEAD
    prop.customProperty = ctypes.addressof(custom)
    ret = qi.contextGetProperty(ctx, [ctypes.pointer(prop), None])
    return code(ret), int(custom.bufferStartAlignment)


def custom_descriptor(kind: int, size: int, *, fd: int = -1, offset: int = 0, qurt: int = 0,
                      rank_dims: tuple = (), data_type: int = q.QNN_DATATYPE_UNDEFINED) -> q.Qnn_MemDescriptor_t:
    """A CUSTOM Qnn_MemDescriptor_t pointing at a QnnMemHtp_Descriptor_t of `kind` (kept alive on the struct)."""
    htp_desc = q.QnnMemHtp_Descriptor_t()
    htp_desc.type = kind
    htp_desc.size = size
    if qurt:
        if kind == q.QNN_HTP_MEM_SHARED_VTCMBACKUP_BUFFER:
            htp_desc.sharedVTCMBackupBufferQurtAddress = qurt
        else:
            htp_desc.sharedSpillfillBufferQurtAddress = qurt
    else:
        htp_desc.sharedBufferConfig.fd = fd
        htp_desc.sharedBufferConfig.offset = offset
    desc = q.Qnn_MemDescriptor_t()
    if rank_dims:
        dims = (ctypes.c_uint32 * len(rank_dims))(*rank_dims)
        desc.memShape.numDim = len(rank_dims)
        desc.memShape.dimSize = dims
    desc.dataType = data_type
    desc.memType = q.QNN_MEM_TYPE_CUSTOM
    desc.customInfo = ctypes.addressof(htp_desc)
    desc._keep = htp_desc
    return desc


def ion_descriptor(tensor: q.Qnn_Tensor_t, fd: int) -> q.Qnn_MemDescriptor_t:
    """The tutorial's ION descriptor for `tensor` (memShape and dataType from the tensor)."""
    desc = q.Qnn_MemDescriptor_t()
    desc.memShape.numDim = tensor.v1.rank
    desc.memShape.dimSize = tensor.v1.dimensions
    desc.dataType = tensor.v1.dataType
    desc.memType = q.QNN_MEM_TYPE_ION
    desc.ionInfo.fd = fd
    return desc


def register_ion(h: Htp, ctx, tensor: q.Qnn_Tensor_t, nbytes: int) -> int:
    """rpcmem-allocate and ION-register one tensor; sets its memType/memHandle; returns the rpcmem pointer."""
    p = h.alloc(nbytes)
    handle = q.Qnn_MemHandle_t()
    ok(h.qi.memRegister(ctx, ion_descriptor(tensor, q.rpcmem_to_fd(p)), 1, handle))
    tensor.v1.memType = q.QNN_TENSORMEMTYPE_MEMHANDLE
    tensor.v1.memHandle = handle.value
    return p


def raw_tensors(model, x: np.ndarray) -> tuple[list, list, np.ndarray]:
    """RAW I/O tensors with client buffers holding packed `x`; returns (inputs, outputs, output bytes)."""
    ins, outs = q.io_tensors(model)
    ispec, ospec = q.tensor_specs(model)
    xin = np.zeros(ispec[0].nbytes, np.uint8)
    ispec[0].pack(x, xin)
    yout = np.zeros(ospec[0].nbytes, np.uint8)
    for t, arr in ((ins[0], xin), (outs[0], yout)):
        t.v1.clientBuf.data = arr.ctypes.data
        t.v1.clientBuf.dataSize = arr.nbytes
    ins[0]._keep = xin
    return ins, outs, yout


# ---------------------------------------------------------------------------------------------------------
# rpcmem
# ---------------------------------------------------------------------------------------------------------
def test_rpcmem_alloc_is_page_aligned_real_fd_and_view():
    p = q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, q.RPCMEM_DEFAULT_FLAGS, 10000)
    try:
        assert p and p % 4096 == 0
        fd = q.rpcmem_to_fd(p)
        assert fd >= 0 and os.fstat(fd).st_size >= 10000
        v = q.rpcmem_view(p, shape=(4,), dtype=np.float32)
        v[:] = [1, 2, 3, 4]
        assert os.pread(fd, 16, 0) == np.array([1, 2, 3, 4], np.float32).tobytes()   # the fd is the memory
        with pytest.raises(npurt.NpuError):
            q.rpcmem_view(p + 9990, 100)                    # past the end: refused, not read
    finally:
        q.rpcmem_free(p)
    assert q.rpcmem_to_fd(p) == -1


def test_rpcmem_interior_pointer_gives_minus_one_and_free_ignores_it_leaking():
    p = q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, q.RPCMEM_DEFAULT_FLAGS, 8192)
    assert q.rpcmem_to_fd(p + 64) == -1
    q.rpcmem_free(p + 64)                                    # ignored: the buffer leaks (ORT PR 23892)
    assert [leak["base"] for leak in q.rpcmem_leaks()] == [p]
    q.rpcmem_free(p)
    assert q.rpcmem_leaks() == []
    q.rpcmem_free(p)                                         # double free: ignored
    q.rpcmem_free(0)


def test_rpcmem_size_is_a_signed_int_and_alloc2_takes_size_t():
    assert q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, 1, 0) == 0
    assert q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, 1, -5) == 0
    assert q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, 1, 1 << 31) == 0     # wraps negative in C
    p = q.rpcmem_alloc2(q.RPCMEM_HEAP_ID_SYSTEM, 1, (1 << 31) + 4096)  # sparse memfd: costs nothing
    assert p and q.rpcmem_to_fd(p) >= 0
    q.rpcmem_free(p)


def test_rpcmem_heaps():
    assert q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SECURE, 1, 4096) == 0
    assert q.rpcmem_alloc(12345, 1, 4096) == 0
    assert q.rpcmem_alloc(q.RPCMEM_HEAP_ID_CONTIG, 1, 8 << 20) == 0
    p = q.rpcmem_alloc(q.RPCMEM_HEAP_ID_CONTIG, q.RPCMEM_FLAG_UNCACHED, 4096)
    assert p
    q.rpcmem_free(p)


def test_rpcmem_fds_and_devices_released():
    before = open_fds()
    ptrs = [q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, 1, 4096 * (i + 1)) for i in range(5)]
    assert open_fds() > before
    for p in ptrs:
        q.rpcmem_free(p)
    assert open_fds() == before
    assert htp_device.open_soc_devices() == {}


def test_qurt_heap():
    a = q.qurt_malloc(10000)
    assert a and a < 1 << 32 and a % 4096 == 0
    q.qurt_view(a, 8)[:] = 7
    assert q.qurt_view(a, 8).tolist() == [7] * 8
    q.qurt_free(a)
    with pytest.raises(npurt.NpuError):
        q.qurt_view(a, 8)
    q.qurt_free(a)                                           # ignored
    assert q.qurt_malloc(0) == 0


# ---------------------------------------------------------------------------------------------------------
# profiles and providers
# ---------------------------------------------------------------------------------------------------------
def test_htp_profiles():
    from npurt.soc.htp import HTP_PROFILES, get_htp_profile
    assert get_htp_profile().name == "sm8350" and get_htp_profile().vtcm_size == 4 << 20
    assert get_htp_profile("V73").name == "sm8550" and get_htp_profile("v73").vtcm_size == 8 << 20
    assert {p.arch for p in HTP_PROFILES.values()} >= {68, 69, 73, 75}
    with pytest.raises(npurt.NpuError):
        get_htp_profile("rk3588")


def test_get_providers_gives_the_function_table():
    providers: list = []
    n = ctypes.c_uint32()
    ok(q.QnnInterface_getProviders(providers, n))
    assert n.value == 1 and providers[0].backendId == q.QNN_BACKEND_ID_HTP
    assert providers[0].providerName == "HTP_QTI_AISW"
    table = getattr(providers[0], q.QNN_INTERFACE_VER_NAME)
    for name in ("backendCreate", "deviceCreate", "contextCreateFromBinary", "contextGetProperty",
                 "contextFinalize", "contextFree", "graphRetrieve", "graphExecute", "memRegister", "memDeRegister"):
        assert callable(getattr(table, name))
    assert table.use_case == "fastrpc"
    assert q.interface("native", soc="v75").use_case == "native"
    assert code(q.QnnInterface_getProviders(None, n)) == q.QNN_COMMON_ERROR_INVALID_ARGUMENT


def test_properties_from_the_htp_plan(htp):
    ctx = htp.context(binary(SPILL), defer_config())
    assert get_property(htp.qi, ctx, q.QNN_HTP_CONTEXT_GET_PROP_BUFFER_START_ALIGNMENT) == (0, 4096)
    rc, spill = get_property(htp.qi, ctx, q.QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE)
    assert rc == 0 and spill > 0 and spill % (2 << 20) == 0
    rc, weights = get_property(htp.qi, ctx, q.QNN_HTP_CONTEXT_GET_PROP_WEIGHTS_BUFFER_SIZE)
    assert rc == 0 and weights == 2 << 20                     # 97 KB of weights, rounded to 2 MiB
    # FastRPC has no VTCM backup buffer; reserved options are not supported; the value stays untouched
    assert get_property(htp.qi, ctx, q.QNN_HTP_CONTEXT_GET_PROP_MAX_VTCMBACKUP_BUFFER_SIZE) == (1000, 0xDEAD)
    assert get_property(htp.qi, ctx, q.QNN_HTP_CONTEXT_GET_PROP_RESERVED_4) == (1000, 0xDEAD)
    small = htp.context(binary(SMALL), defer_config())
    assert get_property(htp.qi, small, q.QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE) == (0, 0)  # fits VTCM
    plain = htp.context(binary(SMALL))                         # not deferred: the HTP library answers 1000
    assert get_property(htp.qi, plain, q.QNN_HTP_CONTEXT_GET_PROP_BUFFER_START_ALIGNMENT) == (1000, 0xDEAD)


def test_vtcm_and_spill_come_from_the_profile():
    """sm8350 has 4 MiB of VTCM: the 256x256 model spills; sm8550 has 8 MiB: it does not."""
    small_vtcm = Htp("fastrpc", "sm8350")
    big_vtcm = Htp("fastrpc", "sm8550")
    try:
        for h, spills in ((small_vtcm, True), (big_vtcm, False)):
            ctx = h.context(binary(SPILL), defer_config())
            rc, spill = get_property(h.qi, ctx, q.QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE)
            assert rc == 0 and (spill > 0) == spills
    finally:
        small_vtcm.close()
        big_vtcm.close()
    assert REGISTRY.count() == 0
