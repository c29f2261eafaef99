"""Helpers shared by the QNN HTP mirror tests (the `htp` and `native` fixtures are imported with them).

The helpers are the tutorial's C boilerplate in Python: build descriptors and configs, read properties, register an
rpcmem tensor. Models: `small_convnet` compiled as the "context binary" (rk3588, float32 or fp16), at 32x32 (fits in
VTCM) and 256x256 float32 (5 MiB of activations: overflows the 4 MiB VTCM of sm8350, so it spills).
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np
import pytest

import npurt
import npurt.qnn as q
from npurt.model import zoo

from helpers.oracle import run_ort

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
    x = np.random.default_rng(size).normal(size=(1, 3, size, size)).astype(np.float32)
    return x, run_ort(onnx_model(size), {"input": x})[0]


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


def config_list(items: list) -> list:
    """A NULL-terminated list of pointers to the config structs `items` (each pointer keeps its struct alive)."""
    return [ctypes.pointer(i) for i in items] + [None]


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
