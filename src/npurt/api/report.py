"""The memory table a session prints: the layout of seeds/rknn-npu-sram.txt §4.1.5.3.4 (what librknnrt logs at
RKNN_LOG_LEVEL=3) — one row per tensor with its device address range and the bytes of it that live in SRAM —
followed by the totals and what the session allocated.

Addresses are real npurt device addresses: internal tensors at the internal arena's address plus their planned
offset (an arena spilling from SRAM to DDR is one contiguous range; its first `sram_size` bytes are the SRAM
part, and the table shows it from the SRAM address on, as the seed's log does), inputs and outputs at their own
buffers. "Predict ... RW Amount" is npurt's estimate: every activation is
written once by its producer and read once per consuming node; weights are read once per run.
"""
from __future__ import annotations

from typing import Any, Sequence

RULE = "-" * 96


def _shape(dims: Sequence[int]) -> str:
    return "(" + ",".join(str(int(d)) for d in dims) + ")"


def format_memory_report(ctx: Any, in_bufs: Sequence[Any] = (), out_bufs: Sequence[Any] = ()) -> str:
    """The table and totals for `ctx` (a runtime Context) whose inputs/outputs are `in_bufs` / `out_bufs`."""
    compiled = ctx.compiled
    plan, graph, storage = compiled.plan, compiled.graph, compiled.storage
    internal = getattr(ctx, "_internal_buf", None)
    internal = internal if internal is not None and internal.alive else None
    ref = getattr(ctx, "_internal_ref", None)
    base = ref.buffer.dev_addr + ref.offset if ref is not None and ref.alive else 0
    sram_bytes = internal.sram_size if internal is not None else 0
    lines: list[str] = []
    if sram_bytes:
        lo = ctx.device.sram_addr(internal)
        lines += [RULE, f"Total allocated Internal SRAM Size: {sram_bytes}, "
                        f"Addr: [0x{lo:08x}, 0x{lo + sram_bytes:08x})"]
        base = lo              # as in the seed's table: the arena starts in SRAM and continues past its end
    lines += [RULE, f"{'ID':>3} {'User':<14} {'Tensor':<16} {'DataType':<8} {'OrigShape':<18} {'NativeShape':<20}| "
                    f"{'[Start':<11}{'End)':<11}{'Size':<11}| SramHit", RULE]

    def user_of(name: str) -> str:
        info = graph.tensors.get(name)
        if info is None or info.producer is None:
            return "InputOperator"
        return graph.nodes[info.producer].display_type

    rows: list[tuple[str, str, int, int, str]] = []
    for i, name in enumerate(graph.inputs):
        buf = in_bufs[i] if i < len(in_bufs) else None
        rows.append(("InputOperator", name, buf.dev_addr if buf is not None else 0, storage[name].nbytes, "\\"))
    rw_internal = rw_sram = 0
    for name in sorted(plan.offsets, key=lambda n: (plan.lifetimes[n][0], n)):
        off, size = plan.offsets[name], plan.sizes[name]
        hit = max(0, min(off + size, sram_bytes) - off) if sram_bytes else 0
        uses = 1 + len(graph.tensors[name].consumers) if name in graph.tensors else 2
        rw_internal += storage[name].nbytes * uses
        rw_sram += min(hit, storage[name].nbytes) * uses
        rows.append((user_of(name), name, base + off, size, f"0x{hit:08x}" if sram_bytes else "\\"))
    for i, name in enumerate(graph.outputs):
        buf = out_bufs[i] if i < len(out_bufs) else None
        rows.append(("OutputOperator", name, buf.dev_addr if buf is not None else 0, storage[name].nbytes, "\\"))
    for k, (user, name, start, size, hit) in enumerate(rows, 1):
        st = storage[name]
        lines.append(f"{k:>3} {user[:14]:<14} {name[:16]:<16} {st.dtype.value.upper()[:8]:<8} "
                     f"{_shape(st.shape):<18} {_shape(st.dims):<20}| 0x{start:08x} 0x{start + size:08x} "
                     f"0x{size:08x} | {hit}")
    m = ctx.mem_size()
    io_bytes = sum(b.capacity for b in list(in_bufs) + list(out_bufs) if b.alive)
    lines += [RULE, "-" * 40,
              f"Total Weight Memory Size: {m.weight_size}",
              f"Total Internal Memory Size: {m.internal_size}",
              f"Predict Internal Memory RW Amount: {rw_internal}",
              f"Predict Weight Memory RW Amount: {m.weight_size}",
              f"Predict SRAM Hit RW Amount: {rw_sram}",
              "-" * 40,
              f"Input/Output Memory Size: {io_bytes}",
              f"Total DMA Allocated Size (context): {m.dma_allocated}",
              f"Total Device Memory (context + I/O): {m.dma_allocated + io_bytes}",
              f"SRAM: total {m.sram_total}, used by this model {m.sram_used}, free {m.sram_free}",
              f"Device: {ctx.device.soc}, coherence {ctx.device.coherence}, precision {compiled.precision}",
              "-" * 40]
    return "\n".join(lines)
