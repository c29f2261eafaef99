"""Cross-process sharing: a buffer's fds sent with `socket.send_fds` are mapped by a child process; the child
writes while the parent reads and the reverse, in lock step over the socket."""
import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import open_fds
from npurt.memory import send_buffer

CHILD = textwrap.dedent("""
    import socket, sys
    import numpy as np
    from npurt.memory import recv_buffer
    sock = socket.socket(fileno=int(sys.argv[1]))
    view = recv_buffer(sock, np.uint32)
    n = view.size
    for step in range(1, int(sys.argv[2]) + 1):
        assert sock.recv(16) == b"parent-wrote"
        assert (view == 1000 + step).all(), (step, view[:4], view[-4:])   # sees the parent's writes
        view[:] = step                                                     # writes for the parent
        sock.sendall(b"child-wrote")
    sock.sendall(b"done %d" % n)
""")


def run_child(steps):
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(child.fileno()), str(steps)],
                            pass_fds=[child.fileno()])
    child.close()
    return parent, proc


@pytest.mark.parametrize("placement, size", [("ddr", 12_288), ("sram", 8192), ("sram_first", 2 << 20)])
def test_child_and_parent_share_memory_both_ways(dev, placement, size):
    hog = dev.alloc(dev.stats().sram_total - 64 * 1024, placement="sram") if placement == "sram_first" else None
    buf = dev.alloc(size, placement=placement)
    if placement == "sram_first":
        assert buf.placement == "sram+ddr"
    fds_before = open_fds()
    sock, proc = run_child(5)
    try:
        send_buffer(sock, buf)
        view = buf.view(np.uint32)
        for step in range(1, 6):
            view[:] = 1000 + step
            sock.sendall(b"parent-wrote")
            assert sock.recv(16) == b"child-wrote"
            assert (view == step).all()                   # the child's writes, seen by the parent
        assert sock.recv(32) == b"done %d" % (size // 4)
        assert proc.wait(timeout=30) == 0
    finally:
        sock.close()
        proc.wait(timeout=30)
    assert open_fds() == fds_before
    buf.free()
    if hog:
        hog.free()


def test_imported_window_is_sent_with_its_offset(dev):
    fd = os.memfd_create("user", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, 6 * 4096)
    buf = dev.import_fd(fd, 4 * 4096, 4096 + 64)
    buf.view(np.uint32)[:] = 1001
    sock, proc = run_child(1)
    try:
        send_buffer(sock, buf)
        sock.sendall(b"parent-wrote")
        assert sock.recv(16) == b"child-wrote"
        assert sock.recv(32) == b"done %d" % (buf.size // 4)
        assert proc.wait(timeout=30) == 0
        assert (buf.view(np.uint32) == 1).all()
        assert os.pread(fd, 4, 4096 + 64) == np.uint32(1).tobytes()
        assert os.pread(fd, 4, 4096 + 60) == bytes(4)        # nothing before the window was touched
    finally:
        sock.close()
        proc.wait(timeout=30)
    buf.free()
    os.close(fd)


def test_recv_from_a_closed_peer_or_garbage_is_invalid_argument():
    from npurt.errors import ErrorCode, NpuError
    from npurt.memory import recv_buffer
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    fd = os.memfd_create("garbage", os.MFD_ALLOW_SEALING)
    fds_before = open_fds()
    try:
        socket.send_fds(a, [b"not json"], [fd])
        with pytest.raises(NpuError) as err:
            recv_buffer(b)
        assert err.value.code == ErrorCode.INVALID_ARGUMENT
        assert open_fds() == fds_before                          # the received fd was closed
        a.close()
        with pytest.raises(NpuError) as err:                      # the peer is gone: no data at all
            recv_buffer(b)
        assert err.value.code == ErrorCode.INVALID_ARGUMENT
    finally:
        a.close()
        b.close()
        os.close(fd)
