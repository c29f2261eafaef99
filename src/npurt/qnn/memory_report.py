"""The QNN memory report (what RKNN_LOG_LEVEL=3 is for RKNN): per live context and per spill-fill group — weights
(stored once with sharing, and what they would take unshared), spill-fill, VTCM, VTCM backup, registered I/O — and
the totals before and after sharing, every buffer counted once; and per HTP the process domain's address-space
budget, what is mapped in it and the headroom (`npurt.qnn.pd`); a load that would exceed the budget is refused
by `check_pd_fits` from the same figures.

From Python: `npurt.qnn.memory_report()` (`.lines()` for the text); `npurt report MODEL.bin --qnn` prints it for a
context binary loaded through the mirror; with the QNN log at verbose (`logCreate` level 4 or
`$NPURT_QNN_LOG_LEVEL=verbose`) contextCreateFromBinary logs the new context's lines.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from npurt.memory.mapping import page_round
from npurt.errors import NpuError
from npurt.qnn import constants as C
from npurt.qnn.backend import HANDLES, Backend, lookup
from npurt.qnn.boundary import QnnError
from npurt.qnn.context import QnnContext
from npurt.qnn.htp_plan import ContextMemory
from npurt.qnn.pd import budget as pd_budget


@dataclass(frozen=True)
class GroupMemory:
    """A REGISTER_MULTI_CONTEXTS group: its one spill-fill buffer and what its members would take with one each."""

    first: int                      # handle of its first context
    contexts: tuple[int, ...]
    max_spill: int                  # maxSpillFillBuffer
    spill_fill: int                 # the buffer in device memory (page-rounded)
    spill_fill_unshared: int        # the members' needs, a buffer each
    vtcm_backup: int = 0            # the VTCM backup buffer the members share (SHARE_RESOURCES), page-rounded
    mappings: int = 1               # times its buffers are mapped in the PD (SEQUENTIAL_WITHOUT_VA: once a member)


@dataclass(frozen=True)
class PdUsage:
    """One HTP's process domain: its address-space budget and the bytes mapped in it (`npurt.qnn.pd`)."""

    soc: str
    budget: int
    mapped: int

    @property
    def headroom(self) -> int:
        return self.budget - self.mapped


@dataclass(frozen=True)
class QnnMemoryReport:
    """The live contexts (handle -> `ContextMemory`), the groups, and the VTCM regions in use (each HTP's once)."""

    contexts: dict[int, ContextMemory]
    groups: tuple[GroupMemory, ...] = ()
    vtcm_regions: int = 0
    socs: tuple[str, ...] = field(default=())
    pds: tuple[PdUsage, ...] = ()

    def totals(self) -> dict[str, int]:
        """Bytes after sharing, and `*_unshared` the same memory without it (each graph and context its own)."""
        ctx = self.contexts.values()
        grouped = {h for g in self.groups for h in g.contexts}
        return {
            "weights": sum(c.weight_bytes for c in ctx),
            "weights_unshared": sum(c.weight_bytes_unshared for c in ctx),
            "weight_memory": sum(c.weight_memory for c in ctx),
            "spill_fill": sum(c.spill_fill for c in ctx) + sum(g.spill_fill for g in self.groups),
            "spill_fill_unshared": sum(c.spill_fill_unshared for h, c in self.contexts.items() if h not in grouped)
            + sum(g.spill_fill_unshared for g in self.groups),
            "vtcm": self.vtcm_regions,
            "vtcm_backup": sum(c.vtcm_backup for c in ctx) + sum(g.vtcm_backup for g in self.groups),
            "registered_io": sum(c.registered_io for c in ctx),
        }

    def lines(self) -> list[str]:
        """The report as text: a line per context, per group, and the totals."""
        out = [f"QNN memory: {len(self.contexts)} context(s), {len(self.groups)} spill-fill group(s)"
               + (f" on {', '.join(self.socs)}" if self.socs else "")]
        out += [context_line(h, c) for h, c in sorted(self.contexts.items())]
        for g in self.groups:
            out.append(f"group {g.first:#x}: contexts {', '.join(f'{h:#x}' for h in g.contexts)} share one spill-fill "
                       f"buffer of {g.spill_fill:,} B (maxSpillFillBuffer {g.max_spill:,}; a buffer each: "
                       f"{g.spill_fill_unshared:,} B)"
                       + (f", one VTCM backup buffer of {g.vtcm_backup:,} B" if g.vtcm_backup else "")
                       + (f"; mapped once per member ({g.mappings})" if g.mappings > 1 else ""))
        t = self.totals()
        out.append(f"total: weights {t['weights']:,} B stored (unshared {t['weights_unshared']:,} B), "
                   f"{t['weight_memory']:,} B in memory | spill-fill {t['spill_fill']:,} B (unshared "
                   f"{t['spill_fill_unshared']:,} B) | VTCM {t['vtcm']:,} B | VTCM backup {t['vtcm_backup']:,} B | "
                   f"registered I/O {t['registered_io']:,} B")
        out += [f"PD of {p.soc}: {p.mapped:,} B mapped of a {p.budget:,} B address-space budget, headroom "
                f"{p.headroom:,} B" for p in self.pds]
        return out


def context_line(handle: int, c: ContextMemory) -> str:
    """One context of the report."""
    spill = f"spill-fill {c.spill_fill:,} B (need {c.spill_fill_need:,} B" + \
        (f", group {c.group:#x})" if c.group else ")")
    return (f"context {handle:#x}: {c.graphs} graph(s), weights {c.weight_bytes:,} B stored"
            f"{' (shared; unshared ' + format(c.weight_bytes_unshared, ',') + ' B)' if c.shared else ''}, "
            f"{c.weight_memory:,} B in memory | {spill} | VTCM {c.vtcm:,} B | VTCM backup {c.vtcm_backup:,} B | "
            f"registered I/O {c.registered_io:,} B")


def _top_contexts(backend: Backend | None) -> list[QnnContext]:
    """Live contexts that are not a graph of another (of `backend`, or of every backend)."""
    return [obj for _, obj in HANDLES.live() if isinstance(obj, QnnContext) and not obj.freed and obj.parent is None
            and (backend is None or obj.backend is backend)]


def pd_mapped(report: QnnMemoryReport) -> int:
    """Bytes the report's contexts map in the DSP's address space: weights, spill-fill, VTCM backup, registered I/O
    (a group's buffers once, or once per member when they are not shared by address)."""
    t = report.totals()
    extra = sum((g.mappings - 1) * (g.spill_fill + g.vtcm_backup) for g in report.groups)
    return t["weight_memory"] + t["spill_fill"] + t["vtcm_backup"] + t["registered_io"] + extra


def memory_report(backend: Any = None, core: Any = None) -> QnnMemoryReport:
    """The QNN memory report of every live context (or those of one backend: a `Backend` or its handle; or of one
    `HtpCore`), with the PD budget of each HTP they are on."""
    if backend is not None and not isinstance(backend, Backend):
        backend = lookup(backend, Backend)
    contexts = [c for c in _top_contexts(backend) if core is None or c.backend.core is core]
    groups: dict[int, Any] = {}
    cores: dict[int, Any] = {}
    for ctx in contexts:
        if ctx.group is not None:
            groups[id(ctx.group)] = ctx.group
        cores[id(ctx.backend.core)] = ctx.backend.core
    rows = {ctx.handle: ctx.memory() for ctx in contexts}
    group_rows = tuple(GroupMemory(g.first, tuple(m.handle for m in g.members), g.max_spill,
                                   page_round(g.buffer.size) if g.buffer is not None and g.buffer.alive else 0,
                                   sum(rows[m.handle].spill_fill_unshared for m in g.members if m.handle in rows),
                                   page_round(g.backup.size) if g.backup is not None and g.backup.alive else 0,
                                   1 if g.share_va else max(len(g.members), 1))
                       for g in groups.values())
    vtcm = sum(page_round(c.vtcm.size) for c in cores.values() if c.vtcm is not None)
    report = QnnMemoryReport(rows, group_rows, vtcm, tuple(sorted({c.backend.profile.name for c in contexts})))
    if core is not None:
        cores = {id(core): core}
    pds = []
    for c in cores.values():
        part = report if len(cores) == 1 else memory_report(backend, c)
        pds.append(PdUsage(c.profile.name, pd_budget(c.profile), pd_mapped(part)))
    return replace(report, pds=tuple(pds))


def check_pd_fits(ctx: QnnContext) -> None:
    """After `ctx` (a top-level context) was built: QnnError 1002 naming the budget, what the other contexts map and
    what `ctx` needs when they exceed its HTP's PD budget (the caller then releases `ctx`)."""
    core = ctx.backend.core
    try:
        report = memory_report(core=core)
        limit = pd_budget(core.profile)
    except NpuError as exc:
        raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_CONFIG, exc.message) from None
    total = pd_mapped(report)
    if total <= limit:
        return
    before = pd_mapped(_without(report, ctx.handle))
    raise QnnError(C.QNN_CONTEXT_ERROR_MEM_ALLOC,
                   f"Failed to find available PD: the {core.profile.name} PD maps at most {limit:,} B, "
                   f"{before:,} B are mapped, this context needs {total - before:,} B")


def _without(report: QnnMemoryReport, handle: int) -> QnnMemoryReport:
    """`report` as it was before context `handle` was loaded (its group kept while it has other members)."""
    groups = []
    for g in report.groups:
        if handle not in g.contexts:
            groups.append(g)
        elif len(g.contexts) > 1:
            groups.append(replace(g, contexts=tuple(h for h in g.contexts if h != handle),
                                  mappings=max(g.mappings - 1, 1)))
    return replace(report, contexts={h: c for h, c in report.contexts.items() if h != handle}, groups=tuple(groups))
