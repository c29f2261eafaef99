"""`solve`: the strong planner. Cheap heuristics first, search only where needed, best plan kept.

1. Greedy best-fit passes over several placement orders: peak-section stack first, then size (the
   TFLite baseline, so `solve` is never worse than `greedy_by_size` unless the first pass already
   reaches the lower bound), first-fit by size, section load, area, lifetime. These two always run;
   the others only while the time limit allows.
2. If the best arena is above the target (the capacity, or the lower bound when there is none) and
   the problem is small enough, the exact canonical search of `npurt.plan.search` looks for a plan
   at the target.
3. Remaining time improves the best plan: mirror it in address space and re-place every buffer
   lowest-first in mirrored-offset order (never raises a buffer, so never worse) until that stalls,
   then hill-climb over placement orders: a buffer that ends at the arena top moves earlier in the
   order, and the move is kept when the arena does not grow.
Every returned plan passes `check.violations`.
"""
from __future__ import annotations

import random
import time

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.plan import search
from npurt.plan.check import violations
from npurt.plan.greedy import place_in_order, size_order, to_solution
from npurt.plan.problem import Arrays, Problem, Solution, peak_live

SEARCH_MAX_BUFFERS = 2000     # above this the per-node O(n) cost of the exact search is too high


def _section_load(a: Arrays) -> np.ndarray:
    """Per buffer: the peak live bytes over its own lifetime (how contended its time span is)."""
    times = np.unique(np.concatenate([a.start, a.end]))
    lo, hi = np.searchsorted(times, a.start), np.searchsorted(times, a.end)
    diff = np.zeros(len(times) + 1, np.int64)
    np.add.at(diff, lo, a.size)
    np.add.at(diff, hi, -a.size)
    live = np.cumsum(diff)[:max(1, len(times) - 1)]
    # range max via a sparse table (O(T log T) build, O(1) per query)
    table = [live]
    while 2 * len(table[-1]) > len(live) and len(table[-1]) > 1 and (1 << len(table)) <= len(live):
        prev, step = table[-1], 1 << (len(table) - 1)
        table.append(np.maximum(prev[:-step], prev[step:]))
    span = np.maximum(hi - lo, 1)
    k = np.minimum(np.floor(np.log2(span)).astype(np.int64), len(table) - 1)
    out = np.empty(len(lo), np.int64)
    for level in np.unique(k):
        m = k == level
        t = table[level]
        left = np.minimum(lo[m], len(t) - 1)
        right = np.clip(hi[m] - (1 << level), 0, len(t) - 1)
        out[m] = np.maximum(t[left], t[right])
    return out


def _orders(a: Arrays) -> list[tuple[str, np.ndarray, bool]]:
    """Placement orders, most useful first. "peak" puts the buffers live at the peak section first
    (longest lifetime lowest): at the lower bound they must form a gapless stack there."""
    idx = np.arange(len(a.size))
    life = a.end - a.start
    load = _section_load(a)
    peak = load >= load.max()
    return [
        ("peak", np.lexsort((idx, -a.size, np.where(peak, -life, 0), ~peak)), False),
        ("size", size_order(a), False),
        ("size-first-fit", size_order(a), True),
        ("load", np.lexsort((idx, -a.size, -load)), False),
        ("area", np.lexsort((idx, -a.size, -(a.size * life))), False),
        ("lifetime", np.lexsort((idx, -a.size, -life)), False),
    ]


def _arena(a: Arrays, offsets: np.ndarray) -> int:
    return int((offsets + a.size).max()) if len(offsets) else 0


def _compact_flipped(a: Arrays, offsets: np.ndarray) -> np.ndarray:
    """Mirror the plan in address space, then re-place every buffer lowest-first in the order of
    its mirrored offset. Re-placing in offset order with first fit never raises any buffer, so the
    arena never grows; alternating mirror images lets gaps at either end close."""
    mirrored = _arena(a, offsets) - (offsets + a.size)
    order = np.lexsort((np.arange(len(a.size)), -a.size, mirrored))
    return place_in_order(a, order, first_fit=True)


def solve(problem: Problem, time_limit: float = 10.0, seed: int = 0) -> Solution:
    """Best plan found within `time_limit` seconds (the first greedy pass always completes, so very
    large problems may overrun a tiny limit). `fits` tells whether the capacity (if any) is met; an
    unmet capacity returns the best arena found, never an invalid plan."""
    if not time_limit > 0:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"time_limit must be > 0, got {time_limit}")
    t0 = time.perf_counter()
    deadline = t0 + time_limit
    a = problem.arrays()
    n = len(a.size)
    lb = peak_live(a.start, a.end, a.size)
    target = lb if problem.capacity is None else max(problem.capacity, lb)
    best: np.ndarray = np.zeros(n, np.int64)
    best_arena, method = 0, "empty"
    if n:
        best, best_arena, method, best_order = _greedy_passes(a, lb, deadline)
        if best_arena > target and n <= SEARCH_MAX_BUFFERS and time.perf_counter() < deadline:
            share = 0.7 if problem.capacity is not None else 0.4
            budget = (deadline - time.perf_counter()) * share
            status, offsets = search.fit(a.start, a.end, a.size, a.align, target, time.perf_counter() + budget)
            if status == search.OK and offsets is not None and _arena(a, offsets) < best_arena:
                best, best_arena, method = offsets, _arena(a, offsets), "search"
        if best_arena > target and time.perf_counter() < deadline:
            improved, arena, how = _improve(a, best, best_order, best_arena, target, deadline, seed)
            if arena < best_arena:
                best, best_arena, method = improved, arena, f"{method}+{how}"
    solution = to_solution(problem, best, lb, t0, method)
    problems = violations(problem, solution)
    if problems:  # a planner bug: never hand out an invalid plan
        raise NpuError(ErrorCode.FAIL, f"solver produced an invalid plan ({method}): {problems[:3]}")
    return solution


def _greedy_passes(a: Arrays, lb: int, deadline: float):
    best, best_arena, method, best_order, last = None, None, "", None, 0.0
    for k, (name, order, first_fit) in enumerate(_orders(a)):
        t_pass = time.perf_counter()
        if best_arena is not None and best_arena <= lb:
            break
        if k >= 2 and t_pass + last > deadline:  # the first two passes (incl. the baseline) always run
            break
        offsets = place_in_order(a, order, first_fit)
        last = time.perf_counter() - t_pass
        arena = _arena(a, offsets)
        if best is None or arena < best_arena:
            best, best_arena, method, best_order = offsets, arena, f"greedy-{name}", order
    return best, best_arena, method, best_order


def _improve(a: Arrays, offsets: np.ndarray, order: np.ndarray, arena: int, target: int, deadline: float,
             seed: int) -> tuple[np.ndarray, int, str]:
    """Mirror-and-compact until it stalls, then (time allowing) hill-climb over orders."""
    best, best_arena, how = offsets, arena, ""
    last = 0.0
    stall = 0
    while best_arena > target and stall < 2:
        t_pass = time.perf_counter()
        if t_pass + last > deadline:
            return best, best_arena, how
        offsets = _compact_flipped(a, offsets)
        last = time.perf_counter() - t_pass
        new = _arena(a, offsets)
        stall = stall + 1 if new >= best_arena else 0
        if new < best_arena:
            best, best_arena, how = offsets, new, "compact"
    if best_arena > target and time.perf_counter() + 3 * last < deadline:
        climbed, new = _hill_climb(a, order, target, deadline, seed)
        if new < best_arena:
            best, best_arena, how = climbed, new, "climb"
    return best, best_arena, how


def _hill_climb(a: Arrays, order: np.ndarray, target: int, deadline: float, seed: int) -> tuple[np.ndarray, int]:
    """Best-fit placement of `order`, then: move a buffer that reaches the arena top to an earlier
    place in the order; keep the move when the arena does not grow (plateaus are accepted, so the
    climb can drift). Returns the best offsets seen and their arena."""
    rng = random.Random(seed)
    order = order.copy()
    offsets = place_in_order(a, order)
    cur = int((offsets + a.size).max())
    best_offsets, best_arena = offsets, cur
    last = 0.0
    while time.perf_counter() + last < deadline and best_arena > target:
        t_pass = time.perf_counter()
        tops = offsets + a.size
        culprits = np.flatnonzero(tops == cur)
        b = int(rng.choice(culprits.tolist()))
        pos = int(np.flatnonzero(order == b)[0])
        if pos == 0:
            b = int(rng.randrange(len(order)))
            pos = int(np.flatnonzero(order == b)[0])
            if pos == 0:
                continue
        new_pos = rng.randrange(0, pos)
        trial = np.insert(np.delete(order, pos), new_pos, b)
        offs = place_in_order(a, trial)
        arena_t = int((offs + a.size).max())
        last = time.perf_counter() - t_pass
        if arena_t <= cur:
            order, offsets, cur = trial, offs, arena_t
            if arena_t < best_arena:
                best_arena, best_offsets = arena_t, offs
    return best_offsets, best_arena
