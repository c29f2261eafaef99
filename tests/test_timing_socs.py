"""Per-SoC structure of the timing model (`npurt.soc.npu_timing.FIGURES`): the RK3562 / RK3576 NPU generation
(32 x 32 atoms, peak TOPS counting sparse weights, the RK3576 at 950 MHz), what it changes in a layer's time, and
the recorded validation run meeting the per-SoC bias goal."""
from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npurt
from npurt.model import sources
from npurt.soc import npu_timing as T
from npurt.timing import bands, predict


def _conv(cin: int, cout: int, size: int = 56) -> onnx.ModelProto:
    rng = np.random.default_rng(cin * 100 + cout)
    w = rng.normal(0, 0.1, (cout, cin, 3, 3)).astype(np.float32)
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1] * 4)], "conv",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, size, size])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, cout, size, size])],
                          [numpy_helper.from_array(w, "w")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    return npurt.compile(model, soc="rk3588", quantize=[sources.random_inputs(model, seed=0)], progress=False)


def test_rk3562_and_rk3576_are_one_npu_generation():
    a, b, old = T.npu_figures("rk3562"), T.npu_figures("rk3576"), T.npu_figures("rk3588")
    for fig in (a, b):
        assert (fig.atom_c, fig.atom_k, fig.sparse_factor) == (32, 32, 1.5)
        assert "rk3562_rk3576" in fig.sources
        # the brief's peak is reproduced: dense MACs x 2 x clock x cores x the sparse gain
        assert fig.macs_per_cycle * 2 * fig.clock_mhz * 1e6 * fig.cores * fig.sparse_factor == pytest.approx(
            fig.int8_tops * 1e12)
    assert b.clock_mhz == 950 and b.macs_per_cycle == pytest.approx(1052.6, abs=0.1)
    assert (old.atom_c, old.atom_k, old.sparse_factor) == (64, 32, 1.0)
    text = T.SOURCES["rk3562_rk3576"]
    for fact in ("rknpu_drv.c", "950 MHz", "sparse-weight column", "npurt's reading"):
        assert fact in text


def test_thin_layers_lose_less_to_padding_on_the_newer_generation():
    """A 16 -> 16 channel conv fills a quarter of the RK3576's 32 x 32 atom, an eighth of the RK3588's 64 x 32;
    a 64 -> 64 one fills both: compute per MAC follows the fill and the dense MAC rate exactly."""
    for cin, fill_3588, fill_3576 in ((16, 16 / 64 * 16 / 32, 16 / 32 * 16 / 32), (64, 1.0, 1.0)):
        compiled = _conv(cin, cin)
        for soc, fill in (("rk3588", fill_3588), ("rk3576", fill_3576)):
            fig = T.npu_figures(soc)
            prediction = predict(compiled, soc)
            assert prediction.figures["sparse_factor"] == fig.sparse_factor
            assert prediction.figures["macs_per_cycle_per_core"] == fig.macs_per_cycle
            layer = prediction.layers[0]
            rate = fig.macs_per_cycle * fig.clock_mhz * fill * T.FIT.conv_efficiency * T.FIT.efficiency_of(soc)
            assert layer.macs and layer.compute_us - layer.activation_us == pytest.approx(layer.macs / rate), soc


def test_recorded_validation_meets_the_per_soc_bias_goal():
    """error_bands.json is written by `bench/npu_timing.py --write-bands`: no SoC's median predicted / published
    beyond ±10 %, and the band `npurt perf` prints is that run's."""
    doc = json.loads(bands.BANDS.read_text())
    assert {"rk3562", "rk3566", "rk3568", "rk3576", "rk3588"} <= set(doc["socs"])
    for soc, entry in doc["socs"].items():
        assert abs(entry["median_ratio"] - 1) <= 0.10, (soc, entry["median_ratio"])
        assert entry["median_error_pct"] <= 15, soc
    assert doc["socs"]["rk3566"] == doc["socs"]["rk3568"]
