"""npurt.runtime.Context: loading, the general and zero-copy paths, binding rules, memory ownership, SRAM,
coherence, perf, core masks, dynamic shapes, teardown. Numerics against onnxruntime (fp16 tolerance) or, for int8,
against the executor's own `run_once` (bit-exact: the runtime must add nothing)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import npurt
from npurt.errors import ErrorCode, NpuError
from npurt.runtime.user_io import run_once
from npurt.memory import dma_alloc, open_device
from npurt.rknn.boundary import vendor_message
from npurt.runtime import Context, ContextOptions, InputData, MemRef
from npurt.tensor import DType, Layout, nc1hwc2_to_nchw
from helpers.models import (Y_SHAPE, convnet, convnet_other, dynamic_convnet, image, int8_convnet,
                                 npurt_bytes, reference, two_io)

ATOL = 0.02      # fp16 storage of activations


pytestmark = pytest.mark.usefixtures("no_leaks")   # every fd, device buffer, byte and handle given back


def _code(excinfo) -> ErrorCode:
    return excinfo.value.code


def _general(ctx: Context, x: np.ndarray) -> np.ndarray:
    ctx.set_inputs([InputData(0, x, DType.FLOAT32, Layout.NCHW)])
    ctx.run()
    return ctx.get_outputs(True)[0]


# --- loading ------------------------------------------------------------------------------------------------------
def test_general_path_matches_onnxruntime():
    x = image()
    with Context(convnet()) as ctx:
        y = _general(ctx, x)
    assert y.dtype == np.float32 and y.shape == Y_SHAPE
    np.testing.assert_allclose(y, reference(convnet(), x)[0], atol=ATOL)


@pytest.mark.parametrize("kind", ["bytes", "path", "npurt_path", "npurt_bytes", "compiled", "proto"])
def test_load_every_model_source(kind, tmp_path):
    import onnx
    if kind == "bytes":
        model = convnet()
    elif kind == "path":
        model = tmp_path / "m.onnx"
        model.write_bytes(convnet())
        model = str(model)
    elif kind == "npurt_path":
        model = tmp_path / "m.npurt"
        model.write_bytes(npurt_bytes())
    elif kind == "npurt_bytes":
        model = npurt_bytes()
    elif kind == "compiled":
        model = npurt.load_compiled(npurt_bytes())
    else:
        model = onnx.load_from_string(convnet())
    x = image(seed=3)
    with Context(model) as ctx:
        np.testing.assert_allclose(_general(ctx, x), reference(convnet(), x)[0], atol=ATOL)


def test_compiled_for_another_soc_is_platform_mismatch():
    with pytest.raises(NpuError) as e:
        Context(npurt_bytes("rk3568"))
    assert _code(e) is ErrorCode.PLATFORM_MISMATCH
    assert "rk3568" in str(e.value) and "rk3588" in str(e.value)


def test_onnx_compiles_for_the_device_soc(monkeypatch):
    monkeypatch.setenv("NPURT_SOC", "rk3568")
    with Context(convnet()) as ctx:
        assert ctx.compiled.soc == "rk3568"
        assert ctx.output_attr(0, "native").dims[-1] == 4           # fp16 C2 on RK3568


@pytest.mark.parametrize("model", [b"not a model", b"", "/nonexistent/model.onnx", 42])
def test_bad_models_are_invalid_model(model):
    with pytest.raises(NpuError) as e:
        Context(model)
    assert _code(e) is ErrorCode.INVALID_MODEL


def test_int8_general_path_is_bit_exact_with_executor():
    cm = int8_convnet()
    x = image(seed=5)
    with Context(cm) as ctx:
        y = _general(ctx, x)
        raw = ctx.get_outputs(False)[0]
    np.testing.assert_array_equal(y, run_once(cm, [x])[0])
    assert raw.dtype == np.int8 and raw.shape == Y_SHAPE


def test_uint8_nhwc_input_is_normalised_with_the_model_mean_std():
    cm = npurt.compile(convnet(), mean=[[127.5] * 3], std=[[127.5] * 3], progress=False)
    img = np.random.default_rng(7).integers(0, 256, (1, 8, 10, 3), dtype=np.uint8)
    with Context(cm) as ctx:
        ctx.set_inputs([InputData(0, img, DType.UINT8, Layout.NHWC)])
        ctx.run()
        y = ctx.get_outputs()[0]
    x = ((img.astype(np.float32) - 127.5) / 127.5).transpose(0, 3, 1, 2)
    np.testing.assert_allclose(y, reference(convnet(), x)[0], atol=ATOL)


def test_two_inputs_two_outputs():
    x, z = image((1, 3, 6, 6)), np.linspace(-1, 1, 5, dtype=np.float32).reshape(1, 5)
    with Context(two_io()) as ctx:
        ctx.set_inputs([InputData(0, x, DType.FLOAT32, Layout.NCHW), InputData(1, z, DType.FLOAT32, Layout.UNDEFINED)])
        ctx.run()
        y, v = ctx.get_outputs()
    ry, rv = reference(two_io(), x, z)
    np.testing.assert_allclose(y, ry, atol=ATOL)
    np.testing.assert_allclose(v, rv, atol=ATOL)


def test_general_input_errors():
    with Context(convnet()) as ctx:
        with pytest.raises(NpuError) as e:
            ctx.set_inputs([InputData(0, np.zeros(10, np.float32), DType.FLOAT32, Layout.NCHW)])
        assert _code(e) is ErrorCode.INVALID_INPUT and "param input size(40) < model input size(960)" in str(e.value)
        with pytest.raises(NpuError) as e:
            ctx.set_inputs([InputData(3, image(), DType.FLOAT32, Layout.NCHW)])
        assert _code(e) is ErrorCode.INVALID_INPUT
        with pytest.raises(NpuError) as e:
            ctx.get_outputs()
        assert _code(e) is ErrorCode.INVALID_OUTPUT
        with pytest.raises(NpuError) as e:
            ctx.run()
        assert _code(e) is ErrorCode.INVALID_INPUT and "input(x)" in str(e.value)


def test_general_pass_through_takes_native_bytes():
    cm = npurt.load_compiled(npurt_bytes())
    x = image(seed=9)
    native = cm.native_input_attrs[0]
    raw = np.zeros(native.size_with_stride, np.uint8)
    from npurt.runtime.user_io import pack_input
    pack_input(native, x, raw)
    with Context(cm) as ctx:
        ctx.set_inputs([InputData(0, raw, pass_through=True)])
        ctx.run()
        np.testing.assert_allclose(ctx.get_outputs()[0], reference(convnet(), x)[0], atol=ATOL)


# --- zero copy ----------------------------------------------------------------------------------------------------
def _write_native_input(buf, x: np.ndarray, attr) -> None:
    n, h, w, c = attr.dims
    view = buf.cpu_view(np.float16, shape=(n, h, attr.w_stride, c))
    view[:] = 0
    view[:, :, :w, :] = x.transpose(0, 2, 3, 1)


def test_zero_copy_native_binding_reads_and_writes_the_bound_memory():
    x = image(seed=11)
    with Context(convnet()) as ctx:
        ia, oa = ctx.input_attr(0, "native"), ctx.output_attr(0, "native")
        assert (ia.fmt, ia.dims, ia.w_stride, ia.size_with_stride) == (Layout.NHWC, [1, 8, 10, 3], 16, 768)
        bi, bo = ctx.device.alloc(ia.size_with_stride), ctx.device.alloc(oa.size_with_stride)
        try:
            ctx.bind(MemRef(bi), ia)
            ctx.bind(MemRef(bo), oa)
            _write_native_input(bi, x, ia)
            ctx.run()
            ex = ctx.executor
            assert np.shares_memory(ex.tensor_view("x"), bi.device_view())     # zero copy: the kernels read it
            assert np.shares_memory(ex.tensor_view("y"), bo.device_view())
            y = nc1hwc2_to_nchw(bo.cpu_view(np.float16, shape=tuple(oa.dims)), 4).astype(np.float32)
            np.testing.assert_allclose(y, reference(convnet(), x)[0], atol=ATOL)
            # run again with new data in the same memory: no re-binding needed
            x2 = image(seed=12)
            _write_native_input(bi, x2, ia)
            ctx.run()
            y = nc1hwc2_to_nchw(bo.cpu_view(np.float16, shape=tuple(oa.dims)), 4).astype(np.float32)
            np.testing.assert_allclose(y, reference(convnet(), x2)[0], atol=ATOL)
        finally:
            ctx.destroy()
            bi.free(), bo.free()


def test_zero_copy_edited_formats_are_converted():
    x = image(seed=13)
    with Context(convnet()) as ctx:
        ia = dataclasses.replace(ctx.input_attr(0, "native"), type=DType.FLOAT32, w_stride=10)
        oa = dataclasses.replace(ctx.output_attr(0, "logical"), type=DType.FLOAT32)
        bi, bo = ctx.device.alloc(240 * 4), ctx.device.alloc(320 * 4)
        try:
            ctx.bind(MemRef(bi), ia)
            ctx.bind(MemRef(bo), oa)
            bi.cpu_view(np.float32, shape=(1, 8, 10, 3))[:] = x.transpose(0, 2, 3, 1)
            ctx.run()
            np.testing.assert_allclose(bo.cpu_view(np.float32, shape=Y_SHAPE), reference(convnet(), x)[0], atol=ATOL)
            nhwc = dataclasses.replace(oa, fmt=Layout.NHWC)
            ctx.bind(MemRef(bo), nhwc)
            ctx.run()
            np.testing.assert_allclose(bo.cpu_view(np.float32, shape=(1, 8, 10, 4)),
                                       reference(convnet(), x)[0].transpose(0, 2, 3, 1), atol=ATOL)
        finally:
            ctx.destroy()
            bi.free(), bo.free()


def test_binding_rules():
    with Context(convnet()) as ctx:
        ia = ctx.input_attr(0, "native")
        small, big = ctx.device.alloc(100), ctx.device.alloc(4096)
        try:
            with pytest.raises(NpuError) as e:
                ctx.bind(MemRef(small), ia)
            assert "input(x) memory size must be: 768, but is: 100" in str(e.value)
            with pytest.raises(NpuError) as e:
                ctx.bind(MemRef(big), dataclasses.replace(ia, name="nope"))
            assert _code(e) is ErrorCode.INVALID_ARGUMENT and "nope" in str(e.value)
            with pytest.raises(NpuError) as e:
                ctx.bind(MemRef(big), dataclasses.replace(ia, type=DType.INT8, pass_through=1))
            assert "not supported in pass_through == 1" in str(e.value)
            ctx.bind(MemRef(big, 0, 768), ia)
            with pytest.raises(NpuError) as e:
                ctx.run()
            assert _code(e) is ErrorCode.INVALID_OUTPUT and "output(y) tensor not attached to memory!" in str(e.value)
            with pytest.raises(NpuError) as e:
                ctx.set_inputs([InputData(0, image(), DType.FLOAT32, Layout.NCHW)])
            assert "cannot be mixed" in str(e.value)
        finally:
            ctx.destroy()
            small.free(), big.free()
    with Context(convnet()) as ctx:
        _general(ctx, image())
        buf = ctx.device.alloc(4096)
        try:
            with pytest.raises(NpuError) as e:
                ctx.bind(MemRef(buf), ctx.input_attr(0, "native"))
            assert "cannot be mixed" in str(e.value)
        finally:
            buf.free()


def test_destroyed_user_memory_is_an_error_not_a_crash():
    with Context(convnet()) as ctx:
        ia, oa = ctx.input_attr(0, "native"), ctx.output_attr(0, "native")
        bi, bo = ctx.device.alloc(ia.size_with_stride), ctx.device.alloc(oa.size_with_stride)
        ctx.bind(MemRef(bi), ia)
        ctx.bind(MemRef(bo), oa)
        ctx.run()
        bi.free()
        with pytest.raises(NpuError) as e:
            ctx.run()
        assert _code(e) is ErrorCode.INVALID_HANDLE and "input(x)" in str(e.value)
        bo.free()


# --- memory ownership -----------------------------------------------------------------------------------------------
def test_weights_and_internal_outside():
    x = image(seed=21)
    opts = ContextOptions(weights_outside=True, internal_outside=True)
    with Context(convnet(), options=opts) as ctx:
        m = ctx.mem_size()
        assert m.dma_allocated == 0                         # the runtime allocated nothing
        dev = ctx.device
        ia = ctx.input_attr(0, "native")
        bi = dev.alloc(ia.size_with_stride)
        with pytest.raises(NpuError) as e:
            ctx.bind(MemRef(bi), ia)
        assert "You must call rknn_set_internal_mem before rknn_set_io_mem!" in vendor_message(e.value)
        wbuf, ibuf = dev.alloc(m.weight_size), dev.alloc(m.internal_size)
        with pytest.raises(NpuError) as e:
            ctx.set_internal_memory(MemRef(ibuf, 0, m.internal_size - 1))
        assert "internal memory size must be >=" in str(e.value)
        ctx.set_internal_memory(MemRef(ibuf))
        ctx.set_inputs([InputData(0, x, DType.FLOAT32, Layout.NCHW)])
        with pytest.raises(NpuError) as e:
            ctx.run()
        assert "rknn_set_weight_mem before rknn_run" in vendor_message(e.value)
        with pytest.raises(NpuError):
            ctx.set_weight_memory(MemRef(wbuf, 0, m.weight_size - 1))
        ctx.set_weight_memory(MemRef(wbuf))
        np.testing.assert_array_equal(wbuf.cpu_view(), ctx.compiled.weight_blob)   # the runtime copied them in
        ctx.run()
        np.testing.assert_allclose(ctx.get_outputs()[0], reference(convnet(), x)[0], atol=ATOL)
        for b in (bi, wbuf, ibuf):
            b.free()


def test_set_memory_without_the_outside_flags_is_refused():
    with Context(convnet()) as ctx:
        buf = ctx.device.alloc(1 << 16)
        try:
            with pytest.raises(NpuError) as e:
                ctx.set_weight_memory(MemRef(buf))
            assert "You must set RKNN_FLAG_MEM_ALLOC_OUTSIDE on rknn_init() if you want to call rknn_set_weight_mem!" \
                in vendor_message(e.value)
            with pytest.raises(NpuError) as e:
                ctx.set_internal_memory(MemRef(buf))
            assert "rknn_set_internal_mem!" in vendor_message(e.value)
        finally:
            buf.free()


def test_dup_shares_weights_owns_internal_and_outlives_its_source():
    x = image(seed=31)
    ctx = Context(convnet())
    dup = ctx.dup()
    try:
        assert dup._weights is ctx._weights and dup._weights.holders == 2
        assert dup._internal_buf is not ctx._internal_buf
        ctx.destroy()
        np.testing.assert_allclose(_general(dup, x), reference(convnet(), x)[0], atol=ATOL)
    finally:
        dup.destroy()


def test_share_weights_needs_the_same_network():
    with Context(convnet()) as src:
        with Context(convnet(), share_weights_with=src) as other:
            assert other._weights is src._weights
            assert other.mem_size().dma_allocated < src.mem_size().dma_allocated
        with pytest.raises(NpuError) as e:
            Context(convnet_other(), share_weights_with=src)
        assert _code(e) is ErrorCode.INVALID_MODEL


def test_model_buffer_zero_copy_reads_weights_in_place():
    data = npurt_bytes()
    dev = open_device()
    buf = dev.alloc(len(data))
    buf.cpu_view()[:] = np.frombuffer(data, np.uint8)
    x = image(seed=41)
    try:
        with Context(b"", model_buffer=MemRef(buf, 0, len(data))) as ctx:
            assert ctx._weights.buffer is None
            assert np.shares_memory(ctx._weights.view(), buf.device_view())
            np.testing.assert_allclose(_general(ctx, x), reference(convnet(), x)[0], atol=ATOL)
            buf.free()
            with pytest.raises(NpuError) as e:
                ctx.run()
            assert _code(e) is ErrorCode.INVALID_HANDLE and "model buffer" in str(e.value)
    finally:
        if buf.alive:
            buf.free()
        dev.close()


def test_info_only_allocates_nothing_and_cannot_run():
    dev = open_device()
    before = dev.stats().buffers
    try:
        with Context(convnet(), options=ContextOptions(info_only=True)) as ctx:
            assert dev.stats().buffers == before
            assert ctx.mem_size().internal_size > 0 and ctx.mem_size().weight_size > 0
            assert ctx.input_attr(0).name == "x"
            with pytest.raises(NpuError) as e:
                ctx.run()
            assert "COLLECT_MODEL_INFO_ONLY" in vendor_message(e.value)
    finally:
        dev.close()


def test_destroy_releases_everything_and_is_final():
    dev = open_device()
    base = dev.stats()
    try:
        ctx = Context(convnet())
        _general(ctx, image())
        assert dev.stats().buffers > base.buffers
        ctx.destroy()
        assert dev.stats().buffers == base.buffers and dev.stats().ddr_bytes == base.ddr_bytes
        for call in (ctx.run, lambda: ctx.input_attr(0), ctx.destroy, ctx.mem_size, ctx.dup):
            with pytest.raises(NpuError) as e:
                call()
            assert _code(e) is ErrorCode.INVALID_CONTEXT
    finally:
        dev.close()


# --- SRAM -------------------------------------------------------------------------------------------------------------
def test_sram_holds_the_internal_arena_and_is_returned_on_destroy():
    x = image((1, 3, 8, 200), seed=51)
    dev = open_device()
    total = dev.stats().sram_free
    try:
        ctx = Context(convnet(200), options=ContextOptions(sram=True))
        m = ctx.mem_size()
        assert m.sram_total == 956 * 1024 and m.sram_used >= m.internal_size
        assert m.sram_free == total - m.sram_used
        assert ctx._internal_buf.placement == "sram"
        np.testing.assert_allclose(_general(ctx, x), reference(convnet(200), x)[0], atol=ATOL)
        ctx.destroy()
        assert dev.stats().sram_free == total
    finally:
        dev.close()


def test_sram_split_sram_first_when_little_is_free():
    x = image((1, 3, 8, 200), seed=52)
    dev = open_device()
    hog = dev.alloc(dev.stats().sram_free - 4 * 4096, placement="sram")      # leave 4 pages for the context
    try:
        with Context(convnet(200), options=ContextOptions(sram=True)) as ctx:
            assert ctx._internal_buf.placement == "sram+ddr" and ctx._internal_buf.sram_size == 4 * 4096
            assert ctx.mem_size().sram_free == 0
            np.testing.assert_allclose(_general(ctx, x), reference(convnet(200), x)[0], atol=ATOL)
    finally:
        hog.free()
        dev.close()


def test_sram_on_a_soc_without_sram_warns_and_uses_ddr():
    msgs = []
    with Context(convnet(), soc="rk3568", options=ContextOptions(sram=True), log=lambda l, m: msgs.append((l, m))) \
            as ctx:
        assert ctx._internal_buf.placement == "ddr" and ctx.mem_size().sram_total == 0
    assert any(level == "warning" and "no NPU SRAM" in m for level, m in msgs)


# --- coherence ----------------------------------------------------------------------------------------------------
def test_strict_coherence_flush_and_invalidate():
    """strict mode: runtime-known memory is flushed / invalidated by the runtime unless the DISABLE flags say
    otherwise; then a missing sync gives stale data, deterministically."""
    x = image(seed=61)
    ref = reference(convnet(), x)[0]
    dev = open_device("rk3562", "strict")
    try:
        for flush, invalidate in ((True, True), (False, False)):
            opts = ContextOptions(flush_inputs=flush, invalidate_outputs=invalidate)
            with Context(convnet(), device=dev, options=opts) as ctx:
                ia = dataclasses.replace(ctx.input_attr(0, "native"), type=DType.FLOAT32, w_stride=10)
                oa = dataclasses.replace(ctx.output_attr(0, "logical"), type=DType.FLOAT32)
                bi, bo = dev.alloc(240 * 4), dev.alloc(320 * 4)
                ctx.bind(MemRef(bi), ia)
                ctx.bind(MemRef(bo), oa)
                bi.cpu_view(np.float32, shape=(1, 8, 10, 3))[:] = x.transpose(0, 2, 3, 1)
                ctx.run()
                out = bo.cpu_view(np.float32, shape=Y_SHAPE)
                if flush:
                    np.testing.assert_allclose(out, ref, atol=ATOL)
                else:
                    assert not out.any()                  # output not invalidated: the CPU sees its stale zeros
                    bo.sync("from_device")
                    assert not np.allclose(out, ref, atol=ATOL)   # input was not flushed: the NPU read zeros
                    bi.sync("to_device")
                    ctx.run()
                    bo.sync("from_device")
                    np.testing.assert_allclose(out, ref, atol=ATOL)
                bi.free(), bo.free()
    finally:
        dev.close()


def test_check_coherence_reports_a_missed_sync_by_buffer_name():
    x = image(seed=62)
    dev = open_device("rk3566", "check")
    msgs = []
    try:
        with Context(convnet(), device=dev, log=lambda l, m: msgs.append((l, m))) as ctx:
            ia = dataclasses.replace(ctx.input_attr(0, "native"), type=DType.FLOAT32, w_stride=10)
            oa = dataclasses.replace(ctx.output_attr(0, "logical"), type=DType.FLOAT32)
            with dma_alloc(240 * 4, device=dev) as din, dma_alloc(320 * 4, device=dev) as dout:
                ctx.bind(MemRef(din.buffer), ia)
                ctx.bind(MemRef(dout.buffer), oa)
                din.view(np.float32)[:] = x.transpose(0, 2, 3, 1).reshape(-1)
                ctx.run()                                 # external memory, CPU wrote, no sync: reported
                assert len(ctx.coherence_violations) == 1
                assert "input(x)" in ctx.coherence_violations[0] and "RKNN_MEMORY_SYNC_TO_DEVICE" in vendor_message(msgs[-1][1])
                din.sync(1)
                ctx.run()                                 # synced: nothing new
                assert len(ctx.coherence_violations) == 1
                np.testing.assert_allclose(dout.view(np.float32).reshape(Y_SHAPE), reference(convnet(), x)[0],
                                           atol=ATOL)
    finally:
        dev.close()


# --- perf, cores ----------------------------------------------------------------------------------------------------
def test_perf_counters():
    with Context(convnet(), options=ContextOptions(collect_perf=True)) as ctx:
        _general(ctx, image())
        assert ctx.perf.runs == 1 and ctx.perf.run_us > 0
        assert [op.name for op in ctx.perf.ops] == ["conv1", "conv2"]
        assert ctx.perf.ops[0].op_type == "ConvRelu"
        text = ctx.perf_detail()
        assert "conv1" in text and "Total Operator Elapsed Per Frame Time(us)" in text
    with Context(convnet()) as ctx:
        _general(ctx, image())
        assert ctx.perf.run_us > 0 and ctx.perf.ops == []
        text = ctx.perf_detail()              # without per-op timing: the total only, and why
        assert "conv1" not in text and "not collected" in text and "collect_perf" in text
        assert f"Total Run Elapsed Per Frame Time(us): {ctx.perf.run_us}" in text


@pytest.mark.parametrize("soc,good,bad", [("rk3588", [0, 1, 2, 4, 3, 7, 0xFFFF], [5, 6, 8, -1]),
                                          ("rk3576", [0, 1, 2, 3, 0xFFFF], [4, 7])])
def test_core_masks(soc, good, bad):
    with Context(convnet(), soc=soc) as ctx:
        for m in good:
            ctx.set_core_mask(m)
            assert ctx.core_mask == m
        for m in bad:
            with pytest.raises(NpuError) as e:
                ctx.set_core_mask(m)
            assert _code(e) is ErrorCode.INVALID_ARGUMENT and f"Not support core mask: {m}" in str(e.value)
        ctx.set_batch_core_num(2)
        with pytest.raises(NpuError):
            ctx.set_batch_core_num(ctx.profile.npu_cores + 1)


def test_core_mask_on_a_single_core_soc_is_not_supported():
    with Context(convnet(), soc="rk3568") as ctx:
        for call in (lambda: ctx.set_core_mask(1), lambda: ctx.set_batch_core_num(1)):
            with pytest.raises(NpuError) as e:
                call()
            assert _code(e) is ErrorCode.NOT_SUPPORTED


# --- dynamic shapes ---------------------------------------------------------------------------------------------------
def test_dynamic_shapes_general_and_zero_copy():
    with Context(dynamic_convnet()) as ctx:
        assert ctx.input_attr(0).dims == [1, 16, 16, 3]            # the largest shape first (NHWC)
        name, fmt, shapes = ctx.dynamic_range(0)
        assert (name, fmt, shapes) == ("x", Layout.NHWC, [(1, 8, 8, 3), (1, 16, 16, 3), (1, 12, 10, 3)])
        internal = ctx._internal_buf
        for s in ([1, 3, 8, 8], [1, 3, 12, 10], [1, 3, 16, 16]):
            ctx.set_input_shapes([s])
            assert ctx.input_attr(0, "current").dims == [1, s[2], s[3], 3]
            x = image(tuple(s), seed=s[2])
            np.testing.assert_allclose(_general(ctx, x), reference(dynamic_convnet(), x)[0], atol=ATOL)
            assert ctx._internal_buf is internal                     # allocated once, for the largest shape
        with pytest.raises(NpuError) as e:
            ctx.set_input_shapes([[1, 3, 9, 9]])
        assert _code(e) is ErrorCode.INVALID_ARGUMENT and "not among" in str(e.value)
        with pytest.raises(NpuError) as e:
            ctx.dup()
        assert _code(e) is ErrorCode.NOT_SUPPORTED
    with Context(dynamic_convnet()) as ctx:
        dev = ctx.device
        big_in = dev.alloc(ctx.input_attr(0).n_elems * 4)
        big_out = dev.alloc(ctx.output_attr(0).n_elems * 4)
        try:
            for s in ([1, 3, 8, 8], [1, 3, 12, 10]):
                ctx.set_input_shapes([s])
                with pytest.raises(NpuError):
                    ctx.run()                                         # bindings dropped by the shape change
                cur_in = dataclasses.replace(ctx.input_attr(0, "current"), type=DType.FLOAT32)
                cur_out = dataclasses.replace(ctx.output_attr(0, "current"), type=DType.FLOAT32)
                ctx.bind(MemRef(big_in), cur_in)
                ctx.bind(MemRef(big_out), cur_out)
                x = image(tuple(s), seed=7)
                ws = cur_in.w_stride                                  # rows padded to w_stride, as the demo copies
                assert ws == 16
                rows = big_in.cpu_view(np.float32, shape=(1, s[2], ws, 3))
                rows[:, :, :s[3], :] = x.transpose(0, 2, 3, 1)
                ctx.run()
                y = big_out.cpu_view(np.float32, nbytes=x.nbytes // 3 * 4).reshape(1, 4, s[2], s[3])
                np.testing.assert_allclose(y, reference(dynamic_convnet(), x)[0], atol=ATOL)
        finally:
            ctx.destroy()
            big_in.free(), big_out.free()


def test_static_model_has_no_dynamic_range():
    with Context(convnet()) as ctx:
        for call in (lambda: ctx.dynamic_range(0), lambda: ctx.set_input_shapes([[1, 3, 8, 10]])):
            with pytest.raises(NpuError) as e:
                call()
            assert _code(e) is ErrorCode.INVALID_MODEL


def test_compile_dynamic_round_trips_through_npurt(tmp_path):
    from npurt.runtime import compile_dynamic
    cm = compile_dynamic(dynamic_convnet(with_metadata=False), "rk3588", [[[1, 3, 8, 8]], [[1, 3, 12, 12]]])
    path = tmp_path / "dyn.npurt"
    cm.save(path)
    with Context(str(path)) as ctx:
        assert ctx.family.dynamic and ctx.input_attr(0).dims == [1, 12, 12, 3]
        ctx.set_input_shapes([[1, 3, 8, 8]])
        x = image((1, 3, 8, 8), seed=3)
        np.testing.assert_allclose(_general(ctx, x), reference(dynamic_convnet(), x)[0], atol=ATOL)


# --- threads ----------------------------------------------------------------------------------------------------------
class _Blocker:
    """Patches the context's executor call so a run started by the thread named "blocker" waits inside the run
    until released — a deterministic 'two runs at the same time'."""

    def __init__(self, monkeypatch):
        import threading
        import npurt.runtime.context as context_mod
        self.inside, self.release = threading.Event(), threading.Event()
        real = context_mod.run_executor

        def run(ex, collect):
            if threading.current_thread().name == "blocker":
                self.inside.set()
                assert self.release.wait(10)
            return real(ex, collect)

        monkeypatch.setattr(context_mod, "run_executor", run)

    def start(self, fn):
        import threading
        self.errors = []

        def body():
            try:
                fn()
            except Exception as exc:        # reported to the test
                self.errors.append(exc)

        self.thread = threading.Thread(target=body, name="blocker")
        self.thread.start()
        assert self.inside.wait(10)

    def finish(self):
        self.release.set()
        self.thread.join(10)
        assert not self.errors, self.errors


def test_two_threads_running_one_context_is_busy(monkeypatch):
    blocker = _Blocker(monkeypatch)
    with Context(convnet()) as ctx:
        ctx.set_inputs([InputData(0, image(), DType.FLOAT32, Layout.NCHW)])
        blocker.start(ctx.run)
        for call in (ctx.run, lambda: ctx.set_inputs([InputData(0, image(), DType.FLOAT32, Layout.NCHW)]),
                     ctx.destroy):
            with pytest.raises(NpuError) as e:
                call()
            assert _code(e) is ErrorCode.BUSY and "in use by another thread" in str(e.value)
        blocker.finish()
        ctx.run()                                          # free again


def test_separate_contexts_and_dups_run_concurrently(monkeypatch):
    blocker = _Blocker(monkeypatch)
    x = image(seed=71)
    with Context(convnet()) as a:
        b = a.dup()
        c = Context(convnet())
        try:
            for ctx in (a, b, c):
                ctx.set_inputs([InputData(0, x, DType.FLOAT32, Layout.NCHW)])
            blocker.start(a.run)
            b.run()                                       # while a is inside its run
            c.run()
            blocker.finish()
            for ctx in (a, b, c):
                np.testing.assert_allclose(ctx.get_outputs()[0], reference(convnet(), x)[0], atol=ATOL)
        finally:
            b.destroy()
            c.destroy()


def _one_buffer(device, size):
    big = device.alloc(size)
    return MemRef(big), MemRef(big), [big.free]


def _two_imports_of_one_file(device, size):
    """Two imports of one memfd; the fd the first came through is then closed and its number (most likely) reused
    for another file: the memory is still known by its file."""
    import os
    fd = os.memfd_create("internal", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, size)
    second = os.dup(fd)
    ia, ib = device.import_fd(fd, size), device.import_fd(second, size)
    os.close(fd)
    other = os.memfd_create("unrelated")
    return MemRef(ia), MemRef(ib), [ia.free, ib.free, lambda: os.close(second), lambda: os.close(other)]


@pytest.mark.parametrize("shared", [_one_buffer, _two_imports_of_one_file])
def test_shared_internal_memory_runs_one_after_the_other(monkeypatch, shared):
    """Contexts sharing internal memory (however each was given it) run in turn; a run reads no memory identity
    (no fstat: it was read when the buffers were made)."""
    import os
    blocker = _Blocker(monkeypatch)
    opts = ContextOptions(internal_outside=True)
    xa, xb = image(seed=81), image(seed=82)
    a, b = Context(convnet(), options=opts), Context(convnet_other(), options=opts)
    ref_a, ref_b, cleanup = shared(a.device, max(a.mem_size().internal_size, b.mem_size().internal_size))
    try:
        a.set_internal_memory(ref_a)
        b.set_internal_memory(ref_b)
        np.testing.assert_allclose(_general(a, xa), reference(convnet(), xa)[0], atol=ATOL)
        np.testing.assert_allclose(_general(b, xb), reference(convnet_other(), xb)[0], atol=ATOL)
        with monkeypatch.context() as no_fstat:
            no_fstat.setattr(os, "fstat", lambda fd: pytest.fail("a run called fstat"))
            a.run()
        np.testing.assert_allclose(a.get_outputs()[0], reference(convnet(), xa)[0], atol=ATOL)
        blocker.start(a.run)
        with pytest.raises(NpuError) as e:
            b.run()
        assert _code(e) is ErrorCode.BUSY and "internal memory" in str(e.value)
        blocker.finish()
        b.run()
    finally:
        a.destroy(), b.destroy()
        for step in cleanup:
            step()


def test_zero_copy_output_as_float32_nc1hwc2_and_int8_requantised():
    x = image(seed=91)
    with Context(convnet()) as ctx:
        oa = ctx.output_attr(0, "native")
        f32 = dataclasses.replace(oa, type=DType.FLOAT32)
        bi = ctx.device.alloc(960)
        bo = ctx.device.alloc(int(np.prod(oa.dims)) * 4)
        try:
            ctx.bind(MemRef(bi), dataclasses.replace(ctx.input_attr(0, "native"), type=DType.FLOAT32, w_stride=10))
            ctx.bind(MemRef(bo), f32)
            bi.cpu_view(np.float32)[:] = x.transpose(0, 2, 3, 1).reshape(-1)
            ctx.run()
            y = nc1hwc2_to_nchw(bo.cpu_view(np.float32, shape=tuple(oa.dims)), 4)
            np.testing.assert_allclose(y, reference(convnet(), x)[0], atol=ATOL)
        finally:
            ctx.destroy()
            bi.free(), bo.free()
    cm = int8_convnet()
    with Context(cm) as ctx:
        oa = ctx.output_attr(0, "logical")          # INT8 NCHW: the runtime unpacks NC1HWC2 and keeps int8
        assert oa.type is DType.INT8
        bi, bo = ctx.device.alloc(960), ctx.device.alloc(oa.n_elems)
        try:
            ctx.bind(MemRef(bi), dataclasses.replace(ctx.input_attr(0, "native"), type=DType.FLOAT32, w_stride=10))
            ctx.bind(MemRef(bo), oa)
            bi.cpu_view(np.float32)[:] = x.transpose(0, 2, 3, 1).reshape(-1)
            ctx.run()
            q = bo.cpu_view(np.int8, shape=Y_SHAPE).astype(np.float32)
            np.testing.assert_allclose((q - oa.zp) * oa.scale, run_once(cm, [x])[0], atol=1e-5)
        finally:
            ctx.destroy()
            bi.free(), bo.free()
