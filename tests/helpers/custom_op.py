"""The custom-op test model (x -> Relu -> custom op -> + x) and its reference, for the Python and C custom-op
tests."""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper

SHAPE = (1, 3, 4, 4)


def model(op_type: str = "cstSigmoid", domain: str = "rknn.custom", declare: bool = True) -> bytes:
    """x -> Relu -> <op> -> + x -> y; a custom-domain op carries attrs alpha, axis, mode, ks."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(SHAPE))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, list(SHAPE))
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node(op_type, ["r"], ["m"], name="cst0", domain=domain,
                              **(dict(alpha=2.0, axis=1, mode="fast", ks=[3, 3]) if domain else {})),
             helper.make_node("Add", ["m", "x"], ["y"], name="add")]
    info = [helper.make_tensor_value_info("m", TensorProto.FLOAT, list(SHAPE))] if declare else []
    g = helper.make_graph(nodes, "custom", [x], [y], value_info=info)
    opsets = [helper.make_opsetid("", 13)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    return helper.make_model(g, opset_imports=opsets).SerializeToString()


def reference(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-np.maximum(x, 0))) + x
