"""`Context`: one loaded model on one device — lifecycle, memory ownership, binding rules, the general (copying)
and zero-copy I/O paths, runs, perf counters, dup, core masks, dynamic shapes. Vendor-neutral: every failure is an
`NpuError` with a neutral code (messages use the vendor's wording where the seeds give it, so the mirrors can log
them as they are). The I/O path is an object the context holds (`npurt.runtime.io_path`): `GeneralIo` after the
first `set_inputs`, `ZeroCopyIo` after the first `bind`; the two cannot be mixed on one context.

How to use it::

    from npurt.runtime import Context, ContextOptions, InputData, MemRef
    from npurt.tensor import DType, Layout

    ctx = Context("model.onnx")                       # or .npurt bytes/path, a CompiledModel; soc from $NPURT_SOC
    # general (copying) path: user arrays in, arrays out
    ctx.set_inputs([InputData(0, image_u8, DType.UINT8, Layout.NHWC)])
    ctx.run()
    y, = ctx.get_outputs(want_float=True)
    # zero-copy path: bind device memory in the native (or an edited) format, then run repeatedly
    buf = ctx.device.alloc(ctx.input_attr(0, "native").size_with_stride, owner="app")
    ctx.bind(MemRef(buf), ctx.input_attr(0, "native"))
    ...                                                # every input and output must be bound
    ctx.run()
    ctx.destroy()                                      # frees what the context allocated; user memory stays

Ownership: the context owns its weight memory (shared with `dup()` copies and SHARE_WEIGHT contexts, refcounted),
its internal arena (unless `internal_outside`), its I/O path's buffers (the general path's I/O buffers, the staging
buffers of converted zero-copy bindings) and its scratch buffers; `destroy()` releases all of them in one place
(`_release_all`). Memory the user binds
stays the user's.

Threads: a context runs one thing at a time. A call that finds it busy in another thread fails with BUSY at once
(it does not wait), as does a run whose internal memory is being used by another running context (shared internal
memory). Separate contexts, including `dup()` copies (shared weights, own internal memory), run concurrently.
"""
from __future__ import annotations

import contextlib
import dataclasses
import logging
import threading
import time
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from npurt import forksafe
from npurt.errors import ErrorCode, NpuError
from npurt.memory import open_device
from npurt.model.attrs import TensorAttr
from npurt.runtime.binding import IoBinding, MemRef, run_guard
from npurt.runtime.general import GeneralIo, InputData
from npurt.runtime.io_path import IoPath
from npurt.runtime.loader import ModelFamily, load_family
from npurt.runtime.options import PRIORITIES, ContextOptions, MemSize
from npurt.runtime.perf import PERF_MODES, PerfCounters, op_timings, run_executor
from npurt.runtime.weights import WEIGHTS_UNSET, WeightStore, weight_digest
from npurt.runtime.zero_copy import ZeroCopyIo
from npurt.tensor import Layout

__all__ = ["ATTR_KINDS", "Context", "InputData"]

_pylog = logging.getLogger("npurt.runtime")
ATTR_KINDS = ("logical", "native", "native_nhwc", "current", "current_native")
LogSink = Callable[[str, str], None]


def _default_sink(level: str, message: str) -> None:
    _pylog.log({"error": logging.ERROR, "warning": logging.WARNING, "info": logging.INFO}.get(level, logging.DEBUG),
               message)


_next_id = iter(range(1, 1 << 62))


class Context:
    """A model loaded on a device (see the module doc for the lifecycle and the rules)."""

    def __init__(self, model: Any, *, device: Any = None, soc: str | None = None, coherence: str | None = None,
                 options: ContextOptions | None = None, share_weights_with: "Context | None" = None,
                 model_buffer: MemRef | None = None, dynamic_input: Any = None, log: LogSink | None = None,
                 name: str = "", plan: Any = None, any_soc: bool = False) -> None:
        """Load `model` on `device` (default: `open_device(soc, coherence)`; the context holds a reference).

        model: a CompiledModel, `.npurt` / ONNX bytes, a path, or an onnx.ModelProto (ONNX is compiled on the fly
        for the device's SoC; a compiled model for another SoC is PLATFORM_MISMATCH).
        share_weights_with: a live context of the same network whose weight memory this one uses.
        model_buffer: the model's bytes in device memory (model-buffer zero copy): weights are read in place; the
        memory must stay alive as long as the context.
        dynamic_input: shape sets for a dynamic-shape ONNX model (see `npurt.runtime.loader`).
        log: sink for warnings/info (level name, message); default the `npurt.runtime` Python logger.
        plan: a `MemoryPlan` to run with instead of the compiled model's own (e.g. the QNN mirror's HTP plan: VTCM
        placement with spill-fill overflow). It must lay the weights out as the model does and place every
        internal tensor of it inside its `internal_size`; not for dynamic-shape models.
        any_soc: accept a compiled model made for another SoC (the caller has checked it fits the device: the QNN
        mirror runs context binaries of any npurt layout on its HTP). Default: PLATFORM_MISMATCH.
        """
        self.id = next(_next_id)
        self.name = name or f"ctx{self.id}"
        self.options = options or ContextOptions()
        if self.options.priority not in PRIORITIES:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"priority must be one of {PRIORITIES}")
        if self.options.perf not in PERF_MODES:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"perf must be one of {PERF_MODES}, not {self.options.perf!r}")
        self._log = log or _default_sink
        self._lock = forksafe.lock()
        self._holder: int | None = None          # the thread inside a call (see _busy)
        self._weights_seen: int | None = None  # fingerprint of user weight memory at the last run
        self.destroyed = False
        self._weights: WeightStore | None = None
        self._owns_weights = False       # this context created the weight store (counts it in its DMA total)
        self._internal_buf = None
        self._internal_ref: MemRef | None = None
        self._model_buffer = model_buffer
        self._plan = plan
        self._io: IoPath | None = None     # the I/O path, set by the first set_inputs or bind
        # op type -> custom-op kernel (npurt.rknn.custom_op); executors consult it; `release()` runs at teardown
        self.custom_ops: dict[str, Any] = {}
        self._scratch: list[Any] = []      # runtime-internal staging buffers (alloc_scratch), freed at teardown
        self._bound_to: Any = None         # the executor bound by the last run
        self._bound_io: tuple[Any, int] | None = None   # (I/O path, its generation) that executor was bound to
        self._device_released = False
        self.device = open_device(device.soc) if device is not None else open_device(soc, coherence)
        try:
            self.profile = self.device.profile
            self._load(model, share_weights_with, dynamic_input, any_soc)
        except BaseException:
            self._release_all()
            raise

    # ------------------------------------------------------------------------------------------------------------
    # loading
    def _load(self, model: Any, share_from: "Context | None", dynamic_input: Any, any_soc: bool = False) -> None:
        model_view = None
        if self._model_buffer is not None:
            self._model_buffer.require_alive("model buffer")
            model_view = self._model_buffer.device_u8()
            model = memoryview(model_view)
        self.family: ModelFamily = load_family(model, self.device.soc, dynamic_input, any_soc)
        self.compiled = self.family.current
        if self._plan is not None:
            _check_plan(self._plan, self.compiled, self.family.dynamic)
        self.initial = self.compiled
        self.perf = PerfCounters(mode=self.options.perf)
        if self.options.perf == "predicted":
            from npurt.soc.npu_timing import npu_figures
            npu_figures(self.profile.name)          # NOT_SUPPORTED now, not at the first run, for SoCs without them
        self._predicted: tuple[tuple, tuple[int, list]] | None = None
        self.core_mask = 0
        self.batch_core_num = 1
        self.coherence_violations: list[str] = []
        self._executors: dict[int, Any] = {}
        self._dirty = True
        members = self.family.all()
        self.internal_capacity = max(int(self._plan_of(m).internal_size) for m in members)
        digest = weight_digest(self.initial)
        if any(m is not self.initial and weight_digest(m) != digest for m in members):
            raise NpuError(ErrorCode.NOT_SUPPORTED, "the shapes of this dynamic-shape model lay their weights out "
                                                    "differently; one weight memory cannot serve them all")
        if self.options.info_only:
            return
        opts = self.options
        if share_from is not None:
            share_from._require_live()
            store = share_from._weights
            if store is None or store.digest != weight_digest(self.compiled) or \
                    store.size != self.compiled.plan.weight_size:
                raise NpuError(ErrorCode.INVALID_MODEL,
                               "cannot share weight memory: the model differs from the source context's model")
            self._weights = store.acquire()
        else:
            self._owns_weights = True
            zero_copy_weights = None
            if model_view is not None and self.compiled.plan.weight_size and \
                    np.shares_memory(self.compiled.weight_blob, model_view):
                zero_copy_weights = self.compiled.weight_blob.reshape(-1).view(np.uint8)
            self._weights = WeightStore(self.compiled, self.device, self.name, opts.weights_outside,
                                        zero_copy_weights)
        if not opts.internal_outside and self.internal_capacity:
            placement = "ddr"
            if opts.sram:
                if self.profile.sram_size:
                    placement = "sram_first"
                else:
                    self._log("warning", f"{self.profile.name} has no NPU SRAM; internal memory is in DDR")
            self._internal_buf = self.device.alloc(self.internal_capacity, placement=placement, owner=self.name,
                                                   name="internal", cacheable=False)
            self._internal_ref = MemRef(self._internal_buf, 0, self.internal_capacity, "internal")

    def _plan_of(self, compiled: Any) -> Any:
        """The memory plan `compiled` runs with: the one given to the context, else the model's own."""
        return self._plan if self._plan is not None else compiled.plan

    @property
    def plan(self) -> Any:
        """The memory plan the current model runs with (`MemoryPlan`)."""
        return self._plan_of(self.compiled)

    # ------------------------------------------------------------------------------------------------------------
    # state guards
    def _require_live(self) -> None:
        if self.destroyed:
            raise NpuError(ErrorCode.INVALID_CONTEXT, f"context {self.name} has been destroyed")

    def _require_runnable(self, what: str) -> None:
        if self.options.info_only:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what}: the context was created for queries only (info_only)",
                           hint="info_only", what=what)

    def _io_path(self, kind: type) -> Any:
        """The context's I/O path if it is a `kind`, a new unattached one if there is none yet (see `_attached`);
        the general and zero-copy paths cannot be mixed on one context."""
        if self._io is None:
            return kind(self)
        if not isinstance(self._io, kind):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, "the general API (inputs_set/outputs_get) and the zero-copy "
                                                       "API (set_io_mem) cannot be mixed on one context")
        return self._io

    @contextlib.contextmanager
    def _attached(self, io: IoPath) -> Iterator[IoPath]:
        """Make `io` the context's I/O path for a call that fills it; a new path the call left empty (it failed
        before allocating anything) is dropped again, so a refused first call leaves the context unbound."""
        fresh = self._io is None
        self._io = io
        try:
            yield io
        except BaseException:
            if fresh and not io.owned_buffers() and io.generation == 0:
                self._io = None
            raise

    @property
    def io_path(self) -> IoPath | None:
        """The I/O path in use (`GeneralIo` / `ZeroCopyIo`), None before the first set_inputs or bind."""
        return self._io

    @contextlib.contextmanager
    def _busy(self, what: str, wait: bool = False) -> Iterator[None]:
        """Hold the context for one call; BUSY at once if another thread holds it (`wait`: wait for that
        thread's call to end instead). The holding thread itself is always BUSY (a call from inside its own run)."""
        me = threading.get_ident()
        if not self._lock.acquire(blocking=wait and self._holder != me):
            self._require_live()
            raise NpuError(ErrorCode.BUSY, f"{what}: context {self.name} is in use "
                                           f"{'by this very thread' if self._holder == me else 'by another thread'} "
                                           f"(one context runs one call at a time; use dup for parallel runs)")
        self._holder = me
        try:
            self._require_live()
            yield
        finally:
            self._holder = None
            self._lock.release()

    # ------------------------------------------------------------------------------------------------------------
    # queries
    @property
    def n_inputs(self) -> int:
        return self.compiled.n_inputs

    @property
    def n_outputs(self) -> int:
        return self.compiled.n_outputs

    def _attr_list(self, is_input: bool, kind: str) -> list[TensorAttr]:
        if kind not in ATTR_KINDS:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"attr kind must be one of {ATTR_KINDS}, got {kind!r}")
        side = "input" if is_input else "output"
        if kind == "current":
            model = self.compiled
            return model.native_nhwc_input_attrs if is_input else model.output_attrs
        if kind == "current_native":
            return getattr(self.compiled, f"native_{side}_attrs")
        prefix = {"logical": "", "native": "native_", "native_nhwc": "native_nhwc_"}[kind]
        return getattr(self.initial, f"{prefix}{side}_attrs")

    def input_attr(self, index: int, kind: str = "logical") -> TensorAttr:
        """A copy of input `index`'s attr: "logical" (INPUT_ATTR), "native", "native_nhwc", "current" (after
        set_input_shapes; NHWC for 4-D images) or "current_native"."""
        self._require_live()
        attrs = self._attr_list(True, kind)
        if not isinstance(index, int) or not 0 <= index < len(attrs):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"input index {index} >= input_num {len(attrs)}")
        return dataclasses.replace(attrs[index], dims=list(attrs[index].dims))

    def output_attr(self, index: int, kind: str = "logical") -> TensorAttr:
        """A copy of output `index`'s attr (kinds as `input_attr`; "current" is the logical NCHW output)."""
        self._require_live()
        attrs = self._attr_list(False, kind)
        if not isinstance(index, int) or not 0 <= index < len(attrs):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"output index {index} >= output_num {len(attrs)}")
        return dataclasses.replace(attrs[index], dims=list(attrs[index].dims))

    def input_shape(self, index: int) -> tuple[int, ...]:
        """The current logical (ONNX-order) shape of input `index`."""
        return tuple(self.compiled.storage[self.compiled.graph.inputs[index]].shape)

    def output_shape(self, index: int) -> tuple[int, ...]:
        return tuple(self.compiled.storage[self.compiled.graph.outputs[index]].shape)

    def dynamic_range(self, index: int) -> tuple[str, Layout, list[tuple[int, ...]]]:
        """(name, fmt, shapes) of input `index` of a dynamic-shape model: the shapes it accepts, in the layout of
        the CURRENT attr (NHWC for 4-D float images). INVALID_MODEL for a static model."""
        self._require_live()
        if not self.family.dynamic:
            raise NpuError(ErrorCode.INVALID_MODEL, "the model is not a dynamic-shape model (no input ranges)")
        if not isinstance(index, int) or not 0 <= index < self.n_inputs:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"input index {index} >= input_num {self.n_inputs}")
        attr = self.initial.native_nhwc_input_attrs[index]
        shapes = []
        for shape_set in self.family.shape_sets:
            s = tuple(shape_set[index])
            shapes.append((s[0], s[2], s[3], s[1]) if attr.fmt is Layout.NHWC and len(s) == 4 else s)
        return attr.name, attr.fmt, shapes

    def mem_size(self) -> MemSize:
        """Weight and internal sizes the model needs, device memory this context allocated, SRAM figures, and the
        host temp memory of its bound executors."""
        self._require_live()
        stats = self.device.stats()
        dma = sum(b.capacity for b in self._owned_buffers())
        if self._weights is not None and self._owns_weights:
            dma += self._weights.dma_bytes
        sram_used = self._internal_buf.sram_size if self._internal_buf is not None and self._internal_buf.alive else 0
        temp = sum(ex.temp.nbytes for ex in self._executors.values())
        return MemSize(int(self.initial.plan.weight_size), int(self.internal_capacity), int(dma),
                       int(self.profile.sram_size), int(stats.sram_free), int(sram_used), int(temp))

    def _owned_buffers(self) -> list[Any]:
        """Buffers this context allocated itself (not the shared weight store, not user memory)."""
        bufs = [self._internal_buf] + (self._io.owned_buffers() if self._io is not None else []) + self._scratch
        return [b for b in bufs if b is not None and b.alive]

    @property
    def internal_memory(self) -> MemRef | None:
        """Where the internal arena is: the context's own buffer or the user's memory (None until set)."""
        return self._internal_ref

    @property
    def internal_buffer(self) -> Any:
        """The internal arena buffer the context allocated itself (None with `internal_outside`)."""
        return self._internal_buf

    @property
    def weight_store(self) -> WeightStore | None:
        """The (possibly shared) weight memory of this context."""
        return self._weights

    @property
    def executor(self) -> Any:
        """The executor bound by the last run (None before the first run): for inspection (e.g. `tensor_view`)."""
        return self._bound_to

    def alloc_scratch(self, nbytes: int, name: str) -> Any:
        """A runtime-internal DDR buffer of `nbytes` (non-cacheable) that the context owns: counted in its DMA total,
        freed by `free_scratch` or at teardown (e.g. the float32 tensors a CPU custom op's callbacks read and write)."""
        self._require_live()
        buf = self.device.alloc(max(1, int(nbytes)), owner=self.name, name=name, cacheable=False)
        self._scratch.append(buf)
        return buf

    def free_scratch(self, buf: Any) -> None:
        """Free a buffer from `alloc_scratch` (idempotent)."""
        self._scratch = [b for b in self._scratch if b is not buf]
        if buf.alive:
            buf.free()

    def custom_string(self) -> str:
        return str((self.compiled.meta or {}).get("custom_string", ""))

    # ------------------------------------------------------------------------------------------------------------
    # I/O: the general (copying) and zero-copy paths
    def set_inputs(self, inputs: Sequence[InputData]) -> None:
        """General path: convert each user input (normalise, quantise, lay out, pad) into runtime memory."""
        with self._busy("inputs_set"):
            self._require_runnable("inputs_set")
            io = self._io_path(GeneralIo)
            if not self.options.flush_inputs:
                raise NpuError(ErrorCode.INVALID_ARGUMENT, "a context that does not flush its inputs (flush_inputs "
                                                           "off) cannot take copied inputs", hint="no_flush_inputs")
            with self._attached(io):
                io.set_inputs(inputs)

    def get_outputs(self, want_float: bool | Sequence[bool] = True,
                    indices: Sequence[int] | None = None) -> list[np.ndarray]:
        """General path: the outputs of the last run as new arrays in the logical (ONNX) layout — float32
        (want_float) or the model's output type."""
        with self._busy("outputs_get"):
            self._require_runnable("outputs_get")
            io = self._io_path(GeneralIo)
            if not self.options.invalidate_outputs:
                raise NpuError(ErrorCode.INVALID_ARGUMENT, "a context that does not invalidate its outputs "
                                                           "(invalidate_outputs off) cannot hand out copied outputs",
                               hint="no_invalidate_outputs")
            return io.get_outputs(want_float, indices)

    def bind(self, ref: MemRef, attr: TensorAttr) -> IoBinding:
        """Zero-copy path: bind `ref` to the input or output that `attr.name` names and return the binding made.
        `attr` is a queried attr, possibly with `type` / `fmt` / `w_stride` / `pass_through` edited: the native
        format binds the memory directly; another format is converted by the runtime around each run."""
        with self._busy("set_io_mem"):
            self._require_runnable("set_io_mem")
            io = self._io_path(ZeroCopyIo)
            if self.options.internal_outside and self._internal_ref is None and self.internal_capacity:
                raise NpuError(ErrorCode.INVALID_ARGUMENT, "internal memory must be set before input / output memory "
                                                           "(the context was created with internal_outside)",
                               hint="internal_before_io")
            ref.require_alive(f"tensor {attr.name!r}")
            if self._internal_ref is not None and ref.overlaps(self._internal_ref):
                raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tensor {attr.name!r}: this memory is the context's "
                                                           f"internal memory; inputs and outputs need their own")
            with self._attached(io):
                return io.bind(ref, attr)

    def use_io(self, io: IoPath) -> None:
        """Plug in an I/O path built outside the runtime (e.g. the QNN graph's, a `ZeroCopyIo` that converts its
        quantized tensors around each run), before the first set_inputs or bind; the context then drives it like
        its own and releases it at teardown."""
        with self._busy("use_io"):
            if self._io is not None and self._io is not io:
                raise NpuError(ErrorCode.INVALID_ARGUMENT, f"context {self.name} already has an I/O path")
            self._io = io

    def bindings(self) -> tuple[list[IoBinding | None], list[IoBinding | None]]:
        """The current zero-copy bindings (inputs, outputs); None where nothing is bound."""
        if self._io is None:
            return [None] * self.n_inputs, [None] * self.n_outputs
        return self._io.bindings()

    # ------------------------------------------------------------------------------------------------------------
    # memory the user provides
    def set_weight_memory(self, ref: MemRef) -> None:
        """Use user memory for the weights (contexts created with `weights_outside`); the runtime copies them in."""
        with self._busy("set_weight_memory"):
            self._require_runnable("set_weight_memory")
            if not self.options.weights_outside:
                raise NpuError(ErrorCode.INVALID_ARGUMENT, "weight memory can be set only on a context created with "
                                                           "weights_outside", hint="weights_not_outside")
            self._weights.set_user_memory(ref)
            self._weights_seen = None
            self._dirty = True
            self._executors.clear()        # weights are decoded at bind: rebind from the new memory

    def set_internal_memory(self, ref: MemRef) -> None:
        """Use user memory for the internal arena (contexts created with `internal_outside`). The memory may be
        made of parts (e.g. fast memory followed by DDR): a `MemRef` over a `Device.compose` buffer, whose pieces
        are contiguous in host and device addresses (the QNN mirror's VTCM + spill-fill arena)."""
        with self._busy("set_internal_memory"):
            self._require_runnable("set_internal_memory")
            if not self.options.internal_outside:
                raise NpuError(ErrorCode.INVALID_ARGUMENT, "internal memory can be set only on a context created with "
                                                           "internal_outside", hint="internal_not_outside")
            if ref.size < self.internal_capacity:
                raise NpuError(ErrorCode.INVALID_ARGUMENT, f"internal memory size must be >= "
                                                           f"{self.internal_capacity}, but is: {ref.size}")
            ref.require_alive("internal memory")
            self._internal_ref = ref
            self._dirty = True

    # ------------------------------------------------------------------------------------------------------------
    # running
    def _executor(self) -> Any:
        ex = self._executors.get(id(self.compiled))
        if ex is None:
            from npurt.exec.executor import Executor
            ex = Executor(self.compiled, self._plan_of(self.compiled), cache_weights=self.options.cache_weights,
                          custom_ops=self.custom_ops)
            self._executors[id(self.compiled)] = ex
            self._dirty = True
        return ex

    def _check_ready(self) -> None:
        if self._weights is None or not self._weights.ready:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, WEIGHTS_UNSET, hint="weights_unset")
        if self.internal_capacity and self._internal_ref is None:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, "internal memory is not set: the context was created with "
                                                       "internal_outside; set it before running",
                           hint="internal_unset")
        if self._internal_ref is not None:
            self._internal_ref.require_alive("internal memory")
        if self._model_buffer is not None:
            self._model_buffer.require_alive("model buffer (model_buffer_zero_copy)")
        (self._io or ZeroCopyIo(self)).check_ready()     # nothing bound yet: the zero-copy path's refusal

    def _bind_executor(self, ex: Any) -> None:
        ins, outs = self._io.executor_views()
        internal = self._internal_ref.device_u8() if self._internal_ref is not None else np.empty(0, np.uint8)
        ex.bind(self._weights.view(), internal[:max(self.plan.internal_size, 0)], ins, outs)
        self._dirty = False
        self._bound_to = ex
        self._bound_io = (self._io, self._io.generation)

    def run(self, collect_perf: bool | None = None) -> None:
        """Run the model once over the bound memory (see the module doc for what must be bound first);
        `collect_perf` overrides the option of that name for this run (a QNN DETAILED profile asks per call)."""
        collect = self.options.collect_perf if collect_perf is None else bool(collect_perf)
        with self._busy("run"):
            self._require_runnable("run")
            t0 = time.perf_counter_ns()
            self._check_ready()
            self._notice_weight_changes()
            ex = self._executor()
            if self._dirty or self._bound_to is not ex or self._bound_io != (self._io, self._io.generation):
                self._bind_executor(ex)
            ranges = self._internal_ref.file_ranges() if self._internal_ref is not None else ()
            run_guard.enter(self.id, ranges, "internal memory")
            try:
                self._io.before_run()
                run_us, raw = run_executor(ex, collect)
                self._io.after_run()
            finally:
                run_guard.leave(self.id)
            self.perf.runs += 1
            self.perf.run_us = int(run_us)
            self.perf.total_us = (time.perf_counter_ns() - t0) // 1000
            if self.options.perf == "predicted":
                self.perf.run_us, ops = self._prediction()
                self.perf.total_us = self.perf.run_us
                self.perf.ops = list(ops) if collect else []
            else:
                self.perf.ops = op_timings(self.compiled, raw) if collect else []
            word = " (predicted)" if self.options.perf == "predicted" else ""
            for op in self.perf.ops:
                self._log("verbose", f"layer {op.index} {op.op_type} {op.name}: {op.time_us} us{word}")

    def _notice_weight_changes(self) -> None:
        """User-owned weight memory (`weights_outside`) is what the NPU reads on every run: when its bytes changed
        since the executors decoded them, decode them again (the decoded form is only a cache)."""
        if not (self.options.weights_outside and self.options.cache_weights) or self._weights is None:
            return
        seen = self._weights.fingerprint()
        if seen != self._weights_seen:
            if self._weights_seen is not None:
                self._executors.clear()
                self._dirty = True
            self._weights_seen = seen

    def _prediction(self) -> tuple[int, list]:
        """The timing model's (run µs, per-op timings) for this context's model, SoC, core mask and SRAM (computed
        once per model / cores / SRAM: the prediction is a pure function of them)."""
        from npurt.runtime.perf import cores_of, predicted_timings
        from npurt.runtime.report import context_layout
        cores = cores_of(self.core_mask, self.profile.npu_cores)
        sram = context_layout(self).sram_size
        key = (id(self.compiled), id(self.plan), cores, sram)
        if self._predicted is None or self._predicted[0] != key:
            self._predicted = (key, predicted_timings(self.compiled, self.profile.name, cores, sram, self.plan))
            self.perf.predicted_for = f"{self.profile.name}, {cores} core(s), SRAM {sram} B"
        return self._predicted[1]

    def perf_detail(self, not_collected: str = "per-op timings were not collected (the context was created "
                                               "without collect_perf)") -> str:
        """The timing table of the last run: per op with `collect_perf`, else the run's total and the line
        `not_collected` (the board answers RKNN_QUERY_PERF_DETAIL without the flag too, with what it has)."""
        from npurt.runtime.perf import format_perf_detail
        self._require_live()
        return format_perf_detail(self.perf, None if self.options.collect_perf else not_collected)

    # ------------------------------------------------------------------------------------------------------------
    # dynamic shapes, cores, dup
    def set_input_shapes(self, shapes: Sequence[Sequence[int]]) -> None:
        """Switch a dynamic-shape model to one of its declared shape sets (logical ONNX-order shapes, one per
        input). Zero-copy bindings are dropped (re-bind with the CURRENT attrs); general inputs must be set again.
        Memory is not reallocated: internal and general I/O memory were sized for the largest shape set."""
        with self._busy("set_input_shapes"):
            self._require_runnable("set_input_shapes")
            if not self.family.dynamic:
                raise NpuError(ErrorCode.INVALID_MODEL, "the model is not a dynamic-shape model")
            if len(shapes) != self.n_inputs:
                raise NpuError(ErrorCode.INVALID_ARGUMENT,
                               f"{len(shapes)} shapes given, the model has {self.n_inputs} inputs")
            compiled = self.family.for_shapes(shapes)
            if compiled is self.compiled:
                return
            self.compiled = compiled
            if self._io is not None:
                self._io.reset()
            self._dirty = True

    def set_core_mask(self, mask: int) -> None:
        """Which NPU cores to use: 0 (auto), a single core bit, CORE_0_1 (3), CORE_0_1_2 (7) or 0xffff (all);
        NOT_SUPPORTED on single-core SoCs, INVALID_ARGUMENT for masks naming missing cores."""
        with self._busy("set_core_mask"):
            cores = self.profile.npu_cores
            if cores < 2:
                raise NpuError(ErrorCode.NOT_SUPPORTED, f"{self.profile.name} has a single NPU core; core masks are "
                                                        f"not supported")
            valid = {0, 0xFFFF} | {(1 << k) for k in range(cores)} | {3} | ({7} if cores >= 3 else set())
            if not isinstance(mask, int) or mask not in valid:
                raise NpuError(ErrorCode.INVALID_ARGUMENT, f"Not support core mask: {mask}")
            self.core_mask = mask

    def set_batch_core_num(self, n: int) -> None:
        """How many cores a multi-batch run spreads over: 1..npu_cores."""
        with self._busy("set_batch_core_num"):
            cores = self.profile.npu_cores
            if cores < 2:
                raise NpuError(ErrorCode.NOT_SUPPORTED, f"{self.profile.name} has a single NPU core")
            if not isinstance(n, int) or not 1 <= n <= cores:
                raise NpuError(ErrorCode.INVALID_ARGUMENT, f"core_num must be 1..{cores}, got {n}")
            self.batch_core_num = n

    def dup(self, name: str = "") -> "Context":
        """A new context of the same model: weight memory shared, internal memory its own; not for dynamic-shape
        models. The copy starts unbound."""
        with self._busy("dup_context"):
            self._require_runnable("dup_context")
            if self.family.dynamic:
                raise NpuError(ErrorCode.NOT_SUPPORTED, "dup_context is not supported for dynamic-shape models")
            return Context(self.compiled, device=self.device, options=self.options, share_weights_with=self,
                           log=self._log, name=name, plan=self._plan, any_soc=self.compiled.soc != self.device.soc)

    # ------------------------------------------------------------------------------------------------------------
    # teardown: the one place the context's resources are released
    def destroy(self, wait: bool = False) -> None:
        """Release everything the context allocated (weights when it is the last holder, internal arena, I/O and
        staging buffers) and its device reference. INVALID_CONTEXT if already destroyed; BUSY while running, with
        nothing released (`wait`: wait for a call in another thread to end, then release everything)."""
        with self._busy("destroy", wait):
            self._release_all()
            self.destroyed = True

    def _release_all(self) -> None:
        if self._io is not None:
            self._io.release()
        if self._internal_buf is not None:
            if self._internal_buf.alive:
                self._internal_buf.free()
            self._internal_buf = None
        self._internal_ref = None
        if self._weights is not None:
            self._weights.release()
            self._weights = None
        self._executors = {}
        self._bound_to = self._bound_io = None
        for op in list(self.custom_ops.values()):
            getattr(op, "release", lambda: None)()       # custom ops free their device memory, call destroy
        self.custom_ops = {}
        for buf in list(self._scratch):
            self.free_scratch(buf)
        if not self._device_released:      # a destroy that failed part-way must not close the device twice
            self._device_released = True
            self.device.close()

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self.destroyed:
            self.destroy()

    def __repr__(self) -> str:
        state = "destroyed" if self.destroyed else (self._io.name if self._io is not None else "unbound")
        return f"<Context {self.name} {getattr(self, 'compiled', None) and self.compiled.graph.name} {state}>"


def _check_plan(plan: Any, compiled: Any, dynamic: bool) -> None:
    """An external memory plan must fit `compiled`: same weight layout, every internal tensor placed inside it."""
    if dynamic:
        raise NpuError(ErrorCode.NOT_SUPPORTED, "an external memory plan cannot serve a dynamic-shape model")
    own = compiled.plan
    if plan.weight_size != own.weight_size or dict(plan.weight_offsets) != dict(own.weight_offsets):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "the memory plan lays the weights out differently from the model")
    if set(plan.offsets) != set(own.offsets):
        missing = sorted(set(own.offsets) - set(plan.offsets))[:5]
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"the memory plan does not place the model's internal tensors "
                                                   f"(missing e.g. {missing})")
    for name, off in plan.offsets.items():
        if off < 0 or off + plan.sizes[name] > plan.internal_size or plan.sizes[name] < own.sizes[name]:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"the memory plan places {name!r} outside its "
                                                       f"{plan.internal_size}-byte arena or in too few bytes")
