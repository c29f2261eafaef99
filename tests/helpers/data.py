"""The repository's test data (`tests/data/`): the public planner instances and the vendor facts, read as data."""
from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
BENCH = DATA / "planner-benchmarks"
SEED = DATA / "seed"

TOTAL_KEYS = ("Total Weight Memory Size", "Total Internal Memory Size", "Predict Internal Memory RW Amount",
              "Predict Weight Memory RW Amount", "Predict SRAM Hit RW Amount")


def sram_dump(name: str) -> str:
    """One of the two SRAM bitmap dumps (`empty`, `512k`), as the debugfs node prints it."""
    return (SEED / f"sram_dump_{name}.txt").read_text()


def memory_table() -> tuple[list[str], list[tuple], dict[str, int]]:
    """The seed's RKNN_LOG_LEVEL=3 memory table: its rows as printed (whitespace-normalised), the parsed rows
    (id, user, tensor, dtype, orig, native, start, end, size, hit|None) and the totals."""
    rows, parsed, totals = [], [], {}
    for line in (SEED / "memory_table.txt").read_text().splitlines():
        key, sep, value = line.partition(": ")
        if sep and key in TOTAL_KEYS:
            totals[key] = int(value)
            continue
        text = " ".join(line.split())
        rows.append(text)
        left, addr, hit = text.split("|")
        i, user, name, dtype, orig, native = left.split()
        a = addr.replace("*", " ").split()
        parsed.append((int(i), user, name, dtype, orig, native, int(a[0], 16), int(a[1], 16), int(a[2], 16),
                       None if hit.strip() == "\\" else int(hit, 16)))
    return rows, parsed, totals


def support_table(name: str) -> tuple[tuple[str, ...], list[tuple[int, str, tuple[bool, ...]]]]:
    """Table 3-1 (`api`) or 3-2 (`query`): the platform column headers and (number, name, supported per column)."""
    header, *lines = (SEED / f"rknn_{name}_support.tsv").read_text(encoding="utf-8").splitlines()
    columns = tuple(header.split("\t")[2:])
    rows = []
    for line in lines:
        number, fn, *cells = line.split("\t")
        assert len(cells) == len(columns) and set(cells) <= {"√", "×"}, line
        rows.append((int(number), fn, tuple(cell == "√" for cell in cells)))
    return columns, rows


def nc1hwc2_examples() -> list[dict]:
    """The worked NC1HWC2 examples (soc, dtype, shape, native_shape, c2, c1, valid_lanes_in_last_block)."""
    return json.loads((SEED / "nc1hwc2_examples.json").read_text())["examples"]
