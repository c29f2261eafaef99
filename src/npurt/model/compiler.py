"""`compile_onnx`: ONNX model → `CompiledModel` (import, optimise, quantise, attrs, weights, memory plan).

The kernels (a layer above) are passed in, not imported: `evaluate` (a `NodeEvaluator`, for folding, shape
completion and the calibration run) and `supported` (the op set the executor runs);
`npurt.exec.compile.compile_model` (`npurt.compile`) passes them. The memory plan comes from the plan layer below
(`npurt.plan.model_plan.plan_model`).
"""
from __future__ import annotations

import functools
import os
from typing import Callable, Collection, Mapping, Sequence

import numpy as np
import onnx

from npurt.errors import ErrorCode, NpuError
from npurt.model import calibrate as calib
from npurt.model.attrs import (TensorStorage, logical_attr, native_attr, native_nhwc_attr, storage_for)
from npurt.model.compiled import CompiledModel
from npurt.model.ir import Graph, Node
from npurt.model.mixed import resolve_float_layers, split_precision
from npurt.model.onnx_import import import_onnx
from npurt.model.options import CompileOptions
from npurt.model.passes import NodeEvaluator, optimize
from npurt.model.weights import build_blob, encode_weights, layout_blob, stored_view
from npurt.plan.model_plan import plan_model
from npurt.soc import get_profile
from npurt.tensor import DType
from npurt.tensor.ranges import check_algorithm

_STORED = {"fp16": DType.FLOAT16, "int8": DType.INT8, "float32": DType.FLOAT32}


def _per_input(values, n_inputs: int, what: str) -> list[list[float] | None]:
    """mean/std as one per-channel list (or None) per model input."""
    if values is None:
        return [None] * n_inputs
    vals = list(values)
    if vals and all(isinstance(v, (int, float, np.floating, np.integer)) for v in vals):
        vals = [vals] + [None] * (n_inputs - 1)
    if len(vals) != n_inputs:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} has {len(vals)} entries for {n_inputs} inputs")
    out = []
    for v in vals:
        if v is None:
            out.append(None)
        else:
            arr = [float(x) for x in np.asarray(v, np.float64).reshape(-1)]
            if what == "std" and any(x == 0 for x in arr):
                raise NpuError(ErrorCode.INVALID_ARGUMENT, "std values must be non-zero")
            out.append(arr)
    return out


def _check_norm_channels(graph: Graph, values: list, what: str) -> None:
    for name, v in zip(graph.inputs, values):
        if v is None:
            continue
        shape = graph.tensors[name].shape
        channels = shape[1] if shape and len(shape) >= 2 else 1
        if len(v) not in (1, channels):
            raise NpuError(ErrorCode.INVALID_ARGUMENT,
                           f"{what} for input {name!r} has {len(v)} values, the input has {channels} channels")


def _check_supported(graph: Graph, supported: Collection[str]) -> None:
    ops = set(supported)
    for node in graph.nodes:
        if node.op_type not in ops and not node.domain:     # custom-domain ops run when registered
            raise NpuError(ErrorCode.NOT_SUPPORTED,
                           f"op {node.op_type!r} (node {node.name!r}) is not supported by npurt")


def _constant_outputs(graph: Graph) -> None:
    """A graph output that folded to a constant gets an Identity from the constant (the executor copies it)."""
    for out in graph.outputs:
        if out in graph.constants:
            src = f"{out}#const"
            graph.constants[src] = graph.constants.pop(out)
            graph.tensor(src).shape, graph.tensor(src).dtype = graph.tensors[out].shape, graph.tensors[out].dtype
            graph.nodes.append(Node(f"{out}#copy", "Identity", [src], [out]))
        elif out in graph.inputs:
            raise NpuError(ErrorCode.NOT_SUPPORTED, f"graph output {out!r} is a graph input")
    graph.link()


def _stored_type(dtype: str, precision: str) -> DType:
    if np.dtype(dtype).kind == "f":
        return _STORED[precision]
    return DType.from_numpy(dtype)


def never_internal(fn: Callable) -> Callable:
    """The compiler's last line: an exception that is not an NpuError (the passes name the node where they can,
    `ir.node_guard`) still leaves as one, INVALID_MODEL with its type and message - never as a traceback."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except NpuError:
            raise
        except Exception as exc:
            text = str(exc).strip()
            reason = text.splitlines()[0] if text else "no detail"
            raise NpuError(ErrorCode.INVALID_MODEL, f"cannot compile this model: {type(exc).__name__}: {reason}") \
                from exc
    return run


@never_internal
def compile_onnx(model: "str | os.PathLike | bytes | onnx.ModelProto", soc: str | None, options: CompileOptions,
                 *, evaluate: NodeEvaluator, supported: Collection[str], progress: bool = True) -> CompiledModel:
    """Compile an ONNX model for `soc` as `options` say (`npurt.model.options`), with the kernels given as
    `evaluate` and `supported` (see the module doc); `progress` shows the calibration's bar."""
    options = options.checked()
    supported = frozenset(supported)
    graph = optimize(import_onnx(model, options.input_shapes), evaluate, supported)
    return _compile_optimized(graph, soc, options, evaluate=evaluate, supported=supported, progress=progress)


@never_internal
def compile_graph(graph: Graph, soc: str | None, options: CompileOptions, *, evaluate: NodeEvaluator,
                  supported: Collection[str], unquantized_in_float: bool = False) -> CompiledModel:
    """Compile an IR graph another front end built (`model.qnn_import`) as `compile_onnx` compiles an imported
    ONNX model. `unquantized_in_float`: with `options.qparams`, the nodes that read or write a real-valued tensor
    without one run in float (fp16) instead of being an error (an int8 node could not read such a tensor: there is no
    scale to convert it with)."""
    options = options.checked()
    supported = frozenset(supported)
    graph = optimize(graph, evaluate, supported)
    if unquantized_in_float and options.qparams is not None:
        qp = options.qparams

        def unquantized(t: str) -> bool:
            return bool(t) and graph.tensors[t].is_float and t not in qp and t not in graph.constants
        names = [n.name for n in graph.nodes if any(unquantized(t) for t in list(n.outputs) + list(n.inputs))]
        options = options.replace(float_layers=tuple(dict.fromkeys(names)))
    return _compile_optimized(graph, soc, options, evaluate=evaluate, supported=supported, progress=False)


def _compile_optimized(graph: Graph, soc: str | None, options: CompileOptions, *, evaluate: NodeEvaluator,
                       supported: frozenset, progress: bool) -> CompiledModel:
    profile = get_profile(soc)
    precision, mean, std = options.precision, options.mean, options.std
    _check_supported(graph, supported)
    _constant_outputs(graph)
    means = _per_input(mean, len(graph.inputs), "mean")
    stds = _per_input(std, len(graph.inputs), "std")
    _check_norm_channels(graph, means, "mean")
    _check_norm_channels(graph, stds, "std")

    given, qparams, applied = options.qparams, {}, {}
    asymmetric_first = not profile.vtcm_size        # the first layer's weights: RKNN as the toolkit; HTP symmetric
    float_nodes = resolve_float_layers(graph, options.float_layers) if options.float_layers else []
    if given is not None:
        qparams = {name: (float(v[0]), int(v[1])) for name, v in given.items()}
    elif precision == "int8":
        samples = calib.normalize_samples(options.quantize, graph.inputs)
        calib.check_samples(samples, graph)
        if options.optimize:
            from npurt.model.techniques import apply_techniques
            applied = apply_techniques(graph, options.optimize, samples, means if mean is not None else None,
                                       stds if std is not None else None, evaluate,
                                       per_layer=options.weight_method == "layer",
                                       asymmetric_first=asymmetric_first)
        qparams = calib.calibrate(graph, samples, means if mean is not None else None,
                                  stds if std is not None else None, progress=progress, evaluate=evaluate,
                                  algorithm=options.algorithm)
    fp16 = split_precision(graph, float_nodes, qparams) if float_nodes else set()

    storage: dict[str, TensorStorage] = {}
    act_names = list(graph.inputs) + [t for t in graph.activations() if t not in graph.inputs]
    for name in act_names:
        info = graph.tensors[name]
        role = "input" if info.is_input else "output" if info.is_output else "internal"
        stored = DType.FLOAT16 if name in fp16 else _stored_type(info.dtype, precision)
        scale, zp = qparams.get(name, (1.0, 0))
        quantized = stored is DType.INT8 and info.is_float
        if quantized and name not in qparams:
            raise NpuError(ErrorCode.FAIL, f"no calibration range for tensor {name!r}")
        storage[name] = storage_for(name, tuple(info.shape), info.dtype, stored, profile, role, float(scale),
                                    int(zp), quantized)

    float_ids = {id(n) for n in float_nodes}
    per_layer = options.weight_method == "layer"
    entries, arrays = encode_weights(graph, precision, qparams,
                                     {i for i, n in enumerate(graph.nodes) if id(n) in float_ids}, per_layer,
                                     asymmetric_first=asymmetric_first)
    placed, total = layout_blob(arrays)
    blob = build_blob(arrays, placed, total)
    # The graph's constants become views of the stored blob (the compiled model holds one copy of weights).
    graph.constants = {name: stored_view(entries[name], blob, placed[name][0])
                       for name in graph.constants if name in entries}
    graph.link()

    steps = [([i for i in n.inputs if i], [o for o in n.outputs if o]) for n in graph.nodes]
    internal = {n: s.size for n, s in storage.items()
                if not graph.tensors[n].is_input and not graph.tensors[n].is_output}
    plan = plan_model(steps, internal, placed, total)

    ins = [storage[n] for n in graph.inputs]
    outs = [storage[n] for n in graph.outputs]
    return CompiledModel(
        soc=profile.name, precision=precision, graph=graph, storage=storage, weights=entries, weight_blob=blob,
        plan=plan,
        input_attrs=[logical_attr(i, s, profile, True) for i, s in enumerate(ins)],
        output_attrs=[logical_attr(i, s, profile, False) for i, s in enumerate(outs)],
        native_input_attrs=[native_attr(i, s) for i, s in enumerate(ins)],
        native_output_attrs=[native_attr(i, s) for i, s in enumerate(outs)],
        native_nhwc_input_attrs=[native_nhwc_attr(i, s, profile, True) for i, s in enumerate(ins)],
        native_nhwc_output_attrs=[native_nhwc_attr(i, s, profile, False) for i, s in enumerate(outs)],
        mean=means, std=stds,
        meta={"op_counts": graph.op_counts(),
              **({"quantized_algorithm": options.algorithm,
                  "float_layers": [n.outputs[0] for n in float_nodes],
                  **({"weight_method": "layer"} if per_layer else {})} if precision == "int8" else {}),
              **({"optimize": applied} if applied else {})},
    )


@never_internal
def calibrate_shapes(model: "str | os.PathLike | bytes | onnx.ModelProto",
                     shape_sets: Sequence[Mapping[str, Sequence[int]]], options: CompileOptions, *,
                     evaluate: NodeEvaluator, supported: Collection[str], progress: bool = True
                     ) -> dict[str, tuple[float, int]]:
    """One int8 calibration (on `options.quantize`, with its mean, std and algorithm) for every shape set of a
    dynamic-shape model: each sample runs the graph of the shape set its arrays match (INVALID_ARGUMENT when they
    match none), ranges are taken over all of them; compile each shape set with the result as `qparams`."""
    check_algorithm(options.algorithm)
    if options.optimize:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "the quantisation techniques (optimize) are not supported for "
                                                   "dynamic-shape models")
    supported = frozenset(supported)
    graphs = [optimize(import_onnx(model, dict(shapes)), evaluate, supported) for shapes in shape_sets]
    inputs = graphs[0].inputs
    samples = calib.normalize_samples(options.quantize, inputs)
    keys = [[tuple(g.tensors[n].shape) for n in g.inputs] for g in graphs]
    groups: list[list] = [[] for _ in graphs]
    for k, sample in enumerate(samples):
        got = [tuple(np.shape(a)) for a in sample]
        if got not in keys:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"calibration sample {k} has input shapes {got}, not one of "
                                                       f"the model's dynamic shapes {keys}")
        groups[keys.index(got)].append(sample)
    for g, group in zip(graphs, groups):
        calib.check_samples(group, g)
    means = _per_input(options.mean, len(inputs), "mean") if options.mean is not None else None
    stds = _per_input(options.std, len(inputs), "std") if options.std is not None else None
    return calib.calibrate_shared([(g, group) for g, group in zip(graphs, groups) if group], means, stds,
                                  progress=progress, evaluate=evaluate, algorithm=options.algorithm)
