"""The compiler never fails with anything but an `NpuError`: small zoo models and the exporter-pattern models,
mutated (input shapes changed, initializers dropped, unknown ops, custom domains, bad attributes, shape constants
out of range, truncated graphs), each either compiles or is refused with INVALID_MODEL / NOT_SUPPORTED /
INVALID_ARGUMENT naming what is wrong. Models are tiny so the whole sweep stays within a few seconds."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import npurt
from npurt.errors import ErrorCode, NpuError
from npurt.model import zoo

from helpers.shape_models import crnn_head, svtr_reshape, yolo_grid

REFUSALS = {ErrorCode.INVALID_MODEL, ErrorCode.NOT_SUPPORTED, ErrorCode.INVALID_ARGUMENT}


def _bases() -> dict:
    """name -> (model, input_shapes) of the base models."""
    rng = np.random.default_rng(29)
    return {
        "small_convnet": (zoo.small_convnet(size=16), None),
        "yolov8n_like": (zoo.yolov8n_like(size=32, num_classes=2), None),
        "transformer_block": (zoo.transformer_block(seq=4, dim=16, heads=2), None),
        "svtr_reshape": (svtr_reshape(), {"x": [1, 8, 2, 3]}),
        "yolo_grid": (yolo_grid(), {"x": [1, 4, 3, 5]}),
        "crnn_head": (crnn_head(rng), {"x": [1, 6, 1, 5]}),
    }


def _copy(model: onnx.ModelProto) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    return m


def _set_input_dims(model, dims) -> None:
    tt = model.graph.input[0].type.tensor_type
    tt.shape.ClearField("dim")
    for d in dims:
        tt.shape.dim.add().dim_value = d


def _mutations(model: onnx.ModelProto, shapes: dict | None):
    """(label, mutated model, input_shapes): a deterministic list of mutations of `model`."""
    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    given = dict(shapes or {})
    name = model.graph.input[0].name
    concrete = list(given.get(name, dims))
    for label, new in (("more channels", concrete[:1] + [concrete[1] + 2] + concrete[2:]),
                       ("rank + 1", concrete + [1]), ("one pixel", concrete[:2] + [1] * (len(concrete) - 2))):
        m = _copy(model)
        _set_input_dims(m, new)
        yield f"input {label}", m, None
    for k in range(0, len(model.graph.initializer), max(1, len(model.graph.initializer) // 3)):
        m = _copy(model)
        del m.graph.initializer[k]
        yield f"initializer {k} dropped", m, shapes
    ops = [i for i, n in enumerate(model.graph.node) if n.op_type != "Constant"]
    for k in ops[::max(1, len(ops) // 3)]:
        m = _copy(model)
        m.graph.node[k].op_type = "NotAnOnnxOp"
        yield f"node {k} unknown op", m, shapes
        m = _copy(model)
        m.graph.node[k].domain = "com.example"
        m.opset_import.append(helper.make_opsetid("com.example", 1))
        yield f"node {k} custom domain", m, shapes
    seen: set = set()
    for k, node in enumerate(model.graph.node):
        for a in node.attribute:
            if a.name in ("axis", "perm", "kernel_shape", "to", "hidden_size") and (node.op_type, a.name) not in seen:
                seen.add((node.op_type, a.name))          # one mutation per op type and attribute
                m = _copy(model)
                attr = m.graph.node[k].attribute[list(node.attribute).index(a)]
                if a.type == onnx.AttributeProto.INTS:
                    attr.ints[:] = [7] * (len(attr.ints) + 1)
                else:
                    attr.i = 7 if a.name != "to" else onnx.TensorProto.STRING
                yield f"node {k} {a.name} mutated", m, shapes
    for k, init in enumerate(model.graph.initializer):
        if init.data_type == onnx.TensorProto.INT64 and 0 < int(np.prod(init.dims)) <= 8:
            m = _copy(model)
            value = numpy_helper.to_array(init)
            m.graph.initializer[k].CopyFrom(numpy_helper.from_array(value * 0 + 99, init.name))
            yield f"shape constant {init.name} out of range", m, shapes
    for k, node in enumerate(model.graph.node):
        if node.op_type == "Constant" and numpy_helper.to_array(node.attribute[0].t).dtype == np.int64:
            m = _copy(model)
            value = numpy_helper.to_array(node.attribute[0].t)
            m.graph.node[k].attribute[0].t.CopyFrom(numpy_helper.from_array(value * 0 - 5))
            yield f"Constant {node.output[0]} negative", m, shapes
    m = _copy(model)
    del m.graph.node[len(m.graph.node) // 2:]
    yield "second half of the graph cut", m, shapes


def _cases():
    for base, (model, shapes) in _bases().items():
        for label, m, s in _mutations(model, shapes):
            yield base, label, m, s


def _compile(model, shapes, int8: bool) -> None:
    kw = {}
    if int8:
        rng = np.random.default_rng(30)
        graph_input = model.graph.input[0]
        dims = (shapes or {}).get(graph_input.name) or [d.dim_value for d in graph_input.type.tensor_type.shape.dim]
        kw["quantize"] = [rng.standard_normal(dims).astype(np.float32)]
    npurt.compile(model, soc="rk3588", input_shapes=shapes, progress=False, **kw)


def test_mutated_models_compile_or_raise_npuerror_naming_the_problem():
    """fp16 for every mutation; int8 (the calibration run evaluates every node on data) for those that compile."""
    outcomes = {"compiled": 0, "refused": 0}
    bad = []
    for base, label, model, shapes in _cases():
        for int8 in (False, True):
            try:
                _compile(model, shapes, int8)
                outcomes["compiled"] += 1
            except NpuError as e:
                outcomes["refused"] += 1
                if e.code not in REFUSALS or not e.message:
                    bad.append(f"{base} / {label} / int8={int8}: {e.code.name}: {e.message}")
                break
            except Exception as e:      # the point of the test: report every other exception, not just the first
                bad.append(f"{base} / {label} / int8={int8}: {type(e).__name__}: {e}")
                break
    assert not bad, "\n".join(bad)
    assert outcomes["refused"] > 20 and outcomes["compiled"] > 0, outcomes


def test_refusals_name_the_node_and_op():
    model = zoo.small_convnet(size=16)
    cases = [("missing initializer", lambda m: m.graph.initializer.pop(2), "input 'w_9'"),
             ("bad kernel_shape", lambda m: m.graph.node[3].attribute[1].ints.append(3), "kernel_shape"),
             ("channel mismatch", lambda m: _set_input_dims(m, [1, 4, 16, 16]), "4 channels")]
    for label, mutate, reason in cases:
        m = _copy(model)
        mutate(m)
        with pytest.raises(NpuError) as e:
            npurt.compile(m, soc="rk3588", progress=False)
        assert e.value.code is ErrorCode.INVALID_MODEL, label
        assert "node 'Conv_12' (Conv)" in e.value.message or "node 'Conv_4' (Conv)" in e.value.message, label
        assert reason in e.value.message, (label, e.value.message)


@pytest.mark.parametrize("op_type", ["NotAnOnnxOp", "Einsum"])
def test_an_unsupported_op_is_named_with_its_node(op_type):
    model = zoo.small_convnet(size=16)
    node = next(n for n in model.graph.node if n.op_type == "Relu")
    node.op_type = op_type
    if op_type == "Einsum":     # an ONNX op npurt has no kernel for, with an equation the 4-D input contradicts
        node.attribute.append(helper.make_attribute("equation", "ij->ij"))
    with pytest.raises(NpuError) as e:
        npurt.compile(model, soc="rk3588", progress=False)
    assert e.value.code is (ErrorCode.NOT_SUPPORTED if op_type == "NotAnOnnxOp" else ErrorCode.INVALID_MODEL)
    assert f"node {node.name!r} ({op_type})" in e.value.message
