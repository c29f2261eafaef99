"""Concat and Split along channels on native slots: when the channel counts are multiples of C2, whole C1 blocks
are copied (int8 with different quantisation goes through a 256-entry requantisation table)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

import npurt._kernels as _kernels
from npurt.exec.inplace.epilogue import copier, padding_lanes, stored_table, zero
from npurt.exec.inplace.binding import StepBinding
from npurt.exec.inplace.slots import Skip, activation, all_values, bits


def _requant_table(si, so) -> np.ndarray | None:
    """None when int8 `si` and `so` share quantisation (a plain copy), else the 256-entry requantisation table."""
    if si.scale == so.scale and si.zp == so.zp:
        return None
    _, values = all_values("int8", si)
    return stored_table("int8", values, so)


def _mover(dst: np.ndarray, src: np.ndarray, table: np.ndarray | None) -> Callable[[], None]:
    """A function copying `src` into `dst`, through `table` when it is set (compiled where the kernels take it)."""
    if table is None:
        return copier(dst, src)
    d, s = bits(dst), bits(src)
    return _kernels.lookup_fn(d, table, s) or (lambda: np.take(table, s, out=d, mode="clip"))


def concat(node: Any, attrs: dict, ctx: StepBinding) -> Callable[[], None]:
    so, ko = activation(node.outputs[0], ctx)
    axis = int(attrs.get("axis", 0))
    if axis < 0:
        axis += 4
    ins = [t for t in node.inputs if t]
    if axis != 1 or so.shape[0] != 1:
        raise Skip
    c2 = so.dims[4]
    o = ctx.slot(node.outputs[0])
    moves, c1 = [], 0
    for k, t in enumerate(ins):
        si, ki = activation(t, ctx)
        if ki != ko or si.dims[4] != c2 or si.shape[2:] != so.shape[2:] or (si.shape[1] % c2 and k != len(ins) - 1):
            raise Skip
        n1 = -(-si.shape[1] // c2)
        table = _requant_table(si, so) if ko == "int8" else None
        moves.append(_mover(o[:, c1:c1 + n1], ctx.slot(t)[:, :n1], table))
        c1 += n1
    if sum(ctx.storage[t].shape[1] for t in ins) != so.shape[1]:
        raise Skip
    pads = padding_lanes(so, o)

    def run() -> None:
        for move in moves:
            move()
        zero(pads)
    return run


def split(node: Any, ctx: StepBinding) -> Callable[[], None]:
    si, ki = activation(node.inputs[0], ctx)
    c2 = si.dims[4]
    x = ctx.slot(node.inputs[0])
    if si.shape[0] != 1:
        raise Skip
    moves, c1 = [], 0
    outs = [t for t in node.outputs if t]
    if len(outs) != len(node.outputs):
        raise Skip
    for k, t in enumerate(outs):
        so, ko = activation(t, ctx)
        if ko != ki or so.dims[4] != c2 or so.shape[2:] != si.shape[2:] or so.shape[0] != 1:
            raise Skip
        if so.shape[1] % c2 and k != len(outs) - 1:
            raise Skip
        n1 = -(-so.shape[1] // c2)
        o = ctx.slot(t)
        moves.append((_mover(o[:, :n1], x[:, c1:c1 + n1], _requant_table(si, so) if ki == "int8" else None),
                      padding_lanes(so, o)))
        c1 += n1
    if sum(ctx.storage[t].shape[1] for t in outs) != si.shape[1]:
        raise Skip

    def run() -> None:
        for move, pads in moves:
            move()
            zero(pads)
    return run
