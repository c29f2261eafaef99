"""Where a Conv or pooling window goes over an input (strides, dilations, pads or auto_pad, output size): pure shape
arithmetic, shared by the kernels and by the model passes that look at a conv's input windows."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence


@dataclass(frozen=True)
class ConvGeometry:
    """Where a Conv or pooling window goes: per spatial axis the stride, dilation, padding before and after (from
    `pads` or `auto_pad`) and the output size."""

    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    pads_begin: tuple[int, ...]
    pads_end: tuple[int, ...]
    out: tuple[int, ...]


def conv_geometry(x_shape: Sequence[int], k_shape: Sequence[int], attrs: dict[str, Any]) -> ConvGeometry:
    """The geometry of a window `k_shape` over input `x_shape` (N, C, *spatial), honouring auto_pad."""
    nd = len(k_shape)
    spatial = list(x_shape[2:])
    strides = list(attrs.get("strides") or [1] * nd)
    dil = list(attrs.get("dilations") or [1] * nd)
    pads = list(attrs.get("pads") or [0] * (2 * nd))
    auto_pad = attrs.get("auto_pad", "NOTSET") or "NOTSET"
    eff = [(k - 1) * d + 1 for k, d in zip(k_shape, dil)]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pb, pe = [], []
        for i in range(nd):
            out = -(-spatial[i] // strides[i])
            total = max(0, (out - 1) * strides[i] + eff[i] - spatial[i])
            small, big = total // 2, total - total // 2
            pb.append(small if auto_pad == "SAME_UPPER" else big)
            pe.append(big if auto_pad == "SAME_UPPER" else small)
    elif auto_pad == "VALID":
        pb, pe = [0] * nd, [0] * nd
    else:
        pb, pe = pads[:nd], pads[nd:]
    out = [(spatial[i] + pb[i] + pe[i] - eff[i]) // strides[i] + 1 for i in range(nd)]
    return ConvGeometry(tuple(strides), tuple(dil), tuple(pb), tuple(pe), tuple(out))
