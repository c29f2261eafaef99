"""Every documented RKNN-mirror error not covered by the flow tests: status, `E RKNN:` line, nothing else changed."""
from __future__ import annotations

import numpy as np
import pytest

from npurt.rknn import *  # noqa: F403
from helpers.rknn import errline, init, query, shape_attr, state
from helpers.models import convnet, dynamic_convnet, image, npurt_bytes


pytestmark = pytest.mark.usefixtures("no_leaks")   # every fd, device buffer, byte and handle given back


def check(capsys, status, words, call):
    before = state()
    assert call() == status
    errline(capsys, *words)
    assert state() == before


M = convnet()


@pytest.mark.parametrize("args,status,words", [
    ((M, -1, 0, None), RKNN_ERR_PARAM_INVALID, ["invalid model size"]),
    ((M, len(M), 0, rknn_init_extend(real_model_offset=-1)), RKNN_ERR_PARAM_INVALID, ["invalid real_model_offset"]),
    ((M, len(M), -3, None), RKNN_ERR_PARAM_INVALID, ["invalid flag"]),
    ((M, len(M), "0", None), RKNN_ERR_PARAM_INVALID, ["invalid flag"]),
    ((M, len(M), 0, rknn_mem_size()), RKNN_ERR_PARAM_INVALID, ["invalid extend"]),
    (("missing-model.onnx", 10, 0, None), RKNN_ERR_PARAM_INVALID, ["a model path is given with size 0"]),
])
def test_init_argument_errors(capsys, args, status, words):
    ctx = rknn_context()
    check(capsys, status, ["rknn_init", *words], lambda: rknn_init(ctx, *args))
    assert ctx.value == 0


def test_init_from_an_address(capsys):
    mem = rknn_create_mem2(0, len(M), RKNN_MEM_FLAG_ALLOC_NO_CONTEXT)
    mem_view(mem)[:] = np.frombuffer(M, np.uint8)
    check(capsys, RKNN_ERR_PARAM_INVALID, ["needs its size"], lambda: rknn_init(rknn_context(), mem.virt_addr, 0, 0,
                                                                                None))
    ctx = rknn_context()
    assert rknn_init(ctx, mem.virt_addr, len(M), 0, None) == RKNN_SUCC           # copied from runtime memory
    rknn_destroy(ctx)
    ext = rknn_init_extend(real_model_offset=8, real_model_size=len(M))
    check(capsys, RKNN_ERR_PARAM_INVALID, ["real_model_offset 8 + real_model_size"],
          lambda: rknn_init(rknn_context(), mem.virt_addr, len(M), RKNN_FLAG_MODEL_BUFFER_ZERO_COPY, ext))
    rknn_destroy_mem(0, mem)


def test_bad_soc_in_the_environment(capsys, monkeypatch):
    monkeypatch.setenv("NPURT_SOC", "rk9999")
    check(capsys, RKNN_ERR_PARAM_INVALID, ["unknown SoC 'rk9999'"], lambda: rknn_init(rknn_context(), M, len(M), 0,
                                                                                      None))


def test_outputs_get_errors(capsys):
    x = image()
    ctx = init()
    rknn_inputs_set(ctx, 1, [rknn_input(index=0, buf=x.ctypes.data, size=x.nbytes, type=RKNN_TENSOR_FLOAT32,
                                        fmt=RKNN_TENSOR_NCHW)])
    rknn_run(ctx, None)
    out = (rknn_output * 1)()
    out[0].index = 3
    check(capsys, RKNN_ERR_OUTPUT_INVALID, ["output index(3) >= output_num(1)"],
          lambda: rknn_outputs_get(ctx, 1, out, None))
    out[0].index, out[0].is_prealloc = 0, 1
    check(capsys, RKNN_ERR_OUTPUT_INVALID, ["buf is NULL with is_prealloc=1"],
          lambda: rknn_outputs_get(ctx, 1, out, None))
    check(capsys, RKNN_ERR_PARAM_INVALID, ["outputs: n=2 but 1 structs given"],
          lambda: rknn_outputs_get(ctx, 2, out, None))
    check(capsys, RKNN_ERR_PARAM_INVALID, ["expected rknn_output, got rknn_input"],
          lambda: rknn_outputs_get(ctx, 1, [rknn_input()], None))
    check(capsys, RKNN_ERR_PARAM_INVALID, ["expected an array of rknn_output"],
          lambda: rknn_outputs_get(ctx, 1, 5, None))
    with pytest.raises(Exception):
        output_view(rknn_output())
    rknn_destroy(ctx)


def test_inputs_set_zero_size(capsys):
    ctx = init()
    check(capsys, RKNN_ERR_INPUT_INVALID, ["param input size(0) is invalid"],
          lambda: rknn_inputs_set(ctx, 1, [rknn_input(index=0, buf=1234, size=0)]))
    rknn_destroy(ctx)


def test_inputs_set_pass_through_needs_the_native_type(capsys):
    """pass_through=1 hands the bytes to the NPU as they are: a float32 buffer on the fp16 model is the vendor's
    "invalid dtype ... request" error (not NaNs), and the inputs set before stay as they were."""
    ctx = init()
    attr = rknn_tensor_attr(index=0)
    assert query(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR, attr) == RKNN_SUCC
    assert attr.type == RKNN_TENSOR_FLOAT16 and attr.fmt == RKNN_TENSOR_NHWC
    n, h, w, ch = (attr.dims[i] for i in range(4))
    native = np.zeros((n, h, attr.w_stride, ch), np.float16)
    native[:, :, :w, :] = image(seed=3).transpose(0, 2, 3, 1)

    def run() -> np.ndarray:
        assert rknn_run(ctx, None) == RKNN_SUCC
        out = (rknn_output * 1)()
        out[0].want_float = 1
        assert rknn_outputs_get(ctx, 1, out, None) == RKNN_SUCC
        y = output_view(out[0]).copy()
        assert rknn_outputs_release(ctx, 1, out) == RKNN_SUCC
        return y

    assert rknn_inputs_set(ctx, 1, [rknn_input(index=0, buf=native.ctypes.data, size=native.nbytes, pass_through=1,
                                               type=RKNN_TENSOR_FLOAT16, fmt=RKNN_TENSOR_NHWC)]) == RKNN_SUCC
    good = run()
    assert np.isfinite(good).all()
    f32 = native.astype(np.float32) + 5
    for typ in (RKNN_TENSOR_FLOAT32, RKNN_TENSOR_INT8, 99):
        check(capsys, RKNN_ERR_INPUT_INVALID, ["rknn_inputs_set", "invalid dtype"],
              lambda: rknn_inputs_set(ctx, 1, [rknn_input(index=0, buf=f32.ctypes.data, size=f32.nbytes,
                                                          pass_through=1, type=typ, fmt=RKNN_TENSOR_NHWC)]))
    check(capsys, RKNN_ERR_INPUT_INVALID, ["FLOAT32 not supported in pass_through == 1", "request FLOAT16"],
          lambda: rknn_inputs_set(ctx, 1, [rknn_input(index=0, buf=f32.ctypes.data, size=f32.nbytes,
                                                      pass_through=1, type=RKNN_TENSOR_FLOAT32,
                                                      fmt=RKNN_TENSOR_NHWC)]))
    np.testing.assert_array_equal(run(), good)          # nothing changed: the last good input is still there
    rknn_destroy(ctx)


def test_set_input_shapes_needs_every_index(capsys):
    ctx = init(dynamic_convnet())
    a = shape_attr([1, 3, 8, 8], index=5)
    assert rknn_set_input_shapes(ctx, 1, [a]) == RKNN_SUCC          # out-of-range index: position is used
    rknn_destroy(ctx)


def test_memory_argument_errors(capsys):
    ctx = init()
    check(capsys, RKNN_ERR_PARAM_INVALID, ["invalid phys_addr"], lambda: rknn_create_mem_from_phys(ctx, 0, 0, 64)
          or RKNN_ERR_PARAM_INVALID)
    check(capsys, RKNN_ERR_PARAM_INVALID, ["invalid offset"], lambda: rknn_create_mem_from_fd(ctx, 3, 0, 64, "1")
          or RKNN_ERR_PARAM_INVALID)
    mem = rknn_create_mem(ctx, 4096)
    check(capsys, RKNN_ERR_PARAM_INVALID, ["attr is NULL"], lambda: rknn_set_io_mem(ctx, mem, None))
    check(capsys, RKNN_ERR_PARAM_INVALID, ["invalid attr: expected rknn_tensor_attr"],
          lambda: rknn_set_io_mem(ctx, mem, rknn_input()))
    a = rknn_tensor_attr(index=0)
    query(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR, a)
    a.fmt = 17
    check(capsys, RKNN_ERR_PARAM_INVALID, ["tensor layout : UNKNOW (17) not supported"],
          lambda: rknn_set_io_mem(ctx, mem, a))
    a.fmt = RKNN_TENSOR_NHWC
    check(capsys, RKNN_ERR_PARAM_INVALID, ["invalid io mem: not an rknn_tensor_mem"],
          lambda: rknn_set_io_mem(ctx, 1234, a))
    rknn_destroy_mem(ctx, mem)
    rknn_destroy(ctx)


def test_memory_of_another_device_is_refused(capsys, monkeypatch):
    monkeypatch.setenv("NPURT_SOC", "rk3568")
    foreign = rknn_create_mem2(0, 8192, RKNN_MEM_FLAG_ALLOC_NO_CONTEXT)
    monkeypatch.delenv("NPURT_SOC")
    ctx = init(flag=RKNN_FLAG_MEM_ALLOC_OUTSIDE)
    check(capsys, RKNN_ERR_PARAM_INVALID, ["memory of device rk3568, the context runs on rk3588"],
          lambda: rknn_set_internal_mem(ctx, foreign))
    rknn_destroy(ctx)
    assert rknn_destroy_mem(0, foreign) == RKNN_SUCC


def test_device_mem_info_without_a_runtime_model_buffer(capsys, monkeypatch):
    monkeypatch.setenv("NPURT_SOC", "rv1106")
    ctx = init(npurt_bytes("rv1106"), RKNN_FLAG_MEM_ALLOC_OUTSIDE)
    check(capsys, RKNN_ERR_PARAM_INVALID, ["no model buffer of its own"],
          lambda: query(ctx, RKNN_QUERY_DEVICE_MEM_INFO, rknn_tensor_mem()))
    rknn_destroy(ctx)


def test_dynamic_range_index_out_of_range(capsys):
    ctx = init(dynamic_convnet())
    check(capsys, RKNN_ERR_PARAM_INVALID, ["input index(2) >= input_num(1)"],
          lambda: query(ctx, RKNN_QUERY_INPUT_DYNAMIC_RANGE, rknn_input_range(index=2)))
    rknn_destroy(ctx)


def test_no_python_exception_escapes(capsys, monkeypatch):
    """A bug inside a call is still a status and an E line, never a traceback."""
    import npurt.rknn.api as api
    ctx = init()

    def boom(*a, **k):
        raise ZeroDivisionError("kaboom")

    monkeypatch.setattr(api.Context, "run", boom)
    assert rknn_run(ctx, None) == RKNN_ERR_FAIL
    errline(capsys, "internal error: ZeroDivisionError: kaboom")
    monkeypatch.undo()
    rknn_destroy(ctx)
