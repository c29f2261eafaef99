"""The one node evaluator: an IR node on numpy values. `run_kernel` runs it through its kernel with the attrs a
kernel receives (`kernel_attrs`, also the executor's); `evaluate_node`, the `NodeEvaluator` the model layer's
passes and calibration are given (they do not import the kernels, a layer above them), falls back to
`reference_evaluate` (`onnx.reference`) for the ops the kernels lack; `npurt.exec.reference` runs whole ONNX graphs
node by node through `run_kernel`.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper

from npurt.errors import ErrorCode, NpuError
from npurt.exec.kernels import get_kernel, supported_ops
from npurt.model.ir import Node
from npurt.model.shapes import node_proto


def kernel_attrs(node: Node, opset: int) -> dict[str, Any]:
    """The attrs dict a kernel receives: the IR node's attributes (a copy: kernels may add keys), `_opset`,
    `_n_outputs` (the declared output count, so a kernel can skip optional outputs nobody asked for) and the fused
    activation."""
    attrs = {**node.attrs, "_opset": int(opset), "_n_outputs": len(node.outputs)}
    if node.activation:
        attrs["activation"] = node.activation
        attrs["activation_params"] = node.activation_params
    return attrs


def kernel_inputs(values: list[np.ndarray | None]) -> list[np.ndarray | None]:
    """Values as a kernel takes them: float arrays as float32 copies (the caller's stay untouched), others as given."""
    return [None if v is None else (v.astype(np.float32) if v.dtype.kind == "f" else v) for v in values]


def run_kernel(node: Node, args: list[np.ndarray | None], opset: int) -> list[np.ndarray]:
    """`node` through its kernel on `args` as given (`kernel_inputs`, or the reference interpreter's values, whose
    float8 tensors stay float8); NOT_SUPPORTED for an op with no kernel."""
    return list(get_kernel(node.op_type)(args, kernel_attrs(node, opset)))


def evaluate_node(node: Node, values: list[np.ndarray | None], opset: int) -> list[np.ndarray]:
    """Evaluate one node on numpy inputs with the kernels (float inputs as float32), else onnx.reference."""
    if node.op_type in supported_ops():
        return run_kernel(node, kernel_inputs(values), opset)
    return reference_evaluate(node, values, opset)


def reference_evaluate(node: Node, values: list[np.ndarray | None], opset: int) -> list[np.ndarray]:
    """Evaluate one node on numpy inputs with `onnx.reference` (the kernels' fallback, for folding)."""
    from onnx.reference import ReferenceEvaluator
    names = [n for n in node.inputs]
    feeds = {n: v for n, v in zip(names, values) if n and v is not None}
    ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
           for n, v in feeds.items()]
    outs = [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in node.outputs if o]
    g = helper.make_graph([node_proto(node)], "fold", ins, outs)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    try:
        res = ReferenceEvaluator(m).run(None, feeds)
    except Exception as exc:
        raise NpuError(ErrorCode.NOT_SUPPORTED,
                       f"node {node.name!r}: cannot evaluate op {node.op_type}: {exc}") from None
    return [np.asarray(r) for r in res]
