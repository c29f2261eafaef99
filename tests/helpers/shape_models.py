"""Small ONNX models with the shape subgraphs exporters put in front of Reshape and LSTM (PP-OCRv4's recognizer,
PyTorch CRNNs, YOLO heads), dynamic dims resolved by `input_shapes`; shared by the shape, recurrent and
no-internal-error tests."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _const(name: str, value) -> onnx.NodeProto:
    """A Constant node (exporters emit shape-subgraph constants this way, not as initializers)."""
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value)))


def graph_model(nodes, inputs, outputs, inits=(), opset: int = 13) -> onnx.ModelProto:
    """A model of `nodes` (IR version 8, default-domain `opset`)."""
    g = helper.make_graph(nodes, "shapes", inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def svtr_reshape() -> onnx.ModelProto:
    """PP-OCRv4's pattern, opset 12 as paddle2onnx exports it. x [N, 8, H, W] -> Reshape(x, Concat(Slice(Shape x,
    0, 2), [-1])) -> Transpose -> a [N, HW, 8] (ONNX's inference at import leaves a's dims unknown: its data
    propagation does not go through that Slice); then Reshape(a, Concat(0, Cast(Slice(Cast int32(Shape a), 1, 2)),
    2, Div(8, 2))) -> [N, HW, 2, 4], whose target ONNX knows the length of but not the values; a Mul after it."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s0"]),
        _const("zero", np.array([0], np.int64)), _const("one", np.array([1], np.int64)),
        _const("two", np.array([2], np.int64)), _const("minus1", np.array([-1], np.int64)),
        helper.make_node("Slice", ["s0", "zero", "two", "zero"], ["head"]),
        helper.make_node("Concat", ["head", "minus1"], ["flat"], axis=0),
        helper.make_node("Reshape", ["x", "flat"], ["f"]),
        helper.make_node("Transpose", ["f"], ["a"], perm=[0, 2, 1]),
        helper.make_node("Shape", ["a"], ["s"]),
        helper.make_node("Cast", ["s"], ["s32"], to=TensorProto.INT32),
        helper.make_node("Slice", ["s32", "one", "two", "zero"], ["hw32"]),
        helper.make_node("Cast", ["hw32"], ["hw"], to=TensorProto.INT64),
        _const("c8", np.array([8], np.int64)),
        helper.make_node("Div", ["c8", "two"], ["half"]),
        helper.make_node("Concat", ["zero", "hw", "two", "half"], ["target"], axis=0),
        helper.make_node("Reshape", ["a", "target"], ["r"]),
        _const("k", np.array(0.5, np.float32)),
        helper.make_node("Mul", ["r", "k"], ["y"]),
    ]
    return graph_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8, "H", "W"])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], opset=12)


def yolo_grid() -> onnx.ModelProto:
    """x [1, 4, H, W]: a grid built from its shape (Gather, Range, Unsqueeze, Expand, Cast, arithmetic) is added to
    x; ConstantOfShape of the shape's tail; Size scales it."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        _const("i3", np.array(3, np.int64)), _const("i0", np.array(0, np.int64)), _const("i1", np.array(1, np.int64)),
        helper.make_node("Gather", ["s", "i3"], ["w"], axis=0),
        helper.make_node("Range", ["i0", "w", "i1"], ["xs"]),
        helper.make_node("Cast", ["xs"], ["xf"], to=TensorProto.FLOAT),
        _const("ax", np.array([0], np.int64)),
        helper.make_node("Unsqueeze", ["xf", "ax"], ["row"]),
        helper.make_node("Shape", ["x"], ["s2"], start=2),
        helper.make_node("Expand", ["row", "s2"], ["grid"]),
        helper.make_node("ConstantOfShape", ["s2"], ["ones"],
                         value=numpy_helper.from_array(np.array([1.0], np.float32))),
        helper.make_node("Size", ["x"], ["n"]),
        helper.make_node("Cast", ["n"], ["nf"], to=TensorProto.FLOAT),
        helper.make_node("Div", ["grid", "nf"], ["g"]),
        helper.make_node("Sub", ["g", "ones"], ["g1"]),
        helper.make_node("Add", ["x", "g1"], ["y"]),
    ]
    return graph_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, "H", "W"])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], opset=17)


def crnn_head(rng: np.random.Generator) -> onnx.ModelProto:
    """x [1, C, 1, W] -> Squeeze -> Transpose [W, 1, C] -> bidirectional LSTM whose zero initial states come from
    Shape -> Gather -> Unsqueeze -> Concat -> ConstantOfShape (PyTorch's export) -> Transpose/Reshape -> Gemm-like
    MatMul -> Softmax: the recognizer head of ddddocr's CRNN."""
    c, h, classes = 6, 5, 7
    w = (rng.standard_normal((2, 4 * h, c)) * 0.5).astype(np.float32)
    r = (rng.standard_normal((2, 4 * h, h)) * 0.5).astype(np.float32)
    b = (rng.standard_normal((2, 8 * h)) * 0.2).astype(np.float32)
    fc = (rng.standard_normal((2 * h, classes)) * 0.5).astype(np.float32)
    nodes = [
        _const("ax2", np.array([2], np.int64)),
        helper.make_node("Squeeze", ["x", "ax2"], ["sq"]),
        helper.make_node("Transpose", ["sq"], ["seq"], perm=[2, 0, 1]),
        helper.make_node("Shape", ["seq"], ["s"]),
        _const("one", np.array(1, np.int64)),
        helper.make_node("Gather", ["s", "one"], ["batch"], axis=0),
        _const("ax0", np.array([0], np.int64)),
        helper.make_node("Unsqueeze", ["batch", "ax0"], ["b1"]),
        _const("two", np.array([2], np.int64)), _const("hid", np.array([h], np.int64)),
        helper.make_node("Concat", ["two", "b1", "hid"], ["state_shape"], axis=0),
        helper.make_node("ConstantOfShape", ["state_shape"], ["h0"]),
        helper.make_node("ConstantOfShape", ["state_shape"], ["c0"]),
        helper.make_node("LSTM", ["seq", "W", "R", "B", "", "h0", "c0"], ["y"], hidden_size=h,
                         direction="bidirectional", name="lstm"),
        helper.make_node("Transpose", ["y"], ["yt"], perm=[0, 2, 1, 3]),
        _const("flat", np.array([0, 0, -1], np.int64)),
        helper.make_node("Reshape", ["yt", "flat"], ["feat"]),
        helper.make_node("MatMul", ["feat", "FC"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["prob"], axis=-1),
    ]
    return graph_model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 1, "W"])],
                       [helper.make_tensor_value_info("prob", TensorProto.FLOAT, None)],
                       [numpy_helper.from_array(v, k) for k, v in (("W", w), ("R", r), ("B", b), ("FC", fc))])
