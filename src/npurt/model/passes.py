"""Graph passes over the IR: constant folding and exact static shapes (`npurt.model.shapes`), Identity/Dropout
removal, per-channel affine ops (BatchNormalization, Mul / Add by channel constants) folded into Conv /
ConvTranspose, activation fusion (Conv+Relu -> ConvRelu ...), dead-code removal.

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
FUSABLE_ACTIVATIONS = ("Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Swish")
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


# Per-channel affine ops folded into the Conv / ConvTranspose before them (BatchNormalization, and the Mul / Add /
# Sub / Div by a per-channel constant that exporters such as paddle2onnx write instead of a BN).
AFFINE_OPS = ("BatchNormalization", "Mul", "Add", "Sub", "Div")


def fold_affine(graph: Graph) -> Graph:
    """Fold per-output-channel affine ops (BatchNormalization; Mul / Add / Sub / Div by a constant that varies only
    along the channel axis) into the Conv or ConvTranspose producing their input, chains included: the int8 model
    then quantises the conv's final output instead of a raw accumulator whose channels have unrelated ranges."""
    graph.link()
    dead: set[int] = set()
    for i, node in enumerate(graph.nodes):
        if node.op_type in AFFINE_OPS and not node.domain and len([o for o in node.outputs if o]) == 1:
            with node_guard(node, "folding it into the convolution before it"):
                if _fold_one_affine(graph, node):
                    dead.add(i)
    graph.nodes = [n for j, n in enumerate(graph.nodes) if j not in dead]
    return drop_unused_constants(graph.link())


def _channel_values(graph: Graph, name: str, shape: tuple[int, ...]) -> np.ndarray | None:
    """The constant `name` as one float64 value per channel of an output of `shape` (N, M, ...), when it
    broadcasts along the channel axis only; None otherwise."""
    c = graph.constants.get(name)
    if c is None or c.ndim > len(shape) or np.dtype(c.dtype).kind != "f":
        return None
    dims = (1,) * (len(shape) - c.ndim) + tuple(c.shape)
    if any(d != 1 for k, d in enumerate(dims) if k != 1) or dims[1] not in (1, shape[1]):
        return None
    return np.broadcast_to(c.astype(np.float64).reshape(-1), (shape[1],))


def _affine(graph: Graph, node: Node, x: str, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray] | None:
    """`node` as y = x * k + b per channel (k, b float64 vectors), or None when it is not such an op of `x`."""
    ins = node.inputs
    if node.op_type == "BatchNormalization":        # parameters are (M,) vectors
        params = [graph.constants.get(p) for p in ins[1:5]]
        if ins[0] != x or len(params) != 4 or any(p is None or p.shape != (shape[1],) for p in params):
            return None
        params = [p.astype(np.float64) for p in params]
        scale, bias, mean, var = params
        k = scale / np.sqrt(var + float(node.attrs.get("epsilon", 1e-5)))
        return k, bias - mean * k
    if len(ins) != 2 or x not in ins or (node.op_type in ("Sub", "Div") and ins[0] != x):
        return None
    c = _channel_values(graph, ins[1] if ins[0] == x else ins[0], shape)
    if c is None or ins[0] == ins[1]:
        return None
    one, zero = np.ones_like(c), np.zeros_like(c)
    if node.op_type == "Mul":
        return c, zero
    if node.op_type == "Add":
        return one, c
    if node.op_type == "Sub":
        return one, -c
    return (1.0 / c, zero) if np.all(c != 0) else None


def _fold_one_affine(graph: Graph, node: Node) -> bool:
    """Fold `node` into the Conv / ConvTranspose that produces its input, if that is possible; True when folded."""
    for x in node.inputs[:2]:
        info = graph.tensors.get(x)
        if info is None or info.producer is None or len(info.consumers) != 1 or info.is_output \
                or info.shape is None or len(info.shape) < 3 or not info.is_float or x in graph.keep:
            continue
        conv = graph.nodes[info.producer]
        if conv.op_type not in ("Conv", "ConvTranspose") or conv.activation or conv.domain \
                or conv.inputs[1] not in graph.constants or conv.outputs[0] != x \
                or (len(conv.inputs) > 2 and conv.inputs[2] and conv.inputs[2] not in graph.constants):
            continue
        affine = _affine(graph, node, x, info.shape)
        out = graph.tensors.get(node.outputs[0])
        if affine is None or out is None or out.shape != info.shape:
            continue
        k, b = affine
        w = graph.constants[conv.inputs[1]].astype(np.float64)
        bias = graph.constants[conv.inputs[2]].astype(np.float64) if len(conv.inputs) > 2 and conv.inputs[2] \
            else np.zeros(len(k))
        if conv.op_type == "Conv":
            w = w * k.reshape(-1, *([1] * (w.ndim - 1)))
        else:                           # ConvTranspose: W is (C_in, M / groups, k...), output channel g * M/g + j
            g = int(conv.attrs.get("group", 1))
            per = w.shape[1]
            w = (w.reshape(g, -1, per, *w.shape[2:]) * k.reshape(g, 1, per, *([1] * (w.ndim - 2)))).reshape(w.shape)
        tag = f"{conv.name}.{node.op_type}{len(graph.constants)}"
        for name, value in ((f"{tag}.W", w), (f"{tag}.B", bias * k + b)):
            graph.constants[name] = value.astype(np.float32)
            graph.tensor(name).shape, graph.tensor(name).dtype = value.shape, "float32"
        conv.inputs = [conv.inputs[0], f"{tag}.W", f"{tag}.B"]
        conv.outputs = [node.outputs[0]]
        out.producer = info.producer    # the next affine op of a chain finds the conv
        return True
    return False


def fuse_hardswish(graph: Graph) -> Graph:
    """Replace the decomposed hard-swish `x * Clip(x + 3, 0, 6) / 6` (as exporters write it: Add, Clip, Mul, then
    Div by 6 or Mul by 1/6) with one HardSwish, which then fuses into the op before it; an int8 model would
    otherwise quantise three intermediate tensors of every activation."""
    graph.link()
    dead: set[int] = set()
    for clip in graph.nodes:
        chain = _hardswish_chain(graph, clip) if clip.op_type == "Clip" and not clip.domain else None
        if chain is None:
            continue
        add, mul, last, x = chain
        if dead & {add, mul}:
            continue
        dead |= {add, mul, graph.tensor(clip.outputs[0]).producer}
        node = graph.nodes[last]
        node.op_type, node.attrs, node.inputs = "HardSwish", {}, [x]
    graph.nodes = [n for j, n in enumerate(graph.nodes) if j not in dead]
    return drop_unused_constants(graph.link())


def fuse_silu(graph: Graph) -> Graph:
    """Replace SiLU as exporters write it, `Mul(x, Sigmoid(x))` with the Sigmoid read by that Mul only, with one
    Swish node (x -> x * sigmoid(x)), as the vendor's toolkit does before calibration: an int8 model then stores x
    and the product, not also the sigmoid rounded to 1/255 (an error up to |x| / 510 in every activation of a
    SiLU network)."""
    graph.link()
    dead: set[int] = set()
    for k, mul in enumerate(graph.nodes):
        if mul.op_type != "Mul" or mul.domain or mul.activation or len(mul.inputs) != 2:
            continue
        for x, s in (mul.inputs, mul.inputs[::-1]):
            info = graph.tensors.get(s)
            if info is None or info.producer is None or info.is_output or s in graph.keep or info.consumers != [k]:
                continue
            sig = graph.nodes[info.producer]
            if sig.op_type == "Sigmoid" and not sig.domain and not sig.activation and sig.inputs == [x] \
                    and graph.tensor(x).shape == graph.tensor(mul.outputs[0]).shape:
                dead.add(info.producer)
                mul.op_type, mul.attrs, mul.inputs = "Swish", {}, [x]
                break
    graph.nodes = [n for j, n in enumerate(graph.nodes) if j not in dead]
    return drop_unused_constants(graph.link())


def _constant_is(graph: Graph, name: str, value: float) -> bool:
    c = graph.constants.get(name)
    return c is not None and c.size == 1 and np.dtype(c.dtype).kind == "f" and abs(float(c.reshape(-1)[0]) - value) < 1e-6


def _only_consumer(graph: Graph, name: str) -> Node | None:
    info = graph.tensors.get(name)
    if info is None or len(info.consumers) != 1 or info.is_output:
        return None
    return graph.nodes[info.consumers[0]]


def _hardswish_chain(graph: Graph, clip: Node) -> tuple[int, int, int, str] | None:
    """(Add index, Mul index, index of the final Div / Mul, x) when `clip` is the Clip of a decomposed hard-swish."""
    try:
        bounds = _activation_params(clip, graph)
    except KeyError:
        return None
    t = graph.tensors.get(clip.inputs[0])
    if bounds != (0.0, 6.0) or t is None or t.producer is None or len(t.consumers) != 1 or t.is_output \
            or t.name in graph.keep or clip.outputs[0] in graph.keep:
        return None
    add = graph.nodes[t.producer]
    if add.op_type != "Add" or add.domain or add.activation or len(add.inputs) != 2:
        return None
    x = add.inputs[1] if _constant_is(graph, add.inputs[0], 3.0) else add.inputs[0]
    if not _constant_is(graph, add.inputs[1] if x == add.inputs[0] else add.inputs[0], 3.0):
        return None
    mul = _only_consumer(graph, clip.outputs[0])
    if mul is None or mul.op_type != "Mul" or sorted(mul.inputs) != sorted([x, clip.outputs[0]]):
        return None
    last = _only_consumer(graph, mul.outputs[0])
    if last is None or len(last.inputs) != 2 or last.inputs[0] != mul.outputs[0] or not (
            (last.op_type == "Div" and _constant_is(graph, last.inputs[1], 6.0))
            or (last.op_type == "Mul" and _constant_is(graph, last.inputs[1], 1.0 / 6.0))):
        return None
    if graph.tensor(x).shape != graph.tensor(last.outputs[0]).shape:
        return None
    return (t.producer, graph.tensor(clip.outputs[0]).consumers[0], graph.tensor(mul.outputs[0]).consumers[0], x)


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
    if act.op_type == "Swish":
        return (float(act.attrs.get("alpha", 1.0)),)
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
    fold_affine(graph)
    fuse_hardswish(graph)
    fuse_silu(graph)
    fuse_activations(graph, supported)
    remove_dead_nodes(graph)
    graph.nodes = topo_sort(graph.nodes, set(graph.inputs) | set(graph.constants))
    graph.link()
    for name, info in graph.tensors.items():
        if info.shape is None:
            raise NpuError(ErrorCode.INVALID_MODEL, f"cannot infer the static shape of tensor {name!r}")
    return graph
