"""npurt.plan layer: pure memory planning — tensor lifetimes in, offsets and placements out.

Imports only numpy, the stdlib and `npurt.errors`.
"""
from npurt.plan.check import check, violations
from npurt.plan.greedy import greedy_by_size
from npurt.plan.problem import (PlanBuffer, Problem, Solution, format_offsets_csv, lower_bound, parse_csv,
                                read_csv, write_offsets_csv)

__all__ = ["PlanBuffer", "Problem", "Solution", "lower_bound", "parse_csv", "read_csv", "format_offsets_csv",
           "write_offsets_csv", "check", "violations", "greedy_by_size"]
