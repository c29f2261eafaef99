"""The quantisation techniques written into the float ONNX model itself (`npurt optimize`), for the vendors' own
quantisers (rknn-toolkit2's build, onnxruntime's QDQ quantisation).

The techniques run on the optimised IR (`npurt.model.techniques`), where BatchNormalization and per-channel Mul /
Add are folded into the Conv before them. Each changed IR layer is written back into the ONNX graph in place:
only initializers (or the values of Constant nodes, where an exporter keeps weights) change; nodes, names and the folded affine ops stay. An IR Conv's weight is the ONNX weight times
the folded chain's per-channel factor K, so the new ONNX weight is W_ir / K; a change of the IR bias is added to the
chain's last additive term (a BatchNormalization's B, an Add's constant; through a Mul / Div after it, divided by
its factor), else to the Conv's own bias (a Conv without one gains one). Channels with K = 0 keep their values:
their output does not depend on them.
"""
from __future__ import annotations

import copy
import json
from typing import Collection, Sequence

import numpy as np
import onnx
from onnx import numpy_helper

from npurt.errors import ErrorCode, NpuError
from npurt.model import calibrate as calib
from npurt.model.compiler import _per_input
from npurt.model.ir import Graph, Node
from npurt.model.onnx_import import import_onnx, load_onnx, name_nodes, sort_proto_nodes
from npurt.model.options import parse_techniques
from npurt.model.passes import AFFINE_OPS, NodeEvaluator, _affine, optimize
from npurt.model.techniques import apply_techniques, quant_layers

META_KEY = "npurt.optimize"
"""The metadata_props key of a written model: the techniques applied to it so far and what the last run did
(JSON)."""


def _refuse(msg: str) -> NpuError:
    return NpuError(ErrorCode.NOT_SUPPORTED, f"cannot write the techniques into this ONNX model: {msg}")


def _chain(raw: Graph, start: str, ir: Node) -> list[tuple[Node, np.ndarray, np.ndarray]] | None:
    """The per-channel affine ops the optimiser folded into the IR Conv `ir` whose ONNX output is `start`, each with
    its (k, b) (y = k * x + b per channel), in order: the ops fold_affine folds (each the only reader of the tensor
    before it), up to the IR Conv's output, or up to the input of the activation fused into it. None when the chain
    does not end there (the optimiser did something else)."""
    shape = raw.tensors[start].shape
    if shape is None or len(shape) < 2:
        return None
    steps, x = [], start
    while True:
        info = raw.tensors[x]
        if len(info.consumers) != 1 or info.is_output:
            break
        node = raw.nodes[info.consumers[0]]
        step = _affine(raw, node, x, shape) if node.op_type in AFFINE_OPS and not node.domain else None
        if step is None or raw.tensors[node.outputs[0]].shape != shape:
            break
        steps.append((node, step[0], step[1]))
        x = node.outputs[0]
    if not ir.activation:
        return steps if x == ir.outputs[0] else None
    return steps if x != ir.outputs[0] and _feeds(raw, x, ir.outputs[0]) else None


def _feeds(raw: Graph, src: str, dst: str, depth: int = 4) -> bool:
    """True when `dst` is computed from `src` within `depth` nodes (a fused activation, decomposed ones included:
    hard-swish is four nodes)."""
    frontier = {dst}
    for _ in range(depth):
        producers = [raw.tensors[t].producer for t in frontier if t in raw.tensors]
        frontier = {i for p in producers if p is not None for i in raw.nodes[p].inputs if i}
        if src in frontier:
            return True
    return False


def _compose(steps: list[tuple[Node, np.ndarray, np.ndarray]], channels: int) -> tuple[np.ndarray, np.ndarray]:
    """(K, A) of a chain: its output is K * x + A per channel."""
    k, a = np.ones(channels), np.zeros(channels)
    for _, ks, bs in steps:
        k, a = k * ks, a * ks + bs
    return k, a


def _constant_tensors(proto: onnx.ModelProto) -> dict[str, onnx.TensorProto]:
    """{name: the TensorProto holding its value} of the graph's initializers and Constant nodes (`value` attribute;
    exporters such as paddle2onnx keep every weight in one), which the writer edits in place."""
    out = {i.name: i for i in proto.graph.initializer}
    for n in proto.graph.node:
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx") and n.output:
            value = next((a.t for a in n.attribute if a.name == "value"), None)
            if value is not None:
                out[n.output[0]] = value
    return out


def _set_initializer(proto: onnx.ModelProto, node: onnx.NodeProto, position: int, value: np.ndarray,
                     like: onnx.TensorProto | None, tag: str) -> None:
    """Give `node`'s input `position` the value: its initializer (or Constant node's value) replaced in place when
    only that input reads it, else a new initializer (named after the node) that the input then names."""
    g = proto.graph
    dtype = numpy_helper.to_array(like).dtype if like is not None else np.dtype(np.float32)
    old = node.input[position] if position < len(node.input) else ""
    readers = sum(i == old for n in g.node for i in n.input) if old else 0
    if like is not None and readers == 1 and old not in {o.name for o in g.output}:
        like.CopyFrom(numpy_helper.from_array(value.astype(dtype), like.name))
        return
    taken = {i.name for i in g.initializer} | {o for n in g.node for o in n.output} | {i.name for i in g.input}
    name = f"{node.name or node.output[0]}.{tag}"
    while name in taken:
        name += "_"
    g.initializer.append(numpy_helper.from_array(value.astype(dtype), name))
    while len(node.input) <= position:
        node.input.append("")
    node.input[position] = name


def _per_channel_like(old: np.ndarray, values: np.ndarray, rank: int) -> np.ndarray:
    """`values` (one per channel) shaped to broadcast along axis 1 of a rank-`rank` tensor, as `old` did."""
    tail = (1,) * (rank - 2)
    if old.ndim >= rank - 1:
        return values.reshape((1,) * (old.ndim - rank + 1) + (values.size,) + tail)
    return values.reshape((values.size,) + tail)


def _add_to_bias(proto: onnx.ModelProto, node_of: dict[str, onnx.NodeProto], raw: Graph, onode: onnx.NodeProto,
                 steps: list[tuple[Node, np.ndarray, np.ndarray]], delta: np.ndarray, rank: int) -> None:
    """Add `delta` (per channel) to the chain's output: to the additive term of its last op that has one (a
    BatchNormalization's B, an Add's / Sub's constant), carried back through the Mul / Div after it, else to the
    node's own bias (added when it has none)."""
    inits = _constant_tensors(proto)
    for node, k, _ in reversed(steps):
        target = node_of.get(node.name)
        if node.op_type == "BatchNormalization":
            position, sign = 2, 1.0
        elif node.op_type in ("Add", "Sub"):
            position = 1 if node.inputs[1] in raw.constants else 0
            sign = -1.0 if node.op_type == "Sub" else 1.0
        else:
            delta = np.where(k != 0, delta / np.where(k != 0, k, 1.0), 0.0)     # Mul / Div: before them
            continue
        init = inits.get(target.input[position]) if target is not None else None
        if init is None:
            raise _refuse(f"the constant of node {node.name!r} is neither an initializer nor a Constant")
        old = numpy_helper.to_array(init).astype(np.float64)
        values = np.broadcast_to(old.reshape(-1), delta.shape) + sign * delta if old.size in (1, delta.size) \
            else None
        if values is None:
            raise _refuse(f"the constant of node {node.name!r} is not one value per channel")
        _set_initializer(proto, target, position, values if node.op_type == "BatchNormalization"
                         else _per_channel_like(old, values, rank), init, "bias")
        return
    b_init = inits.get(onode.input[2]) if len(onode.input) > 2 and onode.input[2] else None
    if len(onode.input) > 2 and onode.input[2] and b_init is None:
        raise _refuse(f"the bias of node {onode.name!r} is neither an initializer nor a Constant")
    old = numpy_helper.to_array(b_init).astype(np.float64) if b_init is not None else np.zeros(delta.size)
    _set_initializer(proto, onode, 2, (old.reshape(-1) + delta).reshape(old.shape), b_init, "B")


def _write_layer(proto: onnx.ModelProto, node_of: dict[str, onnx.NodeProto], raw: Graph, ir: Node,
                 weight: np.ndarray | None, bias_delta: np.ndarray | None, axis: int) -> None:
    """Write an IR layer's new weight and / or bias change into the ONNX graph (see the module doc)."""
    onode = node_of.get(ir.name)
    if onode is None or onode.op_type != ir.op_type:
        raise _refuse(f"node {ir.name!r} has no {ir.op_type} counterpart in the ONNX graph")
    inits = _constant_tensors(proto)
    w_init = inits.get(onode.input[1])
    if w_init is None:
        raise _refuse(f"the weight of node {ir.name!r} is neither an initializer nor a Constant")
    raw_node = next(n for n in raw.nodes if n.name == ir.name)
    out = raw_node.outputs[0]
    if ir.op_type == "Conv":
        steps = _chain(raw, out, ir)
    else:                               # Gemm / MatMul: nothing is folded into them
        steps = [] if out == ir.outputs[0] or (ir.activation and _feeds(raw, out, ir.outputs[0])) else None
    if steps is None:
        raise _refuse(f"the ops between node {ir.name!r} and its fused output are not per-channel affine")
    old_w = numpy_helper.to_array(w_init).astype(np.float64)
    k, _ = _compose(steps, old_w.shape[axis])
    live = k != 0
    if weight is not None:
        shape = [1] * old_w.ndim
        shape[axis] = -1
        new = np.where(live.reshape(shape), weight / np.where(live, k, 1.0).reshape(shape), old_w)
        _set_initializer(proto, onode, 1, new, w_init, "W")
    if bias_delta is not None and np.any(bias_delta[live] != 0):
        rank = len(raw.tensors[raw_node.outputs[0]].shape)
        _add_to_bias(proto, node_of, raw, onode, steps, np.where(live, bias_delta, 0.0), rank)


def write_techniques(model: "str | bytes | onnx.ModelProto", techniques: "str | Sequence[str]", dataset: object,
                     mean: list | None, std: list | None, *, evaluate: NodeEvaluator, supported: Collection[str],
                     input_shapes: dict | None = None, target: str | None = None
                     ) -> tuple[onnx.ModelProto, dict[str, dict[str, int]]]:
    """The float ONNX `model` with `techniques` applied to its initializers (see the module doc) and what each did;
    `dataset` (any calibration form, None for CLE alone) drives bias correction and rounding, normalised by `mean` /
    `std` (as `npurt.compile` takes them: one list per input, or one for all, or None). `target` ("qnn": the first layer's weights on the HTP's symmetric grid, else
    the toolkit's asymmetric one) is recorded in the model's metadata with the report."""
    chosen = parse_techniques(techniques)
    if not chosen:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "no technique chosen: use cle, bias and / or adaround")
    proto = load_onnx(model)
    done = {p.key: p.value for p in proto.metadata_props}.get(META_KEY)
    if done and "bias" in chosen and "bias" in json.loads(done).get("techniques", []):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "this model's biases are already corrected (its npurt.optimize "
                                                   "metadata says so): correcting again would subtract the shift "
                                                   "twice; start from the original model")
    named = load_onnx(proto)
    sort_proto_nodes(named)
    name_nodes(named)
    by_output = {n.output[0]: n for n in proto.graph.node if n.output}
    node_of = {n.name: by_output[n.output[0]] for n in named.graph.node if n.output and n.output[0] in by_output}
    raw = import_onnx(proto, input_shapes)
    graph = optimize(copy.deepcopy(raw), evaluate, supported)
    mean = _per_input(mean, len(graph.inputs), "mean") if mean is not None else None
    std = _per_input(std, len(graph.inputs), "std") if std is not None else None
    samples = None
    if dataset is not None:
        samples = calib.normalize_samples(dataset, graph.inputs)
        calib.check_samples(samples, graph)
    layers = {layer.node.name: layer for layer in quant_layers(graph)}

    def snapshot() -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
        return {name: (graph.constants[l.weight], graph.constants[l.node.inputs[2]]
                       if len(l.node.inputs) > 2 and l.node.inputs[2] else None) for name, l in layers.items()}
    before = snapshot()
    report = apply_techniques(graph, chosen, samples, mean, std, evaluate, asymmetric_first=target != "qnn")
    for name, (w, b) in snapshot().items():
        w0, b0 = before[name]
        new_w = None if w is w0 or np.array_equal(w, w0) else w.astype(np.float64)
        delta = None if b is None or (b0 is not None and np.array_equal(b, b0)) else \
            b.astype(np.float64) - (b0.astype(np.float64) if b0 is not None else 0.0)
        if new_w is not None or delta is not None:
            _write_layer(proto, node_of, raw, layers[name].node, new_w, delta, layers[name].axis)
    meta = {p.key: p for p in proto.metadata_props}
    entry = meta.get(META_KEY) or proto.metadata_props.add()
    before = json.loads(done).get("techniques", []) if done else []
    entry.key, entry.value = META_KEY, json.dumps({"techniques": list(dict.fromkeys([*before, *chosen])),
                                                   "target": target, **report})
    return proto, report
