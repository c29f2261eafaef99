"""The DSP's process domain (PD) as a budget: every context loaded on an HTP maps its weights, spill-fill, VTCM backup
and registered I/O into the one 32-bit address space of the process's PD on that HTP. Large models (LLM weights
split over several context binaries) run out of it on the phone: the load that does not fit fails with 1002
(QNN_CONTEXT_ERROR_MEM_ALLOC, "Failed to find available PD"), at contextCreateFromBinary — or at contextFinalize
for a DEFER_GRAPH_INIT context, where the facts place that failure.

The budget per SoC is `HtpProfile.pd_budget` (its sources: `npurt.soc.htp`). `$NPURT_QNN_PD_BUDGET` (bytes, or
with a K / M / G suffix, 1024-based) replaces it for every SoC, read at each load: tests and users rehearsing a
small device use it to see the Nth context fail with small models. What is mapped comes from the QNN memory report
(`memory_report.pd_mapped`), which also makes the load's check (`memory_report.check_pd_fits`); VTCM is not counted
(its own region of the map).
"""
from __future__ import annotations

import os

from npurt.errors import ErrorCode, NpuError
from npurt.soc.htp import HtpProfile

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


__all__ = ["BUDGET_ENV", "budget"]
