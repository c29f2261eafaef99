"""Nearest Resize between NC1HWC2 slots (batch 1, channels kept): the source pixel of every output pixel is found at
bind by running the Resize kernel itself on a probe whose values are pixel indices, then each run gathers whole C2
groups (16-byte items) per output pixel. Exact for every coordinate/nearest mode."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from npurt.exec.inplace.binding import StepBinding
from npurt.exec.inplace.slots import Skip, activation, constant_inputs, same_storage_type


def resize_nearest(node: Any, kernel: Callable, attrs: dict, ctx: StepBinding) -> Callable[[], None]:
    si, ki = activation(node.inputs[0], ctx)
    so, ko = activation(node.outputs[0], ctx)
    if ki != ko or si.shape[:2] != so.shape[:2] or si.dims[4] != so.dims[4] or si.dims[1] != so.dims[1] \
            or si.shape[0] != 1 or not same_storage_type(si, so) or len(node.outputs) != 1:
        raise Skip
    extra = constant_inputs(node.inputs[1:], ctx)
    _, c, h, w = si.shape
    if h * w >= 1 << 24:
        raise Skip
    probe = np.broadcast_to(np.arange(h * w, dtype=np.float32).reshape(1, 1, h, w), si.shape)
    y = kernel([np.ascontiguousarray(probe)] + extra, attrs)[0]
    if tuple(y.shape) != tuple(so.shape) or not np.all(y == y[:, :1]):
        raise Skip
    source_pixel = y[0, 0].reshape(-1).astype(np.intp)
    c1, c2 = si.dims[1], si.dims[4]
    group = np.dtype(f"V{c2 * si.dtype.numpy_dtype.itemsize}")
    src = ctx.slot(node.inputs[0])[0].reshape(c1, h * w, c2).view(group)[..., 0]
    dst = ctx.slot(node.outputs[0])[0].reshape(c1, -1, c2).view(group)[..., 0]

    def run() -> None:
        np.take(src, source_pixel, axis=1, out=dst, mode="clip")
    return run
