"""The rows of the seed's RKNN_LOG_LEVEL=3 memory table for a compiled model and its memory plan — the one row
builder behind `npurt report`, `npurt demo`, `rknn_init`'s log at RKNN_LOG_LEVEL>=3 and `Session.memory_report`
(the last two through `npurt.runtime.report`, which supplies a live context's addresses).

`npurt.plan.report` formats rows and computes the totals (it knows no models); this module says which tensor of a
`CompiledModel` is which row, as the seed's table (`tests/data/seed/memory_table.txt`, MobileNet v1) shows them:
- the model inputs first, then every internal tensor in schedule order (the order the nodes produce them), then
  the model outputs;
- `User` is the op that consumes the tensor, with its fused activation (e.g. `ConvRelu`), the first one in schedule
  order when there are several: "1 ConvRelu input0", "28 AveragePool output54" (the last conv's output, which the
  pooling reads), "30 Softmax output56" in the seed; "InputOperator" only for an input nothing consumes; an output
  row is "OutputOperator";
- `DataType` is the vendor's spelling: INT8, UINT8, FLOAT16, and FLOAT for float32 ("OutputOperator output57
  FLOAT" in the seed);
- internal tensors sit at `arena_base + plan offset` with their planned (1 KiB-rounded) size; their SramHit is the
  part of them inside the SRAM range, the first `sram_size` bytes of the arena (the runtime places the internal
  arena "SRAM first"); with no SRAM it is 0;
- model inputs and outputs live in their own buffers (SramHit printed as a backslash), at the address the caller
  gives (`io_addrs`, e.g. the bound zero-copy buffers) or at 0 when there is none; an input row has its stored size;
  an output row shows the output as it is requested: by default as the general API returns a float output, FLOAT
  in its logical shape with `n_elems * 4` bytes ("31 OutputOperator output57 FLOAT (1,1000,1,1) (1,1000,1,1)
  0xfa0" in the seed), or the type, dims and size of the memory bound to it (`output_formats`);
- "Predict Weight Memory RW Amount" is the sum of the weights' own sizes, "Total Weight Memory Size" the aligned
  weight region (the seed: 4260832 vs 4260864).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping

from npurt.plan.report import MemoryRow, MemoryTotals, compute_totals, sram_hit

if TYPE_CHECKING:
    from npurt.model.attrs import TensorStorage
    from npurt.model.compiled import CompiledModel
    from npurt.model.ir import Graph
    from npurt.plan.model_plan import MemoryPlan

_DTYPE_NAMES = {"float32": "FLOAT", "float16": "FLOAT16", "bfloat16": "BFLOAT16"}


def dtype_name(dtype: Any) -> str:
    """The vendor's spelling: INT8, UINT8, FLOAT16, FLOAT (float32)."""
    value = getattr(dtype, "value", str(dtype))
    return _DTYPE_NAMES.get(value, value.upper())


def _user(graph: "Graph", name: str, default: str) -> str:
    """The display type of the first op consuming `name` (`default` when none does)."""
    info = graph.tensors.get(name)
    if info is None or not info.consumers:
        return default
    return graph.nodes[min(info.consumers)].display_type


def requested_float(storage: "TensorStorage") -> tuple[str, tuple[int, ...], int]:
    """(type, dims, bytes) of an output as the general API returns it: float outputs as FLOAT in their logical
    shape (n_elems * 4 bytes), other outputs as stored."""
    if storage.logical_dtype.startswith("float"):
        return "FLOAT", tuple(storage.shape), 4 * math.prod(storage.shape)
    return dtype_name(storage.dtype), tuple(storage.dims), int(storage.nbytes)


def memory_rows(compiled: "CompiledModel", sram_size: int = 0, arena_base: int = 0,
                io_addrs: Mapping[str, int] | None = None, plan: "MemoryPlan | None" = None,
                output_formats: Mapping[str, tuple[str, tuple[int, ...], int]] | None = None
                ) -> tuple[list[MemoryRow], MemoryTotals]:
    """The table rows and the five totals of `compiled` run with `plan` (default: the model's own), its internal
    arena at device address `arena_base` with its first `sram_size` bytes in SRAM, its inputs/outputs at
    `io_addrs` (tensor name -> device address) and outputs requested as `output_formats` (name -> (type, dims,
    bytes); default `requested_float`)."""
    plan = compiled.plan if plan is None else plan
    storage, graph = compiled.storage, compiled.graph
    io_addrs = io_addrs or {}
    rows: list[MemoryRow] = []

    output_formats = output_formats or {}

    def add(user: str, name: str, start: int, size: int, hit: int | None, fmt: tuple | None = None) -> None:
        st = storage[name]
        dtype, dims = fmt[:2] if fmt else (dtype_name(st.dtype), tuple(st.dims))
        rows.append(MemoryRow(id=len(rows) + 1, user=user, tensor=name, dtype=dtype, orig_shape=tuple(st.shape),
                              native_shape=dims, start=start, end=start + size, size=size, sram_hit=hit))

    for name in graph.inputs:
        add(_user(graph, name, "InputOperator"), name, int(io_addrs.get(name, 0)), storage[name].nbytes, None)
    seen = set(graph.inputs) | set(graph.outputs)
    for node in graph.nodes:
        for name in node.outputs:
            if name and name in plan.offsets and name not in seen:
                seen.add(name)
                start = arena_base + plan.offsets[name]
                size = plan.sizes[name]
                add(_user(graph, name, "-"), name, start, size, sram_hit(start, start + size, arena_base, sram_size))
    for name in sorted(set(plan.offsets) - seen, key=lambda n: (plan.lifetimes[n][0], n)):   # none in practice
        start = arena_base + plan.offsets[name]
        size = plan.sizes[name]
        add(_user(graph, name, "-"), name, start, size, sram_hit(start, start + size, arena_base, sram_size))
    for name in graph.outputs:
        fmt = output_formats.get(name) or requested_float(storage[name])
        add("OutputOperator", name, int(io_addrs.get(name, 0)), int(fmt[2]), None, fmt)
    weight_rw = sum(int(v) for v in plan.weight_sizes.values())
    totals = compute_totals(rows, plan.weight_size, weight_rw, internal_base=arena_base)
    return rows, totals


def plan_lower_bound(compiled: "CompiledModel", plan: "MemoryPlan | None" = None) -> int:
    """Peak live bytes of the internal tensors (no arena can be smaller)."""
    plan = compiled.plan if plan is None else plan
    return int(getattr(plan, "lower_bound", 0) or 0)


def report_dict(compiled: "CompiledModel", sram_size: int) -> dict:
    """The JSON object of `npurt report`: totals at the top level, then one object per row (start/end relative
    to the internal arena; inputs and outputs have start 0 in their own buffers)."""
    rows, totals = memory_rows(compiled, sram_size)
    tensors = [{"id": r.id, "user": r.user, "name": r.tensor, "dtype": r.dtype, "shape": list(r.orig_shape),
                "native_shape": list(r.native_shape), "start": r.start, "end": r.end, "size": r.size,
                "sram_hit": r.sram_hit, "internal": r.sram_hit is not None} for r in rows]
    return {"soc": compiled.soc, "precision": compiled.precision,
            "total_weight_size": totals.weight_size, "total_internal_size": totals.internal_size,
            "internal_rw": totals.internal_rw, "weight_rw": totals.weight_rw, "sram_hit_rw": totals.sram_hit_rw,
            "sram_size": int(sram_size), "lower_bound": plan_lower_bound(compiled),
            "plan_method": compiled.plan.method, "tensors": tensors}
