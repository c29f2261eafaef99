"""Perf counters of a context: the last run's duration and, when collection is on, per-op timings, formatted as
the vendor's `RKNN_QUERY_PERF_DETAIL` table."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any



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


@dataclass
class PerfCounters:
    """What the last run cost. `run_us`: inference only (I/O conversion excluded), as PERF_RUN reports it."""

    runs: int = 0
    run_us: int = 0
    total_us: int = 0              # including the runtime's input/output conversions and cache maintenance
    ops: list[OpTiming] = field(default_factory=list)


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


def _shape(s: tuple[int, ...]) -> str:
    return "(" + ",".join(str(d) for d in s) + ")"


def format_perf_detail(perf: PerfCounters, not_collected: str | None = None) -> str:
    """The per-op table (vendor style): ID, OpType, DataType, Target, shapes, Time(us), FullName; then the total.
    `not_collected`: per-op timing was off; the table holds only the run's total and this line saying so."""
    rule = "-" * 118
    lines = [rule, f"{'Operator Time Consuming Ranking Table':^118}", rule,
             f"{'ID':<5}{'OpType':<22}{'DataType':<10}{'Target':<8}{'InputShape':<26}{'OutputShape':<20}"
             f"{'Time(us)':>10}  FullName", rule]
    for op in perf.ops:
        ins = ",".join(_shape(s) for s in op.input_shapes) or "-"
        lines.append(f"{op.index:<5}{op.op_type[:21]:<22}{op.data_type:<10}{'CPU':<8}{ins[:25]:<26}"
                     f"{_shape(op.output_shape)[:19]:<20}{op.time_us:>10}  {op.name}")
    if not_collected:
        lines.append(not_collected)
    lines.append(rule)
    lines.append(f"Total Operator Elapsed Per Frame Time(us): {sum(op.time_us for op in perf.ops)}")
    lines.append(f"Total Run Elapsed Per Frame Time(us): {perf.run_us}")
    lines.append(rule)
    return "\n".join(lines) + "\n"
