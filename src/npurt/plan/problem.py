"""Planning problems as data: buffers with half-open lifetimes, solutions as offsets.

A `Problem` is what every planner in `npurt.plan` takes and a `Solution` is what it returns; both are
plain frozen data so that plans can be printed, compared, serialised and checked. The CSV format is
the public benchmark one (`id,lower,upper,size[,alignment]`, header required, lifetime `[lower, upper)`).
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Hashable, Iterable, Mapping

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.files import regular_input, write_exactly

BufferId = Hashable


def _bad(message: str) -> NpuError:
    return NpuError(ErrorCode.INVALID_ARGUMENT, message)


MAX_VALUE = 1 << 62      # times, sizes and offsets are int64 in the planner's numpy code; sums must not overflow


@dataclass(frozen=True)
class PlanBuffer:
    """One tensor to place: live in `[start, end)`, needs `size` bytes at an offset that is a multiple
    of `alignment`. `weight` is its traffic/importance, used only by fast-memory placement."""

    id: BufferId
    start: int
    end: int
    size: int
    alignment: int = 1
    weight: float = 0.0

    def __post_init__(self) -> None:
        for name in ("start", "end", "size", "alignment"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise _bad(f"buffer {self.id!r}: {name} must be an integer, got {value!r}")
        if self.start < 0:
            raise _bad(f"buffer {self.id!r}: negative start {self.start}")
        if self.start >= self.end:
            raise _bad(f"buffer {self.id!r}: empty lifetime [{self.start}, {self.end})")
        if self.size < 0:
            raise _bad(f"buffer {self.id!r}: negative size {self.size}")
        if self.alignment < 1:
            raise _bad(f"buffer {self.id!r}: alignment must be >= 1, got {self.alignment}")
        for name in ("end", "size", "alignment"):
            if getattr(self, name) > MAX_VALUE:
                raise _bad(f"buffer {self.id!r}: {name} {getattr(self, name)} is larger than {MAX_VALUE} (2**62)")
        if not np.isfinite(self.weight) or self.weight < 0:
            raise _bad(f"buffer {self.id!r}: weight must be finite and >= 0, got {self.weight}")

    def overlaps(self, other: "PlanBuffer") -> bool:
        """True when the two lifetimes intersect (half-open)."""
        return self.start < other.end and other.start < self.end


@dataclass(frozen=True)
class Problem:
    """A set of buffers with unique ids and an optional arena capacity in bytes."""

    buffers: tuple[PlanBuffer, ...]
    capacity: int | None = None

    def __init__(self, buffers: Iterable[PlanBuffer], capacity: int | None = None) -> None:
        bufs = tuple(buffers)
        seen: set = set()
        for b in bufs:
            if not isinstance(b, PlanBuffer):
                raise _bad(f"not a PlanBuffer: {b!r}")
            if b.id in seen:
                raise _bad(f"duplicate buffer id {b.id!r}")
            seen.add(b.id)
        total = sum(b.size + b.alignment for b in bufs)
        if total > MAX_VALUE:
            raise _bad(f"the buffers need {total} bytes in all, more than a plan can address ({MAX_VALUE}, 2**62)")
        if capacity is not None and (isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer))
                                     or capacity < 0):
            raise _bad(f"capacity must be a non-negative integer, got {capacity!r}")
        object.__setattr__(self, "buffers", bufs)
        object.__setattr__(self, "capacity", None if capacity is None else int(capacity))

    def __len__(self) -> int:
        return len(self.buffers)

    def arrays(self) -> "Arrays":
        """Columns as int64 numpy arrays (index i is `buffers[i]`)."""
        return Arrays.of(self.buffers)


@dataclass(frozen=True)
class Arrays:
    """Column view of a buffer list used by the algorithms (index-based, ids dropped)."""

    start: np.ndarray
    end: np.ndarray
    size: np.ndarray
    align: np.ndarray
    weight: np.ndarray = field(repr=False)

    @staticmethod
    def of(buffers: tuple[PlanBuffer, ...]) -> "Arrays":
        n = len(buffers)
        return Arrays(
            np.fromiter((b.start for b in buffers), np.int64, n),
            np.fromiter((b.end for b in buffers), np.int64, n),
            np.fromiter((b.size for b in buffers), np.int64, n),
            np.fromiter((b.alignment for b in buffers), np.int64, n),
            np.fromiter((b.weight for b in buffers), np.float64, n),
        )


@dataclass(frozen=True)
class Solution:
    """A plan: `offsets[id]` for every buffer, the arena size (max offset+size), the lower bound it is
    measured against, the solve time, the method that produced it, and whether it fits the problem's
    capacity (`None` when the problem has no capacity)."""

    offsets: Mapping[BufferId, int]
    arena: int
    lower_bound: int
    seconds: float
    method: str
    fits: bool | None

    @property
    def ratio(self) -> float:
        """arena / lower bound (1.0 for an empty problem)."""
        return self.arena / self.lower_bound if self.lower_bound else 1.0


def lower_bound(buffers: Iterable[PlanBuffer] | Problem) -> int:
    """Peak live bytes: the maximum over time of the summed sizes of live buffers (a sweep, O(n log n)).
    No plan can use a smaller arena."""
    bufs = buffers.buffers if isinstance(buffers, Problem) else tuple(buffers)
    if not bufs:
        return 0
    a = Arrays.of(bufs)
    return peak_live(a.start, a.end, a.size)


def peak_live(start: np.ndarray, end: np.ndarray, size: np.ndarray) -> int:
    """Peak of live bytes for column arrays (ends are processed before starts at equal times)."""
    if len(start) == 0:
        return 0
    times = np.concatenate([end, start])
    deltas = np.concatenate([-size, size])
    kind = np.concatenate([np.zeros(len(end), np.int8), np.ones(len(start), np.int8)])
    order = np.lexsort((kind, times))
    return int(max(0, np.cumsum(deltas[order]).max()))


def arena_of(problem: Problem, offsets: Mapping[BufferId, int]) -> int:
    """max(offset + size) over the buffers (0 when empty)."""
    return max((offsets[b.id] + b.size for b in problem.buffers), default=0)


def _int_field(row: dict, key: str, line: int) -> int:
    raw = (row.get(key) or "").strip()
    try:
        return int(raw)
    except ValueError:
        raise _bad(f"line {line}: column {key!r} is not an integer: {raw!r}") from None


def parse_csv(text: str, capacity: int | None = None) -> Problem:
    """Parse the benchmark CSV (`id,lower,upper,size[,alignment]`); also accepts `start,end` for
    `lower,upper`. Every bad row raises `NpuError(INVALID_ARGUMENT)` naming its line."""
    reader = csv.DictReader(io.StringIO(text))
    if reader.fieldnames is None:
        raise _bad("empty CSV: expected a header id,lower,upper,size")
    fields = [f.strip() for f in reader.fieldnames]
    reader.fieldnames = fields
    lo_key = "start" if "start" in fields and "lower" not in fields else "lower"
    hi_key = "end" if "end" in fields and "upper" not in fields else "upper"
    missing = [k for k in ("id", lo_key, hi_key, "size") if k not in fields]
    if missing:
        raise _bad(f"the CSV header must be id,lower,upper,size[,alignment]: missing {', '.join(missing)} "
                   f"(got {','.join(fields)})")
    buffers = []
    for line, row in enumerate(reader, start=2):
        if None in row or any(row.get(k) is None for k in ("id", lo_key, hi_key, "size")):
            raise _bad(f"line {line}: expected {len(fields)} columns")
        bid_raw = row["id"].strip()
        try:
            bid: BufferId = int(bid_raw)
        except ValueError:
            bid = bid_raw
        align = _int_field(row, "alignment", line) if "alignment" in fields and (row.get("alignment") or "").strip() else 1
        lower, upper, size = (_int_field(row, k, line) for k in (lo_key, hi_key, "size"))
        try:
            buffers.append(PlanBuffer(bid, lower, upper, size, align))
        except NpuError as exc:
            raise _bad(f"line {line}: {exc.message}") from None
    return Problem(buffers, capacity)


def capacity_from_name(path: str | Path) -> int | None:
    """The capacity encoded in a benchmark file name (`A.1048576.csv` → 1048576), else None."""
    parts = Path(path).name.split(".")
    return int(parts[-2]) if len(parts) >= 3 and parts[-2].isdigit() else None


def read_csv(path: str | Path, capacity: int | None = None) -> Problem:
    """Read a benchmark CSV file; the capacity defaults to the one in the file name, if any."""
    if capacity is None:
        capacity = capacity_from_name(path)
    path = regular_input(path, "instance")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:       # a binary file or another encoding: one line naming the file
        raise _bad(f"instance {path} is not a UTF-8 text CSV (byte {exc.start} is {exc.object[exc.start]:#04x})") \
            from None
    return parse_csv(text, capacity)


def format_offsets_csv(problem: Problem, solution: Solution) -> str:
    """`id,offset` rows (with header) in the problem's buffer order."""
    lines = ["id,offset"] + [f"{b.id},{solution.offsets[b.id]}" for b in problem.buffers]
    return "\n".join(lines) + "\n"


def write_offsets_csv(path: str | Path, problem: Problem, solution: Solution) -> None:
    """Write `format_offsets_csv` to `path`."""
    text = format_offsets_csv(problem, solution).encode()
    write_exactly(path, lambda f: f.write(text), "offsets file")
