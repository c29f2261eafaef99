"""Device address space and lookups: pages, domain limit, device/host address resolution, `view_at` validation."""
import ctypes

import numpy as np
import pytest

from npurt.errors import ErrorCode, NpuError
from npurt.memory import PAGE_SIZE
from npurt.memory.address_space import AddressSpace, RangeMap


def test_range_map():
    rm = RangeMap()
    rm.insert(100, 200, "a")
    rm.insert(300, 301, "b")
    rm.insert(200, 300, "c")
    assert rm.find(100) == (100, 200, "a")
    assert rm.find(199) == (100, 200, "a")
    assert rm.find(200, 100) == (200, 300, "c")
    assert rm.find(199, 2) is None            # spans two ranges
    assert rm.find(99) is None and rm.find(301) is None
    for start, end in ((150, 160), (50, 101), (299, 400), (10, 10)):
        with pytest.raises(ValueError):
            rm.insert(start, end, "x")
    assert rm.remove(200) == "c"
    assert rm.find(250) is None
    assert [s for s, _, _ in rm.items()] == [100, 300] and len(rm) == 2


def test_address_space_first_fit_and_coalescing():
    space = AddressSpace(8 * PAGE_SIZE, base=PAGE_SIZE)
    a = space.allocate(1)
    b = space.allocate(PAGE_SIZE + 1)
    c = space.allocate(PAGE_SIZE)
    assert (a, b, c) == (PAGE_SIZE, 2 * PAGE_SIZE, 4 * PAGE_SIZE)
    assert space.used == 4 * PAGE_SIZE
    space.release(b)
    space.release(a)                          # coalesces with b's hole
    assert space.allocate(3 * PAGE_SIZE) == PAGE_SIZE
    space.release(PAGE_SIZE)
    space.release(c)
    assert space.used == 0 and space.largest_free() == 8 * PAGE_SIZE
    with pytest.raises(NpuError) as err:
        space.allocate(9 * PAGE_SIZE)
    assert err.value.code == ErrorCode.OUT_OF_MEMORY


def test_device_address_zero_is_never_valid(dev):
    buf = dev.alloc(1)
    assert buf.dev_addr >= PAGE_SIZE
    with pytest.raises(NpuError) as err:
        dev.lookup_device(0)
    assert err.value.code == ErrorCode.INVALID_HANDLE
    buf.free()


def test_lookups_resolve_buffer_and_offset(dev):
    bufs = [dev.alloc(PAGE_SIZE * 3 - 5) for _ in range(50)]
    for i, buf in enumerate(bufs):
        off = (i * 97) % buf.size
        assert dev.lookup_device(buf.dev_addr + off) == (buf, off)
        assert dev.lookup_host(buf.virt_addr + off) == (buf, off)
        # the page-rounded tail is addressable; past it is not
        assert dev.lookup_device(buf.dev_addr, buf.capacity) == (buf, 0)
        with pytest.raises(NpuError):
            dev.lookup_device(buf.dev_addr, buf.capacity + 1)
        with pytest.raises(NpuError):
            dev.lookup_host(buf.virt_addr + buf.capacity - 1, 2)
    for buf in bufs:
        buf.free()


def test_lookups_are_bisect_based(dev, monkeypatch):
    """The tables are RangeMaps: lookups cost O(log n) comparisons, not a scan of all buffers."""
    import bisect
    calls = []
    real = bisect.bisect_right
    bufs = [dev.alloc(100) for _ in range(300)]
    monkeypatch.setattr(bisect, "bisect_right", lambda *a, **k: calls.append(1) or real(*a, **k))
    dev.lookup_device(bufs[150].dev_addr)
    dev.lookup_host(bufs[150].virt_addr)
    assert len(calls) == 2
    monkeypatch.undo()
    for buf in bufs:
        buf.free()


def test_view_at_validates_before_touching(dev):
    buf = dev.alloc(64)
    buf.view(np.float32)[:] = np.arange(16, dtype=np.float32)
    v = dev.view_at(buf.virt_addr + 8, 16, np.float32)
    assert v.tolist() == [2.0, 3.0, 4.0, 5.0]
    v[0] = 42
    assert buf.view(np.float32)[2] == 42
    assert dev.view_at(buf.virt_addr, 64, np.float32, (4, 4)).shape == (4, 4)
    local = ctypes.create_string_buffer(64)
    bad = [(ctypes.addressof(local), 8),            # real memory npurt does not own
           (0, 8), (-4096, 8), (1 << 62, 8),          # nonsense
           (buf.virt_addr + buf.capacity, 1),         # just past the end
           (buf.virt_addr + 4090, 100),               # straddles the end
           (buf.dev_addr, 8)]                         # a device address is not a host address
    for addr, nbytes in bad:
        with pytest.raises(NpuError) as err:
            dev.view_at(addr, nbytes)
        assert err.value.code == ErrorCode.INVALID_HANDLE, (addr, nbytes)
    for nbytes in (0, -1):
        with pytest.raises(NpuError) as err:
            dev.view_at(buf.virt_addr, nbytes)
        assert err.value.code == ErrorCode.INVALID_ARGUMENT
    with pytest.raises(NpuError) as err:
        dev.view_at(buf.virt_addr, 6, np.float32)
    assert err.value.code == ErrorCode.INVALID_ARGUMENT
    buf.free()
    assert v[0] == 42                                 # the view outlives the buffer safely


def test_view_at_keeps_mapping_alive(dev):
    import gc
    import weakref
    buf = dev.alloc(PAGE_SIZE)
    ref = weakref.ref(buf.region.device_map)
    v = dev.view_at(buf.virt_addr, 8)
    buf.free()
    gc.collect()
    assert ref() is not None
    v[:] = 1
    del v
    gc.collect()
    assert ref() is None


def test_resolve_phys_and_virt_together(dev):
    a = dev.alloc(3 * PAGE_SIZE)
    b = dev.alloc(PAGE_SIZE)
    assert dev.resolve(a.dev_addr + 100, a.virt_addr + 100, 50) == (a, 100)
    for phys, virt, n, code in ((a.dev_addr, b.virt_addr, 8, ErrorCode.INVALID_HANDLE),       # different buffers
                                (a.dev_addr + 8, a.virt_addr, 8, ErrorCode.INVALID_HANDLE),   # different offsets
                                (a.dev_addr, a.virt_addr, a.capacity + 1, ErrorCode.INVALID_HANDLE),
                                (a.dev_addr, a.virt_addr, 0, ErrorCode.INVALID_ARGUMENT)):
        with pytest.raises(NpuError) as err:
            dev.resolve(phys, virt, n)
        assert err.value.code == code
    a.free()
    b.free()


def test_resolve_shared_import_region(dev):
    import os
    fd = os.memfd_create("u", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, 4 * PAGE_SIZE)
    first = dev.import_fd(fd, 2 * PAGE_SIZE)
    second = dev.import_fd(fd, PAGE_SIZE, PAGE_SIZE)
    # second's device address with the host address of the same bytes (found through `first`) is consistent
    assert dev.resolve(second.dev_addr, first.virt_addr + PAGE_SIZE, 16) == (second, 0)
    first.free()
    second.free()
    os.close(fd)


def test_resolve_is_by_identity(dev):
    """One rule for "the same memory": the host address may be any view of the same file bytes — another buffer over
    them (a runtime buffer and an import of its fd are different regions), the caller's own mapping — or 0 (none
    given: the buffer's CPU address is meant)."""
    import mmap
    import os
    a = dev.alloc(2 * PAGE_SIZE)
    imported = dev.import_fd(os.dup(a.fd))
    own = mmap.mmap(a.fd, 2 * PAGE_SIZE)
    try:
        assert imported.region is not a.region
        assert dev.resolve(a.dev_addr + PAGE_SIZE, imported.virt_addr + PAGE_SIZE, 16) == (a, PAGE_SIZE)
        assert dev.resolve(imported.dev_addr, a.virt_addr, 16) == (imported, 0)
        assert dev.resolve(a.dev_addr + 8, ctypes.addressof(ctypes.c_char.from_buffer(own)) + 8, 8) == (a, 8)
        assert dev.resolve(a.dev_addr + 8, 0, 8) == (a, 8)
        with pytest.raises(NpuError) as err:
            dev.resolve(a.dev_addr + 8, imported.virt_addr, 8)           # the same file, another offset
        assert err.value.code == ErrorCode.INVALID_HANDLE and "not the same memory" in err.value.message
    finally:
        own.close()
        fd = imported.fd
        imported.free()
        os.close(fd)
        a.free()
