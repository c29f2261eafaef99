"""`compile_model` (`npurt.compile`), `supported_ops` and `load_compiled` (`npurt.load_compiled`): the model
layer's compiler run with this layer's kernels (constant folding, shape completion and calibration evaluate nodes
with them), the memory plan from the plan layer, and the plan attached to the `CompiledModel`.

The orchestration lives here, above both `model` and `plan`, so that neither imports a layer above it.
"""
from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

import onnx

from npurt.errors import ErrorCode, NpuError
from npurt.exec.evaluate import evaluate_node
from npurt.exec.kernels import supported_ops as kernel_ops
from npurt.model.compiled import CompiledModel
from npurt.model.compiled import read_compiled
from npurt.model.compiler import compile_onnx
from npurt.model.ir import Graph
from npurt.model.passes import optimize as _optimize
from npurt.plan.model_plan import MemoryPlan, plan_model

BUILTIN_OPS = ("Identity",)     # ops the executor runs itself (plain copies)


def supported_ops() -> list[str]:
    """Every ONNX op type a compiled model can run (the kernel registry plus the executor's built-ins)."""
    return sorted(set(kernel_ops()) | set(BUILTIN_OPS))


def optimize(graph: Graph) -> Graph:
    """The model layer's pass pipeline with the kernels as evaluator and `supported_ops()` as the op set."""
    return _optimize(graph, evaluate_node, supported_ops())


def _plan_memory(steps: list, internal_sizes: dict[str, int], weight_layout: dict[str, tuple[int, int]],
                 weight_total: int) -> dict[str, Any]:
    return plan_model(steps, internal_sizes, weight_layout, weight_total).to_json()


def attach_plan(compiled: CompiledModel) -> CompiledModel:
    """`compiled` with its `MemoryPlan` (made from its plain `plan_data`) attached; INVALID_MODEL if malformed."""
    try:
        plan = MemoryPlan.from_json(compiled.plan_data)
    except Exception as exc:
        raise NpuError(ErrorCode.INVALID_MODEL, f"npurt model memory plan is inconsistent: {exc}") from None
    return compiled.attach_plan(plan)


def compile_model(model: "str | os.PathLike | bytes | onnx.ModelProto", soc: str | None = None,
                  quantize: object = None, mean: Sequence | None = None, std: Sequence | None = None,
                  input_shapes: Mapping[str, Sequence[int]] | None = None, precision: str | None = None,
                  progress: bool = True) -> CompiledModel:
    """Compile an ONNX model for `soc`.

    `quantize` is a calibration dataset (a dataset.txt path, arrays, lists of arrays per input, or dicts) and
    selects int8; otherwise `precision` ("fp16" default, or "float32" the reference mode). `mean`/`std` are the
    per-channel input normalisation the runtime fuses into input packing (one list per input, or one list for a
    single-input model); calibration data is raw (pre-normalisation) when they are given.
    """
    compiled = compile_onnx(model, soc=soc, quantize=quantize, mean=mean, std=std, input_shapes=input_shapes,
                            precision=precision, progress=progress, evaluate=evaluate_node,
                            supported=supported_ops(), plan_memory=_plan_memory)
    return attach_plan(compiled)


def load_compiled(path_or_bytes: "str | os.PathLike | bytes | bytearray | memoryview") -> CompiledModel:
    """A CompiledModel from a `.npurt` file or its bytes, its memory plan attached; INVALID_MODEL if corrupt,
    truncated or foreign."""
    return attach_plan(read_compiled(path_or_bytes))
