"""Exact static shapes: one walk over the schedule folds every node whose inputs are constants (so whole shape
subgraphs - `Shape`, `Gather`, `Slice`, `Concat`, `Unsqueeze`, arithmetic, `Cast`, `ConstantOfShape`, `Range`,
`Expand` - become constants once `Shape`/`Size` of a statically shaped tensor is one), and gives every other output
the shape ONNX's own shape rules derive from its input shapes and the folded constant values.

Kernels run only on real constant values (the folded ones), never on placeholder data: a shape that neither the
whole-model inference at import, the model's value_info, the given input shapes nor these rules determine is
INVALID_MODEL naming the node, its op type and the tensor.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import onnx
from onnx import helper, numpy_helper

from npurt.errors import ErrorCode
from npurt.model.ir import Graph, Node, node_error, node_guard

# evaluate(node, inputs, opset) -> outputs: numpy in, numpy out (None for an omitted optional input).
NodeEvaluator = Callable[[Node, "list[np.ndarray | None]", int], "list[np.ndarray]"]

# Ops never folded even with constant inputs (random, or producing nothing useful to fold).
NO_FOLD = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"}
# Constants up to this many elements go to the shape rules as data (shape targets, axes, pads, sizes); larger
# ones (weights) only by type: the rules never read them and serialising them per node would cost.
DATA_LIMIT = 4096


def node_proto(node: Node) -> onnx.NodeProto:
    """`node` as an ONNX NodeProto (attributes re-encoded), for the ONNX shape rules and `onnx.reference`."""
    attrs = {}
    for k, v in node.attrs.items():
        if isinstance(v, np.ndarray):
            v = numpy_helper.from_array(v)
        attrs[k] = v
    return helper.make_node(node.op_type, node.inputs, node.outputs, name=node.name, **attrs)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def static_shape_op(node: Node, shape: tuple[int, ...]) -> np.ndarray:
    """The value of `Shape` (with its start/end) or `Size` of a tensor of static `shape`."""
    if node.op_type == "Size":
        return np.array(int(np.prod(shape)), np.int64)
    start = node.attrs.get("start", 0)
    end = node.attrs.get("end", None)
    return np.array(shape[slice(start, end)], np.int64)


def _fold(graph: Graph, node: Node, evaluate: NodeEvaluator) -> bool:
    """Replace `node` by constants if it is a Shape/Size of a static tensor or has only constant inputs."""
    if node.op_type in ("Shape", "Size") and not node.domain and node.inputs[0] not in graph.constants:
        shape = graph.tensor(node.inputs[0]).shape
        if shape is None:
            return False
        _set_constant(graph, node.outputs[0], static_shape_op(node, shape))
        return True
    if node.op_type in NO_FOLD or node.domain or not all(i in graph.constants for i in node.inputs if i):
        return False
    values = [graph.constants[i] if i else None for i in node.inputs]
    with node_guard(node, "cannot fold its constant inputs"):
        results = evaluate(node, values, graph.opset)
    for name, value in zip(node.outputs, results):
        if name:
            info = graph.tensor(name)
            want = np.dtype(info.dtype) if info.shape is not None or info.dtype != "float32" else None
            value = np.asarray(value)
            if want is not None and value.dtype != want:
                value = value.astype(want)
            _set_constant(graph, name, value)
    return True


def _set_constant(graph: Graph, name: str, value: np.ndarray) -> None:
    graph.constants[name] = value
    info = graph.tensor(name)
    info.shape = tuple(int(d) for d in value.shape)
    info.dtype = value.dtype.name


def _type_proto(graph: Graph, node: Node, name: str) -> onnx.TypeProto:
    info = graph.tensor(name)
    if info.shape is None:
        raise node_error(ErrorCode.INVALID_MODEL, node, f"the shape of its input {name!r} is unknown")
    return helper.make_tensor_type_proto(helper.np_dtype_to_tensor_dtype(np.dtype(info.dtype)), info.shape)


def infer_node_shapes(graph: Graph, node: Node) -> None:
    """Give each output of `node` without a shape the one ONNX's shape rules derive from its inputs' static shapes
    and its constant inputs' values; INVALID_MODEL naming node and tensor when they cannot (data-dependent shape).
    An output without a shape that nothing reads is dropped from the node instead."""
    missing = [o for o in node.outputs if o and graph.tensor(o).shape is None]
    if not missing:
        return
    used = {o for o in missing if graph.tensor(o).consumers or o in graph.outputs}
    if used != set(missing):        # an optional output nobody reads (Dropout-7's mask): dropped, no shape needed
        node.outputs = ["" if o in missing and o not in used else o for o in node.outputs]
        missing = [o for o in missing if o in used]
        if not missing:
            return
    if node.domain:
        raise node_error(ErrorCode.NOT_SUPPORTED, node, "a custom op needs its output shapes declared in the model "
                                                        f"(value_info for {missing[0]!r})")
    try:
        schema = onnx.defs.get_schema(node.op_type, graph.opset, "")
    except onnx.defs.SchemaError:
        raise node_error(ErrorCode.NOT_SUPPORTED, node, f"unknown op in opset {graph.opset}: the shape of "
                                                        f"{missing[0]!r} cannot be derived") from None
    names = [i for i in node.inputs if i]
    types = {name: _type_proto(graph, node, name) for name in names}
    data = {name: numpy_helper.from_array(graph.constants[name], name) for name in names
            if name in graph.constants and graph.constants[name].size <= DATA_LIMIT
            and graph.constants[name].dtype != object}
    try:
        out = onnx.shape_inference.infer_node_outputs(schema, node_proto(node), types, data,
                                                      opset_imports=[helper.make_opsetid("", graph.opset)])
    except Exception as exc:
        raise node_error(ErrorCode.INVALID_MODEL, node, f"shape inference failed: {_first_line(exc)}") from None
    for name in missing:
        tt = out[name].tensor_type if name in out else None
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim] \
            if tt is not None and tt.HasField("shape") else None
        if dims is None or any(d is None or d < 0 for d in dims):
            got = "no shape" if dims is None else \
                "shape [" + ", ".join("?" if d is None else str(d) for d in dims) + "]"
            raise node_error(ErrorCode.INVALID_MODEL, node, f"the static shape of output {name!r} cannot be derived "
                                                            f"(the ONNX shape rules give {got}; it depends on data)")
        info = graph.tensor(name)
        info.shape = tuple(int(d) for d in dims)
        if tt.elem_type:
            info.dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tt.elem_type)).name


def check_channels(graph: Graph, node: Node) -> None:
    """Conv / ConvTranspose: the input's channels must be what the constant weight takes (ONNX's shape rules do
    not check it, and a wrong input shape would otherwise compile and fail when it runs)."""
    if node.op_type not in ("Conv", "ConvTranspose") or node.domain or len(node.inputs) < 2:
        return
    x, w = graph.tensor(node.inputs[0]).shape, graph.tensor(node.inputs[1]).shape
    if x is None or w is None or len(x) < 2 or len(w) < 2:
        return
    group = int(node.attrs.get("group", 1))
    takes = w[1] * group if node.op_type == "Conv" else w[0]
    if x[1] != takes:
        raise node_error(ErrorCode.INVALID_MODEL, node, f"input {node.inputs[0]!r} of shape {list(x)} has {x[1]} "
                                                        f"channels, the weight {node.inputs[1]!r} of shape {list(w)} "
                                                        f"(group {group}) takes {takes}")


_WINDOWED = ("Conv", "MaxPool", "AveragePool", "LpPool")


def check_window(graph: Graph, node: Node) -> None:
    """Conv and pooling without auto padding or ceil mode: the (dilated) kernel must fit in the padded input on
    every spatial axis. ONNX's shape rules give such a window a size-1 output; onnxruntime refuses it and there is
    nothing to compute."""
    if node.op_type not in _WINDOWED or node.domain or node.attrs.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID") \
            or node.attrs.get("ceil_mode", 0):
        return
    x = graph.tensor(node.inputs[0]).shape
    if node.op_type == "Conv":
        w = graph.tensor(node.inputs[1]).shape if len(node.inputs) > 1 else None
        kernel = list(node.attrs.get("kernel_shape") or (w[2:] if w else []))
    else:
        kernel = list(node.attrs.get("kernel_shape") or [])
    if x is None or not kernel or len(x) != len(kernel) + 2:
        return
    n = len(kernel)
    explicit = node.attrs.get("auto_pad", "NOTSET") == "NOTSET"
    pads = list(node.attrs.get("pads") or [0] * 2 * n) if explicit else [0] * 2 * n
    dilations = list(node.attrs.get("dilations") or [1] * n)
    for axis in range(n):
        padded = x[2 + axis] + pads[axis] + pads[n + axis]
        extent = (kernel[axis] - 1) * dilations[axis] + 1
        if padded < extent:
            raise node_error(ErrorCode.INVALID_MODEL, node, f"the {kernel} window does not fit in input "
                                                            f"{node.inputs[0]!r} of shape {list(x)} (padded "
                                                            f"{padded} < {extent} on spatial axis {axis}): is the "
                                                            f"input too small for this model?")


def check_not_empty(graph: Graph, node: Node) -> None:
    """A computed activation with no elements (e.g. a pooling window larger than the given input) is INVALID_MODEL:
    there is nothing to store, quantise or run."""
    for name in node.outputs:
        shape = graph.tensor(name).shape if name else None
        if shape is not None and 0 in shape:
            raise node_error(ErrorCode.INVALID_MODEL, node, f"output {name!r} has shape {list(shape)}: no elements "
                                                            f"(is the input too small for this model?)")


def fold_and_infer(graph: Graph, evaluate: NodeEvaluator) -> Graph:
    """Fold constants and shape subgraphs and complete every static shape, in one walk over the schedule (see the
    module doc). `evaluate` computes the folded values with the kernels."""
    keep: list[Node] = []
    for node in graph.nodes:
        with node_guard(node, "static shapes"):
            if _fold(graph, node, evaluate):
                continue
            infer_node_shapes(graph, node)
            check_channels(graph, node)
            check_window(graph, node)
            check_not_empty(graph, node)
        keep.append(node)
    graph.nodes = keep
    for name, value in graph.constants.items():
        info = graph.tensor(name)
        info.shape = tuple(int(d) for d in value.shape)
        info.dtype = value.dtype.name
    return graph.link()
