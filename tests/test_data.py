"""The test data lives in the repository (tests/data): every instance and seed file is there, small and readable."""
from __future__ import annotations

from npurt.plan import read_csv

from helpers.data import BENCH, DATA, memory_table


def test_planner_instances_present():
    challenging, real = sorted(BENCH.glob("challenging/*.csv")), sorted(BENCH.glob("real/*.csv"))
    assert len(challenging) == 11 and all(p.name.endswith(".1048576.csv") for p in challenging)
    assert [p.stem for p in real] == ["G_1", "S_1", "Y_1", "pangu_2.6B", "resnet50"]
    assert all(read_csv(p).capacity == 1048576 for p in challenging)
    assert (BENCH / "README.md").is_file()


def test_every_data_file_is_small():
    files = [p for p in DATA.rglob("*") if p.is_file()]
    assert files and all(p.stat().st_size < 5 << 20 for p in files)


def test_memory_table_rows_and_totals():
    rows, parsed, totals = memory_table()
    assert len(rows) == len(parsed) == 31 and len(totals) == 5
    assert [p[0] for p in parsed] == list(range(1, 32))
