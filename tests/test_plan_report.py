"""The RKNN memory table: the seed's own rows and totals are reproduced exactly."""
from __future__ import annotations

import json

from helpers.data import memory_table

from npurt.plan import (MemoryRow, PlanBuffer, Problem, compute_totals, format_memory_table, greedy_by_size,
                        memory_table_dict, plot_plan, sram_hit)

SRAM_BASE, SRAM_SIZE = 0xFF3E0000, 524288


def seed_rows() -> list[MemoryRow]:
    _, parsed, _ = memory_table()
    return [MemoryRow(*p) for p in parsed]


def test_seed_totals_reproduced_from_rows():
    _, parsed, totals = memory_table()
    assert len(parsed) == 31
    t = compute_totals(seed_rows(), weight_size=totals["Total Weight Memory Size"],
                       weight_rw=totals["Predict Weight Memory RW Amount"])
    assert t.internal_size == totals["Total Internal Memory Size"] == 2157568
    assert t.internal_rw == totals["Predict Internal Memory RW Amount"] == 11068320
    assert t.sram_hit_rw == totals["Predict SRAM Hit RW Amount"] == 6688768


def test_seed_sram_hits_follow_from_addresses():
    for r in seed_rows():
        if r.sram_hit is not None:
            assert sram_hit(r.start, r.end, SRAM_BASE, SRAM_SIZE) == r.sram_hit, r.tensor


def test_seed_table_text_reproduced():
    lines, _, totals = memory_table()
    t = compute_totals(seed_rows(), totals["Total Weight Memory Size"], totals["Predict Weight Memory RW Amount"])
    text = format_memory_table(seed_rows(), t, sram=(SRAM_SIZE, SRAM_BASE))
    out = text.splitlines()
    assert out[1] == "Total allocated Internal SRAM Size: 524288, Addr: [0xff3e0000, 0xff460000)"
    body = [" ".join(l.split()) for l in out if l[:1].isdigit()]
    assert body == lines                                   # same cells, same order, '*' on the top row
    assert "ID User Tensor DataType OrigShape NativeShape | [Start End) Size | SramHit" in [" ".join(l.split()) for l in out]
    for key, value in totals.items():
        assert f"{key}: {value}" in out
    rule = [l for l in out if "+" in l][0]
    assert rule == "-" * 69 + "+" + "-" * 34 + "+" + "-" * 11
    assert len({l.index("|") for l in out if "|" in l}) == 1   # columns line up


def test_table_dict_is_json():
    t = compute_totals(seed_rows(), 1, 1)
    d = json.loads(json.dumps(memory_table_dict(seed_rows(), t, sram=(SRAM_SIZE, SRAM_BASE))))
    assert d["totals"]["sram_hit_rw"] == 6688768 and d["tensors"][0]["sram_hit"] is None
    assert d["tensors"][1]["native_shape"] == "(1,2,112,112,16)"


def test_plot_plan_writes_png(tmp_path):
    p = Problem([PlanBuffer(0, 0, 2, 10), PlanBuffer(1, 1, 3, 5)])
    path = tmp_path / "plan.png"
    plot_plan(p, greedy_by_size(p), path, fast_size=8)
    assert path.stat().st_size > 1000
