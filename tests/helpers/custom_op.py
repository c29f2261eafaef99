"""The custom-op test model (x -> Relu -> custom op -> + x), its reference, and the model compiled to int8 / fp16,
for the Python and C custom-op tests."""
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


def sigmoid_impl(inputs: list, attrs: dict) -> list:
    """cstSigmoid's float implementation, registered with the compiler for the int8 calibration run."""
    return [1 / (1 + np.exp(-inputs[0]))]


def compiled(precision: str):
    """The test model compiled to `precision`; int8 with the op's float implementation registered with the
    compiler (the calibration run computes it), as the vendor's demo model is built with do_quantization=True."""
    import npurt
    if precision == "int8":
        calib = [np.random.default_rng(s).standard_normal(SHAPE).astype(np.float32) for s in range(8)]
        cm = npurt.compile(model(), quantize=calib, progress=False, custom_ops={"cstSigmoid": sigmoid_impl})
        assert cm.storage["r"].quantized and cm.storage["m"].quantized
    else:
        cm = npurt.compile(model(), precision=precision, progress=False)
    assert cm.precision == precision
    return cm
