"""Plan validation: one sweep over time, neighbours in address order.

`violations` lists what is wrong with a plan; `check` raises `NpuError(INVALID_ARGUMENT)` carrying that
list. Every planner in this package runs its result through `violations` before returning it.
Cost: O(n log n + n·a) where a is the number of simultaneously live buffers (list insertion).
"""
from __future__ import annotations

import bisect

from npurt.errors import ErrorCode, NpuError
from npurt.plan.problem import Problem, Solution


def violations(problem: Problem, solution: Solution, limit: int = 20) -> list[str]:
    """Every rule the plan breaks (up to `limit` messages), naming the buffers involved:
    missing/negative/misaligned offsets, two live-at-once buffers sharing bytes, an arena smaller than
    max(offset+size), and a claimed fit that exceeds the capacity."""
    out: list[str] = []
    offsets = solution.offsets
    bufs = problem.buffers
    ok_idx = []
    for i, b in enumerate(bufs):
        off = offsets.get(b.id)
        if off is None:
            out.append(f"buffer {b.id!r} has no offset")
        elif isinstance(off, bool) or not isinstance(off, int) and not hasattr(off, "__index__"):
            out.append(f"buffer {b.id!r}: offset {off!r} is not an integer")
        elif off < 0:
            out.append(f"buffer {b.id!r}: negative offset {off}")
        elif off % b.alignment:
            out.append(f"buffer {b.id!r}: offset {off} is not a multiple of its alignment {b.alignment}")
        else:
            ok_idx.append(i)
        if len(out) >= limit:
            return out
    known = {b.id for b in bufs}
    extra = [k for k in offsets if k not in known]
    if extra:
        out.append(f"offsets given for unknown buffers {extra[:5]!r}")
    top = max((int(offsets[bufs[i].id]) + bufs[i].size for i in ok_idx), default=0)
    if solution.arena < top:
        out.append(f"arena {solution.arena} is below the highest buffer end {top}")
    if solution.fits and problem.capacity is not None and solution.arena > problem.capacity:
        out.append(f"claims to fit but arena {solution.arena} exceeds capacity {problem.capacity}")
    out.extend(_overlaps(problem, solution, ok_idx, limit - len(out)))
    return out[:limit]


def _overlaps(problem: Problem, solution: Solution, idx: list[int], limit: int) -> list[str]:
    bufs = problem.buffers
    events = []
    for i in idx:
        b = bufs[i]
        if b.size > 0:
            events.append((b.end, 0, i))
            events.append((b.start, 1, i))
    events.sort()
    active: list[tuple[int, int, int]] = []   # (offset, offset+size, index), sorted by offset
    out: list[str] = []
    for _, kind, i in events:
        b = bufs[i]
        lo = int(solution.offsets[b.id])
        key = (lo, lo + b.size, i)
        if kind == 0:
            pos = bisect.bisect_left(active, key)
            if pos < len(active) and active[pos] == key:
                del active[pos]
            continue
        pos = bisect.bisect_left(active, key)
        for j in (pos - 1, pos):
            if 0 <= j < len(active):
                olo, ohi, k = active[j]
                if olo < key[1] and lo < ohi:
                    o = bufs[k]
                    out.append(f"buffers {o.id!r} [{o.start},{o.end}) @ [{olo},{ohi}) and {b.id!r} "
                               f"[{b.start},{b.end}) @ [{lo},{key[1]}) are live together and share bytes")
                    if len(out) >= limit:
                        return out
        active.insert(pos, key)
    return out


def check(problem: Problem, solution: Solution) -> None:
    """Raise `NpuError(INVALID_ARGUMENT)` listing the violations if the plan is invalid."""
    found = violations(problem, solution)
    if found:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "invalid plan: " + "; ".join(found))
