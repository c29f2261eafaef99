"""npurt.runtime: the vendor-neutral `Context` (lifecycle, binding rules, general and zero-copy I/O, runs,
perf counters, dup, core masks, dynamic shapes) that the RKNN and QNN mirrors and `npurt.Session` build on.

Errors are `npurt.NpuError` with neutral codes. See `npurt.runtime.context` for the rules.
"""
from npurt.runtime.binding import IoBinding, MemRef
from npurt.runtime.context import ATTR_KINDS, Context, InputData
from npurt.runtime.loader import ModelFamily, compile_dynamic, load_family
from npurt.runtime.options import ContextOptions, MemSize
from npurt.runtime.perf import OpTiming, PerfCounters, format_perf_detail

__all__ = ["ATTR_KINDS", "Context", "ContextOptions", "InputData", "IoBinding", "MemRef", "MemSize", "ModelFamily",
           "OpTiming", "PerfCounters", "compile_dynamic", "format_perf_detail", "load_family"]
