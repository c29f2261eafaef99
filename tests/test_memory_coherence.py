"""Coherence modes: coherent (one mapping, bookkeeping syncs), strict (separate CPU view, stale data without a
sync, deterministically) and check (one mapping plus a "CPU wrote since the last sync" helper)."""
import os

import numpy as np
import pytest

from npurt.errors import ErrorCode, NpuError
from npurt.memory import SyncMode, dma_alloc, open_device


def make(mode):
    return open_device("rk3588", coherence=mode)


@pytest.fixture
def strict():
    dev = make("strict")
    yield dev
    assert dev.close() == []


@pytest.fixture
def check():
    dev = make("check")
    yield dev
    assert dev.close() == []


def test_coherent_views_are_one_memory_and_syncs_only_count():
    with make("coherent") as dev:
        buf = dev.alloc(4096)
        assert buf.view().ctypes.data == buf.device_view().ctypes.data == buf.virt_addr == buf.device_virt_addr
        buf.view()[:] = 3
        assert (buf.device_view() == 3).all()
        buf.sync(SyncMode.TO_DEVICE)
        buf.sync("from_device")
        buf.sync(3)
        st = dev.stats()
        assert (st.syncs_to_device, st.syncs_from_device, st.sync_bytes_copied) == (2, 2, 0)
        assert (buf.syncs_to_device, buf.syncs_from_device) == (2, 2)
        assert not buf.cpu_written_since_sync()
        buf.free()


@pytest.mark.parametrize("bad", [0, 4, -1, "sideways", None, 1.0, True])
def test_bad_sync_mode(bad):
    with make("coherent") as dev:
        buf = dev.alloc(16)
        with pytest.raises(NpuError) as err:
            buf.sync(bad)
        assert err.value.code == ErrorCode.INVALID_ARGUMENT
        assert dev.stats().syncs_to_device == 0
        buf.free()


def test_strict_missing_flush_gives_stale_device_data(strict):
    buf = strict.alloc(1024)
    assert buf.virt_addr != buf.device_virt_addr
    cpu, devv = buf.cpu_view(), buf.device_view()
    cpu[:] = 7
    assert not devv.any()                      # the NPU sees old memory: no flush yet
    buf.sync(SyncMode.TO_DEVICE)
    assert (devv == 7).all()
    assert strict.stats().sync_bytes_copied == 1024
    buf.free()


def test_strict_missing_invalidate_gives_stale_cpu_data(strict):
    buf = strict.alloc(1024)
    buf.device_view()[:] = 9                   # the executor writes device memory
    assert not buf.cpu_view().any()            # the CPU still reads its (stale) cache
    buf.sync("from_device")
    assert (buf.cpu_view() == 9).all()
    buf.free()


def test_strict_bidirectional_and_fd_sees_device_memory(strict):
    buf = strict.alloc(4096)
    buf.view()[:4] = [1, 2, 3, 4]
    assert os.pread(buf.fd, 4, 0) == bytes(4)      # other processes see memory, not this CPU's cache
    buf.sync(SyncMode.BIDIRECTIONAL)
    assert os.pread(buf.fd, 4, 0) == b"\x01\x02\x03\x04"
    assert (buf.view() == buf.device_view()).all()
    buf.free()


def test_strict_non_cacheable_has_one_mapping(strict):
    buf = strict.alloc(1024, cacheable=False)
    assert buf.virt_addr == buf.device_virt_addr
    buf.view()[:] = 5
    assert (buf.device_view() == 5).all()
    buf.sync("to_device")
    assert strict.stats().sync_bytes_copied == 0
    buf.free()


def test_strict_split_buffer_and_lookups_on_both_views(strict):
    hog = strict.alloc(900 * 1024, placement="sram")
    buf = strict.alloc(200 * 1024, placement="sram_first")
    assert buf.placement == "sram+ddr"
    buf.view()[:] = 1
    assert not buf.device_view().any()
    buf.sync("to_device")
    assert (buf.device_view() == 1).all()
    assert strict.lookup_host(buf.virt_addr + 5) == (buf, 5)
    assert strict.lookup_host(buf.device_virt_addr + 5) == (buf, 5)
    assert strict.view_at(buf.device_virt_addr, 4).ctypes.data == buf.device_virt_addr
    buf.free()
    hog.free()


def test_strict_import_starts_clean_and_user_syncs(strict):
    fd = os.memfd_create("user", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, 8192)
    os.pwrite(fd, b"hello", 0)
    buf = strict.import_fd(fd)
    assert bytes(buf.view()[:5]) == b"hello"      # the CPU view starts as a clean copy of memory
    buf.view()[:5] = np.frombuffer(b"HELLO", np.uint8)
    assert os.pread(fd, 5, 0) == b"hello"
    buf.sync("to_device")
    assert os.pread(fd, 5, 0) == b"HELLO"
    buf.free()
    os.close(fd)


def test_strict_dma_buffer(strict):
    with dma_alloc(100, device=strict) as dma:
        dma.view()[:] = 4
        assert not dma.buffer.device_view().any()
        dma.sync(1)
        assert (dma.buffer.device_view() == 4).all()


def test_check_mode_detects_cpu_writes_since_sync(check):
    buf = check.alloc(4096)
    assert buf.virt_addr == buf.device_virt_addr          # same memory, as coherent
    assert not buf.cpu_written_since_sync()               # fresh zeroed memory
    buf.view()[10] = 1
    assert buf.cpu_written_since_sync()
    buf.sync(SyncMode.TO_DEVICE)
    assert not buf.cpu_written_since_sync()
    buf.view()[10] = 1                                    # same value: not a change
    assert not buf.cpu_written_since_sync()
    buf.view()[11] = 2
    assert buf.cpu_written_since_sync()
    buf.sync(SyncMode.FROM_DEVICE)                        # an invalidate is not a flush
    assert buf.cpu_written_since_sync()
    buf.sync(SyncMode.BIDIRECTIONAL)
    assert not buf.cpu_written_since_sync()
    buf.free()


def test_check_mode_device_writes_and_sync_from_device(check):
    buf = check.alloc(64)
    buf.device_view()[:] = 3
    buf.note_device_write()                               # the executor reports what it wrote
    assert buf.needs_sync_from_device
    assert not buf.cpu_written_since_sync()               # device writes are not CPU writes
    buf.sync("from_device")
    assert not buf.needs_sync_from_device
    buf.free()


def test_check_mode_non_cacheable_is_never_flagged(check):
    buf = check.alloc(64, cacheable=False)
    buf.view()[:] = 1
    assert not buf.cpu_written_since_sync()
    buf.free()


def test_check_mode_import_snapshot_at_import(check):
    fd = os.memfd_create("user", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, 4096)
    os.pwrite(fd, b"\x05" * 4096, 0)
    buf = check.import_fd(fd)
    assert not buf.cpu_written_since_sync()
    buf.view()[0] = 6
    assert buf.cpu_written_since_sync()
    buf.free()
    os.close(fd)
