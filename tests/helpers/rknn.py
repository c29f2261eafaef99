"""Helpers shared by the RKNN mirror tests: init a context, query, a queried attr, a shape attr, one general-API
run, the vendor log line, and the state a failed call must leave unchanged."""
from __future__ import annotations

import ctypes

import numpy as np

from npurt.memory import open_devices
from npurt.rknn import *  # noqa: F403 - the mirror is meant to be used like the C header
from npurt.rknn import handles
from npurt.rknn.api_memory import output_view

from helpers.models import convnet


def state() -> tuple:
    """What a failed call must not change: live contexts, issued mems, every device's buffers and bytes."""
    return (len(handles.contexts), len(handles.mems),
            tuple((d.soc, d.stats().buffers, d.stats().ddr_bytes, d.stats().sram_bytes) for d in open_devices()))


def init(model=None, flag=0, extend=None) -> rknn_context:
    model = convnet() if model is None else model
    ctx = rknn_context()
    size = 0 if isinstance(model, str) else len(model)
    assert rknn_init(ctx, model, size, flag, extend) == RKNN_SUCC
    assert ctx.value
    return ctx


def query(ctx, cmd, info):
    return rknn_query(ctx, cmd, info, ctypes.sizeof(info))


def attr(ctx, cmd, index=0) -> rknn_tensor_attr:
    """The attr `cmd` (an *_ATTR query) reports for tensor `index` (the query must succeed)."""
    a = rknn_tensor_attr(index=index)
    assert query(ctx, cmd, a) == RKNN_SUCC
    return a


def shape_attr(dims, index=0, fmt=RKNN_TENSOR_NCHW) -> rknn_tensor_attr:
    """A 4-D rknn_tensor_attr with `dims`, as rknn_set_input_shapes takes it."""
    a = rknn_tensor_attr(index=index, n_dims=4, fmt=fmt)
    for j, d in enumerate(dims):
        a.dims[j] = d
    return a


def errline(capsys, *words) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("E RKNN:")]
    assert lines, f"no E RKNN: line in {err!r}"
    for w in words:
        assert any(w in line for line in lines), f"{w!r} not in {lines}"
    return err


def general_run(ctx, *arrays, fmt=RKNN_TENSOR_NCHW, want_float=1):
    """rknn_inputs_set (FLOAT32) -> rknn_run -> rknn_outputs_get -> copies -> rknn_outputs_release."""
    inputs = (rknn_input * len(arrays))()
    for i, a in enumerate(arrays):
        inputs[i].index, inputs[i].buf, inputs[i].size = i, a.ctypes.data, a.nbytes
        inputs[i].type = {np.float32: RKNN_TENSOR_FLOAT32, np.uint8: RKNN_TENSOR_UINT8}[a.dtype.type]
        inputs[i].fmt = fmt if a.ndim == 4 else RKNN_TENSOR_UNDEFINED
    assert rknn_inputs_set(ctx, len(arrays), inputs) == RKNN_SUCC
    assert rknn_run(ctx, None) == RKNN_SUCC
    io = rknn_input_output_num()
    query(ctx, RKNN_QUERY_IN_OUT_NUM, io)
    outputs = (rknn_output * io.n_output)()
    for i in range(io.n_output):
        outputs[i].index, outputs[i].want_float = i, want_float
    assert rknn_outputs_get(ctx, io.n_output, outputs, None) == RKNN_SUCC
    res = [output_view(o).copy() for o in outputs]
    assert rknn_outputs_release(ctx, io.n_output, outputs) == RKNN_SUCC
    return res
