"""Bias correction in closed form (`npurt.model.techniques.bias_shift` on `Layer.patch_mean`'s box sums) equals the
mean output shift of the int8 weights computed directly, mean((W_q - W) * x) over the calibration inputs, for Convs
with padding (explicit, asymmetric and auto_pad), strides, dilations, groups and depthwise, and a Gemm."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from helpers.oracle import ort_session
from npurt.exec.compile import optimize as optimize_ir
from npurt.exec.evaluate import evaluate_node
from npurt.model.calibrate import iterate_float
from npurt.model.onnx_import import import_onnx
from npurt.model.techniques import apply_techniques, bias_shift, layer_statistics, quant_layers
from npurt.model.weights import quantize_weight

CONVS = {   # name: (weight shape, attributes)
    "conv_pad_stride": ((6, 4, 3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
    "conv_depthwise_dilated": ((6, 1, 3, 3), {"group": 6, "dilations": [2, 2], "pads": [2, 1, 0, 2]}),
    "conv_grouped_same": ((4, 3, 3, 2), {"group": 2, "auto_pad": "SAME_LOWER", "strides": [2, 1]}),
    "conv_wide_kernel": ((6, 4, 3, 4), {}),          # each tap reads a few of the input's positions
}


def _model(rng: np.random.Generator) -> onnx.ModelProto:
    """x (1, 4, 13, 11) -> Relu -> the convs (Relu after the first) -> Flatten -> Gemm (transB) to 5 outputs."""
    nodes, inits, x = [helper.make_node("Relu", ["x"], ["x_relu"], name="x_relu")], [], "x_relu"
    for name, (shape, attrs) in CONVS.items():
        inits += [numpy_helper.from_array(rng.normal(0, 0.5, shape).astype(np.float32), f"{name}.W"),
                  numpy_helper.from_array(rng.normal(0, 0.1, shape[0]).astype(np.float32), f"{name}.B")]
        nodes.append(helper.make_node("Conv", [x, f"{name}.W", f"{name}.B"], [name], name=name, **attrs))
        x = name
        if name == "conv_pad_stride":
            nodes.append(helper.make_node("Relu", [x], ["relu"], name="relu"))
            x = "relu"
    nodes.append(helper.make_node("Flatten", [x], ["flat"], name="flat"))
    k = 6 * 1 * 2                                     # conv_wide_kernel's output (1, 6, 1, 2)
    inits += [numpy_helper.from_array(rng.normal(0, 0.2, (5, k)).astype(np.float32), "fc.W"),
              numpy_helper.from_array(rng.normal(0, 0.1, 5).astype(np.float32), "fc.B")]
    nodes.append(helper.make_node("Gemm", ["flat", "fc.W", "fc.B"], ["y"], name="fc", transB=1, beta=0.5))
    graph = helper.make_graph(nodes, "bias_closed_form",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 13, 11])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _direct_conv_shift(delta: np.ndarray, attrs: dict, inputs: list[np.ndarray]) -> np.ndarray:
    """mean over the inputs, batch and output positions of Conv(x, delta) (no bias), by onnxruntime."""
    node = helper.make_node("Conv", ["x", "W"], ["y"], **attrs)
    graph = helper.make_graph([node], "delta", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(delta.astype(np.float32), "W")])
    sess = ort_session(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    return np.mean([sess.run(None, {"x": x})[0].astype(np.float64).mean(axis=(0, 2, 3)) for x in inputs], axis=0)


def test_closed_form_shift_equals_the_direct_mean_of_the_int8_weight_error():
    rng = np.random.default_rng(7)
    graph = optimize_ir(import_onnx(_model(rng)))
    layers = quant_layers(graph)
    names = {layer.node.name: layer for layer in layers}
    assert set(names) == {*CONVS, "fc"}
    samples = [[rng.normal(0.3, 1.0, (1, 4, 13, 11)).astype(np.float32)] for _ in range(3)]
    stats = layer_statistics(graph, layers, samples, None, None, evaluate_node, second_moment=False)
    runs = [dict(iterate_float(graph, {"x": s[0]}, evaluate_node)) for s in samples]
    for name, layer in names.items():
        w = graph.constants[layer.weight]
        q, scales = quantize_weight(w, layer.axis, False)
        shape = [1] * w.ndim
        shape[layer.axis] = -1
        delta = q.astype(np.float64) * scales.astype(np.float64).reshape(shape) - w.astype(np.float64)
        inputs = [values[layer.node.inputs[0]] for values in runs]
        if name == "fc":
            direct = np.mean([x.astype(np.float64) @ delta.T for x in inputs], axis=(0, 1)) / 0.5
        else:
            direct = _direct_conv_shift(delta, CONVS[name][1], inputs)
        closed = bias_shift(layer, delta + w.astype(np.float64), w, stats[layer.index].mean)
        assert np.max(np.abs(direct)) > 1e-4                        # a shift worth correcting
        np.testing.assert_allclose(closed, direct, rtol=0, atol=1e-5 * np.max(np.abs(direct)), err_msg=name)


def test_bias_correction_subtracts_the_shift_and_is_deterministic():
    rng = np.random.default_rng(11)
    model = _model(rng)
    samples = [[rng.normal(0.0, 1.0, (1, 4, 13, 11)).astype(np.float32)] for _ in range(2)]
    graphs = [optimize_ir(import_onnx(model)) for _ in range(2)]
    before = {l.node.name: graphs[0].constants[l.node.inputs[2]].copy() for l in quant_layers(graphs[0])}
    stats = layer_statistics(graphs[0], quant_layers(graphs[0]), samples, None, None, evaluate_node, False)
    for g in graphs:
        assert apply_techniques(g, ["bias"], samples, None, None, evaluate_node) == {"bias": {"layers": 5}}
    for layer in quant_layers(graphs[0]):
        w = graphs[0].constants[layer.weight]
        q, scales = quantize_weight(w, layer.axis, False)
        shape = [1] * w.ndim
        shape[layer.axis] = -1
        stored = q.astype(np.float64) * scales.astype(np.float64).reshape(shape)
        expected = (before[layer.node.name].astype(np.float64)
                    - bias_shift(layer, stored, w, stats[layer.index].mean)).astype(np.float32)
        np.testing.assert_array_equal(graphs[0].constants[layer.node.inputs[2]], expected)
        np.testing.assert_array_equal(graphs[1].constants[layer.node.inputs[2]], expected)


def test_patch_mean_equals_the_mean_over_every_window_for_random_geometries():
    """Box sums against the plain mean over a sliding-window view of the padded input (`Layer.windows`), batch 2,
    strides and dilations up to 3, asymmetric pads, auto_pad, kernels larger than the stride or than the input."""
    from npurt.model.ir import Node
    from npurt.model.techniques import Layer
    from npurt.tensor.window import conv_geometry
    rng = np.random.default_rng(5)
    for _ in range(60):
        kh, kw = (int(v) for v in rng.integers(1, 6, 2))
        attrs = {"strides": [int(v) for v in rng.integers(1, 4, 2)],
                 "dilations": [int(v) for v in rng.integers(1, 4, 2)]}
        if rng.random() < 0.3:
            attrs["auto_pad"] = str(rng.choice(["SAME_UPPER", "SAME_LOWER", "VALID"]))
        else:
            attrs["pads"] = [int(v) for v in rng.integers(0, 4, 4)]
        h, w = (int(v) for v in rng.integers(1, 12, 2))
        eff = ((kh - 1) * attrs["dilations"][0] + 1, (kw - 1) * attrs["dilations"][1] + 1)
        pads = attrs.get("pads", [0] * 4)
        if attrs.get("auto_pad") == "VALID" or "auto_pad" not in attrs:
            h, w = max(h, eff[0] - pads[0] - pads[2]), max(w, eff[1] - pads[1] - pads[3])
        x = rng.normal(0.5, 1.0, (2, 3, h, w)).astype(np.float32)
        g = conv_geometry(x.shape, (kh, kw), attrs)
        out_shape = (2, 6, *g.out)
        layer = Layer(0, Node("c", "Conv", ["x", "W"], ["y"], attrs), 3, 0, (kh, kw))
        expected = layer.windows(x, out_shape).mean(axis=(0, 2, 3), dtype=np.float64).reshape(3, -1)
        np.testing.assert_allclose(layer.patch_mean(x, out_shape), expected, rtol=1e-12, atol=1e-12,
                                   err_msg=f"{attrs} kernel {(kh, kw)} input {(h, w)}")
