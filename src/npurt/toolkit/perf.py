"""`eval_perf`'s table and `eval_memory`'s figures, in the toolkit's printed layout.

The times come from one place, `layer_times`: the NPU time npurt's timing model predicts (`npurt.timing`, through
the runtime's `predicted_timings`, as RKNN_QUERY_PERF_DETAIL gives it in predicted mode) for the context's model,
SoC, core mask and SRAM, labelled as a prediction; below it, the CPU time the same run took on this host, labelled
as measured. A SoC without timing figures falls back to the measured CPU times, labelled as such.
"""
from __future__ import annotations

from typing import Any

from npurt.errors import NpuError

RULE = "=" * 95
MIB = 1024 * 1024
Row = tuple[str, str, str, str, str, int]


def layer_times(ctx: Any) -> tuple[str, list[Row], int, str]:
    """(where the times come from, rows (op type, data type, target, input shapes, output shape, µs), total µs, a
    line with the measured CPU time) for one run of `ctx` over what its inputs hold. Rows only when the context
    collects per-op times (init_runtime(perf_debug=True))."""
    from npurt.runtime.perf import cores_of, predicted_timings
    from npurt.runtime.report import context_layout
    ctx.run()
    measured = ctx.perf
    cpu = f"npurt's CPU executor took {measured.run_us} us for this run on this host (measured, not an NPU time)"
    cores = cores_of(ctx.core_mask, ctx.profile.npu_cores)
    sram = context_layout(ctx).sram_size
    try:
        total, ops = predicted_timings(ctx.compiled, ctx.profile.name, cores, sram, ctx.plan)
    except NpuError:
        ops, total = measured.ops, measured.run_us
        source = "npurt: CPU time measured on this host (no NPU timing figures for this SoC)"
    else:
        source = (f"predicted NPU time (npurt timing model; {ctx.profile.name}, {cores} core(s), SRAM {sram} B), "
                  f"not measured")
    rows = [(op.op_type, op.data_type, op.target, ",".join(_shape(s) for s in op.input_shapes),
             _shape(op.output_shape), int(op.time_us)) for op in ops] if ctx.options.collect_perf else []
    return source, rows, int(total), cpu


def _shape(shape: Any) -> str:
    return "(" + ",".join(str(int(d)) for d in shape) + ")"


def format_perf(source: str, rows: list[Row], total_us: int, note: str = "") -> str:
    """The toolkit's "Performance" table (`note`: a last line under it)."""
    lines = [RULE, f"{'Performance':^95}", f"{source:^95}", RULE]
    if rows:
        lines.append(f"{'ID':<5}{'OpType':<18}{'DataType':<10}{'Target':<8}{'InputShape':<28}{'OutputShape':<18}"
                     f"{'Time(us)':>8}")
        for i, (op, dtype, target, ins, out, us) in enumerate(rows, 1):
            lines.append(f"{i:<5}{op:<18}{dtype:<10}{target:<8}{ins:<28}{out:<18}{us:>8}")
        lines.append("-" * 95)
    else:
        lines.append("(per-layer times: init_runtime(perf_debug=True))")
    lines += [f"Total Operator Elapsed Per Frame Time(us): {total_us}",
              f"Total Elapsed Per Frame Time(us): {total_us}",
              f"FPS: {1e6 / total_us:.2f}" if total_us else "FPS: -", RULE]
    if note:
        lines += [note, RULE]
    return "\n".join(lines)


def memory_figures(ctx: Any) -> dict[str, int]:
    """eval_memory's dict from the context's real plan and allocations: weights, the internal arena, and the rest
    of the device memory the context holds (its input / output buffers); total the sum."""
    m = ctx.mem_size()
    weight, internal = int(m.weight_size), int(m.internal_size)
    other = max(int(m.dma_allocated) - internal - weight, 0)      # I/O buffers and page rounding
    return {"weight_memory": weight, "internal_memory": internal, "other_memory": other,
            "total_memory": weight + internal + other}


def format_memory(figures: dict[str, int], model_size: int) -> str:
    """The toolkit's "Memory Profile Info Dump"."""
    rule = "=" * 55
    return "\n".join([
        rule, f"{'Memory Profile Info Dump':^55}", rule,
        "NPU model memory detail(bytes):",
        f"    Weight Memory: {figures['weight_memory'] / MIB:.2f} MiB",
        f"    Internal Tensor Memory: {figures['internal_memory'] / MIB:.2f} MiB",
        f"    Other Memory: {figures['other_memory'] / MIB:.2f} MiB",
        f"    Total Memory: {figures['total_memory'] / MIB:.2f} MiB",
        "",
        f"INFO: When evaluating memory usage, we need consider the size of model, current model size is: "
        f"{model_size / MIB:.2f} MiB",
        rule])
