"""Concat and Split on native slots: along channels when the channel counts are multiples of C2 (whole C1 blocks
are copied), or along H / W with the channels kept (slices of the 5-D slot: a decode head's (1, 3, 85, N) tensors
split on axis 2). int8 with different quantisation goes through a 256-entry requantisation table."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from npurt.exec.inplace.epilogue import copier, filler, padding_lanes, sequence, stored_table, table_gather
from npurt.exec.inplace.binding import StepBinding
from npurt.exec.inplace.slots import Skip, activation, all_values


def _requant_table(si, so) -> np.ndarray | None:
    """None when int8 `si` and `so` share quantisation (a plain copy), else the 256-entry requantisation table."""
    if si.scale == so.scale and si.zp == so.zp:
        return None
    _, values = all_values("int8", si)
    return stored_table("int8", values, so)


def _mover(dst: np.ndarray, src: np.ndarray, table: np.ndarray | None, channels: int) -> Callable[[], None]:
    """A function copying `src` into `dst` (NC1HWC2 views holding `channels` channels), through `table` when it is
    set (then the padding lanes are written zero)."""
    if table is None:
        return copier(dst, src)
    return table_gather(dst, table, src, channels)


def _spatial_axis(attrs: dict) -> int:
    """The Concat / Split axis (2 or 3 for H / W); Skip for other axes."""
    axis = int(attrs.get("axis", 0))
    axis += 4 if axis < 0 else 0
    if axis not in (2, 3):
        raise Skip
    return axis


def _spatial_moves(whole: str, parts: list[str], axis: int, ctx: StepBinding, into_whole: bool) -> list:
    """Moves between slot `whole` and the slices of it that are `parts` along H or W (axis 2 / 3 of both the
    logical and the 5-D shape): same channels, C1, C2 and kind; requantised through a table where int8 differs
    (padding lanes come along in a plain copy: zero in the source)."""
    sw, kind = activation(whole, ctx)
    w, start, moves = ctx.slot(whole), 0, []
    other = 5 - axis                                    # the spatial axis that stays
    for t in parts:
        sp, kp = activation(t, ctx)
        if kp != kind or sp.dims[1] != sw.dims[1] or sp.dims[4] != sw.dims[4] or sp.shape[:2] != sw.shape[:2] \
                or sp.shape[other] != sw.shape[other]:
            raise Skip
        n = sp.shape[axis]
        window = w[(slice(None),) * axis + (slice(start, start + n),)]
        src, dst = (sp, sw) if into_whole else (sw, sp)
        table = _requant_table(src, dst) if kind == "int8" else None
        part = ctx.slot(t)
        d, s = (window, part) if into_whole else (part, window)
        moves.append(_mover(d, s, table, sw.shape[1]))
        start += n
    if start != sw.shape[axis]:
        raise Skip
    return moves


def _run_moves(moves: list) -> Callable[[], None]:
    def run() -> None:
        for move in moves:
            move()
    return run


def spatial_concat(node: Any, attrs: dict, ctx: StepBinding) -> Callable[[], None]:
    """Concat along H or W: each input copied into its slice of the output slot."""
    return _run_moves(_spatial_moves(node.outputs[0], [t for t in node.inputs if t], _spatial_axis(attrs), ctx, True))


def spatial_split(node: Any, attrs: dict, ctx: StepBinding) -> Callable[[], None]:
    """Split along H or W: each output copied from its slice of the input slot (split sizes come from the outputs'
    shapes; a split input computed at run time is refused)."""
    if len(node.inputs) > 1 and node.inputs[1] and node.inputs[1] not in ctx.constants:
        raise Skip
    if not all(node.outputs):
        raise Skip
    return _run_moves(_spatial_moves(node.inputs[0], list(node.outputs), _spatial_axis(attrs), ctx, False))


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
        moves.append(_mover(o[:, c1:c1 + n1], ctx.slot(t)[:, :n1], table, si.shape[1]))
        c1 += n1
    if sum(ctx.storage[t].shape[1] for t in ins) != so.shape[1]:
        raise Skip
    return sequence(*moves, filler(padding_lanes(so, o)))


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
        moves += [_mover(o[:, :n1], x[:, c1:c1 + n1], _requant_table(si, so) if ki == "int8" else None,
                         so.shape[1]), filler(padding_lanes(so, o))]
        c1 += n1
    if sum(ctx.storage[t].shape[1] for t in outs) != si.shape[1]:
        raise Skip

    return sequence(*moves)
