"""The memory report a session prints: the table of the RKNN NPU SRAM guide ("Query Model SRAM Occupancy"; its
figures in `tests/data/seed/memory_table.txt`: what librknnrt logs at RKNN_LOG_LEVEL=3) for the session's context —
built by `npurt.runtime.report`, the same table `rknn_init` logs — followed by what the session allocated: its
input/output buffers, the device memory, SRAM and the executor's temp memory (host scratch its steps share).
"""
from __future__ import annotations

from typing import Any, Sequence

from npurt.runtime.report import context_table

RULE = "-" * 40


def format_memory_report(ctx: Any, in_bufs: Sequence[Any] = (), out_bufs: Sequence[Any] = ()) -> str:
    """The table and totals for `ctx` (a runtime Context), then the session's own memory: `in_bufs` / `out_bufs`
    (its input / output buffers, bound to `ctx`), the context's allocations and the device's SRAM."""
    compiled = ctx.compiled
    lines = [context_table(ctx).rstrip("\n")]        # it ends with a RULE
    for op, names, bufs in (("InputOperator", compiled.graph.inputs, in_bufs),
                            ("OutputOperator", compiled.graph.outputs, out_bufs)):
        for name, buf in zip(names, bufs):
            if buf.alive:
                lines.append(f"{op} {name}: session buffer 0x{buf.dev_addr:08x}, {buf.capacity} bytes")
    m = ctx.mem_size()
    io_bytes = sum(b.capacity for b in list(in_bufs) + list(out_bufs) if b.alive)
    lines += [f"Input/Output Memory Size: {io_bytes}",
              f"Total DMA Allocated Size (context): {m.dma_allocated}",
              f"Total Device Memory (context + I/O): {m.dma_allocated + io_bytes}",
              f"SRAM: total {m.sram_total}, used by this model {m.sram_used}, free {m.sram_free}",
              f"Executor Temp Memory (host, step scratch): {m.temp_size}",
              f"Device: {ctx.device.soc}, coherence {ctx.device.coherence}, precision {compiled.precision}",
              RULE]
    return "\n".join(lines)
