"""`npurt accuracy` / `npurt.api.accuracy`: per-tensor entire and single errors against onnxruntime."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import npurt
from npurt.api.accuracy import (ADVICE_COSINE, AccuracyReport, TensorError, accuracy_analysis, analyse, cosine,
                                 euclidean)
from npurt.errors import ErrorCode, NpuError
from npurt.runtime.user_io import run_once
from npurt.model.zoo import outlier_convnet, small_convnet
from helpers.cli import fails, npurt as run_cli, ok_json
from helpers.oracle import ort_session


def normal_samples(n: int, shape, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(size=shape).astype(np.float32) for _ in range(n)]


def write_dataset(folder, arrays) -> str:
    for i, x in enumerate(arrays):
        np.save(folder / f"s{i}.npy", x)
    (folder / "dataset.txt").write_text("".join(f"s{i}.npy\n" for i in range(len(arrays))))
    return str(folder / "dataset.txt")


def test_metrics():
    x = np.arange(1, 7, dtype=np.float32)
    assert cosine(x, x) == pytest.approx(1.0) and euclidean(x, x) == 0.0
    assert cosine(x, -x) == pytest.approx(-1.0) and euclidean(2 * x, x) == pytest.approx(1.0)
    assert cosine(np.zeros(3), np.zeros(3)) == 1.0 and cosine(np.zeros(3), np.ones(3)) == 0.0


@pytest.fixture(scope="module")
def chain():
    model = small_convnet()
    calib = [np.random.default_rng(i).random((1, 3, 32, 32), dtype=np.float32) for i in range(4)]
    compiled = npurt.compile(model, quantize=calib, progress=False)
    return model, calib, compiled, analyse(compiled, model, [[x] for x in calib])


def test_rows_are_the_compiled_tensors_in_schedule_order(chain):
    _, calib, compiled, report = chain
    g = compiled.graph
    assert [r.name for r in report.tensors] == list(g.inputs) + [o for n in g.nodes for o in n.outputs]
    assert report.samples == len(calib) and report.precision == "int8"
    assert all(np.isfinite([r.entire_cosine, r.single_cosine, r.entire_euclidean]).all() for r in report.tensors)


def test_entire_error_of_each_output_is_its_cosine_computed_separately(chain):
    model, calib, compiled, report = chain
    sess = ort_session(model)
    out = compiled.graph.outputs[0]
    want = np.mean([cosine(run_once(compiled, [x])[0], sess.run(None, {"input": x})[0]) for x in calib])
    want_euc = np.mean([euclidean(run_once(compiled, [x])[0], sess.run(None, {"input": x})[0]) for x in calib])
    row = next(r for r in report.tensors if r.name == out)
    assert row.entire_cosine == pytest.approx(want, abs=1e-6)
    assert row.entire_euclidean == pytest.approx(want_euc, rel=1e-4, abs=1e-6)


def test_single_error_is_at_most_the_entire_error_on_a_chain(chain):
    _, _, _, report = chain
    for r in report.tensors:
        assert r.single_cosine >= r.entire_cosine - 2e-3, r
    assert report.tensors[-2].single_euclidean < report.tensors[-2].entire_euclidean   # errors accumulate


def test_python_function_defaults_to_the_calibration_samples():
    calib = normal_samples(3, (1, 3, 16, 16), 5)
    report = accuracy_analysis(outlier_convnet(), calib, quantized_algorithm="kl_divergence")
    assert report.samples == 3 and report.quantized_algorithm == "kl_divergence"
    one = accuracy_analysis(outlier_convnet(), calib, inputs=[calib[0]])
    assert one.samples == 1


def test_missing_onnxruntime_is_one_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(NpuError) as e:
        accuracy_analysis(outlier_convnet(), normal_samples(1, (1, 3, 16, 16), 0))
    assert e.value.code is ErrorCode.NOT_SUPPORTED and "npurt[accuracy]" in str(e.value)


def test_cli_table_json_plot(tmp_path):
    dataset = write_dataset(tmp_path, normal_samples(3, (1, 3, 16, 16), 1))
    d = ok_json("accuracy", "outlier_convnet", "--quantize", dataset, "--plot", tmp_path / "acc.png")
    assert d["samples"] == 3 and [t["name"] for t in d["tensors"]] == ["input", "conv1", "conv2", "output"]
    assert (tmp_path / "acc.png").stat().st_size > 0 and d["worst"] == ["conv2"] and d["advice_cosine"] == 0.99
    assert [t["produced_by"] for t in d["tensors"]] == ["input", "ConvRelu", "ConvRelu", "Conv"]
    p = run_cli("accuracy", "outlier_convnet", "--quantize", dataset, "--input", tmp_path / "s0.npy")
    assert p.returncode == 0, p.stderr
    assert "entire cos" in p.stdout and "produced by" in p.stdout and "1 input(s)" in p.stdout
    assert "single cosine below 0.99: conv2 (keep them in fp16" in p.stdout


def _row(index, name, produced_by, dtype, single):
    return TensorError(index, name, produced_by, dtype, single, 0.01, single, 1.0 - single)


def test_advice_names_only_quantised_layers_below_the_threshold():
    """Never the input, never an fp16 layer, never a layer whose single cosine is >= ADVICE_COSINE."""
    rows = [_row(1, "input", "input", "INT8", 0.5), _row(2, "a", "ConvRelu", "FLOAT16", 0.6),
            _row(3, "b", "ConvRelu", "INT8", 0.9), _row(4, "c", "Conv", "INT8", ADVICE_COSINE),
            _row(5, "d", "Conv", "UINT8", 0.95), _row(6, "e", "Gemm", "FLOAT", 0.1)]
    report = AccuracyReport("rk3588", "int8", "normal", ["a"], 1, rows)
    assert [r.name for r in report.worst()] == ["b", "d"]
    assert [r.name for r in report.worst(1)] == ["b"]
    assert report.to_json()["worst"] == ["b", "d"]
    fine = AccuracyReport("rk3588", "int8", "normal", [], 1, [_row(1, "input", "input", "INT8", 0.5),
                                                              _row(2, "x", "Conv", "INT8", 0.9998)])
    assert fine.worst() == [] and fine.to_json()["worst"] == []


def test_cli_says_when_no_layer_needs_advice(tmp_path):
    """small_convnet on its own random calibration set: every single cosine is near 1, so no advice."""
    p = run_cli("accuracy", "small_convnet", "--quantize", "random")
    assert p.returncode == 0, p.stderr
    assert "no layer needs fp16" in p.stdout and "keep them in fp16" not in p.stdout


def test_cli_bad_input_writes_nothing(tmp_path):
    dataset = write_dataset(tmp_path, normal_samples(2, (1, 3, 16, 16), 1))
    np.save(tmp_path / "wrong.npy", np.zeros((1, 3, 8, 8), np.float32))
    plot = tmp_path / "p.png"
    fails("accuracy", "outlier_convnet", "--quantize", dataset, "--input", tmp_path / "wrong.npy", "--plot", plot,
          words=("shape",))
    fails("accuracy", "outlier_convnet", "--plot", plot, words=("--quantize",))
    (tmp_path / "d2").mkdir()
    bad = write_dataset(tmp_path / "d2", [np.zeros((1, 3, 8, 8), np.float32)])
    fails("accuracy", "outlier_convnet", "--quantize", bad, "--plot", plot, words=("shape",))
    fails("accuracy", "outlier_convnet", "--quantize", dataset, "--plot", tmp_path / "nowhere" / "p.png",
          words=("--plot",))
    assert not plot.exists()
    compiled = tmp_path / "m.npurt"
    npurt.compile(outlier_convnet(), progress=False).save(compiled)
    fails("accuracy", compiled, "--quantize", dataset, words=("ONNX",))
