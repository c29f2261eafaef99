"""The seed's RKNN_LOG_LEVEL=3 memory table of a live `Context`: the rows of `npurt.model.report` at the
context's real device addresses — its internal arena, the SRAM it took, its bound inputs and outputs — rendered by
`npurt.plan.report`. `rknn_init` logs it at RKNN_LOG_LEVEL>=3 (`npurt.rknn.api.memory_table`) and
`npurt.Session.memory_report` prints it; `npurt demo` shows it for its context.

Addresses: internal tensors at the arena's address plus their planned offset. When the arena took SRAM (it is
placed "SRAM first"; an arena spilling to DDR is one contiguous range) the table counts from the SRAM address on,
as the seed's log does ("Total allocated Internal SRAM Size: 524288, Addr: [0xff3e0000, ...)" and the first
internal tensor at 0xff3e0000). Inputs and outputs are at the memory bound to them (zero-copy `bind`, e.g.
rknn_set_io_mem or a Session's buffers), 0 while unbound; a bound output's row has the type, dims and size of its
buffer's format, an unbound one the general API's float output.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from npurt.model.report import dtype_name, memory_rows
from npurt.plan.report import MemoryRow, MemoryTotals, format_memory_table


@dataclass(frozen=True)
class ContextLayout:
    """Where a context's tensors are: arena address, its SRAM bytes and their address, I/O addresses by name."""

    arena_base: int
    sram_size: int
    sram_addr: int | None
    io_addrs: dict[str, int]
    output_formats: dict[str, tuple[str, tuple[int, ...], int]]     # bound outputs: (type, dims, bytes)

    @property
    def sram_header(self) -> tuple[int, int] | None:
        """(size, address) for the table's "Total allocated Internal SRAM Size" line, None without SRAM."""
        return (self.sram_size, self.sram_addr) if self.sram_size and self.sram_addr is not None else None


def context_layout(ctx: Any) -> ContextLayout:
    """The device addresses of `ctx` (a live runtime Context) as the table shows them."""
    ref = ctx.internal_memory
    base, sram_size, sram_addr = 0, 0, None
    if ref is not None and ref.alive:
        buf = ref.buffer
        base = int(buf.dev_addr) + int(ref.offset)
        part = max(0, int(getattr(buf, "sram_size", 0) or 0) - int(ref.offset))   # page-rounded, as allocated
        if part:
            sram_size = part
            sram_addr = int(ctx.device.sram_addr(buf)) + int(ref.offset)
            base = sram_addr
    compiled = ctx.compiled
    io: dict[str, int] = {}
    formats: dict[str, tuple[str, tuple[int, ...], int]] = {}
    ins, outs = ctx.bindings()
    for names, binds in ((compiled.graph.inputs, ins), (compiled.graph.outputs, outs)):
        for name, b in zip(names, binds):
            if b is not None and b.ref.alive:
                io[name] = int(b.ref.buffer.dev_addr) + int(b.ref.offset)
                if not b.is_input:
                    formats[name] = (dtype_name(b.user.type), tuple(b.user.dims),
                                     int(b.user.size_with_stride or b.user.size))
    return ContextLayout(base, sram_size, sram_addr, io, formats)


def context_rows(ctx: Any) -> tuple[list[MemoryRow], MemoryTotals, tuple[int, int] | None]:
    """Rows, totals and the SRAM header (size, address) or None of `ctx`'s current model and plan."""
    lay = context_layout(ctx)
    rows, totals = memory_rows(ctx.compiled, lay.sram_size, lay.arena_base, lay.io_addrs, plan=ctx.plan,
                               output_formats=lay.output_formats)
    return rows, totals, lay.sram_header


def context_table(ctx: Any) -> str:
    """The table and totals of `ctx`, as text."""
    rows, totals, sram = context_rows(ctx)
    return format_memory_table(rows, totals, sram)
