"""The NPU timing figures of every RKNN SoC, as data: what `npurt.timing` predicts layer times from.

Each figure is either public (its source is in `SOURCES`, keyed by the tag in the row's `sources`) or npurt's
choice / a fit, and says so. Public figures:
- peak int8 TOPS, NPU cores: Rockchip's product briefs and datasheets of each SoC (tag "brief"); the NPU clock is
  the commonly reported top frequency (tag "clock");
- DRAM type, bus width and top data rate: the same datasheets (tag "brief"); the peak bandwidth is
  bus bytes x MT/s and is only reached in part (`FIT.ddr_efficiency`);
- CPU cores and clock (for ops that fall back to the CPU): the same briefs.
- the MAC array's atomic operation (tag "nvdla"): 64 bytes of input channels x 32 kernels, which a conv's channels
  are padded to; the RK3566 has the RK3568's NPU (tag "rk356x"); the RK3562 / RK3576 generation (tag
  "rk3562_rk3576"): 32 x 32 atoms, peak TOPS counting sparse weights, the RK3576's NPU at 950 MHz.
Derived: int8 MACs per cycle per core = TOPS x 1e12 / 2 / clock / cores (one MAC = two operations), over the sparse
factor for a SoC whose peak counts 2:4 sparse weights (tag "rk3562_rk3576"); for the RK3588 that is 1024, the per-core MAC
array commonly quoted for RKNPU2, and for the RK3576 about 1050.
Fitted (`FIT`): only on the five calibration rows of rknn_model_zoo's benchmark table (single core): MobileNetV2
RK3588 450.7 FPS, ResNet50-v2 RK3588 110.1 FPS, YOLOv5s RK3566/RK3568 19.3 FPS, YOLOv8n RK3576 90.2 FPS (int8), and
CLIP ViT-B/32's image encoder RK3588 6.5 FPS (fp16), the one published row whose time is mostly a MAC op on the CPU
(its 32 x 32 patch convolution is beyond the NPU's kernel range): it fits the CPU MAC rate, 0.374 MACs per cycle,
a plain (not vectorised) convolution loop (`bench/npu_timing.py --fit` re-runs the fit). Everything else is predicted, not fitted: the other rows of
the table (`npurt.timing.rows`) check it.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from npurt.errors import ErrorCode, NpuError

SOURCES: Mapping[str, str] = MappingProxyType({
    "brief": "Rockchip product brief / datasheet of the SoC (rock-chips.com, e.g. 'RK3588 Brief Datasheet': NPU up to "
             "6 TOPS, INT4/INT8/INT16/FP16): NPU TOPS, NPU cores, DRAM type and width, CPU cores and clock",
    "clock": "NPU clock 1 GHz: the top NPU frequency commonly reported for these SoCs, and what 6 TOPS over 3 cores "
             "of 1024 int8 MACs implies for the RK3588; not read from a device tree here (npurt's reading)",
    "zoo": "airockchip/rknn_model_zoo README, 'Model performance benchmark (FPS)', V2.3.2",
    "multicore": "RKNN runtime API reference (Rockchip_RKNPU_API_Reference_RKNNRT V2.x), rknn_set_core_mask: in "
                 "the multi-core masks only Conv, DepthwiseConvolution, Add, Concat, Relu, Clip, Relu6, "
                 "ThresholdedRelu, PRelu, LeakyRelu are accelerated; other ops fall back to core 0",
    "precision": "the RKNPU2 rates commonly cited per precision: int16 at 1/2 and fp16 at 1/4 of the int8 MAC rate "
                 "(not a Rockchip table: npurt's assumption)",
    "estimate": "no public figure found: npurt's estimate from the SoC's class, marked as such",
    "nvdla": "the convolution core's atomic operation: Rockchip's NPU is closely based on NVIDIA's open NVDLA IP "
             "(Linux kernel Documentation/accel/rocket: 'This NPU is closely based on the NVDLA IP'), whose "
             "convolution core (NVDLA hardware architecture documentation, nvdla.org, nv_full configuration) "
             "computes atomic-C = 64 input channels (bytes: 64 int8 or 32 int16/fp16) x atomic-K = 32 kernels per "
             "atomic operation: a conv's channels are padded to those atoms. Applying nv_full's atoms to every "
             "RKNPU2 core is npurt's reading (the RK3588 TRM's NPU chapter does not state them)",
    "rk356x": "Rockchip's RKNPU kernel driver (rknpu_drv.c, Rockchip BSP kernel): the RK3566 and the RK3568 bind the "
              "one NPU compatible 'rockchip,rk3568-rknpu' to one configuration (rk356x_rknpu_config, one core) and "
              "share the SoC family's NPU clock table, whose top operating point is 1 GHz; rknn_model_zoo publishes "
              "them as one column 'RK3566/RK3568'. So the RK3566 carries the RK3568's NPU figures (the 0.8 TOPS of "
              "some RK3566 briefs is not the NPU the runtime drives at its top clock)",
    "rk3562_rk3576": "the RK3562 and RK3576 NPUs are one generation, newer than the RK3588's: Rockchip's RKNPU kernel "
                     "driver (rknpu_drv.c) gives rk3562_rknpu_config and rk3576_rknpu_config, and only them, 16-bit "
                     "task counters, the new task-status offset, DMA control and an internal buffer (RK3562 256 KB, "
                     "RK3576 1 MB split per core); the NPU OPP table of the RK3576 BSP device tree tops at 950 MHz; "
                     "rknn_model_zoo publishes the RK3576 with a sparse-weight column, 1.4-1.7 times its dense FPS on "
                     "the convolution-bound models (YOLOv6/v8 m, ResNet50). npurt's reading, applied to both SoCs: the "
                     "brief's TOPS counts that sparse gain (x 1.5; RK3576: 2 cores x ~1050 dense int8 MACs x 2 x "
                     "0.95 GHz x 1.5 = 6 TOPS) and the dense core computes 32 input channels x 32 kernels per atomic "
                     "operation, so thin layers (16 / 32 channels) lose less to padding than in the RK3588's 64 x 32 "
                     "atom. Not a Rockchip table; the zoo's dense rows were seen when choosing it (docs/npu-timing.md)",
})


@dataclass(frozen=True)
class NpuFigures:
    """One SoC's NPU and memory figures (per SoC; `cores` is the NPU core count)."""

    soc: str
    int8_tops: float            # peak int8 TOPS of all cores together (public)
    cores: int
    clock_mhz: float            # NPU clock at its top operating point
    dram: str                   # DRAM type as the brief names it
    dram_bus_bits: int          # DRAM data bus width
    dram_mts: float             # top DRAM data rate, MT/s
    cpu: str                    # the CPU cluster ops fall back to
    cpu_mhz: float
    sources: tuple[str, ...] = ("brief",)
    notes: tuple[str, ...] = ()
    atom_c: int = 64            # input-channel atom of the MAC array, bytes (64 int8 / 32 fp16 channels): "nvdla"
    atom_k: int = 32            # output-channel (kernel) atom of the MAC array: "nvdla"
    sparse_factor: float = 1.0  # the peak TOPS counts 2:4 sparse weights at this gain ("rk3562_rk3576")

    @property
    def macs_per_cycle(self) -> float:
        """Dense int8 MACs per cycle of one core (derived: TOPS x 1e12 / 2 / clock / cores / sparse factor)."""
        return self.int8_tops * 1e12 / 2 / (self.clock_mhz * 1e6) / self.cores / self.sparse_factor

    @property
    def ddr_gbps(self) -> float:
        """Peak DRAM bandwidth, GB/s (bus bytes x MT/s)."""
        return self.dram_bus_bits / 8 * self.dram_mts / 1000


@dataclass(frozen=True)
class Fit:
    """Constants fitted on the calibration rows (and only on them), shared by every SoC."""

    conv_efficiency: float      # share of the MAC array a dense conv keeps busy once channels are padded
    ddr_efficiency: float       # share of the peak DRAM bandwidth the NPU's DMA reaches
    op_overhead_cycles: float   # fixed cost of one scheduled NPU op (task set-up, pipeline fill), NPU cycles
    soc_efficiency: tuple[tuple[str, float], ...] = ()   # (soc, factor on its MAC rate); others 1.0
    cpu_macs_per_cycle: float = 1.0     # MACs per CPU cycle of an op with MACs the board runs on the CPU

    def efficiency_of(self, soc: str) -> float:
        """The MAC-rate factor of `soc`: fitted for the RK3566/RK3568 NPU (its one calibration row), else 1."""
        return dict(self.soc_efficiency).get(soc, 1.0)


# Fitted by `bench/npu_timing.py --fit` (minimising the largest |log error| of the calibration rows); the docs
# (docs/npu-timing.md) list the fit's result and its error on every row. The RK3566/RK3568 NPU reaches a smaller
# share of its peak than the RK3588/RK3576 ones (rknn_model_zoo: ResNet50 37.9 vs 110.1 FPS for 1 vs 2 TOPS per
# core), so its factor is fitted on its one calibration row (YOLOv5s); the RK3562 and the RV11xx keep 1.0.
FIT = Fit(conv_efficiency=1.0, ddr_efficiency=0.903, op_overhead_cycles=12100.0,
          soc_efficiency=(("rk3566", 0.723), ("rk3568", 0.723)), cpu_macs_per_cycle=0.374)

# npurt's choices (not public, not fitted), each used in one place of `npurt.timing.model`:
PRECISION_RATE = MappingProxyType({"int8": 1.0, "uint8": 1.0, "int16": 0.5, "float16": 0.25, "bfloat16": 0.25,
                                   "float32": 0.25})      # "precision": fp32 models run as fp16 on the NPU
SRAM_BANDWIDTH_FACTOR = 4.0     # NPU SRAM bandwidth as a multiple of the peak DRAM bandwidth: npurt's choice
CPU_ELEMS_PER_CYCLE = 1.0       # a CPU-fallback op: one fp32 element per CPU cycle (NEON, layout conversion incl.)
CPU_SWITCH_US = 60.0            # NPU -> CPU -> NPU hand-over of one fallback op (cache sync, dequant/requant)
MULTICORE_SYNC_CYCLES = 2000.0  # per op and extra core: splitting and joining the op's tiles, NPU cycles

_T = NpuFigures
FIGURES: Mapping[str, NpuFigures] = MappingProxyType({f.soc: f for f in (
    _T("rk3588", 6.0, 3, 1000, "LPDDR4X", 64, 4224, "4x Cortex-A76", 2400, ("brief", "clock", "nvdla")),
    _T("rk3576", 6.0, 2, 950, "LPDDR4X", 32, 4266, "4x Cortex-A72", 2200, ("brief", "rk3562_rk3576"),
       ("6 TOPS with sparse weights: dense ~1050 int8 MACs per cycle per core in 32 x 32 atoms, at 950 MHz",),
       atom_c=32, atom_k=32, sparse_factor=1.5),
    _T("rk3568", 1.0, 1, 1000, "LPDDR4", 32, 3200, "4x Cortex-A55", 2000,
       ("brief", "clock", "rk356x", "nvdla")),
    _T("rk3566", 1.0, 1, 1000, "LPDDR4", 32, 3200, "4x Cortex-A55", 1800, ("brief", "rk356x", "nvdla"),
       ("NPU: the RK3568's (one driver configuration, one zoo column)",)),
    _T("rk3562", 1.0, 1, 1000, "LPDDR4X", 32, 3200, "4x Cortex-A53", 2000, ("brief", "rk3562_rk3576"),
       ("the RK3576's NPU generation: 1 TOPS with sparse weights, dense ~333 int8 MACs per cycle in 32 x 32 atoms",),
       atom_c=32, atom_k=32, sparse_factor=1.5),
    _T("rv1126b", 3.0, 1, 1000, "LPDDR4", 32, 3200, "4x Cortex-A53", 1900, ("brief", "estimate", "nvdla"),
       ("NPU clock and DRAM rate: estimates",)),
    _T("rv1106", 0.5, 1, 1000, "DDR3L (in package)", 16, 1866, "Cortex-A7", 1200, ("brief", "estimate", "nvdla"),
       ("NPU clock: estimate",)),
    _T("rv1103", 0.5, 1, 1000, "DDR2 (in package)", 16, 1066, "Cortex-A7", 1200, ("brief", "estimate", "nvdla"),
       ("NPU clock: estimate",)),
    _T("rv1106b", 1.0, 1, 1000, "DDR3L (in package)", 16, 2133, "Cortex-A7", 1200, ("estimate", "nvdla"),
       ("TOPS, clock and DRAM: estimates (no public brief read)",)),
    _T("rv1103b", 0.5, 1, 1000, "DDR2 (in package)", 16, 1066, "Cortex-A7", 1200, ("estimate", "nvdla"),
       ("TOPS, clock and DRAM: estimates (no public brief read)",)),
    _T("rk2118", 0.25, 1, 500, "PSRAM/SRAM", 16, 400, "Cortex-M / HiFi DSP", 400, ("estimate", "nvdla"),
       ("every figure is an estimate: no public NPU figure of the RK2118 found",)),
)})


def npu_figures(soc: str) -> NpuFigures:
    """The timing figures of `soc` (an RKNN SoC name); NOT_SUPPORTED for SoCs without them (e.g. HTP)."""
    hit = FIGURES.get(soc.strip().lower())
    if hit is None:
        raise NpuError(ErrorCode.NOT_SUPPORTED, f"no NPU timing figures for {soc!r} (the timing model covers the "
                                                f"RKNN SoCs: {', '.join(sorted(FIGURES))})")
    return hit
