"""Random sequences of alloc / free / import / dma / split-alloc / sync / send-to-child / bad calls never crash,
never leak an fd, keep the accounting equal to a model, and end at zero after teardown."""
import gc
import os
import socket
import subprocess
import sys
import tempfile

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, initialize, invariant, rule

from npurt.errors import ErrorCode, NpuError
from npurt.memory import PAGE_SIZE, dma_alloc, open_device, open_devices, page_round, raw, send_buffer
from conftest import open_fds

DOMAIN_PAGES = 96
CHILD = (
    "import json, os, socket, sys\n"
    "s = socket.socket(fileno=int(sys.argv[1]))\n"
    "msg, fds, _, _ = socket.recv_fds(s, 4096, 8)\n"
    "(off, length) = json.loads(msg)['parts'][0]\n"
    "first = os.pread(fds[0], 1, off)\n"
    "os.pwrite(fds[0], b'\\xab', off)\n"
    "s.sendall(first)\n"
)


def _fd_names() -> list[str]:
    """What each open descriptor of this process points at (for the message of a leak)."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            out.append(f"{fd}->{os.readlink(f'/proc/self/fd/{fd}')}")
        except OSError:
            pass
    return out


class MemoryMachine(RuleBasedStateMachine):
    buffers = Bundle("buffers")

    def __init__(self):
        super().__init__()
        self.dev = None
        self.live = {}            # handle -> (Buffer, expected byte at 0 or None)
        self.freed = []
        self.user_fds = []
        self.dmas = []
        self.children = 0

    @initialize(mode=st.sampled_from(["coherent", "strict", "check"]), limit=st.sampled_from([None, 40 * PAGE_SIZE]))
    def open(self, mode, limit):
        assert not [d for d in open_devices() if d.soc == "rk3588"], "a device was left open"
        gc.collect()                        # garbage of earlier tests must not close its fds during this one
        self.fds_before = open_fds()
        self.fd_names = _fd_names()
        self.dev = open_device("rk3588", coherence=mode, ddr_limit=limit, domain_size=DOMAIN_PAGES * PAGE_SIZE)

    def _state(self):
        st_ = self.dev.stats().as_dict()
        st_.pop("allocations"), st_.pop("releases")
        return st_, self.dev.sram_dump(), open_fds()

    def _expect_error(self, fn, *codes):
        before = self._state()
        try:
            result = fn()
        except NpuError as err:
            assert err.code is not ErrorCode.INTERNAL, err          # npurt's own invariant never breaks
            assert err.code in codes, err
            assert self._state() == before
            return None
        return result

    def _refused(self, fn, *codes) -> None:
        """`fn` must fail with one of `codes` and change nothing (what a dead object or a bad argument gets)."""
        before = self._state()
        with pytest.raises(NpuError) as err:
            fn()
        assert err.value.code in codes, err.value
        assert self._state() == before

    @rule(target=buffers, size=st.integers(1, 20 * PAGE_SIZE) | st.sampled_from([0, -3, 1 << 50]),
          placement=st.sampled_from(["ddr", "sram", "sram_first"]), cacheable=st.booleans())
    def alloc(self, size, placement, cacheable):
        buf = self._expect_error(lambda: self.dev.alloc(size, placement=placement, cacheable=cacheable),
                                 ErrorCode.OUT_OF_MEMORY, ErrorCode.INVALID_ARGUMENT)
        if buf is None:
            assert not (0 < size <= 20 * PAGE_SIZE and placement == "ddr"), "a small DDR allocation was refused"
            return None
        assert size > 0 and buf.size == size
        self.live[buf.handle] = buf
        return buf

    @rule(target=buffers, pages=st.integers(1, 6), offset=st.integers(0, 3 * PAGE_SIZE), size=st.integers(-1, 5 * PAGE_SIZE),
          kind=st.sampled_from(["sealable", "sealable", "unsealable", "regular"]))
    def import_fd(self, pages, offset, size, kind):
        if kind == "regular":
            fd = os.open(tempfile.gettempdir(), os.O_TMPFILE | os.O_RDWR)
        else:
            fd = os.memfd_create("user", os.MFD_ALLOW_SEALING if kind == "sealable" else 0)
        os.ftruncate(fd, pages * PAGE_SIZE)
        self.user_fds.append(fd)
        buf = self._expect_error(lambda: self.dev.import_fd(fd, size, offset),
                                 ErrorCode.OUT_OF_MEMORY, ErrorCode.INVALID_ARGUMENT)
        if buf is None:
            return None
        assert 0 < size and offset + size <= pages * PAGE_SIZE and kind == "sealable"
        self.live[buf.handle] = buf
        return buf

    @rule(buf=buffers)
    def shrink_imported_fd(self, buf):
        """Whoever holds an imported fd cannot shrink it under the mapping (it was sealed at import)."""
        if buf is None or not buf.alive or not buf.imported or buf.fd not in self.user_fds:
            return
        try:
            os.ftruncate(buf.fd, 0)
            raise AssertionError("an imported fd was shrunk")
        except PermissionError:
            pass
        buf.view()[-1] = 7                                  # still all mapped

    @rule(buf=buffers, delta=st.integers(-64, 2 * PAGE_SIZE), size=st.integers(0, 3 * PAGE_SIZE),
          write=st.booleans())
    def raw_access(self, buf, delta, size, write):
        """npurt.memory.raw on addresses in, past the end of, or before live and freed buffers: the range must lie
        inside the buffer it starts in, and nothing crashes."""
        if buf is None:
            return
        addr = buf.virt_addr + delta
        starts_inside = buf.alive and 0 <= delta < buf.capacity
        write = write and starts_inside       # a write elsewhere would land in the interpreter's own memory
        try:
            if write:
                raw.write_bytes(addr, np.zeros(size, np.uint8))
            else:
                assert raw.read_bytes(addr, size).size == size
            ok = True
        except NpuError as err:
            assert err.code == ErrorCode.INVALID_ARGUMENT
            ok = False
        if buf.alive and 0 <= delta and delta + max(size, 1) <= buf.capacity:
            assert ok

    @rule(size=st.integers(1, 3 * PAGE_SIZE))
    def dma(self, size):
        try:
            d = dma_alloc(size, device=self.dev)
        except NpuError as err:
            assert err.code == ErrorCode.OUT_OF_MEMORY
            return
        assert self.dev.lookup_device(d.phys_addr) == (d.buffer, 0)
        self.dmas.append(d)
        self.live[d.buffer.handle] = d.buffer

    @rule()
    def close_dma(self):
        if self.dmas:
            d = self.dmas.pop()
            del self.live[d.buffer.handle]
            d.close()

    @rule(buf=consumes(buffers))
    def free(self, buf):
        if buf is None or buf.handle not in self.live:
            return
        del self.live[buf.handle]
        buf.free()
        self.freed.append(buf)

    @rule()
    def double_free(self):
        if self.freed:
            self._refused(lambda: self.dev.free(self.freed[-1]), ErrorCode.INVALID_HANDLE)

    @rule(buf=buffers, mode=st.sampled_from([1, 2, 3]), value=st.integers(0, 255))
    def write_sync_read(self, buf, mode, value):
        if buf is None or not buf.alive:
            return
        buf.view()[0] = value
        buf.sync(mode)
        if self.dev.coherence != "strict" or not buf.cacheable or mode & 1:
            assert buf.device_view()[0] == value
        if self.dev.coherence == "check" and buf.cacheable and mode & 1:
            assert not buf.cpu_written_since_sync()

    @rule(buf=buffers, delta=st.integers(-2, 2 * PAGE_SIZE))
    def lookups(self, buf, delta):
        if buf is None or not buf.alive:
            return
        if 0 <= delta < buf.capacity:
            assert self.dev.lookup_device(buf.dev_addr + delta) == (buf, delta)
            found, off = self.dev.lookup_host(buf.virt_addr + delta)
            assert found.region is buf.region and found.virt_addr + off == buf.virt_addr + delta
            assert self.dev.view_at(buf.virt_addr + delta, 1).ctypes.data == buf.virt_addr + delta
        elif delta < 0 and not buf.imported:
            found = self._expect_error(lambda: self.dev.lookup_device(buf.dev_addr + delta), ErrorCode.INVALID_HANDLE)
            assert found is None or found[0] is not buf          # before the buffer: another buffer's, or none

    @rule(buf=buffers)
    def send_to_child(self, buf):
        if buf is None or not buf.alive or self.children >= 1:
            return
        self.children += 1
        buf.sync(1)
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        proc = subprocess.Popen([sys.executable, "-c", CHILD, str(child.fileno())], pass_fds=[child.fileno()])
        child.close()
        expected = bytes(buf.device_view()[:1])
        try:
            send_buffer(parent, buf)
            assert parent.recv(1) == expected
        finally:
            parent.close()
            assert proc.wait(timeout=30) == 0
        assert buf.device_view()[0] == 0xAB

    @invariant()
    def accounting_matches_model(self):
        if self.dev is None:
            return
        st_ = self.dev.stats()
        owned = [b for b in self.live.values() if not b.imported]
        assert st_.buffers == len(self.live)
        assert st_.ddr_bytes == sum(b.ddr_size for b in owned)
        assert st_.sram_bytes == sum(b.sram_size for b in owned)
        assert st_.sram_bytes == self.dev.sram_dump().split("\n", 1)[1].count("*") * PAGE_SIZE
        assert st_.imported_bytes == sum(b.size for b in self.live.values() if b.imported)
        assert st_.open_fds == 1 + sum(1 for b in owned if b.ddr_size)
        assert st_.domain_used <= DOMAIN_PAGES * PAGE_SIZE
        assert all(b.ddr_size + b.sram_size == page_round(b.size) for b in owned)

    def teardown(self):
        if self.dev is None:
            return
        for d in self.dmas:
            d.close()
        for buf in list(self.live.values()):
            if buf.alive:
                buf.free()
        leaks = self.dev.close()
        for fd in self.user_fds:
            os.close(fd)
        assert leaks == []
        st_ = self.dev.stats()
        assert (st_.buffers, st_.ddr_bytes, st_.sram_bytes, st_.imported_bytes, st_.open_fds, st_.domain_used) == \
               (0, 0, 0, 0, 0, 0)
        assert self.dev.closed
        gc.collect()
        assert open_fds() == self.fds_before, f"opened and not closed: {sorted(set(_fd_names()) - set(self.fd_names))}"


MemoryMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=25, deadline=None,
                                           suppress_health_check=[HealthCheck.too_slow])
TestMemoryMachine = MemoryMachine.TestCase


def test_teardown_with_leftovers_releases_everything():
    before = open_fds()
    dev = open_device("rk3588", coherence="strict")
    dev.alloc(5000)
    dev.alloc(300 * 1024, placement="sram_first")
    fd = os.memfd_create("u", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, 8192)
    dev.import_fd(fd)
    leaks = dev.close()
    os.close(fd)
    assert len(leaks) == 3 and open_fds() == before
    np.testing.assert_equal(dev.stats().buffers, 0)
