"""Mixed precision (the vendor's hybrid quantisation): chosen layers of an int8 model compute in fp16.

Rules, applied to the optimised and calibrated graph:
- a float layer's weights are stored fp16, and every float tensor it reads or writes is stored fp16 (so an int8
  layer feeding a float layer writes its result in fp16, as an int8 convolution with a float output does);
- an int8 layer reading an fp16 tensor reads it through a `Convert` op inserted before its first such reader: the
  conversion writes `NAME#int8`, quantised with the tensor's calibrated parameters; one conversion per tensor.

`Convert` is npurt's storage-conversion op: the identity on logical values, a real step of the schedule whose
output has its own slot in the plan (and row in the memory table).
"""
from __future__ import annotations

from typing import Sequence

from npurt.errors import ErrorCode, NpuError
from npurt.model.ir import Graph, Node

CONVERT = "Convert"


def resolve_float_layers(graph: Graph, names: Sequence[str]) -> list[Node]:
    """The nodes named by `names` (a node's name or the name of a tensor it produces), in schedule order;
    INVALID_ARGUMENT naming the unknown ones."""
    by_name: dict[str, Node] = {}
    for node in graph.nodes:
        by_name.setdefault(node.name, node)
        for o in node.outputs:
            if o:
                by_name.setdefault(o, node)
    unknown = [n for n in names if n not in by_name]
    if unknown:
        known = [o for node in graph.nodes for o in node.outputs if o][:8]
        raise NpuError(ErrorCode.INVALID_ARGUMENT,
                       f"float_layers: no layer or tensor named {', '.join(map(repr, unknown))} in the compiled "
                       f"graph (layers are named by the tensor they produce, as `npurt accuracy` lists them, e.g. "
                       f"{', '.join(known)})")
    chosen = {id(by_name[n]) for n in names}
    return [node for node in graph.nodes if id(node) in chosen]


def split_precision(graph: Graph, float_nodes: Sequence[Node],
                    qparams: dict[str, tuple[float, int]]) -> set[str]:
    """Insert the `Convert` ops (their outputs get the source's `qparams`) and return the names of the tensors
    stored fp16; `graph` is edited in place and relinked."""
    floats = {id(n) for n in float_nodes}
    fp16: set[str] = set()
    for node in graph.nodes:
        if id(node) in floats:
            fp16.update(t for t in list(node.inputs) + list(node.outputs)
                        if t and t not in graph.constants and graph.tensors[t].is_float)
    nodes: list[Node] = []
    converted: dict[str, str] = {}
    for node in graph.nodes:
        if id(node) not in floats:
            for k, t in enumerate(node.inputs):
                if t not in fp16:
                    continue
                if t not in converted:
                    out = converted[t] = f"{t}#int8"
                    info = graph.tensor(out)
                    info.shape, info.dtype = graph.tensors[t].shape, graph.tensors[t].dtype
                    qparams[out] = qparams[t]
                    nodes.append(Node(out, CONVERT, [t], [out]))
                node.inputs[k] = converted[t]
        nodes.append(node)
    graph.nodes = nodes
    graph.link()
    return fp16
