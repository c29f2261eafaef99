"""The hostile-host cases whose cause lies in the mirrors, from Python (the C programs of test_capi_hostile make
the same calls through the libraries): fork after rknn_init, a reused fd number, code pointers that are not code,
a half-mapped graphExecute output."""
from __future__ import annotations

import ctypes
import mmap
import os

import numpy as np
import pytest

import npurt.qnn as q
from npurt.rknn import *  # noqa: F403
from npurt.rknn import constants as c
from helpers.qnn import binary, code, htp, ok, raw_tensors, sample  # noqa: F401
from helpers.rknn import general_run, init

_libc = ctypes.CDLL(None, use_errno=True)


def _x() -> np.ndarray:
    return np.random.default_rng(22).standard_normal((1, 3, 8, 10)).astype(np.float32)


@pytest.mark.timeout(120)
def test_fork_child_refuses_inherited_context_and_runs_a_fresh_one():
    ctx = init()
    want = general_run(ctx, _x())[0]
    pid = os.fork()
    if pid == 0:                                   # the child: exit code says what went wrong
        status = 0
        try:
            if rknn_run(ctx, None) != RKNN_ERR_CTX_INVALID:
                status = 10
            fresh = init()
            if not np.array_equal(general_run(fresh, _x())[0], want):
                status = 11
            rknn_destroy(fresh)
        except BaseException:                      # noqa: BLE001 - any escape is a failure of the child
            status = 12
        os._exit(status)
    for _ in range(5):                             # the parent's context is its own
        assert np.array_equal(general_run(ctx, _x())[0], want)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    assert rknn_destroy(ctx) == RKNN_SUCC


def test_destroy_mem_leaves_a_reused_fd_number_open():
    ctx = init()
    mem = rknn_create_mem(ctx, 4096)
    fd = mem.fd
    mine = os.open(os.devnull, os.O_WRONLY)
    os.dup2(mine, fd)                              # the caller closed fd; its number now names the caller's file
    os.close(mine)
    assert rknn_destroy_mem(ctx, mem) == RKNN_SUCC
    assert os.path.samefile(f"/proc/self/fd/{fd}", os.devnull)
    os.close(fd)
    assert rknn_destroy(ctx) == RKNN_SUCC


@pytest.mark.parametrize("field", ["init", "compute", "destroy"])
def test_custom_op_code_pointer_that_is_not_code(field):
    ctx = init()
    data = ctypes.create_string_buffer(64)
    for bogus in (0x10, ctypes.addressof(data)):
        ops = (rknn_custom_op * 1)()
        ops[0].op_type, ops[0].version, ops[0].target = b"cstBogus", 1, c.RKNN_TARGET_TYPE_CPU
        good = RKNN_CUSTOM_OP_CALLBACK(lambda *args: 0)
        ops[0].compute = good
        kind = RKNN_CUSTOM_OP_DESTROY_CALLBACK if field == "destroy" else RKNN_CUSTOM_OP_CALLBACK
        setattr(ops[0], field, ctypes.cast(bogus, kind))
        assert rknn_register_custom_ops(ctx, ops, 1) == RKNN_ERR_PARAM_INVALID
    assert rknn_destroy(ctx) == RKNN_SUCC


def test_graph_execute_writes_nothing_into_a_half_mapped_output(htp):  # noqa: F811
    ctx = htp.context()
    graph = htp.graph(ctx)
    x, _ = sample()
    ins, outs, _ = raw_tensors(binary(), x)
    nbytes = outs[0].v1.clientBuf.dataSize
    pages = -(-nbytes // mmap.PAGESIZE) + 1
    area = mmap.mmap(-1, pages * mmap.PAGESIZE)
    base = ctypes.addressof(ctypes.c_char.from_buffer(area))
    last = base + (pages - 1) * mmap.PAGESIZE
    area[:(pages - 1) * mmap.PAGESIZE] = b"\xab" * ((pages - 1) * mmap.PAGESIZE)
    assert _libc.mprotect(ctypes.c_void_p(last), mmap.PAGESIZE, 0) == 0          # PROT_NONE
    outs[0].v1.clientBuf.data = last - (nbytes - 16)                            # its last 16 bytes unmapped
    assert code(htp.qi.graphExecute(graph, ins, 1, outs, 1, None, None)) == q.QNN_GRAPH_ERROR_INVALID_TENSOR
    assert area[:(pages - 1) * mmap.PAGESIZE] == b"\xab" * ((pages - 1) * mmap.PAGESIZE)
    assert _libc.mprotect(ctypes.c_void_p(last), mmap.PAGESIZE, 3) == 0
    ok(htp.qi.contextFree(ctx, None))


@pytest.mark.parametrize("past", [0, 10])
def test_real_model_offset_at_or_past_the_end_is_a_parameter_error(past):
    from helpers.models import convnet
    data = convnet()
    ext = rknn_init_extend(real_model_offset=len(data) + past)
    assert rknn_init(rknn_context(), data, len(data), 0, ext) == RKNN_ERR_PARAM_INVALID


def test_session_refuses_a_complex_input():
    import npurt
    from npurt.errors import NpuError
    from helpers.models import convnet
    with npurt.Session(convnet()) as s:
        with pytest.raises(NpuError) as err:
            s.run(_x().astype(np.complex64))
    assert "complex64" in err.value.message


def test_numpy_integer_context_and_set_io_mem_fields_that_contradict_the_model():
    from helpers.rknn import attr
    ctx = init()
    io = rknn_input_output_num()
    assert rknn_query(np.int64(ctx.value), RKNN_QUERY_IN_OUT_NUM, io, ctypes.sizeof(io)) == RKNN_SUCC
    for field, value in (("index", 99), ("n_dims", 0), ("size_with_stride", 0)):
        a = attr(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR)
        mem = rknn_create_mem(ctx, a.size_with_stride)
        setattr(a, field, value)
        assert rknn_set_io_mem(ctx, mem, a) == RKNN_ERR_PARAM_INVALID, field
        setattr(a, field, getattr(attr(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR), field))
        assert rknn_set_io_mem(ctx, mem, a) == RKNN_SUCC                      # the queried attr binds
        assert rknn_destroy_mem(ctx, mem) == RKNN_SUCC
    assert rknn_destroy(ctx) == RKNN_SUCC


@pytest.mark.parametrize("dtype", ["V0", object, "no-such-dtype"])
def test_mem_view_refuses_dtypes_without_a_fixed_size(dtype):
    from npurt.errors import NpuError
    from npurt.rknn.api_memory import mem_view
    ctx = init()
    mem = rknn_create_mem(ctx, 64)
    with pytest.raises(NpuError):
        mem_view(mem, dtype)
    assert rknn_destroy_mem(ctx, mem) == RKNN_SUCC
    assert rknn_destroy(ctx) == RKNN_SUCC


def test_rpcmem_messages_show_pointers_as_c_does(caplog):
    import logging
    with caplog.at_level(logging.DEBUG, logger="npurt.qnn"):
        q.rpcmem_free(-1)
    assert "0xffffffffffffffff" in caplog.text and "0x-" not in caplog.text


def test_send_buffer_to_a_dead_peer_is_an_npu_error():
    import socket
    from npurt.errors import NpuError
    from npurt.memory import open_device, send_buffer
    device = open_device("rk3588")
    buf = device.alloc(4096, owner="test", name="send")
    mine, peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    peer.close()
    try:
        with pytest.raises(NpuError) as err:
            send_buffer(mine, buf)
        assert "cannot send" in err.value.message
    finally:
        mine.close()
        device.free(buf)
        device.close()
