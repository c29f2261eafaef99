"""Quantisation techniques over the float IR before calibration (`npurt.model.techniques`): cross-layer
equalisation is float-equivalent and idempotent, bias correction changes biases only, adaptive rounding puts
weights on npurt's int8 grid (floor or ceil of each weight), and the switches (`optimize=`, `npurt convert
--optimize`, the toolkit's `npurt_optimize`, `npurt optimize` writing a float ONNX) do what they say."""
from __future__ import annotations

import numpy as np
import pytest

import npurt
from helpers.oracle import ort_session
from npurt.errors import ErrorCode, NpuError
from npurt.exec.compile import optimize as optimize_ir
from npurt.exec.evaluate import evaluate_node
from npurt.model import zoo
from npurt.model.calibrate import iterate_float
from npurt.model.onnx_import import import_onnx
from npurt.model.options import CompileOptions
from npurt.model.techniques import (apply_techniques, equalization_pairs, equalize, quant_layers)
from npurt.model.weights import asymmetric_weights, quantize_weight_asymmetric
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
    differs = asymmetric = 0
    for layer in layers:
        w, w0 = graph.constants[layer.weight], before[layer.node.name]
        shape = [1] * w.ndim
        shape[layer.axis] = -1
        if asymmetric_weights(graph, layer.node):       # the first conv: its asymmetric grid (codes - zero point)
            (q, scales, zps), (q0, scales0, zps0) = (quantize_weight_asymmetric(v, layer.axis) for v in (w, w0))
            q, q0 = q - zps.reshape(shape), q0 - zps0.reshape(shape)
            np.testing.assert_allclose(scales, scales0, rtol=1e-6)
            asymmetric += 1
        else:
            q, scales = quantize_per_channel(w, layer.axis, "int8")
            q0, scales0 = quantize_per_channel(w0, layer.axis, "int8")
            np.testing.assert_array_equal(scales, scales0)           # the grid is the float weights' grid
        np.testing.assert_allclose(q * scales.reshape(shape), w, rtol=1e-6, atol=0)   # stored exactly
        t = w0.astype(np.float64) / scales0.reshape(shape)
        assert np.all((q == np.floor(t)) | (q == np.ceil(t)))                         # rounded down or up
        differs += int(np.sum(q != q0))
    assert differs > 0                                                                 # not plain rounding
    assert asymmetric == 1


def test_techniques_raise_int8_accuracy_and_are_deterministic():
    model = _model()
    calib, held_out = _samples(6, 4), _samples(4, 5)
    sess = ort_session(model)
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


# --- the float ONNX for the vendors' quantisers ------------------------------------------------------------------------

def _initializers(model) -> dict[str, np.ndarray]:
    from onnx import numpy_helper
    return {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}


def _ort(model, x: np.ndarray) -> np.ndarray:
    sess = ort_session(model)
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def _affine_model():
    """x -> Conv -> Mul(per-channel) -> Add(per-channel, (1,C,1,1)) -> Relu -> Conv (bias) -> Sub(shared scalar)
    -> Relu -> Conv -> y: the per-channel affine ops paddle2onnx writes instead of a BatchNormalization."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(16)
    c = 8
    inits = {"w1": rng.normal(0, 1, (c, 3, 3, 3)), "k1": 10 ** rng.uniform(-1, 1, (c, 1, 1)),
             "a1": rng.normal(0, 0.5, (1, c, 1, 1)), "w2": rng.normal(0, 1, (c, c, 1, 1)),
             "b2": rng.normal(0, 0.5, c), "one": np.array(0.1), "w3": rng.normal(0, 1, (2, c, 1, 1))}
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Mul", ["c1", "k1"], ["m1"]), helper.make_node("Add", ["m1", "a1"], ["s1"]),
             helper.make_node("Relu", ["s1"], ["r1"]), helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"]),
             helper.make_node("Sub", ["c2", "one"], ["d2"]), helper.make_node("Relu", ["d2"], ["r2"]),
             helper.make_node("Conv", ["r2", "w3"], ["c3"]), helper.make_node("Sub", ["c3", "one"], ["y"])]
    graph = helper.make_graph(nodes, "affine", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 16, 16])],
                              [numpy_helper.from_array(v.astype(np.float32), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _in_constant_nodes(model):
    """The model with every initializer held by a Constant node instead, as paddle2onnx writes weights."""
    from onnx import helper
    out = type(model)()
    out.CopyFrom(model)
    consts = [helper.make_node("Constant", [], [i.name], value=i) for i in out.graph.initializer]
    out.graph.ClearField("initializer")
    nodes = consts + list(out.graph.node)
    out.graph.ClearField("node")
    out.graph.node.extend(nodes)
    return out


@pytest.mark.parametrize("make", [lambda: _model(), lambda: zoo.mobilenet_v2_like(size=32), _affine_model,
                                  lambda: _in_constant_nodes(_model())])
def test_written_cle_model_is_float_equivalent_and_edited_in_place(make):
    from npurt.exec.compile import optimize_onnx
    model = make()
    size = model.graph.input[0].type.tensor_type.shape.dim[2].dim_value
    written, report = optimize_onnx(model, "cle")
    assert report["cle"]["pairs"] > 0
    original = _initializers(model)
    if not original:                                            # weights in Constant nodes: those values change
        assert not written.graph.initializer
    from onnx import numpy_helper
    values = [[numpy_helper.to_array(a.t) for n in m.graph.node for a in n.attribute if a.name == "value"]
              + list(_initializers(m).values()) for m in (model, written)]
    assert any(a.shape != b.shape or not np.array_equal(a, b) for a, b in zip(*values))   # the weights did change
    assert [(n.op_type, list(n.output)) for n in written.graph.node] == \
        [(n.op_type, list(n.output)) for n in model.graph.node]
    added = _initializers(written).keys() - original.keys()
    for n, m in zip(written.graph.node, model.graph.node):      # the same inputs, or a copy of a shared constant
        assert len(n.input) == len(m.input)
        assert all(a == b or (b in original and a in added) for a, b in zip(n.input, m.input))
    assert _initializers(written).keys() >= original.keys()
    for seed in (0, 1):
        x = np.random.default_rng(seed).normal(0, 1, (1, 3, size, size)).astype(np.float32)
        ref, got = _ort(model, x), _ort(written, x)
        assert np.max(np.abs(got - ref)) <= 1e-5 * np.max(np.abs(ref))


def test_written_bias_and_rounding_change_only_their_initializers():
    from npurt.exec.compile import optimize_onnx
    model = _model()
    original = _initializers(model)
    convs = [n for n in model.graph.node if n.op_type in ("Conv", "Gemm")]
    weight_names = {n.input[1] for n in convs}

    biased, _ = optimize_onnx(model, "bias", _samples(4, 6))
    new = _initializers(biased)
    additive = {n.input[2] for n in model.graph.node if n.op_type in ("BatchNormalization", "Conv", "Gemm")
                and len(n.input) > 2}                          # a BN's B, a Conv's / Gemm's bias
    changed = {name for name in original if not np.array_equal(new[name], original[name])}
    assert new.keys() == original.keys() and changed and changed <= additive
    assert len(changed) == 10                                   # every layer's (a conv's: its BN's B)

    rounded, _ = optimize_onnx(model, "adaround", _samples(4, 6))
    new = _initializers(rounded)
    assert new.keys() == original.keys()
    changed = {name for name in original if not np.array_equal(new[name], original[name])}
    assert changed == weight_names                              # every weight, nothing else
    # Folded with its BatchNormalization (as a vendor's quantiser folds it), each conv weight lies on the grid.
    graph = optimize_ir(import_onnx(rounded))
    for layer in quant_layers(graph):
        w = graph.constants[layer.weight]
        shape = [1] * w.ndim
        shape[layer.axis] = -1
        if asymmetric_weights(graph, layer.node):       # the first conv: on its asymmetric grid
            q, scales, zps = quantize_weight_asymmetric(w, layer.axis)
            q = q - zps.reshape(shape)
        else:
            q, scales = quantize_per_channel(w, layer.axis, "int8")
        np.testing.assert_allclose(q * scales.reshape(shape), w, rtol=1e-5, atol=1e-7 * float(np.abs(w).max()))


def _fails_in_process(capsys, *args: str, words: tuple[str, ...] = ()) -> None:
    """`npurt ARGS` run in this process: exit status 2 and one `error:` line naming `words`."""
    from npurt.cli.main import main
    capsys.readouterr()
    assert main([str(a) for a in args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error:" in err[0], err
    for w in words:
        assert w in err[0], (w, err)


def test_npurt_optimize_command(tmp_path, capsys):
    import onnx
    from helpers.cli import ok_json
    src = tmp_path / "m.onnx"
    onnx.save(_model(), src)
    d = ok_json("optimize", src, "-o", tmp_path / "m.eq.onnx")
    assert d["techniques"] == ["cle"] and d["cle"]["pairs"] == 8 and d["for"] == "rknn"
    eq = onnx.load(tmp_path / "m.eq.onnx")
    meta = {p.key: p.value for p in eq.metadata_props}
    assert '"techniques": ["cle"]' in meta["npurt.optimize"]
    d = ok_json("optimize", src, "-o", tmp_path / "m.b.onnx", "--dataset", "random", "--for", "qnn")
    assert d["techniques"] == ["cle", "bias"] and d["bias"]["layers"] == 10 and d["for"] == "qnn"
    _fails_in_process(capsys, "optimize", src, "-o", tmp_path / "x.onnx", "--techniques", "cle,nope",
                      words=("nope",))
    _fails_in_process(capsys, "optimize", src, "-o", tmp_path / "x.onnx", "--techniques", "adaround",
                      words=("--dataset",))
    _fails_in_process(capsys, "optimize", src, "-o", tmp_path / "x.onnx", "--for", "tflite", words=("--for",))
    _fails_in_process(capsys, "optimize", src, "-o", src, words=("--output",))
    assert not (tmp_path / "x.onnx").exists()


def test_convert_and_accuracy_switches(tmp_path, capsys):
    import onnx
    from helpers.cli import ok_json
    src = tmp_path / "m.onnx"
    onnx.save(_model(), src)
    out = tmp_path / "m.npurt"
    ok_json("convert", src, "-o", out, "--quantize", "random", "--optimize", "cle,bias")
    assert npurt.load_compiled(out).meta["optimize"] == {"cle": {"pairs": 8}, "bias": {"layers": 10}}
    _fails_in_process(capsys, "convert", src, "-o", tmp_path / "n.npurt", "--quantize", "random", "--optimize",
                      "cle,x", words=("'x'",))
    _fails_in_process(capsys, "convert", src, "-o", tmp_path / "n.npurt", "--optimize", "cle", words=("--quantize",))
    _fails_in_process(capsys, "convert", src, "-o", tmp_path / "n.npurt", "--quantize", "random", "--optimize", "cle",
                      "--dynamic-input", "1,3,16,16;1,3,32,32", words=("dynamic-shape",))
    assert not (tmp_path / "n.npurt").exists()
    tuned = ok_json("accuracy", src, "--quantize", "random", "--optimize", "cle")
    assert tuned["optimize"] == {"cle": {"pairs": 8}}
    # The reference is equalised as the model was: the tensors between equalised convs compare, not only outputs.
    assert min(r["single_cosine"] for r in tuned["tensors"]) > 0.99
    plain = npurt.accuracy_analysis(str(src), _samples(4, 15))
    assert plain.optimize == {} and min(r.single_cosine for r in plain.tensors) < 0.99
    assert min(r["entire_cosine"] for r in tuned["tensors"]) > plain.outputs()[0].entire_cosine


def test_toolkit_config_extra(tmp_path, capsys):
    import onnx
    from npurt.toolkit import RKNN
    src = tmp_path / "m.onnx"
    onnx.save(_model(), src)
    rng = np.random.default_rng(8)
    lines = []
    for k in range(3):
        np.save(tmp_path / f"s{k}.npy", rng.normal(0, 1, (1, 3, 16, 16)).astype(np.float32))
        lines.append(f"s{k}.npy")
    (tmp_path / "dataset.txt").write_text("\n".join(lines) + "\n")
    rknn = RKNN()
    assert rknn.config(target_platform="rk3588", npurt_optimize="cle,bias") == 0
    assert rknn.config(target_platform="rk3588", npurt_optimize="cle,zz") == -1
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("E ")]
    assert len(err) == 1 and err[0].startswith("E config: npurt_optimize") and "'zz'" in err[0]
    assert rknn._config["npurt_optimize"] == "cle,bias"          # the failed call changed nothing
    assert rknn.load_onnx(str(src)) == 0
    assert rknn.build(dataset=str(tmp_path / "dataset.txt")) == 0
    assert rknn._compiled.meta["optimize"] == {"cle": {"pairs": 8}, "bias": {"layers": 10}}
    assert RKNN().config(target_platform="rk3588") == 0          # off by default
    rknn.release()


def test_per_layer_weights_one_scale_per_tensor_and_the_toolkits_layer_method():
    from npurt.model.weights import stored_view
    calib = _samples(3, 9)
    per_layer = npurt.compile(_model(), soc="rk3588", quantize=calib, weight_method="layer", progress=False)
    per_channel = npurt.compile(_model(), soc="rk3588", quantize=calib, progress=False)
    assert per_layer.meta["weight_method"] == "layer" and "weight_method" not in per_channel.meta

    def scales(compiled, weight):
        entry = compiled.weights[compiled.weights[weight].scales]
        return stored_view(entry, compiled.weight_blob, compiled.plan.weight_offsets[entry.name])
    convs = [n.inputs[1] for n in per_layer.graph.nodes if n.op_type == "Conv"]
    for name in convs:
        s = scales(per_layer, name)
        assert np.all(s == s[0])                                 # one scale for the whole tensor
        assert np.ptp(scales(per_channel, name)) > 0
    with pytest.raises(NpuError) as err:
        npurt.compile(_model(), quantize=calib, weight_method="group", progress=False)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT


def test_writing_refuses_a_weight_computed_by_a_node(tmp_path, capsys):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from npurt.exec.compile import optimize_onnx
    rng = np.random.default_rng(10)
    w1 = numpy_helper.from_array(rng.normal(0, 1, (4, 3, 3, 3)).astype(np.float32), "w1")
    w2t = numpy_helper.from_array(rng.normal(0, 1, (4, 2, 1, 1)).astype(np.float32), "w2t")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Transpose", ["w2t"], ["w2"], perm=[1, 0, 2, 3]),   # a weight computed by a node
             helper.make_node("Conv", ["r1", "w2"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 8, 8])], [w1, w2t])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    with pytest.raises(NpuError) as err:
        optimize_onnx(model, "cle")
    assert err.value.code is ErrorCode.NOT_SUPPORTED and "neither an initializer nor a Constant" in err.value.message
    src = tmp_path / "c.onnx"
    onnx.save(model, src)
    _fails_in_process(capsys, "optimize", src, "-o", tmp_path / "c.eq.onnx", words=("neither an initializer",))
    assert not (tmp_path / "c.eq.onnx").exists()
    # npurt's own int8 compiles it equalised all the same: the IR holds the folded constant.
    compiled = npurt.compile(model, quantize=_samples(2, 11, size=8), optimize="cle", progress=False)
    assert compiled.meta["optimize"] == {"cle": {"pairs": 1}}


def test_techniques_applied_twice():
    """CLE and rounding are idempotent; bias correction is not, so a written model refuses it a second time."""
    from npurt.exec.compile import optimize_onnx
    graph = _graph()
    apply_techniques(graph, ["adaround"], _samples(3, 12), None, None, evaluate_node)
    once = _weights(graph)
    apply_techniques(graph, ["adaround"], _samples(3, 13), None, None, evaluate_node)
    for name, w in _weights(graph).items():
        np.testing.assert_array_equal(w, once[name])
    written, _ = optimize_onnx(_model(), "cle,bias", _samples(3, 12))
    again, report = optimize_onnx(written, "cle")
    assert report["cle"]["pairs"] == 8
    assert '"techniques": ["cle", "bias"]' in {p.key: p.value for p in again.metadata_props}["npurt.optimize"]
    x = _samples(1, 14)[0][0]
    np.testing.assert_allclose(_ort(again, x), _ort(written, x), rtol=1e-5, atol=1e-5 * np.abs(_ort(written, x)).max())
    with pytest.raises(NpuError) as err:
        optimize_onnx(again, "bias", _samples(3, 12))
    assert err.value.code is ErrorCode.INVALID_ARGUMENT and "already corrected" in err.value.message


def test_quantized_method_option(tmp_path, capsys):
    import onnx
    from npurt.cli.main import main
    src = tmp_path / "m.onnx"
    onnx.save(_model(), src)
    out = tmp_path / "m.npurt"
    assert main(["convert", str(src), "-o", str(out), "--quantize", "random", "--quantized-method", "layer"]) == 0
    assert npurt.load_compiled(out).meta["weight_method"] == "layer"
    _fails_in_process(capsys, "convert", src, "-o", tmp_path / "n.npurt", "--quantize", "random",
                      "--quantized-method", "group32", words=("--quantized-method",))
    _fails_in_process(capsys, "convert", src, "-o", tmp_path / "n.npurt", "--quantized-method", "layer",
                      words=("--quantize",))
    assert not (tmp_path / "n.npurt").exists()
