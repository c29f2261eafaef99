"""Reshape/Flatten of an NC1HWC2 tensor, same stored type, no float32 round trip: into a plain (NCHW-ordered) slot,
one transposing copy of the C2 lanes into channel planes (the result is the NCHW data, reshaped); into another
NC1HWC2 slot (a head's (1, 255, H, W) -> (1, 3, 85, H*W)), those planes in temp memory, then packed into the
output's lanes."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

import npurt._kernels as _kernels
from npurt.exec.inplace.binding import StepBinding
from npurt.exec.inplace.epilogue import filler, padding_lanes, sequence
from npurt.exec.inplace.slots import Skip, activation, kind_of, same_storage_type
from npurt.tensor import Layout


def _lane_planes(lanes: np.ndarray, planes: np.ndarray, st) -> list[tuple[np.ndarray, np.ndarray]]:
    """(planes part, lanes part) view pairs between NC1HWC2 slot `lanes` (batch 1) of `st` and its C-ordered
    (C, H, W) data `planes` (flat): one pair for the full C2 blocks, one for the last partial block."""
    _, c, h, w = st.shape
    c2 = st.dims[4]
    full, rem = divmod(c, c2)
    x = lanes[0]
    pairs = []
    if full:
        pairs.append((planes[:full * c2 * h * w].reshape(full, c2, h * w),
                      x[:full].reshape(full, h * w, c2).transpose(0, 2, 1)))
    if rem:
        pairs.append((planes[full * c2 * h * w:].reshape(rem, h * w), x[full, :, :, :rem].reshape(h * w, rem).T))
    return pairs


def unpack_reshape(node: Any, ctx: StepBinding) -> Callable[[], None]:
    si, _ = activation(node.inputs[0], ctx)
    name = node.outputs[0] if len(node.outputs) == 1 else None
    if not name or name not in ctx.storage:
        raise Skip
    so = ctx.storage[name]
    if so.layout is Layout.NC1HWC2 and kind_of(so) is not None:
        return _repack_reshape(node.inputs[0], name, si, so, ctx)
    if so.layout in (Layout.NC1HWC2, Layout.NHWC) or tuple(so.dims) != tuple(so.shape) \
            or math.prod(so.shape) != math.prod(si.shape) or not same_storage_type(si, so) or si.shape[0] != 1:
        raise Skip
    moves = _lane_planes(ctx.slot(node.inputs[0]), ctx.slot(name).reshape(-1), si)

    def run() -> None:
        for dst, src in moves:
            np.copyto(dst, src)
    return run


def _repack_reshape(src: str, name: str, si, so, ctx: StepBinding) -> Callable[[], None]:
    """NC1HWC2 -> NC1HWC2 of another shape: unpack into planes (temp memory), pack those into the output's lanes
    (compiled lane transposes where the kernels run, else numpy's copies; padding lanes zero)."""
    if math.prod(so.shape) != math.prod(si.shape) or not same_storage_type(si, so) or si.shape[0] != 1 \
            or so.shape[0] != 1:
        raise Skip
    x, o = ctx.slot(src), ctx.slot(name)
    planes = ctx.typed_scratch(x.dtype, math.prod(si.shape))[:math.prod(si.shape)]
    p_in, p_out = planes.reshape(si.shape), planes.reshape(so.shape)
    unpack = _kernels.lanes_to_planes_fn(p_in, x)
    pack = _kernels.planes_to_lanes_fn(o, p_out)
    if unpack is not None and pack is not None:
        return sequence(unpack, pack)
    unpacks = [(d, s) for d, s in _lane_planes(x, planes, si)]
    packs = [(s, d) for d, s in _lane_planes(o, planes, so)]
    pads = filler(padding_lanes(so, o))

    def run() -> None:
        for dst, val in unpacks:
            np.copyto(dst, val)
        for dst, val in packs:
            np.copyto(dst, val)
        pads()
    return run
