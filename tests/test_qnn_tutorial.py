"""The QNN HTP Shared Buffer Tutorial's code examples, translated line by line to Python against the mirror, and
checked against onnxruntime (float32 context binary: max abs error 1e-4).

1. QNN_MEM_TYPE_ION: one rpcmem buffer, fd and handle per tensor (input and output).
2. QNN_HTP_MEM_SHARED_BUFFER: one rpcmem buffer for several tensors, one handle per offset.
3. FastRPC: external WEIGHTS_BUFFER + SHARED_SPILLFILL_BUFFER with DEFER_GRAPH_INIT.
4. Non-RPC: concurrent SHARED_SPILLFILL_BUFFER + SHARED_VTCMBACKUP_BUFFER sharing across two contexts.
"""
from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest

import npurt
import npurt.qnn as q
from npurt.qnn import device as htp_device
from npurt.qnn.mem_registry import REGISTRY
from conftest import open_fds
from helpers.qnn import (SMALL, SPILL, Htp, binary, custom_descriptor, defer_config, get_property,  # noqa: F401
                              htp, native, ok, onnx_model, raw_tensors, register_ion, sample)

TOL = 1e-4


def test_ion_input_and_output(htp):
    model = binary(SMALL)
    x, ref = sample(SMALL)
    context = htp.context(model)
    graph = htp.graph(context)
    inputs, outputs = q.io_tensors(model)
    in_spec, out_spec = q.tensor_specs(model)
    # lines 7-46 for the input, line by line
    mem_pointer = q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, q.RPCMEM_DEFAULT_FLAGS, in_spec[0].nbytes)
    assert mem_pointer
    htp.rpc.append(mem_pointer)
    mem_fd = q.rpcmem_to_fd(mem_pointer)
    assert mem_fd != -1
    mem_descriptor = q.Qnn_MemDescriptor_t()
    mem_descriptor.memShape.numDim = inputs[0].v1.rank
    mem_descriptor.memShape.dimSize = inputs[0].v1.dimensions
    mem_descriptor.dataType = inputs[0].v1.dataType
    mem_descriptor.memType = q.QNN_MEM_TYPE_ION
    mem_descriptor.ionInfo.fd = mem_fd
    inputs[0].v1.memType = q.QNN_TENSORMEMTYPE_MEMHANDLE
    inputs[0].v1.memHandle = None
    ok(htp.qi.memRegister(context, mem_descriptor, 1, q.field_ref(inputs[0].v1, "memHandle")))
    in_ptr = mem_pointer
    # and the same for the output
    out_ptr = register_ion(htp, context, outputs[0], out_spec[0].nbytes)
    assert inputs[0].v1.memType == q.QNN_TENSORMEMTYPE_MEMHANDLE and inputs[0].v1.memHandle
    # "Load the input data to memPointer"
    in_spec[0].pack(x, q.rpcmem_view(in_ptr, in_spec[0].nbytes))
    ok(htp.qi.graphExecute(graph, inputs, 1, outputs, 1, None, None))
    y = out_spec[0].unpack(q.rpcmem_view(out_ptr, out_spec[0].nbytes))
    assert np.abs(y - ref).max() < TOL
    # zero copy: the graph's I/O views are the rpcmem memory itself
    g = q.backend.lookup(graph, q.graph.QnnGraph)
    bound_in = g.executor._views[model.graph.inputs[0]][0]
    assert bound_in.ctypes.data == in_ptr
    # a second frame through the same buffers
    x2 = x[:, :, ::-1].copy()
    in_spec[0].pack(x2, q.rpcmem_view(in_ptr, in_spec[0].nbytes))
    ok(htp.qi.graphExecute(graph, inputs, 1, outputs, 1, None, None))
    y2 = out_spec[0].unpack(q.rpcmem_view(out_ptr, out_spec[0].nbytes))
    assert not np.allclose(y2, y)
    # "Deregister and free all buffers if it's not being used"
    ok(htp.qi.memDeRegister([inputs[0].v1.memHandle], 1))
    ok(htp.qi.memDeRegister([outputs[0].v1.memHandle], 1))
    q.rpcmem_free(in_ptr)
    q.rpcmem_free(out_ptr)
    htp.rpc.clear()
    assert REGISTRY.count() == 0


def test_raw_client_buffers_match_memhandles(htp):
    model = binary(SMALL)
    x, ref = sample(SMALL)
    graph = htp.graph(htp.context(model))
    ins, outs, yout = raw_tensors(model, x)
    ok(htp.qi.graphExecute(graph, ins, 1, outs, 1, None, None))
    assert np.abs(q.tensor_specs(model)[1][0].unpack(yout) - ref).max() < TOL


def test_multi_tensor_shared_buffer(htp):
    model = binary(SMALL)
    x, ref = sample(SMALL)
    context = htp.context(model)
    graph = htp.graph(context)
    inputs, outputs = q.io_tensors(model)
    specs = q.tensor_specs(model)[0] + q.tensor_specs(model)[1]
    tensors = inputs + outputs
    # "Calculate the shared buffer size"
    total = sum(s.nbytes for s in specs)
    mem_pointer = htp.alloc(total)
    mem_fd = q.rpcmem_to_fd(mem_pointer)
    assert mem_fd != -1
    offset = 0
    offsets = []
    for tensor, spec in zip(tensors, specs):
        desc = custom_descriptor(q.QNN_HTP_MEM_SHARED_BUFFER, total, fd=mem_fd, offset=offset,
                                 rank_dims=tuple(spec.dims), data_type=spec.data_type)
        tensor.v1.memType = q.QNN_TENSORMEMTYPE_MEMHANDLE
        handle = q.Qnn_MemHandle_t()
        ok(htp.qi.memRegister(context, desc, 1, handle))
        tensor.v1.memHandle = handle.value
        offsets.append(offset)
        offset += spec.nbytes
    assert len({t.v1.memHandle for t in tensors}) == 2        # one handle per offset, one fd
    # "Load the input data to memPointer with respective offsets"
    specs[0].pack(x, q.rpcmem_view(mem_pointer, specs[0].nbytes, offset=offsets[0]))
    ok(htp.qi.graphExecute(graph, inputs, 1, outputs, 1, None, None))
    y = specs[1].unpack(q.rpcmem_view(mem_pointer, specs[1].nbytes, offset=offsets[1]))
    assert np.abs(y - ref).max() < TOL
    for tensor in tensors:
        ok(htp.qi.memDeRegister([tensor.v1.memHandle], 1))
    assert REGISTRY.count() == 0


def _fastrpc_external_buffers(htp: Htp, model):
    """Steps 1-5 of the FastRPC example; returns (context, weights ptr, spill ptr, handles)."""
    # Step 1. Create context using DEFER_GRAPH_INIT config option
    context_config = q.QnnContext_Config_t()
    context_config.option = q.QNN_CONTEXT_CONFIG_OPTION_DEFER_GRAPH_INIT
    context_config.isGraphInitDeferred = 1
    p_context_config = [ctypes.pointer(context_config), None]
    context = q.Qnn_ContextHandle_t()
    blob = model.to_bytes()                                   # the context binary as read from a file
    ok(htp.qi.contextCreateFromBinary(htp.backend, htp.device, p_context_config, blob, len(blob), context, None))
    # Step 2. Retrieve context properties
    rc, weights_size = get_property(htp.qi, context, q.QNN_HTP_CONTEXT_GET_PROP_WEIGHTS_BUFFER_SIZE)
    ok(rc)
    rc, spill_size = get_property(htp.qi, context, q.QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE)
    ok(rc)
    rc, alignment = get_property(htp.qi, context, q.QNN_HTP_CONTEXT_GET_PROP_BUFFER_START_ALIGNMENT)
    ok(rc)
    assert weights_size > 0 and spill_size > 0 and alignment == 4096
    # Step 3. Allocate external buffers (rpcmem: page-aligned starts)
    weights_ptr = htp.alloc(weights_size)
    spill_ptr = htp.alloc(spill_size)
    assert weights_ptr % alignment == 0 and spill_ptr % alignment == 0
    # Step 4. Register external buffers with QNN
    weights_handle, spill_handle = q.Qnn_MemHandle_t(), q.Qnn_MemHandle_t()
    ok(htp.qi.memRegister(context, custom_descriptor(q.QNN_HTP_MEM_WEIGHTS_BUFFER, weights_size,
                                                     fd=q.rpcmem_to_fd(weights_ptr)), 1, weights_handle))
    ok(htp.qi.memRegister(context, custom_descriptor(q.QNN_HTP_MEM_SHARED_SPILLFILL_BUFFER, spill_size,
                                                     fd=q.rpcmem_to_fd(spill_ptr)), 1, spill_handle))
    return context, weights_ptr, spill_ptr, weights_size, spill_size, (weights_handle.value, spill_handle.value)


def test_fastrpc_external_weights_and_spillfill(htp):
    model = binary(SPILL)
    x, ref = sample(SPILL)
    fds_before = open_fds()
    context, weights_ptr, spill_ptr, weights_size, spill_size, handles = _fastrpc_external_buffers(htp, model)
    assert not q.rpcmem_view(weights_ptr, weights_size).any()     # empty until finalize
    # Step 5. Finalize context: the weights are copied into the external weights buffer
    ok(htp.qi.contextFinalize(context, None))
    w = q.rpcmem_view(weights_ptr, model.weight_blob.size)
    assert np.array_equal(w, model.weight_blob)
    graph = htp.graph(context)
    # Execute (RAW I/O; the point here is weights and spill-fill)
    ins, outs, yout = raw_tensors(model, x)
    ok(htp.qi.graphExecute(graph, ins, 1, outs, 1, None, None))
    assert np.abs(q.tensor_specs(model)[1][0].unpack(yout) - ref).max() < TOL
    # the activations that overflow VTCM really went through the registered spill-fill buffer
    assert q.rpcmem_view(spill_ptr, spill_size).any()
    # and the weights are really read from the registered buffer: corrupt them and the result changes
    saved = w.copy()
    w[:] = 0
    ok(htp.qi.graphExecute(graph, ins, 1, outs, 1, None, None))
    assert np.abs(q.tensor_specs(model)[1][0].unpack(yout) - ref).max() > TOL
    w[:] = saved
    # after finalize the context buffers are in use: deregistration is refused, they stay registered
    assert q.qnn_error_code(htp.qi.memDeRegister(list(handles), 2)) == q.QNN_MEM_ERROR_INVALID_ARGUMENT
    assert REGISTRY.count() == 2
    ok(htp.qi.graphExecute(graph, ins, 1, outs, 1, None, None))
    assert np.abs(q.tensor_specs(model)[1][0].unpack(yout) - ref).max() < TOL
    # Free context: the buffers are deregistered automatically
    assert htp.qi.contextFree(context, None) == q.QNN_CONTEXT_NO_ERROR
    assert REGISTRY.count() == 0
    # Free DMA buffers
    q.rpcmem_free(weights_ptr)
    q.rpcmem_free(spill_ptr)
    htp.rpc.clear()
    assert open_fds() == fds_before


def test_native_concurrent_spillfill_and_vtcm_backup_sharing(native):
    model = binary(SPILL)
    x, ref = sample(SPILL)
    qi = native.qi
    # Step 1. Create two contexts with REGISTER_CONCURRENT_RESOURCE_SHARING + DEFER_GRAPH_INIT
    context1 = native.context(model, defer_config(concurrent=True))
    context2 = native.context(model, defer_config(concurrent=True))
    # Step 2. Retrieve context properties (each context individually)
    sizes = []
    for ctx in (context1, context2):
        rc_sf, spill_size = get_property(qi, ctx, q.QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE)
        rc_vt, vtcm_size = get_property(qi, ctx, q.QNN_HTP_CONTEXT_GET_PROP_MAX_VTCMBACKUP_BUFFER_SIZE)
        ok(rc_sf)
        ok(rc_vt)
        sizes.append((spill_size, vtcm_size))
    spill_size = max(s for s, _ in sizes)
    vtcm_backup_size = max(v for _, v in sizes)
    assert spill_size > 0 and vtcm_backup_size > 0
    # Step 3. Allocate external buffers in DSP address space
    spill_qurt_va = q.qurt_malloc(spill_size)
    vtcm_qurt_va = q.qurt_malloc(vtcm_backup_size)
    try:
        # Step 4. Register the same buffers with both contexts
        spill_descriptor = custom_descriptor(q.QNN_HTP_MEM_SHARED_SPILLFILL_BUFFER, spill_size, qurt=spill_qurt_va,
                                             rank_dims=(1,), data_type=q.QNN_DATATYPE_UINT_8)
        vtcm_descriptor = custom_descriptor(q.QNN_HTP_MEM_SHARED_VTCMBACKUP_BUFFER, vtcm_backup_size,
                                            qurt=vtcm_qurt_va, rank_dims=(1,), data_type=q.QNN_DATATYPE_UINT_8)
        # (the array copies the structs; the QnnMemHtp_Descriptor_t they point at live in the two above)
        descriptors = (q.Qnn_MemDescriptor_t * 2)(spill_descriptor, vtcm_descriptor)
        handles1 = (q.Qnn_MemHandle_t * 2)()
        handles2 = (q.Qnn_MemHandle_t * 2)()
        ok(qi.memRegister(context1, descriptors, 2, handles1))
        ok(qi.memRegister(context2, descriptors, 2, handles2))
        assert all(handles1) and all(handles2) and set(handles1).isdisjoint(handles2)
        # Step 5. Finalize contexts
        ok(qi.contextFinalize(context1, None))
        ok(qi.contextFinalize(context2, None))
        graph1, graph2 = native.graph(context1), native.graph(context2)
        # Execute graphs: both contexts, then both at once from two threads (concurrent sharing allows it)
        io = [raw_tensors(model, x) for _ in range(2)]
        ok(qi.graphExecute(graph1, io[0][0], 1, io[0][1], 1, None, None))
        ctx1 = q.backend.lookup(context1, q.context.QnnContext)
        vtcm_image1 = ctx1.vtcm_view().copy()                  # context1's activations in VTCM
        ok(qi.graphExecute(graph2, io[1][0], 1, io[1][1], 1, None, None))
        out_spec = q.tensor_specs(model)[1][0]
        for _, _, yout in io:
            assert np.abs(out_spec.unpack(yout) - ref).max() < TOL
        assert q.qurt_view(spill_qurt_va, spill_size).any()   # the shared spill-fill buffer was used
        # the VTCM passed from context1 to context2: context1's VTCM image went to the shared backup buffer
        assert vtcm_image1.any()
        assert np.array_equal(q.qurt_view(vtcm_qurt_va, vtcm_image1.size), vtcm_image1)
        results = []

        def run(graph, tensors):
            results.append(qi.graphExecute(graph, tensors[0], 1, tensors[1], 1, None, None))

        threads = [threading.Thread(target=run, args=(g, t)) for g, t in ((graph1, io[0]), (graph2, io[1]))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == [0, 0]
        for _, _, yout in io:
            assert np.abs(out_spec.unpack(yout) - ref).max() < TOL
        # Free contexts (buffers deregistered automatically), then the DSP buffers
        assert qi.contextFree(context1, None) == q.QNN_CONTEXT_NO_ERROR
        assert qi.contextFree(context2, None) == q.QNN_CONTEXT_NO_ERROR
        assert REGISTRY.count() == 0
    finally:
        q.qurt_free(spill_qurt_va)
        q.qurt_free(vtcm_qurt_va)


@pytest.mark.parametrize("precision,io,want,tol", [
    ("fp16", "float32", q.QNN_DATATYPE_FLOAT_32, 2e-3), ("int8", "float32", q.QNN_DATATYPE_FLOAT_32, 2e-2),
    ("fp16", "float16", q.QNN_DATATYPE_FLOAT_16, 2e-3), ("int8", "quantized", q.QNN_DATATYPE_SFIXED_POINT_8, 3e-2)])
def test_ion_flow_with_quantized_and_half_binaries(htp, precision, io, want, tol):
    """The ION example with an fp16 and an int8 context binary: graph I/O is FLOAT_32 NHWC by default (the graph
    converts to its native types inside), FLOAT_16 or SFIXED_POINT_8 (with QNN scale/offset) as a compile option;
    the outputs match onnxruntime within the precision's tolerance."""
    x, ref = sample(SMALL)
    calib = [np.random.default_rng(i).normal(size=x.shape).astype(np.float32) for i in range(4)] + [x]
    model = npurt.compile(onnx_model(SMALL), soc="rk3588", precision=precision, progress=False,
                          **({"quantize": calib} if precision == "int8" else {}))
    if io != "float32":
        q.set_graph_io(model, io)
    context = htp.context(model)
    graph = q.Qnn_GraphHandle_t()
    ok(htp.qi.graphRetrieve(context, model.graph.name, graph))
    inputs, outputs = q.io_tensors(model)
    in_spec, out_spec = q.tensor_specs(model)
    assert inputs[0].v1.dataType == want and outputs[0].v1.dataType == want
    n, c, h, w = x.shape
    assert list(inputs[0].v1.dimensions[:inputs[0].v1.rank]) == [n, h, w, c]           # NHWC, QNN's layout
    assert list(outputs[0].v1.dimensions[:outputs[0].v1.rank]) == list(ref.shape)        # not 4-D: as is
    qp = outputs[0].v1.quantizeParams
    if io == "quantized":
        assert qp.quantizationEncoding == q.QNN_QUANTIZATION_ENCODING_SCALE_OFFSET
        assert qp.scaleOffsetEncoding.scale == pytest.approx(out_spec[0].scale)
    else:
        assert qp.encodingDefinition == q.QNN_DEFINITION_UNDEFINED
    in_ptr = register_ion(htp, context, inputs[0], in_spec[0].nbytes)
    out_ptr = register_ion(htp, context, outputs[0], out_spec[0].nbytes)
    in_spec[0].pack(x, q.rpcmem_view(in_ptr, in_spec[0].nbytes))
    ok(htp.qi.graphExecute(graph, inputs, 1, outputs, 1, None, None))
    assert np.abs(out_spec[0].unpack(q.rpcmem_view(out_ptr, out_spec[0].nbytes)) - ref).max() < tol
    if io == "float32":      # the buffer holds plain NHWC float32, readable without npurt's helpers
        y = q.rpcmem_view(out_ptr, out_spec[0].nbytes, np.float32).reshape(ref.shape)
        assert np.abs(y - ref).max() < tol
    ok(htp.qi.contextFree(context, None))


def test_everything_released_after_the_flows():
    assert REGISTRY.count() == 0
    assert q.rpcmem_leaks() == []
    assert htp_device.open_soc_devices() == {}
