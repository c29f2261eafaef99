"""Every restriction of the shared-buffer tutorial (support table, descriptor rules, notes) broken once, with
nothing else changed: the documented QNN error comes back, and no other handle or buffer changes.
"""
from __future__ import annotations

import ctypes
import os
import threading

import numpy as np
import pytest

import npurt.qnn as q
from npurt.memory.mapping import new_memfd
from npurt.qnn.backend import core_of, lookup
from npurt.qnn.context import QnnContext
from npurt.qnn.mem_registry import REGISTRY
from conftest import open_fds
from helpers.qnn import (SMALL, SPILL, binary, code, custom_descriptor, defer_config,  # noqa: F401
                              get_property, htp, ion_descriptor, native, ok, raw_tensors, register_ion, sample)

pytestmark = pytest.mark.usefixtures("no_leaks")   # every fd, device buffer, byte and handle given back


def state():
    """What must not change when a call fails: live handles, rpcmem buffers, open fds."""
    return REGISTRY.count(), [leak["base"] for leak in q.rpcmem_leaks()], open_fds()


def one_handle(qi, ctx, desc) -> tuple[int, int]:
    h = q.Qnn_MemHandle_t()
    ret = qi.memRegister(ctx, desc, 1, h)
    return code(ret), h.value or 0


def ion_case(h):
    """A finalized context, its graph, I/O tensors and specs."""
    ctx = h.context(binary(SMALL))
    ins, outs = q.io_tensors(binary(SMALL))
    ispec, ospec = q.tensor_specs(binary(SMALL))
    return ctx, h.graph(ctx), ins, outs, ispec[0], ospec[0]


def deferred_sizes(h, ctx):
    return {opt: get_property(h.qi, ctx, opt)[1] for opt in (q.QNN_HTP_CONTEXT_GET_PROP_WEIGHTS_BUFFER_SIZE,
                                                             q.QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE)}


W, SF, VB = q.QNN_HTP_MEM_WEIGHTS_BUFFER, q.QNN_HTP_MEM_SHARED_SPILLFILL_BUFFER, q.QNN_HTP_MEM_SHARED_VTCMBACKUP_BUFFER
WSIZE = 2 << 20


# ---------------------------------------------------------------------------------------------------------
# the support table: which descriptor type works in which use case
# ---------------------------------------------------------------------------------------------------------
def test_native_refuses_ion_shared_and_weights(native):
    ctx = native.context(binary(SMALL), defer_config())
    ins, _ = q.io_tensors(binary(SMALL))
    p = native.alloc(1 << 16)
    fd = q.rpcmem_to_fd(p)
    before = state()
    assert one_handle(native.qi, ctx, ion_descriptor(ins[0], fd)) == (q.QNN_MEM_ERROR_UNSUPPORTED_MEMTYPE, 0)
    shared = custom_descriptor(q.QNN_HTP_MEM_SHARED_BUFFER, 1 << 16, fd=fd, rank_dims=(16,),
                               data_type=q.QNN_DATATYPE_UINT_8)
    assert one_handle(native.qi, ctx, shared)[0] == q.QNN_MEM_ERROR_UNSUPPORTED_MEMTYPE
    assert one_handle(native.qi, ctx, custom_descriptor(W, WSIZE, fd=fd))[0] == q.QNN_MEM_ERROR_UNSUPPORTED_MEMTYPE
    assert state() == before


def test_fastrpc_refuses_vtcm_backup(htp):
    ctx = htp.context(binary(SPILL), defer_config())
    p = htp.alloc(WSIZE)
    before = state()
    assert one_handle(htp.qi, ctx, custom_descriptor(VB, WSIZE, fd=q.rpcmem_to_fd(p)))[0] == \
        q.QNN_MEM_ERROR_UNSUPPORTED_MEMTYPE
    assert state() == before


def test_unsupported_memtypes(htp):
    ctx = htp.context(binary(SMALL))
    ins, _ = q.io_tensors(binary(SMALL))
    p = htp.alloc(1 << 16)
    dma = ion_descriptor(ins[0], q.rpcmem_to_fd(p))
    dma.memType = q.QNN_MEM_TYPE_DMA_BUF
    assert one_handle(htp.qi, ctx, dma)[0] == q.QNN_MEM_ERROR_UNSUPPORTED_MEMTYPE
    qurt = custom_descriptor(q.QNN_HTP_MEM_QURT, 1 << 16, qurt=4096)
    assert one_handle(htp.qi, ctx, qurt)[0] == q.QNN_MEM_ERROR_UNSUPPORTED_MEMTYPE
    undefined = ion_descriptor(ins[0], q.rpcmem_to_fd(p))
    undefined.memType = q.QNN_MEM_TYPE_UNDEFINED
    assert one_handle(htp.qi, ctx, undefined)[0] == q.QNN_MEM_ERROR_UNSUPPORTED_MEMTYPE
    null_custom = q.Qnn_MemDescriptor_t()
    null_custom.memType = q.QNN_MEM_TYPE_CUSTOM
    assert one_handle(htp.qi, ctx, null_custom)[0] == q.QNN_MEM_ERROR_INVALID_ARGUMENT
    assert REGISTRY.count() == 0


# ---------------------------------------------------------------------------------------------------------
# ION
# ---------------------------------------------------------------------------------------------------------
def test_ion_unknown_fds(htp):
    ctx, _, ins, _, ispec, _ = ion_case(htp)
    before = state()
    assert one_handle(htp.qi, ctx, ion_descriptor(ins[0], 987))[0] == q.QNN_MEM_ERROR_MAPPING     # not open
    assert one_handle(htp.qi, ctx, ion_descriptor(ins[0], -1))[0] == q.QNN_MEM_ERROR_MAPPING
    fd = new_memfd("not-rpcmem", 1 << 16)                     # a real fd, but unknown to FastRPC
    try:
        assert one_handle(htp.qi, ctx, ion_descriptor(ins[0], fd))[0] == q.QNN_MEM_ERROR_MAPPING
    finally:
        os.close(fd)
    p = htp.alloc(ispec.nbytes)
    fd = q.rpcmem_to_fd(p)
    q.rpcmem_free(p)                                           # freed: its fd is gone
    htp.rpc.remove(p)
    assert one_handle(htp.qi, ctx, ion_descriptor(ins[0], fd))[0] == q.QNN_MEM_ERROR_MAPPING
    assert state() == before


def test_ion_duplicate_in_one_context_but_fine_in_another(htp):
    model = binary(SMALL)
    x, ref = sample(SMALL)
    ctx, graph, ins, outs, ispec, ospec = ion_case(htp)
    p_in = register_ion(htp, ctx, ins[0], ispec.nbytes)
    p_out = register_ion(htp, ctx, outs[0], ospec.nbytes)
    before = state()
    assert one_handle(htp.qi, ctx, ion_descriptor(ins[0], q.rpcmem_to_fd(p_in))) == \
        (q.QNN_MEM_ERROR_ALREADY_REGISTERED, 0)
    dup = os.dup(q.rpcmem_to_fd(p_in))                         # another fd of the same dma-buf is the same memory
    try:
        assert one_handle(htp.qi, ctx, ion_descriptor(ins[0], dup))[0] in (q.QNN_MEM_ERROR_ALREADY_REGISTERED,
                                                                           q.QNN_MEM_ERROR_MAPPING)
    finally:
        os.close(dup)
    assert state() == before
    ispec.pack(x, q.rpcmem_view(p_in, ispec.nbytes))          # the first handle is untouched
    ok(htp.qi.graphExecute(graph, ins, 1, outs, 1, None, None))
    assert np.abs(ospec.unpack(q.rpcmem_view(p_out, ospec.nbytes)) - ref).max() < 1e-4
    other = htp.context(model)
    rc, handle = one_handle(htp.qi, other, ion_descriptor(ins[0], q.rpcmem_to_fd(p_in)))
    assert rc == 0 and handle and handle != ins[0].v1.memHandle


def test_ion_shape_rules(htp):
    ctx, _, ins, _, ispec, _ = ion_case(htp)
    small = htp.alloc(ispec.nbytes // 2)
    before = state()
    assert one_handle(htp.qi, ctx, ion_descriptor(ins[0], q.rpcmem_to_fd(small)))[0] == q.QNN_MEM_ERROR_INVALID_SHAPE
    p = htp.alloc(ispec.nbytes)
    before = state()
    no_rank = ion_descriptor(ins[0], q.rpcmem_to_fd(p))
    no_rank.memShape.numDim = 0
    assert one_handle(htp.qi, ctx, no_rank)[0] == q.QNN_MEM_ERROR_INVALID_SHAPE
    bad_dims = ion_descriptor(ins[0], q.rpcmem_to_fd(p))
    bad_dims.memShape.dimSize = ctypes.cast(ctypes.c_void_p(16), ctypes.POINTER(ctypes.c_uint32))  # unmapped
    assert one_handle(htp.qi, ctx, bad_dims)[0] == q.QNN_MEM_ERROR_INVALID_SHAPE
    bad_type = ion_descriptor(ins[0], q.rpcmem_to_fd(p))
    bad_type.dataType = 0x1234
    assert one_handle(htp.qi, ctx, bad_type)[0] == q.QNN_MEM_ERROR_INVALID_SHAPE
    assert state() == before


# ---------------------------------------------------------------------------------------------------------
# SHARED_BUFFER
# ---------------------------------------------------------------------------------------------------------
def test_shared_buffer_offsets(htp):
    ctx, _, _, _, ispec, ospec = ion_case(htp)
    total = ispec.nbytes + ospec.nbytes
    p = htp.alloc(total)
    fd = q.rpcmem_to_fd(p)

    def desc(offset, size=total, spec=ispec):
        return custom_descriptor(q.QNN_HTP_MEM_SHARED_BUFFER, size, fd=fd, offset=offset,
                                 rank_dims=spec.dims, data_type=spec.data_type)
    rc, first = one_handle(htp.qi, ctx, desc(0))
    assert rc == 0
    before = state()
    assert one_handle(htp.qi, ctx, desc(0))[0] == q.QNN_MEM_ERROR_ALREADY_REGISTERED      # same (fd, offset)
    assert one_handle(htp.qi, ctx, desc(ospec.nbytes + 1, spec=ispec))[0] == q.QNN_MEM_ERROR_INVALID_ARGUMENT
    assert one_handle(htp.qi, ctx, desc(total - ospec.nbytes + 4, spec=ospec))[0] == q.QNN_MEM_ERROR_INVALID_ARGUMENT
    assert one_handle(htp.qi, ctx, desc(0, size=1 << 30))[0] == q.QNN_MEM_ERROR_INVALID_ARGUMENT  # past the buffer
    assert one_handle(htp.qi, ctx, desc(ispec.nbytes, size=0, spec=ospec))[0] == q.QNN_MEM_ERROR_INVALID_ARGUMENT
    assert state() == before
    rc, second = one_handle(htp.qi, ctx, desc(ispec.nbytes, spec=ospec))          # each offset its own handle
    assert rc == 0 and second != first


# ---------------------------------------------------------------------------------------------------------
# WEIGHTS_BUFFER
# ---------------------------------------------------------------------------------------------------------
def test_weights_only_in_the_deferred_window(htp):
    p = htp.alloc(WSIZE)
    fd = q.rpcmem_to_fd(p)
    plain = htp.context(binary(SMALL))
    before = state()
    assert one_handle(htp.qi, plain, custom_descriptor(W, WSIZE, fd=fd))[0] == q.QNN_MEM_ERROR_NOT_SUPPORTED
    deferred = htp.context(binary(SMALL), defer_config())
    ok(htp.qi.contextFinalize(deferred, None))
    before = state()
    assert one_handle(htp.qi, deferred, custom_descriptor(W, WSIZE, fd=fd))[0] == q.QNN_MEM_ERROR_NOT_SUPPORTED
    assert state() == before


def test_one_weights_buffer_per_context_never_shared(htp):
    a, b = htp.alloc(WSIZE), htp.alloc(WSIZE)
    ctx1 = htp.context(binary(SMALL), defer_config())
    ctx2 = htp.context(binary(SMALL), defer_config())
    rc, handle = one_handle(htp.qi, ctx1, custom_descriptor(W, WSIZE, fd=q.rpcmem_to_fd(a)))
    assert rc == 0
    before = state()
    assert one_handle(htp.qi, ctx1, custom_descriptor(W, WSIZE, fd=q.rpcmem_to_fd(b)))[0] == \
        q.QNN_MEM_ERROR_ALREADY_REGISTERED
    assert one_handle(htp.qi, ctx2, custom_descriptor(W, WSIZE, fd=q.rpcmem_to_fd(a)))[0] == \
        q.QNN_MEM_ERROR_ALREADY_REGISTERED
    assert state() == before
    ok(htp.qi.memDeRegister([handle], 1))                     # before finalize it may go
    assert one_handle(htp.qi, ctx2, custom_descriptor(W, WSIZE, fd=q.rpcmem_to_fd(a)))[0] == 0


def test_weights_alignment_and_size(htp):
    p = htp.alloc(2 * WSIZE)
    fd = q.rpcmem_to_fd(p)
    ctx = htp.context(binary(SMALL), defer_config())
    required = deferred_sizes(htp, ctx)[q.QNN_HTP_CONTEXT_GET_PROP_WEIGHTS_BUFFER_SIZE]
    before = state()
    assert one_handle(htp.qi, ctx, custom_descriptor(W, required, fd=fd, offset=100))[0] == \
        q.QNN_MEM_ERROR_INVALID_SHAPE
    assert one_handle(htp.qi, ctx, custom_descriptor(W, required - 4096, fd=fd))[0] == q.QNN_MEM_ERROR_INVALID_ARGUMENT
    assert one_handle(htp.qi, ctx, custom_descriptor(W, required, fd=fd, offset=2 * WSIZE))[0] == \
        q.QNN_MEM_ERROR_INVALID_ARGUMENT                       # past the end of the buffer
    assert state() == before
    assert one_handle(htp.qi, ctx, custom_descriptor(W, required, fd=fd, offset=4096))[0] == 0   # aligned offset


def test_weights_and_spillfill_fds_are_not_for_other_types(htp):
    ctx = htp.context(binary(SPILL), defer_config())
    plain = htp.context(binary(SMALL))
    sizes = deferred_sizes(htp, ctx)
    w, s, t = htp.alloc(WSIZE), htp.alloc(sizes[q.QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE]), htp.alloc(WSIZE)
    ins, _ = q.io_tensors(binary(SMALL))
    ok(one_handle(htp.qi, ctx, custom_descriptor(W, WSIZE, fd=q.rpcmem_to_fd(w)))[0])
    ok(one_handle(htp.qi, ctx, custom_descriptor(SF, sizes[q.QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE],
                                                 fd=q.rpcmem_to_fd(s)))[0])
    ok(one_handle(htp.qi, plain, ion_descriptor(ins[0], q.rpcmem_to_fd(t)))[0])
    before = state()
    for p in (w, s):
        assert one_handle(htp.qi, plain, ion_descriptor(ins[0], q.rpcmem_to_fd(p)))[0] == \
            q.QNN_MEM_ERROR_INVALID_ARGUMENT
    shared = custom_descriptor(q.QNN_HTP_MEM_SHARED_BUFFER, WSIZE, fd=q.rpcmem_to_fd(w), rank_dims=(16,),
                               data_type=q.QNN_DATATYPE_UINT_8)
    assert one_handle(htp.qi, plain, shared)[0] == q.QNN_MEM_ERROR_INVALID_ARGUMENT
    ctx2 = htp.context(binary(SPILL), defer_config())
    before = state()
    assert one_handle(htp.qi, ctx2, custom_descriptor(W, WSIZE, fd=q.rpcmem_to_fd(t)))[0] == \
        q.QNN_MEM_ERROR_INVALID_ARGUMENT                       # an ION fd cannot become a weights buffer
    assert state() == before


def test_external_buffers_not_with_multi_contexts_or_fastrpc_concurrent(htp):
    p = htp.alloc(WSIZE)
    for cfg in (defer_config(multi=True), defer_config(concurrent=True)):
        ctx = htp.context(binary(SMALL), cfg)
        before = state()
        assert one_handle(htp.qi, ctx, custom_descriptor(W, WSIZE, fd=q.rpcmem_to_fd(p)))[0] == \
            q.QNN_MEM_ERROR_NOT_SUPPORTED
        assert state() == before


def test_weights_from_another_dma_allocator_and_its_lifetime(htp):
    """The tutorial allows a custom DMA allocator: a plain memfd works for WEIGHTS (mapped into the device)."""
    x, ref = sample(SMALL)
    fd = new_memfd("custom-dma", WSIZE)
    try:
        n = open_fds()
        ctx = htp.context(binary(SMALL), defer_config())
        rc, handle = one_handle(htp.qi, ctx, custom_descriptor(W, WSIZE, fd=fd))
        assert rc == 0
        ok(htp.qi.contextFinalize(ctx, None))
        assert os.pread(fd, 64, 0) == binary(SMALL).weight_blob[:64].tobytes()   # weights copied in at finalize
        ins, outs, yout = raw_tensors(binary(SMALL), x)
        ok(htp.qi.graphExecute(htp.graph(ctx), ins, 1, outs, 1, None, None))
        assert np.abs(q.tensor_specs(binary(SMALL))[1][0].unpack(yout) - ref).max() < 1e-4
        assert code(htp.qi.memDeRegister([handle], 1)) == q.QNN_MEM_ERROR_INVALID_ARGUMENT   # in use
        ok(htp.qi.contextFree(ctx, None))                      # automatic deregistration drops its import
        assert open_fds() == n and REGISTRY.count() == 0
    finally:
        os.close(fd)


def test_finalize_after_the_weights_buffer_was_freed(htp):
    ctx = htp.context(binary(SMALL), defer_config())
    p = q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, 1, WSIZE)
    ok(one_handle(htp.qi, ctx, custom_descriptor(W, WSIZE, fd=q.rpcmem_to_fd(p)))[0])
    q.rpcmem_free(p)                                           # "must not be deallocated while registered"
    assert code(htp.qi.contextFinalize(ctx, None)) == q.QNN_CONTEXT_ERROR_MEM_ALLOC
    graph = q.Qnn_GraphHandle_t()
    assert code(htp.qi.graphRetrieve(ctx, binary().graph.name, graph)) == q.QNN_GRAPH_ERROR_GRAPH_NOT_FINALIZED


# ---------------------------------------------------------------------------------------------------------
# SHARED_SPILLFILL_BUFFER: shareable, but only sequentially (unless concurrent sharing in Non-RPC)
# ---------------------------------------------------------------------------------------------------------
def _shared_spill_contexts(h, *, concurrent=False):
    """Two finalized contexts sharing one spill-fill buffer; returns (graphs, io, spill pointer or address)."""
    cfg = defer_config(concurrent=concurrent)
    ctxs = [h.context(binary(SPILL), cfg), h.context(binary(SPILL), cfg)]
    size = deferred_sizes(h, ctxs[0])[q.QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE]
    if h.qi.use_case == "native":
        addr = q.qurt_malloc(size)
        descs = [custom_descriptor(SF, size, qurt=addr)]
        if concurrent:
            vsize = get_property(h.qi, ctxs[0], q.QNN_HTP_CONTEXT_GET_PROP_MAX_VTCMBACKUP_BUFFER_SIZE)[1]
            vaddr = q.qurt_malloc(vsize)
            descs.append(custom_descriptor(VB, vsize, qurt=vaddr))
            h.qurt = [addr, vaddr]
        else:
            h.qurt = [addr]
    else:
        descs = [custom_descriptor(SF, size, fd=q.rpcmem_to_fd(h.alloc(size)))]
        h.qurt = []
    for ctx in ctxs:
        for d in descs:
            ok(one_handle(h.qi, ctx, d)[0])
        ok(h.qi.contextFinalize(ctx, None))
    x, _ = sample(SPILL)
    return [h.graph(c) for c in ctxs], [raw_tensors(binary(SPILL), x) for _ in ctxs]


def _parallel(h, graphs, io):
    """graph 0 starts and waits for the HTP (held by the test); graph 1 is called meanwhile."""
    core = core_of(h.qi.soc)
    results = {}
    core.exec_lock.acquire()
    try:
        t = threading.Thread(target=lambda: results.setdefault(
            0, h.qi.graphExecute(graphs[0], io[0][0], 1, io[0][1], 1, None, None)))
        t.start()
        for _ in range(2000):                                  # until graph 0 marked its buffers busy
            if core.busy:
                break
            threading.Event().wait(0.001)
        second = threading.Thread(target=lambda: results.setdefault(
            1, h.qi.graphExecute(graphs[1], io[1][0], 1, io[1][1], 1, None, None)))
        second.start()
        if code(results.get(1, 0)) == 0:
            threading.Event().wait(0.05)
    finally:
        core.exec_lock.release()
    t.join()
    second.join()
    return code(results[0]), code(results[1])


def test_fastrpc_spillfill_shared_but_sequential_only(htp):
    graphs, io = _shared_spill_contexts(htp)
    _, ref = sample(SPILL)
    spec = q.tensor_specs(binary(SPILL))[1][0]
    for g, (ins, outs, yout) in zip(graphs, io):               # sequential: fine
        ok(htp.qi.graphExecute(g, ins, 1, outs, 1, None, None))
        assert np.abs(spec.unpack(yout) - ref).max() < 1e-4
    assert _parallel(htp, graphs, io) == (0, q.QNN_GRAPH_ERROR_UNSUPPORTED_FEATURE)
    ok(htp.qi.graphExecute(graphs[1], io[1][0], 1, io[1][1], 1, None, None))   # nothing stuck afterwards


def test_native_spillfill_without_concurrent_sharing_is_sequential_only(native):
    graphs, io = _shared_spill_contexts(native)
    try:
        assert _parallel(native, graphs, io) == (0, q.QNN_GRAPH_ERROR_UNSUPPORTED_FEATURE)
    finally:
        native.close()
        for a in native.qurt:
            q.qurt_free(a)


def test_native_concurrent_sharing_runs_in_parallel(native):
    graphs, io = _shared_spill_contexts(native, concurrent=True)
    try:
        assert _parallel(native, graphs, io) == (0, 0)
    finally:
        native.close()
        for a in native.qurt:
            q.qurt_free(a)


def test_native_qurt_address_rules(native):
    ctx = native.context(binary(SPILL), defer_config())
    size = deferred_sizes(native, ctx)[q.QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE]
    addr = q.qurt_malloc(size + 8192)
    try:
        before = state()
        assert one_handle(native.qi, ctx, custom_descriptor(SF, size, qurt=0x7000_0000))[0] == q.QNN_MEM_ERROR_MAPPING
        assert one_handle(native.qi, ctx, custom_descriptor(SF, size, qurt=addr + 100))[0] == \
            q.QNN_MEM_ERROR_INVALID_SHAPE
        assert one_handle(native.qi, ctx, custom_descriptor(SF, size // 2, qurt=addr))[0] == \
            q.QNN_MEM_ERROR_INVALID_ARGUMENT
        assert one_handle(native.qi, ctx, custom_descriptor(SF, size + 16384, qurt=addr))[0] == \
            q.QNN_MEM_ERROR_MAPPING                            # runs past the DSP buffer
        assert state() == before
        rc, _ = one_handle(native.qi, ctx, custom_descriptor(SF, size, qurt=addr + 4096))
        assert rc == 0
        assert one_handle(native.qi, ctx, custom_descriptor(SF, size, qurt=addr))[0] == \
            q.QNN_MEM_ERROR_ALREADY_REGISTERED                 # one spill-fill buffer per context
    finally:
        native.close()
        q.qurt_free(addr)


# ---------------------------------------------------------------------------------------------------------
# SHARED_VTCMBACKUP_BUFFER and concurrent sharing requirements
# ---------------------------------------------------------------------------------------------------------
def test_concurrent_sharing_needs_the_same_priority(native):
    ctx1 = native.context(binary(SPILL), defer_config(concurrent=True, priority=q.QNN_PRIORITY_HIGH))
    ctx2 = native.context(binary(SPILL), defer_config(concurrent=True, priority=q.QNN_PRIORITY_LOW))
    size = deferred_sizes(native, ctx1)[q.QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE]
    addr = q.qurt_malloc(size)
    try:
        ok(one_handle(native.qi, ctx1, custom_descriptor(SF, size, qurt=addr))[0])
        before = state()
        assert one_handle(native.qi, ctx2, custom_descriptor(SF, size, qurt=addr))[0] == \
            q.QNN_MEM_ERROR_INVALID_ARGUMENT
        assert state() == before
        ctx3 = native.context(binary(SPILL), defer_config(concurrent=True, priority=q.QNN_PRIORITY_HIGH))
        assert one_handle(native.qi, ctx3, custom_descriptor(SF, size, qurt=addr))[0] == 0
    finally:
        native.close()
        q.qurt_free(addr)


def test_concurrent_sharing_needs_both_buffers(native):
    ctx = native.context(binary(SPILL), defer_config(concurrent=True))
    size = deferred_sizes(native, ctx)[q.QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE]
    addr = q.qurt_malloc(size)
    try:
        ok(one_handle(native.qi, ctx, custom_descriptor(SF, size, qurt=addr))[0])
        assert code(native.qi.contextFinalize(ctx, None)) == q.QNN_CONTEXT_ERROR_INVALID_CONFIG
        c = lookup(ctx, QnnContext)
        assert not c.finalized and REGISTRY.count() == 1       # still deferred: the user may add the other one
    finally:
        native.close()
        q.qurt_free(addr)


def test_native_external_buffers_not_with_multi_contexts(native):
    ctx = native.context(binary(SPILL), defer_config(multi=True))
    addr = q.qurt_malloc(4 << 20)
    try:
        assert one_handle(native.qi, ctx, custom_descriptor(SF, 4 << 20, qurt=addr))[0] == q.QNN_MEM_ERROR_NOT_SUPPORTED
    finally:
        native.close()
        q.qurt_free(addr)


def test_group_registration_first_handle(native):
    """Without DEFER_GRAPH_INIT, firstGroupHandle must be NULL (new group) or a live context."""
    native.context(binary(SMALL), defer_config(multi=True, first_group=0xBAD0)[:-2] + [None],
                   expect=q.QNN_CONTEXT_ERROR_INVALID_CONFIG)
    first = native.context(binary(SMALL), defer_config(multi=True)[:-2] + [None])
    native.context(binary(SMALL), defer_config(multi=True, first_group=first.value)[:-2] + [None])


# ---------------------------------------------------------------------------------------------------------
# registration as a whole, handles across contexts, use after free
# ---------------------------------------------------------------------------------------------------------
def test_register_is_all_or_nothing(htp):
    ctx, _, ins, outs, ispec, ospec = ion_case(htp)
    a, b = htp.alloc(ispec.nbytes), htp.alloc(ospec.nbytes)
    good, bad = ion_descriptor(ins[0], q.rpcmem_to_fd(a)), ion_descriptor(outs[0], 999)
    descs = (q.Qnn_MemDescriptor_t * 2)(good, bad)
    handles = (q.Qnn_MemHandle_t * 2)(0x1111, 0x2222)
    before = state()
    assert code(htp.qi.memRegister(ctx, descs, 2, handles)) == q.QNN_MEM_ERROR_MAPPING
    assert list(handles) == [None, None] and state() == before
    same = (q.Qnn_MemDescriptor_t * 2)(good, good)             # a duplicate inside one call
    assert code(htp.qi.memRegister(ctx, same, 2, handles)) == q.QNN_MEM_ERROR_ALREADY_REGISTERED
    assert state() == before
    both = (q.Qnn_MemDescriptor_t * 2)(good, ion_descriptor(outs[0], q.rpcmem_to_fd(b)))
    ok(htp.qi.memRegister(ctx, both, 2, handles))
    assert all(handles)


def test_deregister_removes_every_valid_handle_even_on_error(htp):
    ctx, _, ins, outs, ispec, ospec = ion_case(htp)
    register_ion(htp, ctx, ins[0], ispec.nbytes)
    register_ion(htp, ctx, outs[0], ospec.nbytes)
    assert REGISTRY.count() == 2
    handles = [ins[0].v1.memHandle, 0xDEAD, outs[0].v1.memHandle, None]
    assert code(htp.qi.memDeRegister(handles, 4)) == q.QNN_MEM_ERROR_INVALID_HANDLE
    assert REGISTRY.count() == 0
    assert code(htp.qi.memDeRegister([ins[0].v1.memHandle], 1)) == q.QNN_MEM_ERROR_INVALID_HANDLE   # twice
    assert code(htp.qi.memDeRegister(None, 1)) == q.QNN_MEM_ERROR_INVALID_ARGUMENT


def test_memhandle_of_another_context_or_deregistered(htp):
    x, _ = sample(SMALL)
    ctx1, graph1, ins, outs, ispec, ospec = ion_case(htp)
    ctx2 = htp.context(binary(SMALL))
    p_in = register_ion(htp, ctx2, ins[0], ispec.nbytes)       # registered with ctx2 ...
    register_ion(htp, ctx1, outs[0], ospec.nbytes)
    ispec.pack(x, q.rpcmem_view(p_in, ispec.nbytes))
    before = state()
    assert code(htp.qi.graphExecute(graph1, ins, 1, outs, 1, None, None)) == q.QNN_GRAPH_ERROR_INVALID_TENSOR  # ... used in ctx1
    assert state() == before
    handle = ins[0].v1.memHandle
    ok(htp.qi.memDeRegister([handle], 1))
    ins[0].v1.memHandle = handle
    assert code(htp.qi.graphExecute(graph1, ins, 1, outs, 1, None, None)) == q.QNN_GRAPH_ERROR_INVALID_TENSOR
    ins[0].v1.memHandle = None                                 # "No memHandle provided"
    assert code(htp.qi.graphExecute(graph1, ins, 1, outs, 1, None, None)) == q.QNN_GRAPH_ERROR_INVALID_TENSOR
    ins[0].v1.memHandle = 0x1234                               # the x86 library segfaults here; npurt refuses
    assert code(htp.qi.graphExecute(graph1, ins, 1, outs, 1, None, None)) == q.QNN_GRAPH_ERROR_INVALID_TENSOR


def test_rpcmem_freed_under_a_live_handle(htp):
    ctx, graph, ins, outs, ispec, ospec = ion_case(htp)
    p_in = register_ion(htp, ctx, ins[0], ispec.nbytes)
    register_ion(htp, ctx, outs[0], ospec.nbytes)
    q.rpcmem_free(p_in)
    htp.rpc.remove(p_in)
    assert code(htp.qi.graphExecute(graph, ins, 1, outs, 1, None, None)) == q.QNN_GRAPH_ERROR_INVALID_TENSOR


def test_raw_client_buffer_errors(htp):
    x, _ = sample(SMALL)
    _, graph, _, _, _, _ = ion_case(htp)
    ins, outs, yout = raw_tensors(binary(SMALL), x)
    ins[0].v1.clientBuf.dataSize -= 4
    assert code(htp.qi.graphExecute(graph, ins, 1, outs, 1, None, None)) == q.QNN_GRAPH_ERROR_INVALID_TENSOR
    ins[0].v1.clientBuf.dataSize += 4
    outs[0].v1.clientBuf.data = 16                             # unmapped: EFAULT, not a crash
    assert code(htp.qi.graphExecute(graph, ins, 1, outs, 1, None, None)) == q.QNN_GRAPH_ERROR_INVALID_TENSOR
    ins[0].v1.clientBuf.data = 16
    assert code(htp.qi.graphExecute(graph, ins, 1, outs, 1, None, None)) == q.QNN_GRAPH_ERROR_INVALID_TENSOR
    assert code(htp.qi.graphExecute(graph, ins, 0, outs, 1, None, None)) == q.QNN_GRAPH_ERROR_INVALID_ARGUMENT
    assert code(htp.qi.graphExecute(0x4242, ins, 1, outs, 1, None, None)) == q.QNN_GRAPH_ERROR_INVALID_HANDLE


def test_use_after_free(htp):
    x, _ = sample(SMALL)
    ctx, graph, ins, outs, ispec, ospec = ion_case(htp)
    p_in = register_ion(htp, ctx, ins[0], ispec.nbytes)
    ok(htp.qi.contextFree(ctx, None))
    assert REGISTRY.count() == 0                               # handles went with the context
    rins, routs, _ = raw_tensors(binary(SMALL), x)
    assert code(htp.qi.graphExecute(graph, rins, 1, routs, 1, None, None)) == q.QNN_GRAPH_ERROR_INVALID_CONTEXT
    assert code(htp.qi.memRegister(ctx, ion_descriptor(ins[0], q.rpcmem_to_fd(p_in)), 1, q.Qnn_MemHandle_t())) == \
        q.QNN_MEM_ERROR_INVALID_HANDLE
    assert code(htp.qi.memDeRegister([ins[0].v1.memHandle], 1)) == q.QNN_MEM_ERROR_INVALID_HANDLE
    assert code(htp.qi.contextFinalize(ctx, None)) == q.QNN_CONTEXT_ERROR_INVALID_HANDLE
    assert get_property(htp.qi, ctx, q.QNN_HTP_CONTEXT_GET_PROP_BUFFER_START_ALIGNMENT)[0] == \
        q.QNN_CONTEXT_ERROR_INVALID_HANDLE
    assert code(htp.qi.contextFree(ctx, None)) == q.QNN_CONTEXT_ERROR_INVALID_HANDLE
    g = q.Qnn_GraphHandle_t()
    assert code(htp.qi.graphRetrieve(ctx, binary().graph.name, g)) == q.QNN_GRAPH_ERROR_INVALID_CONTEXT


def test_context_lifecycle_errors(htp):
    deferred = htp.context(binary(SMALL), defer_config())
    g = q.Qnn_GraphHandle_t()
    assert code(htp.qi.graphRetrieve(deferred, binary().graph.name, g)) == q.QNN_GRAPH_ERROR_GRAPH_NOT_FINALIZED
    ok(htp.qi.contextFinalize(deferred, None))
    assert code(htp.qi.contextFinalize(deferred, None)) == q.QNN_CONTEXT_ERROR_UNSUPPORTED_FEATURE
    assert code(htp.qi.graphRetrieve(deferred, "nope", g)) == q.QNN_GRAPH_ERROR_GRAPH_DOES_NOT_EXIST
    plain = htp.context(binary(SMALL))
    assert code(htp.qi.contextFinalize(plain, None)) == q.QNN_CONTEXT_ERROR_UNSUPPORTED_FEATURE
    ctx = q.Qnn_ContextHandle_t()
    assert code(htp.qi.contextCreateFromBinary(htp.backend, htp.device, None, b"garbage", 7, ctx, None)) == \
        q.QNN_CONTEXT_ERROR_CREATE_FROM_BINARY
    assert code(htp.qi.contextCreateFromBinary(htp.backend, htp.device, None, None, 0, ctx, None)) == \
        q.QNN_CONTEXT_ERROR_INVALID_ARGUMENT
    assert code(htp.qi.contextCreateFromBinary(0x777, None, None, binary(), 0, ctx, None)) == \
        q.QNN_CONTEXT_ERROR_INVALID_HANDLE
    bad = q.QnnContext_Config_t()
    bad.option = 4242
    assert code(htp.qi.contextCreateFromBinary(htp.backend, None, [bad, None], binary(), 0, ctx, None)) == \
        q.QNN_CONTEXT_ERROR_INVALID_CONFIG
    assert ctx.value is None
    blob = binary().to_bytes()
    ok(htp.qi.contextCreateFromBinary(htp.backend, None, None, blob, len(blob), ctx, None))   # NULL device is fine


def test_bad_register_arguments(htp):
    ctx, _, ins, _, ispec, _ = ion_case(htp)
    p = htp.alloc(ispec.nbytes)
    desc = ion_descriptor(ins[0], q.rpcmem_to_fd(p))
    assert code(htp.qi.memRegister(ctx, desc, 1, None)) == q.QNN_MEM_ERROR_INVALID_ARGUMENT
    assert code(htp.qi.memRegister(ctx, None, 1, q.Qnn_MemHandle_t())) == q.QNN_MEM_ERROR_INVALID_ARGUMENT
    assert code(htp.qi.memRegister(ctx, desc, 0, q.Qnn_MemHandle_t())) == q.QNN_MEM_ERROR_INVALID_ARGUMENT
    assert code(htp.qi.memRegister(0xABC, desc, 1, q.Qnn_MemHandle_t())) == q.QNN_MEM_ERROR_INVALID_HANDLE
    assert code(htp.qi.memRegister(ctx, desc, 2, (q.Qnn_MemHandle_t * 2)())) == q.QNN_MEM_ERROR_INVALID_ARGUMENT
    assert REGISTRY.count() == 0


def test_onnx_as_context_binary_and_bad_binaries(htp):
    """The loader also takes ONNX (compiled on the fly, fp16); corrupt .npurt bytes are CREATE_FROM_BINARY."""
    from helpers.qnn import onnx_model
    x, ref = sample(SMALL)
    ctx = q.Qnn_ContextHandle_t()
    data = onnx_model(SMALL).SerializeToString()
    ok(htp.qi.contextCreateFromBinary(htp.backend, None, None, data, len(data), ctx, None))
    c = lookup(ctx, QnnContext)
    assert c.compiled.soc == c.backend.profile.name == "sm8350"        # compiled for the backend's own HTP SoC
    ins, outs, yout = raw_tensors(c.compiled, x)
    g = q.Qnn_GraphHandle_t()
    ok(htp.qi.graphRetrieve(ctx, c.compiled.graph.name, g))
    ok(htp.qi.graphExecute(g, ins, 1, outs, 1, None, None))
    assert np.abs(q.tensor_specs(c.compiled)[1][0].unpack(yout) - ref).max() < 2e-3
    blob = bytearray(binary().to_bytes())
    blob[-10] ^= 0xFF                                         # checksum mismatch
    other = q.Qnn_ContextHandle_t()
    assert code(htp.qi.contextCreateFromBinary(htp.backend, None, None, blob, len(blob), other, None)) == \
        q.QNN_CONTEXT_ERROR_CREATE_FROM_BINARY
    assert code(htp.qi.contextCreateFromBinary(htp.backend, None, None, bytes(blob), len(blob) + 5, other,
                                               None)) == q.QNN_CONTEXT_ERROR_INVALID_ARGUMENT
    assert other.value is None


def test_onnx_binary_is_compiled_for_the_backends_soc():
    """ONNX given to an sm8550 backend becomes an sm8550 binary (runs there; another HTP SoC refuses it)."""
    from helpers.qnn import Htp, onnx_model
    x, ref = sample(SMALL)
    data = onnx_model(SMALL).SerializeToString()
    h8550 = Htp(soc="sm8550")
    try:
        ctx = q.Qnn_ContextHandle_t()
        ok(h8550.qi.contextCreateFromBinary(h8550.backend, None, None, data, len(data), ctx, None))
        c = lookup(ctx, QnnContext)
        assert c.compiled.soc == "sm8550" and c.htp.vtcm_used <= 8 << 20
        ins, outs, yout = raw_tensors(c.compiled, x)
        g = q.Qnn_GraphHandle_t()
        ok(h8550.qi.graphRetrieve(ctx, c.compiled.graph.name, g))
        ok(h8550.qi.graphExecute(g, ins, 1, outs, 1, None, None))
        assert np.abs(q.tensor_specs(c.compiled)[1][0].unpack(yout) - ref).max() < 2e-3
        blob = c.compiled.to_bytes()
        ok(h8550.qi.contextFree(ctx, None))
    finally:
        h8550.close()
    h8350 = Htp()
    try:
        other = q.Qnn_ContextHandle_t()
        assert code(h8350.qi.contextCreateFromBinary(h8350.backend, None, None, blob, len(blob), other, None)) == \
            q.QNN_CONTEXT_ERROR_BINARY_CONFIGURATION
    finally:
        h8350.close()


def test_arguments_of_the_wrong_type_give_invalid_argument(htp):
    ctx, graph, ins, outs, _, _ = ion_case(htp)
    before = state()
    assert code(htp.qi.memRegister(ctx, "descriptor", 1, q.Qnn_MemHandle_t())) == q.QNN_MEM_ERROR_INVALID_ARGUMENT
    assert code(htp.qi.memDeRegister("handles", 1)) == q.QNN_MEM_ERROR_INVALID_ARGUMENT
    assert code(htp.qi.graphExecute(graph, ["x"], 1, outs, 1, None, None)) == q.QNN_GRAPH_ERROR_INVALID_TENSOR
    assert code(htp.qi.graphExecute(graph, ins, None, outs, 1, None, None)) == q.QNN_GRAPH_ERROR_INVALID_ARGUMENT
    assert code(htp.qi.contextGetProperty(ctx, [42, None])) == q.QNN_CONTEXT_ERROR_INVALID_ARGUMENT
    assert code(htp.qi.contextCreateFromBinary(htp.backend, None, [7, None], binary(), 0, q.Qnn_ContextHandle_t(),
                                               None)) == q.QNN_CONTEXT_ERROR_INVALID_CONFIG
    assert state() == before


def test_threads_execute_while_a_context_is_freed(htp):
    """Several threads execute graphs of two contexts (queued on the one HTP) while one context is freed: every
    call returns success or INVALID_CONTEXT, outputs of successful runs are right, nothing leaks."""
    x, ref = sample(SMALL)
    ctxs = [htp.context(binary(SMALL)) for _ in range(2)]
    graphs = [htp.graph(c) for c in ctxs]
    spec = q.tensor_specs(binary(SMALL))[1][0]
    results: list[tuple[int, bool]] = []
    lock = threading.Lock()

    def worker(k):
        for _ in range(6):
            ins, outs, yout = raw_tensors(binary(SMALL), x)
            c = code(htp.qi.graphExecute(graphs[k % 2], ins, 1, outs, 1, None, None))
            with lock:
                results.append((c, c == 0 and np.abs(spec.unpack(yout) - ref).max() < 1e-4))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    ok(htp.qi.contextFree(ctxs[0], None))
    for t in threads:
        t.join()
    assert {c for c, _ in results} <= {0, q.QNN_GRAPH_ERROR_INVALID_CONTEXT}
    assert all(good for c, good in results if c == 0)
    assert sum(c == 0 for c, _ in results) >= 12              # the other context's graph always ran


def test_native_cannot_register_the_vtcm_or_qnn_internal_memory(native):
    ctx = native.context(binary(SPILL), defer_config())
    size = deferred_sizes(native, ctx)[q.QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE]
    plain = native.context(binary(SPILL))                      # finalized: takes the VTCM, owns internal buffers
    core = core_of(native.qi.soc)
    internal = [b for b in core.device.buffers() if b.owner.startswith("qnn-") and b.size >= size]
    before = state()
    assert one_handle(native.qi, ctx, custom_descriptor(SF, size, qurt=core.vtcm.dev_addr))[0] == \
        q.QNN_MEM_ERROR_MAPPING
    for buf in internal:
        assert one_handle(native.qi, ctx, custom_descriptor(SF, size, qurt=buf.dev_addr))[0] == \
            q.QNN_MEM_ERROR_MAPPING
    assert state() == before
    del plain
