"""`compile_model` (`npurt.compile`) and `supported_ops`: the model layer's compiler run with this layer's kernels
(constant folding, shape completion and calibration evaluate nodes with them), so that `model` never imports the
layer above it.
"""
from __future__ import annotations

import os
from typing import Mapping, Sequence

import numpy as np
import onnx

from npurt.errors import ErrorCode, NpuError
from npurt.exec.evaluate import evaluate_node, kernel_inputs
from npurt.exec.kernels import supported_ops as kernel_ops
from npurt.exec.kernels.blas import blas_threads, policy_threads
from npurt.exec.kernels.recurrent import check_recurrent
from npurt.model.compiled import CompiledModel
from npurt.model.sources import resolve_dataset, resolve_model
from npurt.model.compiler import calibrate_shapes, compile_graph, compile_onnx
from npurt.model.ir import Graph, Node, node_guard
from npurt.model.options import CompileOptions, CustomOpImpl
from npurt.model.passes import NodeEvaluator
from npurt.model.passes import optimize as _optimize


def supported_ops() -> list[str]:
    """Every op type a compiled model can run: the kernel registry's (npurt's own `Convert` among them)."""
    return kernel_ops()


def optimize(graph: Graph) -> Graph:
    """The model layer's pass pipeline with the kernels as evaluator and `supported_ops()` as the op set."""
    return _optimize(graph, evaluate_node, supported_ops())


def compile_ir(graph: Graph, soc: str | None, precision: str,
               qparams: Mapping[str, tuple[float, int]] | None = None) -> CompiledModel:
    """Compile an IR graph another front end built (`npurt.model.qnn_import`) with this layer's kernels: at
    `precision`, int8 with the given `qparams` (nodes whose real-valued outputs have none run in fp16)."""
    options = CompileOptions(precision=precision, qparams=dict(qparams) if precision == "int8" else None)
    compiled = compile_graph(graph, soc, options, evaluate=evaluate_node, supported=supported_ops(),
                             unquantized_in_float=True)
    check_kernel_attrs(compiled.graph)
    return compiled


def with_custom_ops(evaluate: NodeEvaluator, custom_ops: Mapping[str, CustomOpImpl]) -> NodeEvaluator:
    """`evaluate`, with nodes of the op types in `custom_ops` run through their implementations (float32 in and
    out; a result that is not one array per node output is INVALID_ARGUMENT naming the op)."""
    def run(node: Node, values: list, opset: int) -> list:
        fn = custom_ops.get(node.op_type)
        if fn is None:
            return evaluate(node, values, opset)
        outs = [np.asarray(o) for o in fn(kernel_inputs(values), dict(node.attrs))]
        want = [o for o in node.outputs if o]
        if len(outs) != len(want):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"custom op {node.op_type} (node {node.name!r}): the "
                                                       f"compile-time implementation returned {len(outs)} outputs, "
                                                       f"the node has {len(want)}")
        return outs
    return run


def compile_model(model: "str | os.PathLike | bytes | onnx.ModelProto", soc: str | None = None,
                  quantize: object = None, mean: Sequence | None = None, std: Sequence | None = None,
                  input_shapes: Mapping[str, Sequence[int]] | None = None, precision: str | None = None,
                  progress: bool = True, quantized_algorithm: str = "normal",
                  float_layers: Sequence[str] = (), qparams: Mapping[str, Sequence[float]] | None = None,
                  custom_ops: Mapping[str, CustomOpImpl] | None = None,
                  optimize: "str | Sequence[str] | None" = None,
                  weight_method: str | None = None) -> CompiledModel:
    """Compile an ONNX model for `soc` (`npurt.compile`): the keywords are the fields of
    `npurt.model.options.CompileOptions`, documented there; `progress` shows the calibration's bar.

    `model`: an ONNX path, bytes or ModelProto, or a zoo name (`npurt.model.sources`).
    """
    options = CompileOptions(precision=precision, quantize=quantize, mean=mean, std=std,
                             quantized_algorithm=quantized_algorithm, float_layers=float_layers, qparams=qparams,
                             input_shapes=input_shapes, custom_ops=custom_ops, optimize=optimize,
                             weight_method=weight_method)
    return compile_with(model, options, soc, progress)


def compile_with(model: "str | os.PathLike | bytes | onnx.ModelProto", options: CompileOptions,
                 soc: str | None = None, progress: bool = True) -> CompiledModel:
    """`compile_model` with its options as one object (what Session, the CLI and the loader hold)."""
    if isinstance(model, (str, os.PathLike)):
        model = resolve_model(model)            # a file or a zoo name, as the CLI and Session take them
    options = options.replace(quantize=resolve_dataset(options.quantize, model, input_shapes=options.input_shapes))
    evaluate = with_custom_ops(evaluate_node, options.custom_ops) if options.custom_ops else evaluate_node
    with blas_threads(policy_threads()):        # float sums, hence calibration, depend on OpenBLAS's thread count
        compiled = compile_onnx(model, soc, options, evaluate=evaluate, supported=supported_ops(), progress=progress)
    check_kernel_attrs(compiled.graph)
    return compiled


def check_kernel_attrs(graph: Graph) -> None:
    """Attributes a kernel cannot run (today: the recurrent ops' directions and activations), refused at compile
    time naming the node rather than at the first run."""
    for node in graph.nodes:
        if node.op_type in ("RNN", "GRU", "LSTM") and not node.domain:
            with node_guard(node, "unsupported attributes"):
                check_recurrent(node.op_type, node.attrs)


def calibrate_dynamic(model: "str | os.PathLike | bytes | onnx.ModelProto",
                      shape_sets: Sequence[Mapping[str, Sequence[int]]], options: CompileOptions,
                      progress: bool = True) -> dict[str, tuple[float, int]]:
    """The one int8 calibration shared by every shape set of a dynamic-shape model (`model.compiler.calibrate_shapes`
    with the kernels)."""
    with blas_threads(policy_threads()):
        return calibrate_shapes(model, shape_sets, options, evaluate=evaluate_node, supported=supported_ops(),
                                progress=progress)


def optimize_onnx(model: "str | os.PathLike | bytes | onnx.ModelProto", techniques: "str | Sequence[str]",
                  dataset: object = None, mean: Sequence | None = None, std: Sequence | None = None,
                  input_shapes: Mapping[str, Sequence[int]] | None = None,
                  target: str | None = None) -> tuple[onnx.ModelProto, dict]:
    """The float ONNX model with the quantisation `techniques` written into its initializers
    (`npurt.model.technique_onnx`, `npurt optimize`) and what each did; `dataset` as `quantize=` takes it ('random'
    too), `mean` / `std` as `npurt.compile` takes them."""
    from npurt.model.technique_onnx import write_techniques
    if isinstance(model, (str, os.PathLike)):
        model = resolve_model(model)
    dataset = resolve_dataset(dataset, model, input_shapes=input_shapes) if dataset is not None else None
    with blas_threads(policy_threads()):
        return write_techniques(model, techniques, dataset, mean, std, evaluate=evaluate_node,
                                supported=supported_ops(), input_shapes=dict(input_shapes) if input_shapes else None,
                                target=target)
