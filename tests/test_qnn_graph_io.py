"""Where the tutorial is silent, the mirror does what its code does; graph I/O is in QNN's own terms.

- Graph I/O tensors: the model's shape in QNN's layout (NHWC for 4-D activations), FLOAT_32 for float I/O with the
  conversion to the native layout and type inside the graph; never the Rockchip NC1HWC2 layout.
- A 0-byte spill-fill / VTCM-backup buffer (the tutorial registers both unconditionally) registers and counts for
  the Non-RPC "both buffers for each context" rule.
- With no SoC configured, the backend takes the SoC of the first context binary it loads.
- The use case comes from `$NPURT_QNN_USE_CASE`.
"""
from __future__ import annotations

import ctypes

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npurt
import npurt.qnn as q
from npurt.qnn import device as htp_device
from npurt.qnn.backend import lookup
from npurt.qnn.mem_registry import REGISTRY
from helpers.oracle import run_ort
from helpers.qnn import (SMALL, Htp, binary, code, custom_descriptor, defer_config, get_property,  # noqa: F401
                              htp, ion_descriptor, native, ok, raw_tensors)


def conv21() -> onnx.ModelProto:
    """One 3x3 conv, 3 -> 21 channels on 1x3x40x40: a 4-D output whose channels are no multiple of 8."""
    rng = np.random.default_rng(21)
    w = numpy_helper.from_array(rng.normal(0, 0.3, (21, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.normal(0, 0.1, 21).astype(np.float32), "b")
    node = helper.make_node("Conv", ["input", "w", "b"], ["output"], pads=[1, 1, 1, 1])
    graph = helper.make_graph([node], "conv21", [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                                               [1, 3, 40, 40])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 21, 40, 40])], [w, b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_4d_graph_io_is_nhwc_float32_and_the_buffers_hold_plain_nhwc(htp):
    model_proto = conv21()
    model = npurt.compile(model_proto, soc="rk3588", precision="fp16", progress=False)
    assert model.native_output_attrs[0].fmt.value == "NC1HWC2"          # natively NC1HWC2 fp16 ...
    ins, outs = q.io_tensors(model)
    for t, dims in ((ins[0], [1, 40, 40, 3]), (outs[0], [1, 40, 40, 21])):  # ... but QNN sees NHWC FLOAT_32
        assert t.v1.dataType == q.QNN_DATATYPE_FLOAT_32
        assert list(t.v1.dimensions[:t.v1.rank]) == dims
    x = np.random.default_rng(0).normal(size=(1, 3, 40, 40)).astype(np.float32)
    ref = run_ort(model_proto, {"input": x})[0]
    ctx = htp.context(model)
    graph = q.Qnn_GraphHandle_t()
    ok(htp.qi.graphRetrieve(ctx, model.graph.name, graph))
    ispec, ospec = (s[0] for s in q.tensor_specs(model))
    assert ispec.nbytes == x.nbytes and ospec.nbytes == ref.nbytes
    p_in, p_out = htp.alloc(ispec.nbytes), htp.alloc(ospec.nbytes)
    for t, p in ((ins[0], p_in), (outs[0], p_out)):
        h = q.Qnn_MemHandle_t()
        ok(htp.qi.memRegister(ctx, ion_descriptor(t, q.rpcmem_to_fd(p)), 1, h))
        t.v1.memType, t.v1.memHandle = q.QNN_TENSORMEMTYPE_MEMHANDLE, h.value
    # what a C program does: write NHWC floats, read NHWC floats — no npurt helper involved
    q.rpcmem_view(p_in, x.nbytes, np.float32)[:] = x.transpose(0, 2, 3, 1).reshape(-1)
    ok(htp.qi.graphExecute(graph, ins, 1, outs, 1, None, None))
    y = q.rpcmem_view(p_out, ref.nbytes, np.float32).reshape(1, 40, 40, 21).transpose(0, 3, 1, 2)
    assert np.abs(y - ref).max() < 2e-2
    ok(htp.qi.contextFree(ctx, None))


def test_graph_io_options_are_checked():
    fp16 = npurt.compile(conv21(), soc="rk3588", precision="fp16", progress=False)
    with pytest.raises(npurt.NpuError):
        q.set_graph_io(fp16, "quantized")                  # quantized I/O needs an int8 binary
    with pytest.raises(npurt.NpuError):
        q.set_graph_io(fp16, "nc1hwc2")
    q.set_graph_io(fp16, "float16")
    again = npurt.load_compiled(fp16.to_bytes())           # recorded in the binary
    assert q.io_tensors(again)[1][0].v1.dataType == q.QNN_DATATYPE_FLOAT_16


def _zero_spill_descriptor(use_case: str):
    if use_case == "native":    # qurt_malloc(0) gives NULL, as the tutorial's malloc(0) may
        return custom_descriptor(q.QNN_HTP_MEM_SHARED_SPILLFILL_BUFFER, 0, qurt=0, rank_dims=(1,),
                                 data_type=q.QNN_DATATYPE_UINT_8)
    return custom_descriptor(q.QNN_HTP_MEM_SHARED_SPILLFILL_BUFFER, 0, fd=-1)  # the FastRPC code's fd -1


@pytest.mark.parametrize("use_case", ["fastrpc", "native"])
def test_zero_byte_spillfill_registers_when_none_is_required(use_case):
    h = Htp(use_case)
    try:
        ctx = h.context(binary(SMALL), defer_config())
        rc, required = get_property(h.qi, ctx, q.QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE)
        assert (rc, required) == (q.QNN_SUCCESS, 0)
        handle = q.Qnn_MemHandle_t()
        ok(h.qi.memRegister(ctx, _zero_spill_descriptor(use_case), 1, handle))
        assert handle.value and REGISTRY.count() == 1
        ok(h.qi.contextFinalize(ctx, None))
        graph = h.graph(ctx)
        x = np.random.default_rng(1).normal(size=(1, 3, SMALL, SMALL)).astype(np.float32)
        ins, outs, _ = raw_tensors(binary(SMALL), x)
        ok(h.qi.graphExecute(graph, ins, 1, outs, 1, None, None))
        ok(h.qi.contextFree(ctx, None))
        assert REGISTRY.count() == 0
    finally:
        h.close()


def test_zero_byte_spillfill_still_refused_where_bytes_are_required(htp):
    from helpers.qnn import SPILL
    ctx = htp.context(binary(SPILL), defer_config())
    handle = q.Qnn_MemHandle_t()
    assert code(htp.qi.memRegister(ctx, _zero_spill_descriptor("fastrpc"), 1, handle)) == \
        q.QNN_MEM_ERROR_INVALID_ARGUMENT
    assert not handle.value and REGISTRY.count() == 0


def test_zero_byte_spillfill_counts_for_the_concurrent_both_buffers_rule(native):
    qi = native.qi
    ctx1 = native.context(binary(SMALL), defer_config(concurrent=True))
    ctx2 = native.context(binary(SMALL), defer_config(concurrent=True))
    rc, vtcm_size = get_property(qi, ctx1, q.QNN_HTP_CONTEXT_GET_PROP_MAX_VTCMBACKUP_BUFFER_SIZE)
    ok(rc)
    assert vtcm_size > 0
    vtcm = q.qurt_malloc(vtcm_size)
    try:
        backup = custom_descriptor(q.QNN_HTP_MEM_SHARED_VTCMBACKUP_BUFFER, vtcm_size, qurt=vtcm, rank_dims=(1,),
                                   data_type=q.QNN_DATATYPE_UINT_8)
        spill = _zero_spill_descriptor("native")
        both = (q.Qnn_MemDescriptor_t * 2)(spill, backup)      # copies; the HTP descriptors stay in these two
        ok(qi.memRegister(ctx1, both, 2, (q.Qnn_MemHandle_t * 2)()))
        ok(qi.contextFinalize(ctx1, None))                             # the 0-byte spill-fill counts
        ok(qi.memRegister(ctx2, backup, 1, q.Qnn_MemHandle_t()))       # only the VTCM backup ...
        assert code(qi.contextFinalize(ctx2, None)) == q.QNN_CONTEXT_ERROR_INVALID_CONFIG   # ... breaks the rule
        ok(qi.contextFree(ctx1, None))
        ok(qi.contextFree(ctx2, None))
        assert REGISTRY.count() == 0
    finally:
        q.qurt_free(vtcm)


def test_unconfigured_backend_takes_the_soc_of_its_first_binary(monkeypatch):
    monkeypatch.delenv("NPURT_SOC", raising=False)
    sm8550 = npurt.compile(conv21(), soc="sm8550", precision="fp16", progress=False)
    providers, n = [], ctypes.c_uint32()
    ok(q.QnnInterface_getProviders(providers, ctypes.byref(n)))
    qi = getattr(providers[0], q.QNN_INTERFACE_VER_NAME)
    backend, device, ctx = q.Qnn_BackendHandle_t(), q.Qnn_DeviceHandle_t(), q.Qnn_ContextHandle_t()
    ok(qi.backendCreate(None, None, backend))
    ok(qi.deviceCreate(None, None, device))
    blob = sm8550.to_bytes()
    ok(qi.contextCreateFromBinary(backend, device, None, blob, len(blob), ctx, None))
    b = lookup(backend, q.backend.Backend)
    assert b.profile.name == "sm8550" and htp_device.default_soc() == "sm8550"
    p = q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, q.RPCMEM_DEFAULT_FLAGS, 4096)   # lands on the same device
    assert q.rpcmem.lookup_fd(q.rpcmem_to_fd(p)).device is b.device
    q.rpcmem_free(p)
    other = npurt.compile(conv21(), soc="sm8650", precision="fp16", progress=False).to_bytes()
    ctx2 = q.Qnn_ContextHandle_t()                              # the SoC is decided now
    assert code(qi.contextCreateFromBinary(backend, device, None, other, len(other), ctx2, None)) == \
        q.QNN_CONTEXT_ERROR_BINARY_CONFIGURATION
    ok(qi.contextFree(ctx, None))
    ok(qi.backendFree(backend))
    ok(qi.deviceFree(device))
    assert htp_device.default_soc() == "sm8350"


def test_configured_soc_still_refuses_another_binary(monkeypatch):
    monkeypatch.setenv("NPURT_SOC", "sm8350")
    blob = npurt.compile(conv21(), soc="sm8550", precision="fp16", progress=False).to_bytes()
    h = Htp(soc=None)
    try:
        ctx = q.Qnn_ContextHandle_t()
        assert code(h.qi.contextCreateFromBinary(h.backend, h.device, None, blob, len(blob), ctx, None)) == \
            q.QNN_CONTEXT_ERROR_BINARY_CONFIGURATION
    finally:
        h.close()


def test_use_case_from_the_environment(monkeypatch):
    monkeypatch.setenv("NPURT_QNN_USE_CASE", "native")
    providers, n = [], ctypes.c_uint32()
    ok(q.QnnInterface_getProviders(providers, ctypes.byref(n)))
    assert getattr(providers[0], q.QNN_INTERFACE_VER_NAME).use_case == "native"


def test_convert_qnn_io_option(tmp_path):
    from helpers.cli import fails, ok_json
    out = tmp_path / "m.npurt"
    ok_json("convert", "small_convnet", "--soc", "sm8550", "--qnn-io", "float16", "-o", out)
    assert q.io_tensors(npurt.load_compiled(out))[0][0].v1.dataType == q.QNN_DATATYPE_FLOAT_16
    fails("convert", "small_convnet", "--qnn-io", "quantized", "-o", out, words=("int8",))


def test_convert_qnn_io_layout_option_is_recorded_and_reported(tmp_path):
    """--qnn-io-layout nchw: recorded in the binary, reported by systemContextGetBinaryInfo (NCHW dims)."""
    from helpers.cli import fails, ok_json
    from npurt.qnn import system
    out = tmp_path / "m.bin"
    ok_json("convert", "small_convnet", "--soc", "sm8550", "--qnn-io-layout", "nchw", "-o", out)
    assert npurt.load_compiled(out).meta["qnn_io_layout"] == "nchw"
    table = system.QnnSystemInterfaceTable()
    handle, info = ctypes.c_void_p(), ctypes.c_void_p()
    data = out.read_bytes()
    ok(table.systemContextCreate(handle))
    ok(table.systemContextGetBinaryInfo(handle, data, len(data), info, None))
    graph = system.QnnSystemContext_BinaryInfo_t.from_address(info.value).contextBinaryInfoV3.graphs[0].graphInfoV3
    assert list(graph.graphInputs[0].v1.dimensions[:4]) == [1, 3, 32, 32]
    ok(table.systemContextFree(handle))
    fails("convert", "small_convnet", "--qnn-io-layout", "hwcn", "-o", out, words=("--qnn-io-layout", "nchw"))
