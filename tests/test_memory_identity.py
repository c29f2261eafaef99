"""Buffer identity (`npurt.memory.identity`, `Buffer.file_ranges`): read once when a buffer is made, the same for
every buffer over the same file bytes, unchanged when the fd that named it is closed and its number reused."""
import ctypes
import mmap
import os

import pytest

from npurt.errors import ErrorCode, NpuError
from npurt.memory import PAGE_SIZE
from npurt.memory.identity import file_id, merged, overlaps


def _memfd(pages: int) -> int:
    fd = os.memfd_create("identity-test", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, pages * PAGE_SIZE)
    return fd


def test_owned_buffer_is_its_memfd(dev):
    buf = dev.alloc(3 * PAGE_SIZE)
    dev_, ino = file_id(buf.fd)
    assert buf.files == ((dev_, ino),)
    assert buf.file_ranges() == ((dev_, ino, 0, 3 * PAGE_SIZE),)
    assert buf.file_ranges(100, 50) == ((dev_, ino, 100, 150),)
    with pytest.raises(NpuError) as err:
        buf.file_ranges(2 * PAGE_SIZE, 2 * PAGE_SIZE)          # past the fds behind it
    assert err.value.code == ErrorCode.INVALID_ARGUMENT
    buf.free()
    assert buf.file_ranges(100, 50) == ((dev_, ino, 100, 150),)     # a freed buffer still says what it was


def test_split_buffer_has_one_range_per_file(dev):
    hog = dev.alloc(700 * 1024, placement="sram")
    buf = dev.alloc(1 << 20, placement="sram_first")
    (sfd, soff, slen), (dfd, _, _) = buf.fd_parts
    sram, ddr = file_id(sfd), file_id(dfd)
    assert buf.file_ranges(slen - 8, 16) == ((*sram, soff + slen - 8, soff + slen), (*ddr, 0, 8))
    assert not overlaps(buf.file_ranges(), hog.file_ranges())          # the same SRAM file, other pages
    assert overlaps(buf.file_ranges(0, 1), (sram + (soff, soff + 1),))
    buf.free()
    hog.free()


def test_composite_is_the_bytes_of_its_pieces(dev):
    a, b = dev.alloc(2 * PAGE_SIZE), dev.alloc(PAGE_SIZE)
    comp = dev.compose([(a, PAGE_SIZE, PAGE_SIZE), (b, 0, 100)])
    assert comp.file_ranges() == a.file_ranges(PAGE_SIZE, PAGE_SIZE) + b.file_ranges(0, 100)
    whole = dev.compose([(a, 0, PAGE_SIZE), (a, PAGE_SIZE, PAGE_SIZE)])    # two adjacent pieces of one file
    assert whole.file_ranges() == a.file_ranges()                        # merged: equal memory, equal ranges
    for buf in (whole, comp, b, a):
        buf.free()


def test_imports_of_one_file_are_the_same_memory_and_survive_fd_reuse(dev):
    fd = _memfd(4)
    second = os.dup(fd)
    a = dev.import_fd(fd, 2 * PAGE_SIZE)
    b = dev.import_fd(second, PAGE_SIZE, PAGE_SIZE)
    want = a.file_ranges(PAGE_SIZE, PAGE_SIZE)
    assert b.file_ranges() == want and overlaps(a.file_ranges(), b.file_ranges())
    os.close(fd)                                     # the user closes the fd a was imported through ...
    other = _memfd(4)                                # ... and the number goes to another file
    try:
        assert a.file_ranges(PAGE_SIZE, PAGE_SIZE) == want           # read once: still the first file
        assert b.backed_by(second) and not a.backed_by(fd) and a.backed_by(second)
        c = dev.import_fd(other)
        assert not overlaps(c.file_ranges(), a.file_ranges())
        c.free()
    finally:
        a.free()
        b.free()
        os.close(second)
        os.close(other)


def test_merged_and_overlaps():
    assert merged([(1, 2, 0, 10), (1, 2, 10, 20), (1, 3, 20, 30), (1, 2, 30, 40)]) == \
        ((1, 2, 0, 20), (1, 3, 20, 30), (1, 2, 30, 40))
    assert overlaps([(1, 2, 0, 10)], [(1, 2, 9, 12)]) and not overlaps([(1, 2, 0, 10)], [(1, 2, 10, 12)])
    assert not overlaps([(1, 2, 0, 10)], [(1, 3, 0, 10)]) and not overlaps([], [(1, 2, 0, 10)])


def test_holds_a_buffers_views_and_the_callers_own_mapping(dev):
    buf = dev.alloc(2 * PAGE_SIZE)
    want = buf.file_ranges(PAGE_SIZE, 64)
    assert dev.holds(buf.virt_addr + PAGE_SIZE, want) and dev.holds(buf.device_virt_addr + PAGE_SIZE, want)
    assert not dev.holds(buf.virt_addr, want) and not dev.holds(buf.virt_addr + PAGE_SIZE, ())
    own = mmap.mmap(buf.fd, 2 * PAGE_SIZE)                             # the caller's own shared mapping
    private = mmap.mmap(buf.fd, 2 * PAGE_SIZE, flags=mmap.MAP_PRIVATE)  # a copy: not the same memory
    try:
        addr = ctypes.addressof(ctypes.c_char.from_buffer(own))
        assert dev.holds(addr + PAGE_SIZE, want) and not dev.holds(addr, want)
        assert not dev.holds(ctypes.addressof(ctypes.c_char.from_buffer(private)) + PAGE_SIZE, want)
    finally:
        own.close()
        private.close()
    buf.free()
