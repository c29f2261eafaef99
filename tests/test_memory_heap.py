"""DDR heap: memfd-backed page-rounded buffers with real fds and addresses, views, frees, bad input."""
import gc
import os
import stat

import numpy as np
import pytest

from npurt.errors import ErrorCode, NpuError
from npurt.memory import PAGE_SIZE, open_device
from conftest import open_fds


def snapshot(dev):
    st = dev.stats().as_dict()
    for key in ("allocations", "releases"):
        st.pop(key)
    return st, [(b.handle, b.dev_addr, b.virt_addr) for b in dev.buffers()], open_fds()


def test_buffer_is_a_real_memfd_mapping(dev):
    buf = dev.alloc(10_000, cacheable=False, owner="ctx", name="in0")
    st = os.fstat(buf.fd)
    assert stat.S_ISREG(st.st_mode) and st.st_size == 3 * PAGE_SIZE
    assert os.readlink(f"/proc/self/fd/{buf.fd}").startswith("/memfd:npurt-")
    assert buf.size == 10_000 and buf.capacity == 3 * PAGE_SIZE
    assert (buf.cacheable, buf.owner, buf.name, buf.placement, buf.imported) == (False, "ctx", "in0", "ddr", False)
    view = buf.view()
    assert view.shape == (10_000,) and view.dtype == np.uint8
    assert view.ctypes.data == buf.virt_addr == buf.device_virt_addr
    assert not view.any()                                   # zeroed
    assert buf.virt_addr % PAGE_SIZE == 0 and buf.dev_addr % PAGE_SIZE == 0
    view[:4] = [1, 2, 3, 4]
    assert os.pread(buf.fd, 4, 0) == b"\x01\x02\x03\x04"   # the fd is the same memory
    os.pwrite(buf.fd, b"\xff", 9999)
    assert view[9999] == 255
    buf.free()


def test_typed_views(dev):
    buf = dev.alloc(4 * 6 * 4)
    a = buf.view(np.float32, (4, 6))
    a[:] = np.arange(24, dtype=np.float32).reshape(4, 6)
    np.testing.assert_array_equal(buf.device_view(np.float32, (24,)), np.arange(24, dtype=np.float32))
    assert buf.view(np.int16, offset=8, nbytes=4).tolist() == list(np.arange(2, 3, dtype=np.float32).view(np.int16))
    for kwargs in ({"dtype": np.float32, "shape": (100,)}, {"offset": 200}, {"offset": -1},
                   {"dtype": np.float32, "offset": 1, "nbytes": 3}):
        with pytest.raises(NpuError) as err:
            buf.view(**kwargs)
        assert err.value.code == ErrorCode.INVALID_ARGUMENT
    buf.free()


def test_distinct_addresses_and_fds(dev):
    bufs = [dev.alloc(PAGE_SIZE * (i + 1)) for i in range(20)]
    assert len({b.fd for b in bufs}) == 20
    dev_ranges = sorted((b.dev_addr, b.dev_addr + b.capacity) for b in bufs)
    assert all(a[1] <= b[0] for a, b in zip(dev_ranges, dev_ranges[1:]))
    host_ranges = sorted((b.virt_addr, b.virt_addr + b.capacity) for b in bufs)
    assert all(a[1] <= b[0] for a, b in zip(host_ranges, host_ranges[1:]))
    for b in bufs:
        b.free()


def test_free_releases_everything_at_once_but_views_survive(dev):
    before = open_fds()
    buf = dev.alloc(3 * PAGE_SIZE)
    view = buf.view(np.uint32)
    view[:] = 0xDEADBEEF
    fd, dev_addr, virt = buf.fd, buf.dev_addr, buf.virt_addr
    mapping = buf.region.device_map
    buf.free()
    assert not buf.alive and open_fds() == before
    with pytest.raises(OSError):
        os.fstat(fd)
    st = dev.stats()
    assert (st.buffers, st.ddr_bytes, st.domain_used, st.open_fds) == (0, 0, 0, 1)
    for lookup in (lambda: dev.lookup_device(dev_addr), lambda: dev.lookup_host(virt),
                   lambda: dev.view_at(virt, 4), buf.view, buf.device_view, buf.sync):
        with pytest.raises(NpuError) as err:
            lookup()
        assert err.value.code == ErrorCode.INVALID_HANDLE
    # the old view still reads and writes real memory
    assert mapping.mapped and (view == 0xDEADBEEF).all()
    view[0] = 1
    part = view[1:3]
    del view, mapping
    gc.collect()
    assert (part == 0xDEADBEEF).all()          # a slice alone keeps the mapping too


def test_mapping_unmapped_when_last_view_goes(dev):
    buf = dev.alloc(PAGE_SIZE)
    view = buf.view()[10:20]
    mapping = buf.region.device_map
    import weakref
    ref = weakref.ref(mapping)
    del mapping
    buf.free()
    assert ref() is not None and ref().mapped
    del view
    gc.collect()
    assert ref() is None


def test_double_free_and_foreign_buffers(dev):
    buf = dev.alloc(100)
    buf.free()
    state = snapshot(dev)
    for bad in (buf, None, "buf", 42):
        with pytest.raises(NpuError) as err:
            dev.free(bad)
        assert err.value.code == ErrorCode.INVALID_HANDLE
    with pytest.raises(NpuError):
        buf.free()
    with open_device("rk3576") as other:
        foreign = other.alloc(100)
        with pytest.raises(NpuError) as err:
            dev.free(foreign)
        assert err.value.code == ErrorCode.INVALID_HANDLE
        foreign.free()
    assert snapshot(dev) == state


@pytest.mark.parametrize("size", [0, -1, -4096, 1 << 60, 2.5, "10", None, True, np.float64(3)])
def test_bad_sizes(dev, size):
    keep = dev.alloc(1000)
    state = snapshot(dev)
    with pytest.raises(NpuError) as err:
        dev.alloc(size)
    assert err.value.code == ErrorCode.INVALID_ARGUMENT
    assert snapshot(dev) == state
    keep.free()


def test_numpy_int_size_and_bad_placement(dev):
    buf = dev.alloc(np.int64(5))
    assert buf.size == 5
    with pytest.raises(NpuError) as err:
        dev.alloc(5, placement="l2")
    assert err.value.code == ErrorCode.INVALID_ARGUMENT
    buf.free()


def test_ddr_limit():
    with open_device("rk3562", ddr_limit=5 * PAGE_SIZE) as dev:
        a = dev.alloc(3 * PAGE_SIZE)
        state = snapshot(dev)
        with pytest.raises(NpuError) as err:
            dev.alloc(3 * PAGE_SIZE)
        assert err.value.code == ErrorCode.OUT_OF_MEMORY
        assert snapshot(dev) == state
        b = dev.alloc(2 * PAGE_SIZE)
        a.free()
        b.free()


def test_domain_exhaustion_is_clean_oom():
    with open_device("rk3562", domain_size=16 * PAGE_SIZE) as dev:
        a = dev.alloc(10 * PAGE_SIZE)
        state = snapshot(dev)
        for size in (7 * PAGE_SIZE, 1 << 40):          # past the domain; an absurd-but-int size too
            with pytest.raises(NpuError) as err:
                dev.alloc(size)
            assert err.value.code == ErrorCode.OUT_OF_MEMORY
            assert snapshot(dev) == state
        b = dev.alloc(6 * PAGE_SIZE)                    # exactly the rest fits
        assert dev.stats().domain_used == 16 * PAGE_SIZE
        a.free()
        c = dev.alloc(10 * PAGE_SIZE)                   # the hole is reused
        assert c.dev_addr == a.dev_addr
        b.free()
        c.free()


def test_default_domain_is_4gib():
    with open_device("rk3562") as dev:
        assert dev.stats().domain_size == 4 << 30
        a = dev.alloc(3 << 30)                          # sparse memfd: no real memory is touched
        with pytest.raises(NpuError) as err:
            dev.alloc(2 << 30)
        assert err.value.code == ErrorCode.OUT_OF_MEMORY
        a.free()


def test_context_manager_frees(dev):
    with dev.alloc(100) as buf:
        assert buf.alive
    assert not buf.alive and dev.stats().buffers == 0


def test_many_cycles_no_fd_leak(dev):
    before = open_fds()
    for _ in range(500):
        dev.alloc(8192, placement="sram_first").free()
        dev.alloc(100).free()
    assert open_fds() == before
    st = dev.stats()
    assert (st.buffers, st.sram_bytes, st.ddr_bytes, st.domain_used) == (0, 0, 0, 0)


def test_user_closing_an_owned_fd_does_not_break_release(dev, caplog):
    buf = dev.alloc(100)
    os.close(buf.fd)                                  # user code misbehaves
    buf.free()                                        # still releases everything, logs the problem
    assert "already closed" in caplog.text
    st = dev.stats()
    assert (st.buffers, st.open_fds, st.ddr_bytes) == (0, 1, 0)


def test_bad_domain_size_type():
    with pytest.raises(NpuError) as err:
        open_device("rk3562", domain_size="4G")
    assert err.value.code == ErrorCode.INVALID_ARGUMENT
