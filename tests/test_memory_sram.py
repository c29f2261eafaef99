"""SRAM region: bitmap allocator, the debugfs dump byte for byte, SRAM-only and SRAM-first split buffers."""

import numpy as np
import pytest

from npurt.errors import ErrorCode, NpuError
from npurt.memory import PAGE_SIZE, format_sram_dump, open_device
from npurt.memory.sram import SramBitmap

from helpers.data import sram_dump

# The two dumps of the vendor's SRAM guide ("cat /sys/kernel/debug/rknpu/mm" on an RK3588), verbatim.
SEED_EMPTY, SEED_512K = sram_dump("empty"), sram_dump("512k")


def test_seed_dumps_are_consistent():
    """Guard the transcription: 239 pages of 4 KiB, 32 per row, and the totals agree with the marks."""
    for dump in (SEED_EMPTY, SEED_512K):
        lines = dump.splitlines()
        assert lines[0] == 'SRAM bitmap: "*" - used, "." - free (1bit = 4KB)' and len(lines) == 10
        marks = "".join(line[7:-1] for line in lines[1:9])
        assert [line[:7] for line in lines[1:9]] == [f"[{i:03d}] [" for i in range(8)] and len(marks) == 239
        used = marks.count("*") * 4096
        assert lines[9] == f"SRAM total size: 978944, used: {used}, free: {978944 - used}"
    assert SEED_512K.count("*") - SEED_EMPTY.count("*") == 128


def test_dump_empty_matches_seed(dev):
    assert dev.sram_dump() == SEED_EMPTY
    assert dev.stats().sram_total == 978944 == 239 * PAGE_SIZE


def test_dump_512k_used_matches_seed(dev):
    buf = dev.alloc(512 * 1024, placement="sram")
    assert dev.sram_dump() == SEED_512K
    assert dev.stats().sram_free == 454656
    buf.free()
    assert dev.sram_dump() == SEED_EMPTY


def test_dump_function_directly():
    assert format_sram_dump(bytes(239), 978944) == SEED_EMPTY
    assert format_sram_dump(b"\x01" * 128 + bytes(111), 978944) == SEED_512K


def test_rk3576_dump_shape():
    with open_device("rk3576") as dev:
        lines = dev.sram_dump().splitlines()
        assert lines[1:5] == ["[000] [" + "." * 32 + "]", "[001] [" + "." * 32 + "]",
                              "[002] [" + "." * 32 + "]", "[003] [" + "." * 24 + "]"]
        assert lines[-1] == "SRAM total size: 491520, used: 0, free: 491520"


def test_bitmap_first_fit_and_fragmentation():
    bm = SramBitmap(8 * PAGE_SIZE)
    a = bm.allocate(PAGE_SIZE)
    b = bm.allocate(2 * PAGE_SIZE)
    c = bm.allocate(1)
    assert (a, b, c) == (0, PAGE_SIZE, 3 * PAGE_SIZE)
    bm.release(b, 2 * PAGE_SIZE)
    assert bm.allocate(PAGE_SIZE) == PAGE_SIZE            # first fit
    assert bm.largest_free() == 4 * PAGE_SIZE
    assert bm.allocate_up_to(10 * PAGE_SIZE) == (4 * PAGE_SIZE, 4 * PAGE_SIZE)   # the largest run
    assert bm.allocate_up_to(PAGE_SIZE) == (2 * PAGE_SIZE, PAGE_SIZE)
    assert bm.allocate_up_to(PAGE_SIZE) == (0, 0)                               # full
    with pytest.raises(NpuError) as err:
        bm.allocate(1)
    assert err.value.code == ErrorCode.OUT_OF_MEMORY
    with pytest.raises(NpuError):
        SramBitmap(1000)


def test_bitmap_release_past_the_end_is_refused():
    bm = SramBitmap(2 * PAGE_SIZE)
    bm.allocate(PAGE_SIZE)
    b = bm.allocate(PAGE_SIZE)
    with pytest.raises(NpuError) as e:
        bm.release(b, 2 * PAGE_SIZE)        # page 1 is in use, page 2 does not exist
    assert e.value.code == ErrorCode.INVALID_HANDLE
    assert bm.pages == 2 and len(bm.dump().splitlines()[1]) == len("[000] [**]")
    assert bm.used == 2 * PAGE_SIZE
    bm.release(b, PAGE_SIZE)
    assert bm.used == PAGE_SIZE


def test_sram_buffer_lives_in_the_sram_memfd(dev):
    buf = dev.alloc(10_000, placement="sram")
    assert buf.placement == "sram" and buf.sram_size == 3 * PAGE_SIZE and buf.ddr_size == 0
    assert buf.fd == dev._sram_fd and buf.fd_offset == buf.sram_offset == 0
    assert dev.sram_addr(buf) == 0xFF001000
    buf.view()[:] = 0x5A
    import os
    assert os.pread(buf.fd, 3, buf.fd_offset) == b"ZZZ"
    second = dev.alloc(1, placement="sram")
    assert dev.sram_addr(second) == 0xFF001000 + 3 * PAGE_SIZE
    assert dev.stats().open_fds == 1                   # SRAM buffers open no fds of their own
    buf.free()
    second.free()


def test_one_file_sram_buffers_are_one_memfd_from_offset_0(dev):
    """one_file (a dma-buf as the driver hands it out): the whole buffer is one memfd of its own at offset 0, also
    when it spills into DDR; SRAM pages are reserved and counted as for any SRAM buffer."""
    import os
    hog = dev.alloc(700 * 1024, placement="sram")
    free_sram = dev.stats().sram_free
    whole = dev.alloc(3 * PAGE_SIZE, placement="sram_first", one_file=True)
    spilled = dev.alloc(free_sram + 2 * PAGE_SIZE, placement="sram_first", one_file=True)
    assert (whole.placement, whole.sram_size, whole.ddr_size) == ("sram", 3 * PAGE_SIZE, 0)
    assert (spilled.placement, spilled.sram_size, spilled.ddr_size) == ("sram+ddr", free_sram - 3 * PAGE_SIZE,
                                                                         5 * PAGE_SIZE)
    assert dev.stats().sram_free == 0
    for buf in (whole, spilled):
        assert buf.fd not in (-1, dev._sram_fd) and buf.fd_offset == 0 and buf.fd_parts == ((buf.fd, 0, buf.capacity),)
        buf.view()[:] = 0x33
        assert os.pread(buf.fd, buf.size, 0) == b"\x33" * buf.size
    assert dev.sram_addr(whole) == 0xFF001000 + 700 * 1024
    for buf in (whole, spilled, hog):
        buf.free()
    assert dev.stats().sram_free == dev.stats().sram_total and dev.stats().open_fds == 1


def test_sram_exhaustion_is_clean(dev):
    big = dev.alloc(900 * 1024, placement="sram")
    before = (dev.sram_dump(), dev.stats().as_dict())
    with pytest.raises(NpuError) as err:
        dev.alloc(100 * 1024, placement="sram")
    assert err.value.code == ErrorCode.OUT_OF_MEMORY
    after = dev.stats().as_dict()
    assert dev.sram_dump() == before[0]
    assert {k: v for k, v in after.items() if k not in ("allocations", "releases")} == \
           {k: v for k, v in before[1].items() if k not in ("allocations", "releases")}
    big.free()


def test_sram_first_fits_entirely(dev):
    buf = dev.alloc(100 * 1024, placement="sram_first")
    assert buf.placement == "sram" and buf.sram_size == 100 * 1024
    buf.free()


def test_split_buffer_is_contiguous_in_host_and_device_space(dev):
    hog = dev.alloc(700 * 1024, placement="sram")
    free_sram = dev.stats().sram_free                      # 256 KiB left
    size = 1 << 20
    buf = dev.alloc(size, placement="sram_first")
    assert buf.placement == "sram+ddr"
    assert buf.sram_size == free_sram and buf.ddr_size == size - free_sram
    assert buf.fd == -1 and len(buf.fd_parts) == 2
    (sfd, soff, slen), (dfd, doff, dlen) = buf.fd_parts
    assert (sfd, soff, slen) == (dev._sram_fd, 700 * 1024, free_sram) and doff == 0 and dlen == size - free_sram
    # one numpy view spans both pieces
    view = buf.view(np.uint32)
    view[:] = np.arange(size // 4, dtype=np.uint32)
    import os
    boundary = free_sram // 4
    assert np.frombuffer(os.pread(sfd, 8, soff + free_sram - 8), np.uint32).tolist() == [boundary - 2, boundary - 1]
    assert np.frombuffer(os.pread(dfd, 8, 0), np.uint32).tolist() == [boundary, boundary + 1]
    # device addresses are contiguous: any address in the buffer resolves with its offset
    for off in (0, free_sram - 1, free_sram, size - 4):
        assert dev.lookup_device(buf.dev_addr + off) == (buf, off)
        assert dev.lookup_host(buf.virt_addr + off) == (buf, off)
    crossing = dev.view_at(buf.virt_addr + free_sram - 8, 16, np.uint32)
    assert crossing.tolist() == [boundary - 2, boundary - 1, boundary, boundary + 1]
    st = dev.stats()
    assert st.sram_free == 0 and st.ddr_bytes == size - free_sram and st.open_fds == 2
    buf.free()
    hog.free()
    st = dev.stats()
    assert (st.sram_bytes, st.ddr_bytes, st.open_fds, st.domain_used) == (0, 0, 1, 0)
    assert view[boundary] == boundary                      # still mapped while the view lives


def test_sram_first_when_sram_is_full_goes_to_ddr(dev):
    hog = dev.alloc(dev.stats().sram_total, placement="sram")
    buf = dev.alloc(10_000, placement="sram_first")
    assert buf.placement == "ddr" and buf.sram_size == 0 and buf.fd >= 0
    buf.free()
    hog.free()


def test_split_buffer_respects_ddr_limit():
    with open_device("rk3576", ddr_limit=PAGE_SIZE) as dev:
        hog = dev.alloc(470 * 1024, placement="sram")      # leaves 10 KiB -> 2 pages
        before = dev.sram_dump()
        with pytest.raises(NpuError) as err:
            dev.alloc(5 * PAGE_SIZE, placement="sram_first")  # needs 3 DDR pages
        assert err.value.code == ErrorCode.OUT_OF_MEMORY
        assert dev.sram_dump() == before                   # the SRAM it took was given back
        ok = dev.alloc(3 * PAGE_SIZE, placement="sram_first")
        assert ok.placement == "sram+ddr" and ok.ddr_size == PAGE_SIZE
        ok.free()
        hog.free()
