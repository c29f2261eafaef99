"""Perf counters of a context: the last run's duration and, when collection is on, per-op timings, formatted as
the vendor's `RKNN_QUERY_PERF_DETAIL` table.

Two modes, chosen once per context and never mixed (`ContextOptions.perf`; the RKNN mirror takes it from
`$NPURT_PERF` at rknn_init): "measured" (the default) reports the CPU time npurt's executor took; "predicted"
reports the NPU time npurt's timing model predicts for the context's SoC, core mask and SRAM (`npurt.timing`), the
same numbers `npurt perf` prints. The table says which one it holds.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from npurt.errors import ErrorCode, NpuError

PERF_MODES = ("measured", "predicted")
PERF_ENV = "NPURT_PERF"


def perf_mode_from_env() -> str:
    """`$NPURT_PERF` ("measured" when unset); INVALID_ARGUMENT for any other value than `PERF_MODES`."""
    value = os.environ.get(PERF_ENV, "").strip().lower() or "measured"
    if value not in PERF_MODES:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{PERF_ENV}={os.environ.get(PERF_ENV)!r}: must be one of "
                                                   f"{', '.join(PERF_MODES)}")
    return value


@dataclass
class OpTiming:
    """One executed op of the last run."""

    index: int
    op_type: str
    data_type: str
    input_shapes: list[tuple[int, ...]]
    output_shape: tuple[int, ...]
    time_us: int
    name: str
    target: str = "CPU"            # where the op ran ("CPU": npurt's executor) or is predicted to run


@dataclass
class PerfCounters:
    """What the last run cost. `run_us`: inference only (I/O conversion excluded), as PERF_RUN reports it."""

    runs: int = 0
    run_us: int = 0
    total_us: int = 0              # including the runtime's input/output conversions and cache maintenance
    ops: list[OpTiming] = field(default_factory=list)
    mode: str = "measured"         # "measured" (CPU time of npurt's executor) or "predicted" (timing model)
    predicted_for: str = ""        # predicted mode: "rk3588, 1 core, SRAM 0 B"


def run_executor(executor: Any, collect: bool) -> tuple[int, list[tuple[int, Any]]]:
    """Run `executor` once; (duration in µs, [(µs, node)] per op when `collect`, via `Executor.run_profiled`)."""
    t0 = time.perf_counter_ns()
    if collect and hasattr(executor, "run_profiled"):
        timings = executor.run_profiled()
    else:
        executor.run()
        timings = []
    return (time.perf_counter_ns() - t0) // 1000, timings


def op_timings(compiled: Any, raw: list[tuple[int, Any]]) -> list[OpTiming]:
    """OpTiming rows for the per-op durations of `run_executor`."""
    out = []
    storage = compiled.storage
    for i, (us, node) in enumerate(raw, start=1):
        outs = [t for t in node.outputs if t]
        st = storage.get(outs[0]) if outs else None
        ins = [tuple(storage[t].shape) for t in node.inputs if t and t in storage]
        out.append(OpTiming(i, node.display_type, (st.dtype.value.upper() if st else "-"), ins,
                            tuple(st.shape) if st else (), int(us), node.name or (outs[0] if outs else "")))
    return out


def cores_of(mask: int, npu_cores: int) -> int:
    """NPU cores a core mask runs one model on: AUTO (0) picks one idle core, ALL (0xffff) takes every core."""
    if mask == 0:
        return 1
    if mask == 0xFFFF:
        return npu_cores
    return max(1, min(bin(mask & ((1 << npu_cores) - 1)).count("1"), npu_cores))


def predicted_timings(compiled: Any, soc: str, cores: int, sram: int, plan: Any) -> tuple[int, list[OpTiming]]:
    """(predicted µs of the run, one OpTiming per predicted layer) from `npurt.timing.predict`."""
    from npurt.timing import predict
    p = predict(compiled, soc, cores=cores, sram=sram, plan=plan)
    ops = [OpTiming(layer.index, layer.op, layer.dtype.upper(), [tuple(s) for s in layer.input_shapes],
                    tuple(layer.shape), int(round(layer.us)), layer.name, layer.target) for layer in p.layers]
    return int(round(p.total_us)), ops


def _shape(s: tuple[int, ...]) -> str:
    return "(" + ",".join(str(d) for d in s) + ")"


def format_perf_detail(perf: PerfCounters, not_collected: str | None = None) -> str:
    """The per-op table (vendor style): ID, OpType, DataType, Target, shapes, Time(us), FullName; then the total.
    `not_collected`: per-op timing was off; the table holds only the run's total and this line saying so."""
    rule = "-" * 118
    lines = [rule, f"{'Operator Time Consuming Ranking Table':^118}", rule]
    if perf.mode == "predicted":
        lines += [f"Time(us): predicted NPU time (npurt timing model; {perf.predicted_for}), not measured", rule]
    lines += [
             f"{'ID':<5}{'OpType':<22}{'DataType':<10}{'Target':<8}{'InputShape':<26}{'OutputShape':<20}"
             f"{'Time(us)':>10}  FullName", rule]
    for op in perf.ops:
        ins = ",".join(_shape(s) for s in op.input_shapes) or "-"
        lines.append(f"{op.index:<5}{op.op_type[:21]:<22}{op.data_type:<10}{op.target:<8}{ins[:25]:<26}"
                     f"{_shape(op.output_shape)[:19]:<20}{op.time_us:>10}  {op.name}")
    if not_collected:
        lines.append(not_collected)
    lines.append(rule)
    lines.append(f"Total Operator Elapsed Per Frame Time(us): {sum(op.time_us for op in perf.ops)}")
    lines.append(f"Total Run Elapsed Per Frame Time(us): {perf.run_us}")
    lines.append(rule)
    return "\n".join(lines) + "\n"
