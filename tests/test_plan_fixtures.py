"""Shared helpers for the planner tests: locate ../shared and parse the SRAM seed's memory table."""
from __future__ import annotations

import re

from conftest import SHARED, require  # noqa: F401  (re-exported for the planner tests)

BENCH = SHARED / "planner-benchmarks"
SEED = SHARED / "seeds" / "rknn-npu-sram.txt"


def seed_table() -> tuple[list[str], list[tuple], dict[str, int]]:
    """The seed's table rows, each as one whitespace-normalised line (the PDF wraps every row over
    two lines), the parsed rows (id, user, tensor, dtype, orig, native, start, end, size, hit|None),
    and the totals block."""
    lines = require(SEED).read_text().splitlines()
    rows, parsed = [], []
    for first, second in zip(lines, lines[1:]):
        if re.match(r"^\d+ \S+ \S+ \S+ \(", first) and second.startswith("0x"):
            text = " ".join(first.split() + second.split())
            rows.append(text)
            left, addr, hit = text.split("|")
            i, user, name, dtype, orig, native = left.split()
            a = addr.replace("*", " ").split()
            parsed.append((int(i), user, name, dtype, orig, native, int(a[0], 16), int(a[1], 16), int(a[2], 16),
                           None if hit.strip() == "\\" else int(hit, 16)))
    totals = {}
    for line in lines:
        m = re.match(r"^(Total Weight Memory Size|Total Internal Memory Size|Predict Internal Memory RW Amount|"
                     r"Predict Weight Memory RW Amount|Predict SRAM Hit RW Amount): (\d+)$", line)
        if m:
            totals[m.group(1)] = int(m.group(2))
    return rows, parsed, totals


def test_fixtures_present():
    require(BENCH / "challenging")
    require(BENCH / "real")
    rows, parsed, totals = seed_table()
    assert len(rows) == len(parsed) == 31 and len(totals) == 5
