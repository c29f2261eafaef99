"""`solve`: the strong planner. Cheap heuristics first, search only where needed, best plan kept.

0. Decomposition: buffers live over a group's whole time span are stacked at the bottom (they
   conflict with everything, so this loses nothing), and the rest is split at time points no buffer
   crosses; parts are planned independently. (The public real traces do not split: long-lived
   buffers cross every time point.) Each part then goes through:
1. Greedy best-fit passes over several placement orders: peak-section stack first, then size (the
   TFLite baseline, so `solve` is never worse than `greedy_by_size` unless the first pass already
   reaches the lower bound), first-fit by size, section load, area, lifetime. These two always run;
   the others only while the time limit allows.
2. If the best arena is above the target (the capacity, or the lower bound when there is none) and
   the problem is small enough, the exact canonical search of `npurt.plan.search` looks for a plan
   at the target (six preorders searched in interleaved slices; with a capacity it gets 90 % of
   the remaining time, as only it reaches the perfect packings of the challenging set).
3. Remaining time improves the best plan: mirror it in address space and re-place every buffer
   lowest-first in mirrored-offset order (never raises a buffer, so never worse) until that stalls.
   Then, on small problems, hill-climb over placement orders: a buffer that ends at the arena top
   moves earlier in the order, kept when the arena does not grow. On large ones, where a whole
   pass is costly (18.7k buffers: ~1.5 s), ruin-and-recreate instead: rip up the buffers around
   one at the top and re-place only those into the fixed rest, starting from the peak-first plan
   (gapless where the lower bound is decided), then from the best plan.
Every returned plan passes `check.violations`.
"""
from __future__ import annotations

import math
import random
import time

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.plan import search
from npurt.plan.check import violations
from npurt.plan.greedy import place_in_order, size_order, to_solution
from npurt.plan.problem import Arrays, Problem, Solution, peak_live

SEARCH_MAX_BUFFERS = 2000     # above this the per-node O(n) cost of the exact search is too high
CLIMB_MAX_BUFFERS = 500       # up to this the hill-climb's whole placement passes are cheap; above, ruin-and-recreate


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
    best, method = _plan(a, np.arange(n), target, deadline, seed, problem.capacity is not None)
    if method.startswith(("peel:", "split:")) and _arena(a, best) > target:
        # part-wise plans are not always below the global baseline: keep the guarantee
        baseline = place_in_order(a, size_order(a))
        if _arena(a, baseline) < _arena(a, best):
            best, method = baseline, "greedy-size"
    solution = to_solution(problem, best, lb, t0, method)
    problems = violations(problem, solution)
    if problems:  # a planner bug: never hand out an invalid plan
        raise NpuError(ErrorCode.INTERNAL, f"solver produced an invalid plan ({method}): {problems[:3]}")
    return solution


def _subset(a: Arrays, idx: np.ndarray) -> Arrays:
    return Arrays(a.start[idx], a.end[idx], a.size[idx], a.align[idx], a.weight[idx])


def _components(a: Arrays) -> list[np.ndarray]:
    """Index groups separated by time points that no buffer crosses (independent sub-problems)."""
    order = np.argsort(a.start, kind="stable")
    reach = np.maximum.accumulate(a.end[order])
    cuts = np.flatnonzero(a.start[order][1:] >= reach[:-1]) + 1
    return np.split(order, cuts)


def _plan(a: Arrays, idx: np.ndarray, target: int, deadline: float, seed: int,
          has_capacity: bool) -> tuple[np.ndarray, str]:
    """Offsets (aligned with `idx`) for the buffers `idx`, aiming at arena <= target.

    Buffers live over the whole time span of the group conflict with every other one, so stacking
    them at the bottom loses nothing (mirror argument); the rest is split at time points no buffer
    crosses and each part is planned on its own, with a time share proportional to its size."""
    sub = _subset(a, idx)
    n = len(idx)
    if n == 0:
        return np.zeros(0, np.int64), "empty"
    full = (sub.start <= sub.start.min()) & (sub.end >= sub.end.max())
    rest = np.flatnonzero(~full)
    aligns = sub.align[rest]
    if full.any() and len(rest) and not (aligns & (aligns - 1)).any():
        offsets = np.zeros(n, np.int64)
        base = 0
        for k in np.flatnonzero(full).tolist():
            al = int(sub.align[k])
            offsets[k] = -(-base // al) * al
            base = int(offsets[k] + sub.size[k])
        top_align = int(aligns.max())
        base = -(-base // top_align) * top_align
        inner, how = _plan(a, idx[rest], max(0, target - base), deadline, seed, has_capacity)
        offsets[rest] = inner + base
        return offsets, how if how.startswith("peel:") else "peel:" + how
    parts = _components(sub) if n > 1 else [np.arange(n)]
    if len(parts) > 1:
        offsets = np.zeros(n, np.int64)
        left = n
        methods = set()
        for part in sorted(parts, key=len, reverse=True):
            share = (deadline - time.perf_counter()) * len(part) / left
            inner, how = _plan(a, idx[part], target, time.perf_counter() + max(share, 0.0), seed, has_capacity)
            offsets[part] = inner
            methods.add(how.split("+")[0])
            left -= len(part)
        return offsets, "split:" + "/".join(sorted(methods))
    return _plan_leaf(sub, target, deadline, seed, has_capacity)


def _plan_leaf(a: Arrays, target: int, deadline: float, seed: int, has_capacity: bool) -> tuple[np.ndarray, str]:
    """Greedy passes, then the exact search (small problems), then improvement of the best plan."""
    n = len(a.size)
    lb = peak_live(a.start, a.end, a.size)
    target = max(target, lb)
    best, best_arena, method, best_order, peak = _greedy_passes(a, target, deadline)
    if best_arena > target and n <= SEARCH_MAX_BUFFERS and time.perf_counter() < deadline:
        budget = (deadline - time.perf_counter()) * (0.9 if has_capacity else 0.4)
        status, offsets = search.fit(a.start, a.end, a.size, a.align, target, time.perf_counter() + budget)
        if status == search.OK and offsets is not None and _arena(a, offsets) < best_arena:
            best, best_arena, method = offsets, _arena(a, offsets), "search"
    if best_arena > target and time.perf_counter() < deadline:
        improved, arena, how = _improve(a, best, best_order, peak, best_arena, target, deadline, seed)
        if arena < best_arena:
            best, best_arena, method = improved, arena, how if how.startswith("greedy-peak") else f"{method}+{how}"
    return best, method


def _greedy_passes(a: Arrays, lb: int, deadline: float) -> tuple[np.ndarray, int, str, np.ndarray, np.ndarray]:
    """The best plan of the greedy orders (stopping at the lower bound or the deadline), its arena,
    method and order, and the plan of the first ("peak") order, from which `_ruin_recreate` starts."""
    best, best_arena, method, best_order, peak, last = None, None, "", None, None, 0.0
    for k, (name, order, first_fit) in enumerate(_orders(a)):
        t_pass = time.perf_counter()
        if best_arena is not None and best_arena <= lb:
            break
        if k >= 2 and t_pass + last > deadline:  # the first two passes (incl. the baseline) always run
            break
        offsets = place_in_order(a, order, first_fit)
        last = time.perf_counter() - t_pass
        arena = _arena(a, offsets)
        peak = offsets if peak is None else peak
        if best is None or arena < best_arena:
            best, best_arena, method, best_order = offsets, arena, f"greedy-{name}", order
    return best, best_arena, method, best_order, peak


def _improve(a: Arrays, offsets: np.ndarray, order: np.ndarray, peak: np.ndarray, arena: int, target: int,
             deadline: float, seed: int) -> tuple[np.ndarray, int, str]:
    """Mirror-and-compact the best plan until it stalls, then use the remaining time.
    Small problems (a whole placement pass is cheap): hill-climb over placement orders.
    Large problems: ruin-and-recreate, first (90 % of the time) from the peak-first plan: it is
    gapless at the most loaded section, where the lower bound is decided, so what is left to repair
    lies where other sections have slack, whereas the plans of the other orders can be fragmented
    right there; then from the best plan so far."""
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
    if len(a.size) <= CLIMB_MAX_BUFFERS:
        if best_arena > target and time.perf_counter() + 3 * last < deadline:
            climbed, new = _hill_climb(a, order, target, deadline, seed)
            if new < best_arena:
                best, best_arena, how = climbed, new, "climb"
        return best, best_arena, how
    load = _section_load(a)
    at_peak = load >= load.max()
    if best_arena > target and time.perf_counter() < deadline:
        until = time.perf_counter() + 0.9 * (deadline - time.perf_counter())
        repaired, arena = _ruin_recreate(a, peak, at_peak, target, until, seed)
        if arena < best_arena:
            best, best_arena, how = repaired, arena, "greedy-peak+ruin-recreate"
    if best_arena > target and time.perf_counter() < deadline:
        repaired, arena = _ruin_recreate(a, best, at_peak, target, deadline, seed + 1)
        if arena < best_arena:
            label = how if how.endswith("ruin-recreate") else (how + "+" if how else "") + "ruin-recreate"
            best, best_arena, how = repaired, arena, label
    return best, best_arena, how


def _ruin_recreate(a: Arrays, offsets: np.ndarray, at_peak: np.ndarray, target: int, deadline: float,
                   seed: int) -> tuple[np.ndarray, int]:
    """Large-neighbourhood search. Pick a buffer b that reaches the arena top and a time t where it
    rests on another buffer; rip up every buffer live in a random time window around t whose top is
    above a random depth below b, and re-place them best-fit into the fixed rest, b first (it gets
    the pick of the freed space), then the others by size (cost O(n log n) numpy plus O(ripped)
    placements, so many moves fit where one full pass would).
    A move is kept when the arena does not grow (plateau moves let the search drift) and the
    buffers live at a most loaded section do not reach higher than before: a gap opened there is
    never closed again (it keeps the arena at the lower bound + the gap; the size-order plans of
    pangu_2.6B sit in such a trap, 40 MiB above the bound).
    Window width and depth are log-uniform, so small local repairs and large re-plans both occur
    (the depth is at least 1/64 of the arena: thinner top layers rarely change anything); moves
    that would rip up more than half of the plan are skipped (that is the size-order pass again).
    `at_peak`: the buffers live at a most loaded section. Returns the plan and its arena."""
    rng = random.Random(seed)
    tops = offsets + a.size
    arena = int(tops.max())
    peak_top = int(tops[at_peak].max())
    span = max(1, int(a.end.max() - a.start.min()))
    last = 0.0
    while arena > target and time.perf_counter() + last < deadline:
        t_move = time.perf_counter()
        b = rng.choice(np.flatnonzero(tops == arena).tolist())
        s, e, low = int(a.start[b]), int(a.end[b]), int(offsets[b])
        props = np.flatnonzero((a.start < e) & (a.end > s) & (tops == low) & (a.size > 0))
        if len(props):                       # where b rests on a buffer below it
            p = rng.choice(props.tolist())
            s, e = max(s, int(a.start[p])), min(e, int(a.end[p]))
        t = rng.randrange(s, e)
        width = int(math.exp(rng.uniform(0.0, math.log(span))))
        depth = int(math.exp(rng.uniform(math.log(max(1, int(a.size[b]), arena >> 6)), math.log(arena))))
        ripped = (a.start < t + width) & (a.end > t - width) & (tops > low - depth)
        ripped[b] = True
        idx = np.flatnonzero(ripped)
        if 2 * len(idx) > len(ripped):      # most of the plan by size: the greedy baseline again
            continue
        order = idx[np.lexsort((idx, a.start[idx], -a.size[idx]))]
        order = np.concatenate(([b], order[order != b]))
        new = place_in_order(a, order, keep=~ripped, kept=offsets)
        new_tops = new + a.size
        new_arena, new_peak_top = int(new_tops.max()), int(new_tops[at_peak].max())
        if new_arena <= arena and new_peak_top <= peak_top:
            offsets, tops, arena, peak_top = new, new_tops, new_arena, new_peak_top
        last = time.perf_counter() - t_move
    return offsets, arena


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
