"""Elementwise ops on native slots.

- unary ops (Sigmoid, Relu, ...) on fp16 or int8: a lookup table over all 65536 (fp16) or 256 (int8) stored values,
  computed at bind by the op's own kernel with the generic dequantise/quantise steps, so results are bit-identical
  to the generic path; one gather pass per run.
- binary Add/Sub/Mul of two identically stored tensors: fp16 computes in float32 in one ufunc call
  (`dtype=float32`, cast once on store); int8 uses a 65536-entry table indexed by the two stored bytes, or the
  table's own arithmetic in one compiled pass where that stores the table's byte for every pair. When both
  inputs are functions of one tensor x (SiLU's Mul(x, Sigmoid(x))), one table over x's stored values.
- binary Add/Sub/Mul of a tensor and a constant (a decode head's grid and anchors): a one-value constant is a unary
  op (one table; fp16: the table's arithmetic in one compiled pass where that gives every entry); any other constant broadcast to the output is packed at bind into the output's NC1HWC2 lanes as
  float32 (zero padding lanes), then one ufunc over the slot (int8: dequantised, computed, requantised).
- binary Add/Sub/Mul of a tensor and a per-channel (N, C, 1, 1) tensor computed at run time (squeeze-excitation):
  both widened to float32 in their lanes, the kernel broadcasting one over the other, stored as the output stores
  (fp16: the vector widened, then the op and the store in one compiled pass).

Table gathers run in the compiled kernels (`_kernels.lookup`), else np.take(mode="clip"): indices are stored bit patterns, always in range, and skipping the bounds
check measured 20% faster than the default mode.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

import npurt._kernels as _kernels
from npurt.exec.kernels import apply_activation
from npurt.exec.inplace.epilogue import filler, padding_lanes, sequence, store, stored_table, table_gather, widen
from npurt.exec.inplace.binding import StepBinding
from npurt.exec.inplace.slots import Skip, activation, all_values, bits, constant_inputs, dequantize, kind_of

UNARY = {"Sigmoid", "Relu", "LeakyRelu", "Elu", "Selu", "Softplus", "HardSigmoid", "HardSwish", "Swish", "Tanh", "Erf",
         "Gelu", "Mish", "Abs", "Neg", "Exp", "Clip", "Softsign", "ThresholdedRelu", "Celu"}
BINARY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}
PACKED_LIMIT = 4 << 20      # bytes of a constant packed into an output's lanes (float32); larger ones stay generic


def _gather_step(table: np.ndarray, src_name: str, out_name: str, ctx: StepBinding) -> Callable[[], None]:
    """A step storing table[stored bits of `src_name`] into `out_name`'s slot, padding lanes zero."""
    return table_gather(ctx.slot(out_name), table, ctx.slot(src_name), ctx.storage[out_name].shape[1])


def unary(node: Any, kernel: Callable, attrs: dict, ctx: StepBinding) -> Callable[[], None]:
    st_in, kind = activation(node.inputs[0], ctx)
    st_out, kind_out = activation(node.outputs[0], ctx)
    extra = constant_inputs(node.inputs[1:], ctx)          # Clip min/max: constants only
    if kind != kind_out or st_in.dims != st_out.dims or st_in.shape != st_out.shape or len(node.outputs) != 1:
        raise Skip
    _, values = all_values(kind, st_in)
    y = kernel([values] + extra, attrs)[0]
    if y.shape != values.shape:
        raise Skip
    table = stored_table(kind, y, st_out)
    ctx.tables[node.outputs[0]] = (node.inputs[0], table)
    return _gather_step(table, node.inputs[0], node.outputs[0], ctx)


def binary(node: Any, kernel: Callable, attrs: dict, ctx: StepBinding) -> Callable[[], None]:
    if len(node.inputs) != 2 or len(node.outputs) != 1:
        raise Skip
    if any(t in ctx.constants for t in node.inputs):
        return _with_constant(node, kernel, attrs, ctx)
    sa, ka = activation(node.inputs[0], ctx)
    sb, kb = activation(node.inputs[1], ctx)
    so, ko = activation(node.outputs[0], ctx)
    if not (ka == kb == ko):
        raise Skip
    if sa.shape != sb.shape:
        return _with_channel_vector(node, kernel, attrs, ctx, ko)
    if not (sa.dims == sb.dims == so.dims) or not (sa.shape == so.shape):
        raise Skip
    derived = _of_one_tensor(node, kernel, attrs, ctx, ka, so)
    if derived is not None:
        return derived
    a, b, o = ctx.slot(node.inputs[0]), ctx.slot(node.inputs[1]), ctx.slot(node.outputs[0])
    pads = filler(padding_lanes(so, o))
    if ka == "fp16":
        ufunc = BINARY[node.op_type]
        act = attrs.get("activation")
        compiled = _kernels.binary_f16_fn(node.op_type, o, a, b, act, _clip_bounds(attrs))
        if compiled is not None:
            return sequence(compiled, pads)
        if act is None:
            return sequence(lambda: ufunc(a, b, out=o, dtype=np.float32, casting="unsafe"), pads)
        tmp = ctx.scratch(a.size)[:a.size].reshape(a.shape)

        def run_activated() -> None:
            ufunc(a, b, out=tmp, dtype=np.float32)
            apply_activation(tmp, attrs)
            np.copyto(o, tmp, casting="unsafe")
            pads()
        return run_activated
    # int8: a table over every pair of stored bytes
    _, va = all_values("int8", sa)
    _, vb = all_values("int8", sb)
    y = kernel([np.repeat(va, 256), np.tile(vb, 256)], attrs)[0]
    table = stored_table("int8", y, so)
    au, bu, ou = bits(a), bits(b), bits(o)
    index = ctx.typed_scratch(np.uint16, a.size).reshape(a.shape)      # temp: shared with other steps

    compiled = _arithmetic_int8(node.op_type, attrs, o, a, b, (sa, sb, so), table) or \
        _kernels.lookup_fn(ou, table, au, bu)
    if compiled is not None:
        return sequence(compiled, pads)

    def run_int8() -> None:
        np.left_shift(au, 8, out=index, dtype=np.uint16)
        np.bitwise_or(index, bu, out=index)
        np.take(table, index, out=ou, mode="clip")
        pads()
    return run_int8


def _clip_bounds(attrs: dict) -> tuple[float, float]:
    """(lo, hi) of a fused Clip as `apply_activation` passes them to np.clip (an absent bound: infinite)."""
    lo, hi = (attrs.get("activation_params") or (None, None)) if attrs.get("activation") == "Clip" else (None, None)
    return (-np.inf if lo is None else lo, np.inf if hi is None else hi)


def _arithmetic_int8(op: str, attrs: dict, o: np.ndarray, a: np.ndarray, b: np.ndarray, storages: tuple,
                     table: np.ndarray) -> Callable[[], None] | None:
    """The int8 pair table's arithmetic in one compiled pass (`_kernels.binary_i8_fn`: dequantise both, the op,
    quantise, in float32), used only when it stores the table's byte for each of the 65536 pairs (checked here, at
    bind); else None (the table gather)."""
    if attrs.get("activation") is not None:
        return None
    sa, sb, so = storages
    quant = ((sa.scale, sa.zp * sa.scale), (sb.scale, sb.zp * sb.scale), (1.0 / so.scale, so.zp))
    pairs = np.arange(256, dtype=np.uint16).astype(np.uint8).view(np.int8)
    got = np.empty(65536, np.int8)
    check = _kernels.binary_i8_fn(op, got, np.repeat(pairs, 256), np.tile(pairs, 256), *quant)
    if check is None:
        return None
    check()
    if not np.array_equal(got.view(np.uint8), table):
        return None
    return _kernels.binary_i8_fn(op, o, a, b, *quant)


def _of_one_tensor(node, kernel, attrs, ctx: StepBinding, kind: str, so) -> Callable[[], None] | None:
    """Binary ops whose two inputs are both functions of one stored tensor x — x itself or the output of a
    in-place unary table step on x (SiLU: Mul(x, Sigmoid(x))) — as one table over x's stored values. Exact: the
    other input's slot holds table[x] (written by that step; both stay live until this node), so the table
    gives the generic path's result for every x."""
    names = node.inputs[:2]
    roots = [ctx.tables[t][0] if t in ctx.tables else t for t in names]
    if roots[0] != roots[1] or roots[0] not in ctx.storage:
        return None
    root = ctx.storage[roots[0]]
    if kind_of(root) != kind or root.dims != so.dims or root.shape != so.shape:
        return None
    _, root_values = all_values(kind, root)
    args = []
    for t in names:
        if t == roots[0]:
            args.append(root_values)
            continue
        table_bits = ctx.tables[t][1]
        args.append(table_bits.view(np.float16).astype(np.float32) if kind == "fp16"
                    else dequantize(table_bits.view(np.int8), ctx.storage[t]))
    y = kernel(args, attrs)[0]
    return _gather_step(stored_table(kind, y, so), roots[0], node.outputs[0], ctx)


def _with_constant(node, kernel, attrs, ctx: StepBinding) -> Callable[[], None]:
    """Add/Sub/Mul of an NC1HWC2 activation and a constant, as the generic path computes it: the kernel on the
    float32 values (the constant's decoded value), stored as the output stores."""
    k = 0 if node.inputs[0] in ctx.constants else 1              # which input is the constant
    x = node.inputs[1 - k]
    sx, kind = activation(x, ctx)
    so, ko = activation(node.outputs[0], ctx)
    c = ctx.constants[node.inputs[k]]
    if ko != kind or sx.dims != so.dims or sx.shape != so.shape or c.ndim > len(sx.shape) \
            or any(n not in (1, m) for n, m in zip(c.shape[::-1], sx.shape[::-1])):
        raise Skip
    if c.size == 1:                                                # a unary op of x: one table
        _, values = all_values(kind, sx)
        args = [values, c.reshape(1)][::1 if k == 1 else -1]
        table = stored_table(kind, kernel(args, attrs)[0], so)
        if kind == "fp16":                           # the table's arithmetic in one compiled pass, where exact
            o = ctx.slot(node.outputs[0])
            compiled = _scalar_f16(node.op_type, attrs, np.float32(c.reshape(())), k == 0, table, ctx.slot(x), o)
            if compiled is not None:                 # padding lanes: x's zeros op c, set back to zero
                return sequence(compiled, filler(padding_lanes(so, o)))
        return _gather_step(table, x, node.outputs[0], ctx)
    if math.prod(so.dims) * 4 > PACKED_LIMIT:
        raise Skip
    packed = _packed(c, so)
    a, o = ctx.slot(x), ctx.slot(node.outputs[0])
    operands = (a, packed) if k == 1 else (packed, a)
    if kind == "fp16":
        if attrs.get("activation") is not None:
            raise Skip
        half = packed.astype(np.float16)
        if np.array_equal(half.astype(np.float32), packed):         # an fp16 model's constants: exact as fp16
            compiled = _kernels.binary_f16_fn(node.op_type, o, *((a, half) if k == 1 else (half, a)))
            if compiled is not None:
                return compiled
        ufunc = BINARY[node.op_type]
        return lambda: ufunc(*operands, out=o, dtype=np.float32, casting="unsafe")
    wide = ctx.scratch(a.size)[:a.size].reshape(a.shape)
    load = widen(wide, a, sx, kind)
    pads = filler(padding_lanes(so, o))
    args = [wide, packed] if k == 1 else [packed, wide]

    def run_int8() -> None:
        load()
        store(o, kernel(args, attrs)[0], so, kind)
        pads()
    return run_int8


def _scalar_f16(op: str, attrs: dict, c: np.float32, swap: bool, table: np.ndarray, x: np.ndarray,
                o: np.ndarray) -> Callable[[], None] | None:
    """float16 x op c (c op x when `swap`) in one compiled pass (`_kernels.binary_f16_bcast_fn`), used only when it
    stores the table's bits for each of the 65536 stored values (checked here, at bind); else None."""
    act = attrs.get("activation")
    if act not in _kernels.BINARY_F16_ACTIVATIONS or not o.flags.c_contiguous or not x.flags.c_contiguous:
        return None
    scalar = np.array([c], np.float32)
    every = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    got = np.empty(65536, np.float16)
    check = _kernels.binary_f16_bcast_fn(op, got, every, scalar, 65536, 1, swap, act, _clip_bounds(attrs))
    if check is None:
        return None
    check()
    if not np.array_equal(got.view(np.uint16), table):
        return None
    return _kernels.binary_f16_bcast_fn(op, o.reshape(-1), x.reshape(-1), scalar, x.size, 1, swap, act,
                                        _clip_bounds(attrs))      # it holds `scalar` (run.arrays)


def _with_channel_vector(node, kernel, attrs, ctx: StepBinding, kind: str) -> Callable[[], None]:
    """Add/Sub/Mul of an NC1HWC2 activation and a per-channel (N, C, 1, 1) one computed at run time (a
    squeeze-excitation scale): both widened to float32 in their own lanes (int8 dequantised as the reader does), the
    kernel broadcasting the vector's lanes over the pixels, the result stored as the output stores."""
    shapes = [ctx.storage[t].shape for t in node.inputs]
    k = 0 if tuple(shapes[0][2:]) == (1, 1) else 1                 # which input is the vector
    sx, sv, so = (ctx.storage[t] for t in (node.inputs[1 - k], node.inputs[k], node.outputs[0]))
    if tuple(sv.shape[2:]) != (1, 1) or sv.shape[:2] != sx.shape[:2] or sx.shape != so.shape or sx.dims != so.dims \
            or sv.dims[1] != sx.dims[1] or sv.dims[4] != sx.dims[4]:
        raise Skip
    x, v, o = ctx.slot(node.inputs[1 - k]), ctx.slot(node.inputs[k]), ctx.slot(node.outputs[0])
    vector = np.empty(v.shape, np.float32)
    if kind == "fp16" and x.shape[0] == 1:      # widen the vector only; the op and the store in one compiled pass
        act = attrs.get("activation")
        compiled = _kernels.binary_f16_bcast_fn(node.op_type, o.reshape(-1), x.reshape(-1), vector.reshape(-1),
                                                math.prod(x.shape[2:]), x.shape[4], k == 0, act, _clip_bounds(attrs))
        if compiled is not None:
            return sequence(widen(vector, v, sv, kind), compiled, filler(padding_lanes(so, o)))
    wide = ctx.scratch(x.size)[:x.size].reshape(x.shape)
    loads = [widen(wide, x, sx, kind), widen(vector, v, sv, kind)]
    args = [wide, vector][::1 if k == 1 else -1]
    pads = filler(padding_lanes(so, o))

    def run() -> None:
        for load in loads:
            load()
        store(o, kernel(args, attrs)[0], so, kind)
        pads()
    return run


def _packed(c: np.ndarray, st) -> np.ndarray:
    """Constant `c` broadcast to `st`'s logical shape, in `st`'s NC1HWC2 lanes as float32, padding lanes zero."""
    n, ch, h, w = st.shape
    c1, c2 = st.dims[1], st.dims[4]
    planes = np.zeros((n, c1 * c2, h, w), np.float32)
    planes[:, :ch] = np.broadcast_to(np.asarray(c, np.float32), st.shape)
    return np.ascontiguousarray(planes.reshape(n, c1, c2, h, w).transpose(0, 1, 3, 4, 2))
