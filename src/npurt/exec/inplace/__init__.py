"""In-place steps: ops computed straight on their NC1HWC2 slots, without the generic
slot -> NCHW float32 -> kernel -> NCHW float32 -> slot round trip.

`prepare(...)` returns, for a node it can handle, a zero-argument callable that reads the node's inputs from their
slots and writes its outputs into theirs (native layout and type, padding lanes zero); None otherwise, and the
executor keeps the generic path. Every buffer is prepared at bind; the per-run work is a few numpy calls with
`out=`. The arithmetic is the generic path's, except that int8 dense convs and an int8 classifier's Gemm sum in
integers as the NPU does (`conv_int8`). One module per op family: `elementwise` (unary tables, binary ops),
`channels` (Concat / Split by whole C1 blocks), `reshape` (NC1HWC2 into a plain slot), `resize` (nearest), `pool`
(MaxPool, GlobalAveragePool), `conv` (dense and depthwise; `conv_int8` also the int8 Gemm), `plain` (Concat / Split /
unary ops, Gemm / Softmax on plainly stored tensors); `epilogue` is the store they share.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from npurt.exec.inplace import plain
from npurt.exec.inplace.channels import concat, spatial_concat, spatial_split, split
from npurt.exec.inplace.conv import conv
from npurt.exec.inplace.conv_int8 import gemm_int8
from npurt.exec.inplace.elementwise import BINARY, UNARY, binary, unary
from npurt.exec.inplace.pool import global_average_pool, max_pool, whole_map_average_pool
from npurt.exec.inplace.reshape import unpack_reshape
from npurt.exec.inplace.resize import resize_nearest
from npurt.exec.inplace.binding import StepBinding
from npurt.exec.inplace.slots import Skip

__all__ = ["StepBinding", "prepare"]


def prepare(node: Any, kernel: Callable, attrs: dict, ctx: StepBinding) -> Callable[[], None] | None:
    """A zero-argument step computing `node` directly on its slots, or None when the in-place path does not
    handle it (op, layout or type) and the executor must use the generic read/kernel/write path."""
    try:
        with np.errstate(all="ignore"):
            return _prepare(node.op_type, node, kernel, attrs, ctx)
    except Skip:
        return None


def _first(*builders: Callable[[], Callable[[], None]]) -> Callable[[], None]:
    """The step of the first builder that does not Skip (Skip if all do)."""
    for build in builders[:-1]:
        try:
            return build()
        except Skip:
            pass
    return builders[-1]()


def _prepare(op: str, node: Any, kernel: Callable, attrs: dict, ctx: StepBinding) -> Callable[[], None] | None:
    if op in UNARY:
        return _first(lambda: unary(node, kernel, attrs, ctx), lambda: plain.unary(node, kernel, attrs, ctx))
    if op in BINARY:
        return binary(node, kernel, attrs, ctx)
    if op == "Concat":
        return _first(lambda: concat(node, attrs, ctx), lambda: spatial_concat(node, attrs, ctx),
                      lambda: plain.concat(node, attrs, ctx))
    if op == "Split":
        return _first(lambda: split(node, ctx), lambda: spatial_split(node, attrs, ctx),
                      lambda: plain.split(node, attrs, ctx))
    if op == "Conv":
        return conv(node, attrs, ctx)
    if op == "MaxPool":
        return max_pool(node, attrs, ctx)
    if op == "GlobalAveragePool":
        return global_average_pool(node, attrs, ctx)
    if op == "AveragePool":
        return whole_map_average_pool(node, attrs, ctx)
    if op == "Gemm":
        return _first(lambda: gemm_int8(node, attrs, ctx), lambda: plain.gemm(node, attrs, ctx),
                      lambda: plain.kernel_step(node, kernel, attrs, ctx))
    if op == "Softmax":
        return _first(lambda: plain.softmax(node, attrs, ctx), lambda: plain.kernel_step(node, kernel, attrs, ctx))
    if op in plain.KERNEL_OPS:
        return plain.kernel_step(node, kernel, attrs, ctx)
    if op in ("Reshape", "Flatten"):
        return unpack_reshape(node, ctx)
    if op == "Resize" and attrs.get("mode", "nearest") == "nearest":
        return resize_nearest(node, kernel, attrs, ctx)
    return None
