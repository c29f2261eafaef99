"""Helpers shared by the RKNN mirror tests: init a context, query, a shape attr, the vendor log line, and the state
a failed call must leave unchanged."""
from __future__ import annotations

import ctypes

from npurt.memory import open_devices
from npurt.rknn import *  # noqa: F403 - the mirror is meant to be used like the C header
from npurt.rknn import handles

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
