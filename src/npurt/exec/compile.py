"""`compile_model` (`npurt.compile`) and `supported_ops`: the model layer's compiler run with this layer's kernels
(constant folding, shape completion and calibration evaluate nodes with them), so that `model` never imports the
layer above it.
"""
from __future__ import annotations

import os
from typing import Mapping, Sequence

import onnx

from npurt.exec.evaluate import evaluate_node
from npurt.exec.kernels import supported_ops as kernel_ops
from npurt.model.compiled import CompiledModel
from npurt.model.compiler import calibrate_shapes, compile_onnx
from npurt.model.ir import Graph
from npurt.model.mixed import CONVERT
from npurt.model.passes import optimize as _optimize

BUILTIN_OPS = ("Identity", CONVERT)     # ops the executor runs itself (plain copies; Convert changes the storage)


def supported_ops() -> list[str]:
    """Every ONNX op type a compiled model can run (the kernel registry plus the executor's built-ins)."""
    return sorted(set(kernel_ops()) | set(BUILTIN_OPS))


def optimize(graph: Graph) -> Graph:
    """The model layer's pass pipeline with the kernels as evaluator and `supported_ops()` as the op set."""
    return _optimize(graph, evaluate_node, supported_ops())


def compile_model(model: "str | os.PathLike | bytes | onnx.ModelProto", soc: str | None = None,
                  quantize: object = None, mean: Sequence | None = None, std: Sequence | None = None,
                  input_shapes: Mapping[str, Sequence[int]] | None = None, precision: str | None = None,
                  progress: bool = True, quantized_algorithm: str = "normal",
                  float_layers: Sequence[str] = (), qparams: Mapping[str, Sequence[float]] | None = None
                  ) -> CompiledModel:
    """Compile an ONNX model for `soc`.

    `quantize` is a calibration dataset (a dataset.txt path, arrays, lists of arrays per input, or dicts) and
    selects int8; otherwise `precision` ("fp16" default, or "float32" the reference mode). `mean`/`std` are the
    per-channel input normalisation the runtime fuses into input packing (one list per input, or one list for a
    single-input model); calibration data is raw (pre-normalisation) when they are given. `quantized_algorithm`:
    "normal" (min/max), "kl_divergence" or "mmse", as rknn-toolkit2's (`npurt.tensor.ranges`); `float_layers`:
    layers of the int8 model kept in fp16, by node or produced tensor name (`npurt.model.mixed`); `qparams`: a
    calibration made before (`calibrate_dynamic`), used instead of calibrating on `quantize`.
    """
    return compile_onnx(model, soc=soc, quantize=quantize, mean=mean, std=std, input_shapes=input_shapes,
                        precision=precision, progress=progress, quantized_algorithm=quantized_algorithm,
                        float_layers=float_layers, qparams=qparams, evaluate=evaluate_node,
                        supported=supported_ops())


def calibrate_dynamic(model: "str | os.PathLike | bytes | onnx.ModelProto",
                      shape_sets: Sequence[Mapping[str, Sequence[int]]], quantize: object, mean: Sequence | None = None,
                      std: Sequence | None = None, progress: bool = True,
                      quantized_algorithm: str = "normal") -> dict[str, tuple[float, int]]:
    """The one int8 calibration shared by every shape set of a dynamic-shape model (`model.compiler.calibrate_shapes`
    with the kernels)."""
    return calibrate_shapes(model, shape_sets, quantize, mean, std, progress, quantized_algorithm,
                            evaluate=evaluate_node, supported=supported_ops())
