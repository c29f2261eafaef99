"""Dense float16 Conv on native slots: a direct convolution in float32 over a bordered float32 copy of the input in
its own layout, (C1, Hp, Wp, C2) or (1, Hp, Wp, C) for NHWC (one buffer shared by all steps; each fills its border
every run), every output summed over k = (dy, dx, c1, lane) in
order, + bias, the fused activation, and the float16 store into the output's NC1HWC2 slot.

Inputs and weights hold float16 values, so every product is exact in float32: the compiled kernel
(`npurt._kernels.float_conv`, FMA on AVX) and this module's numpy reference (`accumulate`: one multiply and one add
per k) round identically, byte for byte. Weights that are not float16 values are left to the generic path.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

import npurt._kernels as _kernels
from npurt.exec.inplace.binding import StepBinding
from npurt.exec.inplace.conv_int8 import columns
from npurt.exec.inplace.epilogue import ConvEpilogue, copier, filler, padding_lanes, sequence
from npurt.exec.inplace.slots import Skip


def accumulate(cols: np.ndarray, weights: np.ndarray, acc: np.ndarray, tmp: np.ndarray) -> np.ndarray:
    """acc = cols (P, K) @ weights (K, N), summed over k = 0, 1, ... in order (the compiled kernel's order)."""
    acc.fill(0)
    for k in range(cols.shape[1]):
        np.multiply(cols[:, k:k + 1], weights[k], out=tmp)
        np.add(acc, tmp, out=acc)
    return acc


def fused_activation(attrs: dict) -> tuple[int, float, float] | None:
    """(code, p0, p1) of the fused activation for `float_conv`, as `apply_activation` reads its parameters; None
    when the compiled kernel does not apply it (the numpy epilogue does)."""
    act = attrs.get("activation")
    if act not in _kernels.FLOAT_ACTIVATIONS:
        return None
    p = attrs.get("activation_params")
    if p is not None and not isinstance(p, (list, tuple, np.ndarray)):
        p = (p,)
    if act == "Clip":
        lo, hi = p if p is not None else (None, None)
        return 2, -np.inf if lo is None else lo, np.inf if hi is None else hi
    if act == "LeakyRelu":
        return 3, p[0] if p is not None else 0.01, 0.0
    if act == "Swish":
        return 4, p[0] if p is not None else 1.0, 0.0
    if act == "HardSigmoid":
        return (5, *(p if p is not None else (0.2, 0.5)))
    if act == "HardSwish":
        return 6, 1.0 / 6.0, 0.5
    return _kernels.FLOAT_ACTIVATIONS[act], 0.0, 0.0


def dense_fp16(out_name: str, attrs: dict, ctx: StepBinding, src, so, cw, input_filler) -> Callable[[], None]:
    """The step of a dense (group 1) float16 conv; `src` a ConvInput, `cw` its ConvWeights, `input_filler` the
    conv module's casting copy of the input slot into the bordered buffer (in the slot's layout)."""
    si = src.storage
    h, wd, kh, kw, ho, wo, sh, sw, hp, wp, c = cw.sizes(si)
    pb = cw.geometry.pads_begin
    c1, cc = (si.dims[1], si.dims[4]) if src.layout == "nc1hwc2" else (1, si.dims[3])
    m = so.shape[1]
    o1, o2 = so.dims[1], so.dims[4]
    mp = o1 * o2
    n = -(-mp // 16) * 16
    wm = np.zeros((kh, kw, c1 * cc, n), np.float32)
    wm[:, :, :c, :m] = cw.weights.transpose(2, 3, 1, 0)
    wm = np.ascontiguousarray(wm.reshape(kh * kw * c1 * cc, n))
    if not np.array_equal(wm.astype(np.float16).astype(np.float32), wm):
        raise Skip
    bias = np.zeros(n, np.float32)
    if cw.bias is not None:
        bias[:m] = cw.bias
    geometry = ((kh, kw), (sh, sw), tuple(cw.geometry.dilations), (ho, wo))
    xp = ctx.padded((c1, hp, wp, cc))
    edges = filler([xp[:, :pb[0]], xp[:, pb[0] + h:], xp[:, pb[0]:pb[0] + h, :pb[1]],
                    xp[:, pb[0]:pb[0] + h, pb[1] + wd:]])
    interior = xp[:, pb[0]:pb[0] + h, pb[1]:pb[1] + wd]
    fill = input_filler(src, ctx.slot(src.name), interior[0, :, :, :c] if src.layout == "nhwc" else interior)
    epilogue = ConvEpilogue(attrs, so)
    act = fused_activation(attrs)
    o = ctx.slot(out_name)
    pads = filler(padding_lanes(so, o))
    y = ctx.scratch(ho * wo * n)[:ho * wo * n].reshape(ho * wo, n)
    compiled = _kernels.float_conv(xp, wm, bias, *geometry, out=o[0] if act is not None else None,
                                   activation=act or (0, 0.0, 0.0), y=y if act is None else None)
    if compiled is not None and act is not None:
        return sequence(edges, fill, compiled, pads)

    stored = ctx.typed_scratch(np.float16, ho * wo * mp).reshape(ho * wo, mp)
    group = np.dtype(f"V{o2 * 2}")
    dst = o[0].reshape(o1, ho * wo, o2).view(group)[..., 0]
    groups = stored.view(group).reshape(ho * wo, o1).T
    store = copier(stored, y[:, :mp])
    if compiled is None:
        tmp = ctx.scratch2(ho * wo * n)[:ho * wo * n].reshape(ho * wo, n)

        def compiled() -> None:
            accumulate(columns(xp, *geometry), wm, y, tmp)
            np.add(y, bias, out=y)

    def run() -> None:
        edges()
        fill()
        compiled()
        epilogue(y)
        store()
        np.copyto(dst, groups)
        pads()
    return run
