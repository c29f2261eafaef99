"""RKNN mirror, tensor attrs as RKNN applications read them: the sizes OUTPUT_ATTR and NATIVE_OUTPUT_ATTR report
agree (rknn-api-facts §5: an output's size_with_stride is the native footprint), for widths that are not a
multiple of 16 too; a buffer of that size runs the model in place."""
from __future__ import annotations

import math

import numpy as np
import pytest

import npurt
from npurt.rknn import *  # noqa: F403 - the mirror is meant to be used like the C header
from npurt.rknn import handles
from test_rknn_api_init import init, query
from test_runtime_models import convnet, image, reference


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.delenv("NPURT_SOC", raising=False)
    monkeypatch.delenv("NPURT_COHERENCE", raising=False)
    monkeypatch.delenv("RKNN_LOG_LEVEL", raising=False)
    n_ctx, n_mem = len(handles.contexts), len(handles.mems)
    yield
    assert len(handles.contexts) == n_ctx and len(handles.mems) == n_mem, "test leaked contexts or mems"


def attr(ctx, cmd, index=0) -> rknn_tensor_attr:
    a = rknn_tensor_attr(index=index)
    assert query(ctx, cmd, a) == RKNN_SUCC
    return a


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
