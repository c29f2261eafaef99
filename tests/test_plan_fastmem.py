"""Fast-memory aware placement: valid plans, arena kept, hit traffic, the seed's MobileNet v1."""
from __future__ import annotations

import numpy as np
import pytest
from helpers.data import memory_table

from npurt.errors import NpuError
from npurt.plan import PlanBuffer, Problem, Solution, check, place_with_fast_memory, solve


def test_heavy_buffer_goes_low():
    # two same-size buffers live together; the heavy one must take the fast memory
    p = Problem([PlanBuffer("light", 0, 4, 100, weight=1.0), PlanBuffer("heavy", 0, 4, 100, weight=50.0)])
    fm = place_with_fast_memory(p, fast_size=100, time_limit=1)
    check(p, fm.solution)
    assert fm.solution.arena == 200
    assert fm.hit_bytes == {"heavy": 100, "light": 0}
    assert fm.hit_traffic == 50.0 and fm.total_traffic == 51.0


def test_straddling_buffer_counts_partial_hit():
    p = Problem([PlanBuffer(0, 0, 2, 60, weight=60.0), PlanBuffer(1, 0, 2, 60, weight=30.0)])
    fm = place_with_fast_memory(p, fast_size=90, time_limit=1)
    check(p, fm.solution)
    assert fm.hit_bytes[0] == 60 and fm.hit_bytes[1] == 30
    assert fm.hit_traffic == pytest.approx(60 + 30 * 30 / 60)


def test_random_instances_keep_min_arena():
    rng = np.random.default_rng(0)
    for trial in range(5):
        n = 40
        s = rng.integers(0, 30, n)
        bufs = [PlanBuffer(i, int(s[i]), int(s[i] + rng.integers(1, 6)), int(rng.integers(1, 100)),
                           weight=float(rng.integers(0, 1000))) for i in range(n)]
        p = Problem(bufs)
        base = solve(p, time_limit=0.5)
        fm = place_with_fast_memory(p, fast_size=150, time_limit=0.5, base=base)
        check(p, fm.solution)
        assert fm.solution.arena <= base.arena
        sizes = {b.id: b.size for b in bufs}
        offs = fm.solution.offsets
        assert all(fm.hit_bytes[i] == max(0, min(sizes[i], 150 - offs[i])) for i in sizes)
        base_hits = sum(b.weight * max(0, min(b.size, 150 - base.offsets[b.id])) / b.size for b in bufs)
        assert fm.hit_traffic >= base_hits - 1e-9


def test_tolerance_allows_larger_arena():
    p = Problem([PlanBuffer(i, i, i + 2, 10 + i, weight=float(10 + i)) for i in range(12)])
    base = solve(p, time_limit=0.5)
    fm = place_with_fast_memory(p, fast_size=20, tolerance=0.5, time_limit=0.5, base=base)
    check(p, fm.solution)
    assert fm.solution.arena <= int(base.arena * 1.5)


def test_bad_arguments():
    p = Problem([PlanBuffer(0, 0, 1, 1)])
    for kw in ({"fast_size": -1}, {"fast_size": 1.5}, {"fast_size": 8, "tolerance": -0.1}):
        with pytest.raises(NpuError):
            place_with_fast_memory(p, **kw)


def mobilenet_from_seed() -> tuple[Problem, Solution]:
    """The seed's internal tensors (rows with a SramHit), chain lifetimes [i, i+2): produced by op i,
    consumed by op i+1. The seed's own plan is valid under these lifetimes."""
    _, parsed, _ = memory_table()
    internal = [r for r in parsed if r[9] is not None]
    base = min(r[6] for r in internal)
    bufs = [PlanBuffer(r[2], r[0], r[0] + 2, r[8], weight=2.0 * r[8]) for r in internal]
    p = Problem(bufs)
    seed_plan = Solution({r[2]: r[6] - base for r in internal}, max(r[7] for r in internal) - base, 0, 0.0, "rknn", None)
    return p, seed_plan


def test_beats_the_seed_mobilenet_v1():
    p, seed_plan = mobilenet_from_seed()
    check(p, seed_plan)
    assert seed_plan.arena == 2157568
    seed_hit_rw = 2 * sum(max(0, min(b.size, 524288 - seed_plan.offsets[b.id])) for b in p.buffers)
    assert seed_hit_rw == 6688768
    fm = place_with_fast_memory(p, fast_size=524288, time_limit=3)
    check(p, fm.solution)
    assert fm.solution.arena <= 2157568
    assert 2 * sum(fm.hit_bytes.values()) == pytest.approx(fm.hit_traffic)
    assert fm.hit_traffic > 6688768


def test_two_pool_view_is_valid():
    p = Problem([PlanBuffer(i, i, i + 3, 40 + 10 * (i % 3), weight=float(i % 4)) for i in range(10)])
    fm = place_with_fast_memory(p, fast_size=100, time_limit=0.5)
    fast, slow = fm.fast_offsets, fm.slow_offsets
    assert set(fast) | set(slow) == {b.id for b in p.buffers} and not set(fast) & set(slow)
    assert all(fast[i] + fm.sizes[i] <= 100 for i in fast) and min(slow.values(), default=0) == 0
    used = max((fast[i] + fm.sizes[i] for i in fast), default=0)
    combined = {**fast, **{i: used + o for i, o in slow.items()}}
    check(p, Solution(combined, max(o + fm.sizes[i] for i, o in combined.items()), 0, 0.0, "two-pool", None))
    assert fm.method.startswith("fast-memory:")
