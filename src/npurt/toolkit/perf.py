"""`eval_perf`'s table and `eval_memory`'s figures, in the toolkit's printed layout.

The per-layer times come from one place, `layer_times`: today the executor's measured CPU times on this host,
labelled as such in every table (not a prediction of the NPU's times). When npurt's NPU timing model is part of
the build, `layer_times` is the one call site that switches to it: `predict(ctx.compiled, ctx.profile.name)`
gives per layer (op, dtype, target, input_shapes, shape, us) and `total_us`, and the source line becomes
"predicted by npurt's timing model".
"""
from __future__ import annotations

from typing import Any

RULE = "=" * 95
MIB = 1024 * 1024


def layer_times(ctx: Any) -> tuple[str, list[tuple[str, str, str, str, str, int]], int]:
    """(where the times come from, rows (op type, data type, target, input shapes, output shape, µs), total µs) of
    one run of `ctx` over what its inputs hold. Rows only when the context collects per-op times (perf_debug)."""
    ctx.run()
    rows = [(op.op_type, op.data_type, "CPU", ",".join(_shape(s) for s in op.input_shapes), _shape(op.output_shape),
             int(op.time_us)) for op in ctx.perf.ops]
    source = "npurt: CPU time measured on this host (not an NPU prediction)"
    return source, rows, int(ctx.perf.run_us)


def _shape(shape: Any) -> str:
    return "(" + ",".join(str(int(d)) for d in shape) + ")"


def format_perf(source: str, rows: list[tuple[str, str, str, str, str, int]], total_us: int) -> str:
    """The toolkit's "Performance" table."""
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
