"""External memory: importing user fds (memfd, file), shared import mappings, `dma_alloc`, bad fds."""
import os
import socket
import tempfile

import numpy as np
import pytest

from npurt.errors import ErrorCode, NpuError
from npurt.memory import PAGE_SIZE, dma_alloc, open_device, open_devices
from conftest import open_fds


def user_memfd(size: int, fill: int = 0) -> int:
    fd = os.memfd_create("user", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, size)
    if fill:
        os.pwrite(fd, bytes([fill]) * size, 0)
    return fd


def state(dev):
    st = dev.stats().as_dict()
    st.pop("allocations"), st.pop("releases")
    return st, open_fds(), len(dev.buffers())


def test_import_memfd_shares_memory_and_keeps_user_fd(dev):
    fd = user_memfd(4 * PAGE_SIZE, fill=7)
    buf = dev.import_fd(fd, 2 * PAGE_SIZE, PAGE_SIZE + 16, owner="user")
    assert buf.imported and buf.fd == fd and buf.fd_offset == PAGE_SIZE + 16
    assert buf.size == buf.capacity == 2 * PAGE_SIZE
    assert buf.dev_addr % PAGE_SIZE == 16                    # in-page offset kept, like an IOMMU mapping
    assert (buf.view() == 7).all()
    buf.view()[0] = 1
    assert os.pread(fd, 1, PAGE_SIZE + 16) == b"\x01"
    st = dev.stats()
    assert (st.imported_bytes, st.imported_buffers, st.owned_buffers, st.open_fds) == (2 * PAGE_SIZE, 1, 0, 1)
    assert dev.lookup_device(buf.dev_addr + 10) == (buf, 10)
    assert dev.lookup_host(buf.virt_addr + 10) == (buf, 10)
    with pytest.raises(NpuError):                             # the part of the file before the window
        dev.lookup_host(buf.virt_addr - 1)
    buf.free()
    os.fstat(fd)                                              # still open: the user's
    os.close(fd)
    assert dev.stats().imported_bytes == 0


def test_import_whole_file_default_size(dev):
    fd = os.memfd_create("user", os.MFD_ALLOW_SEALING)
    os.write(fd, b"abcdefgh" * 1000)
    try:
        buf = dev.import_fd(fd)
        assert buf.size == 8000
        assert bytes(buf.view()[:8]) == b"abcdefgh"
        buf.view()[:3] = np.frombuffer(b"XYZ", np.uint8)
        assert os.pread(fd, 4, 0) == b"XYZd"
        with pytest.raises(NpuError) as err:
            dev.import_fd(fd, offset=8000)
        assert err.value.code == ErrorCode.INVALID_ARGUMENT
        buf.free()
    finally:
        os.close(fd)


def test_import_refuses_a_regular_file_that_could_shrink(dev):
    with tempfile.TemporaryFile() as f:
        f.write(b"abcdefgh" * 1000)
        f.flush()
        with pytest.raises(NpuError) as err:
            dev.import_fd(f.fileno())
        assert err.value.code == ErrorCode.INVALID_ARGUMENT and "F_SEAL_SHRINK" in err.value.message


def test_same_fd_twice_shares_one_mapping(dev):
    fd = user_memfd(4 * PAGE_SIZE)
    a = dev.import_fd(fd, PAGE_SIZE)
    dup = os.dup(fd)
    b = dev.import_fd(dup, 2 * PAGE_SIZE, PAGE_SIZE)        # another fd of the same file
    c = dev.import_fd(fd, PAGE_SIZE)                         # the very same range again
    assert a.region is b.region is c.region
    assert b.virt_addr == a.virt_addr + PAGE_SIZE and c.virt_addr == a.virt_addr
    assert len({a.dev_addr, b.dev_addr, c.dev_addr}) == 3   # each import has its own device address
    mapping = a.region.device_map
    a.free()
    assert c.region is b.region and mapping.mapped
    assert dev.lookup_host(c.virt_addr) == (c, 0)
    c.free()
    b.free()
    assert not dev._imports
    d = dev.import_fd(fd, PAGE_SIZE)                         # a fresh mapping after the last import went
    assert d.region is not None
    d.free()
    os.close(fd)
    os.close(dup)


def test_import_grown_file_gets_a_bigger_mapping(dev):
    fd = user_memfd(PAGE_SIZE)
    a = dev.import_fd(fd)
    os.ftruncate(fd, 3 * PAGE_SIZE)
    b = dev.import_fd(fd, PAGE_SIZE, 2 * PAGE_SIZE)
    assert b.region is not a.region
    c = dev.import_fd(fd, 100)
    assert c.region is b.region
    for buf in (a, b, c):
        buf.free()
    os.close(fd)


def test_bad_fds(dev):
    keep = dev.alloc(100)
    before = state(dev)
    r, w = os.pipe()
    s1, s2 = socket.socketpair()
    dirfd = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    with tempfile.NamedTemporaryFile() as f:
        f.write(b"x" * PAGE_SIZE)
        f.flush()
        ro = os.open(f.name, os.O_RDONLY)          # regular file, but cannot be mapped shared read-write
        memfd = user_memfd(2 * PAGE_SIZE)
        closed = user_memfd(PAGE_SIZE)
        os.close(closed)                           # the lowest free fd number: nothing reuses it below
        cases = [((closed,), ErrorCode.INVALID_HANDLE), ((-1,), ErrorCode.INVALID_HANDLE),
                 (("3",), ErrorCode.INVALID_HANDLE), ((None,), ErrorCode.INVALID_HANDLE),
                 ((r,), ErrorCode.INVALID_ARGUMENT), ((s1.fileno(),), ErrorCode.INVALID_ARGUMENT),
                 ((dirfd,), ErrorCode.INVALID_ARGUMENT), ((ro,), ErrorCode.INVALID_ARGUMENT),
                 ((memfd, 2 * PAGE_SIZE + 1), ErrorCode.INVALID_ARGUMENT),          # too big
                 ((memfd, PAGE_SIZE, PAGE_SIZE + 1), ErrorCode.INVALID_ARGUMENT),   # offset + size past the end
                 ((memfd, 10, 3 * PAGE_SIZE), ErrorCode.INVALID_ARGUMENT),          # offset past the end
                 ((memfd, 10, -1), ErrorCode.INVALID_ARGUMENT),
                 ((memfd, 0), ErrorCode.INVALID_ARGUMENT), ((memfd, -5), ErrorCode.INVALID_ARGUMENT)]
        baseline = state(dev)
        for args, code in cases:
            with pytest.raises(NpuError) as err:
                dev.import_fd(*args)
            assert err.value.code == code, args
            assert state(dev) == baseline, args
        empty = user_memfd(0)
        with pytest.raises(NpuError) as err:
            dev.import_fd(empty)
        assert err.value.code == ErrorCode.INVALID_ARGUMENT
        for fd in (ro, memfd, empty, dirfd, r, w):
            os.close(fd)
    s1.close()
    s2.close()
    assert state(dev) == before
    keep.free()


def test_dma_alloc_is_known_to_the_device(dev):
    before = open_fds()
    dma = dma_alloc(10_000, cacheable=False)
    assert dma.device is dev                                   # the one open device
    assert dma.size == 10_000 and os.fstat(dma.fd).st_size == 3 * PAGE_SIZE
    assert dma.view().ctypes.data == dma.virt_addr
    dma.view(np.uint16)[:] = 0xABCD
    buf, off = dev.lookup_device(dma.phys_addr + 100)          # what create_mem_from_phys does
    assert buf is dma.buffer and off == 100
    assert buf.view(np.uint16)[50] == 0xABCD and not buf.cacheable
    assert dev.lookup_host(dma.virt_addr + 8) == (buf, 8)
    imported = dev.import_fd(dma.fd)                           # importing its fd shares the mapping
    assert imported.region is dma.buffer.region
    imported.free()
    st = dev.stats()
    assert st.imported_buffers == 1 and st.imported_bytes == 10_000 and dict(st.by_owner) == {"dma_alloc": (1, 10_000)}
    dma.close()
    dma.close()
    assert open_fds() == before
    assert dev.stats().imported_bytes == 0
    with pytest.raises(NpuError):
        dma.view()


def test_dma_alloc_keeps_its_device_alive():
    assert not [d for d in open_devices() if d.soc == "rk3568"]
    dev = open_device("rk3568")
    dma = dma_alloc(100, device=dev)
    dev.close()
    assert not dev.closed                                      # the dma buffer still holds a reference
    assert dev.lookup_device(dma.phys_addr)[0] is dma.buffer
    dma.close()
    assert dev.closed


def test_dma_alloc_opens_default_device_and_bad_sizes():
    for size in (0, -1, 1 << 60):
        with pytest.raises(NpuError) as err:
            dma_alloc(size)
        assert err.value.code == ErrorCode.INVALID_ARGUMENT
    if open_devices():
        pytest.skip("another device is open")
    with dma_alloc(4096) as dma:
        assert dma.device.soc == "rk3588"
    assert dma.device.closed
