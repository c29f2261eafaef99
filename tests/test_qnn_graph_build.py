"""QNN graph building from the Python mirror: graphs built op by op (NHWC, HWIO weights, params as onnxruntime's QNN
EP passes them), finalized by npurt's compiler and executed, compared with onnxruntime CPU on the equivalent ONNX
model (NCHW): float graphs within fp16 tolerance, quantized (QDQ) graphs within one output quantum. Also the
binary round trip, registered memory, validation and bad input."""
from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import npurt.qnn as q
from helpers.oracle import run_ort
from helpers.qnn import code, ok
from helpers.qnn_build import Client, quant

W, R, N, S = q.QNN_TENSOR_TYPE_APP_WRITE, q.QNN_TENSOR_TYPE_APP_READ, q.QNN_TENSOR_TYPE_NATIVE, \
    q.QNN_TENSOR_TYPE_STATIC
U32 = np.uint32
NCHW, NHWC = (0, 3, 1, 2), (0, 2, 3, 1)


def onnx_model(nodes, inputs: dict, inits: dict, opset: int = 17):
    """A one-output ONNX model: `inputs` name -> array (float32 / int), `inits` name -> array."""
    vis = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape))
           for n, a in inputs.items()]
    out = nodes[-1].output[0]
    graph = helper.make_graph(nodes, "m", vis, [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


@dataclass
class Case:
    """A QNN graph (built by `build` on a client) and its ONNX twin; the output is compared in NHWC when `nhwc`."""

    build: Callable[[Client], None]
    x: np.ndarray                       # the QNN graph's input "x" (NHWC for images)
    out_dims: tuple
    model: object
    nhwc: bool = True
    feeds: dict = field(default_factory=dict)


def _single(op_type, x, out_dims, onnx_nodes, inits=None, nhwc=True, opset=17, **params) -> Case:
    def build(c: Client) -> None:
        c.tensor("x", W, x.shape)
        for name, value in (inits or {}).get("qnn", {}).items():
            c.static(name, value)
        c.tensor("y", R, out_dims)
        c.node("op", op_type, ["x"] + list((inits or {}).get("qnn", {})), ["y"], **params)
    feed = x.transpose(NCHW) if nhwc and x.ndim == 4 else x
    return Case(build, x, out_dims, onnx_model(onnx_nodes, {"x": feed}, (inits or {}).get("onnx", {}), opset),
                nhwc and len(out_dims) == 4)


def _conv(rng, kind: str) -> Case:
    x = rng.normal(size=(1, 9, 9, 4)).astype(np.float32)
    if kind == "depthwise":
        w = rng.normal(size=(3, 3, 1, 4)).astype(np.float32)
        onnx_w, group, out = w.transpose(3, 2, 0, 1), 4, (1, 5, 5, 4)
        op, params = "DepthWiseConv2d", {}
    elif kind == "transpose":
        w = rng.normal(size=(3, 3, 4, 6)).astype(np.float32)       # [kh, kw, cin, cout]
        onnx_w, group, out = w.transpose(2, 3, 0, 1), 1, (1, 18, 18, 6)
        op, params = "TransposeConv2d", {"output_padding": np.array([1, 1], U32), "group": 1}
    else:
        w = rng.normal(size=(3, 3, 2, 6)).astype(np.float32)       # grouped: cin/group = 2
        onnx_w, group, out = w.transpose(3, 2, 0, 1), 2, (1, 5, 5, 6)
        op, params = "Conv2d", {"group": 2, "dilation": np.array([1, 1], U32)}
    b = rng.normal(size=w.shape[3]).astype(np.float32)
    pads = np.array([[1, 1], [1, 1]], U32)
    attrs = dict(strides=[2, 2], pads=[1, 1, 1, 1])
    if kind == "transpose":
        node = helper.make_node("ConvTranspose", ["x", "W", "B"], ["y"], output_padding=[1, 1], **attrs)
    else:
        node = helper.make_node("Conv", ["x", "W", "B"], ["y"], group=group, **attrs)
    return _single(op, x, out, [node], {"qnn": {"w": w, "b": b}, "onnx": {"W": onnx_w.copy(), "B": b}},
                   stride=np.array([2, 2], U32), pad_amount=pads, **params)


def _pool(rng, op: str) -> Case:
    x = rng.normal(size=(1, 8, 8, 3)).astype(np.float32)
    onnx_op = "MaxPool" if op == "PoolMax2d" else "AveragePool"
    extra = {} if op == "PoolMax2d" else {"count_pad_for_edges": False}
    return _single(op, x, (1, 4, 4, 3), [helper.make_node(onnx_op, ["x"], ["y"], kernel_shape=[3, 3],
                                                          strides=[2, 2], pads=[1, 1, 1, 1])],
                   filter_size=np.array([3, 3], U32), stride=np.array([2, 2], U32),
                   pad_amount=np.array([[1, 1], [1, 1]], U32), **extra)


def _unary(rng, op: str, onnx_op: str, opset: int = 17, onnx_attrs=None, **params) -> Case:
    x = (rng.normal(size=(1, 4, 5, 6)) * 3).astype(np.float32)
    return _single(op, x, x.shape, [helper.make_node(onnx_op, ["x"], ["y"], **(onnx_attrs or {}))], opset=opset,
                   **params)


def _binary(rng, op: str, onnx_op: str) -> Case:
    x = rng.normal(size=(1, 4, 5, 6)).astype(np.float32)
    c = (rng.uniform(0.5, 2.0, size=(6,)) * rng.choice([-1, 1], size=6)).astype(np.float32)
    return _single(op, x, x.shape, [helper.make_node(onnx_op, ["x", "C"], ["y"])],
                   {"qnn": {"c": c}, "onnx": {"C": c.reshape(6, 1, 1)}})


def _as_is(rng, op: str, x, out_dims, onnx_nodes, inits=None, **params) -> Case:
    return _single(op, x, out_dims, onnx_nodes, inits, nhwc=False, **params)


def float_cases():
    out = {
        "Conv2d": lambda r: _conv(r, "conv"),
        "DepthWiseConv2d": lambda r: _conv(r, "depthwise"),
        "TransposeConv2d": lambda r: _conv(r, "transpose"),
        "PoolMax2d": lambda r: _pool(r, "PoolMax2d"),
        "PoolAvg2d": lambda r: _pool(r, "PoolAvg2d"),
        "Relu": lambda r: _unary(r, "Relu", "Relu"),
        "ReluMinMax": lambda r: _single("ReluMinMax", (r.normal(size=(1, 4, 5, 6)) * 4).astype(np.float32),
                                        (1, 4, 5, 6), [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])],
                                        {"onnx": {"lo": np.float32(0), "hi": np.float32(6)}},
                                        min_value=0.0, max_value=6.0),
        "Prelu": lambda r: _single("Prelu", r.normal(size=(1, 4, 5, 6)).astype(np.float32), (1, 4, 5, 6),
                                   [helper.make_node("PRelu", ["x", "A"], ["y"])],
                                   {"qnn": {"a": np.linspace(0.05, 0.3, 6, dtype=np.float32)},
                                    "onnx": {"A": np.linspace(0.05, 0.3, 6, dtype=np.float32).reshape(6, 1, 1)}}),
        "ElementWiseNeuron": lambda r: _unary(r, "ElementWiseNeuron", "HardSwish", operation=3),
        "Sigmoid": lambda r: _unary(r, "Sigmoid", "Sigmoid"),
        "Tanh": lambda r: _unary(r, "Tanh", "Tanh"),
        "Gelu": lambda r: _unary(r, "Gelu", "Gelu", opset=20),
        **{f"ElementWise{k}": (lambda k, v: lambda r: _binary(r, f"ElementWise{k}", v))(k, v)
           for k, v in (("Add", "Add"), ("Subtract", "Sub"), ("Multiply", "Mul"), ("Divide", "Div"),
                        ("Maximum", "Max"), ("Minimum", "Min"))},
        "Transpose": lambda r: _as_is(r, "Transpose", r.normal(size=(2, 3, 4)).astype(np.float32), (4, 2, 3),
                                      [helper.make_node("Transpose", ["x"], ["y"], perm=[2, 0, 1])],
                                      perm=np.array([2, 0, 1], U32)),
        "Reshape": lambda r: _as_is(r, "Reshape", r.normal(size=(2, 3, 4)).astype(np.float32), (6, 4),
                                    [helper.make_node("Reshape", ["x", "s"], ["y"])],
                                    {"onnx": {"s": np.array([6, 4], np.int64)}}),
        "Pad": lambda r: _as_is(r, "Pad", r.normal(size=(1, 3, 4)).astype(np.float32), (1, 6, 5),
                                [helper.make_node("Pad", ["x", "p", "v"], ["y"], mode="constant")],
                                {"onnx": {"p": np.array([0, 1, 0, 0, 2, 1], np.int64), "v": np.float32(0.5)}},
                                pad_amount=np.array([[0, 0], [1, 2], [0, 1]], U32), pad_constant_value=0.5),
        "StridedSlice": lambda r: _as_is(r, "StridedSlice", r.normal(size=(2, 6, 5)).astype(np.float32),
                                         (2, 3, 2),
                                         [helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"])],
                                         {"onnx": {"s": np.array([0, 1, 4], np.int64),
                                                   "e": np.array([2, 6, 0], np.int64),
                                                   "a": np.array([0, 1, 2], np.int64),
                                                   "t": np.array([1, 2, -2], np.int64)}},
                                         ranges=np.array([[0, 2, 1], [1, 6, 2], [4, 0, -2]], np.int32)),
        "ResizeNearestNeighbor": lambda r: _single(
            "ResizeNearestNeighbor", r.normal(size=(1, 3, 4, 2)).astype(np.float32), (1, 6, 8, 2),
            [helper.make_node("Resize", ["x", "", "", "sz"], ["y"], mode="nearest",
                              coordinate_transformation_mode="asymmetric", nearest_mode="floor")],
            {"onnx": {"sz": np.array([1, 2, 6, 8], np.int64)}}, align_corners=False, half_pixel_centers=False),
        "ResizeBilinear": lambda r: _single(
            "ResizeBilinear", r.normal(size=(1, 3, 4, 2)).astype(np.float32), (1, 6, 8, 2),
            [helper.make_node("Resize", ["x", "", "", "sz"], ["y"], mode="linear",
                              coordinate_transformation_mode="half_pixel")],
            {"onnx": {"sz": np.array([1, 2, 6, 8], np.int64)}}, align_corners=False, half_pixel_centers=True),
        "ReduceMean": lambda r: _single("ReduceMean", r.normal(size=(1, 4, 5, 6)).astype(np.float32), (1, 1, 1, 6),
                                        [helper.make_node("ReduceMean", ["x"], ["y"], axes=[2, 3], keepdims=1)],
                                        axes=np.array([1, 2], U32), keep_dims=True),
        "ReduceMax": lambda r: _as_is(r, "ReduceMax", r.normal(size=(2, 3, 4)).astype(np.float32), (2, 4),
                                      [helper.make_node("ReduceMax", ["x"], ["y"], axes=[1], keepdims=0)],
                                      axes=np.array([1], U32), keep_dims=False),
        "FullyConnected": lambda r: _fc(r),
        "MatMul": lambda r: _matmul(r),
        "Softmax": lambda r: _as_is(r, "Softmax", (r.normal(size=(2, 7)) * 3).astype(np.float32), (2, 7),
                                    [helper.make_node("Softmax", ["x"], ["y"], axis=1)], axis=1),
        "LayerNorm": lambda r: _layernorm(r),
        "Batchnorm": lambda r: _single("Batchnorm", r.normal(size=(1, 4, 5, 3)).astype(np.float32), (1, 4, 5, 3),
                                       [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"],
                                                         epsilon=0.0)],
                                       {"qnn": {"s": np.array([0.5, 2, -1], np.float32),
                                                "b": np.array([1, 0, -2], np.float32)},
                                        "onnx": {"s": np.array([0.5, 2, -1], np.float32),
                                                 "b": np.array([1, 0, -2], np.float32),
                                                 "m": np.zeros(3, np.float32), "v": np.ones(3, np.float32)}}),
        "Concat": lambda r: _multi(r, "Concat"),
        "Split": lambda r: _multi(r, "Split"),
        "ElementWiseUnary": lambda r: _unary(r, "ElementWiseUnary", "Sin", operation=14),
        "ElementWiseRsqrt": lambda r: _single("ElementWiseRsqrt", r.uniform(0.1, 4, size=(1, 4, 5, 6)).astype(
            np.float32), (1, 4, 5, 6), [helper.make_node("Sqrt", ["x"], ["s"]),
                                        helper.make_node("Reciprocal", ["s"], ["y"])]),
        "Cast": lambda r: _cast(r),
        "Gather": lambda r: _as_is(r, "Gather", r.normal(size=(5, 3)).astype(np.float32), (4, 3),
                                   [helper.make_node("Gather", ["x", "i"], ["y"], axis=0)],
                                   {"qnn": {"i": np.array([4, 0, 2, 2], np.int32)},
                                    "onnx": {"i": np.array([4, 0, 2, 2], np.int64)}}, axis=0),
    }
    return out


def _cast(rng) -> Case:
    """INT_32 graph input -> Cast -> FLOAT_32 -> ElementWiseMultiply by a constant."""
    x = rng.integers(-50, 50, size=(2, 5)).astype(np.int32)

    def build(c: Client) -> None:
        c.tensor("x", W, x.shape, np.int32)
        c.tensor("f", N, x.shape)
        c.static("k", np.array([0.5], np.float32))
        c.tensor("y", R, x.shape)
        c.node("cast", "Cast", ["x"], ["f"])
        c.node("mul", "ElementWiseMultiply", ["f", "k"], ["y"])
    nodes = [helper.make_node("Cast", ["x"], ["f"], to=TensorProto.FLOAT), helper.make_node("Mul", ["f", "k"], ["y"])]
    return Case(build, x, x.shape, onnx_model(nodes, {"x": x}, {"k": np.array([0.5], np.float32)}), nhwc=False)


def _fc(rng) -> Case:
    x = rng.normal(size=(2, 8)).astype(np.float32)
    w, b = rng.normal(size=(5, 8)).astype(np.float32), rng.normal(size=5).astype(np.float32)
    return _as_is(rng, "FullyConnected", x, (2, 5), [helper.make_node("Gemm", ["x", "W", "B"], ["y"], transB=1)],
                  {"qnn": {"w": w, "b": b}, "onnx": {"W": w, "B": b}})


def _matmul(rng) -> Case:
    x = rng.normal(size=(2, 4, 3)).astype(np.float32)
    m = rng.normal(size=(5, 3)).astype(np.float32)
    return _as_is(rng, "MatMul", x, (2, 4, 5), [helper.make_node("MatMul", ["x", "M"], ["y"])],
                  {"qnn": {"m": m}, "onnx": {"M": m.T.copy()}}, transpose_in1=True)


def _layernorm(rng) -> Case:
    x = rng.normal(size=(1, 6, 16)).astype(np.float32)
    g, b = rng.normal(size=16).astype(np.float32), rng.normal(size=16).astype(np.float32)
    return _as_is(rng, "LayerNorm", x, x.shape,
                  [helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1, epsilon=1e-5)],
                  {"qnn": {"g": g, "b": b}, "onnx": {"g": g, "b": b}}, epsilon=1e-5, axes=np.array([2], U32))


def _multi(rng, op: str) -> Case:
    """Concat of the input with a transformed copy / Split then Add of the pieces (a graph with NATIVE tensors)."""
    x = rng.normal(size=(1, 4, 4, 6)).astype(np.float32)

    def build(c: Client) -> None:
        c.tensor("x", W, x.shape)
        if op == "Concat":
            c.tensor("r", N, x.shape)
            c.tensor("y", R, (1, 4, 4, 12))
            c.node("relu", "Relu", ["x"], ["r"])
            c.node("cat", "Concat", ["x", "r"], ["y"], axis=3)
        else:
            c.tensor("a", N, (1, 4, 4, 2))
            c.tensor("b", N, (1, 4, 4, 4))
            c.tensor("s", N, (1, 4, 4, 2))
            c.tensor("y", R, (1, 4, 4, 2))
            c.node("split", "Split", ["x"], ["a", "b"], axis=3, split_index=np.array([2], U32))
            c.node("slice", "StridedSlice", ["b"], ["s"], ranges=np.array([[0, 1, 1], [0, 4, 1], [0, 4, 1],
                                                                          [0, 2, 1]], np.int32))
            c.node("add", "ElementWiseAdd", ["a", "s"], ["y"])
    feed = x.transpose(NCHW)
    if op == "Concat":
        nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Concat", ["x", "r"], ["y"], axis=1)]
    else:
        nodes = [helper.make_node("Split", ["x", "sp"], ["a", "b"], axis=1),
                 helper.make_node("Slice", ["b", "st", "en", "ax"], ["s"]), helper.make_node("Add", ["a", "s"], ["y"])]
    inits = {"sp": np.array([2, 4], np.int64), "st": np.array([0], np.int64), "en": np.array([2], np.int64),
             "ax": np.array([1], np.int64)} if op == "Split" else {}
    out = (1, 4, 4, 12) if op == "Concat" else (1, 4, 4, 2)
    return Case(build, x, out, onnx_model(nodes, {"x": feed}, inits))


def _run(case: Case, soc: str = "sm8550") -> tuple[np.ndarray, np.ndarray]:
    c = Client(soc)
    try:
        c.create_graph()
        case.build(c)
        c.finalize()
        got = c.execute({"x": case.x}, {"y": (case.out_dims, np.float32)})["y"]
    finally:
        c.close()
    feed = case.x.transpose(NCHW) if case.nhwc else case.x
    ref = run_ort(case.model, {"x": feed, **case.feeds})[0]
    return got, ref.transpose(NHWC) if case.nhwc else ref


FLOAT_CASES = float_cases()


@pytest.mark.parametrize("op", sorted(FLOAT_CASES))
def test_float_op_matches_onnxruntime(op):
    rng = np.random.default_rng(sorted(FLOAT_CASES).index(op))
    got, ref = _run(FLOAT_CASES[op](rng))
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, atol=2e-2 * max(1.0, float(np.abs(ref).max())), rtol=1e-2)


# ----------------------------------------------------------------------------------------------------------
# quantized (QDQ) graphs
# ----------------------------------------------------------------------------------------------------------
def _q8(x: np.ndarray, qp) -> np.ndarray:
    scale, offset = qp
    return np.clip(np.rint(x / scale) - offset, 0, 255).astype(np.uint8)


def _qdq(name: str, qp, dtype=TensorProto.UINT8) -> tuple[list, dict]:
    """Q + DQ of tensor `name` (ONNX) with uint8 (scale, QNN offset) `qp`; output `name`_dq."""
    scale, offset = qp
    inits = {f"{name}_s": np.float32(scale), f"{name}_z": np.uint8(-offset)}
    return [helper.make_node("QuantizeLinear", [name, f"{name}_s", f"{name}_z"], [f"{name}_q"]),
            helper.make_node("DequantizeLinear", [f"{name}_q", f"{name}_s", f"{name}_z"], [f"{name}_dq"])], inits


def qdq_block(rng) -> tuple[Case, float]:
    """A QDQ MobileNet-like block as the EP builds it: Quantize -> Conv2d(+Relu6 as ReluMinMax) -> DepthWiseConv2d
    -> Conv2d -> ElementWiseAdd (residual) -> PoolAvg2d -> Dequantize; weights uint8 per tensor, biases int32."""
    x = rng.uniform(-1, 1, size=(1, 8, 8, 4)).astype(np.float32)
    w1 = rng.normal(scale=0.4, size=(1, 1, 4, 8)).astype(np.float32)
    w2 = rng.normal(scale=0.4, size=(3, 3, 1, 8)).astype(np.float32)
    w3 = rng.normal(scale=0.3, size=(1, 1, 8, 4)).astype(np.float32)
    b1, b3 = rng.normal(scale=0.1, size=8).astype(np.float32), rng.normal(scale=0.1, size=4).astype(np.float32)
    qx, q1, q2, q3, qa, qp = quant(-1, 1), quant(0, 6), quant(-6, 6), quant(-4, 4), quant(-5, 5), quant(-5, 5)
    qw = [quant(w.min(), w.max()) for w in (w1, w2, w3)]
    wq = [_q8(w, p) for w, p in zip((w1, w2, w3), qw)]
    # conv1's weights quantized per output channel (axis 3 of HWIO), as per-channel QDQ models carry them
    axis_qp = [quant(w1[..., k].min(), w1[..., k].max()) for k in range(8)]
    w1q = np.stack([_q8(w1[..., k], axis_qp[k]) for k in range(8)], axis=-1)
    w1_real = np.stack([(w1q[..., k].astype(np.float32) + axis_qp[k][1]) * axis_qp[k][0] for k in range(8)], -1)
    b1_scale = np.array([qx[0] * p[0] for p in axis_qp], np.float32)
    bq1 = np.rint(b1 / b1_scale).astype(np.int32)
    bq3 = np.rint(b3 / (q2[0] * qw[2][0])).astype(np.int32)

    def build(c: Client) -> None:
        c.tensor("x", W, x.shape)
        for name, dims, p in (("xq", x.shape, qx), ("c1", (1, 8, 8, 8), q1), ("c2", (1, 8, 8, 8), q2),
                              ("c3", (1, 8, 8, 4), q3), ("a", (1, 8, 8, 4), qa), ("p", (1, 4, 4, 4), qp)):
            c.tensor(name, N, dims, np.uint8, p)
        c.static("w1", w1q, np.uint8, ([p[0] for p in axis_qp], [p[1] for p in axis_qp]), axis=3)
        c.static("w2", wq[1], np.uint8, qw[1])
        c.static("w3", wq[2], np.uint8, qw[2])
        c.static("b1", bq1, np.int32, (b1_scale.tolist(), [0] * 8), axis=0)
        c.static("b3", bq3, np.int32, (q2[0] * qw[2][0], 0))
        c.tensor("y", R, (1, 4, 4, 4))
        one, zero = np.array([1, 1], U32), np.zeros((2, 2), U32)
        c.node("q", "Quantize", ["x"], ["xq"])
        c.node("conv1", "Conv2d", ["xq", "w1", "b1"], ["c1"], stride=one, pad_amount=zero, dilation=one, group=1)
        c.node("dw", "DepthWiseConv2d", ["c1", "w2"], ["c2"], stride=one, pad_amount=np.ones((2, 2), U32))
        c.node("conv3", "Conv2d", ["c2", "w3", "b3"], ["c3"], stride=one, pad_amount=zero)
        c.node("add", "ElementWiseAdd", ["c3", "xq"], ["a"])
        c.node("pool", "PoolAvg2d", ["a"], ["p"], filter_size=np.array([2, 2], U32), stride=np.array([2, 2], U32))
        c.node("dq", "Dequantize", ["p"], ["y"])

    nodes, inits = [], {}
    def qdq(name, p):
        n, i = _qdq(name, p)
        nodes.extend(n)
        inits.update(i)
        return f"{name}_dq"
    for k, (w, p) in enumerate(zip((w1, w2, w3), qw), 1):
        onnx_w = w1_real if k == 1 else (wq[k - 1].astype(np.float32) + p[1]) * p[0]
        inits[f"W{k}"] = onnx_w.transpose(3, 2, 0, 1).copy()
    inits["B1"] = (bq1 * b1_scale).astype(np.float32)
    inits["B3"] = (bq3 * (q2[0] * qw[2][0])).astype(np.float32)
    xd = qdq("x", qx)
    nodes.append(helper.make_node("Conv", [xd, "W1", "B1"], ["c1r"]))
    nodes.append(helper.make_node("Clip", ["c1r", "lo", "hi"], ["c1"]))
    inits.update(lo=np.float32(0), hi=np.float32(6))
    nodes.append(helper.make_node("Conv", [qdq("c1", q1), "W2"], ["c2"], group=8, pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node("Conv", [qdq("c2", q2), "W3", "B3"], ["c3"]))
    nodes.append(helper.make_node("Add", [qdq("c3", q3), xd], ["a"]))
    nodes.append(helper.make_node("AveragePool", [qdq("a", qa)], ["p"], kernel_shape=[2, 2], strides=[2, 2]))
    nodes.append(helper.make_node("Identity", [qdq("p", qp)], ["y"]))
    return Case(build, x, (1, 4, 4, 4), onnx_model(nodes, {"x": x.transpose(NCHW)}, inits)), qp[0]


def test_qdq_block_within_one_quantum():
    case, quantum = qdq_block(np.random.default_rng(7))
    got, ref = _run(case)
    assert np.abs(got - ref).max() <= quantum * 1.001


def test_quantized_graph_io_within_one_quantum():
    """UFIXED_POINT_8 APP_WRITE / APP_READ tensors (no Quantize / Dequantize in the graph): the client writes and
    reads quantized bytes; Conv2d + ReluMinMax within one quantum of the exact integer result."""
    rng = np.random.default_rng(9)
    qx, qy = quant(-2, 2), quant(0, 4)
    x = rng.integers(0, 256, size=(1, 6, 6, 3)).astype(np.uint8)
    w = rng.normal(scale=0.3, size=(3, 3, 3, 5)).astype(np.float32)
    qw = quant(-np.abs(w).max(), np.abs(w).max())      # symmetric uint8 weights (offset -128): exact in int8
    wq = _q8(w, qw)
    c = Client()
    try:
        c.create_graph()
        c.tensor("x", W, x.shape, np.uint8, qx)
        c.static("w", wq, np.uint8, qw)
        c.tensor("c", N, (1, 6, 6, 5), np.uint8, qy)
        c.tensor("y", R, (1, 6, 6, 5), np.uint8, qy)
        c.node("conv", "Conv2d", ["x", "w"], ["c"], stride=np.array([1, 1], U32),
               pad_amount=np.ones((2, 2), U32))
        c.node("relu6", "ReluMinMax", ["c"], ["y"], min_value=0.0, max_value=6.0)
        c.finalize()
        got = c.execute({"x": x}, {"y": ((1, 6, 6, 5), np.uint8)})["y"]
    finally:
        c.close()
    # exact oracle (int64 accumulation; onnxruntime's QLinearConv is itself up to 2 quanta off here)
    xk = np.pad(x.astype(np.int64) + qx[1], ((0, 0), (1, 1), (1, 1), (0, 0)))
    wk = wq.astype(np.int64) + qw[1]
    acc = np.zeros((1, 6, 6, 5), np.int64)
    for i in range(6):
        for j in range(6):
            acc[0, i, j] = np.einsum("hwc,hwco->o", xk[0, i:i + 3, j:j + 3], wk)
    real = np.clip(acc * (float(qx[0]) * float(qw[0])), 0.0, 6.0)
    ref_q = np.clip(np.rint(real / qy[0]) - qy[1], 0, 255)
    assert np.abs(got.astype(np.int64) - ref_q).max() <= 1


def test_context_tensor_and_16_bit_activations():
    """A weight created once with tensorCreateContextTensor serves a graph; an 8-bit graph with a 16-bit fixed-point
    stretch (Convert to UFIXED_POINT_16, Sigmoid, Convert back) runs that stretch in fp16, within one 8-bit quantum
    of the float result."""
    rng = np.random.default_rng(13)
    x = rng.uniform(-1, 1, size=(1, 4, 4, 2)).astype(np.float32)
    w = np.full((1, 1, 2, 3), 0.5, np.float32)
    qx, qc, qs = quant(-1, 1), quant(-1, 1), quant(0, 1)
    q16 = (2.0 / 65535, -32768)
    c = Client()
    try:
        wt = c.describe("w", S, w.shape, np.float32, data=w)
        ok(c.qi.tensorCreateContextTensor(c.context, wt))
        c.tensors["w"] = wt
        c.create_graph()
        c.tensor("x", W, x.shape)
        c.tensor("xq", N, x.shape, np.uint8, qx)
        c.tensor("cv", N, (1, 4, 4, 3), np.uint8, qc)
        c.tensor("c16", N, (1, 4, 4, 3), np.uint16, q16)
        c.tensor("s16", N, (1, 4, 4, 3), np.uint16, (1.0 / 65535, 0))
        c.tensor("s8", N, (1, 4, 4, 3), np.uint8, qs)
        c.tensor("y", R, (1, 4, 4, 3))
        c.node("q", "Quantize", ["x"], ["xq"])
        c.node("conv", "Conv2d", ["xq", "w"], ["cv"], stride=np.array([1, 1], U32), pad_amount=np.zeros((2, 2), U32))
        c.node("up", "Convert", ["cv"], ["c16"])
        c.node("sig", "Sigmoid", ["c16"], ["s16"])
        c.node("down", "Convert", ["s16"], ["s8"])
        c.node("dq", "Dequantize", ["s8"], ["y"])
        c.finalize()
        got = c.execute({"x": x}, {"y": ((1, 4, 4, 3), np.float32)})["y"]
    finally:
        c.close()
    xq = (np.clip(np.rint(x / qx[0]) - qx[1], 0, 255) + qx[1]) * qx[0]
    conv = np.clip(np.rint(np.repeat(xq.sum(-1, keepdims=True) * 0.5, 3, -1) / qc[0]) - qc[1], 0, 255)
    ref = 1 / (1 + np.exp(-((conv + qc[1]) * qc[0])))
    assert np.abs(got - ref).max() <= qs[0] * 1.001


def test_float_graph_chains_stay_nchw_and_the_binary_reloads_identically():
    """A Conv -> Relu -> Add chain compiles with one transpose in and one out; contextGetBinary gives an npurt
    binary that contextCreateFromBinary loads to the same outputs, byte for byte."""
    rng = np.random.default_rng(11)
    case = _conv(rng, "conv")
    c = Client()
    try:
        c.create_graph("conv_graph")
        case.build(c)
        c.finalize()
        first = c.execute({"x": case.x}, {"y": (case.out_dims, np.float32)})["y"]
        size = ctypes.c_uint64()
        ok(c.qi.contextGetBinarySize(c.context, ctypes.byref(size)))
        buf = (ctypes.c_uint8 * size.value)()
        written = ctypes.c_uint64()
        ok(c.qi.contextGetBinary(c.context, buf, size.value, ctypes.byref(written)))
        assert written.value == size.value
        ctx2, graph2 = q.Qnn_ContextHandle_t(), q.Qnn_GraphHandle_t()
        ok(c.qi.contextCreateFromBinary(c.backend, c.device, None, buf, size.value, ctx2, None))
        ok(c.qi.graphRetrieve(ctx2, b"conv_graph", graph2))
        c.graph = graph2
        again = c.execute({"x": case.x}, {"y": (case.out_dims, np.float32)})["y"]
        ok(c.qi.contextFree(ctx2, None))
    finally:
        c.close()
    assert np.array_equal(first, again)


def test_execute_on_registered_memory_handles():
    """graphExecute with MEMHANDLE tensors registered (rpcmem, ION) in the contextCreate context."""
    rng = np.random.default_rng(3)
    case = FLOAT_CASES["Sigmoid"](rng)
    c = Client()
    bufs = []
    try:
        c.create_graph()
        case.build(c)
        c.finalize()
        ins, outs = [], []
        for name, arr, lst in (("x", case.x, ins), ("y", np.zeros(case.out_dims, np.float32), outs)):
            ptr = q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, q.RPCMEM_DEFAULT_FLAGS, arr.nbytes)
            bufs.append(ptr)
            ctypes.memmove(ptr, arr.ctypes.data, arr.nbytes)
            desc = q.Qnn_MemDescriptor_t()
            dims = (ctypes.c_uint32 * arr.ndim)(*arr.shape)
            desc.memShape.numDim, desc.memShape.dimSize = arr.ndim, dims
            desc.dataType, desc.memType = q.QNN_DATATYPE_FLOAT_32, q.QNN_MEM_TYPE_ION
            desc.ionInfo.fd = q.rpcmem_to_fd(ptr)
            handle = (ctypes.c_void_p * 1)()
            ok(c.qi.memRegister(c.context, desc, 1, handle))
            t = q.Qnn_Tensor_t()
            ctypes.memmove(ctypes.addressof(t), ctypes.addressof(c.tensors[name]), ctypes.sizeof(t))
            t.v2.memType, t.v2.memHandle = q.QNN_TENSORMEMTYPE_MEMHANDLE, handle[0]
            lst.append(t)
        ok(c.qi.graphExecute(c.graph, ins, 1, outs, 1, None, None))
        got = np.ctypeslib.as_array((ctypes.c_float * case.x.size).from_address(bufs[1])).reshape(case.out_dims)
        ref = 1 / (1 + np.exp(-case.x))
        np.testing.assert_allclose(got, ref, atol=2e-3)
    finally:
        c.close()
        for ptr in bufs:
            q.rpcmem_free(ptr)


# ----------------------------------------------------------------------------------------------------------
# validation and bad input
# ----------------------------------------------------------------------------------------------------------
def test_validate_op_config_is_truthful():
    """backendValidateOpConfig (tensors described in the config, none created) accepts what graphFinalize builds
    and refuses an unknown op type, an unknown package, and a param of the wrong shape."""
    c = Client()
    try:
        c.create_graph()
        c.tensor("x", W, (1, 4, 4, 3))
        c.tensor("y", R, (1, 4, 4, 3))
        good = c.op("r", "Relu", ["x"], ["y"])
        assert code(c.qi.backendValidateOpConfig(c.backend, good)) == q.QNN_SUCCESS
        unknown = c.op("t", "TopK", ["x"], ["y"], k=2)
        assert code(c.qi.backendValidateOpConfig(c.backend, unknown)) == q.QNN_BACKEND_ERROR_INVALID_ARGUMENT
        other = c.op("r2", "Relu", ["x"], ["y"])
        other.v1.packageName = b"my.package"
        assert code(c.qi.backendValidateOpConfig(c.backend, other)) == q.QNN_BACKEND_ERROR_OP_PACKAGE_NOT_FOUND
        bad = c.op("p", "PoolMax2d", ["x"], ["y"], filter_size=np.array([3, 3, 3], U32))
        assert code(c.qi.backendValidateOpConfig(c.backend, bad)) == q.QNN_BACKEND_ERROR_INVALID_ARGUMENT
        wrong_dims = c.op("p2", "PoolMax2d", ["x"], ["y"], filter_size=np.array([2, 2], U32),
                          stride=np.array([2, 2], U32))
        assert code(c.qi.backendValidateOpConfig(c.backend, wrong_dims)) == q.QNN_BACKEND_ERROR_INVALID_ARGUMENT
    finally:
        c.close()


def test_bad_input_is_refused_and_changes_nothing(caplog):
    """Wrong tensor type, a param of the wrong shape, a node on an unknown tensor, add / finalize after finalize:
    the QNN code and an <E> line; the graph still finalizes and runs as if the bad calls never happened."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(1, 4, 4, 3)).astype(np.float32)
    c = Client()
    try:
        c.create_graph()
        c.tensor("x", W, x.shape)
        c.tensor("y", R, x.shape)
        c.tensor("bad", 99, x.shape, expect=q.QNN_TENSOR_ERROR_UNSUPPORTED_TENSOR_PARAM)
        c.tensor("nodata", S, (3,), expect=q.QNN_TENSOR_ERROR_INVALID_TENSOR_PARAM)
        c.tensor("x", W, x.shape, expect=q.QNN_TENSOR_ERROR_ALREADY_EXISTS)
        c.node("pool", "PoolMax2d", ["x"], ["y"], expect=q.QNN_GRAPH_ERROR_INVALID_OP_CONFIG,
               filter_size=np.array([[2, 2]], U32))
        ghost = c.describe("ghost", N, x.shape)
        c.tensors["ghost"] = ghost
        c.node("g", "Relu", ["ghost"], ["y"], expect=q.QNN_GRAPH_ERROR_INVALID_TENSOR)
        with caplog.at_level("ERROR", logger="npurt.qnn"):
            c.node("mix", "Relu", ["x"], ["y"], expect=q.QNN_SUCCESS)
        c.finalize()
        assert code(c.qi.graphFinalize(c.graph, None, None)) == q.QNN_GRAPH_ERROR_GRAPH_FINALIZED
        c.node("late", "Relu", ["x"], ["y"], expect=q.QNN_GRAPH_ERROR_GRAPH_FINALIZED)
        got = c.execute({"x": x}, {"y": (x.shape, np.float32)})["y"]
    finally:
        c.close()
    np.testing.assert_allclose(got, np.maximum(x, 0), atol=1e-2)


def test_bad_input_logs_one_line(caplog):
    c = Client()
    try:
        c.create_graph()
        c.tensor("x", W, (1, 2, 2, 1))
        c.tensor("y", R, (1, 2, 2, 1))
        with caplog.at_level("ERROR", logger="npurt.qnn"):
            c.node("t", "TopK", ["x"], ["y"], expect=q.QNN_GRAPH_ERROR_UNSUPPORTED_FEATURE, k=1)
        assert any("TopK" in r.getMessage() for r in caplog.records)
        ex = q.Qnn_GraphHandle_t()
        assert code(c.qi.graphExecute(c.graph, [], 0, [], 0, None, None)) == q.QNN_GRAPH_ERROR_GRAPH_NOT_FINALIZED
        assert code(c.qi.graphCreate(c.context, b"graph", None, ex)) == q.QNN_GRAPH_ERROR_INVALID_NAME
    finally:
        c.close()


def test_graph_built_from_c(tmp_path):
    """tests/c/qnn_graph.c builds, validates, finalizes, executes and reloads a Conv2d + ReluMinMax graph through
    libQnnHtp.so's table (bad input refused with the QNN codes); its output matches onnxruntime."""
    from helpers.capi import compile_c, prefix, run_c
    pfx = prefix()
    exe = compile_c("qnn_graph", pfx, libs=(), flags=("-I", str(pfx / "include" / "QNN"), "-ldl", "-lpthread"))
    proc = run_c(exe, str(tmp_path), env={"LD_LIBRARY_PATH": str(pfx / "lib")})
    assert "qnn_graph ok" in proc.stdout, proc.stdout + proc.stderr
    x = np.fromfile(tmp_path / "x.raw", np.float32).reshape(1, 6, 6, 3)
    w = np.fromfile(tmp_path / "w.raw", np.float32).reshape(3, 3, 3, 4)
    b = np.fromfile(tmp_path / "b.raw", np.float32)
    y = np.fromfile(tmp_path / "y.raw", np.float32).reshape(1, 6, 6, 4)
    model = onnx_model([helper.make_node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
                        helper.make_node("Clip", ["c", "lo", "hi"], ["y"])], {"x": x.transpose(NCHW)},
                       {"W": w.transpose(3, 2, 0, 1).copy(), "B": b, "lo": np.float32(0), "hi": np.float32(2)})
    ref = run_ort(model, {"x": x.transpose(NCHW)})[0].transpose(NHWC)
    np.testing.assert_allclose(y, ref, atol=1e-2)


def test_the_host_survives_a_client_unloading_the_library(tmp_path):
    """A client dlcloses libQnnHtp.so after using it (onnxruntime's EP unloads its backend with its session); the
    embedded module's objects stay in sys.modules, so the library is never unmapped and walking sys.modules
    afterwards is safe (checked in a subprocess: a regression would kill it)."""
    import subprocess
    import sys
    import textwrap
    from helpers.capi import prefix
    script = textwrap.dedent(f"""
        import _ctypes, ctypes, inspect, sys
        lib = ctypes.CDLL({str(prefix() / "lib" / "libQnnHtp.so")!r})
        providers, n = ctypes.c_void_p(), ctypes.c_uint32()
        assert lib.QnnInterface_getProviders(ctypes.byref(providers), ctypes.byref(n)) == 0
        _ctypes.dlclose(lib._handle)
        assert any("npurt_capi" in k for k in sys.modules)
        for m in list(sys.modules.values()):
            inspect.ismodule(m)
            getattr(m, "__file__", None)
        print("alive")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0 and "alive" in proc.stdout, proc.stdout + proc.stderr[-2000:]
