"""Ruin-and-recreate in `solve` and the partial re-placement of `place_in_order` it rests on."""
from __future__ import annotations

import time

import numpy as np

from npurt.plan import PlanBuffer, Problem, check, greedy_by_size, lower_bound, solve
from npurt.plan.greedy import place_in_order, size_order, to_solution
from npurt.plan.solver import _orders, _ruin_recreate, _section_load


def _nested_stack(seed: int, lanes: int = 40, horizon: int = 900, tries: int = 1500) -> tuple[Problem, int]:
    """A training-step-like instance built from a plan, so its arena W is reachable: nested long
    buffers stacked at the bottom (later start, earlier end), big short temporaries on top of them
    at the peak time, filling W there; then random buffers dropped lowest-first below 97 % of W.
    W is the lower bound, reached at the peak only (as in the pangu trace)."""
    rng = np.random.default_rng(seed)
    peak = horizon // 3
    rows = np.zeros((lanes + 3 + tries, 4), np.int64)      # start, end, size, offset
    n = top = 0
    for k in range(lanes):
        size = int(rng.choice([2, 4, 8]))
        rows[n] = k * (peak // lanes), horizon - 1 - k * ((horizon - peak - 10) // lanes), size, top
        n, top = n + 1, top + size
    for d in range(3):
        size = int(rng.choice([16, 24]))
        rows[n] = peak - d, peak + 1 + d, size, top
        n, top = n + 1, top + size
    for _ in range(tries):
        s = int(rng.integers(0, horizon - 1))
        e = min(horizon, s + int(rng.choice([1, 2, 3, 5, 10, 40])))
        size = int(rng.choice([2, 4, 8, 16, 32]))
        live = rows[:n][(rows[:n, 0] < e) & (rows[:n, 1] > s)]
        low = 0
        for lo, hi in sorted(zip(live[:, 3].tolist(), (live[:, 3] + live[:, 2]).tolist())) + [(top, top)]:
            if lo - low >= size:
                break
            low = max(low, hi)
        if low + size <= 0.97 * top:
            rows[n] = s, e, size, low
            n += 1
    return Problem([PlanBuffer(j, int(s), int(e), int(z)) for j, (s, e, z, _) in enumerate(rows[:n])]), top


def test_partial_replacement_matches_a_whole_pass():
    # keeping the first buffers of an order where the whole pass put them and placing the rest
    # gives the whole pass's plan; the kept buffers do not move
    p, _ = _nested_stack(1, lanes=10, horizon=200, tries=200)
    a = p.arrays()
    order = size_order(a)
    whole = place_in_order(a, order)
    for cut in (0, len(order) // 3, len(order) - 1, len(order)):
        keep = np.zeros(len(order), bool)
        keep[order[:cut]] = True
        part = place_in_order(a, order[cut:], keep=keep, kept=whole)
        assert np.array_equal(part, whole)
    keep = np.zeros(len(order), bool)
    keep[order[::2]] = True
    moved = place_in_order(a, order[1::2][::-1], keep=keep, kept=whole)
    assert np.array_equal(moved[keep], whole[keep])
    check(p, to_solution(p, moved, 0, time.perf_counter(), "partial"))


def test_ruin_recreate_reaches_the_lower_bound_of_a_nested_stack():
    # every greedy order leaves a gap; ruin-and-recreate from the peak-first plan closes it in a
    # fraction of a second (the solver before it: 1.0072 with 2 s, its exact search needed ~4 s)
    p, width = _nested_stack(6)
    a = p.arrays()
    assert len(p) > 500 and lower_bound(p) == width
    assert all(int((place_in_order(a, order, ff) + a.size).max()) > width for _, order, ff in _orders(a))
    peak = place_in_order(a, _orders(a)[0][1])
    load = _section_load(a)
    repaired, _ = _ruin_recreate(a, peak, load >= load.max(), width, time.perf_counter() + 60, seed=0)
    assert int((repaired + a.size).max()) == width
    check(p, to_solution(p, repaired, width, time.perf_counter(), "ruin-recreate"))
    s = solve(p, time_limit=60)     # stops at the lower bound (about a second alone, by search or by
    # ruin-and-recreate, whichever the clock lets finish first); the limit only guards a loaded machine
    check(p, s)
    assert s.arena == width < greedy_by_size(p).arena
