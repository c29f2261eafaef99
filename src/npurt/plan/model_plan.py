"""The memory plan of a compiled model: internal-arena offsets from tensor lifetimes, plus the weight layout.

Lifetimes come from the schedule: an internal tensor lives from its producer's step to its last consumer's step
(half-open `[producer, last_consumer + 1)`). Model inputs and outputs live in their own buffers, outside the
internal arena, and weights in the weight region. Sizes are the native sizes (1 KiB multiples) and offsets are
1 KiB aligned (as the RKNN NPU SRAM guide's table shows). Placement is the planner's `solve`, which only returns
plans that `npurt.plan.check` accepts. Pure data in, data out; no numpy views.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from npurt.plan.check import violations
from npurt.plan.problem import PlanBuffer, Problem, Solution
from npurt.plan.solver import solve

INTERNAL_ALIGN = 1024   # size and offset alignment of internal tensors (seed: sizes are 1 KiB multiples)


@dataclass
class MemoryPlan:
    """Where everything lives: internal tensors in one arena, weights in one region (plain data)."""

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

    def problem(self) -> Problem:
        """The internal tensors as a planning problem (lifetimes, sizes, 1 KiB alignment)."""
        return Problem(PlanBuffer(n, start, end, self.sizes[n], INTERNAL_ALIGN)
                       for n, (start, end) in self.lifetimes.items())

    def check(self) -> list[str]:
        """Violations (`npurt.plan.check`): overlapping live tensors, misaligned offsets, tensors past the arena
        end, tensors without an offset."""
        solution = Solution(self.offsets, self.internal_size, self.lower_bound, 0.0, self.method, None)
        return violations(self.problem(), solution)


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


def plan_model(steps: Sequence[tuple[Sequence[str], Sequence[str]]], internal_sizes: Mapping[str, int],
               weight_sizes: Mapping[str, tuple[int, int]], weight_total: int,
               time_limit: float = 0.5) -> MemoryPlan:
    """The MemoryPlan for a schedule `steps` = [(input names, output names)] with the given internal tensor
    sizes (bytes, rounded to 1 KiB here) and the weight layout {entry: (offset, nbytes)}."""
    sizes = {n: _align(max(int(s), 1)) for n, s in internal_sizes.items()}
    lifetimes = tensor_lifetimes(steps, set(sizes))
    plan = MemoryPlan(0, {}, {n: sizes[n] for n in lifetimes}, lifetimes,
                      {k: int(v[0]) for k, v in weight_sizes.items()},
                      {k: int(v[1]) for k, v in weight_sizes.items()}, int(weight_total), 0, "empty")
    if lifetimes:
        solution = solve(plan.problem(), time_limit=time_limit)
        plan.offsets = {n: int(solution.offsets[n]) for n in lifetimes}
        plan.internal_size = _align(solution.arena)
        plan.lower_bound, plan.method = int(solution.lower_bound), str(solution.method)
    return plan
