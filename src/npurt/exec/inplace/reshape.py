"""Reshape/Flatten of an NC1HWC2 tensor into a plain (NCHW-ordered) slot: one same-type transposing copy of the C2
lanes into channel planes (no float32 round trip; the result is the NCHW data, reshaped)."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from npurt.exec.inplace.binding import StepBinding
from npurt.exec.inplace.slots import Skip, activation, same_storage_type
from npurt.tensor import Layout


def unpack_reshape(node: Any, ctx: StepBinding) -> Callable[[], None]:
    si, _ = activation(node.inputs[0], ctx)
    name = node.outputs[0] if len(node.outputs) == 1 else None
    if not name or name not in ctx.storage:
        raise Skip
    so = ctx.storage[name]
    if so.layout in (Layout.NC1HWC2, Layout.NHWC) or tuple(so.dims) != tuple(so.shape) \
            or math.prod(so.shape) != math.prod(si.shape) or not same_storage_type(si, so) or si.shape[0] != 1:
        raise Skip
    _, c, h, w = si.shape
    c2 = si.dims[4]
    full, rem = divmod(c, c2)
    x = ctx.slot(node.inputs[0])[0]
    o = ctx.slot(name).reshape(-1)
    moves = []
    if full:
        moves.append((o[:full * c2 * h * w].reshape(full, c2, h * w),
                      x[:full].reshape(full, h * w, c2).transpose(0, 2, 1)))
    if rem:
        moves.append((o[full * c2 * h * w:].reshape(rem, h * w), x[full, :, :, :rem].reshape(h * w, rem).T))

    def run() -> None:
        for dst, src in moves:
            np.copyto(dst, src)
    return run
