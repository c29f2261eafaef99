"""The DSP's process domain (PD) as a budget: every context loaded on an HTP maps its weights, spill-fill, VTCM backup
and registered I/O into the one 32-bit address space of the process's PD on that HTP. Large models (LLM weights
split over several context binaries) run out of it on the phone: the load that does not fit fails with 1002
(QNN_CONTEXT_ERROR_MEM_ALLOC, "Failed to find available PD"), at contextCreateFromBinary — or at contextFinalize
for a DEFER_GRAPH_INIT context, where the facts place that failure.

The budget per SoC is `HtpProfile.pd_budget` (its sources: `npurt.soc.htp`). `$NPURT_QNN_PD_BUDGET` (bytes, or
with a K / M / G suffix, 1024-based) replaces it for every SoC, read at each load: tests and users rehearsing a
small device use it to see the Nth context fail with small models. What is mapped comes from the QNN memory report
(`memory_report.pd_mapped`); VTCM is not counted (its own region of the map).
"""
from __future__ import annotations

import os
from dataclasses import replace
from typing import TYPE_CHECKING

from npurt.errors import ErrorCode, NpuError
from npurt.qnn import constants as C
from npurt.qnn.boundary import QnnError
from npurt.soc.htp import HtpProfile

if TYPE_CHECKING:
    from npurt.qnn.context import QnnContext
    from npurt.qnn.memory_report import QnnMemoryReport

BUDGET_ENV = "NPURT_QNN_PD_BUDGET"
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def budget(profile: HtpProfile) -> int:
    """The bytes a PD of `profile`'s HTP can map: `$NPURT_QNN_PD_BUDGET` when set, else the SoC's figure; NpuError
    INVALID_ARGUMENT when the variable is no size."""
    text = os.environ.get(BUDGET_ENV, "").strip().upper().removesuffix("IB").removesuffix("B")
    if not text:
        return profile.pd_budget
    unit = text[-1] if text[-1] in _UNITS else ""
    try:
        value = int(text[:len(text) - len(unit)]) * _UNITS[unit]
    except ValueError:
        value = 0
    if value <= 0:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"${BUDGET_ENV}={os.environ[BUDGET_ENV]!r} is no size (a positive "
                                                   f"number of bytes, or with K / M / G)")
    return value


def check_fits(ctx: "QnnContext") -> None:
    """After `ctx` (a top-level context) was built: QnnError 1002 naming the budget, what the other contexts map and
    what `ctx` needs when they exceed its HTP's PD budget (the caller then releases `ctx`)."""
    from npurt.qnn.memory_report import memory_report, pd_mapped     # the report reads `budget` from here
    core = ctx.backend.core
    try:
        report = memory_report(core=core)
        limit = budget(core.profile)
    except NpuError as exc:
        raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_CONFIG, exc.message) from None
    total = pd_mapped(report)
    if total <= limit:
        return
    before = pd_mapped(_without(report, ctx.handle))
    raise QnnError(C.QNN_CONTEXT_ERROR_MEM_ALLOC,
                   f"Failed to find available PD: the {core.profile.name} PD maps at most {limit:,} B, "
                   f"{before:,} B are mapped, this context needs {total - before:,} B")


def _without(report: "QnnMemoryReport", handle: int) -> "QnnMemoryReport":
    """`report` as it was before context `handle` was loaded (its group kept while it has other members)."""
    groups = []
    for g in report.groups:
        if handle not in g.contexts:
            groups.append(g)
        elif len(g.contexts) > 1:
            groups.append(replace(g, contexts=tuple(h for h in g.contexts if h != handle),
                                  mappings=max(g.mappings - 1, 1)))
    return replace(report, contexts={h: c for h, c in report.contexts.items() if h != handle}, groups=tuple(groups))


__all__ = ["BUDGET_ENV", "budget", "check_fits"]
