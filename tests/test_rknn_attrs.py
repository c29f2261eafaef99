"""RKNN mirror, tensor attrs as RKNN applications read them: the sizes OUTPUT_ATTR and NATIVE_OUTPUT_ATTR report
agree (as librknnrt reports them: an output's size_with_stride is the native footprint), for widths that are not a
multiple of 16 too, and a buffer of that size runs the model in place; INPUT_ATTR of a 4-D image input is NHWC
[1,H,W,C] as on the boards, and applications can size and feed their images from it as reported."""
from __future__ import annotations

import math

import numpy as np
import pytest

import npurt
from npurt.rknn import *  # noqa: F403 - the mirror is meant to be used like the C header
from helpers.models import convnet, image, reference
from helpers.rknn import attr, init

pytestmark = pytest.mark.usefixtures("no_leaks")   # every fd, device buffer, byte and handle given back


def _model(width: int, int8: bool) -> bytes:
    if not int8:
        return convnet(width)
    calib = [image((1, 3, 8, width), seed=s) for s in range(4)]
    return npurt.compile(convnet(width), quantize=calib, progress=False).to_bytes()


@pytest.mark.parametrize("int8", [False, True], ids=["fp16", "int8"])
@pytest.mark.parametrize("width", [50, 25, 32])
def test_output_size_with_stride_is_the_native_footprint(width, int8):
    ctx = init(_model(width, int8))
    try:
        logical, native = attr(ctx, RKNN_QUERY_OUTPUT_ATTR), attr(ctx, RKNN_QUERY_NATIVE_OUTPUT_ATTR)
        current = attr(ctx, RKNN_QUERY_CURRENT_OUTPUT_ATTR)
        n, c1, h, w, c2 = native.dims[:5]
        assert native.fmt == RKNN_TENSOR_NC1HWC2 and (n, c1 * c2 >= 4, h, w) == (1, True, 8, width)
        footprint = c1 * h * w * c2 * (1 if int8 else 2)
        assert native.size_with_stride == footprint
        assert logical.size_with_stride == current.size_with_stride == footprint
        assert logical.size == native.size == 4 * 8 * width * (1 if int8 else 2)
        assert logical.fmt == RKNN_TENSOR_NCHW and logical.w_stride == 0
        # A buffer of OUTPUT_ATTR's size_with_stride holds the native output: bound in place, runs, is right.
        x = image((1, 3, 8, width))
        ia = attr(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR)
        ia.type, ia.fmt, ia.w_stride = RKNN_TENSOR_FLOAT32, RKNN_TENSOR_NCHW, 0
        in_mem = rknn_create_mem(ctx, x.nbytes)
        out_mem = rknn_create_mem(ctx, logical.size_with_stride)
        mem_view(in_mem, np.float32)[:] = x.reshape(-1)
        assert rknn_set_io_mem(ctx, in_mem, ia) == RKNN_SUCC
        assert rknn_set_io_mem(ctx, out_mem, native) == RKNN_SUCC
        assert rknn_run(ctx, None) == RKNN_SUCC
        raw = mem_view(out_mem, np.int8 if int8 else np.float16, count=math.prod(native.dims[:5]))
        got = raw.reshape(n, c1, h, w, c2).transpose(0, 1, 4, 2, 3).reshape(n, c1 * c2, h, w)[:, :4]
        got = (got.astype(np.float32) - native.zp) * native.scale if int8 else got.astype(np.float32)
        want = reference(convnet(width), x)[0]
        assert np.abs(got - want).max() < (0.1 * np.abs(want).max() if int8 else 2e-2)
        for m in (in_mem, out_mem):
            assert rknn_destroy_mem(ctx, m) == RKNN_SUCC
    finally:
        assert rknn_destroy(ctx) == RKNN_SUCC


# --- INPUT_ATTR of a 4-D image input: NHWC [1,H,W,C], as the boards report ------------------------------------------
def _image_input_model(channels: int) -> bytes:
    """x [1,C,8,10] -> Conv1x1 (4 ch) -> y: an image input (C 3) or a feature-map input (C 8, native NC1HWC2)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = np.random.default_rng(channels).normal(0, 0.3, (4, channels, 1, 1)).astype(np.float32)
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"])], "img",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, channels, 8, 10])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 10])],
                          [numpy_helper.from_array(w, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m.SerializeToString()


@pytest.mark.parametrize("channels", [3, 8])
def test_input_attr_is_nhwc_and_apps_can_use_it_as_reported(channels):
    """An application sizes its image from INPUT_ATTR's dims and passes the reported fmt back with interleaved HWC
    bytes, in both the general and the zero-copy path; both give onnxruntime's numbers."""
    model = _image_input_model(channels)
    ctx = init(model)
    try:
        ia = attr(ctx, RKNN_QUERY_INPUT_ATTR)
        nhwc = attr(ctx, RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR)
        native = attr(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR)
        assert ia.fmt == RKNN_TENSOR_NHWC and list(ia.dims[:ia.n_dims]) == [1, 8, 10, channels]
        assert (ia.w_stride, ia.size_with_stride, ia.n_elems) == (16, 8 * 16 * channels * 2, 8 * 10 * channels)
        assert bytes(ia) == bytes(nhwc)                                   # INPUT_ATTR is the NHWC variant
        assert native.fmt == (RKNN_TENSOR_NHWC if channels == 3 else RKNN_TENSOR_NC1HWC2)
        n, h, w, c = ia.dims[:4]
        hwc = np.random.default_rng(1).uniform(-1, 1, (n, h, w, c)).astype(np.float32)
        want = reference(model, np.ascontiguousarray(hwc.transpose(0, 3, 1, 2)))[0]
        # general path: rknn_input.fmt = the reported fmt, the bytes interleaved HWC
        inp = rknn_input(index=0, buf=hwc.ctypes.data, size=hwc.nbytes, type=RKNN_TENSOR_FLOAT32, fmt=ia.fmt)
        assert rknn_inputs_set(ctx, 1, [inp]) == RKNN_SUCC and rknn_run(ctx, None) == RKNN_SUCC
        out = rknn_output(index=0, want_float=1)
        assert rknn_outputs_get(ctx, 1, [out], None) == RKNN_SUCC
        np.testing.assert_allclose(output_view(out).reshape(want.shape), want, atol=2e-2)
        assert rknn_outputs_release(ctx, 1, [out]) == RKNN_SUCC
    finally:
        assert rknn_destroy(ctx) == RKNN_SUCC
    # zero copy: the queried INPUT_ATTR as it is (fp16 NHWC rows of w_stride), a buffer of its size_with_stride
    ctx = init(model)
    try:
        ia = attr(ctx, RKNN_QUERY_INPUT_ATTR)
        oa = attr(ctx, RKNN_QUERY_OUTPUT_ATTR)
        oa.type = RKNN_TENSOR_FLOAT32
        imem, omem = rknn_create_mem(ctx, ia.size_with_stride), rknn_create_mem(ctx, oa.n_elems * 4)
        rows = mem_view(imem, np.float16).reshape(n, h, ia.w_stride, c)
        rows[:, :, :w, :] = hwc
        assert rknn_set_io_mem(ctx, imem, ia) == RKNN_SUCC and rknn_set_io_mem(ctx, omem, oa) == RKNN_SUCC
        assert rknn_run(ctx, None) == RKNN_SUCC
        np.testing.assert_allclose(mem_view(omem, np.float32).reshape(want.shape), want, atol=2e-2)
        for m in (imem, omem):
            assert rknn_destroy_mem(ctx, m) == RKNN_SUCC
    finally:
        assert rknn_destroy(ctx) == RKNN_SUCC


def test_non_image_inputs_keep_the_onnx_layout():
    from helpers.models import two_io
    ctx = init(two_io())
    try:
        z = attr(ctx, RKNN_QUERY_INPUT_ATTR, 1)
        assert z.fmt == RKNN_TENSOR_UNDEFINED and list(z.dims[:z.n_dims]) == [1, 5] and z.w_stride == 0
    finally:
        assert rknn_destroy(ctx) == RKNN_SUCC
