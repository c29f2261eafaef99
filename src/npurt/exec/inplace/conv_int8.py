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
from npurt.exec.inplace.epilogue import ConvEpilogue, cast_copy, copier, padding_lanes, zero
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
    if src.layout == "nc1hwc2":
        c1, cc = si.dims[1], si.dims[4]
        if cc % 4 or len(parts) > 1:
            raise Skip
    else:
        c1, cc = 1, -(-cin * len(parts) // 4) * 4
    n = o1 * 16
    wk = np.zeros((kh, kw, c1 * cc, n), np.int8)
    for j, part in enumerate(parts):
        wk[:, :, j * cin:(j + 1) * cin, :m] = part.transpose(2, 3, 1, 0)
    wk = np.ascontiguousarray(wk.reshape(kh * kw * c1 * cc, n))
    colsum = wk.sum(axis=0, dtype=np.int64).astype(np.int32)
    zp = int(si.zp)
    epilogue = ConvEpilogue(attrs, so)
    scale = np.zeros(n)
    scale[:m] = float(si.scale) * wscale
    bias = np.zeros(n, np.float32)
    if cw.bias is not None:
        bias[:m] = cw.bias
    if epilogue.folds_output_scale:
        mult = (scale / float(so.scale)).astype(np.float32)
        bias = (bias.astype(np.float64) / float(so.scale) + float(so.zp)).astype(np.float32)
        bias[m:] = 0
    else:
        mult = scale.astype(np.float32)
    geometry = ((kh, kw), (sh, sw), tuple(cw.geometry.dilations), (ho, wo))

    x = ctx.slot(src.name)
    if src.layout == "nc1hwc2" and (hp, wp) == (h, wd) and x[0].flags.c_contiguous:
        xpad = x[0]                  # no padding: the conv reads the slot itself (no copy)
        values, interior = None, []
    elif src.layout == "nc1hwc2":
        xpad = ctx.temp.take("padded8", np.int8, c1 * hp * wp * cc).reshape(c1, hp, wp, cc)
        values, interior = x[0], [xpad[:, pb[0]:pb[0] + h, pb[1]:pb[1] + wd]]
    else:       # NHWC (few channels, e.g. a model input): the step's own buffer, border and spare lanes written here
        xpad = ctx.temp.take(f"padded8 {out_name}", np.int8, hp * wp * cc).reshape(1, hp, wp, cc)
        xpad.fill(zp)
        values = x[0, :, :wd, :cin]
        interior = [xpad[0, pb[0]:pb[0] + h, pb[1]:pb[1] + wd, j * cin:(j + 1) * cin] for j in range(len(parts))]
    edges = [e for e in [xpad[:, :pb[0]], xpad[:, pb[0] + h:], xpad[:, pb[0]:pb[0] + h, :pb[1]],
                         xpad[:, pb[0]:pb[0] + h, pb[1] + wd:]] if e.size] if src.layout == "nc1hwc2" else []
    fills = [copier(part, values) for part in interior]
    o = ctx.slot(out_name)
    pads = padding_lanes(so, o)
    folded = epilogue.folds_output_scale
    direct = folded or epilogue.swish is not None          # the kernel stores the int8 codes itself
    lo, hi = epilogue.bounds if folded else (-128.0, 127.0)
    y = None if direct else ctx.scratch(ho * wo * n)[:ho * wo * n].reshape(ho * wo, n)
    dst = o[0].reshape(o1, ho, wo, 16)
    compiled = _kernels.int8_conv(xpad, wk, colsum, zp, mult, bias, *geometry, out=dst if direct else None,
                                  bounds=(lo, hi), y=y, wide=lambda k: ctx.temp.take("wide16", np.int16, k),
                                  swish=None if folded else epilogue.swish)
    if not direct:
        stored = ctx.typed_scratch(np.int8, ho * wo * n).reshape(ho * wo, n)
        groups = stored.view("V16").reshape(ho * wo, o1).T
        dst_groups = o[0].reshape(o1, ho * wo, 16).view("V16")[..., 0]

    def run() -> None:
        for e in edges:
            e.fill(zp)
        for fill in fills:
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
        zero(pads)
    return run
