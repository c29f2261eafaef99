"""Ops on plain slots: tensors stored in their logical shape, C order (UNDEFINED or NCHW layout, no padded rows), as
float16 or quantised int8 — a detection head's (1, C, N) tensors. Concat / Split are block copies (int8 with other
quantisation through the 256-entry requantisation table); unary ops are the table gather of `elementwise`; Gemm /
Softmax run their kernel's arithmetic on buffers prepared at bind (`gemm`, `softmax`), other cases call the kernel
between the slots (`kernel_step`); all also on (1, C, 1, 1) NC1HWC2 slots, whose values are contiguous."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

import npurt._kernels as _kernels
from npurt.exec.inplace.binding import StepBinding
from npurt.exec.inplace.epilogue import copier, filler, narrow, sequence, stored_table, widen
from npurt.exec.inplace.slots import Skip, activation, all_values, bits, kind_of, stored_kind
from npurt.exec.kernels import apply_activation
from npurt.exec.kernels.gemm import gemm_operands
from npurt.exec.kernels.normalization import _softmax_axis, reduced_shape, softmax_into
from npurt.tensor import Layout


def plain_kind(st) -> str | None:
    """'fp16' / 'int8' for a tensor stored plainly (its logical shape in C order), else None."""
    if st.layout not in (Layout.UNDEFINED, Layout.NCHW) or tuple(st.dims) != tuple(st.shape):
        return None
    return stored_kind(st)


def _plain(name: str, ctx: StepBinding) -> tuple[Any, str]:
    return activation(name, ctx, plain_kind)


def _mover(dst: np.ndarray, src: np.ndarray, si, so, kind: str) -> Callable[[], None]:
    """Copy `src` into `dst`, requantised through a table when int8 quantisations differ."""
    if kind == "fp16" or (si.scale == so.scale and si.zp == so.zp):
        return copier(dst, src)
    _, values = all_values("int8", si)
    table = stored_table("int8", values, so)
    d, s = bits(dst), bits(src)
    return _kernels.lookup_fn(d, table, s) or (lambda: np.take(table, s, out=d, mode="clip"))


def _axis(attrs: dict, ndim: int) -> int:
    axis = int(attrs.get("axis", 0))
    return axis + ndim if axis < 0 else axis


def concat(node: Any, attrs: dict, ctx: StepBinding) -> Callable[[], None]:
    so, ko = _plain(node.outputs[0], ctx)
    axis = _axis(attrs, len(so.shape))
    o = ctx.slot(node.outputs[0])
    moves, start = [], 0
    for t in (t for t in node.inputs if t):
        si, ki = _plain(t, ctx)
        if ki != ko or len(si.shape) != len(so.shape) or si.shape[:axis] != so.shape[:axis] \
                or si.shape[axis + 1:] != so.shape[axis + 1:]:
            raise Skip
        n = si.shape[axis]
        moves.append(_mover(o[(slice(None),) * axis + (slice(start, start + n),)], ctx.slot(t), si, so, ko))
        start += n
    if start != so.shape[axis]:
        raise Skip

    def run() -> None:
        for move in moves:
            move()
    return run


def split(node: Any, attrs: dict, ctx: StepBinding) -> Callable[[], None]:
    si, ki = _plain(node.inputs[0], ctx)
    if len(node.inputs) > 1 and node.inputs[1] and node.inputs[1] not in ctx.constants:
        raise Skip
    axis = _axis(attrs, len(si.shape))
    x = ctx.slot(node.inputs[0])
    moves, start = [], 0
    for t in node.outputs:
        so, ko = _plain(t, ctx)
        if ko != ki or len(so.shape) != len(si.shape) or so.shape[:axis] != si.shape[:axis] \
                or so.shape[axis + 1:] != si.shape[axis + 1:]:
            raise Skip
        n = so.shape[axis]
        moves.append(_mover(ctx.slot(t), x[(slice(None),) * axis + (slice(start, start + n),)], si, so, ki))
        start += n
    if start != si.shape[axis]:
        raise Skip

    def run() -> None:
        for move in moves:
            move()
    return run


def unary(node: Any, kernel: Callable, attrs: dict, ctx: StepBinding) -> Callable[[], None]:
    """A unary op between two plain slots of one shape: a table over every stored value, computed at bind by the
    op's own kernel (as `elementwise.unary`)."""
    si, ki = _plain(node.inputs[0], ctx)
    so, ko = _plain(node.outputs[0], ctx)
    if ki != ko or si.shape != so.shape or len(node.outputs) != 1 or any(t for t in node.inputs[1:]):
        raise Skip
    _, values = all_values(ki, si)
    y = kernel([values], attrs)[0]
    if y.shape != values.shape:
        raise Skip
    table = stored_table(ki, y, so)
    src, dst = bits(ctx.slot(node.inputs[0])), bits(ctx.slot(node.outputs[0]))
    return _kernels.lookup_fn(dst, table, src) or (lambda: np.take(table, src, out=dst, mode="clip"))


KERNEL_OPS = ("Gemm", "Softmax")


def _values(name: str, ctx: StepBinding) -> tuple[Any, str, np.ndarray, np.ndarray | None]:
    """(storage, kind, the stored values in their logical shape, padding lanes or None) of a plain slot, or of an
    NC1HWC2 slot of shape (1, C, 1, 1) (a classifier's logits: its C values are the first C lanes, in order)."""
    st = ctx.storage.get(name) if name and name not in ctx.constants else None
    if st is not None and kind_of(st) is not None and len(st.shape) == 4 \
            and st.shape[0] == st.shape[2] == st.shape[3] == 1:
        x = ctx.slot(name)
        if not x.flags.c_contiguous:
            raise Skip
        flat = x.reshape(-1)
        return st, kind_of(st), flat[:st.shape[1]].reshape(st.shape), flat[st.shape[1]:]
    st, kind = _plain(name, ctx)
    return st, kind, ctx.slot(name), None


def kernel_step(node: Any, kernel: Callable, attrs: dict, ctx: StepBinding) -> Callable[[], None]:
    """An op whose activations are all plain fp16 or int8 slots, or (1, C, 1, 1) NC1HWC2 ones (a classifier's Gemm
    / Softmax): its own kernel on the values widened to float32 (int8 dequantised as the slot reader does), stored
    back as the slot writer stores them (float16 cast, or quantised) — the generic path's arithmetic without its
    per-run glue."""
    loads, args = [], []
    for t in node.inputs:
        if t and t in ctx.constants:
            args.append(ctx.constants[t])
            continue
        if not t or len(loads) == 2:
            raise Skip
        st, kind, x, _ = _values(t, ctx)
        wide = (ctx.scratch if not loads else ctx.scratch2)(x.size).reshape(x.shape)
        loads.append(widen(wide, x, st, kind))
        args.append(wide)
    stores, pads = [], []
    for t in node.outputs:
        if not t:
            raise Skip
        st, kind, dst, pad = _values(t, ctx)
        staged = np.empty(dst.shape, np.float32)
        stores.append((staged, narrow(dst, staged, st, kind)))
        if pad is not None:
            pads.append(pad)
    zero_pads = filler(pads)

    def run() -> None:
        for load in loads:
            load()
        for (staged, stored), y in zip(stores, kernel(args, attrs)):
            np.copyto(staged, np.asarray(y, np.float32).reshape(staged.shape))
            stored()
        zero_pads()
    return run


def _loaded(name: str, ctx: StepBinding, scratch) -> tuple[np.ndarray, Callable[[], None]]:
    """(float32 buffer, its load) of activation `name` (a plain slot or a (1, C, 1, 1) NC1HWC2 one) widened as the
    slot reader reads it, into `scratch(n)`."""
    st, kind, x, _ = _values(name, ctx)
    wide = scratch(x.size)[:x.size].reshape(x.shape)
    return wide, widen(wide, x, st, kind)


def _stored(name: str, ctx: StepBinding, shape: tuple) -> tuple[np.ndarray, Callable[[], None]]:
    """(float32 buffer of `shape`, the step's store of it into activation `name`'s slot, padding lanes zero)."""
    st, kind, dst, pad = _values(name, ctx)
    if tuple(dst.shape) != tuple(shape):
        raise Skip
    y = np.empty(shape, np.float32)
    store, pads = narrow(dst, y, st, kind), filler([pad] if pad is not None else [])
    return y, sequence(store, pads)


def gemm(node: Any, attrs: dict, ctx: StepBinding) -> Callable[[], None]:
    """Gemm of an activation and constant B (and C) with alpha = beta = 1: the kernel's matmul and bias add into
    buffers prepared at bind (`kernel_step` without its per-run allocations and copies)."""
    if len(node.inputs) < 2 or len(node.outputs) != 1 or node.inputs[1] not in ctx.constants \
            or float(attrs.get("alpha", 1.0)) != 1.0 or float(attrs.get("beta", 1.0)) != 1.0:
        raise Skip
    c = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    if c is not None and c not in ctx.constants:
        raise Skip
    wide, load = _loaded(node.inputs[0], ctx, ctx.scratch)
    a, b = gemm_operands(wide, ctx.constants[node.inputs[1]], attrs)
    if a.dtype != np.float32 or b.dtype != np.float32 or a.ndim != 2 or b.ndim != 2:
        raise Skip
    y, store = _stored(node.outputs[0], ctx, (a.shape[0], b.shape[1]))
    bias = np.asarray(ctx.constants[c], np.float32) if c is not None else None
    if bias is not None and np.broadcast_shapes(bias.shape, y.shape) != y.shape:
        raise Skip

    def run() -> None:
        load()
        np.matmul(a, b, out=y)
        if bias is not None:
            np.add(y, bias, out=y)
        apply_activation(y, attrs)
        store()
    return run


def softmax(node: Any, attrs: dict, ctx: StepBinding) -> Callable[[], None]:
    """Softmax of an activation: the kernel's `softmax_into` on buffers prepared at bind."""
    if len(node.inputs) != 1 or len(node.outputs) != 1:
        raise Skip
    wide, load = _loaded(node.inputs[0], ctx, ctx.scratch)
    v, axis = _softmax_axis(wide, attrs)
    y, store = _stored(node.outputs[0], ctx, wide.shape)
    peak, total = np.empty(reduced_shape(v, axis), np.float32), np.empty(reduced_shape(v, axis), np.float32)
    result = y.reshape(v.shape)

    def run() -> None:
        load()
        with np.errstate(invalid="ignore"):          # an all -inf row gives NaN, as the kernel's
            softmax_into(v, axis, result, peak, total)
        store()
    return run
