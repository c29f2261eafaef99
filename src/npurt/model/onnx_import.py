"""ONNX → IR: load a model (path, bytes or ModelProto; initializers, `Constant` nodes, external data), fix the
input shapes, run ONNX shape inference, and build a `Graph` with nodes in a topological schedule.

Every failure is an `NpuError`: unreadable or malformed ONNX is INVALID_MODEL, a dynamic dimension nobody resolved
or an input shape that contradicts the model is INVALID_ARGUMENT.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import onnx
from onnx import helper, numpy_helper

from npurt.errors import ErrorCode, NpuError
from npurt.model.file_format import not_a_model, refuse_vendor_model
from npurt.model.ir import Graph, Node, TensorInfo

MIN_OPSET = 7   # the brief targets opset 11+; the ONNX "light" zoo models are opset 9 and import fine


def _invalid(msg: str) -> NpuError:
    return NpuError(ErrorCode.INVALID_MODEL, msg)


def load_onnx(model: "str | os.PathLike | bytes | onnx.ModelProto") -> onnx.ModelProto:
    """The ModelProto of `model` with external data loaded; INVALID_MODEL if it cannot be parsed."""
    if isinstance(model, onnx.ModelProto):
        proto = onnx.ModelProto()
        proto.CopyFrom(model)
        return proto
    if isinstance(model, (bytes, bytearray, memoryview)):
        proto = onnx.ModelProto()
        try:
            proto.ParseFromString(bytes(model))
        except Exception:  # protobuf DecodeError and friends
            proto = None
        if not _is_model(proto):
            refuse_vendor_model(model)
            raise not_a_model(f"model of {len(bytes(model))} bytes")
        _check_no_external(proto)
        return proto
    path = Path(os.fspath(model))
    if not path.is_file():
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"model file not found: {path}")
    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception:
        proto = None
    if not _is_model(proto):
        refuse_vendor_model(path, path.name)
        raise not_a_model(path.name)
    try:
        onnx.external_data_helper.load_external_data_for_model(proto, str(path.parent))
    except Exception as exc:
        raise _invalid(f"{path.name}: cannot load external data: {exc}") from None
    return proto


def _is_model(proto: onnx.ModelProto | None) -> bool:
    """True for a parsed ModelProto that has a graph: protobuf parses many foreign bytes (a PNG, text) into an empty
    or meaningless message without an error."""
    return proto is not None and proto.HasField("graph")


def _check_no_external(proto: onnx.ModelProto) -> None:
    for init in proto.graph.initializer:
        if init.data_location == onnx.TensorProto.EXTERNAL:
            raise _invalid(f"initializer {init.name!r} uses external data; pass the model by path instead of bytes")


def default_opset(proto: onnx.ModelProto) -> int:
    """The opset version of the default ONNX domain."""
    for imp in proto.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return int(imp.version)
    raise _invalid("model imports no default-domain opset")


def _validate(proto: onnx.ModelProto) -> None:
    g = proto.graph
    if not g.output:
        raise _invalid("graph has no outputs (truncated or empty model?)")
    if not g.node:
        raise _invalid("graph has no nodes (truncated or empty model?)")
    opset = default_opset(proto)
    if opset < MIN_OPSET:
        raise _invalid(f"opset {opset} is older than the supported minimum {MIN_OPSET}")
    try:
        onnx.checker.check_model(proto)
    except onnx.checker.ValidationError as exc:
        if "Field 'shape' of 'type' is required" in str(exc):
            return      # outputs declared without a shape: onnxruntime accepts them, so do we
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "validation failed"
        raise _invalid(f"malformed ONNX model: {first}") from None
    except Exception as exc:   # e.g. >2 GiB protos
        raise _invalid(f"malformed ONNX model: {exc}") from None


def _dims_of(vi: onnx.ValueInfoProto) -> list[int | str | None] | None:
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return None
    dims: list[int | str | None] = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            dims.append(int(d.dim_value))
        elif d.HasField("dim_param"):
            dims.append(d.dim_param)
        else:
            dims.append(None)
    return dims


def _set_dims(vi: onnx.ValueInfoProto, shape: Sequence[int]) -> None:
    tt = vi.type.tensor_type
    tt.ClearField("shape")
    tt.shape.SetInParent()
    for d in shape:
        tt.shape.dim.add().dim_value = int(d)


def fix_input_shapes(proto: onnx.ModelProto, input_shapes: Mapping[str, Sequence[int]] | None) -> None:
    """Give every graph input a static shape: from `input_shapes` where given (must agree with the model's
    static dims), else the model's own; a dynamic dimension left unresolved is INVALID_ARGUMENT."""
    given = dict(input_shapes or {})
    inits = {i.name for i in proto.graph.initializer}
    names = [vi.name for vi in proto.graph.input if vi.name not in inits]
    unknown = set(given) - set(names)
    if unknown:
        raise NpuError(ErrorCode.INVALID_ARGUMENT,
                       f"input_shapes names unknown inputs {sorted(unknown)}; the model's inputs are {names}")
    for vi in proto.graph.input:
        if vi.name in inits:
            continue
        dims = _dims_of(vi)
        if vi.name in given:
            shape = [int(d) for d in given[vi.name]]
            if any(d <= 0 for d in shape):
                raise NpuError(ErrorCode.INVALID_ARGUMENT, f"input {vi.name!r}: bad shape {shape}")
            if dims is not None:
                if len(dims) != len(shape):
                    raise NpuError(ErrorCode.INVALID_ARGUMENT,
                                   f"input {vi.name!r}: shape {shape} has rank {len(shape)}, the model's {dims} "
                                   f"has rank {len(dims)}")
                for m, s in zip(dims, shape):
                    if isinstance(m, int) and m > 0 and m != s:
                        raise NpuError(ErrorCode.INVALID_ARGUMENT,
                                       f"input {vi.name!r}: shape {shape} contradicts the model's {dims}")
            _set_dims(vi, shape)
        else:
            if dims is None or any(not isinstance(d, int) or d <= 0 for d in dims):
                raise NpuError(ErrorCode.INVALID_ARGUMENT,
                               f"input {vi.name!r} has dynamic shape {dims}: give its static shape (input_shapes="
                               f"{{{vi.name!r}: [...]}}; on the command line --input-shape {vi.name}=...)")


_INFERENCE_AT = re.compile(r"\(op_type:([\w.]+)(?:, node name: ([^)]*))?\): (?:\[\w+\] )?(.*)")


def inference_message(exc: Exception) -> str:
    """An ONNX inference error as one line naming the node and its op type: "node 'conv1' (Conv): <reason>"."""
    text = " ".join(str(exc).split())
    found = _INFERENCE_AT.search(text)
    if not found:
        return f"shape inference failed: {text or type(exc).__name__}"
    op, name, reason = found.groups()
    reason = reason.split(" (op_type:")[0]          # ONNX appends the errors of every later node
    return f"node {name!r} ({op}): {reason}" if name else f"a {op} node: {reason}"


def infer_shapes(proto: onnx.ModelProto, declared: Mapping[str, onnx.TypeProto] | None = None) -> onnx.ModelProto:
    """ONNX shape inference with data propagation. A contradiction is INVALID_MODEL naming the node, or
    INVALID_ARGUMENT when the given input shapes cause it: `declared` holds the inputs' types as the model declared
    them before `fix_input_shapes`, and the model with those infers cleanly."""
    try:
        return _strict_inference(proto)
    except onnx.shape_inference.InferenceError as exc:
        code = ErrorCode.INVALID_ARGUMENT if declared and _infers_with(proto, declared) else ErrorCode.INVALID_MODEL
        suffix = " (with the input_shapes given)" if code is ErrorCode.INVALID_ARGUMENT else ""
        raise NpuError(code, inference_message(exc) + suffix) from None
    except Exception:
        # Inference can choke on ops it does not know: then no whole-model inference (model.shapes applies the
        # rules node by node).
        return proto


def _strict_inference(proto: onnx.ModelProto) -> onnx.ModelProto:
    return onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True, data_prop=True)


def _infers_with(proto: onnx.ModelProto, declared: Mapping[str, onnx.TypeProto]) -> bool:
    """Whether `proto` with its graph inputs typed as `declared` passes strict shape inference."""
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    for vi in copy.graph.input:
        if vi.name in declared:
            vi.type.CopyFrom(declared[vi.name])
    try:
        _strict_inference(copy)
        return True
    except Exception:
        return False


_CONSTANT_VALUES = {"value": None, "value_float": np.float32, "value_floats": np.float32, "value_int": np.int64,
                    "value_ints": np.int64, "value_string": object, "value_strings": object}


def constant_value(node: onnx.NodeProto) -> np.ndarray:
    """The value of a `Constant` node (value, value_float(s), value_int(s), value_string(s); sparse unsupported)."""
    for name, value in node_attributes(node).items():
        if name in _CONSTANT_VALUES:
            return np.asarray(value, _CONSTANT_VALUES[name])
    raise NpuError(ErrorCode.NOT_SUPPORTED, f"Constant node {node.name!r}: unsupported value attribute")


def attribute_value(a: onnx.AttributeProto) -> Any:
    """An attribute as plain Python: tensors as numpy arrays, strings decoded."""
    value = helper.get_attribute_value(a)
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode("utf-8", "replace") for v in value]
    if isinstance(value, list) and value and isinstance(value[0], onnx.TensorProto):
        return [numpy_helper.to_array(v) for v in value]
    return value


def node_attributes(node: onnx.NodeProto) -> dict[str, Any]:
    """Every attribute of `node` decoded by `attribute_value`: the IR's attributes, which the kernels take."""
    attrs: dict[str, Any] = {}
    for a in node.attribute:
        if a.ref_attr_name:
            raise NpuError(ErrorCode.NOT_SUPPORTED, f"node {node.name!r}: reference attribute {a.name!r}")
        if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
            raise NpuError(ErrorCode.NOT_SUPPORTED,
                           f"node {node.name!r} ({node.op_type}): subgraph attributes are not supported")
        attrs[a.name] = attribute_value(a)
    return attrs


def _elem_dtype(elem_type: int) -> str:
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).name
    except Exception:
        return "float32"


def topo_sort(nodes: list[Node], available: set[str]) -> list[Node]:
    """Nodes in a topological order that keeps the original order wherever it is already valid."""
    ready = set(available)
    producers: dict[str, int] = {}
    for i, n in enumerate(nodes):
        for o in n.outputs:
            if o:
                producers[o] = i
    waiting = {i: {x for x in n.inputs if x and x not in ready and x in producers} for i, n in enumerate(nodes)}
    users: dict[str, list[int]] = {}
    for i, deps in waiting.items():
        for d in deps:
            users.setdefault(d, []).append(i)
    import heapq
    heap = [i for i, deps in waiting.items() if not deps]
    heapq.heapify(heap)
    order: list[Node] = []
    while heap:
        i = heapq.heappop(heap)
        order.append(nodes[i])
        for o in nodes[i].outputs:
            for j in users.get(o, ()):
                waiting[j].discard(o)
                if not waiting[j]:
                    heapq.heappush(heap, j)
    if len(order) != len(nodes):
        stuck = [nodes[i].name for i, d in waiting.items() if d][:3]
        raise _invalid(f"graph has a cycle or dangling inputs around nodes {stuck}")
    return order


def to_graph(proto: onnx.ModelProto) -> Graph:
    """Build the IR from a shape-inferred ModelProto: Constant nodes become constants, nodes are topo-sorted."""
    g = proto.graph
    opset = default_opset(proto)
    constants: dict[str, np.ndarray] = {}
    tensors: dict[str, TensorInfo] = {}
    for init in g.initializer:
        try:
            constants[init.name] = numpy_helper.to_array(init)
        except Exception as exc:
            raise _invalid(f"initializer {init.name!r} is unreadable: {exc}") from None
    init_names = set(constants)
    inputs = [vi.name for vi in g.input if vi.name not in init_names]
    outputs = [vi.name for vi in g.output]
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        if not vi.type.HasField("tensor_type"):
            raise NpuError(ErrorCode.NOT_SUPPORTED, f"tensor {vi.name!r} is not a plain tensor")
        dims = _dims_of(vi)
        shape = tuple(dims) if dims is not None and all(isinstance(d, int) and d >= 0 for d in dims) else None
        tensors[vi.name] = TensorInfo(vi.name, shape, _elem_dtype(vi.type.tensor_type.elem_type))
    nodes: list[Node] = []
    for i, n in enumerate(g.node):
        name = n.name or f"{n.op_type}_{i}"
        domain = "" if n.domain in ("", "ai.onnx") else n.domain     # other domains: custom ops
        if n.op_type == "Constant" and not domain:
            constants[n.output[0]] = constant_value(n)
            continue
        nodes.append(Node(name, n.op_type, list(n.input), list(n.output), node_attributes(n), domain=domain))
    for name, value in constants.items():
        tensors[name] = TensorInfo(name, tuple(int(d) for d in value.shape), value.dtype.name)
    graph = Graph(g.name or "model", opset, topo_sort(nodes, set(inputs) | set(constants)), tensors,
                  inputs, outputs, constants)
    for node in graph.nodes:
        for t in node.inputs + node.outputs:
            if t:
                graph.tensor(t)
    for name in inputs + outputs:
        graph.tensor(name)
    return graph.link()


def _without_big_initializers(proto: onnx.ModelProto, limit: int = 4096) -> onnx.ModelProto:
    """A copy whose large initializers are declared graph inputs (type and shape only) instead of data: the
    checker and shape inference then do not serialise hundreds of MB of weights. Small ones (shape targets,
    axes) keep their values for data propagation."""
    light = onnx.ModelProto()
    light.CopyFrom(proto)
    light.graph.ClearField("initializer")
    have = {vi.name for vi in proto.graph.input}
    for init in proto.graph.initializer:
        if int(np.prod(init.dims, dtype=np.int64)) <= limit:
            light.graph.initializer.append(init)
        elif init.name not in have:
            light.graph.input.append(helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
    return light


def sort_proto_nodes(proto: onnx.ModelProto) -> None:
    """Reorder the graph's nodes topologically in place (ONNX requires it; some exporters do not comply)."""
    g = proto.graph
    stubs = [Node(str(i), n.op_type, list(n.input), list(n.output)) for i, n in enumerate(g.node)]
    available = {i.name for i in g.input} | {i.name for i in g.initializer}
    order = [int(n.name) for n in topo_sort(stubs, available)]
    if order != list(range(len(order))):
        nodes = [g.node[i] for i in order]
        copies = []
        for n in nodes:
            c = onnx.NodeProto()
            c.CopyFrom(n)
            copies.append(c)
        del g.node[:]
        g.node.extend(copies)


def _copy_type(t: onnx.TypeProto) -> onnx.TypeProto:
    copy = onnx.TypeProto()
    copy.CopyFrom(t)
    return copy


def name_nodes(proto: onnx.ModelProto) -> None:
    """Give every unnamed node the name the IR gives it (`<op_type>_<index>`), so that every message - ONNX's
    shape inference included - names nodes the same way."""
    for i, n in enumerate(proto.graph.node):
        if not n.name:
            n.name = f"{n.op_type}_{i}"


def check_references(proto: onnx.ModelProto) -> None:
    """Every default-domain op exists in the model's opset (else NOT_SUPPORTED), every node input is a graph
    input, an initializer or an earlier node's output (else INVALID_MODEL: a missing initializer), and every graph
    output is one of those. Runs on the topologically sorted graph, before the checker (whose messages name neither)."""
    opset = default_opset(proto)
    known = {vi.name for vi in proto.graph.input} | {i.name for i in proto.graph.initializer} | {""}
    for n in proto.graph.node:
        if n.domain in ("", "ai.onnx"):
            try:
                onnx.defs.get_schema(n.op_type, opset, "")
            except onnx.defs.SchemaError:
                raise NpuError(ErrorCode.NOT_SUPPORTED, f"node {n.name!r} ({n.op_type}): not an ONNX op in opset "
                                                        f"{opset}") from None
        for name in n.input:
            if name not in known:
                raise _invalid(f"node {n.name!r} ({n.op_type}): input {name!r} is neither a graph input, an "
                               f"initializer nor a node's output (a missing initializer?)")
        known.update(n.output)
    for out in proto.graph.output:
        if out.name not in known:
            raise _invalid(f"graph output {out.name!r} is produced by no node")


def import_onnx(model: "str | os.PathLike | bytes | onnx.ModelProto",
                input_shapes: Mapping[str, Sequence[int]] | None = None) -> Graph:
    """Load, validate, fix input shapes, infer shapes and build the IR (no optimisation passes yet)."""
    proto = load_onnx(model)
    declared = {vi.name: _copy_type(vi.type) for vi in proto.graph.input} if input_shapes else None
    fix_input_shapes(proto, input_shapes)
    sort_proto_nodes(proto)
    name_nodes(proto)
    check_references(proto)
    light = _without_big_initializers(proto)
    _validate(light)
    inferred = infer_shapes(light, declared)
    proto.graph.ClearField("value_info")
    proto.graph.value_info.extend(inferred.graph.value_info)
    del proto.graph.output[:]
    proto.graph.output.extend(inferred.graph.output)
    return to_graph(proto)
