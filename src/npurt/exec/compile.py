"""`compile_model` (`npurt.compile`) and `supported_ops`: the model layer's compiler run with this layer's kernels
(constant folding, shape completion and calibration evaluate nodes with them), so that `model` never imports the
layer above it.
"""
from __future__ import annotations

import os
from typing import Callable, Mapping, Sequence

import numpy as np
import onnx

from npurt.errors import ErrorCode, NpuError
from npurt.exec.evaluate import evaluate_node
from npurt.exec.kernels import supported_ops as kernel_ops
from npurt.exec.kernels.recurrent import check_recurrent
from npurt.model.compiled import CompiledModel
from npurt.model.sources import resolve_dataset, resolve_model
from npurt.model.compiler import calibrate_shapes, compile_onnx
from npurt.model.ir import Graph, Node, node_guard
from npurt.model.mixed import CONVERT
from npurt.model.passes import NodeEvaluator
from npurt.model.passes import optimize as _optimize

BUILTIN_OPS = ("Identity", CONVERT)     # ops the executor runs itself (plain copies; Convert changes the storage)


def supported_ops() -> list[str]:
    """Every ONNX op type a compiled model can run (the kernel registry plus the executor's built-ins)."""
    return sorted(set(kernel_ops()) | set(BUILTIN_OPS))


def optimize(graph: Graph) -> Graph:
    """The model layer's pass pipeline with the kernels as evaluator and `supported_ops()` as the op set."""
    return _optimize(graph, evaluate_node, supported_ops())


# A custom op's compile-time implementation: fn(inputs, attrs) -> outputs, float32 numpy arrays in and out (attrs:
# the node's ONNX attributes), as the kernels take them.
CustomOpImpl = Callable[[list, dict], Sequence]


def with_custom_ops(evaluate: NodeEvaluator, custom_ops: Mapping[str, CustomOpImpl]) -> NodeEvaluator:
    """`evaluate`, with nodes of the op types in `custom_ops` run through their implementations (float32 in and
    out; a result that is not one array per node output is INVALID_ARGUMENT naming the op)."""
    def run(node: Node, values: list, opset: int) -> list:
        fn = custom_ops.get(node.op_type)
        if fn is None:
            return evaluate(node, values, opset)
        args = [None if v is None else (v.astype(np.float32) if v.dtype.kind == "f" else v) for v in values]
        outs = [np.asarray(o) for o in fn(args, dict(node.attrs))]
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
                  custom_ops: Mapping[str, CustomOpImpl] | None = None) -> CompiledModel:
    """Compile an ONNX model for `soc`.

    `model`: an ONNX path, bytes or ModelProto, or a zoo name (`npurt.model.sources`). `quantize` is a calibration
    dataset (a dataset.txt path, "random", arrays, lists of arrays per input, or dicts) and selects int8; otherwise `precision` ("fp16" default, or "float32" the reference mode). `mean`/`std` are the
    per-channel input normalisation the runtime fuses into input packing (one list per input, or one list for a
    single-input model); calibration data is raw (pre-normalisation) when they are given. `quantized_algorithm`:
    "normal" (min/max), "kl_divergence" or "mmse", as rknn-toolkit2's (`npurt.tensor.ranges`); `float_layers`:
    layers of the int8 model kept in fp16, by node or produced tensor name (`npurt.model.mixed`); `qparams`: a
    calibration made before (`calibrate_dynamic`), used instead of calibrating on `quantize`.
    `custom_ops`: op type -> the float implementation (`CustomOpImpl`) of a custom op the model uses, registered
    with the compiler as the toolkit registers one: the calibration run computes the op with it, so a model with
    custom ops compiles to int8. At run time the op still runs through the callbacks registered on the context.
    """
    if isinstance(model, (str, os.PathLike)):
        model = resolve_model(model)            # a file or a zoo name, as the CLI and Session take them
    quantize = resolve_dataset(quantize, model)
    evaluate = with_custom_ops(evaluate_node, custom_ops) if custom_ops else evaluate_node
    compiled = compile_onnx(model, soc=soc, quantize=quantize, mean=mean, std=std, input_shapes=input_shapes,
                            precision=precision, progress=progress, quantized_algorithm=quantized_algorithm,
                            float_layers=float_layers, qparams=qparams, evaluate=evaluate, supported=supported_ops())
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
                      shape_sets: Sequence[Mapping[str, Sequence[int]]], quantize: object, mean: Sequence | None = None,
                      std: Sequence | None = None, progress: bool = True,
                      quantized_algorithm: str = "normal") -> dict[str, tuple[float, int]]:
    """The one int8 calibration shared by every shape set of a dynamic-shape model (`model.compiler.calibrate_shapes`
    with the kernels)."""
    return calibrate_shapes(model, shape_sets, quantize, mean, std, progress, quantized_algorithm,
                            evaluate=evaluate_node, supported=supported_ops())
