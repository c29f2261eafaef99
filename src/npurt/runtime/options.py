"""What a `Context` is asked to do (`ContextOptions`) and what it reports about its memory (`MemSize`).

Vendor-neutral: the RKNN mirror maps `rknn_init` flags onto `ContextOptions` (see `npurt.rknn.api`).
"""
from __future__ import annotations

from dataclasses import dataclass

PRIORITIES = ("high", "medium", "low")


@dataclass(frozen=True)
class ContextOptions:
    """How a context is set up.

    - `priority`: "high" (default), "medium" or "low"; recorded (the CPU executor has one queue).
    - `collect_perf`: time every op of every run (per-op table in `Context.perf_detail()`); costs a little.
    - `weights_outside`: the user provides the weight memory (`set_weight_memory`) before the first run.
    - `internal_outside`: the user provides the internal (intermediate tensor) memory (`set_internal_memory`)
      before the first run; and, as on the vendor runtime, before binding any input/output.
    - `info_only`: only sizes and attributes can be queried; nothing is allocated, nothing runs.
    - `sram`: place the internal arena in the device's free SRAM first, the rest in DDR.
    - `flush_inputs` / `invalidate_outputs`: the runtime's own cache maintenance of runtime-allocated input /
      output memory around each run (the vendor default); external (imported) memory is the user's to sync.
    - `perf`: what the perf counters report: "measured" (CPU time of npurt's executor, the default) or "predicted"
      (the NPU time npurt's timing model predicts for the SoC, core mask and SRAM; `npurt.runtime.perf`).
    - `cache_weights`: decode the weights into their compute form once per bind (default); False reads them from
      the weight memory on every run (the QNN HTP mirror: the weights region is what each execute uses).
    """

    priority: str = "high"
    collect_perf: bool = False
    weights_outside: bool = False
    internal_outside: bool = False
    info_only: bool = False
    sram: bool = False
    flush_inputs: bool = True
    invalidate_outputs: bool = True
    cache_weights: bool = True
    perf: str = "measured"


@dataclass(frozen=True)
class MemSize:
    """A context's memory figures (what `RKNN_QUERY_MEM_SIZE` reports)."""

    weight_size: int            # bytes of weight memory the model needs
    internal_size: int          # bytes of internal memory (intermediate tensors, inputs/outputs excluded)
    dma_allocated: int          # bytes of device memory this context allocated itself (page-rounded)
    sram_total: int             # SRAM the SoC gives the NPU (0 without SRAM)
    sram_free: int              # SRAM free on the device right now
    sram_used: int              # SRAM this context's internal arena holds
    temp_size: int = 0          # host bytes of its executors' temp memory (step scratch, `npurt.exec.temp`; not
                                # device memory, not in RKNN_QUERY_MEM_SIZE), taken at the first run's bind
