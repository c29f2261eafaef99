"""npurt.plan layer: pure memory planning — tensor lifetimes in, offsets and placements out.

Imports only numpy, the stdlib and `npurt.errors` (matplotlib lazily, for `plot_plan` only).
"""
from npurt.plan.check import check, violations
from npurt.plan.fastmem import FastMemoryPlan, hit_bytes_of, place_with_fast_memory
from npurt.plan.greedy import greedy_by_size
from npurt.plan.problem import (PlanBuffer, Problem, Solution, format_offsets_csv, lower_bound, parse_csv,
                                read_csv, write_offsets_csv)
from npurt.plan.report import (MemoryRow, MemoryTotals, compute_totals, format_memory_table, memory_table_dict,
                               plot_plan, sram_hit)
from npurt.plan.solver import solve

__all__ = ["PlanBuffer", "Problem", "Solution", "lower_bound", "parse_csv", "read_csv", "format_offsets_csv",
           "write_offsets_csv", "check", "violations", "greedy_by_size", "solve", "place_with_fast_memory",
           "FastMemoryPlan", "hit_bytes_of", "MemoryRow", "MemoryTotals", "compute_totals", "format_memory_table",
           "memory_table_dict", "plot_plan", "sram_hit"]
