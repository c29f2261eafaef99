"""Rows of the seed's RKNN_LOG_LEVEL=3 memory table, built from a compiled model's memory plan.

`plan/report.py` formats rows and computes the totals; this module only says which tensor is which row:
- one row per activation in schedule order: the model inputs first, then every tensor a node produces;
- `User` is the producing op (with its fused activation, e.g. `ConvRelu`), or the first consumer for an input;
- internal tensors sit at `arena_base + plan offset`; their SramHit is the part of them inside the SRAM range,
  which is the first `sram_size` bytes of the arena (the runtime places the internal arena "SRAM first");
- model inputs and outputs live in their own buffers (SramHit printed as a backslash): at the address the
  caller gives (`io_addrs`, e.g. the bound zero-copy buffers) or at 0 when there is none.
"""
from __future__ import annotations

from typing import Any, Mapping

from npurt.plan.report import MemoryRow, MemoryTotals, compute_totals, sram_hit

_DTYPE_NAMES = {"float32": "FLOAT", "float16": "FLOAT16", "bfloat16": "BFLOAT16"}


def dtype_name(dtype: Any) -> str:
    """The vendor's spelling: INT8, UINT8, FLOAT16, FLOAT (float32)."""
    value = getattr(dtype, "value", str(dtype))
    return _DTYPE_NAMES.get(value, value.upper())


def _user(compiled: Any, name: str) -> str:
    graph = compiled.graph
    info = graph.tensors[name]
    index = info.producer if info.producer is not None else (min(info.consumers) if info.consumers else None)
    if index is None:
        return "InputOperator"
    node = graph.nodes[index]
    return node.op_type + (node.activation or "")


def memory_rows(compiled: Any, sram_size: int = 0, arena_base: int = 0,
                io_addrs: Mapping[str, int] | None = None) -> tuple[list[MemoryRow], MemoryTotals]:
    """The table rows and the five totals of `compiled` with `sram_size` bytes of SRAM at the arena's start."""
    plan, storage, graph = compiled.plan, compiled.storage, compiled.graph
    io_addrs = io_addrs or {}
    names = list(graph.inputs)
    for node in graph.nodes:
        names += [o for o in node.outputs if o and o in storage and o not in names]
    rows = []
    for i, name in enumerate(names, 1):
        st = storage[name]
        if name in plan.offsets:
            start = arena_base + plan.offsets[name]
            size = plan.sizes[name]
            hit = sram_hit(start, start + size, arena_base, sram_size)
        else:
            start, size, hit = io_addrs.get(name, 0), st.size, None
        rows.append(MemoryRow(id=i, user=_user(compiled, name), tensor=name, dtype=dtype_name(st.dtype),
                              orig_shape=tuple(st.shape), native_shape=tuple(st.dims), start=start,
                              end=start + size, size=size, sram_hit=hit))
    weight_rw = sum(int(v) for v in plan.weight_sizes.values())
    totals = compute_totals(rows, plan.weight_size, weight_rw, internal_base=arena_base)
    return rows, totals


def report_dict(compiled: Any, sram_size: int) -> dict:
    """The JSON object of `npurt report`: totals at the top level, then one object per row (start/end relative
    to the internal arena; inputs and outputs have start 0 in their own buffers)."""
    rows, totals = memory_rows(compiled, sram_size)
    tensors = [{"id": r.id, "user": r.user, "name": r.tensor, "dtype": r.dtype, "shape": list(r.orig_shape),
                "native_shape": list(r.native_shape), "start": r.start, "end": r.end, "size": r.size,
                "sram_hit": r.sram_hit, "internal": r.sram_hit is not None} for r in rows]
    return {"soc": compiled.soc, "precision": compiled.precision,
            "total_weight_size": totals.weight_size, "total_internal_size": totals.internal_size,
            "internal_rw": totals.internal_rw, "weight_rw": totals.weight_rw, "sram_hit_rw": totals.sram_hit_rw,
            "sram_size": int(sram_size), "lower_bound": int(plan_lower_bound(compiled)),
            "plan_method": compiled.plan.method, "tensors": tensors}


def plan_lower_bound(compiled: Any) -> int:
    """Peak live bytes of the internal tensors (no arena can be smaller)."""
    return int(getattr(compiled.plan, "lower_bound", 0) or 0)
