"""The memory plan of a compiled model: internal-arena offsets from tensor lifetimes, plus the weight layout.

Lifetimes come from the schedule: an internal tensor lives from its producer's step to its last consumer's step
(half-open `[producer, last_consumer + 1)`). Model inputs and outputs live in their own buffers, outside the
internal arena, and weights in the weight region. Sizes are the native sizes (1 KiB multiples) and offsets are
1 KiB aligned (seeds/rknn-npu-sram.txt). Placement uses the planner's `solve` when it exists, else its
`greedy_by_size`, else a sequential (non-overlapping) layout. Pure data in, data out; no numpy views.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Mapping, Sequence

INTERNAL_ALIGN = 1024


@dataclass
class MemoryPlan:
    """Where everything lives: internal tensors in one arena, weights in one region (plain, JSON-able data)."""

    internal_size: int
    offsets: dict[str, int]                    # internal tensor -> byte offset in the internal arena
    sizes: dict[str, int]                      # internal tensor -> planned (aligned) byte size
    lifetimes: dict[str, tuple[int, int]]      # internal tensor -> [first step, last step + 1)
    weight_offsets: dict[str, int]             # weight entry -> byte offset in the weight region
    weight_sizes: dict[str, int]
    weight_size: int
    lower_bound: int = 0                       # peak live bytes: no plan can use less
    method: str = "sequential"
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        d = asdict(self)
        d["lifetimes"] = {k: list(v) for k, v in self.lifetimes.items()}
        return d

    @classmethod
    def from_json(cls, d: Mapping) -> "MemoryPlan":
        d = dict(d)
        d["lifetimes"] = {k: (int(v[0]), int(v[1])) for k, v in d["lifetimes"].items()}
        d["offsets"] = {k: int(v) for k, v in d["offsets"].items()}
        d["sizes"] = {k: int(v) for k, v in d["sizes"].items()}
        d["weight_offsets"] = {k: int(v) for k, v in d["weight_offsets"].items()}
        d["weight_sizes"] = {k: int(v) for k, v in d["weight_sizes"].items()}
        return cls(**d)

    def check(self) -> list[str]:
        """Violations: overlapping live tensors, misaligned offsets, tensors past the arena end."""
        problems = []
        items = sorted(self.offsets, key=lambda n: self.lifetimes[n][0])
        for name in items:
            off, size = self.offsets[name], self.sizes[name]
            if off % INTERNAL_ALIGN:
                problems.append(f"{name}: offset {off} not {INTERNAL_ALIGN}-aligned")
            if off + size > self.internal_size:
                problems.append(f"{name}: [{off}, {off + size}) past the arena end {self.internal_size}")
        for i, a in enumerate(items):
            sa, ea = self.lifetimes[a]
            for b in items[i + 1:]:
                sb, eb = self.lifetimes[b]
                if sb >= ea:
                    break
                if sa < eb and self.offsets[a] < self.offsets[b] + self.sizes[b] \
                        and self.offsets[b] < self.offsets[a] + self.sizes[a]:
                    problems.append(f"{a} and {b} overlap in time and space")
        return problems


def _align(v: int, a: int = INTERNAL_ALIGN) -> int:
    return -(-int(v) // a) * a


def tensor_lifetimes(steps: Sequence[tuple[Sequence[str], Sequence[str]]],
                     internal: set[str]) -> dict[str, tuple[int, int]]:
    """[producer step, last consumer step + 1) of every internal tensor, from (inputs, outputs) per step."""
    start: dict[str, int] = {}
    end: dict[str, int] = {}
    for i, (ins, outs) in enumerate(steps):
        for t in outs:
            if t in internal and t not in start:
                start[t] = i
                end[t] = i + 1
        for t in ins:
            if t in internal:
                end[t] = max(end.get(t, i + 1), i + 1)
    return {t: (start[t], end[t]) for t in start}


def _valid(offsets: dict[str, int], lifetimes: dict[str, tuple[int, int]], sizes: dict[str, int]) -> bool:
    """True when offsets are aligned and no two tensors live at the same time share bytes (sweep by start)."""
    if any(off % INTERNAL_ALIGN or off < 0 for off in offsets.values()):
        return False
    events = sorted(lifetimes, key=lambda n: lifetimes[n][0])
    live: list[str] = []
    for name in events:
        start = lifetimes[name][0]
        live = [u for u in live if lifetimes[u][1] > start]
        lo, hi = offsets[name], offsets[name] + sizes[name]
        if any(offsets[u] < hi and lo < offsets[u] + sizes[u] for u in live):
            return False
        live.append(name)
    return True


def _place(lifetimes: dict[str, tuple[int, int]], sizes: dict[str, int],
           time_limit: float) -> tuple[dict[str, int], int, int, str]:
    """(offsets, arena, lower bound, method) using the planner package when it is there."""
    names = list(lifetimes)
    if not names:
        return {}, 0, 0, "empty"
    try:
        from npurt.plan.problem import PlanBuffer, Problem
    except ImportError:
        PlanBuffer = None  # type: ignore[assignment]
    if PlanBuffer is not None:
        problem = Problem([PlanBuffer(n, lifetimes[n][0], lifetimes[n][1], sizes[n], INTERNAL_ALIGN)
                           for n in names])
        solver = None
        try:
            from npurt.plan import solve as solver  # type: ignore[attr-defined]
        except ImportError:
            try:
                from npurt.plan.solver import solve as solver  # type: ignore[no-redef]
            except ImportError:
                solver = None
        from npurt.plan.greedy import greedy_by_size
        attempts = ([lambda: solver(problem, time_limit=time_limit)] if solver is not None else []) + \
            [lambda: greedy_by_size(problem)]
        for attempt in attempts:
            try:
                sol = attempt()
                offsets = {n: int(sol.offsets[n]) for n in names}
            except Exception:       # a planner bug must not break compilation: fall back to the next one
                continue
            if _valid(offsets, lifetimes, sizes):
                return offsets, _align(int(sol.arena)), int(sol.lower_bound), str(sol.method)
    offsets, cursor = {}, 0
    for n in names:
        offsets[n] = cursor
        cursor += sizes[n]
    return offsets, cursor, 0, "sequential"


def plan_model(steps: Sequence[tuple[Sequence[str], Sequence[str]]], internal_sizes: Mapping[str, int],
               weight_sizes: Mapping[str, tuple[int, int]], weight_total: int,
               time_limit: float = 0.5) -> MemoryPlan:
    """The MemoryPlan for a schedule `steps` = [(input names, output names)] with the given internal tensor
    sizes (bytes, rounded to 1 KiB here) and the weight layout {entry: (offset, nbytes)}."""
    sizes = {n: _align(max(int(s), 1)) for n, s in internal_sizes.items()}
    lifetimes = tensor_lifetimes(steps, set(sizes))
    sizes = {n: sizes[n] for n in lifetimes}
    offsets, arena, lb, method = _place(lifetimes, sizes, time_limit)
    plan = MemoryPlan(arena, offsets, sizes, lifetimes,
                      {k: int(v[0]) for k, v in weight_sizes.items()},
                      {k: int(v[1]) for k, v in weight_sizes.items()}, int(weight_total), lb, method)
    return plan
