"""`solve` and the exact search: known optima, random instances, capacities, benchmark instances."""
from __future__ import annotations

import itertools
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from helpers.data import BENCH

from npurt.errors import NpuError
from npurt.plan import PlanBuffer, Problem, check, greedy_by_size, lower_bound, read_csv, solve
from npurt.plan import search
from npurt.plan.greedy import place_in_order
from npurt.plan.problem import Arrays


def test_known_optimum_where_greedy_fails():
    # greedy-by-size puts the 4-byte buffers side by side; optimum 8 stacks them in time
    p = Problem([PlanBuffer("a", 0, 4, 4), PlanBuffer("b", 4, 8, 4), PlanBuffer("c", 2, 6, 2),
                 PlanBuffer("d", 0, 2, 2), PlanBuffer("e", 6, 8, 2), PlanBuffer("f", 2, 6, 2)])
    s = solve(p, time_limit=2)
    check(p, s)
    assert s.arena == lower_bound(p) == 8


def test_empty_and_single():
    s = solve(Problem([]), time_limit=1)
    assert s.arena == 0 and s.offsets == {}
    p = Problem([PlanBuffer(7, 0, 1, 100, alignment=64)], capacity=100)
    s = solve(p, time_limit=1)
    assert s.offsets == {7: 0} and s.fits is True


def test_impossible_capacity_is_an_honest_no():
    p = Problem([PlanBuffer(0, 0, 2, 8), PlanBuffer(1, 1, 3, 8)], capacity=12)
    s = solve(p, time_limit=1)
    check(p, s)
    assert s.fits is False and s.arena == 16


def test_bad_time_limit():
    with pytest.raises(NpuError):
        solve(Problem([PlanBuffer(0, 0, 1, 1)]), time_limit=0)


buffers = st.lists(st.tuples(st.integers(0, 30), st.integers(1, 12), st.integers(0, 64), st.sampled_from([1, 1, 4, 16])),
                   min_size=0, max_size=40)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(buffers, st.booleans())
def test_random_instances(rows, with_capacity):
    bufs = [PlanBuffer(i, s, s + d, z, a) for i, (s, d, z, a) in enumerate(rows)]
    lb = lower_bound(bufs)
    p = Problem(bufs, capacity=lb if with_capacity else None)
    g = greedy_by_size(p)
    s = solve(p, time_limit=0.3)
    check(p, g)
    check(p, s)
    assert g.arena >= s.arena >= lb == s.lower_bound
    if with_capacity:
        assert s.fits == (s.arena <= lb)


def test_search_is_exact_on_tiny_instances():
    rng = np.random.default_rng(3)
    for _ in range(60):
        n = int(rng.integers(1, 6))
        s = rng.integers(0, 5, n)
        e = s + rng.integers(1, 4, n)
        z = rng.integers(1, 6, n)
        one = np.ones(n, np.int64)
        a = Arrays(s, e, z, one, np.zeros(n))
        # re-placing any plan lowest-first in offset order never raises a buffer, so the best
        # first-fit over all orders is the optimum
        opt = min(int((place_in_order(a, np.array(p), True) + z).max()) for p in itertools.permutations(range(n)))
        status, offsets = search.fit(s, e, z, one, opt, time.perf_counter() + 5)
        assert status == search.OK and int((offsets + z).max()) <= opt
        assert search.fit(s, e, z, one, opt - 1, time.perf_counter() + 5)[0] == search.NOT_FOUND


def test_search_finds_perfect_packing_with_cut():
    # two independent halves (a zero-crossing time) each a perfect 10-byte packing
    s = np.array([0, 0, 2, 5, 5, 7]); e = np.array([5, 2, 5, 10, 7, 10]); z = np.array([6, 4, 4, 3, 7, 7])
    status, off = search.fit(s, e, z, np.ones(6, np.int64), 10, time.perf_counter() + 5)
    assert status == search.OK
    p = Problem([PlanBuffer(i, int(a), int(b), int(c)) for i, (a, b, c) in enumerate(zip(s, e, z))], capacity=10)
    from npurt.plan.greedy import to_solution
    check(p, to_solution(p, off, 10, time.perf_counter(), "search"))


def test_real_trace_reaches_lower_bound():
    p = read_csv(BENCH / "real" / "G_1.csv")
    s = solve(p, time_limit=5)
    check(p, s)
    assert s.ratio <= 1.005


def test_challenging_instance_best_effort():
    p = read_csv(BENCH / "challenging" / "A.1048576.csv")
    assert p.capacity == 1048576
    g = greedy_by_size(p)
    s = solve(p, time_limit=2)
    check(p, s)
    assert s.arena <= g.arena and s.fits == (s.arena <= p.capacity)


def test_peel_and_split_decomposition():
    # "w" spans everything (peeled to the bottom); the rest splits at t=10 into two parts
    bufs = [PlanBuffer("w", 0, 20, 64, alignment=64)]
    bufs += [PlanBuffer(f"l{i}", i, i + 3, 16 * (1 + i % 3), alignment=16) for i in range(0, 8)]
    bufs += [PlanBuffer(f"r{i}", 10 + i, 13 + i, 32, alignment=32) for i in range(0, 7)]
    p = Problem(bufs)
    s = solve(p, time_limit=2)
    check(p, s)
    assert s.offsets["w"] == 0 and s.method.startswith("peel:split:")
    assert s.arena == lower_bound(p)


@settings(max_examples=30, deadline=None)
@given(buffers)
def test_decomposed_never_worse_than_greedy(rows):
    # add a buffer spanning everything so that peeling always happens
    bufs = [PlanBuffer(i, s, s + d, z) for i, (s, d, z, _) in enumerate(rows)]
    bufs.append(PlanBuffer("all", 0, 50, 7))
    p = Problem(bufs)
    g, s = greedy_by_size(p), solve(p, time_limit=0.3)
    check(p, s)
    assert lower_bound(p) <= s.arena <= g.arena


def test_search_ignores_zero_size_buffers():
    s = np.array([0, 0, 1]); e = np.array([2, 3, 3]); z = np.array([4, 0, 4])
    status, off = search.fit(s, e, z, np.ones(3, np.int64), 8, time.perf_counter() + 2)
    assert status == search.OK and off[1] == 0 and {int(off[0]), int(off[2])} == {0, 4}


def test_search_is_exact_with_alignment_and_many_children():
    # denser tiny instances (several children per node, so the batched section-inference filter,
    # the unallocated-floor update and dynamic decomposition all act) with mixed alignments
    rng = np.random.default_rng(11)
    for _ in range(25):
        n = int(rng.integers(4, 7))
        s = rng.integers(0, 4, n)
        e = s + rng.integers(1, 5, n)
        z = rng.integers(1, 7, n)
        al = rng.choice(np.array([1, 1, 2, 4]), n)
        a = Arrays(s, e, z, al, np.zeros(n))
        opt = min(int((place_in_order(a, np.array(p), True) + z).max()) for p in itertools.permutations(range(n)))
        status, offsets = search.fit(s, e, z, al, opt, time.perf_counter() + 5)
        assert status == search.OK and int((offsets + z).max()) <= opt
        p = Problem([PlanBuffer(i, int(s[i]), int(e[i]), int(z[i]), int(al[i])) for i in range(n)], capacity=opt)
        from npurt.plan.greedy import to_solution
        check(p, to_solution(p, offsets, opt, time.perf_counter(), "search"))
        assert search.fit(s, e, z, al, opt - 1, time.perf_counter() + 5)[0] == search.NOT_FOUND


def test_search_fits_a_challenging_instance():
    # the incremental search with its preorder portfolio fits J (a 1 MiB perfect-ish packing) fast
    p = read_csv(BENCH / "challenging" / "J.1048576.csv")
    a = p.arrays()
    status, offsets = search.fit(a.start, a.end, a.size, a.align, p.capacity, time.perf_counter() + 30)
    assert status == search.OK
    from npurt.plan.greedy import to_solution
    s = to_solution(p, offsets, 0, time.perf_counter(), "search")
    check(p, s)
    assert s.fits


def test_search_portfolio_times_out_honestly():
    # a hard instance with a deadline already near: TIMEOUT and no plan, never a wrong answer
    p = read_csv(BENCH / "challenging" / "B.1048576.csv")
    a = p.arrays()
    status, offsets = search.fit(a.start, a.end, a.size, a.align, p.capacity, time.perf_counter() + 0.05)
    assert status == search.TIMEOUT and offsets is None
