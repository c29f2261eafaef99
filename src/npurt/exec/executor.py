"""The executor: walks a compiled model's schedule over bound memory.

`bind(weights, internal, inputs, outputs)` takes uint8 views — the weight region, the internal arena, one view
per model input and output (in their native attr layout and type) — validates their sizes and precomputes, per
step, the kernel, its attrs, one `SlotReader` per input and one `SlotWriter` per output. `run()` then only calls
`read()`, the kernel, `write()` for each step.

Every intermediate activation lives in its planned slot of the internal arena, in native layout and type. Kernels
see float32 logical arrays: each read converts into one float32 scratch buffer whose size is the largest
per-step need (bounded and reused; never a copy of all activations). That scratch and the in-place steps' are one
temp memory (`npurt.exec.temp`, `Executor.temp`; the runtime reports it as `mem_size().temp_size`). Weights are
decoded from the bound weights view into their float32 compute form once per bind (`cache_weights=True`, the
default; rebind after changing weight memory) or on every run (`cache_weights=False`).

Threads: `run()` sets numpy's OpenBLAS to `policy_threads()` ($NPURT_BLAS_THREADS, default 1; read at bind), or
to 1 when the compiled steps split over $NPURT_EXEC_THREADS > 1: OpenBLAS's idle workers spin on the cores the
compiled steps' workers need (two threads each on 2 cores: MobileNetV2-like fp16 10.0 ms, 5.8 ms with BLAS on one).
See `npurt.exec.kernels.blas` for the measurements behind the default.
"""
from __future__ import annotations

import math
import time
from typing import Any, Callable, MutableMapping

import numpy as np

import npurt._kernels as _kernels
from npurt.errors import ErrorCode, NpuError
from npurt.exec import inplace
from npurt.exec.bind import SlotReader, SlotWriter, read_slot, write_slot
from npurt.exec.evaluate import kernel_attrs
from npurt.exec.kernels.blas import blas_threads, policy_threads, set_blas_threads, swap_blas_threads
from npurt.exec.temp import TempMemory
from npurt.memory.mapping import typed_view
from npurt.model.compiled import CompiledModel
from npurt.model.weights import centred_codes, decode_weight, stored_view
from npurt.plan.model_plan import MemoryPlan
from npurt.tensor import DType


def _kernel_for(op_type: str) -> Callable[[list, dict], list]:
    from npurt.exec.kernels import get_kernel, supported_ops
    if op_type in supported_ops():
        return get_kernel(op_type)
    raise NpuError(ErrorCode.NOT_SUPPORTED, f"op {op_type!r} is not supported")


def _custom_kernel(custom_ops: MutableMapping[str, Callable], node: Any) -> Callable[[list, dict], list]:
    """A kernel that runs `node` through the custom op registered for its type, looked up when it runs (so a
    registration after the executor was built counts). Custom-op callables take (node, inputs, attrs)."""
    def run(inputs: list, attrs: dict) -> list:
        fn = custom_ops.get(node.op_type)
        if fn is None:
            raise NpuError(ErrorCode.NOT_SUPPORTED, f"node {node.name!r}: custom op {node.op_type!r} is not "
                                                    f"registered", hint="custom_op_unregistered")
        return fn(node, inputs, attrs)
    return run


class _WeightReader:
    """Reads one weight: the cached decoded array, or decodes from the weights view on every call."""

    def __init__(self, decode: Callable[[], np.ndarray], cache: bool) -> None:
        self.decode = decode
        self.value = decode() if cache else None

    def read(self) -> np.ndarray:
        return self.value if self.value is not None else self.decode()


def _inplace_step(run: Callable[[], None]) -> Callable[[list, dict], tuple]:
    """A in-place step in the (kernel, readers, writers) shape: no readers, no writers, it does its own I/O."""
    def step(inputs: list, attrs: dict) -> tuple:
        run()
        return ()
    step.inplace_run = run
    return step


class _Missing:
    @staticmethod
    def read() -> None:
        return None


def _as_u8(name: str, view: Any) -> np.ndarray:
    """`view` as a flat uint8 view (no copy); INVALID_ARGUMENT if it is not contiguous uint8 memory."""
    if not isinstance(view, np.ndarray) or view.dtype != np.uint8:
        got = type(view).__name__ + (f" {view.dtype}" if isinstance(view, np.ndarray) else "")
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{name}: expected a numpy uint8 view, got {got}")
    if not view.flags.c_contiguous:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{name}: memory view must be contiguous")
    if not view.flags.writeable and name != "weights":
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{name}: memory view is read-only")
    return view.reshape(-1)


def _execute(fn: Callable[[list, dict], Any], attrs: dict, readers: tuple, writers: tuple, node: Any) -> None:
    """One prepared step: read the inputs, run the kernel, write the outputs; a non-NpuError failure of a kernel is
    npurt's own bug: INTERNAL, naming the node."""
    try:
        results = fn([r() for r in readers], attrs)
    except NpuError:
        raise
    except Exception as exc:
        raise NpuError(ErrorCode.INTERNAL, f"node {node.name!r} ({node.display_type}) failed: {type(exc).__name__}: "
                                           f"{exc}") from exc
    for write, y in zip(writers, results):
        if write is not None:
            write(y)


def _call(fn: Callable[[list, dict], Any], attrs: dict, readers: tuple, writers: tuple, node: Any) -> Callable[[], None]:
    """One prepared step as a zero-argument function for `Executor.run`'s loop: an in-place step's own function, or
    read / kernel / write (errors are named by the loop)."""
    inplace_run = getattr(fn, "inplace_run", None)
    if inplace_run is not None:
        return inplace_run

    def generic() -> None:
        for write, y in zip(writers, fn([r() for r in readers], attrs)):
            if write is not None:
                write(y)
    return generic


class Executor:
    """Runs `compiled` over bound memory laid out by `plan` (default: the compiled model's own plan)."""

    def __init__(self, compiled: CompiledModel, plan: MemoryPlan | None = None, cache_weights: bool = True,
                 custom_ops: MutableMapping[str, Callable] | None = None, inplace: bool = True) -> None:
        """custom_ops: op type -> callable(node, inputs, attrs) (the context's registered custom ops; the mapping
        is kept, not copied). A registered type overrides the built-in kernel; custom-domain nodes always go
        through it. inplace: compute the ops `npurt.exec.inplace` handles directly on their NC1HWC2 slots (same
        slots, same stored results up to float rounding); False forces the generic read/kernel/write path."""
        self.model = compiled
        self.plan = plan or compiled.plan
        self.cache_weights = cache_weights
        self.inplace = inplace
        self.custom_ops = custom_ops if custom_ops is not None else {}
        g = compiled.graph
        self._kernels = [(self._resolve(n), kernel_attrs(n, g.opset)) for n in g.nodes]
        self._steps: list[tuple] = []
        self._views: dict[str, tuple[np.ndarray, int]] = {}
        self.temp = TempMemory()            # the steps' shared scratch, (re)taken at bind; `temp.nbytes` counts it
        self._bound = False

    def _resolve(self, node: Any) -> Callable[[list, dict], list]:
        """The kernel of `node`: a registered custom op of its type, or (custom-domain nodes) one looked up when it
        runs; otherwise the kernel registry."""
        if getattr(node, "domain", "") or node.op_type in self.custom_ops:
            return _custom_kernel(self.custom_ops, node)
        return _kernel_for(node.op_type)

    # --- sizes -----------------------------------------------------------------------------------

    def input_size(self, i: int) -> int:
        return self.model.native_input_attrs[i].size_with_stride

    def output_size(self, i: int) -> int:
        return self.model.native_output_attrs[i].size_with_stride

    # --- binding ---------------------------------------------------------------------------------

    def bind(self, weights: np.ndarray, internal: np.ndarray, inputs: list[np.ndarray],
             outputs: list[np.ndarray]) -> None:
        """Bind memory; sizes are validated (INVALID_ARGUMENT) and all per-run conversions are prepared."""
        m, plan = self.model, self.plan
        w = _as_u8("weights", weights)
        a = _as_u8("internal", internal)
        if w.size < plan.weight_size:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"weights: {w.size} bytes bound, the model needs "
                                                       f"{plan.weight_size}")
        if a.size < plan.internal_size:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"internal: {a.size} bytes bound, the model needs "
                                                       f"{plan.internal_size}")
        if len(inputs) != m.n_inputs or len(outputs) != m.n_outputs:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"bind needs {m.n_inputs} input and {m.n_outputs} output "
                                                       f"views, got {len(inputs)} and {len(outputs)}")
        views: dict[str, tuple[np.ndarray, int]] = {}
        for i, (name, v) in enumerate(zip(m.graph.inputs, inputs)):
            raw = _as_u8(f"input {i} ({name})", v)
            if raw.size < self.input_size(i):
                raise NpuError(ErrorCode.INVALID_INPUT, f"input {i} ({name}): {raw.size} bytes bound, needs "
                                                        f"{self.input_size(i)}")
            views[name] = (raw, 0)
        for i, (name, v) in enumerate(zip(m.graph.outputs, outputs)):
            raw = _as_u8(f"output {i} ({name})", v)
            if raw.size < self.output_size(i):
                raise NpuError(ErrorCode.INVALID_OUTPUT, f"output {i} ({name}): {raw.size} bytes bound, needs "
                                                         f"{self.output_size(i)}")
            views[name] = (raw, 0)
        for name, off in plan.offsets.items():
            views[name] = (a, off)
        self._views = views
        self._steps = self._prepare(w, views)
        self._calls = [_call(*step) for step in self._steps]
        self._threads = 1 if _kernels.exec_threads() > 1 else policy_threads()
        self._bound = True

    def _weight_reader(self, name: str, w: np.ndarray) -> _WeightReader:
        m, plan = self.model, self.plan
        entry = m.weights[name]

        def decode() -> np.ndarray:
            stored = stored_view(entry, w, plan.weight_offsets[name])
            scales, zps = (stored_view(m.weights[e], w, plan.weight_offsets[e]) if e else None
                           for e in (entry.scales, entry.zero_points))
            return decode_weight(entry, stored, scales, zps)

        return _WeightReader(decode, self.cache_weights)

    def _weight_codes(self, name: str, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, int | None] | None:
        """(integer codes, scales, axis) of weight `name` when it is stored quantised as int8, else None: the stored
        int8 codes, or for asymmetric weights code - zero point as int16 (value = codes * scale either way)."""
        m, plan = self.model, self.plan
        entry = m.weights.get(name)
        if entry is None or entry.dtype is not DType.INT8 or not entry.scales:
            return None
        scales = stored_view(m.weights[entry.scales], w, plan.weight_offsets[entry.scales])
        codes = stored_view(entry, w, plan.weight_offsets[name])
        if entry.zero_points:
            zps = stored_view(m.weights[entry.zero_points], w, plan.weight_offsets[entry.zero_points])
            codes = centred_codes(codes, zps, entry.axis)
        return codes, np.asarray(scales, np.float32), entry.axis

    def _prepare(self, w: np.ndarray, views: dict[str, tuple[np.ndarray, int]]) -> list[tuple]:
        m = self.model
        g = m.graph
        temp = self.temp
        temp.clear()
        # The slot conversions' float32 region: the largest per-step total of input conversions plus output
        # quantisation, taken before the in-place steps share (and may grow) it.
        need = 0
        for node in g.nodes:
            ins = sum(SlotReader.needs_scratch(m.storage[t]) for t in node.inputs if t and t in m.storage)
            outs = max([SlotWriter.needs_scratch(m.storage[t]) for t in node.outputs if t] + [0])
            need = max(need, ins + outs)
        scratch = temp.take("float32", np.float32, max(need, 1))
        out_max = max([math.prod(m.storage[t].shape) for n in g.nodes for t in n.outputs if t] + [1])
        dtypes = {s.dtype for s in m.storage.values()}          # mixed precision: fp16 and int8 side by side
        half = temp.take("float16", np.float16, out_max) if DType.FLOAT16 in dtypes else None
        in_max = max([math.prod(s.dims) for s in m.storage.values()] + [1])
        stage = temp.take("int8", np.int8, in_max) if DType.INT8 in dtypes else None
        weights = {name: self._weight_reader(name, w) for name in g.constants}
        ctx = inplace.StepBinding(m.storage, views, {n: r.value for n, r in weights.items() if r.value is not None},
                                  temp, lambda name: self._weight_codes(name, w)) if self.inplace else None
        steps = []
        for node, (fn, attrs) in zip(g.nodes, self._kernels):
            if ctx is not None and not getattr(node, "domain", "") and node.op_type not in self.custom_ops:
                step = inplace.prepare(node, fn, attrs, ctx)
                if step is not None:
                    steps.append((_inplace_step(step), attrs, (), (), node))
                    continue
            cursor = 0
            readers = []
            for t in node.inputs:
                if not t:
                    readers.append(_Missing)
                elif t in weights:
                    readers.append(weights[t])
                else:
                    st = m.storage[t]
                    k = SlotReader.needs_scratch(st)
                    raw, off = views[t]
                    readers.append(SlotReader(st, raw, off, scratch[cursor:cursor + k] if k else None, stage))
                    cursor += k
            writers = []
            for t in node.outputs:
                if not t:
                    writers.append(None)
                    continue
                st = m.storage[t]
                raw, off = views[t]
                writers.append(SlotWriter(st, raw, off, scratch[cursor:] if st.quantized else None, half))
            steps.append((fn, attrs, tuple(r.read for r in readers), tuple(wr.write if wr else None for wr in writers),
                          node))
        return steps

    # --- running ---------------------------------------------------------------------------------

    def _check_bound(self) -> None:
        if not self._bound:
            raise NpuError(ErrorCode.INVALID_CONTEXT, "executor is not bound to memory; call bind() first")

    def run(self) -> None:
        """Execute the schedule once over the bound memory: a flat loop over the steps prepared at bind, with the
        executor's OpenBLAS thread count, restored after (numpy code that runs later in the process — a calibration,
        say — sums as it would in a fresh one)."""
        self._check_bound()
        i = 0
        restore = swap_blas_threads(self._threads)      # not `blas_threads`: its generator costs microseconds a run
        try:
            for i, call in enumerate(self._calls):
                call()
        except NpuError:
            raise
        except Exception as exc:
            node = self._steps[i][-1]
            raise NpuError(ErrorCode.INTERNAL, f"node {node.name!r} ({node.display_type}) failed: "
                                               f"{type(exc).__name__}: {exc}") from exc
        finally:
            if restore is not None:
                set_blas_threads(restore)

    def run_profiled(self) -> list[tuple[int, Any]]:
        """Execute once like `run`, returning [(microseconds, node)] per step (conversions included)."""
        self._check_bound()
        clock = time.perf_counter_ns
        timings = []
        with blas_threads(self._threads):
            for step in self._steps:
                t0 = clock()
                _execute(*step)
                timings.append(((clock() - t0) // 1000, step[-1]))
        return timings

    def run_step(self, index: int) -> None:
        """Execute step `index` of the schedule alone (it reads its inputs' slots as they are now)."""
        self._check_bound()
        with blas_threads(self._threads):
            _execute(*self._steps[index])

    # --- inspection ------------------------------------------------------------------------------

    def read_tensor(self, name: str) -> np.ndarray:
        """A copy of activation `name`'s current logical value (float32, dequantised, ONNX layout)."""
        self._check_bound()
        st = self.model.storage[name]
        raw, off = self._views[name]
        return read_slot(st, raw, off)

    def write_tensor(self, name: str, value: np.ndarray) -> None:
        """Store a logical value into internal or output activation `name`'s slot (packed, cast or quantised as
        the tensor is stored); model inputs are written with `pack_input`."""
        self._check_bound()
        st = self.model.storage[name]
        if name in self.model.graph.inputs:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{name!r} is a model input: write it with pack_input")
        raw, off = self._views[name]
        value = np.asarray(value, np.float32) if st.logical_dtype.startswith("float") else np.asarray(value)
        write_slot(st, raw, value, off)

    def tensor_view(self, name: str) -> np.ndarray:
        """The stored bytes of activation `name` as a typed array in its native dims (a view of bound memory)."""
        self._check_bound()
        st = self.model.storage[name]
        raw, off = self._views[name]
        return typed_view(raw, st.dtype.numpy_dtype, st.dims, off)


def allocate(compiled: CompiledModel) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """Plain host buffers for a quick run: (weights filled from the model, internal, inputs, outputs)."""
    weights = compiled.weight_blob.copy()
    internal = np.zeros(max(compiled.plan.internal_size, 1), np.uint8)
    inputs = [np.zeros(max(a.size_with_stride, 1), np.uint8) for a in compiled.native_input_attrs]
    outputs = [np.zeros(max(a.size_with_stride, 1), np.uint8) for a in compiled.native_output_attrs]
    return weights, internal, inputs, outputs

