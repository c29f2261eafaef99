"""Dense int8 Conv in integers, as the NPU computes it: int8 codes x int8 weight codes summed exactly (int32 in the
compiled kernel `npurt._kernels.int8_conv`; in numpy, BLAS on float32 / float64 where every partial sum is an exact
integer), the input zero point removed as zp * sum(w) per output channel, then one float32 requantisation
f = float(acc) * (s_x * s_w / s_o) + (bias / s_o + zp_o), clamped (the fused Relu / Clip and int8 saturation),
rounded to nearest even and stored into the output's NC1HWC2 slot. A fused SiLU is applied to f in the real
domain by the kernel's store too (`epilogue.swish_codes`); other fused activations get f in the real domain and go
through `ConvEpilogue`. The numpy path is the reference the compiled kernel matches byte for byte.

The input is copied into a padded int8 buffer (C1, Hp, Wp, CC) whose border holds the zero point, so padding
contributes (zp - zp) * w = 0 (without padding the conv reads the NC1HWC2 slot itself); CC is the input's C2
(NC1HWC2) or its channels rounded up to 4 (NHWC, e.g. a model input: the step's own buffer, its border and spare
lanes written once at bind). Asymmetric weights (a conv reading a model input) have codes - zero point beyond int8:
split into int8 parts, each against its own copy of the NHWC input's channels (CC = channels x parts, rounded up).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

import npurt._kernels as _kernels
from npurt.exec.inplace.binding import StepBinding
from npurt.exec.inplace.epilogue import ConvEpilogue, cast_copy, copier, filler, nothing, padding_lanes, sequence
from npurt.exec.inplace.slots import Skip

EXACT_F32_TERMS = (1 << 24) // (128 * 128)       # K up to which float32 sums of int8 x int8 products are exact


def columns(xpad: np.ndarray, kernel, strides, dilations, out_hw) -> np.ndarray:
    """im2col of a padded (C1, Hp, Wp, CC) input: (Ho * Wo, kh * kw * C1 * CC) in (dy, dx, c1, lane) order."""
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel, strides, dilations, out_hw
    c1, _, _, cc = xpad.shape
    cols = np.empty((ho, wo, kh, kw, c1, cc), xpad.dtype)
    for dy in range(kh):
        for dx in range(kw):
            tap = xpad[:, dy * dh:dy * dh + sh * (ho - 1) + 1:sh, dx * dw:dx * dw + sw * (wo - 1) + 1:sw]
            cols[:, :, dy, dx] = tap.transpose(1, 2, 0, 3)
    return cols.reshape(ho * wo, kh * kw * c1 * cc)


def accumulate(cols: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """cols (P, K) int8 @ weights (K, N) int8 as exact int64 sums (BLAS in float32 while every partial sum fits its
    24-bit mantissa, else float64)."""
    ft = np.float32 if cols.shape[1] <= EXACT_F32_TERMS else np.float64
    return np.matmul(cols.astype(ft), weights.astype(ft)).astype(np.int64)


def requantize(acc: np.ndarray, colsum: np.ndarray, zp: int, mult: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """float32(acc - zp * colsum) * mult + bias, in float32 (the compiled kernel's epilogue)."""
    f = (acc - np.int64(zp) * colsum.astype(np.int64)).astype(np.float32)
    np.multiply(f, mult, out=f)
    np.add(f, bias, out=f)
    return f


def int8_parts(codes: np.ndarray) -> list[np.ndarray]:
    """int8 arrays summing to integer `codes` (one: they fit int8; asymmetric weights' codes - zero point span up to
    [-255, 255]: two, or three for a code of 255), each the rest clipped to int8."""
    parts, rest = [], codes.astype(np.int32)
    while True:
        part = np.clip(rest, -128, 127)
        parts.append(part.astype(np.int8))
        rest = rest - part
        if not rest.any():
            return parts


def weight_codes(ctx: StepBinding, wname: str, m: int) -> tuple[np.ndarray, np.ndarray]:
    """(integer codes (M, C, kh, kw) int8 or int16, per-output-channel scales (M,) float64) of a conv's int8
    weights; Skip when the weights are not int8 quantised per tensor or per output channel."""
    got = ctx.weight_codes(wname)
    if got is None:
        raise Skip
    codes, scales, axis = got
    if codes.dtype not in (np.int8, np.int16) or codes.ndim != 4 or codes.shape[0] != m or (scales.size != 1 and (
            axis != 0 or scales.size != m)):
        raise Skip
    return codes, np.broadcast_to(np.asarray(scales, np.float64).reshape(-1), (m,))


def packed_weights(parts: list[np.ndarray], wscale: np.ndarray, bias: np.ndarray | None, lanes: int, n: int, si,
                   so, epilogue: ConvEpilogue, stride: int | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(weights (kh * kw * lanes, n) int8 in (dy, dx, lane) order, their column sums, mult, bias) of the requantisation
    f = float32(acc - zp * colsum) * mult + bias for int8 weight codes (M, C, kh, kw) given as `parts` summing to them
    (`int8_parts`; part j on lanes j * stride ..., stride C by default), per-output-channel scales `wscale`; the
    output's scale and zero point
    folded in when `epilogue` folds them. Columns >= M are zero."""
    m, cin, kh, kw = parts[0].shape
    stride = cin if stride is None else stride
    wk = np.zeros((kh, kw, lanes, n), np.int8)
    for j, part in enumerate(parts):
        wk[:, :, j * stride:j * stride + cin, :m] = part.transpose(2, 3, 1, 0)
    wk = np.ascontiguousarray(wk.reshape(kh * kw * lanes, n))
    colsum = wk.sum(axis=0, dtype=np.int64).astype(np.int32)
    scale = np.zeros(n)
    scale[:m] = float(si.scale) * wscale
    b = np.zeros(n, np.float32)
    if bias is not None:
        b[:m] = bias
    if epilogue.folds_output_scale:
        mult = (scale / float(so.scale)).astype(np.float32)
        b = (b.astype(np.float64) / float(so.scale) + float(so.zp)).astype(np.float32)
        b[m:] = 0
    else:
        mult = scale.astype(np.float32)
    return wk, colsum, mult, b


def dense_int8(out_name: str, attrs: dict, ctx: StepBinding, src, so, cw) -> Callable[[], None]:
    """The step of a dense (group 1) int8 conv; `src` a ConvInput, `cw` its ConvWeights."""
    si = src.storage
    o1, o2 = so.dims[1], so.dims[4]
    if o2 != 16:
        raise Skip
    m, cin = so.shape[1], si.shape[1]
    codes, wscale = weight_codes(ctx, cw.name, m)
    parts = int8_parts(codes)       # codes beyond int8 (asymmetric weights): the input's lanes repeated per part
    h, wd, kh, kw, ho, wo, sh, sw, hp, wp, _ = cw.sizes(si)
    pb = cw.geometry.pads_begin
    if src.layout == "nc1hwc2":     # the input's C1 blocks, repeated once per part
        blocks, cc = si.dims[1], si.dims[4]
        if cc % 4:
            raise Skip
        c1, stride = blocks * len(parts), blocks * cc
    else:
        blocks, cc, stride = 1, -(-cin * len(parts) // 4) * 4, cin
        c1 = 1
    zp = int(si.zp)
    epilogue = ConvEpilogue(attrs, so)
    wk, colsum, mult, bias = packed_weights(parts, wscale, cw.bias, c1 * cc, o1 * 16, si, so, epilogue, stride)
    n = o1 * 16
    geometry = ((kh, kw), (sh, sw), tuple(cw.geometry.dilations), (ho, wo))

    x = ctx.slot(src.name)
    if src.layout == "nc1hwc2" and (hp, wp) == (h, wd) and x[0].flags.c_contiguous and len(parts) == 1:
        xpad = x[0]                  # no padding: the conv reads the slot itself (no copy)
        values, interior = None, []
    elif src.layout == "nc1hwc2":
        xpad = ctx.temp.take("padded8", np.int8, c1 * hp * wp * cc).reshape(c1, hp, wp, cc)
        values = x[0]
        interior = [xpad[j * blocks:(j + 1) * blocks, pb[0]:pb[0] + h, pb[1]:pb[1] + wd] for j in range(len(parts))]
    else:       # NHWC (few channels, e.g. a model input): the step's own buffer, border and spare lanes written here
        xpad = ctx.temp.take(f"padded8 {out_name}", np.int8, hp * wp * cc).reshape(1, hp, wp, cc)
        xpad.fill(zp)
        values = x[0, :, :wd, :cin]
        interior = [xpad[0, pb[0]:pb[0] + h, pb[1]:pb[1] + wd, j * cin:(j + 1) * cin] for j in range(len(parts))]
    edges = filler([xpad[:, :pb[0]], xpad[:, pb[0] + h:], xpad[:, pb[0]:pb[0] + h, :pb[1]],
                    xpad[:, pb[0]:pb[0] + h, pb[1] + wd:]] if src.layout == "nc1hwc2" else [], zp)
    fill = sequence(*(copier(part, values) for part in interior))
    o = ctx.slot(out_name)
    folded = epilogue.folds_output_scale
    direct = folded or epilogue.swish is not None          # the kernel stores the int8 codes itself
    lo, hi = epilogue.bounds if folded else (-128.0, 127.0)
    # padding lanes: zero weights and bias store code 0 there when the clamp keeps 0 (no fill needed)
    pads = filler([] if folded and lo <= 0 <= hi and not bias[m:].any() else padding_lanes(so, o))
    y = None if direct else ctx.scratch(ho * wo * n)[:ho * wo * n].reshape(ho * wo, n)
    dst = o[0].reshape(o1, ho, wo, 16)
    compiled = _kernels.int8_conv(xpad, wk, colsum, zp, mult, bias, *geometry, out=dst if direct else None,
                                  bounds=(lo, hi), y=y, wide=lambda k: ctx.temp.take("wide16", np.int16, k),
                                  swish=None if folded else epilogue.swish)
    if not direct:
        stored = ctx.typed_scratch(np.int8, ho * wo * n).reshape(ho * wo, n)
        groups = stored.view("V16").reshape(ho * wo, o1).T
        dst_groups = o[0].reshape(o1, ho * wo, 16).view("V16")[..., 0]
    elif compiled is not None:
        return sequence(edges, fill, compiled, pads)

    def run() -> None:
        edges()
        fill()
        if compiled is not None:
            compiled()
        else:
            f = requantize(accumulate(columns(xpad, *geometry), wk), colsum, zp, mult, bias)
            if direct:
                if folded:
                    np.clip(f, np.float32(lo), np.float32(hi), out=f)
                    np.rint(f, out=f)
                else:
                    epilogue(f)
                np.copyto(dst, f.reshape(ho, wo, o1, 16).transpose(2, 0, 1, 3), casting="unsafe")
            else:
                np.copyto(y, f)
        if not direct:
            epilogue(y)
            cast_copy(stored, y)
            np.copyto(dst_groups, groups)
        pads()
    return run


def gemm_int8(node, attrs: dict, ctx: StepBinding) -> Callable[[], None]:
    """A classifier's Gemm (plain int8 (1, K) activation @ int8 weights quantised per output channel + a constant
    bias, into a plain int8 (1, M) slot) in integers as the dense int8 conv computes it: a 1 x 1 conv on a 1 x 1 map,
    its M codes copied into the output slot. Skip for anything else (the float kernel step takes it)."""
    from npurt.exec.inplace.plain import plain_kind
    from npurt.exec.inplace.slots import activation
    if len(node.inputs) < 2 or len(node.outputs) != 1 or attrs.get("transA", 0) \
            or float(attrs.get("alpha", 1.0)) != 1.0 or float(attrs.get("beta", 1.0)) != 1.0:
        raise Skip
    si, ki = activation(node.inputs[0], ctx, plain_kind)
    so, ko = activation(node.outputs[0], ctx, plain_kind)
    if ki != "int8" or ko != "int8" or len(si.shape) != 2 or si.shape[0] != 1 or len(so.shape) != 2 \
            or so.shape[0] != 1:
        raise Skip
    k, m = si.shape[1], so.shape[1]
    got = ctx.weight_codes(node.inputs[1])
    trans = bool(attrs.get("transB", 0))
    if got is None or got[0].dtype != np.int8 or got[0].shape != ((m, k) if trans else (k, m)) or (got[1].size != 1 and (
            got[2] != (0 if trans else 1) or got[1].size != m)):
        raise Skip
    codes = got[0] if trans else got[0].T
    wscale = np.broadcast_to(np.asarray(got[1], np.float64).reshape(-1), (m,))
    c = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    if c is not None and (c not in ctx.constants or ctx.constants[c].size != m):
        raise Skip
    epilogue = ConvEpilogue(attrs, so)
    if not epilogue.folds_output_scale:
        raise Skip
    cc, n = -(-k // 4) * 4, -(-m // 16) * 16
    wk, colsum, mult, bias = packed_weights([codes.reshape(m, k, 1, 1)], wscale,
                                            None if c is None else ctx.constants[c].reshape(-1), cc, n, si, so,
                                            epilogue)
    zp = int(si.zp)
    x, o = ctx.slot(node.inputs[0]).reshape(-1), ctx.slot(node.outputs[0]).reshape(-1)
    if cc == k:
        xpad, fill = x.reshape(1, 1, 1, k), nothing
    else:                                # spare lanes: the zero point, against zero weights
        xpad = np.full((1, 1, 1, cc), zp, np.int8)
        fill = copier(xpad.reshape(-1)[:k], x)
    codes_out = np.empty((n // 16, 1, 1, 16), np.int8)
    lo, hi = epilogue.bounds
    compiled = _kernels.int8_conv(xpad, wk, colsum, zp, mult, bias, (1, 1), (1, 1), (1, 1), (1, 1), out=codes_out,
                                  bounds=(lo, hi), wide=lambda size: ctx.temp.take("wide16", np.int16, size))
    store = copier(o, codes_out.reshape(-1)[:m])

    def numpy_path() -> None:
        f = requantize(accumulate(xpad.reshape(1, cc), wk), colsum, zp, mult, bias)
        np.clip(f, np.float32(lo), np.float32(hi), out=f)
        np.rint(f, out=f)
        np.copyto(codes_out.reshape(1, n), f, casting="unsafe")
    return sequence(fill, compiled or numpy_path, store)
