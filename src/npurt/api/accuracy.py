"""Per-tensor accuracy analysis of a quantised model against a float reference, as rknn-toolkit2's
`accuracy_analysis`: for every activation of the compiled graph (the memory report's tensors, in schedule order)

- **entire** error: npurt's value when the whole model runs quantised, against the reference;
- **single** error: the op that produces the tensor run alone on the reference's values of its inputs (stored, so
  quantised, as the model stores them), so only that op's own error shows.

The reference is onnxruntime on the original ONNX with the intermediate tensors exposed as outputs (float32, graph
optimisations off; with `reference="auto"` and no onnxruntime installed, npurt's own float32 run of the optimised
graph, `FloatReference`); a compiled tensor the reference does not have (one npurt made, e.g. a precision
conversion) is computed from the reference values of its inputs by npurt's float kernels. Errors are the cosine
similarity and the normalised euclidean distance ||x - ref|| / ||ref||, each the mean over the analysed inputs. Both
runs are the executor's own steps (the in-place paths included) over the model's planned memory.
"""
from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.model.sources import read_onnx

ADVICE_COSINE = 0.99
"""A quantised layer is worth keeping in fp16 (or recalibrating) when its single cosine is below this: it loses
that much even fed exact inputs. Above it, int8 costs the layer less than the advice would gain."""
_FLOAT_TYPES = ("FLOAT", "FLOAT16")


def cosine(x: np.ndarray, ref: np.ndarray) -> float:
    """Cosine similarity of two tensors (1.0 when both are zero, 0.0 when only one is)."""
    a, b = np.ravel(x).astype(np.float64), np.ravel(ref).astype(np.float64)
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0 or nb == 0:
        return 1.0 if na == nb else 0.0
    return float(np.clip(a @ b / (na * nb), -1.0, 1.0))


def euclidean(x: np.ndarray, ref: np.ndarray) -> float:
    """Normalised euclidean distance ||x - ref|| / ||ref|| (||x|| when ref is zero)."""
    a, b = np.ravel(x).astype(np.float64), np.ravel(ref).astype(np.float64)
    d = float(np.linalg.norm(a - b))
    nb = float(np.linalg.norm(b))
    return d / nb if nb else d


@dataclass
class TensorError:
    """One row: a tensor, the op producing it ("input" for a model input), its stored type, and its entire /
    single errors."""

    index: int
    name: str
    produced_by: str
    dtype: str
    entire_cosine: float
    entire_euclidean: float
    single_cosine: float
    single_euclidean: float


@dataclass
class AccuracyReport:
    """The analysis of one compiled model over `samples` inputs (rows in schedule order)."""

    soc: str
    precision: str
    quantized_algorithm: str
    float_layers: list[str]
    samples: int
    tensors: list[TensorError]
    seconds: float = 0.0
    meta: dict[str, Any] = field(default_factory=dict)
    optimize: dict[str, dict[str, int]] = field(default_factory=dict)
    """The quantisation techniques the model was compiled with and what each did (`npurt.model.techniques`)."""

    def worst(self, n: int = 3, below: float = ADVICE_COSINE) -> list[TensorError]:
        """Up to `n` quantised layers (int tensors an op produces: what `float_layers` can change) whose single
        cosine is below `below`, lowest first: the layers that lose most on their own. Empty when none does."""
        layers = [r for r in self.tensors if r.produced_by != "input" and r.dtype not in _FLOAT_TYPES
                  and r.single_cosine < below]
        return sorted(layers, key=lambda r: (r.single_cosine, -r.single_euclidean))[:n]

    def outputs(self) -> list[TensorError]:
        """The rows of the model outputs."""
        return [r for r in self.tensors if r.name in self.meta.get("outputs", ())]

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["worst"] = [r.name for r in self.worst()]
        d["advice_cosine"] = ADVICE_COSINE
        return d

    def plot(self, path: "str | os.PathLike") -> None:
        """Save both cosine curves over depth (PNG/SVG/PDF by suffix); matplotlib with the Agg backend."""
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise NpuError(ErrorCode.NOT_SUPPORTED, f"the accuracy plot needs matplotlib: {exc}") from None
        x = [r.index for r in self.tensors]
        fig, ax = plt.subplots(figsize=(10, 4.5))
        ax.plot(x, [r.entire_cosine for r in self.tensors], marker="o", markersize=3, label="entire")
        ax.plot(x, [r.single_cosine for r in self.tensors], marker="s", markersize=3, label="single")
        for r in self.worst():
            ax.annotate(r.name, (r.index, r.single_cosine), fontsize=7, rotation=20)
        ax.set_xlabel("tensor (schedule order)")
        ax.set_ylabel("cosine vs float reference")
        ax.set_title(f"{self.precision} on {self.soc}, {self.quantized_algorithm}, {self.samples} input(s)")
        ax.grid(alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.fspath(path))
        plt.close(fig)


def require_onnxruntime() -> Any:
    """The onnxruntime module, or NOT_SUPPORTED saying how to install it (the analysis' float reference)."""
    try:
        import onnxruntime
    except ImportError:
        raise NpuError(ErrorCode.NOT_SUPPORTED, "the accuracy analysis needs onnxruntime for its float reference: "
                                                "pip install 'npurt[accuracy]'") from None
    return onnxruntime


def reference_session(onnx_model: Any, names: Sequence[str]) -> tuple[Any, list[str]]:
    """An onnxruntime session of `onnx_model` whose outputs also expose the tensors `names` it computes, and the
    list of its output names."""
    import onnx
    ort = require_onnxruntime()
    model = onnx.ModelProto()
    model.CopyFrom(onnx_model)
    produced = {o for n in model.graph.node for o in n.output if o}
    have = [o.name for o in model.graph.output]
    for name in names:
        if name in produced and name not in have:
            model.graph.output.append(onnx.ValueInfoProto(name=name))
            have.append(name)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"]), have


def _check_inputs(inputs: Sequence[Sequence[np.ndarray]], compiled: Any) -> list[list[np.ndarray]]:
    from npurt.model.calibrate import check_samples
    samples = [[np.asarray(a) for a in s] for s in inputs]
    if not samples:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "the accuracy analysis needs at least one input")
    check_samples(samples, compiled.graph)
    return samples


class FloatReference:
    """npurt's own float32 run of the optimised ONNX graph, with onnxruntime's `run(names, feeds)` /
    `get_inputs()`: the reference of `analyse(..., reference="auto")` when onnxruntime is not installed (the
    toolkit face's light install). Tensors the passes fused away are absent (None)."""

    def __init__(self, onnx_model: Any) -> None:
        from npurt.exec.compile import optimize
        from npurt.model.onnx_import import import_onnx
        self.graph = optimize(import_onnx(onnx_model))

    def get_inputs(self) -> list[Any]:
        from types import SimpleNamespace
        return [SimpleNamespace(name=n) for n in self.graph.inputs]

    def run(self, names: Sequence[str], feeds: dict[str, np.ndarray]) -> list[Any]:
        from npurt.exec.evaluate import evaluate_node
        from npurt.model.calibrate import iterate_float
        want, got = set(names), {}
        for name, value in iterate_float(self.graph, feeds, evaluate_node):
            if name in want:
                got[name] = np.array(value, np.float32) if np.asarray(value).dtype.kind == "f" else value
        return [got.get(n) for n in names]


class _Analysis:
    """The executor bound to host memory plus the reference session; one `sample()` call per input."""

    def __init__(self, compiled: Any, onnx_model: Any, reference: str = "onnxruntime") -> None:
        from npurt.exec.evaluate import evaluate_node
        from npurt.exec.executor import Executor, allocate
        self.compiled = compiled
        g = compiled.graph
        self.names = list(g.inputs) + [o for n in g.nodes for o in n.outputs if o and o in compiled.storage]
        try:
            self.session, self.ref_names = reference_session(onnx_model, self.names)
        except NpuError:
            if reference != "auto":
                raise
            self.session = FloatReference(onnx_model)
            self.ref_names = list(self.names)
        self.feed_names = [i.name for i in self.session.get_inputs()]
        self.evaluate = evaluate_node
        self.weights, internal, self.ins, outs = allocate(compiled)
        self.ex = Executor(compiled)
        self.ex.bind(self.weights, internal, self.ins, outs)
        self.sums: dict[str, np.ndarray] = {n: np.zeros(4) for n in self.names}

    def _reference(self, sample: list[np.ndarray]) -> dict[str, np.ndarray]:
        from npurt.model.calibrate import apply_normalization
        c, g = self.compiled, self.compiled.graph
        feeds = {}
        for k, (name, x) in enumerate(zip(g.inputs, sample)):
            if x.dtype.kind == "f" and (c.mean or c.std):
                x = apply_normalization(x, c.mean[k] if c.mean else None, c.std[k] if c.std else None)
            feeds[name] = x
        got = self.session.run(self.ref_names, {n: feeds[n] for n in self.feed_names})
        ref = {n: v for n, v in zip(self.ref_names, got) if v is not None}
        ref.update({n: np.asarray(v, np.float32) for n, v in feeds.items() if np.asarray(v).dtype.kind == "f"})
        for node in g.nodes:           # tensors npurt made: from the reference values of their inputs
            if all(o in ref for o in node.outputs if o):
                continue
            args = [None if not t else g.constants[t] if t in g.constants else ref.get(t) for t in node.inputs]
            if any(a is None for t, a in zip(node.inputs, args) if t):
                continue
            for o, v in zip(node.outputs, self.evaluate(node, args, g.opset)):
                if o and o not in ref:
                    ref[o] = v
        return ref

    def sample(self, sample: list[np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Add one input's errors to the sums; (reference values, values of the entire quantised run) by name."""
        from npurt.runtime.user_io import pack_input
        c, g, ex = self.compiled, self.compiled.graph, self.ex
        ref = self._reference(sample)
        for i, (attr, x) in enumerate(zip(c.native_input_attrs, sample)):
            pack_input(attr, x, self.ins[i], c.mean[i] if c.mean else None, c.std[i] if c.std else None,
                       shape=c.storage[attr.name].shape)
        entire = {n: ex.read_tensor(n) for n in g.inputs}
        for i, node in enumerate(g.nodes):
            ex.run_step(i)
            entire.update({o: ex.read_tensor(o) for o in node.outputs if o in self.sums})
        single = {n: entire[n] for n in g.inputs}
        for i, node in enumerate(g.nodes):
            outs = [o for o in node.outputs if o in self.sums]
            ins = [t for t in node.inputs if t and t in c.storage and t not in g.inputs]
            if not outs or any(t not in ref for t in ins):
                continue
            for t in ins:
                ex.write_tensor(t, ref[t].reshape(c.storage[t].shape))
            ex.run_step(i)
            single.update({o: ex.read_tensor(o) for o in outs})
        for name in self.names:
            r = ref.get(name)
            if r is None or name not in single:
                self.sums[name][:] = np.nan
                continue
            r = np.asarray(r, np.float32).reshape(c.storage[name].shape)
            self.sums[name] += (cosine(entire[name], r), euclidean(entire[name], r),
                                cosine(single[name], r), euclidean(single[name], r))
        return ref, entire


def _producer(graph: Any, name: str) -> str:
    info = graph.tensors.get(name)
    return "input" if info is None or info.producer is None else graph.nodes[info.producer].display_type


def analyse(compiled: Any, onnx_model: Any, inputs: Sequence[Sequence[np.ndarray]],
            on_sample: Callable[[int], None] | None = None, reference: str = "onnxruntime",
            on_values: Callable[[dict, dict], None] | None = None) -> AccuracyReport:
    """The report of `compiled` against onnxruntime on `onnx_model` (the ONNX it was compiled from) over `inputs`
    (one list of arrays per sample, ONNX layout); `on_sample(k)` is called after each sample (progress).
    `reference="auto"`: npurt's own float32 run (`FloatReference`) when onnxruntime is not installed.
    `on_values(reference, quantised)` gets each sample's tensor values by name (the toolkit's snapshot dumps)."""
    from npurt.model.report import dtype_name
    t0 = time.perf_counter()
    samples = _check_inputs(inputs, compiled)
    run = _Analysis(compiled, _reference_model(compiled, read_onnx(onnx_model, external_data=True)), reference)
    for k, sample in enumerate(samples):
        values = run.sample(sample)
        if on_values:
            on_values(*values)
        if on_sample:
            on_sample(k + 1)
    g = compiled.graph
    rows = []
    for i, name in enumerate(run.names):
        e_cos, e_euc, s_cos, s_euc = (run.sums[name] / len(samples)).tolist()
        rows.append(TensorError(i + 1, name, _producer(g, name), dtype_name(compiled.storage[name].dtype),
                                e_cos, e_euc, s_cos, s_euc))
    return AccuracyReport(compiled.soc, compiled.precision, compiled.meta.get("quantized_algorithm", "normal"),
                          list(compiled.meta.get("float_layers", [])), len(samples), rows,
                          time.perf_counter() - t0, {"outputs": list(g.outputs)},
                          dict(compiled.meta.get("optimize", {})))


def _reference_model(compiled: Any, onnx_model: Any) -> Any:
    """The float model the compiled one is compared with: the ONNX model, equalised as the compiled model was when
    it was compiled with cross-layer equalisation (float-equivalent: the same outputs, but the tensors between the
    equalised convs scaled per channel as the compiled model's are)."""
    if "cle" not in compiled.meta.get("optimize", {}):
        return onnx_model
    from npurt.exec.compile import optimize_onnx
    g = compiled.graph
    return optimize_onnx(onnx_model, "cle", input_shapes={n: list(g.tensors[n].shape) for n in g.inputs})[0]


def accuracy_analysis(model: Any, quantize: Any, inputs: Sequence[Sequence[np.ndarray]] | None = None,
                      soc: str | None = None, progress: bool = False, **compile_options: Any) -> AccuracyReport:
    """Compile the ONNX `model` to int8 with the calibration set `quantize` (and `compile_options`: further fields of
    `npurt.model.options.CompileOptions`, e.g. quantized_algorithm, float_layers, mean, std), then analyse it over
    `inputs` (default: the calibration samples); `progress` shows bars for the calibration and, over more than one
    input, the analysis. NpuError for a model that is not ONNX, inputs that do not match the model, or a missing
    onnxruntime."""
    from npurt.exec.compile import compile_with
    from npurt.model.calibrate import normalize_samples
    from npurt.model.options import CompileOptions
    require_onnxruntime()
    onnx_model = read_onnx(model, external_data=True)
    compiled = compile_with(onnx_model, CompileOptions(quantize=quantize, **compile_options), soc, progress)
    if inputs is None:
        inputs = normalize_samples(quantize, compiled.graph.inputs)
    elif inputs and isinstance(inputs[0], np.ndarray):
        inputs = [[x] for x in inputs]
    from rich.progress import Progress
    with Progress(transient=True, disable=not progress or len(inputs) < 2) as bar:
        task = bar.add_task("analysing", total=len(inputs))
        return analyse(compiled, onnx_model, inputs, on_sample=lambda k: bar.update(task, completed=k))
