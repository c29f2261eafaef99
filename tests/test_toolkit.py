"""The toolkit face (`npurt.toolkit.RKNN`): one test per method against what rknn-toolkit2 2.3.2 documents
(signatures, defaults, 0 / -1 returns with `E <method>:` lines, inference returning a list of float32 arrays, the
files accuracy_analysis and hybrid quantisation write), on the small models of tests/helpers/models.py."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

from helpers.models import DYNAMIC_SHAPES, convnet, dynamic_convnet, image, reference, two_io
from npurt.api.accuracy import cosine
from npurt.toolkit import RKNN

MEAN, STD = [[10.0, 20.0, 30.0]], [[50.0, 60.0, 70.0]]


def _pixels(seed: int, shape=(1, 3, 8, 10)) -> np.ndarray:
    """Raw pixel values (0..255, float32, NCHW) as a dataset .npy holds them."""
    return np.random.default_rng(seed).integers(0, 256, shape).astype(np.float32)


def _normalised(x: np.ndarray, mean=MEAN[0], std=STD[0]) -> np.ndarray:
    return ((x - np.float32(mean).reshape(1, -1, 1, 1)) / np.float32(std).reshape(1, -1, 1, 1)).astype(np.float32)


def _files(tmp_path, model: bytes = None, n: int = 4, name: str = "conv.onnx") -> tuple[str, str]:
    """(model path, dataset.txt path listing `n` .npy samples) in tmp_path."""
    (tmp_path / name).write_bytes(model or convnet())
    lines = []
    for k in range(n):
        np.save(tmp_path / f"s{k}.npy", _pixels(100 + k))
        lines.append(str(tmp_path / f"s{k}.npy"))
    (tmp_path / "dataset.txt").write_text("\n".join(lines) + "\n")
    return str(tmp_path / name), str(tmp_path / "dataset.txt")


def _built(tmp_path, quantize: bool = True, **config) -> RKNN:
    model, dataset = _files(tmp_path)
    rknn = RKNN()
    assert rknn.config(**{"mean_values": MEAN, "std_values": STD, "target_platform": "rk3588", **config}) == 0
    assert rknn.load_onnx(model=model) == 0
    assert rknn.build(do_quantization=quantize, dataset=dataset if quantize else None) == 0
    return rknn


def _errors(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("E ")]


def test_signatures_and_defaults_are_the_toolkits():
    sig = {name: inspect.signature(getattr(RKNN, name)) for name in (
        "config", "load_onnx", "build", "export_rknn", "load_rknn", "init_runtime", "inference", "eval_perf",
        "eval_memory", "accuracy_analysis", "hybrid_quantization_step1", "hybrid_quantization_step2", "release",
        "list_devices", "get_sdk_version", "codegen")}

    def defaults(name):
        return {k: p.default for k, p in sig[name].parameters.items() if p.default is not inspect.Parameter.empty}
    assert defaults("config") == dict(
        mean_values=None, std_values=None, quantized_dtype="w8a8", quantized_algorithm="normal",
        quantized_method="channel", quantized_hybrid_level=0, target_platform=None, quant_img_RGB2BGR=False,
        float_dtype="float16", optimization_level=3, custom_string=None, remove_weight=False, compress_weight=False,
        inputs_yuv_fmt=None, single_core_mode=False, dynamic_input=None, model_pruning=False, op_target=None,
        quantize_weight=False, remove_reshape=False, sparse_infer=False, enable_flash_attention=False,
        auto_hybrid_cos_thresh=0.98, auto_hybrid_euc_thresh=None)
    assert defaults("load_onnx") == dict(inputs=None, input_size_list=None, input_initial_val=None, outputs=None)
    assert defaults("build") == dict(do_quantization=True, dataset=None, rknn_batch_size=None, auto_hybrid=False)
    assert defaults("init_runtime") == dict(target=None, device_id=None, perf_debug=False, eval_mem=False,
                                            async_mode=False, core_mask=0, fallback_prior_device="cpu")
    assert defaults("inference") == dict(data_format=None, inputs_pass_through=None, get_frame_id=False)
    assert defaults("eval_perf") == dict(is_print=True, fix_freq=True)
    assert defaults("eval_memory") == dict(is_print=True)
    assert defaults("accuracy_analysis") == dict(output_dir="./snapshot", target=None, device_id=None)
    assert defaults("hybrid_quantization_step1") == dict(dataset="dataset.txt", rknn_batch_size=None,
                                                         proposal=False, proposal_dataset_size=1, custom_hybrid=None)
    assert list(sig["hybrid_quantization_step2"].parameters)[1:] == ["model_input", "data_input",
                                                                     "model_quantization_cfg"]
    assert (RKNN.NPU_CORE_AUTO, RKNN.NPU_CORE_0, RKNN.NPU_CORE_1, RKNN.NPU_CORE_2, RKNN.NPU_CORE_0_1,
            RKNN.NPU_CORE_0_1_2, RKNN.NPU_CORE_ALL) == (0, 1, 2, 4, 3, 7, 0xFFFF)


def test_config_returns_0_and_takes_a_flat_mean_list_for_one_input(tmp_path):
    rknn = RKNN()
    assert rknn.config() == 0
    assert rknn.config(mean_values=[10, 20, 30], std_values=[50, 60, 70], target_platform="RK3588",
                       optimization_level=2, custom_string="x") == 0
    model, _ = _files(tmp_path)
    assert rknn.load_onnx(model=model) == 0
    assert rknn.build(do_quantization=False) == 0
    assert rknn.init_runtime() == 0
    x = _pixels(1)
    y, = rknn.inference(inputs=[x], data_format="nchw")
    np.testing.assert_allclose(y, reference(convnet(), _normalised(x))[0], atol=0.05)


def test_fp16_build_applies_mean_std_in_both_layouts_and_pass_through(tmp_path):
    rknn = _built(tmp_path, quantize=False)
    assert rknn.init_runtime() == 0
    x = _pixels(7)
    want = reference(convnet(), _normalised(x))[0]
    nhwc = x[0].transpose(1, 2, 0).astype(np.uint8)
    outs = rknn.inference(inputs=[nhwc])                           # the default: NHWC, a 3-D image batched
    assert isinstance(outs, list) and outs[0].dtype == np.float32 and outs[0].shape == want.shape
    np.testing.assert_allclose(outs[0], want, atol=0.05)
    np.testing.assert_array_equal(rknn.inference(inputs=[nhwc[None]], data_format=["nhwc"])[0], outs[0])
    np.testing.assert_allclose(rknn.inference(inputs=[x], data_format="nchw")[0], want, atol=0.05)
    passed, = rknn.inference(inputs=[_normalised(x)], data_format="nchw", inputs_pass_through=[1])
    np.testing.assert_allclose(passed, want, atol=0.05)
    y, frame_id = rknn.inference(inputs=[nhwc], get_frame_id=True)
    assert frame_id == 5
    rknn.release()


@pytest.mark.parametrize("algorithm", ["normal", "kl_divergence", "mmse"])
def test_int8_build_on_npy_dataset_with_each_algorithm(tmp_path, algorithm):
    rknn = _built(tmp_path, quantized_algorithm=algorithm, quantized_method="layer")
    assert rknn._compiled.precision == "int8" and rknn._compiled.meta["quantized_algorithm"] == algorithm
    assert rknn.init_runtime() == 0
    x = _pixels(3)
    y, = rknn.inference(inputs=[x], data_format="nchw")
    assert cosine(y, reference(convnet(), _normalised(x))[0]) > 0.99


def test_dataset_of_images_reads_rgb_and_flips_with_quant_img_rgb2bgr(tmp_path):
    from PIL import Image

    from npurt.toolkit.dataset import read_dataset
    rgb = np.random.default_rng(5).integers(0, 256, (8, 10, 3), dtype=np.uint8)
    Image.fromarray(rgb).save(tmp_path / "a.png")
    Image.fromarray(np.repeat(np.repeat(rgb, 2, 0), 2, 1)).save(tmp_path / "big.png")   # 16x20: resized
    (tmp_path / "dataset.txt").write_text("a.png\nbig.png\n")
    plain = read_dataset(tmp_path / "dataset.txt", [[1, 3, 8, 10]])
    flipped = read_dataset(tmp_path / "dataset.txt", [[1, 3, 8, 10]], bgr=[True])
    np.testing.assert_array_equal(plain[0][0], rgb.transpose(2, 0, 1)[None].astype(np.float32))
    np.testing.assert_array_equal(flipped[0][0], plain[0][0][:, ::-1])
    assert plain[1][0].shape == (1, 3, 8, 10)
    (tmp_path / "conv.onnx").write_bytes(convnet())
    rknn = RKNN()
    assert rknn.config(mean_values=MEAN, std_values=STD, quant_img_RGB2BGR=True) == 0
    assert rknn.load_onnx(model=str(tmp_path / "conv.onnx")) == 0
    assert rknn.build(dataset=str(tmp_path / "dataset.txt")) == 0      # entries beside the dataset file


def test_an_nhwc_npy_in_the_dataset_is_refused_as_the_toolkit_refuses_it(tmp_path, capsys):
    model, _ = _files(tmp_path)
    np.save(tmp_path / "nhwc.npy", _pixels(1).transpose(0, 2, 3, 1))
    (tmp_path / "bad.txt").write_text(f"{tmp_path / 'nhwc.npy'}\n")
    rknn = RKNN()
    rknn.load_onnx(model=model)
    assert rknn.build(dataset=str(tmp_path / "bad.txt")) == -1
    err, = _errors(capsys)
    assert err.startswith("E build:") and "expect 'nchw'" in err


def test_several_inputs_one_line_per_sample(tmp_path):
    (tmp_path / "two.onnx").write_bytes(two_io())
    lines = []
    for k in range(3):
        np.save(tmp_path / f"x{k}.npy", _pixels(k, (1, 3, 6, 6)))
        np.save(tmp_path / f"z{k}.npy", np.random.default_rng(k).standard_normal((1, 5)).astype(np.float32))
        lines.append(f"{tmp_path / f'x{k}.npy'} {tmp_path / f'z{k}.npy'}")
    (tmp_path / "dataset.txt").write_text("\n".join(lines) + "\n")
    rknn = RKNN()
    assert rknn.config(mean_values=[[127.5] * 3, [0]], std_values=[[127.5] * 3, [1]]) == 0
    assert rknn.load_onnx(model=str(tmp_path / "two.onnx")) == 0
    assert rknn.build(dataset=str(tmp_path / "dataset.txt")) == 0
    assert rknn.init_runtime() == 0
    x, z = np.load(tmp_path / "x0.npy"), np.load(tmp_path / "z0.npy")       # a calibration sample: in range
    y, v = rknn.inference(inputs=[x, z], data_format=["nchw", None])
    want = reference(two_io(), (x - 127.5) / 127.5, z)
    assert cosine(y, want[0]) > 0.99 and cosine(v, want[1]) > 0.99


def test_dynamic_input_builds_every_shape_and_refuses_others(tmp_path, capsys):
    (tmp_path / "dyn.onnx").write_bytes(dynamic_convnet(with_metadata=False))
    rknn = RKNN()
    assert rknn.config(dynamic_input=DYNAMIC_SHAPES) == 0
    assert rknn.load_onnx(model=str(tmp_path / "dyn.onnx")) == 0
    assert rknn.build(do_quantization=False) == 0
    assert rknn.init_runtime() == 0
    for shape in ([1, 3, 8, 8], [1, 3, 16, 16], [1, 3, 12, 10]):
        x = image(tuple(shape), seed=shape[2])
        y, = rknn.inference(inputs=[x], data_format="nchw")
        np.testing.assert_allclose(y, reference(dynamic_convnet(with_metadata=False), x)[0], atol=0.05)
    assert rknn.inference(inputs=[image((1, 3, 20, 20))], data_format="nchw") is None
    err, = _errors(capsys)
    assert err.startswith("E inference:")


def test_rknn_batch_size_makes_the_batch_axis_n(tmp_path):
    model, dataset = _files(tmp_path)
    rknn = RKNN()
    rknn.load_onnx(model=model)
    assert rknn.build(dataset=dataset, rknn_batch_size=2) == 0
    assert rknn.init_runtime() == 0
    x = np.concatenate([_pixels(1), _pixels(2)])                       # raw pixels, as calibrated
    y, = rknn.inference(inputs=[x.astype(np.float32)], data_format="nchw")
    assert y.shape == (2, 4, 8, 10)
    want = np.concatenate([reference(convnet(), x[k:k + 1].astype(np.float32))[0] for k in range(2)])
    assert cosine(y[0], want[0]) > 0.99 and cosine(y[1], want[1]) > 0.99


def test_load_onnx_cuts_the_graph_and_fixes_inputs(tmp_path):
    model, _ = _files(tmp_path)
    rknn = RKNN()
    assert rknn.load_onnx(model=model, outputs=["r1"]) == 0              # the sub-graph up to the Relu
    assert rknn.build(do_quantization=False) == 0
    assert rknn._compiled.graph.outputs == ["r1"]
    (tmp_path / "dyn.onnx").write_bytes(dynamic_convnet(with_metadata=False))
    rknn = RKNN()
    assert rknn.load_onnx(model=str(tmp_path / "dyn.onnx"), inputs=["x"], input_size_list=[[1, 3, 6, 6]]) == 0
    assert rknn.build(do_quantization=False) == 0 and rknn.init_runtime() == 0
    x = image((1, 3, 6, 6), seed=4)
    np.testing.assert_allclose(rknn.inference(inputs=[x], data_format="nchw")[0],
                               reference(dynamic_convnet(with_metadata=False), x)[0], atol=0.05)
    (tmp_path / "two.onnx").write_bytes(two_io())
    rknn = RKNN()
    z = np.ones((1, 5), np.float32)
    assert rknn.load_onnx(model=str(tmp_path / "two.onnx"), input_initial_val=[None, z]) == 0
    assert rknn.build(do_quantization=False) == 0 and rknn.init_runtime() == 0
    x = image((1, 3, 6, 6), seed=5)
    y, v = rknn.inference(inputs=[x], data_format="nchw")
    np.testing.assert_allclose(v, reference(two_io(), x, z)[1], atol=0.05)


def test_a_missing_onnx_file_raises_as_the_toolkit(tmp_path, capsys):
    rknn = RKNN()
    with pytest.raises(ValueError, match="not exists"):
        rknn.load_onnx(model=str(tmp_path / "none.onnx"))
    assert _errors(capsys)[0].startswith("E load_onnx: Model file")


def test_export_then_load_rknn_runs_the_same_model(tmp_path, capsys):
    rknn = _built(tmp_path)
    assert rknn.export_rknn(str(tmp_path / "m.rknn")) == 0
    assert (tmp_path / "m.rknn").read_bytes()[:8] == b"NPURTMDL"       # npurt's format, whatever the name
    assert rknn.init_runtime() == 0
    x = _pixels(2)
    want, = rknn.inference(inputs=[x], data_format="nchw")
    other = RKNN()
    assert other.load_rknn(str(tmp_path / "m.rknn")) == 0
    assert other.init_runtime() == 0                                 # the simulator refuses this; npurt runs it
    np.testing.assert_array_equal(other.inference(inputs=[x], data_format="nchw")[0], want)
    assert other.accuracy_analysis(inputs=[str(tmp_path / "s0.npy")]) == -1    # no float model behind it
    (tmp_path / "vendor.rknn").write_bytes(b"RKNN" + bytes(60))
    assert RKNN().load_rknn(str(tmp_path / "vendor.rknn")) == -1
    assert RKNN().load_rknn(str(tmp_path / "none.rknn")) == -1
    errs = _errors(capsys)
    assert len(errs) == 3 and errs[0].startswith("E accuracy_analysis:") and "load_rknn" in errs[0]
    assert errs[1].startswith("E load_rknn: ")
    assert "vendor-compiled .rknn model, which only runs on the board" in errs[1]
    assert errs[2] == f"E load_rknn: The model {tmp_path / 'none.rknn'} does not exist!"


def test_init_runtime_targets_and_core_masks(tmp_path, capsys):
    rknn = _built(tmp_path, quantize=False)
    assert rknn.init_runtime(target="rk3566") == 0                     # the same build, emulating rk3566
    assert rknn._ctx.profile.name == "rk3566"
    assert rknn.init_runtime(core_mask=RKNN.NPU_CORE_0_1) == 0
    assert rknn.init_runtime(core_mask=5) == -1
    assert rknn.init_runtime(target="rk9999") == -1
    assert rknn._ctx.profile.name == "rk3588"                          # the failures changed nothing
    assert len(_errors(capsys)) == 2


def test_eval_memory_reports_the_real_plan_and_eval_perf_the_timing_models_prediction(tmp_path, capsys):
    rknn = _built(tmp_path)
    assert rknn.init_runtime(perf_debug=True, eval_mem=True) == 0
    mem = rknn.eval_memory()
    out = capsys.readouterr().out
    assert "Memory Profile Info Dump" in out and "Total Memory" in out
    assert set(mem) == {"weight_memory", "internal_memory", "other_memory", "total_memory"}
    assert mem["total_memory"] == mem["weight_memory"] + mem["internal_memory"] + mem["other_memory"]
    sizes = rknn._ctx.mem_size()
    assert (mem["weight_memory"], mem["internal_memory"]) == (sizes.weight_size, sizes.internal_size)
    table = rknn.eval_perf()
    assert isinstance(table, str) and table in capsys.readouterr().out
    assert "predicted NPU time (npurt timing model; rk3588, 1 core(s), SRAM 0 B), not measured" in table
    assert "(measured, not an NPU time)" in table
    from npurt.timing import predict
    want = predict(rknn._ctx.compiled, "rk3588")
    rows = [line.split() for line in table.splitlines() if line[:1].isdigit()]
    assert [(r[1], r[3]) for r in rows] == [(layer.op, layer.target) for layer in want.layers]
    assert f"Total Operator Elapsed Per Frame Time(us): {round(want.total_us)}" in table
    quiet = rknn.eval_perf(is_print=False)
    assert "ConvRelu" in quiet and capsys.readouterr().out == ""
    assert rknn.init_runtime(core_mask=RKNN.NPU_CORE_0_1_2) == 0            # no perf_debug: the total only
    table = rknn.eval_perf(is_print=False)
    assert "3 core(s)" in table and "ConvRelu" not in table and "perf_debug=True" in table


def test_accuracy_analysis_writes_the_toolkits_snapshot(tmp_path, monkeypatch):
    rknn = _built(tmp_path)
    out = tmp_path / "snap"
    assert rknn.accuracy_analysis(inputs=[str(tmp_path / "s0.npy")], output_dir=str(out), target="rk3566") == 0
    text = (out / "error_analysis.txt").read_text()
    rows = [line for line in text.splitlines() if line.startswith("[")]
    assert [r.split()[1] for r in rows] == ["x", "r1", "y"]
    assert rows[0].startswith("[input] x") and rows[1].startswith("[ConvRelu] r1")
    assert "runtime" in text and len(rows[2].split("|")) == 4                # the runtime column for the output
    assert (out / "map_name_to_file.txt").read_text().splitlines() == ["x -> x.txt", "r1 -> r1.txt", "y -> y.txt"]
    x = np.load(tmp_path / "s0.npy")
    golden = np.genfromtxt(out / "golden" / "y.txt")
    np.testing.assert_allclose(golden, reference(convnet(), _normalised(x))[0].reshape(-1), atol=1e-5)
    np.testing.assert_allclose(np.genfromtxt(out / "golden" / "x.txt"), _normalised(x).reshape(-1), atol=1e-5)
    sim = np.load(out / "simulator" / "npy" / "y.npy")
    assert cosine(sim, golden) > 0.99 and not np.array_equal(sim.reshape(-1), golden)
    assert (out / "runtime" / "y.txt").is_file()
    monkeypatch.chdir(tmp_path)
    assert rknn.accuracy_analysis(inputs=[str(tmp_path / "s1.npy")], output_dir=None) == 0
    assert sorted(p.name for p in (tmp_path / "snapshot").iterdir()) == ["error_analysis.txt", "map_name_to_file.txt"]
    assert rknn.init_runtime() == 0 and rknn.inference(inputs=[x], data_format="nchw") is not None


def test_accuracy_analysis_without_onnxruntime_uses_npurts_float_run(tmp_path, monkeypatch):
    """The light install has no onnxruntime: the golden values come from npurt's own float32 run."""
    import builtins
    rknn = _built(tmp_path)
    real_import = builtins.__import__

    def no_ort(name, *args, **kwargs):
        if name == "onnxruntime":
            raise ImportError("no onnxruntime")
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_ort)
    assert rknn.accuracy_analysis(inputs=[str(tmp_path / "s0.npy")], output_dir=str(tmp_path / "snap")) == 0
    monkeypatch.undo()
    x = np.load(tmp_path / "s0.npy")
    np.testing.assert_allclose(np.genfromtxt(tmp_path / "snap" / "golden" / "y.txt"),
                               reference(convnet(), _normalised(x))[0].reshape(-1), atol=1e-4)


def _outlier_files(tmp_path) -> tuple[str, str]:
    """zoo.outlier_convnet as sub/om.onnx (conv1's outlier channel leaves conv2 a few int8 codes) and a dataset
    of 8 normal samples."""
    from npurt.model import zoo
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "om.onnx").write_bytes(zoo.outlier_convnet().SerializeToString())
    rng = np.random.default_rng(11)
    lines = []
    for k in range(8):
        np.save(tmp_path / f"o{k}.npy", rng.normal(size=(1, 3, 16, 16)).astype(np.float32))
        lines.append(str(tmp_path / f"o{k}.npy"))
    (tmp_path / "dataset.txt").write_text("\n".join(lines) + "\n")
    return str(tmp_path / "sub" / "om.onnx"), str(tmp_path / "dataset.txt")


def test_hybrid_quantization_steps_keep_listed_layers_in_float(tmp_path, monkeypatch):
    """step1 writes the three files in the current folder, named after the model's stem; listing conv2 under
    custom_quantize_layers makes step2's model compute it in float16, which restores the output."""
    from npurt.toolkit.hybrid import parse_cfg
    model, dataset = _outlier_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    rknn = RKNN()
    assert rknn.load_onnx(model=model) == 0
    assert rknn.hybrid_quantization_step1(dataset=dataset) == 0
    assert all((tmp_path / f).is_file() for f in ("om.model", "om.data", "om.quantization.cfg"))
    cfg = (tmp_path / "om.quantization.cfg").read_text()
    assert cfg.startswith("custom_quantize_layers: {}\nquantize_parameters:\n    input:\n")
    custom, qparams = parse_cfg(cfg)
    assert custom == {} and {"input", "conv1", "conv2", "output"} <= set(qparams)
    x = np.random.default_rng(12).normal(size=(1, 3, 16, 16)).astype(np.float32)
    want = reference((tmp_path / "sub" / "om.onnx").read_bytes(), x)[0]

    def step2_cosine() -> float:
        fresh = RKNN()
        assert fresh.hybrid_quantization_step2("om.model", "om.data", "om.quantization.cfg") == 0
        assert fresh.init_runtime() == 0
        return cosine(fresh.inference(inputs=[x], data_format="nchw")[0], want)
    plain = step2_cosine()
    edited = cfg.replace("custom_quantize_layers: {}\n", "custom_quantize_layers:\n    conv2: float16\n")
    (tmp_path / "om.quantization.cfg").write_text(edited)
    assert parse_cfg(edited) == ({"conv2": "float16"}, qparams)
    hybrid = step2_cosine()
    assert plain < 0.97 and hybrid > 0.999, (plain, hybrid)


def test_hybrid_step1_proposal_and_custom_hybrid_list_layers(tmp_path, monkeypatch):
    from npurt.toolkit.hybrid import parse_cfg
    model, dataset = _outlier_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    rknn = RKNN()
    rknn.load_onnx(model=model)
    assert rknn.hybrid_quantization_step1(dataset=dataset, proposal=True, proposal_dataset_size=2) == 0
    custom, _ = parse_cfg((tmp_path / "om.quantization.cfg").read_text())
    assert list(custom) == ["conv2"] and custom["conv2"] == "float16"        # the worst layer on its own
    assert rknn.hybrid_quantization_step1(dataset=dataset, custom_hybrid=[["conv1", "conv2"]]) == 0
    custom, _ = parse_cfg((tmp_path / "om.quantization.cfg").read_text())
    assert custom == {"conv1": "float16", "conv2": "float16"}


def test_bad_input_returns_minus_1_with_one_line_and_changes_nothing(tmp_path, capsys):
    model, dataset = _files(tmp_path)
    rknn = RKNN()
    assert rknn.build(dataset=dataset) == -1                           # build before load
    assert _errors(capsys) == ["E build: The model has not been loaded, please load it first (load_onnx)!"]
    assert rknn.init_runtime() == -1                                  # init_runtime before build
    assert _errors(capsys)[0].startswith("E init_runtime: Model is not loaded yet")
    assert rknn.inference(inputs=[_pixels(0)]) is None                 # inference before init_runtime
    assert _errors(capsys)[0].startswith("E inference: Runtime environment is not inited")
    assert rknn.export_rknn(str(tmp_path / "m.rknn")) == -1 and not (tmp_path / "m.rknn").exists()
    capsys.readouterr()
    assert rknn.config(target_platform="rk1234") == -1
    err, = _errors(capsys)
    assert err.startswith("E config: target_platform 'rk1234' is not supported")
    assert rknn.config(mean_values=MEAN, std_values=STD, target_platform="rk3566") == 0
    assert rknn.config(mean_values=[[0, 0, 0]], std_values=[[1, 1, 1], [1]]) == -1
    assert rknn.config(quantized_dtype="w4a16") == -1
    assert rknn._config["target_platform"] == "rk3566" and rknn._config["mean_values"] == MEAN   # kept
    capsys.readouterr()
    assert rknn.load_onnx(model=model) == 0
    assert rknn.build(dataset=dataset) == 0
    built = rknn._compiled
    (tmp_path / "missing.txt").write_text(f"{tmp_path / 's0.npy'}\n{tmp_path / 'gone.npy'}\n")
    assert rknn.build(dataset=str(tmp_path / "missing.txt")) == -1     # a missing dataset entry
    err, = _errors(capsys)
    assert err.startswith("E build: dataset entry") and "gone.npy" in err and "does not exist" in err
    assert rknn._compiled is built
    assert rknn.build(do_quantization=True) == -1                      # no dataset
    capsys.readouterr()
    assert rknn.config(mean_values=[[1, 2]], std_values=[[1, 1]]) == 0
    assert rknn.load_onnx(model=model) == -1                           # 2 values for 3 channels
    err, = _errors(capsys)
    assert err.startswith("E load_onnx: The length of config.mean_values") and "3 channels" in err
    assert rknn._compiled is built                                     # the loaded model and its build stay
    assert rknn.export_rknn(str(tmp_path / "m.rknn")) == 0


def test_list_devices_sdk_version_codegen_and_release(tmp_path, capsys):
    adb, ntb = RKNN().list_devices()
    assert "npurt-rk3588" in adb and ntb == []
    rknn = _built(tmp_path, quantize=False)
    assert rknn.get_sdk_version() is None
    assert rknn.init_runtime() == 0
    assert "API:" in rknn.get_sdk_version() and "rk3588" in rknn.get_sdk_version()
    assert rknn.codegen(str(tmp_path / "cg")) == -1 and not (tmp_path / "cg").exists()
    assert rknn.load_tflite("m.tflite") == -1
    assert rknn.release() is None
    assert rknn.release() is None
    assert rknn.inference(inputs=[_pixels(0)]) is None


def test_verbose_file_is_written_only_when_verbose(tmp_path):
    model, _ = _files(tmp_path)
    for verbose in (False, True):
        log = tmp_path / f"log{int(verbose)}.txt"
        rknn = RKNN(verbose=verbose, verbose_file=str(log))
        rknn.load_onnx(model=model)
        assert log.exists() is verbose


class _CstSigmoid:
    """A custom op as the toolkit's examples write one."""
    op_type = "cstSigmoid"

    def shape_infer(self, node, in_shapes, in_dtypes):
        return in_shapes.copy(), in_dtypes.copy()

    def compute(self, node, inputs):
        from npurt.toolkit.vendor_names import get_node_attr
        assert get_node_attr(node, "alpha") == 2.0 and get_node_attr(node, "mode") in ("fast", b"fast")
        return [1 / (1 + np.exp(-inputs[0]))]


@pytest.mark.parametrize("quantize", [False, True])
def test_reg_custom_op_runs_in_calibration_and_inference(tmp_path, quantize):
    from helpers import custom_op
    (tmp_path / "cst.onnx").write_bytes(custom_op.model())
    rng = np.random.default_rng(31)
    for k in range(4):
        np.save(tmp_path / f"c{k}.npy", rng.standard_normal(custom_op.SHAPE).astype(np.float32))
    (tmp_path / "dataset.txt").write_text("".join(f"{tmp_path / f'c{k}.npy'}\n" for k in range(4)))
    rknn = RKNN()
    assert rknn.reg_custom_op(_CstSigmoid()) == 0
    assert rknn.reg_custom_op(object()) == -1
    assert rknn.load_onnx(model=str(tmp_path / "cst.onnx")) == 0
    assert rknn.build(do_quantization=quantize, dataset=str(tmp_path / "dataset.txt") if quantize else None) == 0
    assert rknn.init_runtime() == 0
    x = np.load(tmp_path / "c0.npy")
    y, = rknn.inference(inputs=[x], data_format="nchw")
    assert cosine(y, custom_op.reference(x)) > 0.999


def test_an_rknn_dropped_without_release_frees_its_device_memory_at_once(tmp_path):
    """The runtime's log sink holds the object weakly: no reference cycle keeps a dropped RKNN's context (and its
    device buffers) alive until the cycle collector runs."""
    import gc

    from npurt.memory import open_device
    device = open_device("rk3588")
    before = device.stats().buffers
    gc.disable()
    try:
        rknn = _built(tmp_path, quantize=False)
        assert rknn.init_runtime() == 0
        assert rknn.inference(inputs=[_pixels(0)], data_format="nchw") is not None
        assert device.stats().buffers > before
        del rknn
        assert device.stats().buffers == before
    finally:
        gc.enable()
        device.close()


def test_parse_cfg_skips_a_tensor_the_vendor_cfg_keeps_in_float():
    # rknn-toolkit2 2.3.2 writes a float32 model input with empty scale / zero_point lists, then its int8 copy
    from npurt.errors import NpuError
    from npurt.toolkit.hybrid import parse_cfg
    cfg = ("custom_quantize_layers: {}\nquantize_parameters:\n    images:\n        qtype: asym\n"
           "        qmethod: layer\n        dtype: float32\n        min:\n        -   0.0\n        max:\n"
           "        -   1.0\n        scale: []\n        zero_point: []\n    images_int8:\n        qtype: asym\n"
           "        dtype: int8\n        scale:\n        -   0.00392156862745098\n        zero_point:\n"
           "        -   -128\n")
    assert parse_cfg(cfg) == ({}, {"images_int8": (0.00392156862745098, -128)})
    with pytest.raises(NpuError, match="images_int8"):       # an int8 tensor still has exactly one value
        parse_cfg(cfg.replace("        -   -128\n", "        -   -128\n        -   3\n"))
