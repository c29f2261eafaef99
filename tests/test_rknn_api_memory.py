"""RKNN mirror, tensor memory: rknn_create_mem / _mem2 (cacheable, non-cacheable, TRY_ALLOC_SRAM, ALLOC_NO_CONTEXT) /
_from_fd / _from_phys / _from_mb_blk, rknn_destroy_mem (ownership, double destroy, stale and forged structs),
rknn_set_weight_mem / _internal_mem / _io_mem rules and size checks, rknn_mem_sync, mem_view."""
from __future__ import annotations

import ctypes
import mmap
import os

import numpy as np
import pytest

from npurt.memory import dma_alloc
from npurt.rknn import *  # noqa: F403
from npurt.rknn.api import context_of
from helpers.rknn import errline, init, query, state
from helpers.models import convnet, image, npurt_bytes, reference


pytestmark = pytest.mark.usefixtures("no_leaks")   # every fd, device buffer, byte and handle given back


@pytest.fixture
def ctx():
    c = init()
    yield c
    rknn_destroy(c)


def _float32_io_attrs(c):
    """(native input attr taken as FLOAT32 rows of w_stride 10, output attr taken as FLOAT32) for zero copy."""
    ia = rknn_tensor_attr(index=0)
    query(c, RKNN_QUERY_NATIVE_INPUT_ATTR, ia)
    ia.type, ia.w_stride = RKNN_TENSOR_FLOAT32, 10
    oa = rknn_tensor_attr(index=0)
    query(c, RKNN_QUERY_OUTPUT_ATTR, oa)
    oa.type = RKNN_TENSOR_FLOAT32
    return ia, oa


# --- create / destroy -------------------------------------------------------------------------------------------------
def test_create_mem_is_real_memory(ctx):
    mem = rknn_create_mem(ctx, 10000)
    assert isinstance(mem, rknn_tensor_mem) and mem.size == 10000 and mem.offset == 0
    assert mem.flags == RKNN_TENSOR_MEMORY_FLAGS_ALLOC_INSIDE and mem.phys_addr and mem.virt_addr
    assert os.fstat(mem.fd).st_size >= 10000                                  # a real fd
    view = mem_view(mem)
    view[:] = 7
    assert ctypes.string_at(mem.virt_addr, 4) == b"\x07" * 4                # the C pointer is the same memory
    with open(f"/proc/self/fd/{mem.fd}", "rb") as f:
        assert f.read(3) == b"\x07" * 3
    assert context_of(ctx).device.lookup_device(mem.phys_addr)[0].cacheable
    assert rknn_destroy_mem(ctx, mem) == RKNN_SUCC


@pytest.mark.parametrize("size", [0, -1, 1 << 33, "12"])
def test_create_mem_invalid_size(ctx, capsys, size):
    before = state()
    assert rknn_create_mem(ctx, size) is None
    errline(capsys, "rknn_create_mem", "invalid size")
    assert state() == before


def test_create_mem2_flags(ctx):
    dev = context_of(ctx).device
    m = rknn_create_mem2(ctx, 5000, RKNN_FLAG_MEMORY_NON_CACHEABLE)
    assert not dev.lookup_device(m.phys_addr)[0].cacheable
    c = rknn_create_mem2(ctx, 5000, RKNN_FLAG_MEMORY_FLAGS_DEFAULT)
    assert dev.lookup_device(c.phys_addr)[0].cacheable
    free = dev.stats().sram_free
    s = rknn_create_mem2(ctx, 3 * 4096, RKNN_FLAG_MEMORY_TRY_ALLOC_SRAM)
    buf = dev.lookup_device(s.phys_addr)[0]
    assert buf.placement == "sram" and dev.stats().sram_free == free - 3 * 4096
    for mem in (m, c, s):
        assert rknn_destroy_mem(ctx, mem) == RKNN_SUCC
    assert dev.stats().sram_free == free


def test_try_alloc_sram_spills_to_ddr(ctx):
    dev = context_of(ctx).device
    hog = rknn_create_mem2(ctx, dev.stats().sram_free - 2 * 4096, RKNN_FLAG_MEMORY_TRY_ALLOC_SRAM)
    s = rknn_create_mem2(ctx, 5 * 4096, RKNN_FLAG_MEMORY_TRY_ALLOC_SRAM)
    buf = dev.lookup_device(s.phys_addr)[0]
    assert buf.placement == "sram+ddr" and buf.sram_size == 2 * 4096
    v = mem_view(s)
    v[:] = np.arange(v.size) % 251                                           # one contiguous view over both
    assert (mem_view(s) == np.arange(v.size) % 251).all()
    rknn_destroy_mem(ctx, s), rknn_destroy_mem(ctx, hog)


def _read_through_fd(mem) -> bytes:
    """mem->size bytes read by mapping mem->fd at mem->offset, as another process or a C program would."""
    start = mem.offset & ~(mmap.PAGESIZE - 1)
    with mmap.mmap(mem.fd, mem.offset - start + mem.size, offset=start) as m:
        return bytes(m[mem.offset - start:])


@pytest.mark.parametrize("flags", [RKNN_FLAG_MEMORY_TRY_ALLOC_SRAM,
                                   RKNN_FLAG_MEMORY_TRY_ALLOC_SRAM | RKNN_MEM_FLAG_ALLOC_NO_CONTEXT])
def test_try_alloc_sram_fd_and_offset_locate_the_bytes(ctx, flags):
    """Every TRY_ALLOC_SRAM buffer — the first, later ones, one that spilled into DDR — reports an fd and offset
    whose mapping is the buffer's memory (both ways), and a virt_addr at that offset, like any dma-buf."""
    dev = context_of(ctx).device
    first = rknn_create_mem2(ctx, 3 * 4096, flags)
    second = rknn_create_mem2(ctx, 2 * 4096 + 100, flags)
    hog = rknn_create_mem2(ctx, dev.stats().sram_free - 4096, flags)
    spilled = rknn_create_mem2(ctx, 3 * 4096, flags)
    placements = [dev.lookup_device(m.phys_addr)[0].placement for m in (first, second, hog, spilled)]
    assert placements == ["sram", "sram", "sram", "sram+ddr"]
    assert len({m.fd for m in (first, second, hog, spilled)}) == 4 and all(m.fd >= 0 for m in (first, spilled))
    for k, mem in enumerate((first, second, spilled)):
        v = mem_view(mem)
        v[:] = (np.arange(v.size) + 7 * k) % 251
        assert _read_through_fd(mem) == v.tobytes()
        assert ctypes.string_at(mem.virt_addr + mem.offset, mem.size) == v.tobytes()
        with mmap.mmap(mem.fd, mem.size, offset=mem.offset & ~(mmap.PAGESIZE - 1)) as m:
            m[mem.offset & (mmap.PAGESIZE - 1)] = 0xEE                  # a write through the fd is the buffer's
        assert mem_view(mem)[0] == 0xEE
    for mem in (first, second, hog, spilled):
        assert rknn_destroy_mem(ctx, mem) == RKNN_SUCC


def test_create_mem2_bad_flags(ctx, capsys):
    before = state()
    assert rknn_create_mem2(ctx, 100, 1 << 8) is None
    assert rknn_create_mem2(ctx, 100, RKNN_FLAG_MEMORY_CACHEABLE | RKNN_FLAG_MEMORY_NON_CACHEABLE) is None
    assert rknn_create_mem2(0, 100, 0) is None                               # ctx 0 needs ALLOC_NO_CONTEXT
    errline(capsys, "invalid alloc_flags", "exclusive", "invalid context")
    assert state() == before


def test_alloc_no_context_outlives_contexts():
    m = rknn_create_mem2(0, 4096, RKNN_MEM_FLAG_ALLOC_NO_CONTEXT)
    assert m is not None and m.fd > 0
    a = init()
    b = rknn_create_mem2(a, 4096, RKNN_MEM_FLAG_ALLOC_NO_CONTEXT | RKNN_FLAG_MEMORY_NON_CACHEABLE)
    rknn_destroy(a)                                   # neither mem goes with the context
    mem_view(m)[:] = 1
    mem_view(b)[:] = 2
    other = init()
    assert rknn_destroy_mem(other, m) == RKNN_SUCC    # any context …
    assert rknn_destroy_mem(0, b) == RKNN_SUCC        # … or none
    rknn_destroy(other)


def test_double_destroy_stale_and_forged_structs(ctx, capsys):
    mem = rknn_create_mem(ctx, 100)
    stale = rknn_tensor_mem.from_buffer_copy(mem)               # a copy of the struct: not what was issued
    assert rknn_destroy_mem(ctx, mem) == RKNN_SUCC
    before = state()
    assert rknn_destroy_mem(ctx, mem) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "rknn_destroy_mem", "has been destroyed")
    assert rknn_destroy_mem(ctx, stale) == RKNN_ERR_PARAM_INVALID
    assert rknn_destroy_mem(ctx, rknn_tensor_mem(virt_addr=mem.virt_addr, size=100)) == RKNN_ERR_PARAM_INVALID
    assert rknn_destroy_mem(ctx, None) == RKNN_ERR_PARAM_INVALID
    assert rknn_destroy_mem(ctx, "mem") == RKNN_ERR_PARAM_INVALID
    with pytest.raises(Exception):
        mem_view(mem)
    assert state() == before


def test_edited_structs_are_refused(ctx, capsys):
    mem = rknn_create_mem(ctx, 8192)
    good = (mem.virt_addr, mem.fd, mem.phys_addr, mem.size)
    mem.virt_addr += 64
    assert rknn_mem_sync(ctx, mem, RKNN_MEMORY_SYNC_TO_DEVICE) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "fields were modified")
    mem.virt_addr = good[0]
    mem.size = 9000
    assert rknn_mem_sync(ctx, mem, RKNN_MEMORY_SYNC_TO_DEVICE) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "larger than the 8192 bytes")
    mem.size = 4096                                           # lowering the size is allowed
    assert mem_view(mem).size == 4096
    assert rknn_destroy_mem(ctx, ctypes.pointer(mem)) == RKNN_SUCC       # a pointer to the struct works too


def test_from_fd_wraps_user_memory(ctx):
    dev = context_of(ctx).device
    with dma_alloc(3 * 4096, device=dev) as dma:
        dma.view()[:] = 5
        w = rknn_create_mem_from_fd(ctx, dma.fd, dma.virt_addr, 4096, 4096)
        assert w.flags == RKNN_TENSOR_MEMORY_FLAGS_FROM_FD and (w.fd, w.offset, w.size) == (dma.fd, 4096, 4096)
        assert w.virt_addr == dma.virt_addr                    # the start of the user's mapping
        mem_view(w)[:] = 9
        assert (dma.view()[4096:8192] == 9).all() and (dma.view()[:4096] == 5).all()
        assert rknn_destroy_mem(ctx, w) == RKNN_SUCC          # only the wrapper
        assert (dma.view()[4096:8192] == 9).all()
        os.fstat(dma.fd)                                       # the user's fd is still open


def _own_mapping(fd: int, length: int, file_offset: int = 0, flags: int = mmap.MAP_SHARED):
    """The caller's own mapping of `fd` (as a C program's mmap): (mmap object, its address)."""
    m = mmap.mmap(fd, length, flags=flags, offset=file_offset)
    return m, ctypes.addressof(ctypes.c_char.from_buffer(m))


def test_from_fd_keeps_the_callers_own_mapping(ctx, capsys):
    """A C program mmaps its fd itself and passes that address: mem->virt_addr is the program's own pointer (the
    vendor wraps the caller's memory), and it is the same memory the runtime reads and writes."""
    with dma_alloc(3 * 4096, device=context_of(ctx).device) as dma:
        m, virt = _own_mapping(dma.fd, 3 * 4096)
        try:
            assert virt != dma.virt_addr
            w = rknn_create_mem_from_fd(ctx, dma.fd, virt, 4096, 4096)
            assert (w.virt_addr, w.fd, w.offset, w.size) == (virt, dma.fd, 4096, 4096)
            assert "W RKNN" not in capsys.readouterr().err
            ctypes.memset(w.virt_addr + w.offset, 0x5A, 16)              # the C program writes at virt + offset
            assert (mem_view(w)[:16] == 0x5A).all() and not dma.view()[:4096].any()
            mem_view(w)[100:104] = 7                                       # the runtime's writes are seen there
            assert ctypes.string_at(virt + 4096 + 100, 4) == b"\x07" * 4
            assert rknn_destroy_mem(ctx, w) == RKNN_SUCC
        finally:
            m.close()


def test_from_fd_refuses_a_virt_addr_that_is_not_that_fds_mapping(ctx, capsys):
    dev = context_of(ctx).device
    with dma_alloc(2 * 4096, device=dev) as dma, dma_alloc(2 * 4096, device=dev) as other:
        maps = [_own_mapping(dma.fd, 4096, file_offset=4096),          # the fd, but its byte 4096 at virt + 0
                _own_mapping(dma.fd, 2 * 4096, flags=mmap.MAP_PRIVATE),  # a private copy: not the same memory
                _own_mapping(other.fd, 2 * 4096)]                     # another fd's mapping
        try:
            buf = ctypes.create_string_buffer(2 * 4096)                # plain host memory
            for virt in [v for _, v in maps] + [ctypes.addressof(buf), other.virt_addr, 0x1000]:
                before = state()
                assert rknn_create_mem_from_fd(ctx, dma.fd, virt, 4096, 4096) is None
                errline(capsys, "rknn_create_mem_from_fd", f"is not a mapping of fd {dma.fd}")
                assert state() == before
            w = rknn_create_mem_from_fd(ctx, dma.fd, dma.virt_addr, 4096, 4096)     # the fd's own mapping: kept
            assert w is not None and w.virt_addr == dma.virt_addr and rknn_destroy_mem(ctx, w) == RKNN_SUCC
            for null in (0, None, ctypes.c_void_p(None)):                           # NULL: the runtime's mapping
                w = rknn_create_mem_from_fd(ctx, dma.fd, null, 4096, 4096)
                assert w is not None and w.virt_addr + w.offset == dma.virt_addr + 4096
                assert rknn_destroy_mem(ctx, w) == RKNN_SUCC
            for bad in (-8, "0x1000"):
                assert rknn_create_mem_from_fd(ctx, dma.fd, bad, 4096, 4096) is None
                errline(capsys, "invalid virt_addr")
        finally:
            for m, _ in maps:
                m.close()


def test_from_fd_of_a_runtime_buffer_shares_it(ctx):
    big = rknn_create_mem(ctx, 8192)
    w = rknn_create_mem_from_fd(ctx, big.fd, big.virt_addr, 4096, 4096)
    mem_view(w)[:] = 3
    assert (mem_view(big)[4096:] == 3).all()
    rknn_destroy_mem(ctx, w), rknn_destroy_mem(ctx, big)


@pytest.mark.parametrize("fd,size,offset,words", [(-1, 64, 0, "invalid fd"), (9999, 64, 0, "fd 9999"),
                                                  ("x", 64, 0, "invalid fd"), (None, 0, 0, "invalid size"),
                                                  (None, 64, -4, "invalid offset"), (None, 64, 1 << 20, "past the end")])
def test_from_fd_errors(ctx, capsys, fd, size, offset, words):
    with dma_alloc(4096, device=context_of(ctx).device) as dma:
        before = state()
        assert rknn_create_mem_from_fd(ctx, dma.fd if fd is None else fd, 0, size, offset) is None
        errline(capsys, "rknn_create_mem_from_fd", words)
        assert state() == before


def test_from_phys_wraps_known_memory(ctx, capsys):
    dev = context_of(ctx).device
    with dma_alloc(8192, device=dev) as dma:
        w = rknn_create_mem_from_phys(ctx, dma.phys_addr + 4096, dma.virt_addr + 4096, 4096)
        assert w.flags == RKNN_TENSOR_MEMORY_FLAGS_FROM_PHYS and w.phys_addr == dma.phys_addr + 4096
        mem_view(w)[:] = 4
        assert (dma.view()[4096:] == 4).all() and not dma.view()[:4096].any()
        assert rknn_destroy_mem(ctx, w) == RKNN_SUCC and (dma.view()[4096:] == 4).all()
        before = state()
        assert rknn_create_mem_from_phys(ctx, 0x7FFF0000, 0, 64) is None
        errline(capsys, "not in any buffer")
        assert rknn_create_mem_from_phys(ctx, dma.phys_addr, dma.virt_addr + 64, 64) is None
        errline(capsys, "is not the CPU address")
        assert rknn_create_mem_from_phys(ctx, dma.phys_addr, 0, 9000) is None
        assert state() == before


def test_from_phys_takes_any_cpu_address_of_the_same_memory(ctx, capsys):
    """virt_addr is checked by identity (Device.resolve): a from_fd wrapper's mapping of a runtime buffer's fd, or
    the caller's own mapping of it, is that memory's CPU address too; another offset of it is not."""
    big = rknn_create_mem(ctx, 8192)
    w = rknn_create_mem_from_fd(ctx, big.fd, 0, 4096, 4096)             # the runtime maps the fd once more
    m, own = _own_mapping(big.fd, 8192)
    try:
        assert w.virt_addr + 4096 != big.virt_addr + 4096
        for virt in (w.virt_addr + 4096, own + 4096):
            p = rknn_create_mem_from_phys(ctx, big.phys_addr + 4096, virt, 4096)
            assert p is not None and p.virt_addr == virt
            mem_view(p)[:] = 6
            assert (mem_view(big)[4096:] == 6).all() and rknn_destroy_mem(ctx, p) == RKNN_SUCC
        p = rknn_create_mem_from_phys(ctx, w.phys_addr, big.virt_addr + 4096, 4096)    # and the other way round
        assert p is not None and rknn_destroy_mem(ctx, p) == RKNN_SUCC
        before = state()
        assert rknn_create_mem_from_phys(ctx, big.phys_addr + 4096, own, 4096) is None
        errline(capsys, "is not the CPU address")
        assert state() == before
    finally:
        m.close()
        rknn_destroy_mem(ctx, w), rknn_destroy_mem(ctx, big)


def test_wrapper_of_a_destroyed_buffer_is_an_error(ctx, capsys):
    big = rknn_create_mem(ctx, 4096)
    w = rknn_create_mem_from_phys(ctx, big.phys_addr, big.virt_addr, 4096)
    rknn_destroy_mem(ctx, big)
    assert rknn_mem_sync(ctx, w, RKNN_MEMORY_SYNC_TO_DEVICE) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "has been destroyed")
    assert rknn_destroy_mem(ctx, w) == RKNN_SUCC


def test_mb_blk_and_wait_are_not_supported(ctx, capsys):
    assert rknn_create_mem_from_mb_blk(ctx, 0x1000, 0) is None
    errline(capsys, "rknn_create_mem_from_mb_blk", "not supported on rk3588")
    assert rknn_wait(ctx, rknn_run_extend()) == RKNN_ERR_FAIL
    errline(capsys, "rknn_wait", "not supported")


# --- mem_sync -----------------------------------------------------------------------------------------------------------
def test_mem_sync_modes(ctx, capsys):
    mem = rknn_create_mem(ctx, 64)
    buf = context_of(ctx).device.lookup_device(mem.phys_addr)[0]
    for mode in (RKNN_MEMORY_SYNC_TO_DEVICE, RKNN_MEMORY_SYNC_FROM_DEVICE, RKNN_MEMORY_SYNC_BIDIRECTIONAL):
        assert rknn_mem_sync(ctx, mem, mode) == RKNN_SUCC
    assert (buf.syncs_to_device, buf.syncs_from_device) == (2, 2)
    assert rknn_mem_sync(0, mem, RKNN_MEMORY_SYNC_TO_DEVICE) == RKNN_SUCC          # ctx may be NULL here
    assert rknn_mem_sync(ctx, mem, 7) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "invalid sync mode")
    rknn_destroy_mem(ctx, mem)


def test_mem_sync_needs_a_context_on_the_mini_runtime(monkeypatch, capsys):
    monkeypatch.setenv("NPURT_SOC", "rv1106")
    c = init(npurt_bytes("rv1106"))
    mem = rknn_create_mem(c, 64)
    assert rknn_mem_sync(0, mem, RKNN_MEMORY_SYNC_TO_DEVICE) == RKNN_ERR_CTX_INVALID
    errline(capsys, "context is null")
    assert rknn_mem_sync(c, mem, RKNN_MEMORY_SYNC_TO_DEVICE) == RKNN_SUCC
    rknn_destroy_mem(c, mem)
    rknn_destroy(c)


def test_strict_mode_needs_mem_sync_for_external_memory(monkeypatch):
    """strict coherence: the runtime flushes runtime-known (create_mem) inputs but not wrapped external memory."""
    monkeypatch.setenv("NPURT_SOC", "rk3562")
    monkeypatch.setenv("NPURT_COHERENCE", "strict")
    x = image(seed=3)
    ref = reference(convnet(), x)[0]
    c = init()
    dev = context_of(c).device
    ia, oa = _float32_io_attrs(c)
    with dma_alloc(960, device=dev) as dma:
        imem = rknn_create_mem_from_fd(c, dma.fd, dma.virt_addr, 960, 0)
        omem = rknn_create_mem(c, 1280)
        assert rknn_set_io_mem(c, imem, ia) == RKNN_SUCC and rknn_set_io_mem(c, omem, oa) == RKNN_SUCC
        mem_view(imem, np.float32)[:] = x.transpose(0, 2, 3, 1).reshape(-1)
        assert rknn_run(c, None) == RKNN_SUCC
        assert not np.allclose(mem_view(omem, np.float32).reshape(ref.shape), ref, atol=0.02)   # stale input
        assert rknn_mem_sync(c, imem, RKNN_MEMORY_SYNC_TO_DEVICE) == RKNN_SUCC
        assert rknn_run(c, None) == RKNN_SUCC
        np.testing.assert_allclose(mem_view(omem, np.float32).reshape(ref.shape), ref, atol=0.02)
        rknn_destroy_mem(c, imem), rknn_destroy_mem(c, omem)
    rknn_destroy(c)


# --- set_*_mem ------------------------------------------------------------------------------------------------------------
def test_set_weight_and_internal_mem_need_the_outside_flag(ctx, capsys):
    mem = rknn_create_mem(ctx, 1 << 16)
    assert rknn_set_weight_mem(ctx, mem) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "You must set RKNN_FLAG_MEM_ALLOC_OUTSIDE on rknn_init() if you want to call "
                    "rknn_set_weight_mem!")
    assert rknn_set_internal_mem(ctx, mem) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "if you want to call rknn_set_internal_mem!")
    rknn_destroy_mem(ctx, mem)


def test_set_io_mem_checks(ctx, capsys):
    ia = rknn_tensor_attr(index=0)
    query(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR, ia)
    small = rknn_create_mem(ctx, ia.size_with_stride - 1)
    good = rknn_create_mem(ctx, ia.size_with_stride)
    before = state()
    assert rknn_set_io_mem(ctx, small, ia) == RKNN_ERR_PARAM_INVALID
    errline(capsys, f"input(x) memory size must be: {ia.size_with_stride}, but is: {ia.size_with_stride - 1}")
    bad = rknn_tensor_attr.from_buffer_copy(ia)
    bad.type = 99
    assert rknn_set_io_mem(ctx, good, bad) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "tensor type : UNKNOW")
    bad = rknn_tensor_attr.from_buffer_copy(ia)
    bad.type, bad.pass_through = RKNN_TENSOR_INT8, 1
    assert rknn_set_io_mem(ctx, good, bad) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "not supported in pass_through == 1")
    bad = rknn_tensor_attr.from_buffer_copy(ia)
    bad.name = b"nope"
    assert rknn_set_io_mem(ctx, good, bad) == RKNN_ERR_PARAM_INVALID
    assert rknn_set_io_mem(ctx, good, None) == RKNN_ERR_PARAM_INVALID
    assert rknn_set_io_mem(ctx, rknn_tensor_mem(), ia) == RKNN_ERR_PARAM_INVALID
    assert state() == before and context_of(ctx).io_path is None
    # a smaller size written into the struct is what counts (the user says how much of the buffer to use)
    good.size = ia.size_with_stride - 2
    assert rknn_set_io_mem(ctx, good, ia) == RKNN_ERR_PARAM_INVALID
    good.size = ia.size_with_stride
    assert rknn_set_io_mem(ctx, good, ia) == RKNN_SUCC
    rknn_destroy_mem(ctx, small), rknn_destroy_mem(ctx, good)


def test_set_io_mem_edited_sizes(monkeypatch, capsys):
    """FLOAT32 output: n_elems * 4 bytes; UINT8 NHWC input: N*H*w_stride*C bytes (rows padded to w_stride)."""
    monkeypatch.setenv("RKNN_LOG_LEVEL", "2")
    c = init()
    oa = rknn_tensor_attr(index=0)
    query(c, RKNN_QUERY_NATIVE_OUTPUT_ATTR, oa)
    oa.type, oa.fmt = RKNN_TENSOR_FLOAT32, RKNN_TENSOR_NCHW
    out_small, out_ok = rknn_create_mem(c, oa.n_elems * 4 - 1), rknn_create_mem(c, oa.n_elems * 4)
    assert rknn_set_io_mem(c, out_small, oa) == RKNN_ERR_PARAM_INVALID
    assert rknn_set_io_mem(c, out_ok, oa) == RKNN_SUCC
    i8 = init(npurt_bytes(int8=True))
    o8 = rknn_tensor_attr(index=0)
    query(i8, RKNN_QUERY_OUTPUT_ATTR, o8)                             # INT8 NCHW: converted on the CPU
    m8 = rknn_create_mem(i8, o8.n_elems)
    capsys.readouterr()
    assert rknn_set_io_mem(i8, m8, o8) == RKNN_SUCC
    assert "Output(y): size_with_stride larger than model origin size" in capsys.readouterr().err
    rknn_destroy_mem(i8, m8)
    rknn_destroy(i8)
    ia = rknn_tensor_attr(index=0)
    query(c, RKNN_QUERY_NATIVE_INPUT_ATTR, ia)
    ia.type = RKNN_TENSOR_UINT8
    assert ia.w_stride == 16
    need = 1 * 8 * 16 * 3
    in_small, in_ok = rknn_create_mem(c, need - 1), rknn_create_mem(c, need)
    assert rknn_set_io_mem(c, in_small, ia) == RKNN_ERR_PARAM_INVALID
    assert rknn_set_io_mem(c, in_ok, ia) == RKNN_SUCC
    for m in (out_small, out_ok, in_small, in_ok):
        rknn_destroy_mem(c, m)
    rknn_destroy(c)


def test_mem_alloc_outside_order_rules(capsys):
    c = init(flag=RKNN_FLAG_MEM_ALLOC_OUTSIDE)
    ms = rknn_mem_size()
    query(c, RKNN_QUERY_MEM_SIZE, ms)
    ia = rknn_tensor_attr(index=0)
    query(c, RKNN_QUERY_NATIVE_INPUT_ATTR, ia)
    io = rknn_create_mem(c, ia.size_with_stride)
    assert rknn_set_io_mem(c, io, ia) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "You must call rknn_set_internal_mem before rknn_set_io_mem!")
    internal = rknn_create_mem(c, ms.total_internal_size - 1)
    assert rknn_set_internal_mem(c, internal) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "internal memory size must be >=")
    weight = rknn_create_mem(c, ms.total_weight_size - 1)
    assert rknn_set_weight_mem(c, weight) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "weight memory size must be >=")
    # internal set, I/O bound, weights missing: the run is refused
    good_internal = rknn_create_mem(c, ms.total_internal_size)
    assert rknn_set_internal_mem(c, good_internal) == RKNN_SUCC
    oa = rknn_tensor_attr(index=0)
    query(c, RKNN_QUERY_NATIVE_OUTPUT_ATTR, oa)
    out = rknn_create_mem(c, oa.size_with_stride)
    assert rknn_set_io_mem(c, io, ia) == RKNN_SUCC and rknn_set_io_mem(c, out, oa) == RKNN_SUCC
    assert rknn_run(c, None) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "rknn_run", "you must call rknn_set_weight_mem before rknn_run")
    good_weight = rknn_create_mem(c, ms.total_weight_size)
    assert rknn_set_weight_mem(c, good_weight) == RKNN_SUCC and rknn_run(c, None) == RKNN_SUCC
    for m in (io, internal, weight, good_internal, out, good_weight):
        rknn_destroy_mem(c, m)
    rknn_destroy(c)


def test_mem_view_helper(ctx):
    mem = rknn_create_mem(ctx, 64)
    assert mem_view(mem, np.float32).shape == (16,)
    assert mem_view(mem, np.int16, count=4, offset=8).shape == (4,)
    with pytest.raises(Exception):
        mem_view(mem, np.float32, count=17)
    with pytest.raises(Exception):
        mem_view(mem, offset=65)
    assert addr_view(mem.virt_addr, 64).size == 64
    with pytest.raises(Exception):
        addr_view(12345, 8)
    rknn_destroy_mem(ctx, mem)


def test_check_mode_reports_missed_syncs(monkeypatch, capsys):
    """check coherence: an external input written by the CPU and not synced is named at rknn_run; an output the
    NPU wrote is flagged when read without a sync from device (DISABLE_FLUSH_OUTPUT_MEM_CACHE)."""
    monkeypatch.setenv("NPURT_SOC", "rk3566")
    monkeypatch.setenv("NPURT_COHERENCE", "check")
    monkeypatch.setenv("RKNN_LOG_LEVEL", "2")
    x = image(seed=4)
    c = init(flag=RKNN_FLAG_DISABLE_FLUSH_OUTPUT_MEM_CACHE)
    dev = context_of(c).device
    assert dev.coherence == "check"
    ia, oa = _float32_io_attrs(c)
    with dma_alloc(960, device=dev) as dma:
        imem = rknn_create_mem_from_fd(c, dma.fd, dma.virt_addr, 960, 0)
        omem = rknn_create_mem(c, 1280)
        rknn_set_io_mem(c, imem, ia), rknn_set_io_mem(c, omem, oa)
        mem_view(imem, np.float32)[:] = x.transpose(0, 2, 3, 1).reshape(-1)
        capsys.readouterr()
        assert rknn_run(c, None) == RKNN_SUCC
        err = capsys.readouterr().err
        assert "W RKNN:" in err and "input(x) buffer fd" in err and "RKNN_MEMORY_SYNC_TO_DEVICE" in err
        mem_view(omem, np.float32)
        assert "without rknn_mem_sync(..., RKNN_MEMORY_SYNC_FROM_DEVICE)" in capsys.readouterr().err
        assert rknn_mem_sync(c, imem, RKNN_MEMORY_SYNC_TO_DEVICE) == RKNN_SUCC
        assert rknn_run(c, None) == RKNN_SUCC
        assert rknn_mem_sync(c, omem, RKNN_MEMORY_SYNC_FROM_DEVICE) == RKNN_SUCC
        y = mem_view(omem, np.float32).reshape(1, 4, 8, 10)
        assert capsys.readouterr().err == ""                  # synced both ways: nothing to report
        np.testing.assert_allclose(y, reference(convnet(), x)[0], atol=0.02)
        rknn_destroy_mem(c, imem), rknn_destroy_mem(c, omem)
    rknn_destroy(c)
