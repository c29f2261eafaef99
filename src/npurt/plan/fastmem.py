"""Fast-memory (SRAM / VTCM) aware placement in one address range.

On the RK3588 the internal arena is one range whose first S bytes are SRAM; a tensor straddling the
boundary hits for its bytes below S. The goal: maximise the SRAM-hit traffic
Σ weight × (bytes below S) / size while the arena stays at the minimum `solve` found (or within a
tolerance). Every candidate plan below is valid by construction, so the best one is simply kept:
- the arena-minimal plan and its mirror image (a plan mirrored in address space is still valid);
- greedy placements whose order puts the densest buffers (weight per byte) first, lowest-first,
  for growing prefixes of the density order, kept only while the arena stays within the limit;
- a final "sink" pass: in density order, each buffer drops to the lowest gap it fits in given all
  other buffers — moving down never loses hits and never grows the arena.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.plan.check import violations
from npurt.plan.greedy import place_in_order, to_solution
from npurt.plan.problem import Arrays, BufferId, Problem, Solution, peak_live
from npurt.plan.solver import _orders, solve

SINK_MAX_BUFFERS = 5000   # the sink pass is O(n²) numpy work
CLIMB_STALL = 400         # stop climbing after this many trials without a strict gain


@dataclass(frozen=True)
class FastMemoryPlan:
    """A plan plus its fast-memory accounting: `hit_bytes[id]` are the buffer's bytes below
    `fast_size`; `hit_traffic` = Σ weight × hit/size; `total_traffic` = Σ weight; `min_arena` the
    arena of the plan it started from; `sizes` the buffer sizes."""

    solution: Solution
    fast_size: int
    hit_bytes: dict[BufferId, int]
    hit_traffic: float
    total_traffic: float
    min_arena: int
    sizes: dict[BufferId, int]

    @property
    def method(self) -> str:
        return self.solution.method

    @property
    def fast_offsets(self) -> dict[BufferId, int]:
        """Two-pool view (e.g. HTP VTCM + DDR spill): buffers lying wholly below `fast_size`."""
        return {i: o for i, o in self.solution.offsets.items() if o + self.sizes[i] <= self.fast_size}

    @property
    def slow_offsets(self) -> dict[BufferId, int]:
        """Two-pool view: every other buffer (straddlers included), offsets rebased to the lowest
        of them. Any base for the slow pool placed above the fast pool keeps the plan valid."""
        fast = self.fast_offsets
        rest = {i: o for i, o in self.solution.offsets.items() if i not in fast}
        base = min(rest.values(), default=0)
        return {i: o - base for i, o in rest.items()}


def hit_bytes_of(size: np.ndarray, offsets: np.ndarray, fast_size: int) -> np.ndarray:
    """Bytes of each buffer that lie below `fast_size`."""
    return np.clip(fast_size - offsets, 0, size)


def _value(a: Arrays, offsets: np.ndarray, fast_size: int) -> float:
    hits = hit_bytes_of(a.size, offsets, fast_size)
    frac = np.divide(hits, a.size, out=np.zeros(len(hits)), where=a.size > 0)
    return float((a.weight * frac).sum())


def _sink(a: Arrays, offsets: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Drop each buffer (in `order`) to the lowest aligned gap free of the buffers it overlaps."""
    offsets = offsets.copy()
    for i in order.tolist():
        sz = int(a.size[i])
        if sz == 0 or offsets[i] == 0:
            continue
        mask = (a.start < a.end[i]) & (a.start[i] < a.end) & (a.size > 0)
        mask[i] = False
        lows = offsets[mask]
        srt = np.argsort(lows, kind="stable")
        lows = lows[srt]
        highs = (lows + a.size[mask][srt])
        al = int(a.align[i])
        cur = 0
        for lo, hi in zip(lows.tolist(), np.maximum.accumulate(highs).tolist() if len(highs) else []):
            cand = -(-cur // al) * al
            if cand >= offsets[i]:
                break
            if cand + sz <= lo:
                offsets[i] = cand
                break
            cur = max(cur, hi)
        else:
            cand = -(-cur // al) * al
            if cand < offsets[i]:
                offsets[i] = cand
    return offsets


def _climb(a: Arrays, fast_size: int, limit: int, order: np.ndarray, deadline: float, consider) -> np.ndarray:
    """Hill climb over placement orders (lowest-first placement): move a random buffer earlier,
    keep the order when the arena stays within `limit` and the hit traffic does not drop."""
    rng = np.random.default_rng(0)
    n = len(order)
    offsets = place_in_order(a, order, first_fit=True)
    ok = int((offsets + a.size).max()) <= limit
    value = _value(a, offsets, fast_size) if ok else -1.0
    stall = 0
    ceiling = float(a.weight.sum())
    while n > 1 and time.perf_counter() < deadline and stall < CLIMB_STALL and value < ceiling:
        stall += 1
        pos = int(rng.integers(1, n))
        new_pos = int(rng.integers(0, pos))
        trial = np.insert(np.delete(order, pos), new_pos, order[pos])
        offs = place_in_order(a, trial, first_fit=True)
        if int((offs + a.size).max()) > limit:
            continue
        v = _value(a, offs, fast_size)
        if v >= value:
            if v > value:
                stall = 0
            order, value = trial, v
            consider(offs, "climb")
            consider(_sink(a, offs, order), "climb+sink")
    return order


def place_with_fast_memory(problem: Problem, fast_size: int, tolerance: float = 0.0,
                           time_limit: float = 10.0, base: Solution | None = None) -> FastMemoryPlan:
    """Offsets maximising SRAM-hit traffic with arena ≤ (1 + tolerance) × the arena of `base`
    (default: `solve(problem, time_limit)`). Weights come from `PlanBuffer.weight`."""
    if isinstance(fast_size, bool) or not isinstance(fast_size, (int, np.integer)) or fast_size < 0:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"fast_size must be a non-negative integer, got {fast_size!r}")
    if not (tolerance >= 0 and np.isfinite(tolerance)):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tolerance must be finite and >= 0, got {tolerance!r}")
    t0 = time.perf_counter()
    if base is None:
        base = solve(problem, time_limit=time_limit)
    a = problem.arrays()
    n = len(a.size)
    ids = [b.id for b in problem.buffers]
    limit = int(base.arena * (1.0 + tolerance))
    best = np.fromiter((base.offsets[i] for i in ids), np.int64, n)
    best_value = _value(a, best, fast_size)
    method = "base"

    def consider(offsets: np.ndarray, how: str) -> None:
        nonlocal best, best_value, method
        if n and int((offsets + a.size).max()) > limit:
            return
        value = _value(a, offsets, fast_size)
        if value > best_value:
            best, best_value, method = offsets, value, how

    if n and fast_size > 0 and a.weight.sum() > 0:   # nothing to gain otherwise
        consider(base.arena - (best + a.size), "mirror")
        density = np.divide(a.weight, a.size, out=np.zeros(n), where=a.size > 0)
        by_density = np.lexsort((np.arange(n), -a.size, -density))
        # traffic per byte-time: a short-lived buffer holds the fast memory for less time
        per_time = density / np.maximum(a.end - a.start, 1)
        by_time = np.lexsort((np.arange(n), -a.size, -per_time))
        fill_orders = [o for _, o, _ in _orders(a)[:2]]
        prefixes = [1 << j for j in range(max(1, n.bit_length())) if (1 << j) < n] + [n]
        for k in prefixes:
            for label, prio in (("density", by_density), ("density-per-time", by_time)):
                head = prio[:k]
                for rest in fill_orders:
                    tail = rest[~np.isin(rest, head)]
                    consider(place_in_order(a, np.concatenate([head, tail]), first_fit=True), f"{label}-prefix-{k}")
            if time.perf_counter() - t0 > time_limit:
                break
        if n <= SINK_MAX_BUFFERS:
            consider(_sink(a, best, by_density), method + "+sink")
            order = _climb(a, fast_size, limit, by_time, t0 + time_limit, consider)
    arena = int((best + a.size).max()) if n else 0
    fits = None if problem.capacity is None else arena <= problem.capacity
    sol = Solution(dict(zip(ids, best.tolist())), arena, peak_live(a.start, a.end, a.size),
                   time.perf_counter() - t0, f"fast-memory:{method}", fits)
    bad = violations(problem, sol)
    if bad:
        raise NpuError(ErrorCode.INTERNAL, f"fast-memory placement produced an invalid plan: {bad[:3]}")
    hits = hit_bytes_of(a.size, best, fast_size)
    return FastMemoryPlan(sol, int(fast_size), dict(zip(ids, hits.tolist())), best_value,
                          float(a.weight.sum()), base.arena, dict(zip(ids, a.size.tolist())))
