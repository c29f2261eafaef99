"""The published measurements the timing model is fitted on and checked against, and the fit itself.

Source of every row: airockchip/rknn_model_zoo README, "Model performance benchmark (FPS)" (V2.3.2): int8, single
core, rknn_benchmark timing `rknn_run` only, at each platform's top NPU clock. The RK3566/RK3568 column is one
column; npurt checks it as rk3568 (and shows rk3566 beside it). `model` names a builder of
`npurt.model.zoo` / `npurt.model.zoo_published` (the published structure at the published input size, random
weights). `CALIBRATION` are the only rows `fit` sees; `VALIDATION` rows are predicted, never fitted.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Iterable

from npurt.soc import npu_timing as T


@dataclass(frozen=True)
class Row:
    """One published measurement: model (its zoo name in the table), builder, SoC, FPS."""

    name: str
    model: str
    soc: str
    fps: float


CALIBRATION: tuple[Row, ...] = (
    Row("mobilenetv2-12", "mobilenet_v2_like", "rk3588", 450.7),
    Row("resnet50-v2-7", "resnet50_v2", "rk3588", 110.1),
    Row("yolov5s", "yolov5s", "rk3568", 19.3),
    Row("yolov8n", "yolov8n", "rk3576", 90.2),
)

# The same table's other rows for the models npurt builds: (name, builder, FPS on RK3566/RK3568, RK3562, RK3588,
# RK3576).
_TABLE = (
    ("mobilenetv2-12", "mobilenet_v2_like", 180.7, 281.3, 450.7, 467.0),
    ("resnet50-v2-7", "resnet50_v2", 37.9, 54.9, 110.1, 99.0),
    ("yolov5s_relu", "yolov5s_relu", 25.5, 33.2, 66.1, 65.0),
    ("yolov5n", "yolov5n", 39.7, 47.4, 82.5, 112.7),
    ("yolov5s", "yolov5s", 19.3, 23.6, 48.4, 57.5),
    ("yolov8n", "yolov8n", 34.0, 40.9, 73.5, 90.2),
    ("yolov8s", "yolov8s", 15.1, 18.4, 38.0, 40.8),
)
_COLUMNS = ("rk3568", "rk3562", "rk3588", "rk3576")
VALIDATION: tuple[Row, ...] = tuple(
    Row(name, model, soc, fps) for name, model, *fps_row in _TABLE for soc, fps in zip(_COLUMNS, fps_row)
    if Row(name, model, soc, fps) not in CALIBRATION) + (Row("yolov5s", "yolov5s", "rk3566", 19.3),)


def error(predicted_fps: float, published_fps: float) -> float:
    """Relative error of a predicted FPS: (predicted - published) / published."""
    return (predicted_fps - published_fps) / published_fps


@dataclass(frozen=True)
class _Parts:
    """The parts of one layer's time that do not depend on the fitted constants."""

    mac_us: float       # compute of a MAC op at efficiency 1 (0 for other ops)
    other_us: float     # compute of other NPU ops or of a fused activation, or the whole time of a CPU op
    ddr_us: float       # DDR bytes at the full peak bandwidth
    sram_us: float
    sync_us: float      # multi-core synchronisation
    per_op: float       # 1 / clock (µs per cycle) for NPU ops, 0 for CPU ops


def parts(prediction: Any) -> list[_Parts]:
    """A prediction made with `Fit(1, 1, 0)` split into the parts `total_us` recombines for any other fit."""
    bw = prediction.figures["ddr_gbps_peak"] * 1e3
    clock = prediction.figures["clock_mhz"]
    out = []
    for layer in prediction.layers:
        if layer.target == "CPU":
            out.append(_Parts(0.0, layer.us, 0.0, 0.0, 0.0, 0.0))
            continue
        mac = layer.compute_us - layer.activation_us if layer.macs else 0.0
        out.append(_Parts(mac, layer.compute_us - mac,
                          layer.ddr_bytes / bw, layer.sram_bytes / (bw * T.SRAM_BANDWIDTH_FACTOR),
                          (layer.cores - 1) * T.MULTICORE_SYNC_CYCLES / clock, 1.0 / clock))
    return out


def total_us(layers: list[_Parts], constants: T.Fit, soc: str) -> float:
    """What `predict(..., fit=constants).total_us` gives, from `parts` of the layers (the fit evaluates thousands of
    constants this way; a test holds the two equal)."""
    eff = constants.conv_efficiency * constants.efficiency_of(soc)
    total = 0.0
    for p in layers:
        if not p.per_op:
            total += p.other_us
            continue
        compute = p.mac_us / eff + p.other_us
        memory = p.ddr_us / constants.ddr_efficiency + p.sram_us
        total += max(compute, memory) + constants.op_overhead_cycles * p.per_op + p.sync_us
    return total


def fit(cases: Iterable[tuple[Any, Row]], start: T.Fit | None = None) -> T.Fit:
    """The constants that minimise the largest |log(predicted / published)| over `cases` = [(compiled, row)]
    (then the sum of squares): a coarse log grid (unless `start` is given), then a coordinate search. It never
    starts from `FIT`, so the fit reproduces on its own. Only the calibration rows are passed here."""
    from npurt.timing.model import predict
    base = T.Fit(1.0, 1.0, 0.0, ())
    data = [(parts(predict(compiled, row.soc, fit=base)), row) for compiled, row in cases]
    fitted_socs = ("rk3566", "rk3568")     # one NPU generation, one factor (see `npurt.soc.npu_timing.FIT`)

    def score(f: T.Fit) -> tuple[float, float]:
        errs = [math.log(1e6 / total_us(layer_parts, f, row.soc) / row.fps) for layer_parts, row in data]
        return max(abs(e) for e in errs), sum(e * e for e in errs)

    def with_value(f: T.Fit, key: str, v: float) -> T.Fit:
        if key == "soc":
            return replace(f, soc_efficiency=tuple((s, v) for s in fitted_socs))
        return replace(f, **{key: v})

    if start is None:       # a coarse log grid first (the objective is a max: a local search alone stalls)
        grid = [0.2 * 5 ** (k / 8) for k in range(9)]                  # 0.2 .. 1.0
        cands = (T.Fit(ce, de, oc, tuple((s, se) for s in fitted_socs))
                 for ce in grid for de in grid for se in grid for oc in (2e3 * 15 ** (k / 8) for k in range(9)))
        start = min(cands, key=score)
    best = start
    best_score = score(best)
    keys = ("conv_efficiency", "ddr_efficiency", "op_overhead_cycles", "soc")
    step = 0.5
    while step > 0.004:
        improved = False
        for key in keys:
            now = best.efficiency_of(fitted_socs[0]) if key == "soc" else getattr(best, key)
            for factor in (math.exp(step), math.exp(-step)):
                value = now * factor
                if key in ("conv_efficiency", "ddr_efficiency", "soc") and value > 1.0:
                    continue
                cand = with_value(best, key, value)
                s = score(cand)
                if s < best_score:
                    best, best_score, improved = cand, s, True
        if not improved:
            step /= 2
    return best


def rounded(f: T.Fit) -> T.Fit:
    """`f` with 3 significant digits (what the source records)."""
    def r(v: float) -> float:
        return float(f"{v:.3g}")
    return T.Fit(r(f.conv_efficiency), r(f.ddr_efficiency), r(f.op_overhead_cycles),
                 tuple((s, r(v)) for s, v in f.soc_efficiency))
