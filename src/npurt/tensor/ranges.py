"""Calibration ranges from an activation histogram: the clipping range [a, b] an int8 affine quantisation maps
onto its 256 codes, chosen by the vendor toolkit's `quantized_algorithm`s.

- `normal`: the observed [min, max] (no clipping);
- `kl_divergence`: the range whose quantised histogram is closest (Kullback-Leibler divergence) to the clipped
  original, outliers folded into the edge bins (the entropy calibration of TensorRT, widened to asymmetric ranges);
- `mmse`: the range with the smallest expected squared error of quantise-then-dequantise over the histogram,
  clipping error of the outliers included.

Candidates shrink [min, max] towards zero by one factor (so the zero point stays where the data puts it); the
histogram has `HIST_BINS` equal bins over [min, max] widened to include 0, and counts the non-zero values only
(`histogram_values`): zero is exact in every candidate range, so exact zeros cost nothing whichever is chosen,
while in the histogram a ReLU's zeros (half the values) would sit in the first bin and, merged with their
neighbours into one quantised level, make every wide range look bad (mobilenet_v1 then clipped 12-20 % of its
depthwise activations).
"""
from __future__ import annotations

import numpy as np

from npurt.errors import ErrorCode, NpuError

ALGORITHMS = ("normal", "kl_divergence", "mmse")
HIST_BINS = 8192
LEVELS = 256                # int8 codes
_EPS = 1e-4                 # count given to an empty Q bin under mass of P
_CANDIDATES = 160           # shrink factors tried, geometric from 1 down to LEVELS / HIST_BINS


def check_algorithm(algorithm: str) -> str:
    """`algorithm` if it is one of ALGORITHMS, else INVALID_ARGUMENT naming them."""
    if algorithm not in ALGORITHMS:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"quantized_algorithm must be one of {', '.join(ALGORITHMS)}, "
                                                   f"got {algorithm!r}")
    return algorithm


def histogram_range(lo: float, hi: float) -> tuple[float, float]:
    """The histogram's [lo, hi]: the observed range widened to include 0 (0 must stay exact)."""
    return min(float(lo), 0.0), max(float(hi), 0.0)


def histogram_values(values: np.ndarray) -> np.ndarray:
    """The values a calibration histogram counts: the non-zero ones (exact zeros are exact in every range)."""
    flat = np.ravel(values)
    return flat[flat != 0]


def _shrink_factors() -> np.ndarray:
    return np.geomspace(1.0, LEVELS / HIST_BINS, _CANDIDATES)


def _window(hist: np.ndarray, lo: float, hi: float, t: float) -> tuple[int, int]:
    """Bins [i, j) covering the candidate [lo * t, hi * t]."""
    width = (hi - lo) / hist.size
    z = -lo / width                                  # the position of 0, in bins
    i = int(np.floor(z - (z * t)))
    j = int(np.ceil(z + (hist.size - z) * t))
    return max(0, min(i, hist.size - 1)), max(i + 1, min(j, hist.size))


def _kl(hist: np.ndarray, i: int, j: int) -> float:
    """KL(P || Q): P the window [i, j) with the outside mass folded into its edge bins, Q the window alone merged
    into LEVELS equal groups, each spread back over its non-empty bins (so clipped mass costs divergence). Both are
    divided by P's total: Q keeps only the window's share of the mass, so a window that clips most of the values
    costs that (normalised on its own, a window holding a sliver of mass looked like a perfect match)."""
    window = hist[i:j].astype(np.float64)
    p = window.copy()
    p[0] += hist[:i].sum()
    p[-1] += hist[j:].sum()
    n = p.size
    levels = min(LEVELS, n)
    edges = np.linspace(0, n, levels + 1).astype(np.int64)
    nonzero = p > 0
    group_mass = np.add.reduceat(window, edges[:-1])
    group_count = np.add.reduceat(nonzero.astype(np.float64), edges[:-1])
    per_bin = np.divide(group_mass, group_count, out=np.zeros_like(group_mass), where=group_count > 0)
    q = np.repeat(per_bin, np.diff(edges)) * nonzero
    unmatched = nonzero & (q == 0)         # clipped mass where the window had none: smoothed, as MXNet does
    q[unmatched] = _EPS
    ps = p.sum()
    if ps == 0:
        return np.inf
    p, q = p[nonzero] / ps, q[nonzero] / ps
    return float(np.sum(p * np.log(p / q)))


def _mse(hist: np.ndarray, lo: float, hi: float, t: float, centres: np.ndarray) -> float:
    """Expected squared error of quantise-dequantise with the range [lo * t, hi * t] (clipping included)."""
    a, b = lo * t, hi * t
    scale = (b - a) / (LEVELS - 1)
    if scale <= 0:
        return float(np.sum(hist * centres ** 2))
    zp = np.rint(-a / scale)
    q = np.clip(np.rint(centres / scale) + zp, 0, LEVELS - 1)
    err = centres - (q - zp) * scale
    return float(np.sum(hist * err * err))


def choose_range(algorithm: str, hist: np.ndarray, lo: float, hi: float) -> tuple[float, float]:
    """The clipping range [a, b] of `algorithm` for a histogram of HIST_BINS bins over [lo, hi] (which includes
    0); `normal` gives [lo, hi]."""
    if algorithm == "normal" or hi <= lo or not hist.any():
        return lo, hi
    factors = _shrink_factors()
    if algorithm == "kl_divergence":
        costs = [_kl(hist, *_window(hist, lo, hi, t)) for t in factors]
    elif algorithm == "mmse":
        edges = np.linspace(lo, hi, hist.size + 1)
        centres = (edges[:-1] + edges[1:]) / 2
        costs = [_mse(hist, lo, hi, t, centres) for t in factors]
    else:
        check_algorithm(algorithm)
    t = float(factors[int(np.argmin(costs))])
    return lo * t, hi * t
