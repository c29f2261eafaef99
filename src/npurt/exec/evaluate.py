"""One IR node on numpy values through the kernels: the attrs a kernel receives (`kernel_attrs`, also the
executor's) and `evaluate_node`, the `NodeEvaluator` the model layer's passes and calibration are given (they do
not import the kernels, a layer above them).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from npurt.exec.kernels import get_kernel, supported_ops
from npurt.model.ir import Node
from npurt.model.mixed import CONVERT
from npurt.model.passes import reference_evaluate


def kernel_attrs(node: Node, opset: int) -> dict[str, Any]:
    """The attrs dict a kernel receives: the IR node's attributes (a copy: kernels may add keys), `_opset`,
    `_n_outputs` (the declared output count, so a kernel can skip optional outputs nobody asked for) and the fused
    activation."""
    attrs = {**node.attrs, "_opset": int(opset), "_n_outputs": len(node.outputs)}
    if node.activation:
        attrs["activation"] = node.activation
        attrs["activation_params"] = node.activation_params
    return attrs


def evaluate_node(node: Node, values: list[np.ndarray | None], opset: int) -> list[np.ndarray]:
    """Evaluate one node on numpy inputs with the kernels (float inputs as float32), else onnx.reference."""
    if node.op_type == CONVERT:         # npurt's storage conversion: the identity on logical values
        return [values[0]]
    if node.op_type in supported_ops():
        args = [None if v is None else (v.astype(np.float32) if v.dtype.kind == "f" else v) for v in values]
        return list(get_kernel(node.op_type)(args, kernel_attrs(node, opset)))
    return reference_evaluate(node, values, opset)
