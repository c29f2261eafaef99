"""The timing model (`npurt.timing.predict`): its properties, the calibration rows, and where it shows — `npurt perf`,
PERF_DETAIL / PERF_RUN in predicted mode from Python and from C, the per-op log lines."""
from __future__ import annotations

import ctypes
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npurt
import npurt.rknn as r
from helpers.capi import compile_c, prefix, run_c
from helpers.cli import fails, npurt as run_cli, ok_json
from helpers.flows import frame, uint8_model
from npurt.errors import ErrorCode, NpuError
from npurt.model import sources, zoo, zoo_published
from npurt.soc import HTP_PROFILES, PROFILES
from npurt.soc import npu_timing as T
from npurt.timing import predict, rows


def _compile(model: onnx.ModelProto, soc: str, seed: int = 0):
    """int8 with one seeded random calibration sample (timing depends on structure, not on the ranges)."""
    return npurt.compile(model, soc=soc, quantize=[sources.random_inputs(model, seed=seed)], progress=False)


def _conv_model(cin: int, cout: int, size: int, group: int = 1, k: int = 3) -> onnx.ModelProto:
    rng = np.random.default_rng(cin * 1000 + cout)
    w = rng.normal(0, 0.1, (cout, cin // group, k, k)).astype(np.float32)
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[k // 2] * 4, group=group)
    g = helper.make_graph([node], "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, cin, size, size])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, cout, size, size])],
                          [numpy_helper.from_array(w, "w")])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _add_model(c: int, size: int) -> onnx.ModelProto:
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, c, size, size]) for n in ("a", "b", "y")]
    g = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"])], "add", vi[:2], vi[2:])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture(scope="module")
def mobilenet():
    return _compile(zoo.mobilenet_v2_like(), "rk3588")


# --- properties of the model ------------------------------------------------------------------------------------

def test_monotone_in_macs_and_bytes():
    times = [predict(_compile(_conv_model(32, cout, 56), "rk3588")) for cout in (32, 64, 128, 256)]
    macs = [p.macs for p in times]
    ddr = [sum(layer.ddr_bytes for layer in p.layers) for p in times]
    assert macs == sorted(macs) and len(set(macs)) == 4
    assert ddr == sorted(ddr) and len(set(ddr)) == 4
    assert [p.total_us for p in times] == sorted(p.total_us for p in times)
    assert times[-1].total_us > times[0].total_us
    adds = [predict(_compile(_add_model(32, size), "rk3588")) for size in (16, 32, 64, 128)]
    assert [p.total_us for p in adds] == sorted(p.total_us for p in adds) and adds[-1].total_us > adds[0].total_us


def test_sram_never_slower_than_ddr(mobilenet):
    ddr = predict(mobilenet, "rk3588")
    sram = predict(mobilenet, "rk3588", sram=True)
    assert sram.sram_bytes == PROFILES["rk3588"].sram_size
    assert sum(layer.sram_bytes for layer in sram.layers) > 0
    for a, b in zip(ddr.layers, sram.layers):
        assert b.us <= a.us + 1e-9, (a, b)
        assert a.ddr_bytes + a.sram_bytes == b.ddr_bytes + b.sram_bytes     # the same plan, the same bytes
    assert sram.total_us < ddr.total_us
    with pytest.raises(NpuError) as e:
        predict(mobilenet, "rk3562", sram=True)   # same layouts, no SRAM
    assert e.value.code == ErrorCode.NOT_SUPPORTED


def test_depthwise_uses_one_kernel_of_the_atom_and_elementwise_is_memory_bound():
    dw = predict(_compile(_conv_model(64, 64, 112, group=64), "rk3588")).layers[0]
    full = predict(_compile(_conv_model(64, 64, 112), "rk3588")).layers[0]     # 64 x 64 channels fill the atoms
    atom_k = T.npu_figures("rk3588").atom_k
    assert dw.compute_us / dw.macs == pytest.approx(atom_k * full.compute_us / full.macs, rel=1e-9)
    add = predict(_compile(_add_model(64, 112), "rk3588")).layers[0]
    assert add.op == "Add" and add.bound == "memory"
    dense = predict(_compile(_conv_model(256, 256, 28), "rk3588")).layers[0]
    assert dense.bound == "compute"


def test_two_cores_never_faster_than_twice_one(mobilenet):
    one = predict(mobilenet, "rk3588", cores=1)
    for n in (2, 3):
        many = predict(mobilenet, "rk3588", cores=n)
        assert many.total_us >= one.total_us / n
        for a, b in zip(one.layers, many.layers):
            assert b.us >= a.us / n - 1e-9
    dense = _compile(_conv_model(256, 256, 56), "rk3588")        # compute-bound: the split gains, less than 2x
    t1, t2 = (predict(dense, "rk3588", cores=n).total_us for n in (1, 2))
    assert t1 / 2 <= t2 < t1
    with pytest.raises(NpuError) as e:
        predict(mobilenet, "rk3568")             # C2 8, not 16: the plan's bytes would be another SoC's
    assert e.value.code == ErrorCode.PLATFORM_MISMATCH
    assert predict(mobilenet, "rk3576").soc == "rk3576"      # same native layouts: the same plan holds
    for soc, bad in (("rk3588", 4), ("rk3576", 3), ("rk3562", 2), ("rk3588", 0)):
        with pytest.raises(NpuError) as e:
            predict(mobilenet, soc, cores=bad)
        assert e.value.code == ErrorCode.INVALID_ARGUMENT


def test_cpu_fallback_op_costs_cpu_time():
    def model(n: int) -> onnx.ModelProto:
        vi_x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, n, n])
        vi_y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, n, n])
        nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Round", ["r"], ["y"])]
        return helper.make_model(helper.make_graph(nodes, "cpu", [vi_x], [vi_y]),
                                 opset_imports=[helper.make_opsetid("", 17)])
    small, big = (predict(_compile(model(n), "rk3588")) for n in (16, 64))
    for p in (small, big):
        cpu = [layer for layer in p.layers if layer.op == "Round"][0]
        assert cpu.target == "CPU" and cpu.bound == "cpu" and cpu.us >= T.CPU_SWITCH_US
    cpu_small = [layer for layer in small.layers if layer.target == "CPU"][0]
    cpu_big = [layer for layer in big.layers if layer.target == "CPU"][0]
    assert cpu_big.us > cpu_small.us
    assert [layer.target for layer in big.layers if layer.op == "Relu"] == ["NPU"]


def test_every_rknn_soc_has_its_constants():
    assert set(T.FIGURES) == set(PROFILES)
    for name, profile in PROFILES.items():
        fig = T.npu_figures(name)
        assert fig.cores == profile.npu_cores, name
        assert fig.macs_per_cycle > 0 and fig.ddr_gbps > 0 and fig.cpu_mhz > 0
        assert all(s in T.SOURCES for s in fig.sources), name
    assert T.npu_figures("rk3588").macs_per_cycle == pytest.approx(1000, rel=0.03)    # the 1024-MAC core
    for name in HTP_PROFILES:
        with pytest.raises(NpuError) as e:
            T.npu_figures(name)
        assert e.value.code == ErrorCode.NOT_SUPPORTED


def test_every_rknn_soc_predicts_a_compiled_model():
    model = zoo.small_convnet()
    for name, profile in PROFILES.items():
        int8 = "int8" in profile.c2                                  # rk2118 has fp16 only, rv110xb int8 only
        compiled = _compile(model, name) if int8 else npurt.compile(model, soc=name, progress=False)
        p = predict(compiled)
        assert p.soc == name and p.total_ms > 0 and len(p.layers) == 10
        assert p.precision == ("int8" if int8 else "fp16") and all(layer.us > 0 for layer in p.layers)
        if profile.sram_size:
            assert predict(compiled, sram=True).total_ms <= p.total_ms


def test_prediction_is_pure_and_names_its_sources(mobilenet):
    a, b = predict(mobilenet), predict(mobilenet)
    assert a == b and a.soc == "rk3588"
    doc = a.to_json()
    assert json.loads(json.dumps(doc)) == doc
    assert doc["fps"] == pytest.approx(1000 / doc["total_ms"])
    assert doc["total_ms"] == pytest.approx(sum(layer["ms"] for layer in doc["layers"]))
    assert "predicted" in doc["note"] and doc["figures"]["sources"]
    assert a.naive_ms < a.total_ms              # the naive estimate ignores memory, padding and per-op costs


# --- calibration ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def calibration():
    builders = {"mobilenet_v2_like": zoo.mobilenet_v2_like}
    cases = []
    for row in rows.CALIBRATION:
        fn = builders.get(row.model) or getattr(zoo_published, row.model)
        model = fn()
        cases.append((_compile(model, row.soc) if row.dtype == "int8" else
                      npurt.compile(model, soc=row.soc, progress=False), row))
    return cases


@pytest.mark.timeout(600)
def test_calibration_rows_within_ten_percent(calibration):
    for compiled, row in calibration:
        p = predict(compiled, row.soc)
        assert abs(rows.error(p.fps, row.fps)) <= 0.10, (row, p.fps)


@pytest.mark.timeout(600)
def test_fit_reproduces_the_recorded_constants(calibration):
    """`FIT` is what `rows.fit` finds on the calibration rows (recorded to 3 digits), and the fit's fast evaluation
    (`rows.parts` / `rows.total_us`) is `predict` itself."""
    base = T.Fit(1.0, 1.0, 0.0, ())
    for compiled, row in calibration:
        for cores in range(1, T.npu_figures(row.soc).cores + 1):
            layers = rows.parts(predict(compiled, row.soc, cores=cores, fit=base))
            assert rows.total_us(layers, T.FIT, row.soc) == pytest.approx(
                predict(compiled, row.soc, cores=cores).total_us, rel=1e-9)
    got = rows.fit(calibration)
    want = T.FIT
    assert got.conv_efficiency == pytest.approx(want.conv_efficiency, rel=0.02)
    assert got.ddr_efficiency == pytest.approx(want.ddr_efficiency, rel=0.02)
    assert got.op_overhead_cycles == pytest.approx(want.op_overhead_cycles, rel=0.02)
    assert got.efficiency_of("rk3568") == pytest.approx(want.efficiency_of("rk3568"), rel=0.02)
    assert got.cpu_macs_per_cycle == pytest.approx(want.cpu_macs_per_cycle, rel=0.02)


def test_published_architectures_have_the_published_size():
    m = zoo_published.yolov8n()
    outs = {o.name: [d.dim_value for d in o.type.tensor_type.shape.dim] for o in m.graph.output}
    assert outs["box0"] == [1, 64, 80, 80] and outs["score0"] == [1, 80, 80, 80]
    assert outs["score_sum2"] == [1, 1, 20, 20]
    params = sum(int(np.prod(i.dims)) for i in m.graph.initializer)
    assert 3.0e6 < params < 3.3e6                         # YOLOv8n: 3.2 M parameters
    y5 = zoo_published.yolov5s()
    assert 7.0e6 < sum(int(np.prod(i.dims)) for i in y5.graph.initializer) < 7.3e6   # YOLOv5s: 7.2 M
    r50 = zoo_published.resnet50_v2()
    assert 25.4e6 < sum(int(np.prod(i.dims)) for i in r50.graph.initializer) < 25.7e6  # ResNet50-v2: 25.5 M


# --- where it shows ---------------------------------------------------------------------------------------------

def test_perf_json_is_pure_json(tmp_path):
    doc = ok_json("perf", "small_convnet", "--soc", "rk3576", "--quantize", "random", "--cores", "2", "--sram")
    assert doc["soc"] == "rk3576" and doc["cores"] == 2 and doc["sram_bytes"] > 0
    assert doc["total_ms"] > 0 and doc["fps"] == pytest.approx(1000 / doc["total_ms"])
    assert {"name", "op", "ms", "target", "bound", "macs", "ddr_bytes", "sram_bytes"} <= set(doc["layers"][0])
    table = run_cli("perf", "small_convnet", "--soc", "rk3576")
    assert table.returncode == 0 and "predicted" in table.stdout and "FPS" in table.stdout


def test_perf_refuses_what_it_cannot_predict(tmp_path):
    fails("perf", "small_convnet", "--soc", "sm8550", words=("no NPU timing figures",))
    fails("perf", "small_convnet", "--soc", "rk3568", "--cores", "2", words=("1 NPU core",))
    fails("perf", "small_convnet", "--soc", "rk3568", "--sram", words=("no NPU SRAM",))


def test_perf_plot(tmp_path, monkeypatch, capsys):
    from npurt.cli.main import main
    out = tmp_path / "perf.png"
    assert main(["perf", "small_convnet", "--soc", "rk3588", "--plot", str(out)]) == 0
    assert out.stat().st_size > 1000 and out.read_bytes()[:4] == b"\x89PNG"
    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)      # the optional extra is missing
    capsys.readouterr()
    assert main(["perf", "small_convnet", "--soc", "rk3588", "--plot", str(tmp_path / "no.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "matplotlib" in err[0] and not (tmp_path / "no.png").exists()


def _python_perf(model: bytes, img: np.ndarray, flag: int) -> tuple[int, str]:
    ctx = r.rknn_context()
    assert r.rknn_init(ctx, model, len(model), flag, None) == 0
    try:
        inp = r.rknn_input(index=0, buf=img.ctypes.data, size=img.nbytes, type=r.RKNN_TENSOR_UINT8,
                           fmt=r.RKNN_TENSOR_NHWC)
        assert r.rknn_inputs_set(ctx, 1, [inp]) == 0
        assert r.rknn_run(ctx, None) == 0
        run, detail = r.rknn_perf_run(), r.rknn_perf_detail()
        assert r.rknn_query(ctx, r.RKNN_QUERY_PERF_RUN, run, ctypes.sizeof(run)) == 0
        assert r.rknn_query(ctx, r.RKNN_QUERY_PERF_DETAIL, detail, ctypes.sizeof(detail)) == 0
        return int(run.run_duration), detail.perf_data.decode()
    finally:
        r.rknn_destroy(ctx)


def test_perf_queries_predicted_from_python(monkeypatch, capfd):
    model, img = uint8_model(), frame()
    want = predict(npurt.load_compiled(model), "rk3588")
    monkeypatch.setenv("NPURT_PERF", "predicted")
    monkeypatch.setenv("RKNN_LOG_LEVEL", "5")
    run_us, text = _python_perf(model, img, r.RKNN_FLAG_COLLECT_PERF_MASK)
    assert run_us == round(want.total_us)
    assert "predicted NPU time" in text and "rk3588, 1 core(s)" in text
    for layer in want.layers:
        assert f"{layer.name}" in text and f"{round(layer.us):>10}  {layer.name}" in text
    assert f"Total Run Elapsed Per Frame Time(us): {round(want.total_us)}" in text
    assert "us (predicted)" in capfd.readouterr().err                      # the RKNN_LOG_LEVEL per-op lines
    monkeypatch.setenv("NPURT_PERF", "measured")
    _, measured = _python_perf(model, img, r.RKNN_FLAG_COLLECT_PERF_MASK)
    assert "predicted" not in measured and " NPU " not in measured
    monkeypatch.setenv("NPURT_PERF", "guessed")
    ctx = r.rknn_context()
    assert r.rknn_init(ctx, model, len(model), 0, None) == r.RKNN_ERR_PARAM_INVALID
    assert "NPURT_PERF" in capfd.readouterr().err


def test_perf_queries_predicted_from_c(tmp_path):
    model = uint8_model()
    (tmp_path / "m.npurt").write_bytes(model)
    frame().tofile(tmp_path / "img.bin")
    exe = compile_c("perf_predicted", prefix())
    proc = run_c(exe, tmp_path / "m.npurt", tmp_path / "img.bin", env={"NPURT_PERF": "predicted"})
    want = predict(npurt.load_compiled(model), "rk3588")
    assert f"run_duration={round(want.total_us)}" in proc.stdout
    assert "predicted NPU time" in proc.stdout and "OK perf_predicted" in proc.stdout
    for layer in want.layers:
        assert f"{round(layer.us):>10}  {layer.name}" in proc.stdout
    measured = run_c(exe, tmp_path / "m.npurt", tmp_path / "img.bin")
    assert "predicted NPU time" not in measured.stdout and "OK perf_predicted" in measured.stdout


def test_predicted_perf_follows_core_mask_and_sram(monkeypatch):
    model, img = uint8_model(), frame()
    compiled = npurt.load_compiled(model)
    monkeypatch.setenv("NPURT_PERF", "predicted")
    for flag, mask, cores in ((0, r.RKNN_NPU_CORE_0_1_2, 3), (0, r.RKNN_NPU_CORE_0_1, 2), (0, r.RKNN_NPU_CORE_AUTO, 1),
                              (r.RKNN_FLAG_ENABLE_SRAM, r.RKNN_NPU_CORE_AUTO, 1)):
        ctx = r.rknn_context()
        assert r.rknn_init(ctx, model, len(model), flag, None) == 0
        try:
            assert r.rknn_set_core_mask(ctx, mask) == 0
            inp = r.rknn_input(index=0, buf=img.ctypes.data, size=img.nbytes, type=r.RKNN_TENSOR_UINT8,
                               fmt=r.RKNN_TENSOR_NHWC)
            assert r.rknn_inputs_set(ctx, 1, [inp]) == 0 and r.rknn_run(ctx, None) == 0
            run = r.rknn_perf_run()
            assert r.rknn_query(ctx, r.RKNN_QUERY_PERF_RUN, run, ctypes.sizeof(run)) == 0
            mem = r.rknn_mem_size()
            assert r.rknn_query(ctx, r.RKNN_QUERY_MEM_SIZE, mem, ctypes.sizeof(mem)) == 0
            sram = int(mem.total_sram_size - mem.free_sram_size) if flag else 0
            assert (sram > 0) == bool(flag)
            want = predict(compiled, "rk3588", cores=cores, sram=sram)
            assert run.run_duration == round(want.total_us), (mask, flag)
        finally:
            r.rknn_destroy(ctx)
