"""The vendor's matmul demo flow through the mirror, for every type, SoC and layout; dynamic shapes; quantisation;
zero copy and coherence.

Flow (rknn_matmul_api_demo): create -> io attrs -> rknn_create_mem A, B, C -> fill A and B (B through
rknn_B_normal_layout_to_native_layout for NATIVE) -> set_io_mem -> run -> read C -> destroy.
"""
from __future__ import annotations

import contextlib
import ctypes

import numpy as np
import pytest

from npurt.memory.device import open_device
from npurt.rknn import constants as c
from npurt.rknn import handles
from npurt.rknn import matmul_math as mm
from npurt.rknn.matmul import (rknn_B_normal_layout_to_native_layout, rknn_matmul_create,
                               rknn_matmul_create_dynamic_shape, rknn_matmul_destroy, rknn_matmul_get_quant_params,
                               rknn_matmul_run, rknn_matmul_set_core_mask, rknn_matmul_set_dynamic_shape,
                               rknn_matmul_set_io_mem, rknn_matmul_set_quant_params)
from npurt.rknn.structs import (rknn_matmul_ctx, rknn_matmul_info, rknn_matmul_io_attr, rknn_matmul_shape,
                                rknn_quant_params)
from npurt.tensor.dtypes import DType
from helpers.matmul import (native_b_reference, operands, quant_params, read, reference, rknn_create_mem,
                                      rknn_destroy_mem, stored, stored_a, tolerance, write)

NORM, NATIVE, TP = c.RKNN_MM_LAYOUT_NORM, c.RKNN_MM_LAYOUT_NATIVE, c.RKNN_MM_LAYOUT_TP_NORM


pytestmark = pytest.mark.usefixtures("no_leaks")   # every fd, device buffer, byte and handle given back


def _cases():
    for soc in ("rk3588", "rk3576", "rk3562", "rk3566"):
        for t in sorted(mm.SOC_TYPES[soc]):
            for b_layout in (NORM, NATIVE, TP):
                if b_layout == TP and soc == "rk3566":
                    continue
                for ac_layout in (NORM, NATIVE):
                    yield pytest.param(soc, t, b_layout, ac_layout,
                                       id=f"{soc}-{mm.MATMUL_TYPES[t].name[5:]}-B{b_layout}-AC{ac_layout}")


def _write_b(B, b, spec, b_layout, info, K, N):
    if b_layout == NORM:
        write(B, stored(b, spec.b))
    elif b_layout == TP:
        write(B, stored(np.ascontiguousarray(b.T), spec.b))
    else:
        assert rknn_B_normal_layout_to_native_layout(stored(b, spec.b), B.virt_addr, K, N, info) == 0


def _read_c(C, io, spec, tiles, M, N, ac_layout):
    out = read(C, io.C.size, spec.c.numpy_dtype)
    if ac_layout == NATIVE:
        return mm.c_perf_to_normal(out, M, N, tiles.c_n)
    return out.reshape(M, N)


@pytest.mark.parametrize("soc,mtype,b_layout,ac_layout", list(_cases()))
def test_demo_flow_every_type_and_layout(monkeypatch, soc, mtype, b_layout, ac_layout):
    monkeypatch.setenv("NPURT_SOC", soc)
    spec = mm.MATMUL_TYPES[mtype]
    tiles = mm.tiles_for(soc, spec)
    M, K, N = 5, 2 * tiles.b_k, 2 * tiles.b_n
    rng = np.random.default_rng(mtype * 100 + b_layout * 10 + ac_layout)
    a, b = operands(spec, M, K, N, rng)

    info = rknn_matmul_info(M=M, K=K, N=N, type=mtype, B_layout=b_layout, AC_layout=ac_layout)
    int_b_float_c = not spec.b.is_float and spec.c.is_float
    if int_b_float_c:
        info.B_quant_type = c.RKNN_QUANT_TYPE_PER_CHANNEL_SYM
    ctx, io = rknn_matmul_ctx(), rknn_matmul_io_attr()
    assert rknn_matmul_create(ctx, info, io) == 0
    try:
        assert (io.A.name, io.B.name, io.C.name) == (b"A", b"B", b"C")
        assert io.A.type == mm.RKNN_TYPE[spec.a] and io.B.type == mm.RKNN_TYPE[spec.b]
        assert io.C.type == mm.RKNN_TYPE[spec.c]
        assert io.A.size == spec.a.nbytes(M * K) and io.B.size == spec.b.nbytes(K * N)
        assert io.C.size == spec.c.nbytes(M * N)
        if b_layout == NATIVE:
            assert list(io.B.dims[:4]) == [N // tiles.b_n, K // tiles.b_k, tiles.b_n, tiles.b_k]
        if ac_layout == NATIVE:
            assert list(io.A.dims[:3]) == [K // tiles.a_k, M, tiles.a_k]
            assert list(io.C.dims[:3]) == [N // tiles.c_n, M, tiles.c_n]

        sa, sb, sc, keep = 1.0, 1.0, 1.0, []
        if spec.c is DType.INT8:                                   # RKNN_INT8_MM_INT8_TO_INT8, as the demo does
            sa, sb, sc = 0.2, 0.1, 8.0
        if int_b_float_c:
            sb = rng.uniform(0.01, 0.1, N).astype(np.float32)
            if not spec.a.is_float:
                sa = 0.05
        for name, value in (("A", sa), ("B", sb), ("C", sc)):
            dt = {"A": spec.a, "B": spec.b, "C": spec.c}[name]
            if not dt.is_float:
                p, k = quant_params(name, value)
                keep.append(k)
                assert rknn_matmul_set_quant_params(ctx, p) == 0

        A = rknn_create_mem(ctx, io.A.size)
        B = rknn_create_mem(ctx, io.B.size)
        C = rknn_create_mem(ctx, io.C.size)
        write(A, stored_a(a, spec, tiles, ac_layout))
        _write_b(B, b, spec, b_layout, info, K, N)
        for name, mem in (("A", A), ("B", B), ("C", C)):
            assert rknn_matmul_set_io_mem(ctx, mem, getattr(io, name)) == 0
        assert rknn_matmul_run(ctx) == 0
        got = _read_c(C, io, spec, tiles, M, N, ac_layout)
        ref = reference(a, b, spec, sa=sa, sb=sb, sc=sc)
        np.testing.assert_allclose(got.astype(np.float64), ref, rtol=0, atol=tolerance(spec, ref, K))
        for mem in (A, B, C):
            assert rknn_destroy_mem(ctx, mem) == 0
    finally:
        assert rknn_matmul_destroy(ctx) == 0


def _context(monkeypatch, soc, **fields):
    monkeypatch.setenv("NPURT_SOC", soc)
    info = rknn_matmul_info(**fields)
    ctx, io = rknn_matmul_ctx(), rknn_matmul_io_attr()
    assert rknn_matmul_create(ctx, info, io) == 0
    return ctx, info, io


@contextlib.contextmanager
def _matmul(monkeypatch, soc, **fields):
    """`with _matmul(...) as (ctx, info, io):` a created context, destroyed (rknn_matmul_destroy == 0) at the end."""
    ctx, info, io = _context(monkeypatch, soc, **fields)
    try:
        yield ctx, info, io
    finally:
        assert rknn_matmul_destroy(ctx) == 0


def _bind(ctx, io, a_bytes, b_bytes):
    mems = [rknn_create_mem(ctx, io.A.size), rknn_create_mem(ctx, io.B.size), rknn_create_mem(ctx, io.C.size)]
    write(mems[0], a_bytes)
    write(mems[1], b_bytes)
    for name, mem in zip("ABC", mems):
        assert rknn_matmul_set_io_mem(ctx, mem, getattr(io, name)) == 0
    return mems


@pytest.mark.parametrize("soc,mtype,asym", [
    ("rk3588", c.RKNN_INT8_MM_INT8_TO_FLOAT32, False),
    ("rk3588", c.RKNN_INT8_MM_INT8_TO_FLOAT32, True),
    ("rk3576", c.RKNN_FLOAT16_MM_INT4_TO_FLOAT16, False),
    ("rk3576", c.RKNN_FLOAT16_MM_INT4_TO_BFLOAT16, True),
    ("rk3576", c.RKNN_INT8_MM_INT4_TO_FLOAT16, True),
])
def test_per_group_quantisation(monkeypatch, soc, mtype, asym):
    spec = mm.MATMUL_TYPES[mtype]
    tiles = mm.tiles_for(soc, spec)
    M, K, N, G = 3, 128, tiles.b_n, 32
    qtype = c.RKNN_QUANT_TYPE_PER_GROUP_ASYM if asym else c.RKNN_QUANT_TYPE_PER_GROUP_SYM
    with _matmul(monkeypatch, soc, M=M, K=K, N=N, type=mtype, B_quant_type=qtype, group_size=G) as (ctx, info, io):
        rng = np.random.default_rng(7)
        a, b = operands(spec, M, K, N, rng)
        sb = rng.uniform(0.001, 0.01, (K // G) * N).astype(np.float32)
        zb = rng.integers(-3, 4, sb.size) if asym else None
        p, keep = quant_params("B", sb, zb)
        assert rknn_matmul_set_quant_params(ctx, p) == 0
        sa = 1.0
        if not spec.a.is_float:
            sa = 0.03
            pa, keep_a = quant_params("A", sa)
            assert rknn_matmul_set_quant_params(ctx, pa) == 0
        mems = _bind(ctx, io, stored(a, spec.a), stored(b, spec.b))
        assert rknn_matmul_run(ctx) == 0
        got = read(mems[2], io.C.size, spec.c.numpy_dtype).reshape(M, N).astype(np.float64)
        ref = reference(a, b, spec, sa=sa, sb=sb, zb=0 if zb is None else zb, group=G)
        np.testing.assert_allclose(got, ref, rtol=0, atol=tolerance(spec, ref, K))


def test_int8_to_int8_per_channel_with_zero_points(monkeypatch):
    M, K, N = 4, 64, 64
    with _matmul(monkeypatch, "rk3588", M=M, K=K, N=N, type=c.RKNN_INT8_MM_INT8_TO_INT8,
                 B_quant_type=c.RKNN_QUANT_TYPE_PER_CHANNEL_SYM) as (ctx, info, io):
        rng = np.random.default_rng(3)
        a, b = operands(mm.MATMUL_TYPES[c.RKNN_INT8_MM_INT8_TO_INT8], M, K, N, rng)
        sb = rng.uniform(0.05, 0.2, N).astype(np.float32)
        keep = []
        for name, s, z in (("A", 0.1, 3), ("B", sb, np.zeros(N, int)), ("C", 20.0, -5)):
            p, k = quant_params(name, s, z)
            keep.append(k)
            assert rknn_matmul_set_quant_params(ctx, p) == 0
        mems = _bind(ctx, io, a, b)
        assert rknn_matmul_run(ctx) == 0
        got = read(mems[2], io.C.size, np.int8).reshape(M, N)
        acc = (a.astype(np.float64) - 3) @ b.astype(np.float64)
        real = acc * float(np.float32(0.1)) * sb.astype(np.float64) / 20.0
        np.testing.assert_array_equal(got, np.clip(np.rint(real) - 5, -128, 127))


def test_int32_per_channel_normalised_scale_and_get_quant_params(monkeypatch):
    M, K, N = 2, 32, 32
    with _matmul(monkeypatch, "rk3588", M=M, K=K, N=N, type=c.RKNN_INT8_MM_INT8_TO_INT32,
                 B_quant_type=c.RKNN_QUANT_TYPE_PER_CHANNEL_SYM) as (ctx, info, io):
        rng = np.random.default_rng(5)
        a, b = operands(mm.MATMUL_TYPES[c.RKNN_INT8_MM_INT8_TO_INT32], M, K, N, rng)
        sb = rng.uniform(0.01, 0.04, N).astype(np.float32)
        p, keep = quant_params("B", sb, np.zeros(N, int))
        assert rknn_matmul_set_quant_params(ctx, p) == 0
        out, b_scale = rknn_quant_params(), ctypes.c_float()
        assert rknn_matmul_get_quant_params(ctx, out, ctypes.byref(b_scale)) == 0
        assert b_scale.value == pytest.approx(float(sb.max()))
        assert out.name == b"B" and out.scale_len == N and out.zp_len == N
        np.testing.assert_array_equal(np.ctypeslib.as_array(out.scale, (N,)), sb)
        again = rknn_quant_params()                  # repeated calls hand out the same arrays: memory stays flat
        for _ in range(100):
            assert rknn_matmul_get_quant_params(ctx, again, ctypes.byref(b_scale)) == 0
        assert ctypes.addressof(again.scale.contents) == ctypes.addressof(out.scale.contents)
        assert len(handles.contexts.get(ctx, "matmul")._exported) == 1
        mems = _bind(ctx, io, a, b)
        assert rknn_matmul_run(ctx) == 0
        got = read(mems[2], io.C.size, np.int32).reshape(M, N)
        acc = a.astype(np.float64) @ b.astype(np.float64)
        np.testing.assert_array_equal(got, np.rint(acc * sb / sb.max()))
        # C's real value is approximately acc_real = sA * b_scale * C (the documented use of the scale)
        np.testing.assert_allclose(got * b_scale.value, acc * sb, rtol=0, atol=b_scale.value)


def test_k_segmented_native_b_on_rk3576(monkeypatch):
    """K > 4096 on RK3576: B native is split into ceil(K/4096) segments, each laid out on its own."""
    M, K, N = 2, 4096 + 64, 32
    mtype = c.RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32
    spec = mm.MATMUL_TYPES[mtype]
    with _matmul(monkeypatch, "rk3576", M=M, K=K, N=N, type=mtype, B_layout=NATIVE) as (ctx, info, io):
        rng = np.random.default_rng(11)
        a, b = operands(spec, M, K, N, rng)
        native = np.empty(K * N, np.float16)
        assert rknn_B_normal_layout_to_native_layout(b, native, K, N, info) == 0
        np.testing.assert_array_equal(native, native_b_reference(b, 16, 32, seg=4096))
        assert not np.array_equal(native, native_b_reference(b, 16, 32))     # the segmentation matters
        mems = _bind(ctx, io, a, native)
        assert rknn_matmul_run(ctx) == 0
        got = read(mems[2], io.C.size, np.float32).reshape(M, N)
        ref = reference(a, b, spec)
        np.testing.assert_allclose(got, ref, rtol=0, atol=tolerance(spec, ref, K))


def test_dynamic_shape_flow(monkeypatch):
    """The dynamic-shape demo: memory for the largest shape, then per shape set_dynamic_shape, set_io_mem, run."""
    monkeypatch.setenv("NPURT_SOC", "rk3588")
    mtype = c.RKNN_INT8_MM_INT8_TO_INT32
    spec = mm.MATMUL_TYPES[mtype]
    K, N, Ms = 64, 32, (1, 4, 8)
    shapes = (rknn_matmul_shape * 3)(*[rknn_matmul_shape(M, K, N) for M in Ms])
    ios = (rknn_matmul_io_attr * 3)()
    info = rknn_matmul_info(type=mtype, B_layout=NATIVE)
    ctx = rknn_matmul_ctx()
    assert rknn_matmul_create_dynamic_shape(ctx, info, 3, shapes, ios) == 0
    try:
        assert [ios[i].A.dims[0] for i in range(3)] == list(Ms)
        A = rknn_create_mem(ctx, max(io.A.size for io in ios))
        B = rknn_create_mem(ctx, max(io.B.size for io in ios))
        C = rknn_create_mem(ctx, max(io.C.size for io in ios))
        assert rknn_matmul_run(ctx) == c.RKNN_ERR_PARAM_INVALID          # no shape chosen yet
        rng = np.random.default_rng(2)
        _, b = operands(spec, 1, K, N, rng)
        native = np.empty(K * N, np.int8)
        assert rknn_B_normal_layout_to_native_layout(b, native, K, N, info) == 0
        write(B, native)
        for i, M in enumerate(Ms):
            a, _ = operands(spec, M, K, N, rng)
            assert rknn_matmul_set_dynamic_shape(ctx, ctypes.byref(shapes[i])) == 0
            write(A, a)
            for name, mem in (("A", A), ("B", B), ("C", C)):
                assert rknn_matmul_set_io_mem(ctx, mem, getattr(ios[i], name)) == 0
            assert rknn_matmul_run(ctx) == 0
            got = read(C, ios[i].C.size, np.int32).reshape(M, N)
            np.testing.assert_array_equal(got, a.astype(np.int64) @ b.astype(np.int64))
        assert rknn_matmul_set_dynamic_shape(ctx, rknn_matmul_shape(2, K, N)) == c.RKNN_ERR_PARAM_INVALID
        for mem in (A, B, C):
            assert rknn_destroy_mem(ctx, mem) == 0
    finally:
        assert rknn_matmul_destroy(ctx) == 0


def test_zero_copy_reads_and_writes_the_bound_memory(monkeypatch):
    """C is written in place at mem->virt_addr; no device buffer is created by the run; data written after
    set_io_mem is what the next run uses."""
    M, K, N = 3, 32, 32
    spec = mm.MATMUL_TYPES[c.RKNN_INT8_MM_INT8_TO_INT32]
    with _matmul(monkeypatch, "rk3588", M=M, K=K, N=N, type=spec.value) as (ctx, info, io):  # destroy frees A, B, C
        rng = np.random.default_rng(1)
        a, b = operands(spec, M, K, N, rng)
        A, B, C = _bind(ctx, io, a, b)
        device = handles.contexts.get(ctx).device
        view = device.view_at(C.virt_addr, io.C.size, np.int32, (M, N))     # a live view of C's memory
        buffers = len(device.buffers())
        assert rknn_matmul_run(ctx) == 0
        assert len(device.buffers()) == buffers
        np.testing.assert_array_equal(view, a.astype(np.int64) @ b.astype(np.int64))
        write(A, -a)                                                         # no set_io_mem again
        assert rknn_matmul_run(ctx) == 0
        np.testing.assert_array_equal(view, (-a).astype(np.int64) @ b.astype(np.int64))


def test_strict_coherence_runtime_memory_is_flushed_and_invalidated(monkeypatch):
    """With split CPU/device views, the run flushes runtime-allocated A/B and invalidates C, like rknn_run."""
    device = open_device("rk3562", coherence="strict")
    try:
        M, K, N = 2, 32, 16
        spec = mm.MATMUL_TYPES[c.RKNN_INT8_MM_INT8_TO_INT32]
        with _matmul(monkeypatch, "rk3562", M=M, K=K, N=N, type=spec.value) as (ctx, info, io):
            rng = np.random.default_rng(4)
            a, b = operands(spec, M, K, N, rng)
            A, B, C = _bind(ctx, io, a, b)
            assert rknn_matmul_run(ctx) == 0
            np.testing.assert_array_equal(read(C, io.C.size, np.int32).reshape(M, N),
                                          a.astype(np.int64) @ b.astype(np.int64))
    finally:
        device.close()


def test_core_mask_on_rk3588(monkeypatch, capfd):
    with _matmul(monkeypatch, "rk3588", M=1, K=32, N=32, type=c.RKNN_INT8_MM_INT8_TO_INT32) as (ctx, info, io):
        obj = handles.contexts.get(ctx)
        for mask in (c.RKNN_NPU_CORE_0, c.RKNN_NPU_CORE_1, c.RKNN_NPU_CORE_2, c.RKNN_NPU_CORE_AUTO):
            assert rknn_matmul_set_core_mask(ctx, mask) == 0
            assert obj.core_mask == mask
        assert rknn_matmul_set_core_mask(ctx, c.RKNN_NPU_CORE_1) == 0
        capfd.readouterr()
        assert rknn_matmul_set_core_mask(ctx, c.RKNN_NPU_CORE_0_1) == c.RKNN_ERR_FAIL
        err = capfd.readouterr().err
        assert "E RKNN:" in err and "Not support core mask: 3, fallback to single core auto mode" in err
        assert "failed to set core mask: 3" in err
        assert obj.core_mask == c.RKNN_NPU_CORE_AUTO                          # fell back
        for mask in (c.RKNN_NPU_CORE_0_1_2, c.RKNN_NPU_CORE_ALL, 5):
            assert rknn_matmul_set_core_mask(ctx, mask) == c.RKNN_ERR_FAIL
        for mask in (8, c.RKNN_NPU_CORE_UNDEFINED):
            assert rknn_matmul_set_core_mask(ctx, mask) == c.RKNN_ERR_PARAM_INVALID


def test_core_mask_rk3576_has_two_cores(monkeypatch):
    with _matmul(monkeypatch, "rk3576", M=1, K=32, N=32, type=c.RKNN_INT8_MM_INT8_TO_INT32) as (ctx, info, io):
        assert rknn_matmul_set_core_mask(ctx, c.RKNN_NPU_CORE_1) == 0
        assert rknn_matmul_set_core_mask(ctx, c.RKNN_NPU_CORE_2) == c.RKNN_ERR_PARAM_INVALID
        assert rknn_matmul_set_core_mask(ctx, c.RKNN_NPU_CORE_0_1) == c.RKNN_ERR_FAIL


def test_imported_memory_with_offsets(monkeypatch):
    """All three operands in one user DMA buffer (rknn_create_mem_from_fd at offsets): the run reads and writes
    at mem->virt_addr + mem->offset; imported memory is the user's to sync (coherent device here)."""
    from npurt.memory import dma_alloc
    from npurt.rknn.api import rknn_create_mem_from_fd
    M, K, N = 4, 64, 32
    spec = mm.MATMUL_TYPES[c.RKNN_INT8_MM_INT8_TO_INT32]
    ctx, info, io = _context(monkeypatch, "rk3588", M=M, K=K, N=N, type=spec.value)
    device = handles.contexts.get(ctx).device
    dma = dma_alloc(3 * 4096, device=device)
    try:
        rng = np.random.default_rng(9)
        a, b = operands(spec, M, K, N, rng)
        offsets = {"A": 0, "B": 4096, "C": 8192 + 64}
        mems = {n: rknn_create_mem_from_fd(ctx, dma.fd, dma.virt_addr, getattr(io, n).size, off)
                for n, off in offsets.items()}
        dma.view()[offsets["A"]:offsets["A"] + a.nbytes] = a.view(np.uint8).reshape(-1)
        dma.view()[offsets["B"]:offsets["B"] + b.nbytes] = b.view(np.uint8).reshape(-1)
        for n, mem in mems.items():
            assert mem.offset == offsets[n]
            assert rknn_matmul_set_io_mem(ctx, mem, getattr(io, n)) == 0
        assert rknn_matmul_run(ctx) == 0
        got = dma.view(np.int32, offset=offsets["C"])[: M * N].reshape(M, N)
        np.testing.assert_array_equal(got, a.astype(np.int64) @ b.astype(np.int64))
        for mem in mems.values():
            assert rknn_destroy_mem(ctx, mem) == 0
    finally:
        assert rknn_matmul_destroy(ctx) == 0
        dma.close()


def test_dynamic_shapes_may_differ_in_k_and_n(monkeypatch):
    monkeypatch.setenv("NPURT_SOC", "rk3576")
    mtype = c.RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32
    spec = mm.MATMUL_TYPES[mtype]
    dims = [(2, 32, 16), (3, 64, 32)]
    shapes = (rknn_matmul_shape * 2)(*[rknn_matmul_shape(*d) for d in dims])
    ios = (rknn_matmul_io_attr * 2)()
    ctx = rknn_matmul_ctx()
    assert rknn_matmul_create_dynamic_shape(ctx, ctypes.byref(rknn_matmul_info(type=mtype)), 2, shapes, ios) == 0
    try:
        mems = [rknn_create_mem(ctx, max(getattr(io, n).size for io in ios)) for n in "ABC"]
        rng = np.random.default_rng(6)
        for i, (M, K, N) in enumerate(dims):
            assert rknn_matmul_set_dynamic_shape(ctx, shapes[i]) == 0
            a, b = operands(spec, M, K, N, rng)
            write(mems[0], a)
            write(mems[1], b)
            for name, mem in zip("ABC", mems):
                assert rknn_matmul_set_io_mem(ctx, mem, getattr(ios[i], name)) == 0
            assert rknn_matmul_run(ctx) == 0
            got = read(mems[2], ios[i].C.size, np.float32).reshape(M, N)
            np.testing.assert_allclose(got, reference(a, b, spec), atol=1e-4)
        for mem in mems:
            assert rknn_destroy_mem(ctx, mem) == 0
    finally:
        assert rknn_matmul_destroy(ctx) == 0


def test_pointer_and_byref_arguments(monkeypatch):
    """C passes &ctx, &info, &io_attr: ctypes.byref / pointer work as well as the structs themselves."""
    monkeypatch.setenv("NPURT_SOC", "rk3588")
    ctx, info, io = rknn_matmul_ctx(), rknn_matmul_info(M=1, K=32, N=32, type=c.RKNN_INT8_MM_INT8_TO_INT32), \
        rknn_matmul_io_attr()
    assert rknn_matmul_create(ctypes.byref(ctx), ctypes.pointer(info), ctypes.byref(io)) == 0
    try:
        assert ctx.value and io.C.size == 32 * 4
        assert rknn_matmul_set_core_mask(ctx.value, c.RKNN_NPU_CORE_0) == 0          # a plain int handle too
    finally:
        assert rknn_matmul_destroy(ctx) == 0


def test_threads_running_contexts_concurrently(monkeypatch):
    """Several threads run their own contexts and one shared context; every result stays exact."""
    import threading
    M, K, N = 4, 64, 32
    spec = mm.MATMUL_TYPES[c.RKNN_INT8_MM_INT8_TO_INT32]
    monkeypatch.setenv("NPURT_SOC", "rk3588")
    rng = np.random.default_rng(12)
    a, b = operands(spec, M, K, N, rng)
    want = a.astype(np.int64) @ b.astype(np.int64)
    contexts = []
    for _ in range(3):
        ctx, info, io = _context(monkeypatch, "rk3588", M=M, K=K, N=N, type=spec.value)
        contexts.append((ctx, io, _bind(ctx, io, a, b)))
    errors = []

    def worker(ctx, io, mems):
        for _ in range(20):
            if rknn_matmul_run(ctx) != 0:
                errors.append("run failed")
            elif not np.array_equal(read(mems[2], io.C.size, np.int32).reshape(M, N), want):
                errors.append("wrong result")

    threads = [threading.Thread(target=worker, args=contexts[i % 3]) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for ctx, _, _ in contexts:
        assert rknn_matmul_destroy(ctx) == 0
    assert not errors


def test_check_mode_reports_a_missed_sync_of_imported_memory(monkeypatch, capfd):
    from npurt.memory import dma_alloc
    from npurt.rknn.api import rknn_create_mem_from_fd, rknn_mem_sync
    monkeypatch.setenv("RKNN_LOG_LEVEL", "2")
    device = open_device("rk3568", coherence="check")
    dma = dma_alloc(4096, device=device)
    try:
        M, K, N = 2, 32, 16
        spec = mm.MATMUL_TYPES[c.RKNN_INT8_MM_INT8_TO_INT32]
        with _matmul(monkeypatch, "rk3568", M=M, K=K, N=N, type=spec.value) as (ctx, info, io):
            a, b = operands(spec, M, K, N, np.random.default_rng(8))
            A = rknn_create_mem_from_fd(ctx, dma.fd, dma.virt_addr, io.A.size, 0)
            B, C = rknn_create_mem(ctx, io.B.size), rknn_create_mem(ctx, io.C.size)
            write(B, b)
            for name, mem in (("A", A), ("B", B), ("C", C)):
                assert rknn_matmul_set_io_mem(ctx, mem, getattr(io, name)) == 0
            write(A, a)                                              # imported, cacheable, no sync
            capfd.readouterr()
            assert rknn_matmul_run(ctx) == 0
            assert "coherence: matmul A memory" in capfd.readouterr().err
            assert len(handles.contexts.get(ctx).coherence_violations) == 1
            assert rknn_mem_sync(ctx, A, c.RKNN_MEMORY_SYNC_TO_DEVICE) == 0
            assert rknn_matmul_run(ctx) == 0
            assert "coherence" not in capfd.readouterr().err             # B is runtime memory: flushed by the run
            np.testing.assert_array_equal(read(C, io.C.size, np.int32).reshape(M, N),
                                          a.astype(np.int64) @ b.astype(np.int64))
    finally:
        dma.close()
        device.close()
