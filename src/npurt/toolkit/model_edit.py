"""What `load_onnx`'s arguments do to the ONNX model before it is compiled (a sub-graph, input shapes, inputs fixed
to constants), and the layers `hybrid_quantization_step1(custom_hybrid=...)` names."""
from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np

from npurt.errors import ErrorCode, NpuError


def _bad(msg: str) -> NpuError:
    return NpuError(ErrorCode.INVALID_ARGUMENT, msg)


def _set_shape(value_info: Any, shape: Sequence[int]) -> None:
    dims = value_info.type.tensor_type.shape.dim
    del dims[:]
    for d in shape:
        dims.add().dim_value = int(d)


def _names(value: Any, what: str) -> list[str] | None:
    """load_onnx's `inputs` / `outputs`: None, or a non-empty list of tensor names."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, str) and v for v in value):
        raise _bad(f"{what} must be a list of tensor names, got {value!r}")
    return list(value)


def edit_onnx(model: "str | os.PathLike", inputs: Sequence[str] | None, input_size_list: Sequence | None,
              input_initial_val: Sequence | None, outputs: Sequence[str] | None) -> bytes:
    """The ONNX model at `model` as the toolkit's load_onnx arguments select it: `inputs` / `outputs` cut the graph
    at those tensors, `input_size_list` gives the shapes of `inputs`, `input_initial_val` fixes inputs to
    constants (None keeps an input). Its bytes; INVALID_ARGUMENT naming what does not fit."""
    import onnx
    from onnx import numpy_helper
    from npurt.model.sources import read_onnx
    inputs, outputs = _names(inputs, "inputs"), _names(outputs, "outputs")
    if input_size_list is not None and (not isinstance(input_size_list, (list, tuple)) or not all(
            isinstance(s, (list, tuple)) and s and all(isinstance(d, (int, np.integer)) and not isinstance(d, bool)
                                                      and 0 < d < 2 ** 31 for d in s) for s in input_size_list)):
        raise _bad(f"input_size_list must be a list of shapes (lists of positive integers), got {input_size_list!r}")
    if input_initial_val is not None and not isinstance(input_initial_val, (list, tuple)):
        raise _bad(f"input_initial_val must be a list (an array or None per input), got {input_initial_val!r}")
    proto = read_onnx(os.fspath(model), external_data=True)
    graph_inputs = [vi.name for vi in proto.graph.input if vi.name not in {i.name for i in proto.graph.initializer}]
    if input_size_list is not None and inputs is None:
        inputs = graph_inputs
    if inputs is not None and input_size_list is not None and len(inputs) != len(input_size_list):
        raise _bad(f"inputs has {len(inputs)} names and input_size_list {len(input_size_list)} shapes")
    cut_in = inputs is not None and any(n not in graph_inputs for n in inputs)
    cut_out = outputs is not None and list(outputs) != [o.name for o in proto.graph.output]
    if cut_in or cut_out:
        known = {o for n in proto.graph.node for o in n.output} | set(graph_inputs)
        unknown = [t for t in list(inputs or []) + list(outputs or []) if t not in known]
        if unknown:
            raise _bad(f"no tensor named {unknown} in the model")
        proto = onnx.shape_inference.infer_shapes(proto)
        extractor = onnx.utils.Extractor(proto)
        proto = extractor.extract_model(list(inputs or graph_inputs), list(outputs or [o.name for o in
                                                                                       proto.graph.output]))
        graph_inputs = [vi.name for vi in proto.graph.input]
    if inputs is not None and input_size_list is not None:
        by_name = {vi.name: vi for vi in proto.graph.input}
        for name, shape in zip(inputs, input_size_list):
            if name not in by_name:
                raise _bad(f"{name!r} is not an input of the model (inputs: {graph_inputs})")
            _set_shape(by_name[name], shape)
    if input_initial_val is not None:
        if len(input_initial_val) != len(graph_inputs):
            raise _bad(f"input_initial_val has {len(input_initial_val)} entries, the model has {len(graph_inputs)} "
                       f"inputs")
        keep = []
        for vi, value in zip([vi for vi in proto.graph.input if vi.name in graph_inputs], input_initial_val):
            if value is None:
                keep.append(vi)
                continue
            dtype = onnx.helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)
            dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
            try:
                array = np.asarray(value, dtype)
            except (ValueError, TypeError):
                array = None
            known = all(d > 0 for d in dims)            # a symbolic dimension takes the array's
            if array is None or known and array.size != int(np.prod(dims)):
                raise _bad(f"input_initial_val for {vi.name!r} must be an array of shape {dims}, got {value!r}")
            if known:
                array = array.reshape(dims)
            proto.graph.initializer.append(numpy_helper.from_array(array, vi.name))
        others = [vi for vi in proto.graph.input if vi.name not in graph_inputs]
        del proto.graph.input[:]
        proto.graph.input.extend(keep + others)
    return proto.SerializeToString()


def with_batch(onnx_bytes: bytes, batch: int) -> bytes:
    """The model with batch axis `batch` on every input (rknn_batch_size): the inputs' first dimension set, the
    outputs' and intermediate shapes left to shape inference."""
    import onnx
    proto = onnx.load_from_string(onnx_bytes)
    inits = {i.name for i in proto.graph.initializer}
    for vi in proto.graph.input:
        if vi.name not in inits and vi.type.tensor_type.shape.dim:
            vi.type.tensor_type.shape.dim[0].dim_value = int(batch)
    for vi in proto.graph.output:
        if vi.type.tensor_type.shape.dim:
            vi.type.tensor_type.shape.dim[0].dim_param = "batch"
    del proto.graph.value_info[:]
    return proto.SerializeToString()


def hybrid_pairs(value: Any) -> list[tuple[str, str]]:
    """`custom_hybrid` as [(start_tensor, end_tensor), ...]; INVALID_ARGUMENT for anything else."""
    if not isinstance(value, (list, tuple)) or not all(
            isinstance(p, (list, tuple)) and len(p) == 2 and all(isinstance(t, str) and t for t in p) for p in value):
        raise _bad(f"custom_hybrid must be a list of [start_tensor, end_tensor] pairs, got {value!r}")
    return [(start, end) for start, end in value]


def layers_between(graph: Any, pairs: Sequence[Sequence[str]]) -> list[str]:
    """The tensors produced by the nodes on a path from each pair's first tensor to its second (both tensors'
    producers included): the layers `custom_hybrid=[[start, end], ...]` keeps in float."""
    produced = {o: n for n in graph.nodes for o in n.outputs if o}
    chosen: list[str] = []
    for pair in pairs:
        if len(pair) != 2 or any(t not in produced and t not in graph.inputs for t in pair):
            raise _bad(f"custom_hybrid entry {list(pair)!r}: give [start_tensor, end_tensor] of the compiled graph")
        start, end = pair
        if start in produced and start not in chosen:
            chosen.append(start)
        ancestors, stack = set(), [end]
        while stack:                                   # every tensor `end` depends on
            t = stack.pop()
            if t in ancestors:
                continue
            ancestors.add(t)
            if t in produced:
                stack.extend(i for i in produced[t].inputs if i)
        reach = {start}
        for node in graph.nodes:                       # schedule order: a forward sweep from `start`
            if any(i in reach for i in node.inputs):
                outs = [o for o in node.outputs if o]
                reach.update(outs)
                chosen.extend(o for o in outs if o in ancestors and o not in chosen)
    return chosen
