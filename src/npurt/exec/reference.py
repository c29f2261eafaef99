"""A plain float32 interpreter over an ONNX graph, every node through the kernel registry (`run_kernel`, the one
node evaluator, `npurt.exec.evaluate`).

It is the float reference of the kernel tests and the ONNX backend node tests: no layout, no quantisation, no
memory planning, no fallback for an op the kernels lack - just values in a dict and the nodes in the order given.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

import numpy as np
import onnx
from onnx import numpy_helper

from npurt.errors import ErrorCode, NpuError
from npurt.exec.evaluate import run_kernel
from npurt.exec.kernels import get_kernel
from npurt.model.ir import Node
from npurt.model.onnx_import import constant_value, node_attributes


def default_opset(model: onnx.ModelProto) -> int:
    """The model's default-domain ("" or "ai.onnx") opset version."""
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return int(imp.version)
    return 1


def _as_float32(a: np.ndarray) -> np.ndarray:
    """float16 / float64 / bfloat16 tensors as float32 (as the executor hands float tensors to
    kernels); float8 / float4 stay as they are, like integers: they are storage types here (the
    targets of Cast, CastLike and QuantizeLinear), not compute types. Others unchanged."""
    if a.dtype == np.float32 or not is_float(a.dtype) or a.dtype.name.startswith(("float8", "float4")):
        return a
    return a.astype(np.float32)


def is_float(dtype: np.dtype) -> bool:
    """True for numpy floats and the ml_dtypes ones (bfloat16, float8 variants)."""
    return dtype.kind == "f" or dtype.name.startswith(("bfloat16", "float8", "float4"))


def run_reference(
    model: onnx.ModelProto | str | Path,
    feeds: dict[str, np.ndarray],
    outputs: Iterable[str] | None = None,
    intermediates: bool = False,
) -> dict[str, np.ndarray]:
    """Run `model` on `feeds`; return the graph outputs (or `outputs`, or every value if
    `intermediates`) by name."""
    if not isinstance(model, onnx.ModelProto):
        model = onnx.load(str(model))
    graph = model.graph
    opset = default_opset(model)

    # feeds after initializers: a feed overrides an initializer of the same name
    values: dict[str, np.ndarray] = {}
    for init in graph.initializer:
        values[init.name] = _as_float32(numpy_helper.to_array(init))
    for name, arr in feeds.items():
        values[name] = _as_float32(np.asarray(arr))
    for inp in graph.input:
        if inp.name not in values:
            raise NpuError(ErrorCode.INVALID_INPUT, f"missing input '{inp.name}'; fed: {sorted(feeds)}")

    for i, node in enumerate(graph.node):
        label = node.name or f"#{i}"
        if node.domain not in ("", "ai.onnx"):
            raise NpuError(ErrorCode.NOT_SUPPORTED, f"node '{label}': domain '{node.domain}' is not supported")
        if node.op_type == "Constant":
            out = [constant_value(node)]
        else:
            try:
                get_kernel(node.op_type)            # an op with no kernel is refused before its inputs are checked
            except NpuError as e:
                raise NpuError(e.code, f"node '{label}' ({node.op_type}): {e.message}") from None
            args = []
            for name in node.input:
                if not name:
                    args.append(None)
                elif name in values:
                    args.append(values[name])
                else:
                    raise NpuError(ErrorCode.INVALID_MODEL,
                                   f"node '{label}': input '{name}' is not computed yet")
            ir_node = Node(node.name, node.op_type, list(node.input), list(node.output), node_attributes(node))
            out = run_kernel(ir_node, args, opset)
        for name, val in zip(node.output, out):
            if name:
                values[name] = _as_float32(np.asarray(val))

    if intermediates:
        return values
    names = list(outputs) if outputs is not None else [o.name for o in graph.output]
    missing = [n for n in names if n not in values]
    if missing:
        raise NpuError(ErrorCode.INVALID_OUTPUT, f"unknown outputs {missing}")
    return {n: values[n] for n in names}

