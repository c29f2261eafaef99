"""int8 quantisation knobs: the calibration algorithms (`quantized_algorithm`), on a histogram and on the zoo's
outlier model, against onnxruntime."""
from __future__ import annotations

import numpy as np
import pytest

import npurt
from npurt.errors import ErrorCode, NpuError
from npurt.runtime.user_io import run_once
from npurt.model.zoo import outlier_convnet
from npurt.tensor import DType
from npurt.tensor.ranges import HIST_BINS, choose_range, histogram_range, histogram_values
from helpers.cli import fails, ok_json
from helpers.oracle import ort_session


def cosine(a, b) -> float:
    a, b = np.ravel(a).astype(np.float64), np.ravel(b).astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def samples(n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(1, 3, 16, 16)).astype(np.float32) for _ in range(n)]


@pytest.fixture(scope="module")
def outlier():
    """(model, calibration set, held-out inputs, onnxruntime outputs of those)."""
    model = outlier_convnet()
    sess = ort_session(model)
    test = samples(4, 2)
    return model, samples(8, 1), test, [sess.run(None, {"input": x})[0] for x in test]


def output_cosine(compiled, test, refs) -> float:
    return float(np.mean([cosine(run_once(compiled, [x])[0], r) for x, r in zip(test, refs)]))


def _qdq_mse(values: np.ndarray, a: float, b: float) -> float:
    scale, zp = npurt.tensor.choose_affine_params(a, b, "int8")
    q = npurt.tensor.quantize(values.astype(np.float32), scale, zp)
    return float(np.mean((npurt.tensor.dequantize(q, scale, zp) - values) ** 2))


def _range(algorithm: str, values: np.ndarray) -> tuple[float, float]:
    lo, hi = histogram_range(values.min(), values.max())
    hist, _ = np.histogram(histogram_values(values), HIST_BINS, (lo, hi))      # as calibration counts them
    return choose_range(algorithm, hist, lo, hi)


def test_normal_keeps_min_max_and_kl_clips_rare_outliers():
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.normal(size=100_000), [500.0, -400.0, 450.0]])
    assert _range("normal", values) == (-400.0, 500.0)
    a, b = _range("kl_divergence", values)
    assert -20 < a < -4 and 4 < b < 20, (a, b)                  # the bulk is within +-4.5
    relu = np.maximum(values, 0)
    a, b = _range("kl_divergence", relu)
    assert a == 0.0 and 4 < b < 20



def test_kl_keeps_the_range_of_a_relu_output():
    """Half of a ReLU's values are exact zeros. They are exact in every range, so they are not counted; counted,
    they filled the first bin and KL clipped 1.4 % of this tensor (and 12-20 % of mobilenet_v1's depthwise
    activations) to 0.47 of its maximum."""
    relu = np.maximum(np.random.default_rng(0).normal(size=200_000), 0)
    assert _range("kl_divergence", relu) == (0.0, relu.max())
    lo, hi = histogram_range(0, relu.max())
    with_zeros, _ = np.histogram(relu, HIST_BINS, (lo, hi))
    assert choose_range("kl_divergence", with_zeros, lo, hi)[1] < 0.5 * relu.max()   # what counting them did


def test_kl_does_not_clip_a_tensor_whose_values_sit_far_from_zero():
    """A softmax over 1000 classes: every value near 1e-3. Shrinking towards zero clips them all; Q keeps only the
    window's share of the mass, so that costs divergence (normalised on its own, it looked like a perfect match)."""
    values = np.random.default_rng(3).normal(1e-3, 3e-6, 4000)
    a, b = _range("kl_divergence", values)
    assert a == 0.0 and b >= np.quantile(values, 0.999), (b, values.max())


def test_kl_on_mobilenet_v1_with_its_random_calibration_set():
    """The zoo's mobilenet_v1, 4 random calibration samples: every tensor's entire cosine stays near min/max's
    (it was 0.53 on output48 when ReLU zeros and the window-only normalisation made KL clip 12-20 %)."""
    from npurt.api.accuracy import accuracy_analysis
    from npurt.model.zoo import mobilenet_v1
    rng = np.random.default_rng(1000)
    calib = [rng.random((1, 3, 224, 224), dtype=np.float32) for _ in range(4)]
    report = accuracy_analysis(mobilenet_v1(), calib, quantized_algorithm="kl_divergence")
    worst = min(r.entire_cosine for r in report.tensors)
    assert worst > 0.99, [(r.name, r.entire_cosine) for r in report.tensors]


def test_mmse_minimises_the_squared_error_of_a_heavy_tail():
    values = np.random.default_rng(1).laplace(size=200_000)
    lo, hi = float(values.min()), float(values.max())
    a, b = _range("mmse", values)
    assert lo < a < 0 < b < hi and b - a < 0.9 * (hi - lo), (a, b, lo, hi)
    assert _qdq_mse(values, a, b) < 0.9 * _qdq_mse(values, lo, hi)
    assert _qdq_mse(values, a, b) <= 1.01 * min(_qdq_mse(values, lo * t, hi * t) for t in np.linspace(0.2, 1, 41))


def test_kl_and_mmse_against_min_max_on_the_outlier_model(outlier):
    model, calib, test, refs = outlier
    got = {alg: output_cosine(npurt.compile(model, quantize=calib, quantized_algorithm=alg, progress=False), test,
                              refs)
           for alg in ("normal", "kl_divergence", "mmse")}
    assert got["normal"] < 0.97                              # the outlier channel costs min/max dearly
    assert got["kl_divergence"] > got["normal"] + 0.03       # KL clips it
    assert got["mmse"] >= got["normal"] - 1e-4               # MMSE keeps the outliers' squared error small
    print("output cosine by quantized_algorithm:", got)


def test_algorithm_is_recorded_and_checked(outlier):
    model, calib, _, _ = outlier
    cm = npurt.compile(model, quantize=calib, quantized_algorithm="mmse", progress=False)
    assert cm.meta["quantized_algorithm"] == "mmse"
    with pytest.raises(NpuError) as e:
        npurt.compile(model, quantize=calib, quantized_algorithm="entropy", progress=False)
    assert e.value.code is ErrorCode.INVALID_ARGUMENT and "kl_divergence" in str(e.value)


def test_cli_quantized_algorithm(tmp_path, outlier):
    _, calib, _, _ = outlier
    lines = []
    for i, x in enumerate(calib):
        np.save(tmp_path / f"s{i}.npy", x)
        lines.append(f"s{i}.npy")
    (tmp_path / "dataset.txt").write_text("\n".join(lines) + "\n")
    out = tmp_path / "m.npurt"
    d = ok_json("convert", "outlier_convnet", "--quantize", tmp_path / "dataset.txt", "--quantized-algorithm",
                "kl_divergence", "-o", out)
    assert d["precision"] == "int8" and npurt.load_compiled(out).meta["quantized_algorithm"] == "kl_divergence"
    bad = tmp_path / "bad.npurt"
    fails("convert", "outlier_convnet", "--quantized-algorithm", "mmse", "-o", bad, words=("--quantize",))
    assert not bad.exists()


# --- mixed precision -------------------------------------------------------------------------------------------

def test_analysis_ranks_the_outlier_reader_worst_and_fp16_fixes_it(outlier):
    """conv2 reads conv1's output, whose one outlier channel leaves the other seven a few int8 codes: the analysis
    ranks conv2 worst (single error), and keeping it in fp16 (its input then stays fp16) restores the output."""
    from npurt.api.accuracy import analyse
    model, calib, test, refs = outlier
    int8 = npurt.compile(model, quantize=calib, progress=False)
    report = analyse(int8, model, [[x] for x in calib])
    assert report.worst(1)[0].name == "conv2"
    mixed = npurt.compile(model, quantize=calib, float_layers=["conv2"], progress=False)
    before, after = output_cosine(int8, test, refs), output_cosine(mixed, test, refs)
    assert before < 0.97 and after > 0.999, (before, after)
    print(f"output cosine: int8 {before:.5f}, conv2 in fp16 {after:.5f}")


def test_mixed_types_in_storage_schedule_plan_and_table(outlier):
    from npurt.model.report import memory_rows
    model, calib, _, _ = outlier
    cm = npurt.compile(model, quantize=calib, float_layers=["conv2"], progress=False)
    st = cm.storage
    assert (st["conv1"].dtype, st["conv2"].dtype, st["conv2#int8"].dtype, st["output"].dtype) == \
        (DType.FLOAT16, DType.FLOAT16, DType.INT8, DType.INT8)
    assert not st["conv2"].quantized and st["conv2#int8"].quantized
    assert (st["conv2#int8"].scale, st["conv2#int8"].zp) != (1.0, 0)
    ops = [(n.display_type, n.inputs[0], n.outputs[0]) for n in cm.graph.nodes]
    assert ("Convert", "conv2", "conv2#int8") in ops and ops[-1][1] == "conv2#int8"
    assert {"conv1", "conv2", "conv2#int8"} <= set(cm.plan.offsets)
    rows = {r.tensor: r for r in memory_rows(cm)[0]}
    assert (rows["conv2"].user, rows["conv2"].dtype, rows["conv2#int8"].dtype) == ("Convert", "FLOAT16", "INT8")
    conv2 = next(n for n in cm.graph.nodes if n.outputs[0] == "conv2")
    assert all(cm.weights[w].dtype is DType.FLOAT16 for w in conv2.inputs[1:])       # fp16 weights
    assert cm.meta["float_layers"] == ["conv2"]
    again = npurt.load_compiled(cm.to_bytes())                                       # survives save/load
    assert again.storage["conv2"].dtype is DType.FLOAT16 and again.graph.nodes[2].op_type == "Convert"
    x = calib[0]
    assert np.array_equal(run_once(again, [x])[0], run_once(cm, [x])[0])


def test_mixed_types_in_rknn_query_attrs(outlier):
    import ctypes
    from npurt.rknn import (RKNN_QUERY_INPUT_ATTR, RKNN_QUERY_NATIVE_INPUT_ATTR, RKNN_QUERY_NATIVE_OUTPUT_ATTR,
                            RKNN_QUERY_OUTPUT_ATTR, RKNN_SUCC, RKNN_TENSOR_FLOAT16, RKNN_TENSOR_INT8, rknn_context,
                            rknn_destroy, rknn_init, rknn_query, rknn_tensor_attr)
    model, calib, _, _ = outlier
    data = npurt.compile(model, quantize=calib, float_layers=["output"], progress=False).to_bytes()   # last conv
    ctx = rknn_context()
    assert rknn_init(ctx, data, len(data), 0, None) == RKNN_SUCC
    types = {}
    for cmd in (RKNN_QUERY_INPUT_ATTR, RKNN_QUERY_NATIVE_INPUT_ATTR, RKNN_QUERY_OUTPUT_ATTR,
                RKNN_QUERY_NATIVE_OUTPUT_ATTR):
        a = rknn_tensor_attr(index=0)
        assert rknn_query(ctx, cmd, a, ctypes.sizeof(a)) == RKNN_SUCC
        types[cmd] = a.type
    assert rknn_destroy(ctx) == RKNN_SUCC
    assert types[RKNN_QUERY_OUTPUT_ATTR] == types[RKNN_QUERY_NATIVE_OUTPUT_ATTR] == RKNN_TENSOR_FLOAT16
    assert types[RKNN_QUERY_INPUT_ATTR] == types[RKNN_QUERY_NATIVE_INPUT_ATTR] == RKNN_TENSOR_INT8


def test_float_layers_errors(outlier, tmp_path):
    model, calib, _, _ = outlier
    with pytest.raises(NpuError) as e:
        npurt.compile(model, quantize=calib, float_layers=["nope"], progress=False)
    assert e.value.code is ErrorCode.INVALID_ARGUMENT and "'nope'" in str(e.value) and "conv1" in str(e.value)
    with pytest.raises(NpuError) as e:
        npurt.compile(model, float_layers=["conv1"], progress=False)
    assert e.value.code is ErrorCode.INVALID_ARGUMENT and "quantize" in str(e.value)
    out = tmp_path / "m.npurt"
    fails("convert", "outlier_convnet", "--quantize", "random", "--float-layers", "nope", "-o", out,
          words=("nope",))
    fails("report", "outlier_convnet", "--float-layers", "conv1", words=("--quantize",))
    assert not out.exists()


def test_cli_float_layers_on_convert_report_run_and_accuracy(tmp_path, outlier):
    _, calib, _, _ = outlier
    for i, x in enumerate(calib[:3]):
        np.save(tmp_path / f"s{i}.npy", x)
    (tmp_path / "dataset.txt").write_text("s0.npy\ns1.npy\ns2.npy\n")
    q = ("--quantize", tmp_path / "dataset.txt", "--float-layers", "conv2")
    out = tmp_path / "m.npurt"
    ok_json("convert", "outlier_convnet", *q, "-o", out)
    assert npurt.load_compiled(out).storage["conv2"].dtype is DType.FLOAT16
    rep = ok_json("report", "outlier_convnet", *q)
    assert {t["name"]: t["dtype"] for t in rep["tensors"]}["conv2"] == "FLOAT16"
    assert any(t["user"] == "Convert" for t in rep["tensors"])
    run = ok_json("run", "outlier_convnet", *q, "--input", tmp_path / "s0.npy")
    assert run["precision"] == "int8"
    acc = ok_json("accuracy", "outlier_convnet", *q)
    assert acc["float_layers"] == ["conv2"]
    assert [t for t in acc["tensors"] if t["name"] == "output"][0]["entire_cosine"] > 0.999


# --- int8 dynamic shapes ---------------------------------------------------------------------------------------

def test_int8_dynamic_shapes_share_one_calibration_session_and_rknn():
    import ctypes
    from npurt.rknn import (RKNN_QUERY_INPUT_DYNAMIC_RANGE, RKNN_QUERY_INPUT_ATTR, RKNN_SUCC, RKNN_TENSOR_INT8,
                            rknn_context, rknn_destroy, rknn_init, rknn_input_range, rknn_query,
                            rknn_set_input_shapes, rknn_tensor_attr)
    from npurt.runtime.loader import compile_dynamic
    from helpers.models import DYNAMIC_SHAPES, dynamic_convnet, image, reference
    from helpers.rknn import general_run
    calib = [image(tuple(s[0]), seed=10 * k + i) for k, s in enumerate(DYNAMIC_SHAPES) for i in range(3)]
    with npurt.Session(dynamic_convnet(), quantize=calib) as s:
        members = s.context.family.all()
        assert len(members) == 3 and all(m.precision == "int8" for m in members)
        for name in ("r1", "y"):                           # one calibration: the same parameters in every member
            assert len({(m.storage[name].scale, m.storage[name].zp) for m in members}) == 1
        for k, shape in enumerate(DYNAMIC_SHAPES):
            x = image(tuple(shape[0]), seed=100 + k)
            assert cosine(s.run(x)[0], reference(dynamic_convnet(), x)[0]) >= 0.999      # the int8 parity bound
    data = compile_dynamic(dynamic_convnet(), "rk3588", DYNAMIC_SHAPES, quantize=calib,
                           quantized_algorithm="mmse").to_bytes()
    ctx = rknn_context()
    assert rknn_init(ctx, data, len(data), 0, None) == RKNN_SUCC
    r = rknn_input_range(index=0)
    assert rknn_query(ctx, RKNN_QUERY_INPUT_DYNAMIC_RANGE, r, ctypes.sizeof(r)) == RKNN_SUCC
    ia = rknn_tensor_attr(index=0)
    assert rknn_query(ctx, RKNN_QUERY_INPUT_ATTR, ia, ctypes.sizeof(ia)) == RKNN_SUCC
    assert ia.type == RKNN_TENSOR_INT8
    for k in range(r.shape_number):
        ia.n_dims = r.n_dims
        for j in range(r.n_dims):
            ia.dims[j] = r.dyn_range[k][j]
        ia.fmt = r.fmt
        assert rknn_set_input_shapes(ctx, 1, [ia]) == RKNN_SUCC
        x = image(tuple(DYNAMIC_SHAPES[k][0]), seed=200 + k)
        y, = general_run(ctx, x)
        ref = reference(dynamic_convnet(), x)[0]
        assert cosine(y.reshape(ref.shape), ref) >= 0.999
    assert rknn_destroy(ctx) == RKNN_SUCC


def test_int8_dynamic_shapes_bad_input():
    from npurt.runtime.loader import compile_dynamic
    from helpers.models import DYNAMIC_SHAPES, dynamic_convnet, image
    with pytest.raises(NpuError) as e:               # a sample of a shape that is not declared
        compile_dynamic(dynamic_convnet(), "rk3588", DYNAMIC_SHAPES, quantize=[image((1, 3, 9, 9))])
    assert e.value.code is ErrorCode.INVALID_ARGUMENT and "dynamic shapes" in str(e.value)
    calib = [image((1, 3, 8, 8), seed=i) for i in range(2)]
    with npurt.Session(dynamic_convnet(), quantize=calib) as s:       # calibrated on one shape set only: still runs
        with pytest.raises(NpuError) as e:
            s.run(image((1, 3, 9, 9)))                               # outside the dynamic ranges
        assert e.value.code is ErrorCode.INVALID_ARGUMENT
