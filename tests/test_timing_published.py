"""The published rows the timing model is checked against (`npurt.timing.rows`, published_rows.csv): the table
parses, every row names its source, the split is fixed, the error report is computed from deterministic
predictions, the RK3566/RK3568 column predicts one time, and `npurt perf` prints the measured error band."""
from __future__ import annotations

import functools
import json
import re

import pytest

import npurt
from helpers.cli import npurt as run_cli, ok_json
from npurt.model import sources, zoo, zoo_published
from npurt.soc import npu_timing as T
from npurt.timing import bands, predict, rows


def test_table_parses_and_every_row_names_its_source():
    table = rows.published()
    assert len(table) > 300
    for p in table:
        assert re.fullmatch(r"[0-9a-f]{40}", p.commit) and p.source == "README.md", p
        assert p.sdk and all(re.fullmatch(r"\d+\.\d+\.\d+", v) for v in p.sdk), p
        assert p.value > 0 and p.unit in ("FPS", "RTF") and p.dtype in ("int8", "fp16"), p
        assert p.socs and p.column and p.demo and p.model, p
        assert p.source_ref.startswith("github.com/airockchip/rknn_model_zoo/blob/" + p.commit)
    current = rows.current()
    assert rows.CURRENT_SDK == "2.3.2" and all(rows.CURRENT_SDK in p.sdk for p in current)
    keys = [(p.demo, p.model, p.input, p.dtype, p.column) for p in current]
    assert len(keys) == len(set(keys))                  # one value per cell of the current table
    by_key = {(p.model, p.soc): p.value for p in current if p.cores == 1 and not p.sparse and p.unit == "FPS"}
    for row in rows.CALIBRATION:
        assert by_key[(row.name, row.soc)] == row.fps   # the calibration rows are rows of the published table


def test_split_is_fixed_and_every_skipped_row_says_why():
    cal, val, skip = rows.split()
    assert rows.split() == (cal, val, skip)
    assert {p.row() for p in cal} == set(rows.CALIBRATION)
    assert len(cal) <= (len(cal) + len(val)) / 4        # fit on at most a quarter of the predicted rows
    assert not {p.row() for p in cal} & {p.row() for p in val}
    assert set(cal) | set(val) | set(skip) == set(rows.current())
    assert rows.VALIDATION == tuple(p.row() for p in val)
    for p in skip:
        assert p.reason, p
    for p in cal + val:
        assert p.reason is None and p.unit == "FPS" and p.model in rows.BUILDERS
        builder = rows.BUILDERS[p.model]
        assert callable(getattr(zoo_published, builder, None) or getattr(zoo, builder))
    reasons = {p.reason for p in skip}
    assert any("RKNPU1" in r for r in reasons) and any("not regenerated" in r for r in reasons)


@functools.lru_cache(maxsize=None)
def _compiled(model: str, soc: str, dtype: str):
    fn = getattr(zoo_published, model, None) or getattr(zoo, model)
    onnx_model = fn()
    quantize = [sources.random_inputs(onnx_model, seed=0)] if dtype == "int8" else None
    return npurt.compile(onnx_model, soc=soc, quantize=quantize, progress=False)


def test_error_report_is_computed_from_deterministic_predictions():
    cal, val, _ = rows.split()
    mobilenet = [p for p in cal + val if p.model == "mobilenetv2-12"]
    assert {p.soc for p in mobilenet} >= {"rk3588", "rk3568"}
    result = [{**rows.check(p, _compiled), "kind": "calibration" if p in cal else "validation"} for p in mobilenet]
    again = [{**rows.check(p, _compiled), "kind": "calibration" if p in cal else "validation"} for p in mobilenet]
    assert result == again
    for r in result:
        assert r["ratio"] == pytest.approx(r["predicted_fps"] / r["published_fps"])
        assert r["error_pct"] == pytest.approx(100 * (r["ratio"] - 1))
        assert r["source"].startswith("github.com/airockchip/rknn_model_zoo/blob/")
    shared = [r for r in result if r["soc"] == "rk3566/rk3568"]
    assert shared and shared[0]["rk3566_fps"] == shared[0]["predicted_fps"]     # one column, one time (all NPU)
    g = rows.groups(result)
    assert set(g) == {"all", "soc", "family", "dtype"}
    s = g["all"]["all"]
    assert s["rows"] == len(result) - 1 and 0 <= s["within_20_pct"] <= s["within_35_pct"] <= 1
    assert s["min_ratio"] <= s["median_ratio"] <= s["max_ratio"]
    assert set(g["family"]) == {"mobilenet"} and set(g["dtype"]) == {"int8"}
    b = rows.bands(result)
    assert b["sdk"] == rows.CURRENT_SDK and b["socs"]["rk3566"] == b["socs"]["rk3568"]
    assert b["families_of"]["mobilenet_v2_like"] == "mobilenet"
    assert json.loads(json.dumps(b)) == b


def test_rk3566_and_rk3568_have_one_npu():
    """The same NPU figures, so the same NPU time; only a CPU fallback op differs, by the two CPUs' clocks."""
    a, b = T.npu_figures("rk3566"), T.npu_figures("rk3568")
    for field in ("int8_tops", "cores", "clock_mhz", "dram", "dram_bus_bits", "dram_mts"):
        assert getattr(a, field) == getattr(b, field), field
    assert "rk356x" in a.sources and "rk356x" in T.SOURCES
    model = zoo.small_convnet()
    p66 = predict(_compiled_model(model, "rk3566"), "rk3566")
    p68 = predict(_compiled_model(model, "rk3568"), "rk3568")
    npu66 = [layer for layer in p66.layers if layer.target == "NPU"]
    assert npu66 and npu66 == [layer for layer in p68.layers if layer.target == "NPU"]     # one NPU, one time
    for x, y in zip(p66.layers, p68.layers):        # CPU fallbacks run on each SoC's own CPU (1.8 vs 2.0 GHz)
        assert x.target == y.target and (x.target == "NPU" or x.us >= y.us)


def _compiled_model(model, soc):
    return npurt.compile(model, soc=soc, quantize=[sources.random_inputs(model, seed=0)], progress=False)


def test_recorded_error_bands_cover_the_checked_socs():
    doc = json.loads(bands.BANDS.read_text())
    assert doc["sdk"] == rows.CURRENT_SDK
    checked = {s for p in rows.split()[1] for s in p.socs}
    assert set(doc["socs"]) == checked
    for soc, entry in doc["socs"].items():
        assert entry["rows"] == sum(e["rows"] for e in entry["families"].values()) > 0
        assert entry["median_error_pct"] >= 0
    band = bands.error_band("rk3588", "yolov5s")
    assert band["rows"] == doc["socs"]["rk3588"]["rows"] and band["family"] == "yolov5"
    assert "validated on" in bands.describe(band, "rk3588") and "yolov5 family" in bands.describe(band, "rk3588")
    assert bands.error_band("rk2118") is None and "not validated" in bands.describe(None, "rk2118")


def test_perf_prints_the_error_band():
    doc = ok_json("perf", "small_convnet", "--soc", "rk3588", "--quantize", "random")
    assert doc["validation"]["soc"] == "rk3588" and doc["validation"]["rows"] > 0
    assert "family" not in doc["validation"]                     # not a zoo model of the table
    table = run_cli("perf", "small_convnet", "--soc", "rk3588")
    assert table.returncode == 0 and "validated on" in table.stdout and "published rows of this SoC" in table.stdout
    other = ok_json("perf", "small_convnet", "--soc", "rv1103", "--quantize", "random")
    assert other["validation"] is None


def test_segmentation_heads_have_the_published_structure():
    """YOLOv5n-seg / YOLOv8n-seg as rknn_model_zoo exports them: 7 and 13 outputs, the 32 prototypes at 160x160,
    and the published parameter counts (2.0 M, 3.4 M)."""
    import numpy as np
    for builder, outputs, params in (("yolov5n_seg", 7, 2.0e6), ("yolov8n_seg", 13, 3.4e6)):
        m = getattr(zoo_published, builder)()
        shapes = [[d.dim_value for d in o.type.tensor_type.shape.dim] for o in m.graph.output]
        assert len(shapes) == outputs and shapes[-1] == [1, 32, 160, 160], builder
        assert abs(sum(int(np.prod(i.dims)) for i in m.graph.initializer) - params) < 0.05e6, builder
    assert {rows.BUILDERS[f"yolov8{v}-seg"] for v in "nsm"} <= set(dir(zoo_published))
