"""Graph passes over the IR: constant folding and exact static shapes (`npurt.model.shapes`), Identity/Dropout
removal, BatchNormalization folded into Conv, activation fusion (Conv+Relu -> ConvRelu ...), dead-code removal.

Folding evaluates nodes through an `evaluate(node, inputs, opset) -> outputs` callable the caller passes in, and
fusion needs the set of supported ops: the model layer does not import the kernels (a layer above it).
`npurt.exec.evaluate.evaluate_node` runs the executor's own kernels (so folded results are exactly what a run would
compute) and falls back to `onnx.reference` for ops the kernels lack.
"""
from __future__ import annotations

from typing import Collection

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.model.ir import Graph, Node, node_guard
from npurt.model.onnx_import import topo_sort
from npurt.model.shapes import NodeEvaluator, fold_and_infer

# Activations the kernels can fuse into the op before them, and the ops that accept a fused activation.
FUSABLE_ACTIVATIONS = ("Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish")
FUSING_OPS = ("Conv", "ConvTranspose", "Gemm", "MatMul", "Add")


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
        with node_guard(bn, "folding BatchNormalization into the Conv before it"):
            if _fold_one_batchnorm(graph, bn):
                dead.add(i)
    graph.nodes = [n for j, n in enumerate(graph.nodes) if j not in dead]
    return drop_unused_constants(graph.link())


def _fold_one_batchnorm(graph: Graph, bn: Node) -> bool:
    """Fold `bn` into the Conv that produces its input, if that is possible; True when folded."""
    x = graph.tensor(bn.inputs[0])
    if x.producer is None or len(x.consumers) != 1 or x.is_output or x.name in graph.keep:
        return False
    conv = graph.nodes[x.producer]
    if conv.op_type != "Conv" or conv.activation or conv.inputs[1] not in graph.constants:
        return False
    params = bn.inputs[1:5]
    if not all(p in graph.constants for p in params):
        return False
    if len(conv.inputs) > 2 and conv.inputs[2] and conv.inputs[2] not in graph.constants:
        return False
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
    return True



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
        if x.producer is None or len(x.consumers) != 1 or x.is_output or not x.is_float or x.name in graph.keep:
            continue
        op = graph.nodes[x.producer]
        if op.op_type not in FUSING_OPS or op.activation or op.op_type not in supported or op.domain:
            continue
        try:
            with node_guard(act, "fusing the activation"):
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
    """The full pass pipeline, ending in a fresh topological schedule. `evaluate` computes folded constants (never
    shapes: those come from the ONNX shape rules); `supported` is the op set the executor runs (activations fuse
    only into those)."""
    fold_and_infer(graph, evaluate)
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
