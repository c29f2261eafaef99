"""The per-layer latency model of the RKNN NPUs: a pure function of a `CompiledModel`, its `MemoryPlan` and a SoC.

For every scheduled op: time = max(compute, memory) + a fixed per-op cost, where
- compute = the op's MACs (convolutions, Gemm, MatMul) over the SoC's MAC rate for the op's element type, with the
  padding losses of the MAC array's atomic operation (input channels padded to the input atom, output channels to
  the kernel atom: `NpuFigures.atom_c` / `atom_k`, per NPU generation) and, for depthwise convolutions, one kernel of the
  kernel atom busy (1 / atom_k of the array); other NPU ops move C2 elements per cycle;
- memory = the op's bytes over the bandwidths: its input and output tensors at their planned sizes (the sizes the
  RKNN_LOG_LEVEL=3 memory table prints), split into DDR and SRAM by the plan's SRAM placement (the arena's first
  `sram` bytes), plus its weights from DDR;
- ops the board runs on the CPU (`npurt.timing.placement`: not in the SoC's NPU op list of the RKNN compiler's
  support list, attributes out of its ranges, custom ops) cost CPU time: their elements at the CPU's clock plus a
  hand-over, and their MACs (e.g. a convolution whose kernel is beyond the NPU's range) at the fitted CPU MAC rate.
The NPU runs Conv + SiLU (x * Sigmoid(x)) as one op (rknpu2 release notes: "Conv-Silu/Conv-Swish" fusion), and so
does npurt's compiler (ConvSwish); a fused lookup activation (SiLU, Sigmoid, ...) still costs one elementwise pass
over the output (`LUT_ACTIVATIONS`), while Relu / Clip are free.
Multi-core (`cores` > 1, RK3588 / RK3576): only the ops the vendor lists for the multi-core masks split their
compute across the cores, DRAM bandwidth is shared, each split op pays a synchronisation cost per extra core.
Constants and their sources: `npurt.soc.npu_timing`. No clock of this machine is read.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from npurt.errors import ErrorCode, NpuError
from npurt.model.report import memory_rows
from npurt.soc import get_profile
from npurt.soc import npu_timing as T
from npurt.timing.placement import is_depthwise, place, tensor_shape, weight_shape

if TYPE_CHECKING:
    from npurt.model.compiled import CompiledModel
    from npurt.model.ir import Node

# The cost class of each NPU op (which ops run on the NPU at all: `npurt.timing.placement`).
CONV_OPS = frozenset({"Conv", "ConvTranspose"})
MATMUL_OPS = frozenset({"Gemm", "MatMul"})
LAYOUT_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Transpose", "Concat", "Split",
                        "Slice", "Pad", "DepthToSpace", "SpaceToDepth"})
POOL_OPS = frozenset({"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"})
HEAVY_OPS = {"Softmax": 4.0, "LogSoftmax": 4.0, "LayerNormalization": 4.0, "InstanceNormalization": 4.0,
             "Exp": 2.0, "Erf": 2.0, "Sigmoid": 1.0, "Tanh": 1.0, "Resize": 1.0}   # elements of work per element
# Activations computed by a lookup pass over the output (C2 elements per cycle, as other elementwise ops) even when
# fused into the conv; Relu / Clip / LeakyRelu ride the conv's output stage for free.
LUT_ACTIVATIONS = frozenset({"Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Swish", "Gelu", "Mish", "Exp"})
# rknn_set_core_mask: the ops that use several cores in RKNN_NPU_CORE_0_1 / 0_1_2 ("multicore" source).
MULTICORE_OPS = frozenset({"Conv", "Add", "Concat", "Relu", "Clip", "ThresholdedRelu", "PRelu", "LeakyRelu"})


@dataclass(frozen=True)
class LayerTime:
    """One scheduled op's prediction. Times in µs; bytes as the plan places them."""

    index: int
    name: str
    op: str                     # display type (fused activation included, e.g. ConvRelu, ConvSwish)
    target: str                 # "NPU" or "CPU"
    dtype: str
    input_shapes: tuple[tuple[int, ...], ...]
    shape: tuple[int, ...]      # output shape
    macs: int
    ddr_bytes: int
    sram_bytes: int
    weight_bytes: int           # part of ddr_bytes
    compute_us: float
    activation_us: float        # part of compute_us: a fused lookup activation's pass over the output
    memory_us: float
    overhead_us: float
    us: float
    bound: str                  # "compute", "memory", "overhead" (the fixed cost is the larger part) or "cpu"
    cores: int                  # cores the op runs on
    why: str = ""               # for a CPU op: why the board runs it on the CPU (`npurt.timing.placement`)
    cpu_mac_us: float = 0.0     # part of a CPU op's time: its MACs at the fitted CPU rate (`Fit.cpu_macs_per_cycle`)

    @property
    def ms(self) -> float:
        return self.us / 1000.0


@dataclass(frozen=True)
class Prediction:
    """A model's predicted NPU time on one SoC (see `predict`)."""

    soc: str
    cores: int
    sram_bytes: int             # SRAM the internal arena was given (0: none)
    precision: str
    layers: tuple[LayerTime, ...]
    naive_ms: float             # total MACs / peak MAC rate of the cores used: the estimate this model improves on
    figures: dict = field(default_factory=dict)

    @property
    def total_us(self) -> float:
        return sum(layer.us for layer in self.layers)

    @property
    def total_ms(self) -> float:
        return self.total_us / 1000.0

    @property
    def fps(self) -> float:
        return 1e6 / self.total_us if self.total_us > 0 else float("inf")

    @property
    def macs(self) -> int:
        return sum(layer.macs for layer in self.layers)

    def to_json(self) -> dict[str, Any]:
        """One JSON-able document: soc, cores, sram, total_ms, fps, naive_ms, the figures used, one object per
        layer (name, op, target, ms, us, macs, bytes, bound, ...)."""
        layers = []
        for layer in self.layers:
            d = asdict(layer)
            d["input_shapes"] = [list(s) for s in layer.input_shapes]
            d["shape"] = list(layer.shape)
            d["ms"] = layer.ms
            layers.append(d)
        return {"soc": self.soc, "cores": self.cores, "sram_bytes": self.sram_bytes, "precision": self.precision,
                "total_ms": self.total_ms, "fps": self.fps, "macs": self.macs, "naive_ms": self.naive_ms,
                "figures": self.figures, "layers": layers,
                "note": "predicted by npurt's timing model (docs/npu-timing.md), not measured"}


def predict(compiled: "CompiledModel", soc: str | None = None, cores: int = 1, sram: bool | int = False,
            plan: Any = None, fit: T.Fit | None = None) -> Prediction:
    """Predict the NPU time of `compiled` on `soc` (default: the SoC it was compiled for).

    `cores`: NPU cores the model runs on (1 .. the SoC's cores; as rknn_set_core_mask). `sram`: False (all DDR),
    True (the SoC's NPU SRAM holds the first bytes of the internal arena, as RKNN_FLAG_ENABLE_SRAM places it) or a
    byte count. `plan`: the MemoryPlan to read (default: the model's own); `fit`: the fitted constants (default
    `npurt.soc.npu_timing.FIT`; the calibration bench passes others). Pure: the same arguments always give the
    same `Prediction`; errors are `NpuError` (NOT_SUPPORTED for SoCs without timing figures, INVALID_ARGUMENT for a
    bad core count, PLATFORM_MISMATCH for a SoC whose native layouts differ from the one the model was compiled for).
    This signature is stable: the CLI, the runtime's perf queries and the toolkit face call it."""
    name = (soc or compiled.soc).strip().lower()
    fig = T.npu_figures(name)
    profile = get_profile(name)
    if not isinstance(cores, int) or cores < 1 or cores > fig.cores:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{name} has {fig.cores} NPU core(s); cannot predict for "
                                                   f"cores={cores!r}")
    own = get_profile(compiled.soc) if compiled.soc in T.FIGURES else profile
    if (dict(own.c2), own.input_align) != (dict(profile.c2), profile.input_align):
        raise NpuError(ErrorCode.PLATFORM_MISMATCH, f"the model was compiled for {compiled.soc}, whose native "
                                                    f"layouts differ from {name}'s: compile it for {name}")
    sram_bytes = _sram_bytes(sram, profile.sram_size, name)
    plan = compiled.plan if plan is None else plan
    rows, _ = memory_rows(compiled, sram_bytes, plan=plan)
    placed = {r.tensor: (r.size, r.sram_hit or 0) for r in rows}
    fit = T.FIT if fit is None else fit
    layers = [_layer(k + 1, node, compiled, fig, profile, placed, plan, cores, fit)
              for k, node in enumerate(compiled.graph.nodes)]
    macs = sum(layer.macs for layer in layers)
    naive_ms = macs / (fig.macs_per_cycle * fig.clock_mhz * cores) / 1000.0
    figures = {"int8_tops": fig.int8_tops, "npu_cores": fig.cores, "clock_mhz": fig.clock_mhz,
               "macs_per_cycle_per_core": fig.macs_per_cycle, "sparse_factor": fig.sparse_factor,
               "atom_c_bytes": fig.atom_c, "atom_k": fig.atom_k,
               "ddr_gbps_peak": fig.ddr_gbps, "dram": fig.dram,
               "fit": {**asdict(fit), "soc_efficiency": dict(fit.soc_efficiency)}, "sources": list(fig.sources)}
    return Prediction(name, cores, sram_bytes, compiled.precision, tuple(layers), naive_ms, figures)


def _sram_bytes(sram: bool | int, available: int, soc: str) -> int:
    if sram is True:
        if not available:
            raise NpuError(ErrorCode.NOT_SUPPORTED, f"{soc} has no NPU SRAM (rk3588 and rk3576 have)")
        return int(available)
    if sram is False or sram is None:
        return 0
    if isinstance(sram, int) and 0 <= sram:
        return min(int(sram), int(available))
    raise NpuError(ErrorCode.INVALID_ARGUMENT, f"sram must be True, False or a byte count, not {sram!r}")


def _pad(v: int, a: int) -> int:
    return -(-max(int(v), 1) // a) * a


def _layer(index: int, node: "Node", compiled: "CompiledModel", fig: T.NpuFigures, profile: Any,
           placed: dict, plan: Any, cores: int, fit: T.Fit) -> LayerTime:
    g = compiled.graph
    outs = [t for t in node.outputs if t]
    acts_in = [t for t in node.inputs if t and t not in g.constants]
    weights_in = [t for t in node.inputs if t and t in g.constants]
    out_st = compiled.storage.get(outs[0]) if outs else None
    dtype = out_st.dtype.value if out_st is not None else "float16"
    op = node.display_type
    in_shapes = tuple(tensor_shape(compiled, t) for t in acts_in)
    out_shape = tensor_shape(compiled, outs[0]) if outs else ()

    ddr = sram = 0
    for t in acts_in + outs:
        size, hit = placed.get(t, (0, 0))
        if not size and t in compiled.storage:
            size = int(compiled.storage[t].nbytes)
        ddr += size - hit
        sram += hit
    wbytes = sum(int(plan.weight_sizes.get(w + part, 0)) for w in weights_in for part in ("", "#scale", "#zp"))
    ddr += wbytes

    target, why = place(node, compiled, fig.soc)
    on_npu = target == "NPU"
    macs = _macs(node, compiled, out_shape) if on_npu else 0
    elems = math.prod(out_shape) if out_shape else 0
    if not on_npu:
        in_elems = sum(math.prod(s) for s in in_shapes if s)
        mac_us = _macs(node, compiled, out_shape) / (fit.cpu_macs_per_cycle * fig.cpu_mhz)
        cpu_us = (in_elems + elems) / (T.CPU_ELEMS_PER_CYCLE * fig.cpu_mhz) + T.CPU_SWITCH_US + mac_us
        return LayerTime(index, node.name or (outs[0] if outs else ""), op, "CPU", dtype, in_shapes, out_shape, 0,
                         ddr, sram, wbytes, cpu_us, 0.0, 0.0, 0.0, cpu_us, "cpu", 1, why, mac_us)

    split = cores if (cores > 1 and node.op_type in MULTICORE_OPS) else 1
    rate = T.PRECISION_RATE.get(dtype, 0.25)
    c2 = _c2(profile, dtype)
    activation = 0.0
    if macs:
        eff = _fill(node, compiled, fig, dtype) * fit.conv_efficiency * fit.efficiency_of(fig.soc)
        per_us = fig.macs_per_cycle * fig.clock_mhz * rate * eff          # MACs per µs of one core
        if is_depthwise(node, compiled):
            per_us /= fig.atom_k          # one output channel per input channel: one kernel of the atom works
        if node.activation in LUT_ACTIVATIONS:     # the activation is one more pass over the output
            activation = elems / (c2 * fig.clock_mhz)
        compute = macs / per_us + activation
    elif node.op_type in LAYOUT_OPS:
        compute = 0.0
    else:
        work = HEAVY_OPS.get(node.op_type, 1.0)
        if node.op_type in POOL_OPS and "kernel_shape" in node.attrs:
            work = float(math.prod(node.attrs["kernel_shape"]))
        elif node.op_type.startswith("Global") and in_shapes and len(in_shapes[0]) == 4:
            work = float(in_shapes[0][2] * in_shapes[0][3])
        compute = max(elems, 1) * work / (c2 * fig.clock_mhz)
    compute /= split
    activation /= split
    bw = fig.ddr_gbps * 1e3                                                # bytes per µs
    memory = ddr / (bw * fit.ddr_efficiency) + sram / (bw * T.SRAM_BANDWIDTH_FACTOR)
    overhead = (fit.op_overhead_cycles + (split - 1) * T.MULTICORE_SYNC_CYCLES) / fig.clock_mhz
    busy = max(compute, memory)
    bound = "compute" if compute >= memory else "memory"
    if overhead > busy:
        bound = "overhead"
    return LayerTime(index, node.name or (outs[0] if outs else ""), op, "NPU", dtype, in_shapes, out_shape, macs,
                     ddr, sram, wbytes, compute, activation, memory, overhead, busy + overhead, bound, split)


def _c2(profile: Any, dtype: str) -> int:
    key = "int8" if dtype in ("int8", "uint8") else "float16"
    return int(profile.c2.get(key) or profile.c2.get("float16") or profile.c2.get("int8") or 8)


def _fill(node: "Node", compiled: "CompiledModel", fig: T.NpuFigures, dtype: str) -> float:
    """Share of the MAC array the op's channels fill: input channels padded to the input atom (`atom_c` bytes of
    the element type), output channels to the kernel atom (`atom_k`)."""
    ws = weight_shape(node, compiled)
    if node.op_type in CONV_OPS and len(ws) >= 2:
        group = int(node.attrs.get("group", 1))
        if is_depthwise(node, compiled):
            return 1.0
        cout, cin = (ws[1] * group, ws[0] // group) if node.op_type == "ConvTranspose" else (ws[0] // group, ws[1])
    elif node.op_type in MATMUL_OPS and len(ws) == 2:
        trans = int(node.attrs.get("transB", 0)) if node.op_type == "Gemm" else 0
        cout, cin = (ws[0], ws[1]) if trans else (ws[1], ws[0])
    else:
        return 1.0
    atom_c = max(fig.atom_c // (1 if dtype in ("int8", "uint8") else 2), 1)
    return (cin / _pad(cin, atom_c)) * (cout / _pad(cout, fig.atom_k))


def _macs(node: "Node", compiled: "CompiledModel", out_shape: tuple[int, ...]) -> int:
    """Multiply-accumulates of a conv / Gemm / MatMul (0 for other ops)."""
    ws = weight_shape(node, compiled)
    if node.op_type == "Conv" and len(ws) >= 3 and out_shape:
        return int(math.prod(out_shape) * math.prod(ws[1:]))
    if node.op_type == "ConvTranspose" and len(ws) >= 3 and node.inputs:
        in_shape = tensor_shape(compiled, node.inputs[0])
        return int(math.prod(in_shape) * math.prod(ws[1:])) if in_shape else 0
    if node.op_type in MATMUL_OPS and out_shape:
        a = tensor_shape(compiled, node.inputs[0]) if node.inputs else ()
        k = a[-1] if a else 0
        if node.op_type == "Gemm" and int(node.attrs.get("transA", 0)) and len(a) >= 2:
            k = a[-2]
        return int(math.prod(out_shape) * k)
    return 0
