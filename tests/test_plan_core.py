"""Planner data types, CSV I/O, lower bound, checker and the greedy baseline."""
from __future__ import annotations

import pytest

from npurt.errors import NpuError
from npurt.plan import (PlanBuffer, Problem, Solution, check, format_offsets_csv, greedy_by_size, lower_bound,
                        parse_csv, violations)


def chain() -> Problem:
    # a: [0,2) 4B, b: [1,3) 4B, c: [2,4) 4B -> peak 8, optimum 8
    return Problem([PlanBuffer("a", 0, 2, 4), PlanBuffer("b", 1, 3, 4), PlanBuffer("c", 2, 4, 4)])


def test_lower_bound_half_open():
    assert lower_bound(chain()) == 8
    assert lower_bound([PlanBuffer(0, 0, 1, 5), PlanBuffer(1, 1, 2, 7)]) == 7
    assert lower_bound([]) == 0


def test_greedy_reaches_known_optimum():
    p = chain()
    s = greedy_by_size(p)
    check(p, s)
    assert s.arena == 8 and s.lower_bound == 8 and s.fits is None


def test_greedy_best_fit_uses_gap():
    # big [0,10) at bottom, two mid buffers leave a gap that the small one fills
    p = Problem([PlanBuffer(0, 0, 10, 100), PlanBuffer(1, 0, 4, 50), PlanBuffer(2, 6, 10, 50),
                 PlanBuffer(3, 4, 6, 30)])
    s = greedy_by_size(p)
    check(p, s)
    assert s.arena == 150


def test_greedy_alignment():
    p = Problem([PlanBuffer(0, 0, 2, 3, alignment=1), PlanBuffer(1, 0, 2, 8, alignment=64)])
    s = greedy_by_size(p)
    check(p, s)
    assert s.offsets[1] % 64 == 0


def test_checker_reports_overlap_by_name():
    p = chain()
    bad = Solution({"a": 0, "b": 2, "c": 4}, 8, 8, 0.0, "hand", None)
    found = violations(p, bad)
    assert any("'a'" in v and "'b'" in v for v in found)
    with pytest.raises(NpuError):
        check(p, bad)


@pytest.mark.parametrize("offsets,arena,fits,needle", [
    ({"a": 0, "b": 4}, 8, None, "no offset"),
    ({"a": -4, "b": 4, "c": 0}, 8, None, "negative"),
    ({"a": 0, "b": 4, "c": 0}, 7, None, "arena"),
])
def test_checker_rules(offsets, arena, fits, needle):
    assert any(needle in v for v in violations(chain(), Solution(offsets, arena, 8, 0.0, "hand", fits)))


def test_checker_alignment_and_capacity():
    p = Problem([PlanBuffer(0, 0, 1, 8, alignment=4)], capacity=8)
    assert any("alignment" in v for v in violations(p, Solution({0: 2}, 10, 8, 0, "h", False)))
    assert any("capacity" in v for v in violations(p, Solution({0: 4}, 12, 8, 0, "h", True)))
    check(p, Solution({0: 0}, 8, 8, 0, "h", True))


def test_csv_roundtrip_and_errors():
    p = parse_csv("id,lower,upper,size\n0,0,2,16\n1,1,3,8\n", capacity=32)
    assert len(p) == 2 and p.capacity == 32 and p.buffers[1] == PlanBuffer(1, 1, 3, 8)
    s = greedy_by_size(p)
    assert format_offsets_csv(p, s).splitlines()[0] == "id,offset"
    p2 = parse_csv("id,lower,upper,size,alignment\n0,0,2,16,64\n")
    assert p2.buffers[0].alignment == 64
    for text, needle in [("", "empty"), ("id,lower,size\n", "missing upper"), ("id,lower,upper,size\n0,0,x,4\n", "line 2"),
                         ("id,lower,upper,size\n0,0,2,-4\n", "negative size"),
                         ("id,lower,upper,size\n0,3,3,4\n", "empty lifetime"),
                         ("id,lower,upper,size\n0,0,2\n", "line 2"),
                         ("id,lower,upper,size\n0,0,2,4\n0,1,2,4\n", "duplicate")]:
        with pytest.raises(NpuError, match=needle):
            parse_csv(text)



@pytest.mark.parametrize("header, missing", [("a,b", "id, lower, upper, size"), ("id,lower,upper", "size"),
                                             ("id,start,size", "upper"), ("id,begin,end,size", "lower")])
def test_a_bad_header_names_the_documented_columns(header, missing):
    """The message names docs/cli.md's columns (id,lower,upper,size[,alignment]) and what the file lacks."""
    with pytest.raises(NpuError) as e:
        parse_csv(header + "\n0,0,1,8\n")
    assert e.value.message == (f"the CSV header must be id,lower,upper,size[,alignment]: missing {missing} "
                               f"(got {header})")


def test_a_bad_number_names_its_line_once():
    with pytest.raises(NpuError) as e:
        parse_csv("id,lower,upper,size\n0,x,1,8\n")
    assert e.value.message == "line 2: column 'lower' is not an integer: 'x'"

def test_bad_buffers_rejected():
    for kw in [dict(start=2, end=1, size=1), dict(start=0, end=1, size=-1), dict(start=0, end=1, size=1, alignment=0),
               dict(start=-1, end=1, size=1), dict(start=0, end=1, size=1.5)]:
        with pytest.raises(NpuError):
            PlanBuffer(0, **kw)
    with pytest.raises(NpuError):
        Problem([PlanBuffer(0, 0, 1, 1)], capacity=-1)


def test_zero_size_buffers_do_not_hide_conflicts():
    # regression: a zero-size buffer earlier in the order made a real conflict invisible
    p = Problem([PlanBuffer(0, 0, 3, 1), PlanBuffer(1, 0, 4, 0), PlanBuffer(2, 2, 5, 1)])
    s = greedy_by_size(p)
    check(p, s)
    assert s.arena == 2
