"""Raw pointers and fds from a careless C caller: wild, freed, short and shrinking memory is a status code, never a
SIGSEGV / SIGBUS. Each probe runs in its own interpreter, so a crash shows as a signal (a negative return code)."""
from __future__ import annotations

import ctypes
import os
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import open_fds
from npurt.errors import ErrorCode, NpuError
from npurt.memory import raw
from helpers.models import convnet

PRELUDE = textwrap.dedent("""
    import ctypes, gc, mmap, os, sys
    import numpy as np
    from npurt.rknn import *
    from npurt.rknn.api_memory import mem_view
    model = open(sys.argv[1], "rb").read()
    ctx = rknn_context()
    assert rknn_init(ctx, model, len(model), 0, None) == 0
    x = np.ones((1, 3, 8, 10), np.float32)

    def inputs_set(buf, size=x.nbytes):
        inp = (rknn_input * 1)()
        inp[0].index, inp[0].buf, inp[0].size = 0, buf, size
        inp[0].type, inp[0].fmt = RKNN_TENSOR_FLOAT32, RKNN_TENSOR_NCHW
        return rknn_inputs_set(ctx, 1, inp)

    def outputs_get(buf, size):
        out = (rknn_output * 1)()
        out[0].index, out[0].want_float, out[0].is_prealloc, out[0].buf, out[0].size = 0, 1, 1, buf, size
        return rknn_outputs_get(ctx, 1, out, None)

    def unmapped_address():
        m = mmap.mmap(-1, 4 * 4096)
        addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
        gc.collect()
        m.close()
        return addr
""")


@pytest.fixture
def probe(tmp_path):
    """probe(body) runs PRELUDE + body in a fresh interpreter with the test model; (returncode, stdout, stderr)."""
    model = tmp_path / "m.onnx"
    model.write_bytes(convnet())

    def run(body: str) -> tuple[int, str, str]:
        proc = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(body), str(model)],
                              capture_output=True, text=True, timeout=120)
        return proc.returncode, proc.stdout, proc.stderr
    return run


def ok(result) -> str:
    code, out, err = result
    assert code == 0, f"probe died with {code} (a negative code is a signal)\n{out}\n{err}"
    return out


@pytest.mark.parametrize("addr", ["0x10", "unmapped_address()", "(1 << 47) + 0x1000", "-8"])
def test_inputs_set_wild_pointer_is_param_invalid(probe, addr):
    out = ok(probe(f"""
        ret = inputs_set({addr})
        print(ret)
        assert rknn_inputs_set(ctx, 1, None) != 0
        assert inputs_set(x.ctypes.data) == 0 and rknn_run(ctx, None) == 0    # the context still works
    """))
    assert out.split()[0] in (str(-5), str(-7))     # RKNN_ERR_PARAM_INVALID / RKNN_ERR_INPUT_INVALID (NULL)


def test_inputs_set_freed_runtime_buffer_is_refused(probe):
    out = ok(probe("""
        mem = rknn_create_mem(ctx, 4096)
        addr = mem.virt_addr
        assert rknn_destroy_mem(ctx, mem) == 0
        gc.collect()
        print(inputs_set(addr))
    """))
    assert out.split()[0] == str(-5)


def test_inputs_set_range_past_a_runtime_buffer_is_param_invalid(probe):
    code, out, err = probe("""
        mem = rknn_create_mem(ctx, 4096)
        print(inputs_set(mem.virt_addr, 49152))
        rknn_destroy_mem(ctx, mem)
    """)
    assert code == 0, err
    assert out.split()[0] == str(-5)
    assert "runs past the end" in err and "4096 bytes" in err


def test_outputs_get_wild_prealloc_buffer_is_param_invalid_and_writes_nothing(probe):
    out = ok(probe("""
        assert inputs_set(x.ctypes.data) == 0 and rknn_run(ctx, None) == 0
        print(outputs_get(0x10, 4 * 320))
        print(outputs_get(unmapped_address(), 4 * 320))
        mem = rknn_create_mem(ctx, 4096)
        mem_view(mem)[:] = 7
        print(outputs_get(mem.virt_addr + 4000, 4 * 320))        # fits the size field, not the buffer
        print(int((mem_view(mem) == 7).all()))
        y = np.zeros(320, np.float32)
        print(outputs_get(y.ctypes.data, y.nbytes), int(y.any()))
        rknn_destroy_mem(ctx, mem)
    """))
    assert out.split() == [str(-5), str(-5), str(-5), "1", "0", "1"]


def test_matmul_layout_takes_guarded_raw_addresses(probe):
    out = ok(probe("""
        from npurt.rknn.matmul import rknn_B_normal_layout_to_native_layout
        info = rknn_matmul_info(M=1, K=32, N=32, type=RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32)
        b = np.arange(32 * 32, dtype=np.float16)
        want, got = np.zeros_like(b), np.zeros_like(b)
        assert rknn_B_normal_layout_to_native_layout(b, want, 32, 32, info) == 0
        assert rknn_B_normal_layout_to_native_layout(b.ctypes.data, got.ctypes.data, 32, 32, info) == 0
        print(int((want == got).all()))
        print(rknn_B_normal_layout_to_native_layout(0x10, got.ctypes.data, 32, 32, info))
        print(rknn_B_normal_layout_to_native_layout(b.ctypes.data, unmapped_address(), 32, 32, info))
    """))
    assert out.split() == ["1", str(-5), str(-5)]


# --- fds -------------------------------------------------------------------------------------------------------
def test_from_fd_seals_an_unsealed_memfd_so_shrinking_cannot_crash(probe):
    out = ok(probe("""
        fd = os.memfd_create("user", os.MFD_ALLOW_SEALING)
        os.ftruncate(fd, 8192)
        mem = rknn_create_mem_from_fd(ctx, fd, 0, 4096, 4096)
        assert mem is not None
        try:
            os.ftruncate(fd, 0)
            print("shrunk")
        except PermissionError:
            print("sealed")
        mem_view(mem)[:] = 1
        print(rknn_destroy_mem(ctx, mem))
    """))
    assert out.split() == ["sealed", "0"]


@pytest.mark.parametrize("make", ["regular", "unsealable"])
def test_from_fd_refuses_an_fd_that_can_shrink(probe, make, tmp_path):
    opener = {"regular": f"os.open({str(tmp_path / 'f')!r}, os.O_RDWR | os.O_CREAT)",
              "unsealable": "os.memfd_create('user')"}[make]
    code, out, err = probe(f"""
        fd = {opener}
        os.ftruncate(fd, 8192)
        print(rknn_create_mem_from_fd(ctx, fd, 0, 4096, 0))
        os.ftruncate(fd, 0)                                      # nothing was mapped: no crash later either
    """)
    assert code == 0, err
    assert out.split() == ["None"]
    assert "F_SEAL_SHRINK" in err and "MFD_ALLOW_SEALING" in err


def test_from_fd_size_is_checked_against_the_fd(probe):
    code, out, err = probe("""
        fd = os.memfd_create("user", os.MFD_ALLOW_SEALING)
        os.ftruncate(fd, 4096)
        print(rknn_create_mem_from_fd(ctx, fd, 0, 8192, 0))
    """)
    assert code == 0 and out.split() == ["None"] and "past the end" in err


# --- recv_buffer ------------------------------------------------------------------------------------------------
def _recv(header: bytes, fds: list[int]):
    from npurt.memory import recv_buffer
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        socket.send_fds(a, [header], fds)
        return recv_buffer(b)
    finally:
        a.close()
        b.close()


def _memfd(size: int, sealing: bool = True) -> int:
    fd = os.memfd_create("peer", os.MFD_ALLOW_SEALING if sealing else 0)
    os.ftruncate(fd, size)
    return fd


@pytest.mark.parametrize("header, words", [
    (b'{"size": 65536, "parts": [[0, 65536]]}', "past the end"),           # claims more than the fd holds
    (b'{"size": 4096, "parts": [[-4096, 4096]]}', "offset >= 0"),
    (b'{"size": -1, "parts": [[0, 4096]]}', "size -1"),
    (b'{"size": 4096, "parts": [[0, -4096]]}', "length > 0"),
    (b'{"size": "4096", "parts": [[0, 4096]]}', "size '4096'"),
    (b'{"size": 4096, "parts": [["0", 4096]]}', "offset >= 0"),
    (b'{"size": 4096, "parts": [[0, 4096], [100, 4096]]}', "fd count"),
    (b'{"size": 100, "parts": "x"}', "fd count"),
    (b'[1, 2]', "header"),
])
def test_recv_buffer_bad_header_is_invalid_argument(header, words):
    fd = _memfd(8192)
    fds = open_fds()
    try:
        with pytest.raises(NpuError) as err:
            _recv(header, [fd])
        assert err.value.code == ErrorCode.INVALID_ARGUMENT and words in err.value.message
        assert open_fds() == fds
    finally:
        os.close(fd)


def test_recv_buffer_unaligned_second_part_and_pipe_fd_are_invalid_argument():
    a, b = _memfd(8192), _memfd(8192)
    r, w = os.pipe()
    try:
        with pytest.raises(NpuError, match="not page-aligned"):
            _recv(b'{"size": 8192, "parts": [[0, 4096], [100, 4096]]}', [a, b])
        with pytest.raises(NpuError, match="not an mmap-able file"):
            _recv(b'{"size": 4096, "parts": [[0, 4096]]}', [r])
        with pytest.raises(NpuError, match="could shrink"):
            unsealable = _memfd(4096, sealing=False)
            try:
                _recv(b'{"size": 4096, "parts": [[0, 4096]]}', [unsealable])
            finally:
                os.close(unsealable)
        with pytest.raises(NpuError, match="cannot receive"):
            from npurt.memory import recv_buffer
            recv_buffer("not a socket")
    finally:
        for fd in (a, b, r, w):
            os.close(fd)


def test_recv_buffer_seals_the_received_memfd():
    fd = _memfd(8192)
    try:
        view = _recv(b'{"size": 8192, "parts": [[0, 8192]]}', [fd])
        with pytest.raises(PermissionError):
            os.ftruncate(fd, 0)                    # the sender can no longer pull the memory from under the view
        view[:] = 3
        assert os.pread(fd, 2, 0) == b"\x03\x03"
    finally:
        os.close(fd)


# --- the guarded module itself ------------------------------------------------------------------------------------
def test_raw_reads_and_writes_refuse_unmapped_memory_and_npurt_overruns(dev):
    src = np.arange(64, dtype=np.uint8)
    assert (raw.read_bytes(src.ctypes.data, 64) == src).all()
    dst = np.zeros(64, np.uint8)
    raw.write_bytes(dst.ctypes.data, src)
    assert (dst == src).all()
    for bad in (0, 0x10, -1, 1 << 70, None, "0x10"):
        with pytest.raises(NpuError) as err:
            raw.read_bytes(bad, 8)
        assert err.value.code == ErrorCode.INVALID_ARGUMENT
    buf = dev.alloc(4096)
    try:
        with pytest.raises(NpuError, match="runs past the end"):
            raw.read_bytes(buf.virt_addr + 4000, 200)
        with pytest.raises(NpuError, match="runs past the end"):
            raw.write_bytes(buf.virt_addr, np.zeros(8192, np.uint8))
        assert not raw.safe_copy_in(buf.virt_addr, ctypes.create_string_buffer(8192), 8192)
        raw.check_writable(buf.virt_addr, 4096)
    finally:
        buf.free()
