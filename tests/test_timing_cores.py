"""Multi-core predictions against what the runtime does with `rknn_set_core_mask`: every mask the RKNN API accepts
runs the model on the cores the prediction uses (one core for AUTO and single-core bits, two for CORE_0_1, all for
CORE_0_1_2 / CORE_ALL), a mask naming a missing core is refused and changes nothing; only the ops the API reference
lists for the multi-core masks split, the others keep their one-core time. rknn_model_zoo publishes single-core
figures only, so no published row checks the multi-core times themselves (docs/npu-timing.md)."""
from __future__ import annotations

import ctypes

import pytest

import npurt
import npurt.rknn as r
from helpers.flows import frame, uint8_model
from npurt.timing import predict
from npurt.timing.model import MULTICORE_OPS


def _predicted_run_us(model: bytes, mask: int) -> tuple[int, int]:
    """(status of rknn_set_core_mask, PERF_RUN µs of one predicted run after it)."""
    ctx = r.rknn_context()
    assert r.rknn_init(ctx, model, len(model), 0, None) == 0
    try:
        status = r.rknn_set_core_mask(ctx, mask)
        img = frame()
        inp = r.rknn_input(index=0, buf=img.ctypes.data, size=img.nbytes, type=r.RKNN_TENSOR_UINT8,
                           fmt=r.RKNN_TENSOR_NHWC)
        assert r.rknn_inputs_set(ctx, 1, [inp]) == 0 and r.rknn_run(ctx, None) == 0
        run = r.rknn_perf_run()
        assert r.rknn_query(ctx, r.RKNN_QUERY_PERF_RUN, run, ctypes.sizeof(run)) == 0
        return status, int(run.run_duration)
    finally:
        r.rknn_destroy(ctx)


@pytest.mark.parametrize("soc, masks", [
    ("rk3588", ((r.RKNN_NPU_CORE_AUTO, 1), (r.RKNN_NPU_CORE_0, 1), (r.RKNN_NPU_CORE_1, 1), (r.RKNN_NPU_CORE_2, 1),
                (r.RKNN_NPU_CORE_0_1, 2), (r.RKNN_NPU_CORE_0_1_2, 3), (r.RKNN_NPU_CORE_ALL, 3))),
    ("rk3576", ((r.RKNN_NPU_CORE_AUTO, 1), (r.RKNN_NPU_CORE_1, 1), (r.RKNN_NPU_CORE_0_1, 2),
                (r.RKNN_NPU_CORE_ALL, 2))),
])
def test_every_core_mask_predicts_the_cores_it_runs_on(monkeypatch, soc, masks):
    monkeypatch.setenv("NPURT_PERF", "predicted")
    monkeypatch.setenv("NPURT_SOC", soc)
    model = uint8_model(soc=soc)
    compiled = npurt.load_compiled(model)
    for mask, cores in masks:
        status, us = _predicted_run_us(model, mask)
        assert status == r.RKNN_SUCC, (soc, mask)
        assert us == round(predict(compiled, soc, cores=cores).total_us), (soc, mask)


def test_a_mask_naming_a_missing_core_is_refused_and_changes_nothing(monkeypatch):
    monkeypatch.setenv("NPURT_PERF", "predicted")
    monkeypatch.setenv("NPURT_SOC", "rk3576")
    model = uint8_model(soc="rk3576")
    status, us = _predicted_run_us(model, r.RKNN_NPU_CORE_0_1_2)       # the RK3576 has two cores
    assert status == r.RKNN_ERR_PARAM_INVALID
    assert us == round(predict(npurt.load_compiled(model), "rk3576", cores=1).total_us)


def test_only_the_listed_ops_split_across_cores():
    compiled = npurt.load_compiled(uint8_model(soc="rk3588"))
    one = predict(compiled, "rk3588", cores=1)
    for cores in (2, 3):
        many = predict(compiled, "rk3588", cores=cores)
        assert many.total_us > one.total_us / cores       # never better than linear (this small model: slower)
        for a, b in zip(one.layers, many.layers):
            split = b.cores > 1
            op_type = next(n.op_type for n in compiled.graph.nodes if (n.name or n.outputs[0]) == a.name)
            assert split == (op_type in MULTICORE_OPS and a.target == "NPU"), (a.op, op_type)
            if split:
                assert b.cores == cores and b.compute_us == pytest.approx(a.compute_us / cores)
            else:
                assert b == a
