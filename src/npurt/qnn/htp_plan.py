"""The HTP memory plan of a context binary: activations in VTCM, the overflow as spill-fill in DDR, and the sizes
the context properties report.

The compiled model's `MemoryPlan` gives every internal activation a lifetime and a size. On HTP the activations
that fit live in VTCM (the device's fast memory, `HtpProfile.vtcm_size`); the rest are spilled to a DDR
"spill-fill" buffer. The executor sees one internal arena: `[0, vtcm_used)` is VTCM, `[vtcm_used, +spill_size)`
is the spill-fill buffer (mapped right behind it), so a plan is the compiled plan with offsets moved into that
combined arena.

The VTCM a graph is planned for is its SoC's unless graphCreate's HTP config VTCM_SIZE asked for less
(`plan_graph`); that config, OPTIMIZATION and PRECISION are kept in the compiled model's meta (`HTP_META`), so the
binary, its binary info and every reload follow them.

Placement: `npurt.plan.place_with_fast_memory(problem, fast_size)` (its two-pool view: the buffers wholly below
the VTCM size, and the rest rebased into the spill arena); the combined plan is checked by `npurt.plan.check`.

Property sizes follow what the SDK's x86-64 HTP library reports (measured): weights and spill-fill sizes
rounded up to a multiple of 2 MiB (0 stays 0), buffer start alignment 4096. The VTCM backup size (no public
value exists) is npurt's choice: the VTCM bytes the context's graphs use, rounded up to 2 MiB.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from npurt.errors import ErrorCode, NpuError
from npurt.memory.mapping import page_round
from npurt.plan.fastmem import place_with_fast_memory
from npurt.plan.model_plan import INTERNAL_ALIGN, MemoryPlan

PROPERTY_GRANULE = 2 << 20      # observed: weights / spill-fill sizes are 2 MiB multiples
HTP_META = "htp"                # CompiledModel.meta key: the graph configs a built graph was finalized with
BUFFER_START_ALIGNMENT = 4096   # observed: QNN_HTP_CONTEXT_GET_PROP_BUFFER_START_ALIGNMENT


def round_granule(nbytes: int) -> int:
    """`nbytes` rounded up to a multiple of 2 MiB; 0 stays 0."""
    return -(-int(nbytes) // PROPERTY_GRANULE) * PROPERTY_GRANULE


@dataclass(frozen=True)
class HtpMemoryPlan:
    """Where one graph's activations live on an HTP with `vtcm_size` bytes of VTCM."""

    vtcm_size: int
    vtcm_used: int                  # VTCM bytes used (page multiple): the arena's first part
    spill_size: int                 # DDR spill-fill bytes: the arena's second part
    weights_size: int               # the context's weight bytes
    plan: MemoryPlan                # the compiled plan with offsets in the combined [VTCM | spill] arena
    in_vtcm: frozenset[str]
    method: str

    @property
    def spillfill_buffer_size(self) -> int:
        """QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE."""
        return round_granule(self.spill_size)

    @property
    def weights_buffer_size(self) -> int:
        """QNN_HTP_CONTEXT_GET_PROP_WEIGHTS_BUFFER_SIZE."""
        return round_granule(self.weights_size)

    @property
    def vtcm_backup_buffer_size(self) -> int:
        """QNN_HTP_CONTEXT_GET_PROP_MAX_VTCMBACKUP_BUFFER_SIZE (npurt's rule, see the module doc)."""
        return round_granule(self.vtcm_used)


def plan_htp(plan: MemoryPlan, vtcm_size: int) -> HtpMemoryPlan:
    """The HTP plan of a compiled model's `plan` on an HTP with `vtcm_size` bytes of VTCM."""
    placed = place_with_fast_memory(plan.problem(), vtcm_size)
    fast, slow, method = placed.fast_offsets, placed.slow_offsets, placed.method
    vtcm_used = page_round(max((fast[n] + plan.sizes[n] for n in fast), default=0))
    spill = max((slow[n] + plan.sizes[n] for n in slow), default=0)
    spill = -(-spill // INTERNAL_ALIGN) * INTERNAL_ALIGN
    offsets = {n: fast[n] for n in fast}
    offsets.update({n: vtcm_used + slow[n] for n in slow})
    combined = replace(plan, offsets=offsets, internal_size=vtcm_used + spill, method=f"htp:{method}",
                       extra={**plan.extra, "vtcm_used": vtcm_used, "spill_size": spill})
    bad = combined.check()
    if bad:
        raise NpuError(ErrorCode.INTERNAL, f"HTP plan ({method}) is invalid: {bad[:3]}")
    return HtpMemoryPlan(vtcm_size, vtcm_used, spill, plan.weight_size, combined, frozenset(fast), method)


def graph_settings(compiled: Any) -> dict:
    """The HTP graph configs a graph was finalized with (graphCreate's VTCM_SIZE / OPTIMIZATION / PRECISION, kept in
    its binary): `vtcm_size` bytes (0 = the SoC's whole VTCM), `optimization` level, `precision`."""
    return dict(getattr(compiled, "meta", {}).get(HTP_META) or {})


def graph_vtcm(compiled: Any, soc_vtcm: int) -> int:
    """The VTCM a graph is planned for: the SoC's `soc_vtcm` unless its VTCM_SIZE config asked for less."""
    asked = int(graph_settings(compiled).get("vtcm_size") or 0)
    return min(asked, soc_vtcm) if asked else soc_vtcm


def plan_graph(compiled: Any, soc_vtcm: int) -> HtpMemoryPlan:
    """The HTP plan of a compiled graph on an HTP with `soc_vtcm` bytes of VTCM, as its graph configs ask."""
    return plan_htp(compiled.plan, graph_vtcm(compiled, soc_vtcm))


@dataclass(frozen=True)
class ContextMemory:
    """A context's memory (`QnnContext.memory()`, `npurt.qnn.context_memory`; one line of the QNN memory report,
    `npurt.qnn.memory_report`). With weight sharing, weights identical across the context's graphs are stored once
    in its binary and once in device memory; with REGISTER_MULTI_CONTEXTS its spill-fill is the group's buffer
    (counted once, in the group's line, not here).

    `weight_bytes`: the weights the binary stores and the weights region holds (once each); `weight_bytes_unshared`:
    what the graphs' weights take without sharing (each graph its own); `weight_memory`: device memory holding the
    context's weights now (page-rounded buffers; 0 before it is finalized). `spill_fill`: spill-fill memory the
    context holds itself (its own buffer, or a registered one); `spill_fill_need`: what its largest graph spills
    (its graphs run one at a time); `spill_fill_unshared`: what its graphs' spill-fill takes with a buffer each.
    `vtcm`: VTCM bytes its largest graph uses (the HTP's one VTCM region, shared by every context); `vtcm_backup`:
    a registered VTCM backup buffer; `registered_io`: graph I/O memory registered in it (each (memory, offset)
    once); `group`: the handle of its spill-fill group's first context, or None."""

    graphs: int
    shared: bool
    weight_bytes: int
    weight_bytes_unshared: int
    weight_memory: int
    spill_fill: int = 0
    spill_fill_need: int = 0
    spill_fill_unshared: int = 0
    vtcm: int = 0
    vtcm_backup: int = 0
    registered_io: int = 0
    group: int | None = None

    @property
    def saved(self) -> int:
        """Weight bytes sharing saves (in the binary, and in device memory once loaded)."""
        return self.weight_bytes_unshared - self.weight_bytes
