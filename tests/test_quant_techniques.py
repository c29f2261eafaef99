"""Quantisation techniques over the float IR before calibration (`npurt.model.techniques`): cross-layer
equalisation is float-equivalent and idempotent, bias correction changes biases only, adaptive rounding puts
weights on npurt's int8 grid (floor or ceil of each weight), and the switches (`optimize=`, `npurt convert
--optimize`, the toolkit's `npurt_optimize`, `npurt optimize` writing a float ONNX) do what they say."""
from __future__ import annotations

import numpy as np
import pytest

import npurt
from npurt.errors import ErrorCode, NpuError
from npurt.exec.compile import optimize as optimize_ir
from npurt.exec.evaluate import evaluate_node
from npurt.model import zoo
from npurt.model.calibrate import iterate_float
from npurt.model.onnx_import import import_onnx
from npurt.model.options import CompileOptions
from npurt.model.techniques import (apply_techniques, equalization_pairs, equalize, quant_layers)
from npurt.tensor.quant import quantize_per_channel


def _model():
    return zoo.mobilenet_uneven(size=16, spread=1.5, seed=3)


def _samples(n: int, seed: int, size: int = 16) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [[rng.normal(0, 1, (1, 3, size, size)).astype(np.float32)] for _ in range(n)]


def _graph():
    return optimize_ir(import_onnx(_model()))


def _outputs(graph, sample) -> list[np.ndarray]:
    values = dict(iterate_float(graph, dict(zip(graph.inputs, sample)), evaluate_node))
    return [values[o].astype(np.float64) for o in graph.outputs]


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _weights(graph) -> dict[str, np.ndarray]:
    return {layer.node.name: graph.constants[layer.weight].copy() for layer in quant_layers(graph)}


def _biases(graph) -> dict[str, np.ndarray]:
    return {layer.node.name: graph.constants[layer.node.inputs[2]].copy() for layer in quant_layers(graph)
            if len(layer.node.inputs) > 2 and layer.node.inputs[2]}


# --- cross-layer equalisation ----------------------------------------------------------------------------------------

def test_cle_is_float_equivalent_and_evens_the_channel_ranges():
    graph = _graph()
    sample = _samples(1, 0)[0]
    before = _outputs(graph, sample)
    pairs = equalization_pairs(graph)
    dw = [graph.nodes[a] for a, _ in pairs if int(graph.nodes[a].attrs.get("group", 1)) > 1]
    spread_before = [np.ptp(np.log10(np.abs(graph.constants[n.inputs[1]]).reshape(len(
        graph.constants[n.inputs[1]]), -1).max(axis=1))) for n in dw]
    assert equalize(graph) == len(pairs) == 8
    after = _outputs(graph, sample)
    for x, y in zip(before, after):
        assert np.max(np.abs(x - y)) <= 1e-5 * np.max(np.abs(x))
    spread_after = [np.ptp(np.log10(np.abs(graph.constants[n.inputs[1]]).reshape(len(
        graph.constants[n.inputs[1]]), -1).max(axis=1))) for n in dw]
    assert max(spread_after) < 0.5 * min(spread_before)        # ranges (log10) spread far less after


def test_cle_is_idempotent():
    graph = _graph()
    equalize(graph)
    once = _weights(graph)
    equalize(graph)
    for name, w in _weights(graph).items():
        np.testing.assert_allclose(w, once[name], rtol=1e-5, atol=1e-7 * float(np.abs(w).max()))


def test_cle_does_not_scale_through_relu6():
    graph = optimize_ir(import_onnx(zoo.mobilenet_v2_like(size=32)))
    pairs = equalization_pairs(graph)
    assert pairs                                 # project conv (no activation) -> next expand conv
    for a, _ in pairs:
        assert graph.nodes[a].activation != "Clip"
    sample = [np.random.default_rng(1).normal(0, 1, (1, 3, 32, 32)).astype(np.float32)]
    before = _outputs(graph, sample)
    equalize(graph)
    for x, y in zip(before, _outputs(graph, sample)):
        assert np.max(np.abs(x - y)) <= 1e-5 * np.max(np.abs(x))


# --- bias correction and adaptive rounding ---------------------------------------------------------------------------

def test_bias_correction_changes_biases_only():
    graph = _graph()
    weights, biases = _weights(graph), _biases(graph)
    report = apply_techniques(graph, ["bias"], _samples(4, 1), None, None, evaluate_node)
    assert report == {"bias": {"layers": len(weights)}}
    for name, w in _weights(graph).items():
        np.testing.assert_array_equal(w, weights[name])
    changed = [name for name, b in _biases(graph).items() if not np.array_equal(b, biases[name])]
    assert len(changed) == len(weights)


def test_adaround_weights_lie_on_the_int8_grid_next_to_the_float_ones():
    graph = _graph()
    layers = quant_layers(graph)
    before = _weights(graph)
    biases = _biases(graph)
    report = apply_techniques(graph, ["adaround"], _samples(4, 2), None, None, evaluate_node)
    assert report == {"adaround": {"layers": len(layers)}}
    assert _biases(graph).keys() == biases.keys()
    for b_name, b in _biases(graph).items():
        np.testing.assert_array_equal(b, biases[b_name])
    differs = 0
    for layer in layers:
        w, w0 = graph.constants[layer.weight], before[layer.node.name]
        q, scales = quantize_per_channel(w, layer.axis, "int8")
        q0, scales0 = quantize_per_channel(w0, layer.axis, "int8")
        np.testing.assert_array_equal(scales, scales0)               # the grid is the float weights' grid
        shape = [1] * w.ndim
        shape[layer.axis] = -1
        np.testing.assert_allclose(q * scales.reshape(shape), w, rtol=1e-6, atol=0)   # stored exactly
        t = w0.astype(np.float64) / scales0.reshape(shape)
        assert np.all((q == np.floor(t)) | (q == np.ceil(t)))                         # rounded down or up
        differs += int(np.sum(q != q0))
    assert differs > 0                                                                 # not plain rounding


def test_techniques_raise_int8_accuracy_and_are_deterministic():
    model = _model()
    calib, held_out = _samples(6, 4), _samples(4, 5)
    import onnxruntime as ort
    sess = ort.InferenceSession(model.SerializeToString())
    refs = [sess.run(None, {"input": s[0]})[0] for s in held_out]

    def mean_cos(optimize):
        c = npurt.compile(model, soc="rk3588", quantize=calib, optimize=optimize, progress=False)
        with npurt.Session(c) as s:
            return c, np.mean([_cosine(s.run(x)[0], r) for x, r in zip(held_out, refs)])

    plain, cos_plain = mean_cos(None)
    cle, cos_cle = mean_cos("cle,bias")
    assert cle.meta["optimize"] == {"cle": {"pairs": 8}, "bias": {"layers": 10}}
    assert "optimize" not in plain.meta
    assert cos_plain < 0.9 < 0.999 < cos_cle
    again = npurt.compile(model, soc="rk3588", quantize=calib, optimize=["bias", "cle"], progress=False)
    assert again.to_bytes() == cle.to_bytes()


@pytest.mark.parametrize("value", ["cle,foo", ["bias", 3], 5])
def test_bad_technique_names_are_invalid_arguments(value):
    with pytest.raises(NpuError) as err:
        npurt.compile(_model(), quantize=_samples(1, 0), optimize=value, progress=False)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT


def test_techniques_need_an_int8_calibration():
    with pytest.raises(NpuError) as err:
        CompileOptions(precision="fp16", optimize="cle").checked()
    assert err.value.code is ErrorCode.INVALID_ARGUMENT and "calibration dataset" in err.value.message
