"""RKNN mirror, running: the vendor demos' flows (create_mem zero copy with UINT8/NHWC input and FLOAT32 outputs,
everything allocated outside via fds, internal-memory reuse across two models, dynamic shapes, general API with
several inputs, the RV1106 native flow), rknn_outputs_get / _release variants, the cache-flag rules, threads,
dynamic-shape and core-mask calls. Outputs are compared with onnxruntime (fp16) or bit-exact with the executor."""
from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest

import npurt
from npurt.runtime.user_io import run_once
from npurt.memory import dma_alloc, open_device
from npurt.rknn import *  # noqa: F403
from npurt.rknn import handles
from npurt.rknn.api import context_of
from npurt.tensor import nc1hwc2_to_nchw
from helpers.rknn import attr, errline, general_run, init, query, shape_attr, state
from helpers.models import (X_SHAPE, Y_SHAPE, convnet, convnet_other, dynamic_convnet, image, int8_convnet,
                                 npurt_bytes, reference, two_io)

ATOL = 0.02


pytestmark = pytest.mark.usefixtures("no_leaks")   # every fd, device buffer, byte and handle given back


# --- general API ------------------------------------------------------------------------------------------------------
def test_general_api_fp16():
    x = image(seed=1)
    ctx = init()
    y, = general_run(ctx, x)
    np.testing.assert_allclose(y.reshape(Y_SHAPE), reference(convnet(), x)[0], atol=ATOL)
    rknn_destroy(ctx)


def test_general_api_int8_want_float_and_raw():
    cm = int8_convnet()
    x = image(seed=2)
    ctx = init(cm.to_bytes())
    y, = general_run(ctx, x)
    np.testing.assert_array_equal(y.reshape(Y_SHAPE), run_once(cm, [x])[0])
    raw, = general_run(ctx, x, want_float=0)
    oa = attr(ctx, RKNN_QUERY_OUTPUT_ATTR)
    assert raw.size == oa.n_elems and oa.type == RKNN_TENSOR_INT8
    deq = (raw.view(np.int8).astype(np.float32) - oa.zp) * oa.scale
    np.testing.assert_allclose(deq.reshape(Y_SHAPE), y.reshape(Y_SHAPE), atol=1e-5)
    rknn_destroy(ctx)


def test_general_api_two_inputs():
    x, z = image((1, 3, 6, 6), seed=3), np.linspace(-2, 2, 5, dtype=np.float32).reshape(1, 5)
    ctx = init(two_io())
    y, v = general_run(ctx, x, z)
    ry, rv = reference(two_io(), x, z)
    np.testing.assert_allclose(y.reshape(ry.shape), ry, atol=ATOL)
    np.testing.assert_allclose(v.reshape(rv.shape), rv, atol=ATOL)
    rknn_destroy(ctx)


def test_general_api_uint8_nhwc_image_with_mean_std():
    cm = npurt.compile(convnet(), mean=[[127.5] * 3], std=[[127.5] * 3], progress=False)
    img = np.random.default_rng(4).integers(0, 256, (1, 8, 10, 3), dtype=np.uint8)
    ctx = init(cm.to_bytes())
    y, = general_run(ctx, img, fmt=RKNN_TENSOR_NHWC)
    xf = ((img.astype(np.float32) - 127.5) / 127.5).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(y.reshape(Y_SHAPE), reference(convnet(), xf)[0], atol=ATOL)
    rknn_destroy(ctx)


def test_inputs_set_errors(capsys):
    ctx = init()
    x = image()
    inp = rknn_input(index=0, buf=x.ctypes.data, size=x.nbytes // 4, type=RKNN_TENSOR_FLOAT32, fmt=RKNN_TENSOR_NCHW)
    assert rknn_inputs_set(ctx, 1, [inp]) == RKNN_ERR_INPUT_INVALID
    errline(capsys, "param input size(240) < model input size(960)")
    zeroed = rknn_input(index=0, buf=x.ctypes.data, size=240)     # type 0 = FLOAT32: 4 bytes per element expected
    assert rknn_inputs_set(ctx, 1, [zeroed]) == RKNN_ERR_INPUT_INVALID
    assert rknn_inputs_set(ctx, 1, [rknn_input(index=0, buf=None, size=960)]) == RKNN_ERR_INPUT_INVALID
    errline(capsys, "input buf is NULL")
    bad = rknn_input(index=0, buf=x.ctypes.data, size=960, type=55, fmt=RKNN_TENSOR_NCHW)
    assert rknn_inputs_set(ctx, 1, [bad]) == RKNN_ERR_INPUT_INVALID
    errline(capsys, "invalid dtype/layout")
    assert rknn_inputs_set(ctx, 2, [inp]) == RKNN_ERR_PARAM_INVALID
    assert rknn_inputs_set(ctx, 1, None) == RKNN_ERR_PARAM_INVALID
    assert rknn_run(ctx, None) == RKNN_ERR_INPUT_INVALID
    errline(capsys, "input(x) tensor not attached to memory!")
    out = (rknn_output * 1)()
    assert rknn_outputs_get(ctx, 1, out, None) == RKNN_ERR_OUTPUT_INVALID
    rknn_destroy(ctx)


def test_outputs_get_prealloc_and_release():
    x = image(seed=5)
    ctx = init()
    inp = rknn_input(index=0, buf=x.ctypes.data, size=x.nbytes, type=RKNN_TENSOR_FLOAT32, fmt=RKNN_TENSOR_NCHW)
    rknn_inputs_set(ctx, 1, [inp])
    rknn_run(ctx, None)
    dst = np.zeros(Y_SHAPE, np.float32)
    out = (rknn_output * 1)()
    out[0].want_float, out[0].is_prealloc, out[0].buf, out[0].size = 1, 1, dst.ctypes.data, dst.nbytes - 4
    before = dst.copy()
    assert rknn_outputs_get(ctx, 1, out, None) == RKNN_ERR_OUTPUT_INVALID
    assert (dst == before).all()
    out[0].size = dst.nbytes
    ext = rknn_output_extend()
    assert rknn_outputs_get(ctx, 1, out, ext) == RKNN_SUCC and ext.frame_id == 1
    np.testing.assert_allclose(dst, reference(convnet(), x)[0], atol=ATOL)
    assert rknn_outputs_release(ctx, 1, out) == RKNN_SUCC and out[0].buf == dst.ctypes.data   # user's stays
    # runtime-allocated: release frees it, a second release is harmless, a foreign address is refused
    got = (rknn_output * 1)()
    got[0].want_float = 1
    rknn_outputs_get(ctx, 1, got, None)
    addr = got[0].buf
    assert output_view(got[0]).size == 320
    assert rknn_outputs_release(ctx, 1, got) == RKNN_SUCC and not got[0].buf
    assert rknn_outputs_release(ctx, 1, got) == RKNN_SUCC
    with pytest.raises(Exception):
        addr_view(addr, 4)                                   # freed runtime memory is no longer viewable
    foreign = (rknn_output * 1)()
    foreign[0].buf = dst.ctypes.data
    assert rknn_outputs_release(ctx, 1, foreign) == RKNN_ERR_PARAM_INVALID
    # the same runtime buffer listed twice is refused before anything is freed
    got = (rknn_output * 2)()
    got[0].want_float = 1
    rknn_outputs_get(ctx, 1, got, None)
    got[1].buf, got[1].index = got[0].buf, 0
    assert rknn_outputs_release(ctx, 2, got) == RKNN_ERR_PARAM_INVALID
    assert got[0].buf and output_view(got[0]).size == 320    # still allocated and readable
    got[1].buf = None
    assert rknn_outputs_release(ctx, 1, got) == RKNN_SUCC and not got[0].buf
    rknn_destroy(ctx)


def test_disable_flush_flags_forbid_the_general_api(capsys):
    x = image()
    ctx = init(flag=RKNN_FLAG_DISABLE_FLUSH_INPUT_MEM_CACHE)
    inp = rknn_input(index=0, buf=x.ctypes.data, size=x.nbytes, type=RKNN_TENSOR_FLOAT32, fmt=RKNN_TENSOR_NCHW)
    assert rknn_inputs_set(ctx, 1, [inp]) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "must not be combined with rknn_inputs_set")
    rknn_destroy(ctx)
    ctx = init(flag=RKNN_FLAG_DISABLE_FLUSH_OUTPUT_MEM_CACHE)
    assert rknn_inputs_set(ctx, 1, [inp]) == RKNN_SUCC and rknn_run(ctx, None) == RKNN_SUCC
    out = (rknn_output * 1)()
    assert rknn_outputs_get(ctx, 1, out, None) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "must not be combined with rknn_outputs_get")
    rknn_destroy(ctx)


def test_general_and_zero_copy_cannot_be_mixed(capsys):
    x = image()
    ctx = init()
    general_run(ctx, x)
    ia = attr(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR)
    mem = rknn_create_mem(ctx, ia.size_with_stride)
    assert rknn_set_io_mem(ctx, mem, ia) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "cannot be mixed")
    rknn_destroy_mem(ctx, mem)
    rknn_destroy(ctx)


# --- zero-copy demos ----------------------------------------------------------------------------------------------------
def _copy_rows(mem, img_nhwc: np.ndarray, w_stride: int) -> None:
    """The demos' input copy: one memcpy when W == w_stride, else row by row with pitch w_stride*C."""
    n, h, w, c = img_nhwc.shape
    dst = mem_view(mem, np.uint8, count=n * h * w_stride * c).reshape(n, h, w_stride, c)
    dst[:, :, :w, :] = img_nhwc
    dst[:, :, w:, :] = 0


def test_demo_create_mem_zero_copy_uint8_in_float_out():
    """rknn_create_mem_demo: non-native INPUT_ATTR edited to UINT8/NHWC, outputs FLOAT32 n_elems*4."""
    cm = npurt.compile(convnet(), mean=[[127.5] * 3], std=[[127.5] * 3], quantize=[np.random.default_rng(s).integers(
        0, 256, X_SHAPE).astype(np.float32) for s in range(4)], progress=False)
    img = np.random.default_rng(6).integers(0, 256, (1, 8, 10, 3), dtype=np.uint8)
    ctx = init(cm.to_bytes())
    ia = attr(ctx, RKNN_QUERY_INPUT_ATTR)
    ia.type, ia.fmt = RKNN_TENSOR_UINT8, RKNN_TENSOR_NHWC
    imem = rknn_create_mem(ctx, ia.size_with_stride)
    oa = attr(ctx, RKNN_QUERY_OUTPUT_ATTR)
    oa.type = RKNN_TENSOR_FLOAT32
    omem = rknn_create_mem(ctx, oa.n_elems * 4)
    _copy_rows(imem, img, ia.w_stride)
    assert rknn_set_io_mem(ctx, imem, ia) == RKNN_SUCC and rknn_set_io_mem(ctx, omem, oa) == RKNN_SUCC
    for _ in range(2):
        assert rknn_run(ctx, None) == RKNN_SUCC
    y = mem_view(omem, np.float32).reshape(Y_SHAPE).copy()
    rknn_destroy_mem(ctx, imem), rknn_destroy_mem(ctx, omem)
    rknn_destroy(ctx)
    ctx = init(cm.to_bytes())                          # the general API gives the same numbers
    g, = general_run(ctx, img, fmt=RKNN_TENSOR_NHWC)
    np.testing.assert_array_equal(g.reshape(Y_SHAPE), y)
    rknn_destroy(ctx)


def test_native_zero_copy_is_the_memory_the_kernels_use():
    x = image(seed=7)
    ctx = init()
    ia, oa = attr(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR), attr(ctx, RKNN_QUERY_NATIVE_OUTPUT_ATTR)
    imem, omem = rknn_create_mem(ctx, ia.size_with_stride), rknn_create_mem(ctx, oa.size_with_stride)
    rows = mem_view(imem, np.float16).reshape(1, 8, ia.w_stride, 3)
    rows[:, :, :10, :] = x.transpose(0, 2, 3, 1)
    assert rknn_set_io_mem(ctx, imem, ia) == RKNN_SUCC and rknn_set_io_mem(ctx, omem, oa) == RKNN_SUCC
    assert rknn_run(ctx, None) == RKNN_SUCC
    ex = context_of(ctx).executor
    assert ex.tensor_view("x").__array_interface__["data"][0] == imem.virt_addr
    assert ex.tensor_view("y").__array_interface__["data"][0] == omem.virt_addr
    native = mem_view(omem, np.float16).reshape([oa.dims[i] for i in range(oa.n_dims)])
    np.testing.assert_allclose(nc1hwc2_to_nchw(native, 4).astype(np.float32), reference(convnet(), x)[0], atol=ATOL)
    rknn_destroy_mem(ctx, imem), rknn_destroy_mem(ctx, omem)
    rknn_destroy(ctx)


def test_demo_everything_allocated_outside_from_fds():
    """rknn_set_internal_mem_from_fd_demo: MEM_ALLOC_OUTSIDE, external (MMZ-like) buffers wrapped from their fds."""
    x = image(seed=8)
    ctx = rknn_context()
    assert rknn_init(ctx, convnet(), len(convnet()), RKNN_FLAG_MEM_ALLOC_OUTSIDE, None) == RKNN_SUCC
    ms = rknn_mem_size()
    query(ctx, RKNN_QUERY_MEM_SIZE, ms)
    assert ms.total_dma_allocated_size == 0
    dev = context_of(ctx).device
    ia = attr(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR)
    ia.type, ia.w_stride = RKNN_TENSOR_FLOAT32, 10
    oa = attr(ctx, RKNN_QUERY_OUTPUT_ATTR)
    oa.type, oa.size = RKNN_TENSOR_FLOAT32, oa.n_elems * 4
    blocks = [dma_alloc(n, device=dev) for n in (ms.total_weight_size, ms.total_internal_size, 960, oa.size)]
    wrapped = [rknn_create_mem_from_fd(ctx, b.fd, b.virt_addr, b.size, 0) for b in blocks]
    assert rknn_set_weight_mem(ctx, wrapped[0]) == RKNN_SUCC
    assert rknn_set_internal_mem(ctx, wrapped[1]) == RKNN_SUCC
    assert rknn_set_io_mem(ctx, wrapped[2], ia) == RKNN_SUCC and rknn_set_io_mem(ctx, wrapped[3], oa) == RKNN_SUCC
    blocks[2].view(np.float32)[:] = x.transpose(0, 2, 3, 1).reshape(-1)
    assert rknn_run(ctx, None) == RKNN_SUCC
    np.testing.assert_allclose(blocks[3].view(np.float32).reshape(Y_SHAPE), reference(convnet(), x)[0], atol=ATOL)
    for b in blocks:
        b.close()
    for w in wrapped:
        rknn_destroy_mem(ctx, w)
    rknn_destroy(ctx)


def _hold_runs_on_thread_a(monkeypatch):
    """Patch the executor so that a run on the thread named "A" signals `inside` and then waits (up to 10 s) for
    `release`; runs on other threads go straight through. Returns (inside, release)."""
    import npurt.runtime.context as cmod
    inside, release = threading.Event(), threading.Event()
    real = cmod.run_executor

    def slow(ex, collect):
        if threading.current_thread().name == "A":
            inside.set()
            release.wait(10)
        return real(ex, collect)

    monkeypatch.setattr(cmod, "run_executor", slow)
    return inside, release


def _model_ctx(model: bytes):
    ctx = rknn_context()
    assert rknn_init(ctx, model, len(model), RKNN_FLAG_MEM_ALLOC_OUTSIDE, None) == RKNN_SUCC
    ms = rknn_mem_size()
    query(ctx, RKNN_QUERY_MEM_SIZE, ms)
    return ctx, ms


def test_demo_internal_memory_reuse_across_two_models(monkeypatch):
    """rknn_internal_mem_reuse_demo: one internal buffer for two models that run one after the other; running
    them at the same time is detected."""
    models = [convnet(), convnet_other()]
    ctxs = [_model_ctx(m) for m in models]
    big = rknn_create_mem(ctxs[0][0], max(ms.total_internal_size for _, ms in ctxs))
    mems = []
    for ctx, ms in ctxs:
        internal = rknn_create_mem_from_fd(ctx, big.fd, big.virt_addr, ms.total_internal_size, 0)
        weight = rknn_create_mem(ctx, ms.total_weight_size)
        assert rknn_set_internal_mem(ctx, internal) == RKNN_SUCC and rknn_set_weight_mem(ctx, weight) == RKNN_SUCC
        ia = attr(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR)
        ia.type, ia.w_stride = RKNN_TENSOR_FLOAT32, 10
        oa = attr(ctx, RKNN_QUERY_OUTPUT_ATTR)
        oa.type, oa.fmt = RKNN_TENSOR_FLOAT32, RKNN_TENSOR_NCHW
        imem, omem = rknn_create_mem(ctx, 960), rknn_create_mem(ctx, oa.n_elems * 4)
        assert rknn_set_io_mem(ctx, imem, ia) == RKNN_SUCC and rknn_set_io_mem(ctx, omem, oa) == RKNN_SUCC
        mems.append((internal, weight, imem, omem))
    xs = [image(seed=20), image(seed=21)]
    for k in (0, 1, 0, 1):
        ctx = ctxs[k][0]
        mem_view(mems[k][2], np.float32)[:] = xs[k].transpose(0, 2, 3, 1).reshape(-1)
        assert rknn_run(ctx, None) == RKNN_SUCC
        np.testing.assert_allclose(mem_view(mems[k][3], np.float32).reshape(Y_SHAPE), reference(models[k], xs[k])[0],
                                   atol=ATOL)
    # at the same time: the second run is refused while the first one is inside
    inside, release = _hold_runs_on_thread_a(monkeypatch)
    status = []
    t = threading.Thread(target=lambda: status.append(rknn_run(ctxs[0][0], None)), name="A")
    t.start()
    assert inside.wait(10)
    assert rknn_run(ctxs[1][0], None) == RKNN_ERR_FAIL
    release.set()
    t.join(10)
    assert status == [RKNN_SUCC]
    assert rknn_destroy_mem(ctxs[0][0], big) == RKNN_SUCC          # the demo frees the big buffer first
    for (ctx, _), ms in zip(ctxs, mems):
        for m in ms:
            assert rknn_destroy_mem(ctx, m) == RKNN_SUCC
        assert rknn_destroy(ctx) == RKNN_SUCC


def test_rv1106_native_flow_and_gating(monkeypatch, capsys):
    """RV1106 mini runtime: zero copy only. INPUT_ATTR is already native; outputs stay native NC1HWC2 and the app
    converts them; the general API and dup_context are not there."""
    monkeypatch.setenv("NPURT_SOC", "rv1106")
    x = image(seed=9)
    ctx = init(npurt_bytes("rv1106"))
    ia = attr(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR)
    oa = attr(ctx, RKNN_QUERY_NATIVE_OUTPUT_ATTR)
    imem, omem = rknn_create_mem(ctx, ia.size_with_stride), rknn_create_mem(ctx, oa.size_with_stride)
    mem_view(imem, np.float16).reshape(1, 8, ia.w_stride, 3)[:, :, :10, :] = x.transpose(0, 2, 3, 1)
    assert rknn_set_io_mem(ctx, imem, ia) == RKNN_SUCC and rknn_set_io_mem(ctx, omem, oa) == RKNN_SUCC
    assert rknn_run(ctx, None) == RKNN_SUCC
    native = mem_view(omem, np.float16).reshape([oa.dims[i] for i in range(oa.n_dims)])
    np.testing.assert_allclose(nc1hwc2_to_nchw(native, 4).astype(np.float32), reference(convnet(), x)[0], atol=ATOL)
    before = state()
    assert rknn_inputs_set(ctx, 1, [rknn_input()]) == RKNN_ERR_FAIL
    errline(capsys, "rknn_inputs_set", "not supported on rv1106")
    for call in (lambda: rknn_outputs_get(ctx, 0, [], None), lambda: rknn_outputs_release(ctx, 0, []),
                 lambda: rknn_dup_context(ctx, rknn_context()), lambda: rknn_set_input_shapes(ctx, 0, []),
                 lambda: rknn_set_core_mask(ctx, 1), lambda: rknn_set_batch_core_num(ctx, 1)):
        assert call() == RKNN_ERR_FAIL
    assert state() == before
    rknn_destroy_mem(ctx, imem), rknn_destroy_mem(ctx, omem)
    rknn_destroy(ctx)


def test_rk2118_has_no_create_mem_from_fd(monkeypatch, capsys):
    monkeypatch.setenv("NPURT_SOC", "rk2118")
    dev = open_device()
    with dma_alloc(4096, device=dev) as dma:
        m = rknn_create_mem2(0, 4096, RKNN_MEM_FLAG_ALLOC_NO_CONTEXT)
        mems = [m]
        handle = handles.contexts.add(type("C", (), {"device": dev})(), "rknn_stub")
        assert rknn_create_mem_from_fd(handle, dma.fd, 0, 4096, 0) is None
        errline(capsys, "rknn_create_mem_from_fd", "not supported on rk2118")
        handles.contexts.remove(handle)
        for m in mems:
            rknn_destroy_mem(0, m)
    dev.close()


# --- dynamic shapes -------------------------------------------------------------------------------------------------------
def test_dynamic_shape_general_demo():
    ctx = init(dynamic_convnet())
    r = rknn_input_range(index=0)
    query(ctx, RKNN_QUERY_INPUT_DYNAMIC_RANGE, r)
    ia = attr(ctx, RKNN_QUERY_INPUT_ATTR)
    for s in range(r.shape_number):
        ia.n_dims = r.n_dims
        for j in range(r.n_dims):
            ia.dims[j] = r.dyn_range[s][j]
        ia.fmt = r.fmt
        assert rknn_set_input_shapes(ctx, 1, [ia]) == RKNN_SUCC
        cur = attr(ctx, RKNN_QUERY_CURRENT_INPUT_ATTR)
        n, h, w, c = (cur.dims[i] for i in range(4))
        x = image((n, c, h, w), seed=s)
        y, = general_run(ctx, x)
        ref = reference(dynamic_convnet(), x)[0]
        cur_out = attr(ctx, RKNN_QUERY_CURRENT_OUTPUT_ATTR)
        assert cur_out.n_elems == ref.size
        np.testing.assert_allclose(y.reshape(ref.shape), ref, atol=ATOL)
    rknn_destroy(ctx)


def test_dynamic_shape_zero_copy_demo():
    """Allocate once for the largest shape (INPUT_ATTR before any set_input_shapes), re-bind after each change."""
    ctx = init(dynamic_convnet())
    ia0, oa0 = attr(ctx, RKNN_QUERY_INPUT_ATTR), attr(ctx, RKNN_QUERY_OUTPUT_ATTR)
    assert [ia0.dims[i] for i in range(4)] == [1, 16, 16, 3] and ia0.fmt == RKNN_TENSOR_NHWC
    imem = rknn_create_mem(ctx, ia0.n_elems * 4)
    omem = rknn_create_mem(ctx, oa0.n_elems * 4)
    for shape in ([1, 8, 8, 3], [1, 12, 10, 3]):
        assert rknn_set_input_shapes(ctx, 1, [shape_attr(shape, fmt=RKNN_TENSOR_NHWC)]) == RKNN_SUCC
        cur_in = attr(ctx, RKNN_QUERY_CURRENT_INPUT_ATTR)
        cur_in.type = RKNN_TENSOR_FLOAT32
        cur_out = attr(ctx, RKNN_QUERY_CURRENT_OUTPUT_ATTR)
        cur_out.type, cur_out.fmt = RKNN_TENSOR_FLOAT32, RKNN_TENSOR_NCHW
        assert rknn_set_io_mem(ctx, imem, cur_in) == RKNN_SUCC and rknn_set_io_mem(ctx, omem, cur_out) == RKNN_SUCC
        n, h, w, c = shape
        x = image((n, c, h, w), seed=h)
        rows = mem_view(imem, np.float32, count=n * h * cur_in.w_stride * c).reshape(n, h, cur_in.w_stride, c)
        rows[:, :, :w, :] = x.transpose(0, 2, 3, 1)
        assert rknn_run(ctx, None) == RKNN_SUCC
        ref = reference(dynamic_convnet(), x)[0]
        np.testing.assert_allclose(mem_view(omem, np.float32, count=ref.size).reshape(ref.shape), ref, atol=ATOL)
    rknn_destroy_mem(ctx, imem), rknn_destroy_mem(ctx, omem)
    rknn_destroy(ctx)


def test_set_input_shapes_errors(capsys):
    ctx = init(dynamic_convnet())
    a = shape_attr([1, 3, 9, 9])
    assert rknn_set_input_shapes(ctx, 1, [a]) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "not among the model's dynamic shapes")
    assert rknn_set_input_shapes(ctx, 2, [a]) == RKNN_ERR_PARAM_INVALID
    assert rknn_dup_context(ctx, rknn_context()) == RKNN_ERR_FAIL
    errline(capsys, "dynamic-shape")
    rknn_destroy(ctx)
    ctx = init()
    assert rknn_set_input_shapes(ctx, 1, [shape_attr([1, 3, 8, 10])]) == RKNN_ERR_MODEL_INVALID
    errline(capsys, "not a dynamic-shape model")
    rknn_destroy(ctx)


def test_set_input_shape_deprecated_single_input_form(capsys):
    """rknn_set_input_shape(ctx, &attr): one input's shape (dims in attr.fmt), as the old applications call it."""
    ctx = init(dynamic_convnet())
    for shape, fmt in (([1, 8, 8, 3], RKNN_TENSOR_NHWC), ([1, 3, 12, 10], RKNN_TENSOR_NCHW)):
        assert rknn_set_input_shape(ctx, shape_attr(shape, fmt=fmt)) == RKNN_SUCC
        cur = attr(ctx, RKNN_QUERY_CURRENT_INPUT_ATTR)
        n, h, w, c = (cur.dims[i] for i in range(4))
        assert (n, c, h, w) == ((1, 3, 8, 8) if fmt == RKNN_TENSOR_NHWC else (1, 3, 12, 10))
        x = image((n, c, h, w), seed=h)
        y, = general_run(ctx, x)
        ref = reference(dynamic_convnet(), x)[0]
        np.testing.assert_allclose(y.reshape(ref.shape), ref, atol=ATOL)
    before = state()
    assert rknn_set_input_shape(ctx, shape_attr([1, 3, 9, 9])) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "rknn_set_input_shape", "not among the model's dynamic shapes")
    assert rknn_set_input_shape(ctx, shape_attr([1, 3, 8, 8], index=1)) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "input index(1) >= input_num(1)")
    assert rknn_set_input_shape(ctx, None) == RKNN_ERR_PARAM_INVALID
    assert state() == before and attr(ctx, RKNN_QUERY_CURRENT_INPUT_ATTR).dims[1] == 12    # shape unchanged
    rknn_destroy(ctx)


# --- cores, run extend, threads -------------------------------------------------------------------------------------------
def test_core_masks_and_batch_core_num(monkeypatch, capsys):
    ctx = init()
    for mask in (RKNN_NPU_CORE_AUTO, RKNN_NPU_CORE_0, RKNN_NPU_CORE_1, RKNN_NPU_CORE_2, RKNN_NPU_CORE_0_1,
                 RKNN_NPU_CORE_0_1_2, RKNN_NPU_CORE_ALL):
        assert rknn_set_core_mask(ctx, mask) == RKNN_SUCC
    assert rknn_set_core_mask(ctx, 5) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "Not support core mask: 5")
    assert rknn_set_batch_core_num(ctx, 3) == RKNN_SUCC
    assert rknn_set_batch_core_num(ctx, 4) == RKNN_ERR_PARAM_INVALID
    rknn_destroy(ctx)
    monkeypatch.setenv("NPURT_SOC", "rk3568")
    ctx = init()
    assert rknn_set_core_mask(ctx, RKNN_NPU_CORE_0) == RKNN_ERR_FAIL
    errline(capsys, "rknn_set_core_mask", "not supported on rk3568")
    assert rknn_set_batch_core_num(ctx, 1) == RKNN_ERR_FAIL
    rknn_destroy(ctx)


def test_run_extend(capsys, monkeypatch):
    monkeypatch.setenv("RKNN_LOG_LEVEL", "2")
    x = image()
    ctx = init()
    inp = rknn_input(index=0, buf=x.ctypes.data, size=x.nbytes, type=RKNN_TENSOR_FLOAT32, fmt=RKNN_TENSOR_NCHW)
    rknn_inputs_set(ctx, 1, [inp])
    ext = rknn_run_extend(non_block=1)
    assert rknn_run(ctx, ext) == RKNN_SUCC and ext.frame_id == 1
    assert "non_block is not supported" in capsys.readouterr().err
    assert rknn_run(ctx, ctypes.pointer(ext)) == RKNN_SUCC and ext.frame_id == 2
    rknn_destroy(ctx)


def test_threads_same_context_busy_dups_parallel(monkeypatch, capsys):
    inside, release = _hold_runs_on_thread_a(monkeypatch)
    x = image(seed=30)
    ctx = init()
    dup = rknn_context()
    assert rknn_dup_context(ctx, dup) == RKNN_SUCC
    inp = rknn_input(index=0, buf=x.ctypes.data, size=x.nbytes, type=RKNN_TENSOR_FLOAT32, fmt=RKNN_TENSOR_NCHW)
    for c in (ctx, dup):
        rknn_inputs_set(c, 1, [inp])
    status = []
    t = threading.Thread(target=lambda: status.append(rknn_run(ctx, None)), name="A")
    t.start()
    assert inside.wait(10)
    assert rknn_run(ctx, None) == RKNN_ERR_FAIL
    errline(capsys, "rknn_run", "in use by another thread")
    assert rknn_destroy(ctx) == RKNN_ERR_FAIL                       # not while it runs
    assert rknn_run(dup, None) == RKNN_SUCC                          # the copy runs meanwhile
    release.set()
    t.join(10)
    assert status == [RKNN_SUCC]
    for c in (ctx, dup):
        out = (rknn_output * 1)()
        out[0].want_float = 1
        rknn_outputs_get(c, 1, out, None)
        np.testing.assert_allclose(output_view(out[0]).reshape(Y_SHAPE), reference(convnet(), x)[0], atol=ATOL)
        rknn_outputs_release(c, 1, out)
    rknn_destroy(ctx), rknn_destroy(dup)


def test_real_threads_on_separate_contexts():
    """No patching: four threads, each with its own dup, run 5 times each and get the right answer."""
    x = image(seed=40)
    ref = reference(convnet(), x)[0]
    base = init()
    ctxs = [base] + [rknn_context() for _ in range(3)]
    for c in ctxs[1:]:
        assert rknn_dup_context(base, c) == RKNN_SUCC
    results = {}

    def work(k, c):
        inp = rknn_input(index=0, buf=x.ctypes.data, size=x.nbytes, type=RKNN_TENSOR_FLOAT32, fmt=RKNN_TENSOR_NCHW)
        ok = True
        for _ in range(5):
            ok &= rknn_inputs_set(c, 1, [inp]) == RKNN_SUCC and rknn_run(c, None) == RKNN_SUCC
            out = (rknn_output * 1)()
            out[0].want_float = 1
            ok &= rknn_outputs_get(c, 1, out, None) == RKNN_SUCC
            ok &= np.allclose(output_view(out[0]).reshape(Y_SHAPE), ref, atol=ATOL)
            ok &= rknn_outputs_release(c, 1, out) == RKNN_SUCC
        results[k] = ok

    threads = [threading.Thread(target=work, args=(k, c)) for k, c in enumerate(ctxs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == {0: True, 1: True, 2: True, 3: True}
    for c in ctxs:
        rknn_destroy(c)


def test_enable_sram_contexts_share_what_is_free():
    """ENABLE_SRAM: each context takes SRAM for its internal arena from what is free (SRAM first, rest DDR); the
    rest stays for others; MEM_SIZE reports total and free SRAM; destroy gives it back."""
    x = image((1, 3, 8, 200), seed=50)
    dev = open_device()
    total = dev.stats().sram_free
    a, b = init(convnet(200), RKNN_FLAG_ENABLE_SRAM), init(convnet(200), RKNN_FLAG_ENABLE_SRAM)
    ms_a, ms_b = rknn_mem_size(), rknn_mem_size()
    query(a, RKNN_QUERY_MEM_SIZE, ms_a)
    query(b, RKNN_QUERY_MEM_SIZE, ms_b)
    used = context_of(a).internal_buffer.sram_size
    assert used >= ms_a.total_internal_size and context_of(b).internal_buffer.sram_size == used
    assert ms_a.total_sram_size == ms_b.total_sram_size == 956 * 1024
    assert ms_a.free_sram_size == ms_b.free_sram_size == total - 2 * used
    assert dev.sram_dump().split("\n", 1)[1].count("*") == 2 * used // 4096      # the debugfs bitmap
    for c in (a, b):
        y, = general_run(c, x)
        np.testing.assert_allclose(y.reshape(1, 4, 8, 200), reference(convnet(200), x)[0], atol=ATOL)
    rknn_destroy(a)
    query(b, RKNN_QUERY_MEM_SIZE, ms_b)
    assert ms_b.free_sram_size == total - used
    rknn_destroy(b)
    assert dev.stats().sram_free == total
    dev.close()


def test_internal_alloc_outside_with_shared_weights():
    """The model zoo's lite_transformer utils: INTERNAL_ALLOC_OUTSIDE plus SHARE_WEIGHT_MEM with extend.ctx."""
    x = image(seed=60)
    src = init(flag=RKNN_FLAG_INTERNAL_ALLOC_OUTSIDE)
    ext = rknn_init_extend()
    ext.ctx = src.value
    other = init(flag=RKNN_FLAG_INTERNAL_ALLOC_OUTSIDE | RKNN_FLAG_SHARE_WEIGHT_MEM, extend=ext)
    ms = rknn_mem_size()
    query(src, RKNN_QUERY_MEM_SIZE, ms)
    internals = [rknn_create_mem(c, ms.total_internal_size) for c in (src, other)]
    for c, mem in zip((src, other), internals):
        with pytest.raises(AssertionError):
            general_run(c, x)                                      # internal memory not set yet
        assert rknn_set_internal_mem(c, mem) == RKNN_SUCC
        y, = general_run(c, x)
        np.testing.assert_allclose(y.reshape(Y_SHAPE), reference(convnet(), x)[0], atol=ATOL)
    for c, mem in zip((src, other), internals):
        rknn_destroy_mem(c, mem)
        rknn_destroy(c)


def test_disable_flush_input_zero_copy_needs_the_users_sync(monkeypatch):
    """strict coherence + DISABLE_FLUSH_INPUT_MEM_CACHE: even create_mem inputs are the user's to flush."""
    monkeypatch.setenv("NPURT_SOC", "rk3562")
    monkeypatch.setenv("NPURT_COHERENCE", "strict")
    x = image(seed=61)
    ref = reference(convnet(), x)[0]
    ctx = init(flag=RKNN_FLAG_DISABLE_FLUSH_INPUT_MEM_CACHE)
    ia = attr(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR)
    ia.type, ia.w_stride = RKNN_TENSOR_FLOAT32, 10
    oa = attr(ctx, RKNN_QUERY_OUTPUT_ATTR)
    oa.type = RKNN_TENSOR_FLOAT32
    imem, omem = rknn_create_mem(ctx, 960), rknn_create_mem(ctx, 1280)
    rknn_set_io_mem(ctx, imem, ia), rknn_set_io_mem(ctx, omem, oa)
    mem_view(imem, np.float32)[:] = x.transpose(0, 2, 3, 1).reshape(-1)
    assert rknn_run(ctx, None) == RKNN_SUCC
    assert not np.allclose(mem_view(omem, np.float32).reshape(Y_SHAPE), ref, atol=ATOL)     # NPU read stale input
    assert rknn_mem_sync(ctx, imem, RKNN_MEMORY_SYNC_TO_DEVICE) == RKNN_SUCC
    assert rknn_run(ctx, None) == RKNN_SUCC
    np.testing.assert_allclose(mem_view(omem, np.float32).reshape(Y_SHAPE), ref, atol=ATOL)  # outputs invalidated
    rknn_destroy_mem(ctx, imem), rknn_destroy_mem(ctx, omem)
    rknn_destroy(ctx)
