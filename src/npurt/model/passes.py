"""Graph passes over the IR: constant folding, shape completion, Identity/Dropout removal, BatchNormalization
folded into Conv, activation fusion (Conv+Relu -> ConvRelu ...), dead-code removal.

Folding and shape completion evaluate nodes through an `evaluate(node, inputs, opset) -> outputs` callable the
caller passes in, and fusion needs the set of supported ops: the model layer does not import the kernels (a layer
above it). `npurt.exec.evaluate.evaluate_node` runs the executor's own kernels (so folded results are exactly what
a run would compute) and falls back to `reference_evaluate` (`onnx.reference`) for ops the kernels lack.
"""
from __future__ import annotations

from typing import Callable, Collection

import numpy as np
import onnx
from onnx import helper, numpy_helper

from npurt.errors import ErrorCode, NpuError
from npurt.model.ir import Graph, Node
from npurt.model.onnx_import import topo_sort

# evaluate(node, inputs, opset) -> outputs: numpy in, numpy out (None for an omitted optional input).
NodeEvaluator = Callable[[Node, "list[np.ndarray | None]", int], "list[np.ndarray]"]

# Ops never folded even with constant inputs (random, or producing nothing useful to fold).
_NO_FOLD = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"}
# Activations the kernels can fuse into the op before them, and the ops that accept a fused activation.
FUSABLE_ACTIVATIONS = ("Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish")
FUSING_OPS = ("Conv", "ConvTranspose", "Gemm", "MatMul", "Add")


def node_proto(node: Node) -> onnx.NodeProto:
    """`node` as an ONNX NodeProto (attributes re-encoded), for the `onnx.reference` fallback."""
    attrs = {}
    for k, v in node.attrs.items():
        if isinstance(v, np.ndarray):
            v = numpy_helper.from_array(v)
        attrs[k] = v
    return helper.make_node(node.op_type, node.inputs, node.outputs, name=node.name, **attrs)


def reference_evaluate(node: Node, values: list[np.ndarray | None], opset: int) -> list[np.ndarray]:
    """Evaluate one node on numpy inputs with `onnx.reference` (a `NodeEvaluator`; the kernels' fallback)."""
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


def fold_constants(graph: Graph, evaluate: NodeEvaluator) -> Graph:
    """Replace every node whose inputs are all constants (or, for Shape/Size, statically shaped) by constants,
    computed with `evaluate`."""
    keep: list[Node] = []
    for node in graph.nodes:
        if node.op_type in ("Shape", "Size") and node.inputs[0] not in graph.constants:
            shape = graph.tensor(node.inputs[0]).shape
            if shape is not None:
                value = _static_shape_op(node, shape)
                graph.constants[node.outputs[0]] = value
                continue
        real_inputs = [i for i in node.inputs if i]
        if node.op_type not in _NO_FOLD and not node.domain and all(i in graph.constants for i in real_inputs):
            values = [graph.constants[i] if i else None for i in node.inputs]
            results = evaluate(node, values, graph.opset)
            for name, value in zip(node.outputs, results):
                if name:
                    info = graph.tensor(name)
                    want = np.dtype(info.dtype) if info.shape is not None or info.dtype != "float32" else None
                    value = np.asarray(value)
                    if want is not None and value.dtype != want:
                        value = value.astype(want)
                    graph.constants[name] = value
            continue
        keep.append(node)
    graph.nodes = keep
    for name, value in graph.constants.items():
        info = graph.tensor(name)
        info.shape = tuple(int(d) for d in value.shape)
        info.dtype = value.dtype.name
    return graph.link()


def _static_shape_op(node: Node, shape: tuple[int, ...]) -> np.ndarray:
    if node.op_type == "Size":
        return np.array(int(np.prod(shape)), np.int64)
    start = node.attrs.get("start", 0)
    end = node.attrs.get("end", None)
    return np.array(shape[slice(start, end)], np.int64)


def complete_shapes(graph: Graph, evaluate: NodeEvaluator) -> Graph:
    """Fill in shapes ONNX inference missed by evaluating the node on zeros of the known input shapes."""
    for node in graph.nodes:
        outs = [graph.tensor(o) for o in node.outputs if o]
        if all(t.shape is not None for t in outs):
            continue
        if node.domain:
            raise NpuError(ErrorCode.NOT_SUPPORTED, f"node {node.name!r}: custom op {node.domain}::{node.op_type} "
                                                    f"needs its output shapes declared in the model (value_info)")
        values = []
        for name in node.inputs:
            if not name:
                values.append(None)
            elif name in graph.constants:
                values.append(graph.constants[name])
            else:
                info = graph.tensor(name)
                if info.shape is None:
                    raise NpuError(ErrorCode.INVALID_MODEL,
                                   f"node {node.name!r} ({node.op_type}): shape of input {name!r} is unknown")
                values.append(np.zeros(info.shape, np.dtype(info.dtype)))
        results = evaluate(node, values, graph.opset)
        for name, value in zip(node.outputs, results):
            if name and graph.tensor(name).shape is None:
                info = graph.tensor(name)
                dt = np.asarray(value).dtype
                info.shape = tuple(int(d) for d in np.shape(value))
                if not (dt.kind == "f" and np.dtype(info.dtype).kind == "f"):
                    info.dtype = dt.name      # type unknown to ONNX inference: take the kernel's
    return graph


def remove_identities(graph: Graph) -> Graph:
    """Drop Identity and Dropout (inference: identity) nodes by renaming their consumers' inputs."""
    keep: list[Node] = []
    rename: dict[str, str] = {}
    outputs = set(graph.outputs)
    for node in graph.nodes:
        node.inputs = [rename.get(i, i) for i in node.inputs]
        if node.op_type in ("Identity", "Dropout") and (node.op_type == "Identity" or not _dropout_mask_used(node, graph)):
            src, dst = node.inputs[0], node.outputs[0]
            if dst in outputs:
                # The output keeps its name: retarget the producer instead, if that is safe.
                prod = _producer(keep, src)
                if prod is not None and src not in outputs and src not in graph.inputs \
                        and sum(src in n.inputs for n in keep) == 0:
                    prod.outputs = [dst if o == src else o for o in prod.outputs]
                    rename[src] = dst
                    continue
                node.op_type, node.attrs, node.inputs, node.outputs = "Identity", {}, [src], [dst]
                keep.append(node)
                continue
            rename[dst] = src
            continue
        keep.append(node)
    graph.nodes = keep
    return graph.link()


def _dropout_mask_used(node: Node, graph: Graph) -> bool:
    return len(node.outputs) > 1 and bool(node.outputs[1]) and (
        graph.tensor(node.outputs[1]).consumers or node.outputs[1] in graph.outputs)


def _producer(nodes: list[Node], name: str) -> Node | None:
    for n in reversed(nodes):
        if name in n.outputs:
            return n
    return None


def fold_batchnorm(graph: Graph) -> Graph:
    """Fold BatchNormalization into the Conv before it (Conv output used only by the BN, constant params)."""
    graph.link()
    dead: set[int] = set()
    for i, bn in enumerate(graph.nodes):
        if bn.op_type != "BatchNormalization" or len([o for o in bn.outputs if o]) != 1:
            continue
        x = graph.tensor(bn.inputs[0])
        if x.producer is None or len(x.consumers) != 1 or x.is_output:
            continue
        conv = graph.nodes[x.producer]
        if conv.op_type != "Conv" or conv.activation or conv.inputs[1] not in graph.constants:
            continue
        params = bn.inputs[1:5]
        if not all(p in graph.constants for p in params):
            continue
        if len(conv.inputs) > 2 and conv.inputs[2] and conv.inputs[2] not in graph.constants:
            continue
        scale, bias, mean, var = (graph.constants[p].astype(np.float64) for p in params)
        eps = float(bn.attrs.get("epsilon", 1e-5))
        w = graph.constants[conv.inputs[1]].astype(np.float64)
        b = graph.constants[conv.inputs[2]].astype(np.float64) if len(conv.inputs) > 2 and conv.inputs[2] \
            else np.zeros(w.shape[0])
        k = scale / np.sqrt(var + eps)
        w_name, b_name = f"{conv.name}.W_bn", f"{conv.name}.B_bn"
        graph.constants[w_name] = (w * k.reshape(-1, *([1] * (w.ndim - 1)))).astype(np.float32)
        graph.constants[b_name] = ((b - mean) * k + bias).astype(np.float32)
        graph.tensor(w_name).shape, graph.tensor(w_name).dtype = graph.constants[w_name].shape, "float32"
        graph.tensor(b_name).shape, graph.tensor(b_name).dtype = graph.constants[b_name].shape, "float32"
        conv.inputs = [conv.inputs[0], w_name, b_name]
        conv.outputs = [bn.outputs[0]]
        dead.add(i)
    graph.nodes = [n for j, n in enumerate(graph.nodes) if j not in dead]
    return drop_unused_constants(graph.link())


def _activation_params(act: Node, graph: Graph) -> tuple | None:
    if act.op_type == "Clip":
        if graph.opset < 11:
            return (act.attrs.get("min", -3.4028234663852886e38), act.attrs.get("max", 3.4028234663852886e38))
        lo = act.inputs[1] if len(act.inputs) > 1 and act.inputs[1] else None
        hi = act.inputs[2] if len(act.inputs) > 2 and act.inputs[2] else None
        if (lo and lo not in graph.constants) or (hi and hi not in graph.constants):
            raise KeyError("Clip bounds are not constant")
        return (float(graph.constants[lo]) if lo else None, float(graph.constants[hi]) if hi else None)
    if act.op_type == "LeakyRelu":
        return (float(act.attrs.get("alpha", 0.01)),)
    if act.op_type == "HardSigmoid":
        return (float(act.attrs.get("alpha", 0.2)), float(act.attrs.get("beta", 0.5)))
    return None


def fuse_activations(graph: Graph, supported: Collection[str]) -> Graph:
    """Fuse an activation into the Conv/ConvTranspose/Gemm/MatMul/Add before it when that op's output has no
    other user and the op is in `supported` (it runs the fused activation); the fused node shows as e.g.
    `ConvRelu` in reports."""
    supported = set(supported)
    graph.link()
    dead: set[int] = set()
    for i, act in enumerate(graph.nodes):
        if act.op_type not in FUSABLE_ACTIVATIONS or act.domain:
            continue
        x = graph.tensor(act.inputs[0])
        if x.producer is None or len(x.consumers) != 1 or x.is_output or not x.is_float:
            continue
        op = graph.nodes[x.producer]
        if op.op_type not in FUSING_OPS or op.activation or op.op_type not in supported or op.domain:
            continue
        try:
            params = _activation_params(act, graph)
        except KeyError:
            continue
        op.activation, op.activation_params = act.op_type, params
        op.outputs = [act.outputs[0] if o == act.inputs[0] else o for o in op.outputs]
        dead.add(i)
    graph.nodes = [n for j, n in enumerate(graph.nodes) if j not in dead]
    return drop_unused_constants(graph.link())


def remove_dead_nodes(graph: Graph) -> Graph:
    """Drop nodes none of whose outputs reach a graph output."""
    needed = set(graph.outputs)
    keep: list[Node] = []
    for node in reversed(graph.nodes):
        if any(o in needed for o in node.outputs if o):
            keep.append(node)
            needed.update(i for i in node.inputs if i)
    graph.nodes = list(reversed(keep))
    return drop_unused_constants(graph.link())


def drop_unused_constants(graph: Graph) -> Graph:
    """Forget constants and tensors nothing reads any more."""
    used = {i for n in graph.nodes for i in n.inputs if i} | set(graph.outputs) | set(graph.inputs)
    used |= {o for n in graph.nodes for o in n.outputs if o}
    for name in [c for c in graph.constants if c not in used]:
        del graph.constants[name]
    for name in [t for t in graph.tensors if t not in used]:
        del graph.tensors[name]
    return graph.link()


def optimize(graph: Graph, evaluate: NodeEvaluator, supported: Collection[str]) -> Graph:
    """The full pass pipeline, ending in a fresh topological schedule. `evaluate` computes folded constants and
    missing shapes; `supported` is the op set the executor runs (activations fuse only into those)."""
    fold_constants(graph, evaluate)
    complete_shapes(graph, evaluate)
    fold_constants(graph, evaluate)          # shapes completed above may enable more Shape folds
    remove_identities(graph)
    fold_batchnorm(graph)
    fuse_activations(graph, supported)
    remove_dead_nodes(graph)
    graph.nodes = topo_sort(graph.nodes, set(graph.inputs) | set(graph.constants))
    graph.link()
    for name, info in graph.tensors.items():
        if info.shape is None:
            raise NpuError(ErrorCode.INVALID_MODEL, f"cannot infer the static shape of tensor {name!r}")
    return graph
