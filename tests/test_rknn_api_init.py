"""RKNN mirror: rknn_init (every flag, every model source, errors), rknn_dup_context, rknn_destroy, rknn_query (all
20 commands of seed table 3-2, size/type/index validation, platform gating), logging levels. Every failure is
checked for its status, its `E RKNN:` line, and that nothing else changed."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from npurt.memory import open_device
from npurt.rknn import *  # noqa: F403 - the mirror is meant to be used like the C header
from npurt.rknn.api import context_of
from helpers.models import convnet, convnet_other, dynamic_convnet, npurt_bytes, two_io
from helpers.rknn import errline, init, query, state


pytestmark = pytest.mark.usefixtures("no_leaks")   # every fd, device buffer, byte and handle given back


# --- rknn_init ----------------------------------------------------------------------------------------------------
def test_init_from_bytes_path_and_npurt(tmp_path):
    p = tmp_path / "m.onnx"
    p.write_bytes(convnet())
    for model in (convnet(), str(p), npurt_bytes()):
        ctx = init(model)
        io = rknn_input_output_num()
        assert query(ctx, RKNN_QUERY_IN_OUT_NUM, io) == RKNN_SUCC and (io.n_input, io.n_output) == (1, 1)
        assert rknn_destroy(ctx) == RKNN_SUCC


def test_init_real_model_offset_and_size():
    data = b"\0" * 100 + convnet() + b"junk"
    ext = rknn_init_extend(real_model_offset=100, real_model_size=len(convnet()))
    ctx = rknn_context()
    assert rknn_init(ctx, data, len(data), 0, ext) == RKNN_SUCC
    rknn_destroy(ctx)
    ext = rknn_init_extend(real_model_offset=100, real_model_size=len(data))
    assert rknn_init(rknn_context(), data, len(data), 0, ext) == RKNN_ERR_PARAM_INVALID


@pytest.mark.parametrize("model,size,status,words", [
    (b"garbage bytes", 13, RKNN_ERR_MODEL_INVALID, ["neither"]),
    ("/nonexistent.onnx", 0, RKNN_ERR_MODEL_INVALID, ["does not exist"]),
    (None, 0, RKNN_ERR_PARAM_INVALID, ["model is NULL"]),
    (b"abc", 10, RKNN_ERR_PARAM_INVALID, ["larger than"]),
    (3.5, 4, RKNN_ERR_PARAM_INVALID, ["model must be"]),
    (0xDEAD000, 64, RKNN_ERR_PARAM_INVALID, ["not inside any buffer"]),
])
def test_init_errors(capsys, model, size, status, words):
    before = state()
    ctx = rknn_context()
    assert rknn_init(ctx, model, size, 0, None) == status
    assert ctx.value == 0 and state() == before
    errline(capsys, "rknn_init", *words)


def test_init_for_another_platform(capsys):
    ctx = rknn_context()
    data = npurt_bytes("rk3568")
    assert rknn_init(ctx, data, len(data), 0, None) == RKNN_ERR_TARGET_PLATFORM_UNMATCH
    assert ctx.value == 0
    errline(capsys, "compiled for rk3568")


def test_init_ctx_must_be_an_out_parameter(capsys):
    assert rknn_init(None, convnet(), len(convnet()), 0, None) == RKNN_ERR_PARAM_INVALID
    assert rknn_init(5, convnet(), len(convnet()), 0, None) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "rknn_context")
    ctx = rknn_context()
    assert rknn_init(ctypes.byref(ctx), convnet(), len(convnet()), 0, None) == RKNN_SUCC   # &ctx works too
    rknn_destroy(ctx)


def test_flags_map_onto_the_context():
    flag = (RKNN_FLAG_PRIOR_LOW | RKNN_FLAG_COLLECT_PERF_MASK | RKNN_FLAG_ENABLE_SRAM
            | RKNN_FLAG_DISABLE_FLUSH_INPUT_MEM_CACHE | RKNN_FLAG_DISABLE_FLUSH_OUTPUT_MEM_CACHE)
    ctx = init(flag=flag)
    o = context_of(ctx).options
    assert (o.priority, o.collect_perf, o.sram, o.flush_inputs, o.invalidate_outputs) == ("low", True, True, False,
                                                                                          False)
    rknn_destroy(ctx)
    ctx = init(flag=RKNN_FLAG_PRIOR_MEDIUM | RKNN_FLAG_MEM_ALLOC_OUTSIDE)
    o = context_of(ctx).options
    assert (o.priority, o.weights_outside, o.internal_outside) == ("medium", True, True)
    rknn_destroy(ctx)
    ctx = init(flag=RKNN_FLAG_INTERNAL_ALLOC_OUTSIDE)
    o = context_of(ctx).options
    assert (o.weights_outside, o.internal_outside) == (False, True)
    rknn_destroy(ctx)


@pytest.mark.parametrize("flag,words", [
    (RKNN_FLAG_SHARE_SRAM | RKNN_FLAG_ENABLE_SRAM, "RKNN_FLAG_SHARE_SRAM is not implemented yet"),
    (RKNN_FLAG_ASYNC_MASK, "RKNN_FLAG_ASYNC_MASK is not supported"),
    (RKNN_FLAG_FENCE_IN_OUTSIDE, "not supported: runs are synchronous"),
    (RKNN_FLAG_EXECUTE_FALLBACK_PRIOR_DEVICE_GPU, "no GPU"),
    (1 << 30, "unknown flag bits"),
])
def test_flags_the_runtime_does_not_implement_warn(capsys, monkeypatch, flag, words):
    monkeypatch.setenv("RKNN_LOG_LEVEL", "2")
    ctx = init(flag=flag)
    err = capsys.readouterr().err
    assert any(line.startswith("W RKNN:") and words in line for line in err.splitlines()), err
    rknn_destroy(ctx)


def test_share_weight_mem(capsys):
    src = init()
    ext = rknn_init_extend()
    ext.ctx = src.value
    other = init(flag=RKNN_FLAG_SHARE_WEIGHT_MEM, extend=ext)
    assert context_of(other)._weights is context_of(src)._weights
    before = state()
    assert rknn_init(rknn_context(), convnet(), len(convnet()), RKNN_FLAG_SHARE_WEIGHT_MEM, None) == \
        RKNN_ERR_PARAM_INVALID
    errline(capsys, "rknn_init_extend.ctx")
    bad = rknn_init_extend()
    bad.ctx = 0x1234
    assert rknn_init(rknn_context(), convnet(), len(convnet()), RKNN_FLAG_SHARE_WEIGHT_MEM, bad) == \
        RKNN_ERR_CTX_INVALID
    assert rknn_init(rknn_context(), convnet_other(), len(convnet_other()), RKNN_FLAG_SHARE_WEIGHT_MEM, ext) == \
        RKNN_ERR_MODEL_INVALID
    assert state() == before
    rknn_destroy(src)
    rknn_destroy(other)


def test_collect_model_info_only(capsys):
    ctx = init(flag=RKNN_FLAG_COLLECT_MODEL_INFO_ONLY | RKNN_FLAG_MEM_ALLOC_OUTSIDE)
    ms = rknn_mem_size()
    assert query(ctx, RKNN_QUERY_MEM_SIZE, ms) == RKNN_SUCC
    assert ms.total_weight_size > 0 and ms.total_internal_size > 0 and ms.total_dma_allocated_size == 0
    assert rknn_run(ctx, None) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "COLLECT_MODEL_INFO_ONLY")
    assert query(ctx, RKNN_QUERY_PERF_RUN, rknn_perf_run()) == RKNN_ERR_PARAM_INVALID
    rknn_destroy(ctx)


def test_model_buffer_zero_copy():
    data = npurt_bytes()
    m = rknn_create_mem2(0, len(data), RKNN_MEM_FLAG_ALLOC_NO_CONTEXT)
    mem_view(m)[:] = np.frombuffer(data, np.uint8)
    ext = rknn_init_extend(real_model_offset=0, real_model_size=len(data), model_buffer_fd=m.fd,
                           model_buffer_flags=m.flags)
    ctx = rknn_context()
    assert rknn_init(ctx, m.virt_addr, len(data), RKNN_FLAG_MODEL_BUFFER_ZERO_COPY, ext) == RKNN_SUCC
    c = context_of(ctx)
    assert c._weights.buffer is None and np.shares_memory(c._weights.view(), mem_view(m))
    ms = rknn_mem_size()
    query(ctx, RKNN_QUERY_MEM_SIZE, ms)
    assert ms.total_dma_allocated_size == c.mem_size().dma_allocated     # no weight copy
    assert rknn_destroy(ctx) == RKNN_SUCC
    assert rknn_destroy_mem(0, m) == RKNN_SUCC


def test_model_buffer_zero_copy_errors(capsys):
    data = npurt_bytes()
    m = rknn_create_mem2(0, len(data), RKNN_MEM_FLAG_ALLOC_NO_CONTEXT)
    mem_view(m)[:] = np.frombuffer(data, np.uint8)
    before = state()
    assert rknn_init(rknn_context(), data, len(data), RKNN_FLAG_MODEL_BUFFER_ZERO_COPY, None) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "MODEL_BUFFER_ZERO_COPY")
    ext = rknn_init_extend(model_buffer_fd=9999)
    assert rknn_init(rknn_context(), m.virt_addr, len(data), RKNN_FLAG_MODEL_BUFFER_ZERO_COPY, ext) == \
        RKNN_ERR_PARAM_INVALID
    errline(capsys, "model_buffer_fd")
    assert state() == before
    rknn_destroy_mem(0, m)


def test_model_buffer_fd_is_checked_by_the_file_it_names(capsys):
    """model_buffer_fd must name the model buffer's memory: a dup() of its fd does, another file's fd does not."""
    import os
    data = npurt_bytes()
    m = rknn_create_mem2(0, len(data), RKNN_MEM_FLAG_ALLOC_NO_CONTEXT)
    other = rknn_create_mem2(0, 4096, RKNN_MEM_FLAG_ALLOC_NO_CONTEXT)
    mem_view(m)[:] = np.frombuffer(data, np.uint8)
    dup = os.dup(m.fd)
    try:
        ctx = rknn_context()
        ext = rknn_init_extend(real_model_size=len(data), model_buffer_fd=dup)
        assert rknn_init(ctx, m.virt_addr, len(data), RKNN_FLAG_MODEL_BUFFER_ZERO_COPY, ext) == RKNN_SUCC
        assert rknn_destroy(ctx) == RKNN_SUCC
        before = state()
        ext = rknn_init_extend(real_model_size=len(data), model_buffer_fd=other.fd)
        assert rknn_init(rknn_context(), m.virt_addr, len(data), RKNN_FLAG_MODEL_BUFFER_ZERO_COPY, ext) == \
            RKNN_ERR_PARAM_INVALID
        errline(capsys, f"model_buffer_fd {other.fd} is not the fd of the model buffer")
        assert state() == before
    finally:
        os.close(dup)
        rknn_destroy_mem(0, other), rknn_destroy_mem(0, m)


# --- dup / destroy --------------------------------------------------------------------------------------------------
def test_dup_context_and_destroy(capsys):
    ctx = init()
    dup = rknn_context()
    assert rknn_dup_context(ctx, dup) == RKNN_SUCC and dup.value not in (0, ctx.value)
    assert context_of(dup)._weights is context_of(ctx)._weights
    assert rknn_destroy(ctx) == RKNN_SUCC
    assert rknn_destroy(ctx) == RKNN_ERR_CTX_INVALID
    errline(capsys, "rknn_destroy", "invalid context")
    io = rknn_input_output_num()
    assert query(dup, RKNN_QUERY_IN_OUT_NUM, io) == RKNN_SUCC          # the copy lives on
    before = state()
    assert rknn_dup_context(ctx, rknn_context()) == RKNN_ERR_CTX_INVALID
    assert rknn_dup_context(dup, None) == RKNN_ERR_PARAM_INVALID
    assert state() == before
    assert rknn_destroy(dup) == RKNN_SUCC


def test_every_call_on_a_destroyed_context_is_ctx_invalid(capsys):
    ctx = init()
    rknn_destroy(ctx)
    attr = rknn_tensor_attr()
    calls = [lambda: rknn_query(ctx, RKNN_QUERY_INPUT_ATTR, attr, ctypes.sizeof(attr)),
             lambda: rknn_run(ctx, None), lambda: rknn_inputs_set(ctx, 0, []),
             lambda: rknn_outputs_get(ctx, 0, [], None), lambda: rknn_outputs_release(ctx, 0, []),
             lambda: rknn_set_io_mem(ctx, rknn_tensor_mem(), attr), lambda: rknn_set_core_mask(ctx, 0),
             lambda: rknn_set_batch_core_num(ctx, 1), lambda: rknn_set_input_shapes(ctx, 1, [attr]),
             lambda: rknn_set_weight_mem(ctx, rknn_tensor_mem()), lambda: rknn_set_internal_mem(ctx, rknn_tensor_mem()),
             lambda: rknn_dup_context(ctx, rknn_context()), lambda: rknn_destroy(ctx),
             lambda: rknn_mem_sync(ctx, rknn_tensor_mem(), RKNN_MEMORY_SYNC_TO_DEVICE),
             lambda: rknn_destroy_mem(ctx, rknn_tensor_mem())]
    for call in calls:
        assert call() == RKNN_ERR_CTX_INVALID
    for call in (lambda: rknn_create_mem(ctx, 64), lambda: rknn_create_mem2(ctx, 64, 0),
                 lambda: rknn_create_mem_from_fd(ctx, 0, 0, 64, 0), lambda: rknn_create_mem_from_phys(ctx, 4096, 0, 64)):
        assert call() is None
    err = capsys.readouterr().err
    assert err.count("E RKNN:") == len(calls) + 4


def test_destroy_releases_mems_created_with_the_context(capsys, monkeypatch):
    monkeypatch.setenv("RKNN_LOG_LEVEL", "2")
    dev = open_device()
    base = dev.stats().buffers
    ctx = init()
    mems = [rknn_create_mem(ctx, 1000) for _ in range(3)]
    assert rknn_destroy_mem(ctx, mems[0]) == RKNN_SUCC
    assert rknn_destroy(ctx) == RKNN_SUCC
    err = capsys.readouterr().err
    assert err.count("was not destroyed with rknn_destroy_mem") == 2
    assert dev.stats().buffers == base
    assert rknn_destroy_mem(ctx, mems[1]) == RKNN_ERR_CTX_INVALID
    dev.close()


# --- rknn_query -------------------------------------------------------------------------------------------------------
def _attr(ctx, cmd, index=0):
    a = rknn_tensor_attr(index=index)
    assert query(ctx, cmd, a) == RKNN_SUCC
    return a


def test_query_attrs_all_kinds():
    ctx = init(two_io())
    a = _attr(ctx, RKNN_QUERY_INPUT_ATTR)            # a 4-D image input: NHWC [1,H,W,C], as the boards report
    assert (a.name, list(a.dims[:a.n_dims]), a.fmt, a.type) == (b"x", [1, 6, 6, 3], RKNN_TENSOR_NHWC,
                                                               RKNN_TENSOR_FLOAT16)
    assert a.n_elems == 108 and a.size == 216 and a.w_stride == 16 and a.size_with_stride == 1 * 6 * 16 * 3 * 2
    a = _attr(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR)
    assert (list(a.dims[:a.n_dims]), a.fmt, a.size_with_stride) == ([1, 6, 6, 3], RKNN_TENSOR_NHWC, 1 * 6 * 16 * 3 * 2)
    assert _attr(ctx, RKNN_QUERY_NATIVE_NC1HWC2_INPUT_ATTR).fmt == RKNN_TENSOR_NHWC      # alias of 8
    a = _attr(ctx, RKNN_QUERY_NATIVE_OUTPUT_ATTR)
    assert (list(a.dims[:a.n_dims]), a.fmt) == ([1, 1, 6, 6, 8], RKNN_TENSOR_NC1HWC2)
    a = _attr(ctx, RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR)
    assert (list(a.dims[:a.n_dims]), a.fmt) == ([1, 6, 6, 8], RKNN_TENSOR_NHWC)
    a = _attr(ctx, RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR, 1)
    assert (a.name, a.fmt, list(a.dims[:a.n_dims])) == (b"z", RKNN_TENSOR_UNDEFINED, [1, 5])
    a = _attr(ctx, RKNN_QUERY_OUTPUT_ATTR, 1)
    assert (a.name, a.fmt, a.n_elems) == (b"v", RKNN_TENSOR_UNDEFINED, 4)
    for cmd in (RKNN_QUERY_CURRENT_INPUT_ATTR, RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR):
        assert _attr(ctx, cmd).name == b"x"
    for cmd in (RKNN_QUERY_CURRENT_OUTPUT_ATTR, RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR):
        assert _attr(ctx, cmd, 1).name == b"v"
    rknn_destroy(ctx)


def test_query_other_commands():
    ctx = init(flag=RKNN_FLAG_COLLECT_PERF_MASK)
    v = rknn_sdk_version()
    assert query(ctx, RKNN_QUERY_SDK_VERSION, v) == RKNN_SUCC and v.api_version.startswith(b"2.5.0")
    assert v.drv_version
    s = rknn_custom_string()
    assert query(ctx, RKNN_QUERY_CUSTOM_STRING, s) == RKNN_SUCC and s.string == b""
    run = rknn_perf_run()
    assert query(ctx, RKNN_QUERY_PERF_RUN, run) == RKNN_SUCC and run.run_duration == 0
    x = np.zeros((1, 3, 8, 10), np.float32)
    inp = rknn_input(index=0, buf=x.ctypes.data, size=x.nbytes, type=RKNN_TENSOR_FLOAT32, fmt=RKNN_TENSOR_NCHW)
    assert rknn_inputs_set(ctx, 1, [inp]) == RKNN_SUCC and rknn_run(ctx, None) == RKNN_SUCC
    assert query(ctx, RKNN_QUERY_PERF_RUN, run) == RKNN_SUCC and run.run_duration > 0
    d = rknn_perf_detail()
    assert query(ctx, RKNN_QUERY_PERF_DETAIL, d) == RKNN_SUCC
    text = ctypes.string_at(d.perf_data, d.data_len).decode()
    assert "conv1" in text and "conv2" in text and "Time(us)" in text
    ms = rknn_mem_size()
    assert query(ctx, RKNN_QUERY_MEM_SIZE, ms) == RKNN_SUCC
    c = context_of(ctx)
    assert (ms.total_weight_size, ms.total_internal_size) == (c.compiled.plan.weight_size, c.internal_capacity)
    assert ms.total_dma_allocated_size >= ms.total_weight_size + ms.total_internal_size
    dev = open_device()
    try:
        assert ms.total_sram_size == 956 * 1024 and ms.free_sram_size == dev.stats().sram_free
    finally:
        dev.close()
    mem = rknn_create_mem(ctx, 10000)
    ms2 = rknn_mem_size()
    query(ctx, RKNN_QUERY_MEM_SIZE, ms2)
    assert ms2.total_dma_allocated_size == ms.total_dma_allocated_size + 12288      # page-rounded create_mem
    rknn_destroy_mem(ctx, mem)
    rknn_destroy(ctx)


def test_perf_queries_without_the_perf_flag(capsys):
    """As on the board: PERF_DETAIL and PERF_RUN answer without RKNN_FLAG_COLLECT_PERF_MASK, with what there is
    (the run's total; no per-op rows)."""
    ctx = init()
    d, run = rknn_perf_detail(), rknn_perf_run()
    assert query(ctx, RKNN_QUERY_PERF_DETAIL, d) == RKNN_SUCC and d.data_len > 0          # before any run too
    x = np.zeros((1, 3, 8, 10), np.float32)
    inp = rknn_input(index=0, buf=x.ctypes.data, size=x.nbytes, type=RKNN_TENSOR_FLOAT32, fmt=RKNN_TENSOR_NCHW)
    assert rknn_inputs_set(ctx, 1, [inp]) == RKNN_SUCC and rknn_run(ctx, None) == RKNN_SUCC
    assert query(ctx, RKNN_QUERY_PERF_RUN, run) == RKNN_SUCC and run.run_duration > 0
    assert query(ctx, RKNN_QUERY_PERF_DETAIL, d) == RKNN_SUCC
    text = ctypes.string_at(d.perf_data, d.data_len).decode()
    assert f"Total Run Elapsed Per Frame Time(us): {run.run_duration}" in text
    assert "conv1" not in text and "COLLECT_PERF_MASK" in text
    assert "E RKNN:" not in capsys.readouterr().err
    rknn_destroy(ctx)


def test_query_dynamic_range():
    ctx = init(dynamic_convnet())
    r = rknn_input_range(index=0)
    assert query(ctx, RKNN_QUERY_INPUT_DYNAMIC_RANGE, r) == RKNN_SUCC
    assert (r.shape_number, r.n_dims, r.fmt, r.name) == (3, 4, RKNN_TENSOR_NHWC, b"x")
    assert [list(r.dyn_range[s][:4]) for s in range(3)] == [[1, 8, 8, 3], [1, 16, 16, 3], [1, 12, 10, 3]]
    rknn_destroy(ctx)


def test_query_validation_leaves_info_untouched(capsys):
    ctx = init()
    a = rknn_tensor_attr(index=0)
    a.n_dims = 77
    raw = bytes(a)
    assert rknn_query(ctx, RKNN_QUERY_INPUT_ATTR, a, ctypes.sizeof(a) - 1) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "info_len(375) < sizeof(rknn_tensor_attr)(376)")
    assert rknn_query(ctx, RKNN_QUERY_INPUT_ATTR, rknn_mem_size(), 376) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "info must be an rknn_tensor_attr")
    assert rknn_query(ctx, RKNN_QUERY_INPUT_ATTR, None, 376) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "info is NULL")
    assert rknn_query(ctx, 99, a, 376) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "invalid query cmd")
    a.index = 1
    raw = bytes(a)
    assert rknn_query(ctx, RKNN_QUERY_OUTPUT_ATTR, a, 376) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "output index(1) >= output_num(1)")
    assert bytes(a) == raw
    r = rknn_input_range(index=0)
    assert query(ctx, RKNN_QUERY_INPUT_DYNAMIC_RANGE, r) == RKNN_ERR_MODEL_INVALID
    errline(capsys, "not a dynamic-shape model")
    assert query(ctx, RKNN_QUERY_DEVICE_MEM_INFO, rknn_tensor_mem()) == RKNN_ERR_FAIL
    errline(capsys, "RKNN_QUERY_DEVICE_MEM_INFO is not supported on rk3588")
    assert rknn_query(ctx, RKNN_QUERY_IN_OUT_NUM, ctypes.pointer(rknn_input_output_num()), 8) == RKNN_SUCC
    rknn_destroy(ctx)


def test_query_on_the_mini_runtime(monkeypatch, capsys):
    monkeypatch.setenv("NPURT_SOC", "rv1106")
    ctx = init(npurt_bytes("rv1106"))
    m = rknn_tensor_mem()
    assert query(ctx, RKNN_QUERY_DEVICE_MEM_INFO, m) == RKNN_SUCC
    assert m.size == context_of(ctx).compiled.plan.weight_size and m.fd > 0
    assert m.flags == RKNN_TENSOR_MEMORY_FLAGS_ALLOC_INSIDE
    a, n = rknn_tensor_attr(index=0), rknn_tensor_attr(index=0)
    query(ctx, RKNN_QUERY_INPUT_ATTR, a)
    query(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR, n)
    assert bytes(a) == bytes(n) and a.fmt == RKNN_TENSOR_NHWC          # INPUT_ATTR is already native there
    for cmd in (RKNN_QUERY_PERF_DETAIL, RKNN_QUERY_PERF_RUN, RKNN_QUERY_INPUT_DYNAMIC_RANGE,
                RKNN_QUERY_CURRENT_INPUT_ATTR, RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR):
        name, cls = __import__("npurt.rknn.api_query", fromlist=["QUERIES"]).QUERIES[cmd]
        assert query(ctx, cmd, cls()) == RKNN_ERR_FAIL
        errline(capsys, f"{name} is not supported on rv1106")
    rknn_destroy(ctx)


# --- logging ----------------------------------------------------------------------------------------------------------
def test_log_levels(capsys, monkeypatch):
    monkeypatch.setenv("RKNN_LOG_LEVEL", "0")
    assert rknn_destroy(rknn_context(77)) == RKNN_ERR_CTX_INVALID
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("RKNN_LOG_LEVEL", "3")
    ctx = init()
    err = capsys.readouterr().err
    assert "I RKNN:" in err and "Total Weight Memory Size:" in err and "Total Internal Memory Size:" in err
    assert "D RKNN:" not in err
    monkeypatch.setenv("RKNN_LOG_LEVEL", "4")
    mem = rknn_create_mem(ctx, 100)
    assert "D RKNN:" in capsys.readouterr().err
    rknn_destroy_mem(ctx, mem)
    rknn_destroy(ctx)
    monkeypatch.setenv("RKNN_LOG_LEVEL", "3")
    ctx = init(convnet(200), RKNN_FLAG_ENABLE_SRAM)
    err = capsys.readouterr().err
    assert "Total allocated Internal SRAM Size:" in err
    rknn_destroy(ctx)


def test_log_line_format(capsys, monkeypatch):
    from npurt.rknn import log
    monkeypatch.setenv("RKNN_LOG_LEVEL", "5")
    log.error("a")
    log.warning("b")
    log.info("c\nd")
    log.debug("e")
    lines = capsys.readouterr().err.splitlines()
    assert [ln[:8] for ln in lines] == ["E RKNN: ", "W RKNN: ", "I RKNN: ", "I RKNN: ", "D RKNN: "]
    assert lines[0].endswith("] a") and lines[3].endswith("] d")
    monkeypatch.setenv("RKNN_LOG_LEVEL", "junk")
    assert log.level() == log.DEFAULT_LEVEL
