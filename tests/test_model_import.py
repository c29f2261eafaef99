"""ONNX import and graph passes: folding, BatchNorm folding, activation fusion, Identity removal, bad models."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npurt
from npurt.errors import ErrorCode, NpuError
from npurt.exec.compile import optimize
from npurt.runtime.user_io import run_once
from npurt.model.onnx_import import import_onnx

from helpers.oracle import run_ort


def _f(name: str, arr) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(arr, np.float32), name)


def _i(name: str, arr) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(arr, np.int64), name)


def conv_bn_model(opset: int = 13, dynamic: bool = True, constant_nodes: bool = False) -> onnx.ModelProto:
    """Conv -> BN -> Relu -> Conv -> Clip -> (Shape/Gather/Unsqueeze/Concat reshape target) -> Gemm."""
    rng = np.random.default_rng(0)
    inits = [_f("w1", rng.normal(0, .3, (13, 3, 3, 3))), _f("b1", rng.normal(0, .1, 13)),
             _f("s", rng.uniform(.5, 1.5, 13)), _f("bb", rng.normal(0, .1, 13)), _f("m", rng.normal(0, .1, 13)),
             _f("v", rng.uniform(.5, 1.5, 13)), _f("w2", rng.normal(0, .2, (20, 13, 3, 3))),
             _f("lo", 0.0), _f("hi", 6.0), _i("zero", 0), _i("ax", [0]), _i("m1", [-1]),
             _f("wf", rng.normal(0, .2, (10, 20))), _f("bf", rng.normal(0, .1, 10))]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("BatchNormalization", ["c1", "s", "bb", "m", "v"], ["bn"], name="bn1"),
             helper.make_node("Relu", ["bn"], ["r1"], name="relu1"),
             helper.make_node("Dropout", ["r1"], ["d1"], name="drop"),
             helper.make_node("Conv", ["d1", "w2"], ["c2"], strides=[2, 2], pads=[1, 1, 1, 1], name="conv2"),
             helper.make_node("Clip", ["c2", "lo", "hi"], ["r2"], name="clip2"),
             helper.make_node("Shape", ["r2"], ["sh"]),
             helper.make_node("Gather", ["sh", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]),
             helper.make_node("Concat", ["n1", "m1"], ["tgt"], axis=0),
             helper.make_node("GlobalAveragePool", ["r2"], ["gp"]),
             helper.make_node("Reshape", ["gp", "tgt"], ["flat"]),
             helper.make_node("Gemm", ["flat", "wf", "bf"], ["g"], transB=1, name="fc"),
             helper.make_node("Identity", ["g"], ["y"])]
    if constant_nodes:
        consts = [helper.make_node("Constant", [], [t.name], value=t) for t in inits]
        nodes, inits = consts + nodes, []
    shape = ["N", 3, 17, 19] if dynamic else [1, 3, 17, 19]
    g = helper.make_graph(nodes, "convbn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _ort(model: onnx.ModelProto, x: np.ndarray) -> list[np.ndarray]:
    return run_ort(model, {"x": x})


def test_passes_fold_fuse_and_remove():
    g = optimize(import_onnx(conv_bn_model(), {"x": [1, 3, 17, 19]}))
    types = [n.display_type for n in g.nodes]
    assert types == ["ConvRelu", "ConvClip", "GlobalAveragePool", "Reshape", "Gemm"]
    assert g.outputs == ["y"] and g.nodes[-1].outputs == ["y"]        # Identity folded into the producer
    reshape = g.nodes[3]
    assert reshape.inputs[1] in g.constants                            # Shape/Gather/Unsqueeze/Concat folded
    assert list(g.constants[reshape.inputs[1]]) == [1, -1]
    assert g.nodes[1].activation_params == (0.0, 6.0)
    for name, t in g.tensors.items():
        assert t.shape is not None, name
    assert g.tensors["r2"].shape == (1, 20, 9, 10)


@pytest.mark.parametrize("constant_nodes", [False, True])
def test_folded_graph_matches_onnxruntime(constant_nodes):
    model = conv_bn_model(constant_nodes=constant_nodes)
    x = np.random.default_rng(1).normal(size=(1, 3, 17, 19)).astype(np.float32)
    cm = npurt.compile(model, input_shapes={"x": [1, 3, 17, 19]}, precision="float32")
    np.testing.assert_allclose(run_once(cm, {"x": x})[0], _ort(model, x)[0], rtol=1e-4, atol=1e-5)


def test_external_data(tmp_path):
    model = conv_bn_model(dynamic=False)
    path = tmp_path / "m.onnx"
    onnx.save_model(conv_bn_model(dynamic=False), str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="m.onnx.data", size_threshold=0)
    assert (tmp_path / "m.onnx.data").exists()
    x = np.random.default_rng(2).normal(size=(1, 3, 17, 19)).astype(np.float32)
    cm = npurt.compile(str(path), precision="float32")
    np.testing.assert_allclose(run_once(cm, {"x": x})[0], _ort(model, x)[0], rtol=1e-4, atol=1e-5)
    with pytest.raises(NpuError) as e:      # bytes cannot reach external data
        npurt.compile(path.read_bytes())
    assert e.value.code is ErrorCode.INVALID_MODEL


def test_dynamic_dims_need_input_shapes():
    with pytest.raises(NpuError) as e:
        npurt.compile(conv_bn_model())
    assert e.value.code is ErrorCode.INVALID_ARGUMENT and "input_shapes" in str(e.value)


def test_input_shape_mismatch():
    with pytest.raises(NpuError) as e:
        npurt.compile(conv_bn_model(dynamic=False), input_shapes={"x": [1, 4, 17, 19]})
    assert e.value.code is ErrorCode.INVALID_ARGUMENT and "contradicts" in str(e.value)
    with pytest.raises(NpuError) as e:
        npurt.compile(conv_bn_model(), input_shapes={"x": [1, 3, 17]})
    assert "rank" in str(e.value)
    with pytest.raises(NpuError) as e:
        npurt.compile(conv_bn_model(), input_shapes={"nope": [1, 3, 17, 19]})
    assert "unknown inputs" in str(e.value)


def test_inconsistent_shapes_in_graph():
    g = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"])], "bad",
                          [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 3]),
                           helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    with pytest.raises(NpuError) as e:
        npurt.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
    assert e.value.code in (ErrorCode.INVALID_ARGUMENT, ErrorCode.INVALID_MODEL)


def test_malformed_and_truncated_onnx(tmp_path):
    with pytest.raises(NpuError) as e:
        npurt.compile(b"this is not a protobuf \xff\xff\xff")
    assert e.value.code is ErrorCode.INVALID_MODEL
    data = conv_bn_model(dynamic=False).SerializeToString()
    for cut in (len(data) // 3, len(data) - 7):
        with pytest.raises(NpuError) as e:
            npurt.compile(data[:cut])
        assert e.value.code is ErrorCode.INVALID_MODEL
    p = tmp_path / "trunc.onnx"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(NpuError) as e:
        npurt.compile(str(p))
    assert e.value.code is ErrorCode.INVALID_MODEL
    with pytest.raises(NpuError) as e:
        npurt.compile(str(tmp_path / "missing.onnx"))
    assert e.value.code is ErrorCode.INVALID_MODEL           # as rknn_init and Session say it


def test_unsupported_op_is_named(monkeypatch):
    """An op without a kernel is a compile-time NOT_SUPPORTED naming op and node. The kernel set grows, so the
    test hides one kernel (Erf) from the compiler's supported set."""
    from npurt.exec import compile as compiler
    real = compiler.supported_ops
    monkeypatch.setattr(compiler, "supported_ops", lambda: [op for op in real() if op != "Erf"])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]),
                           helper.make_node("Erf", ["r"], ["y"], name="the_erf")], "unsup",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    with pytest.raises(NpuError) as e:
        npurt.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
    assert e.value.code is ErrorCode.NOT_SUPPORTED
    assert "Erf" in str(e.value) and "the_erf" in str(e.value)


def test_subgraph_ops_are_not_supported():
    body = helper.make_graph([helper.make_node("Identity", ["x"], ["o"])], "body", [],
                             [helper.make_tensor_value_info("o", TensorProto.FLOAT, [3])])
    g = helper.make_graph([helper.make_node("If", ["c"], ["y"], then_branch=body, else_branch=body, name="the_if")],
                          "sub", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                                  helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    with pytest.raises(NpuError) as e:
        npurt.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]))
    assert e.value.code is ErrorCode.NOT_SUPPORTED and "the_if" in str(e.value)


    # custom-domain ops are the custom-op mirror's business (rknn_register_custom_ops), not tested here


def test_supported_ops_lists_kernels():
    ops = npurt.supported_ops()
    assert {"Conv", "Relu", "Gemm", "Identity"} <= set(ops)
    assert ops == sorted(ops)


def test_constant_output_and_unsorted_nodes():
    # nodes listed out of order; one output folds to a constant
    nodes = [helper.make_node("Relu", ["a"], ["y"]), helper.make_node("Add", ["x", "one"], ["a"]),
             helper.make_node("Shape", ["x"], ["s"])]
    g = helper.make_graph(nodes, "u", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("s", TensorProto.INT64, None)], [_f("one", 1.0)])
    cm = npurt.compile(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), precision="float32")
    x = np.array([[-2, -0.5, 0], [0.5, 1, 2]], np.float32)
    y, s = run_once(cm, {"x": x})
    np.testing.assert_allclose(y, np.maximum(x + 1, 0))
    assert s.dtype == np.int64 and list(s) == [2, 3]
    assert cm.graph.nodes[0].display_type == "AddRelu"


def affine_model(conv: str, chain: list[tuple[str, list[np.ndarray], bool]], group: int = 1) -> onnx.ModelProto:
    """Conv or ConvTranspose (4 output channels) followed by a chain of (op, its constants, constants first)
    nodes, then the decomposed hard-swish x * Clip(x + 3, 0, 6) / 6 as paddle2onnx writes it."""
    rng = np.random.default_rng(3)
    inits = [_f("w", rng.normal(0, .4, (4, 4 // group, 3, 3))), _f("b", rng.normal(0, .1, 4)), _f("three", 3.0),
             _f("lo", 0.0), _f("six", 6.0)]
    nodes = [helper.make_node(conv, ["x", "w", "b"], ["t0"], pads=[1, 1, 1, 1], group=group, name="conv")]
    for k, (op, values, first) in enumerate(chain):
        names = [f"c{k}_{j}" for j in range(len(values))]
        inits += [_f(n, v) for n, v in zip(names, values)]
        nodes.append(helper.make_node(op, names + [f"t{k}"] if first else [f"t{k}"] + names, [f"t{k + 1}"]))
    t = f"t{len(chain)}"
    nodes += [helper.make_node("Add", [t, "three"], ["a3"]), helper.make_node("Clip", ["a3", "lo", "six"], ["cl"]),
              helper.make_node("Mul", [t, "cl"], ["m"]), helper.make_node("Div", ["m", "six"], ["y"])]
    g = helper.make_graph(nodes, "affine", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 9, 11])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def _optimized_types_and_check(model: onnx.ModelProto, seed: int) -> list[str]:
    """The optimised graph's op types, after checking the compiled float32 model against onnxruntime."""
    x = np.random.default_rng(seed).normal(size=(1, 4, 9, 11)).astype(np.float32)
    cm = npurt.compile(model, precision="float32")
    np.testing.assert_allclose(run_once(cm, {"x": x})[0], _ort(model, x)[0], rtol=1e-4, atol=1e-5)
    return [n.display_type for n in optimize(import_onnx(model, {"x": [1, 4, 9, 11]})).nodes]


@pytest.mark.parametrize("conv,group", [("Conv", 1), ("Conv", 4), ("ConvTranspose", 1), ("ConvTranspose", 2)])
def test_channel_affine_ops_and_decomposed_hardswish_fold_into_the_convolution(conv, group):
    """BN written as Mul / Add by channel constants (paddle2onnx), Sub / Div, a real BN: one conv with a fused
    HardSwish is left, computing what onnxruntime computes."""
    rng = np.random.default_rng(4)
    ch = lambda *shape: rng.uniform(.5, 2, shape)                          # noqa: E731
    chain = [("Mul", [ch(1, 4, 1, 1)], False), ("Add", [ch(4, 1, 1)], True), ("Sub", [ch(1)], False),
             ("Div", [ch(1, 4, 1, 1)], False), ("BatchNormalization", [ch(4), ch(4), ch(4), ch(4)], False)]
    assert _optimized_types_and_check(affine_model(conv, chain, group), seed=5) == [f"{conv}HardSwish"]


@pytest.mark.parametrize("const,first", [(np.ones((1, 1, 1, 11)), False),     # varies along W, not the channels
                                         (np.ones((2, 4, 1, 1)), False),      # broadcasts the batch
                                         (np.ones((1, 4, 1, 1)), True)])      # Sub(c, x): not x - c
def test_affine_ops_that_are_not_per_channel_stay(const, first):
    model = affine_model("Conv", [("Sub", [const], first)])
    assert _optimized_types_and_check(model, seed=6) == ["Conv", "Sub", "HardSwish"]
