"""Conv (2-D, batch 1) on native slots.

Dense convolutions: float16 ones are a direct convolution summed in a fixed order (`conv_fp16`), int8 ones sum
int8 codes in integers (`conv_int8`); both store straight into the output's NC1HWC2 slot. Depthwise convolutions
(dilation 1) accumulate taps in the native layout itself (the kernel never leaves NC1HWC2), in cache-sized blocks,
with per-tap weights pre-tiled along W so every numpy loop is long. Their int8 inputs stay quantised: the scale is
folded into the weights and the zero point into the bias (the padded border holds the zero point); int8 outputs
fold their quantisation into the weights and bias where the fused activation is a clamp (`ConvEpilogue`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import npurt._kernels as _kernels
from npurt.tensor.window import ConvGeometry, conv_geometry
from npurt.exec.inplace.epilogue import ConvEpilogue, cast_copy, copier, filler, padding_lanes, sequence
from npurt.exec.inplace.binding import StepBinding
from npurt.exec.inplace.conv_fp16 import dense_fp16, fused_activation
from npurt.exec.inplace.conv_int8 import dense_int8
from npurt.exec.inplace.slots import Skip, activation, kind_of
from npurt.tensor import DType, Layout

DEPTHWISE_BLOCK = 1 << 16   # float32 elements per depthwise block (256 KiB; 1<<12..1<<18 measured: smaller blocks pay
                            # ~1 us of call overhead per numpy call, larger ones fall out of L2)
FUSABLE = (None, "Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Swish")


@dataclass(frozen=True)
class ConvInput:
    """A conv's input activation: its storage, kind ('fp16' | 'int8') and layout ('nc1hwc2' | 'nhwc')."""

    name: str
    storage: Any
    kind: str
    layout: str


@dataclass(frozen=True)
class ConvWeights:
    """A conv's constant weights (M, C/group, kh, kw; constant `name`) and bias (M,) or None, as float32, and its 2-D
    geometry."""

    name: str
    weights: np.ndarray
    bias: np.ndarray | None
    kernel: tuple[int, int]
    geometry: ConvGeometry

    def sizes(self, si) -> tuple[int, ...]:
        """(h, w, kh, kw, ho, wo, sh, sw, hp, wp, channels) for input storage `si`: input, kernel, output, stride and
        padded input sizes (rows, columns) and the input's channel count."""
        g = self.geometry
        h, w = si.shape[2], si.shape[3]
        hp, wp = h + g.pads_begin[0] + g.pads_end[0], w + g.pads_begin[1] + g.pads_end[1]
        return (h, w) + self.kernel + tuple(g.out) + tuple(g.strides) + (hp, wp, si.shape[1])


def _conv_input(name: str, ctx: StepBinding) -> ConvInput:
    if not name or name not in ctx.storage or name in ctx.constants:
        raise Skip
    st = ctx.storage[name]
    kind = kind_of(st)
    if kind is not None:
        return ConvInput(name, st, kind, "nc1hwc2")
    if st.layout is Layout.NHWC and len(st.shape) == 4 and st.shape[0] == 1:
        if st.dtype is DType.FLOAT16 and not st.quantized:
            return ConvInput(name, st, "fp16", "nhwc")
        if st.dtype is DType.INT8 and st.quantized:
            return ConvInput(name, st, "int8", "nhwc")
    raise Skip


def conv(node: Any, attrs: dict, ctx: StepBinding) -> Callable[[], None]:
    if len(node.outputs) != 1 or len(node.inputs) < 2:
        raise Skip
    src = _conv_input(node.inputs[0], ctx)
    so, kind_out = activation(node.outputs[0], ctx)
    wname = node.inputs[1]
    bname = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    if wname not in ctx.constants or (bname is not None and bname not in ctx.constants) or src.kind != kind_out:
        raise Skip
    w = np.asarray(ctx.constants[wname], np.float32)
    b = np.asarray(ctx.constants[bname], np.float32).reshape(-1) if bname else None
    si = src.storage
    if w.ndim != 4 or si.shape[0] != 1:
        raise Skip
    kshape = list(attrs.get("kernel_shape") or w.shape[2:])
    g = conv_geometry(si.shape, kshape, attrs)
    if any(p < 0 for p in g.pads_begin + g.pads_end) or list(so.shape[2:]) != list(g.out):
        raise Skip
    if attrs.get("activation") not in FUSABLE:
        raise Skip
    group = int(attrs.get("group", 1))
    c, m = si.shape[1], w.shape[0]
    cw = ConvWeights(wname, w, b, (kshape[0], kshape[1]), g)
    if group == 1:
        if src.kind == "int8":
            return dense_int8(node.outputs[0], attrs, ctx, src, so, cw)
        return dense_fp16(node.outputs[0], attrs, ctx, src, so, cw, _input_filler)
    if any(d != 1 for d in g.dilations):
        raise Skip
    if group == c == m and w.shape[1] == 1 and src.layout == "nc1hwc2" and si.dims[4] == so.dims[4] \
            and si.dims[1] == so.dims[1]:
        return _depthwise(node.outputs[0], attrs, ctx, src, so, cw)
    raise Skip


def _input_filler(src: ConvInput, x: np.ndarray, interior: np.ndarray) -> Callable[[], None]:
    """A function writing the conv input slot `x` as float32 into `interior`, in the slot's own layout (NC1HWC2
    (C1, H, W, C2), or NHWC (H, W, C)): a casting copy. int8 values stay quantised."""
    values = x[0, :, :src.storage.shape[3], :] if src.layout == "nhwc" else x[0]
    return copier(interior, values)


def _fold_input(src: ConvInput, weights: np.ndarray, bias: np.ndarray, sum_axes) -> float:
    """int8 input: fold its dequantisation (q - zp) * s into the weights (in place, x s) and the bias (in place,
    - s * zp * sum of each output's weights); returns the float value of the padding border (zp, or 0)."""
    if src.kind != "int8":
        return 0.0
    s, zp = float(src.storage.scale), float(src.storage.zp)
    bias -= np.float32(s * zp) * weights.sum(axis=sum_axes, dtype=np.float64).astype(np.float32)
    weights *= np.float32(s)
    return zp


def _depthwise(out_name: str, attrs: dict, ctx: StepBinding, src: ConvInput, so, cw: ConvWeights) -> Callable[[], None]:
    si = src.storage
    h, wd, kh, kw, ho, wo, sh, sw, hp, wp, c = cw.sizes(si)
    pb = cw.geometry.pads_begin
    c1, c2 = si.dims[1], si.dims[4]
    wq = -(-wp // sw)                                 # padded columns per phase
    wc = np.zeros((c1 * c2, kh * kw), np.float32)
    wc[:c] = cw.weights.reshape(c, kh * kw)
    bias = np.zeros(c1 * c2, np.float32)
    if cw.bias is not None:
        bias[:c] = cw.bias
    border = _fold_input(src, wc, bias, 1)
    # per-tap weights tiled along W: tap_weights[t, c1, 1, wo, c2]
    tap_weights = np.ascontiguousarray(np.broadcast_to(
        wc.reshape(c1, c2, kh * kw).transpose(2, 0, 1)[:, :, None, None, :], (kh * kw, c1, 1, wo, c2)))
    tiled_bias = np.ascontiguousarray(np.broadcast_to(bias.reshape(c1, 1, 1, c2), (c1, 1, wo, c2)))
    x = ctx.slot(src.name)[0]
    epilogue = ConvEpilogue(attrs, so)
    tiled_bias = epilogue.fold(tap_weights, tiled_bias)
    o = ctx.slot(out_name)[0]
    acc_all = ctx.scratch(c1 * ho * wo * c2)[:c1 * ho * wo * c2].reshape(c1, ho, wo, c2)
    pads = filler(padding_lanes(so, ctx.slot(out_name)))
    native = _native_depthwise(src, x, border, tap_weights, tiled_bias, cw, attrs, epilogue, o, acc_all, pads)
    if native is not None:
        return native
    # phase-split padded input: xph[c1, row, phase, j, c2] = padded[c1, row, j * sw + phase, c2]
    xph = ctx.padded((c1, hp, sw, wq, c2))
    edges = [xph[:, :pb[0]], xph[:, pb[0] + h:]]
    fills = []
    for p in range(sw):
        w0 = (p - pb[1]) % sw                        # first input column with (w + pad) % sw == p
        if w0 >= wd:
            edges.append(xph[:, pb[0]:pb[0] + h, p])
            continue
        cnt = len(range(w0, wd, sw))
        j0 = (w0 + pb[1]) // sw
        edges += [xph[:, pb[0]:pb[0] + h, p, :j0], xph[:, pb[0]:pb[0] + h, p, j0 + cnt:]]
        interior = xph[:, pb[0]:pb[0] + h, p, j0:j0 + cnt, :]
        fills.append(_input_filler(src, x[None, :, :, w0::sw, :], interior))
    tmp_all = ctx.scratch2(DEPTHWISE_BLOCK + wo * c2)
    # blocks: (c1 range, row range) of about DEPTHWISE_BLOCK floats
    row = wo * c2
    blocks = []
    if ho * row >= DEPTHWISE_BLOCK:
        rows = max(1, DEPTHWISE_BLOCK // row)
        for k1 in range(c1):
            for r0 in range(0, ho, rows):
                blocks.append((k1, k1 + 1, r0, min(ho, r0 + rows)))
    else:
        per = max(1, DEPTHWISE_BLOCK // (ho * row))
        for k1 in range(0, c1, per):
            blocks.append((k1, min(c1, k1 + per), 0, ho))
    plan = []
    for a1, b1, r0, r1 in blocks:
        acc = acc_all[a1:b1, r0:r1]
        tmp = tmp_all[:acc.size].reshape(acc.shape)
        taps = []
        for dy in range(kh):
            for dx in range(kw):
                rs = dy + sh * r0
                tap = xph[a1:b1, rs:rs + sh * (r1 - r0 - 1) + 1:sh, dx % sw, dx // sw:dx // sw + wo, :]
                taps.append((tap, tap_weights[dy * kw + dx, a1:b1]))
        compiled = _kernels.depthwise_rows(acc, xph[a1:b1, sh * r0:], tap_weights[:, a1:b1], tiled_bias[a1:b1],
                                           (kh, kw), (sh, sw))
        plan.append((acc, tmp, taps, tiled_bias[a1:b1], o[a1:b1, r0:r1], compiled))
    edges = filler(edges, border)

    def run() -> None:
        edges()
        for f in fills:
            f()
        for acc, tmp, taps, block_bias, dst, compiled in plan:
            if compiled is not None:
                compiled()
            else:
                (first, first_weights), rest = taps[0], taps[1:]
                np.multiply(first, first_weights, out=acc)
                for tap, weights in rest:
                    np.multiply(tap, weights, out=tmp)
                    np.add(acc, tmp, out=acc)
                np.add(acc, block_bias, out=acc)
            epilogue(acc)
            cast_copy(dst, acc)
        pads()
    return run


def _native_depthwise(src: ConvInput, x: np.ndarray, border: float, tap_weights: np.ndarray, tiled_bias: np.ndarray,
                      cw: ConvWeights, attrs: dict, epilogue: ConvEpilogue, o: np.ndarray, acc: np.ndarray,
                      pads: Callable[[], None]) -> Callable[[], None] | None:
    """The depthwise step in one compiled pass straight from the input slot (`_kernels.depthwise`: the same taps,
    weights and rounding as the numpy blocks), with the epilogue fused where the kernel has it; None when the
    kernels are off or decline."""
    g = cw.geometry
    weights = np.ascontiguousarray(tap_weights[:, :, 0, 0, :])
    bias = np.ascontiguousarray(tiled_bias[:, 0, 0, :])
    geometry = (cw.kernel, tuple(g.strides), tuple(g.pads_begin[:2]))
    act = fused_activation(attrs)
    if src.kind == "fp16" and act is not None:
        compiled = _kernels.depthwise(x, border, weights, bias, *geometry, out=o, activation=act)
    elif src.kind == "int8" and epilogue.folds_output_scale:
        compiled = _kernels.depthwise(x, border, weights, bias, *geometry, out=o, bounds=epilogue.bounds)
    else:
        sums = _kernels.depthwise(x, border, weights, bias, *geometry, y=acc)
        store = copier(o, acc)
        compiled = None if sums is None else lambda: (sums(), epilogue(acc), store())
    return None if compiled is None else sequence(compiled, pads)
