"""Bad input to the toolkit face (`npurt.toolkit.RKNN`) and to `RKNNLite`: every refusal is the vendor's failure
value (-1, or None from inference) with one `E <method>:` line naming the argument, never a silent wrong result or
a raw Python exception, and the object keeps working: wrong input shapes, a decompression-bomb image, tampered
hybrid quantisation files, non-finite mean / std and calibration data, unreadable files, colliding snapshot file
names; and a property test of hostile arguments over the methods of both classes."""
from __future__ import annotations

import contextlib
import io
import json
import math
import os
import struct
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from helpers.models import W1, B1, convnet
from npurt.rknn.lite import RKNNLite
from npurt.toolkit import RKNN
from npurt.toolkit.snapshot import file_names
from test_toolkit import MEAN, STD, _built, _errors, _files, _pixels

X_NHWC = (1, 8, 10, 3)                  # convnet's input x (1, 3, 8, 10) as the vendor's default NHWC


def _runtime(tmp_path) -> RKNN:
    rknn = _built(tmp_path, quantize=False)
    assert rknn.init_runtime() == 0
    return rknn


def _lite(tmp_path) -> RKNNLite:
    path = tmp_path / "lite.onnx"
    path.write_bytes(convnet())
    lite = RKNNLite()
    assert lite.load_rknn(str(path)) == 0 and lite.init_runtime() == 0
    return lite


# --- 1. inference checks the input shape -------------------------------------------------------------------------
WRONG_SHAPES = [((1, 4, 4, 3), None), ((1, 8, 10, 4), None), ((2, 8, 10, 3), None), ((1, 80, 100, 3), None),
                ((1, 3, 8, 10), "nhwc"), ((1, 8, 10, 3), "nchw"), ((8, 10, 4), None)]


@pytest.mark.parametrize("face", ["toolkit", "lite"])
def test_inference_refuses_a_shape_that_is_not_the_models(tmp_path, capsys, face):
    """A smaller image, RGBA, batch 2, a bigger image or the other layout than data_format says: None and one line
    naming the input, the shape given and the one expected (the runtime would read the first bytes and answer)."""
    rknn = _runtime(tmp_path) if face == "toolkit" else _lite(tmp_path)
    x = _pixels(3)
    want, = rknn.inference(inputs=[x.transpose(0, 2, 3, 1)])
    capsys.readouterr()
    for shape, fmt in WRONG_SHAPES:
        bad = np.random.default_rng(4).integers(0, 256, shape).astype(np.uint8)
        assert rknn.inference(inputs=[bad], data_format=fmt) is None
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"E inference: inputs[0] ('x') has shape {shape}, the model "
                                                   f"expects"), err
        assert str((1, 3, 8, 10) if fmt == "nchw" else X_NHWC) in err[0]
    for ok, fmt in ((x.transpose(0, 2, 3, 1), None), (x.transpose(0, 2, 3, 1), "nhwc"), (x[0].transpose(1, 2, 0), None),
                    (x, "nchw"), (x, None), (x, ["nchw"])):                   # what the toolkit takes
        np.testing.assert_array_equal(rknn.inference(inputs=[ok], data_format=fmt)[0], want)
    assert capsys.readouterr().err == ""
    rknn.release()


@pytest.mark.parametrize("inputs, says", [(None, "inputs must be a list of numpy arrays (one per model input), got "
                                                 "NoneType"),
                                          (3, "got int"), ([None], "inputs[0] must be a numeric numpy array"),
                                          (["abc"], "inputs[0] must be a numeric numpy array, got str"),
                                          ([[[1], [1, 2]]], "inputs[0] must be a numeric numpy array, got list"),
                                          ([np.zeros(X_NHWC, np.complex64)], "complex64")])
def test_inference_of_what_is_not_a_list_of_arrays_is_one_clear_line(tmp_path, capsys, inputs, says):
    for rknn in (_runtime(tmp_path), _lite(tmp_path)):
        assert rknn.inference(inputs=inputs) is None
        err, = _errors(capsys)
        assert err.startswith("E inference: ") and says in err
        assert rknn.inference(inputs=[_pixels(1)]) is not None
        rknn.release()


def test_a_batch_model_takes_its_batch_and_a_pass_through_input_its_native_bytes(tmp_path, capsys):
    model, dataset = _files(tmp_path)
    rknn = RKNN()
    rknn.config(mean_values=MEAN, std_values=STD, target_platform="rk3588")
    rknn.load_onnx(model=model)
    assert rknn.build(do_quantization=False, rknn_batch_size=2) == 0 and rknn.init_runtime() == 0
    two = np.concatenate([_pixels(1), _pixels(2)]).transpose(0, 2, 3, 1)
    assert len(rknn.inference(inputs=[two])[0]) == 2
    assert rknn.inference(inputs=[two[:1]]) is None
    assert "has shape (1, 8, 10, 3), the model expects (2, 8, 10, 3)" in _errors(capsys)[0]
    lite = _lite(tmp_path)
    assert lite.inference(inputs=[np.zeros((1, 8, 10, 3), np.float16)], inputs_pass_through=[1]) is None
    err, = _errors(capsys)
    assert "inputs[0] ('x') with inputs_pass_through holds 480 bytes" in err and "native input is 768 bytes" in err
    for hostile in ("1", [2], [np.nan]):
        assert lite.inference(inputs=[_pixels(1)], inputs_pass_through=hostile) is None
        assert _errors(capsys)[0].startswith("E inference: inputs_pass_through")
    lite.release()
    rknn.release()


# --- 2. a decompression bomb in the dataset ----------------------------------------------------------------------
def _png_header(path: Path, width: int, height: int) -> None:
    """A PNG whose header declares width x height RGB pixels (no pixel data: Pillow refuses it at open)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                     + chunk(b"IEND", b""))


def test_a_decompression_bomb_image_is_refused_by_build_and_accuracy_analysis(tmp_path, capsys):
    bomb = tmp_path / "bomb.png"
    _png_header(bomb, 20000, 9000)                     # 180 Mpx declared
    (tmp_path / "bomb.txt").write_text(f"{bomb}\n")
    rknn = _built(tmp_path)
    built = rknn._compiled
    capsys.readouterr()
    assert rknn.build(dataset=str(tmp_path / "bomb.txt")) == -1
    err, = _errors(capsys)
    assert err.startswith(f"E build: cannot read image {bomb}: too large") and "180000000 pixels" in err
    assert rknn.accuracy_analysis(inputs=[str(bomb)], output_dir=str(tmp_path / "snap")) == -1
    err, = _errors(capsys)
    assert err.startswith(f"E accuracy_analysis: cannot read image {bomb}: too large")
    assert rknn._compiled is built and not (tmp_path / "snap").exists()


# --- 3. tampered hybrid quantisation files -----------------------------------------------------------------------
@pytest.fixture
def hybrid_files(tmp_path, monkeypatch):
    """step1's three files for convnet, written in tmp_path (the current folder)."""
    monkeypatch.chdir(tmp_path)
    model, dataset = _files(tmp_path, n=2)
    rknn = RKNN()
    rknn.config(mean_values=MEAN, std_values=STD, target_platform="rk3588")
    rknn.load_onnx(model=model)
    assert rknn.hybrid_quantization_step1(dataset=dataset) == 0
    return tuple(tmp_path / f"conv.{ext}" for ext in ("model", "data", "quantization.cfg"))


def _first(key: str, cfg: str, value: str) -> str:
    """The cfg with the first `key:` list item's value replaced by `value`."""
    head = f"        {key}:\n        - "
    start = cfg.index(head) + len(head)
    return cfg[:start] + value + cfg[cfg.index("\n", start):]


CFG_EDITS = {   # edit -> what the E line says
    "scale 0": (lambda c: _first("scale", c, "0"), "scale 0 is not a positive finite number"),
    "scale nan": (lambda c: _first("scale", c, "nan"), "scale nan is not a positive finite number"),
    "scale -1": (lambda c: _first("scale", c, "-1"), "scale -1 is not a positive finite number"),
    "scale 1e999": (lambda c: _first("scale", c, "1e999"), "scale inf is not a positive finite number"),
    "scale word": (lambda c: _first("scale", c, "abc"), "scale 'abc' is not a number"),
    "scale empty": (lambda c: _first("scale", c, "@").replace("scale:\n        - @", "scale: []", 1),
                    "scale must be one value (per-layer), got []"),
    "zero point 100000": (lambda c: _first("zero_point", c, "100000"),
                          "zero_point 100000 is not an int8 value (-128..127)"),
    "zero point 1e999": (lambda c: _first("zero_point", c, "1e999"), "zero_point inf is not an int8 value"),
    "zero point 0.5": (lambda c: _first("zero_point", c, "0.5"), "zero_point 0.5 is not an int8 value"),
    "unnamed layer": (lambda c: c.replace("custom_quantize_layers: {}", "custom_quantize_layers: {a b}"),
                      "custom_quantize_layers lists a layer with no name"),
}
MODEL_EDITS = {
    "a list": (lambda r: [], "is not a model file written by hybrid_quantization_step1"),
    "a number": (lambda r: 1, "is not a model file written by hybrid_quantization_step1"),
    "no format": (lambda r: {k: v for k, v in r.items() if k != "format"}, "is not a model file written by"),
    "config a list": (lambda r: dict(r, config=[]), "is not a model file written by"),
    "batch word": (lambda r: dict(r, batch="x"), "rknn_batch_size must be a whole number from 1 to 128, got 'x'"),
    "batch -3": (lambda r: dict(r, batch=-3), "rknn_batch_size must be a whole number from 1 to 128, got -3"),
    "mean nan": (lambda r: dict(r, config=dict(r["config"], mean_values=[[math.nan] * 3])),
                 "mean_values must hold finite numbers"),
    "unknown platform": (lambda r: dict(r, config=dict(r["config"], target_platform="rk9")),
                         "target_platform 'rk9' is not supported"),
    "unknown argument": (lambda r: dict(r, config=dict(r["config"], bogus=1)),
                         "the recorded configuration has unknown arguments ['bogus']"),
}


@pytest.mark.parametrize("edit", list(CFG_EDITS) + list(MODEL_EDITS) + ["empty data", "junk data"])
def test_tampered_hybrid_files_are_refused_by_step2(hybrid_files, tmp_path, capsys, edit):
    model_file, data_file, cfg_file = hybrid_files
    tampered = [tmp_path / f"t.{ext}" for ext in ("model", "data", "quantization.cfg")]
    for src, dst in zip(hybrid_files, tampered):
        dst.write_bytes(src.read_bytes())
    if edit in CFG_EDITS:
        tampered[2].write_text(CFG_EDITS[edit][0](cfg_file.read_text()))
        says = CFG_EDITS[edit][1]
    elif edit in MODEL_EDITS:
        tampered[0].write_text(json.dumps(MODEL_EDITS[edit][0](json.loads(model_file.read_text()))))
        says = MODEL_EDITS[edit][1]
    else:
        tampered[1].write_bytes(b"" if edit == "empty data" else b"\x00junk" * 10)
        says = f"cannot read ONNX model {tampered[1]}: " + \
            ("it has no graph" if edit == "empty data" else "Error parsing")
    capsys.readouterr()
    rknn = RKNN()
    assert rknn.hybrid_quantization_step2(*map(str, tampered)) == -1
    err, = _errors(capsys)
    assert err.startswith("E hybrid_quantization_step2: ") and says in err, err
    assert rknn._compiled is None and rknn._onnx is None
    assert rknn.hybrid_quantization_step2(*map(str, hybrid_files)) == 0        # the object still works
    assert rknn.init_runtime() == 0 and rknn.inference(inputs=[_pixels(1)]) is not None
    rknn.release()


def test_step1_refuses_a_bad_custom_hybrid_or_proposal_size_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    model, dataset = _files(tmp_path, n=2)
    rknn = RKNN()
    rknn.load_onnx(model=model)
    for kwargs, says in ((dict(custom_hybrid=[5]), "custom_hybrid must be a list of [start_tensor, end_tensor] pairs"),
                         (dict(custom_hybrid=[["x", None]]), "custom_hybrid must be a list of"),
                         (dict(custom_hybrid=[["nosuch", "y"]]), "custom_hybrid entry ['nosuch', 'y']"),
                         (dict(proposal=True, proposal_dataset_size=math.nan),
                          "proposal_dataset_size must be a whole number from 1, got nan"),
                         (dict(proposal=True, proposal_dataset_size=0), "proposal_dataset_size must be a whole")):
        capsys.readouterr()
        assert rknn.hybrid_quantization_step1(dataset=dataset, **kwargs) == -1
        err, = _errors(capsys)
        assert err.startswith("E hybrid_quantization_step1: ") and says in err, err
        assert not list(tmp_path.glob("conv.*.cfg")) and not (tmp_path / "conv.model").exists()
    assert rknn.hybrid_quantization_step1(dataset=dataset, custom_hybrid=[["x", "y"]]) == 0


# --- 4. non-finite mean / std and calibration data ---------------------------------------------------------------
@pytest.mark.parametrize("kwargs, says", [
    (dict(mean_values=[[math.nan, 0, 0]]), "mean_values must hold finite numbers, got nan"),
    (dict(mean_values=[[math.inf, 0, 0]]), "mean_values must hold finite numbers, got inf"),
    (dict(mean_values=[[1e39, 0, 0]]), "mean_values must hold finite numbers, got 1e+39"),
    (dict(mean_values=[[None, 0, 0]]), "mean_values must hold numbers, got None"),
    (dict(mean_values=[None, 0, 0]), "mean_values must hold numbers, got None"),
    (dict(mean_values=[]), "mean_values must be a list of lists"),
    (dict(std_values=[[-math.inf, 1, 1]]), "std_values must hold finite numbers, got -inf"),
    (dict(std_values=[[1e-50, 1, 1]]), "std_values must not contain 0 (nor a value so small that 1/std overflows"),
    (dict(std_values=[[0, 1, 1]]), "std_values must not contain 0"),
    (dict(std_values=[[True, 1, 1]]), "std_values must hold numbers, got True"),
])
def test_config_refuses_non_finite_mean_and_std(tmp_path, capsys, kwargs, says):
    rknn = RKNN()
    assert rknn.config(mean_values=MEAN, std_values=STD) == 0
    before = dict(rknn._config)
    assert rknn.config(**kwargs) == -1
    err, = _errors(capsys)
    assert err.startswith("E config: ") and says in err, err
    assert rknn._config == before


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_a_non_finite_calibration_npy_is_refused_at_build(tmp_path, capsys, value):
    rknn = _built(tmp_path)
    built = rknn._compiled
    x = _pixels(5)
    x[0, 1, 2, 3] = value
    np.save(tmp_path / "bad.npy", x)
    (tmp_path / "bad.txt").write_text(f"{tmp_path / 's0.npy'}\n{tmp_path / 'bad.npy'}\n")
    capsys.readouterr()
    assert rknn.build(dataset=str(tmp_path / "bad.txt")) == -1
    assert _errors(capsys) == [f"E build: dataset entry {tmp_path / 'bad.npy'} holds NaN or infinite values"]
    assert rknn._compiled is built


# --- 5. messages that were raw Python ----------------------------------------------------------------------------
def test_empty_onnx_non_utf8_dataset_and_fractional_batch_are_plain_lines(tmp_path, capsys):
    model, dataset = _files(tmp_path)
    (tmp_path / "empty.onnx").write_bytes(b"")
    rknn = RKNN()
    assert rknn.load_onnx(model=str(tmp_path / "empty.onnx")) == -1
    assert _errors(capsys) == [f"E load_onnx: cannot read ONNX model {tmp_path / 'empty.onnx'}: it has no graph "
                               f"(an empty or truncated file?)"]
    assert rknn.load_onnx(model=None) == -1
    assert _errors(capsys) == ["E load_onnx: model must be the path of an .onnx file, got None"]
    rknn.config(mean_values=MEAN, std_values=STD)
    assert rknn.load_onnx(model=model) == 0
    (tmp_path / "latin1.txt").write_bytes(b"s0.npy\ncaf\xe9.npy\n")
    assert rknn.build(dataset=str(tmp_path / "latin1.txt")) == -1
    err, = _errors(capsys)
    assert err.startswith(f"E build: dataset file {tmp_path / 'latin1.txt'} is not a UTF-8 text file")
    for batch in (2.5, 0, -1, True, "2", 10 ** 30, math.nan):
        assert rknn.build(dataset=dataset, rknn_batch_size=batch) == -1
        assert _errors(capsys) == [f"E build: rknn_batch_size must be a whole number from 1 to 128, got {batch!r}"]
    assert rknn._compiled is None
    assert rknn.build(dataset=dataset, rknn_batch_size=2.0) == 0          # a whole number given as a float
    assert rknn._compiled.storage["x"].shape[0] == 2


# --- 6. snapshot file names --------------------------------------------------------------------------------------
def test_snapshot_file_names_are_unique_and_deterministic():
    assert file_names(["a/b", "a_b", "a:b", "x"]) == {"a/b": "a_b_1.txt", "a_b": "a_b.txt", "a:b": "a_b_2.txt",
                                                      "x": "x.txt"}
    assert file_names(["a_b", "a/b"]) == file_names(["a/b", "a_b"])       # a plain name keeps its own
    long = ["t" * 300, "t" * 299 + "u"]
    names = file_names(long)
    assert len(set(names.values())) == 2 and all(len(n) <= 204 for n in names.values())
    assert names == file_names(long)


def test_accuracy_analysis_writes_one_file_per_tensor_when_names_collide(tmp_path):
    """Tensors `a/b` and `a_b` both mapped to a_b.txt: the second overwrote the first."""
    nodes = [helper.make_node("Conv", ["x", "W1", "B1"], ["a/b"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a/b"], ["a_b"]),
             helper.make_node("Add", ["a/b", "a_b"], ["s"]),       # a/b has two readers: not fused away
             helper.make_node("Conv", ["s", "W2"], ["y"], pads=[1, 1, 1, 1])]
    w2 = np.random.default_rng(7).standard_normal((4, 8, 3, 3)).astype(np.float32) * 0.3
    graph = helper.make_graph(nodes, "collide", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 10])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 10])],
                              [numpy_helper.from_array(v, k) for k, v in {"W1": W1, "B1": B1, "W2": w2}.items()])
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx_model.ir_version = 8
    model, dataset = _files(tmp_path, model=onnx_model.SerializeToString())
    rknn = RKNN()
    rknn.config(mean_values=MEAN, std_values=STD, target_platform="rk3588")
    rknn.load_onnx(model=model)
    assert rknn.build(dataset=dataset) == 0
    out = tmp_path / "snap"
    assert rknn.accuracy_analysis(inputs=[str(tmp_path / "s0.npy")], output_dir=str(out)) == 0
    mapping = dict(line.split(" -> ") for line in (out / "map_name_to_file.txt").read_text().splitlines())
    assert mapping["a_b"] == "a_b.txt" and mapping["a/b"] == "a_b_1.txt"
    assert len(set(mapping.values())) == len(mapping)
    for name in ("a/b", "a_b"):
        golden = np.load(out / "golden" / "npy" / (mapping[name][:-4] + ".npy"))
        np.testing.assert_allclose(np.loadtxt(out / "golden" / mapping[name]), golden.reshape(-1), atol=1e-5)
        assert ((golden < 0).any()) == (name == "a/b")             # before the Relu and after it


# --- 7. hostile arguments: a property test over both classes -----------------------------------------------------
PATHS = ["", "no/such/file.onnx", "no/such/dir/"]
HOSTILE = st.one_of(
    st.sampled_from([None, -1, 0, 1, True, 2.5, b"\xff", [], [None], [[]], {}, (1, 2), object(), *PATHS]),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e-50]),
    st.integers(min_value=2 ** 62, max_value=2 ** 80), st.integers(min_value=-2 ** 80, max_value=-2 ** 62),
    st.lists(st.sampled_from([math.nan, math.inf, None, "a"]), min_size=1, max_size=3),
    st.lists(st.lists(st.sampled_from([math.nan, -math.inf, 1e39, None, "a"]), min_size=3, max_size=3), min_size=1,
             max_size=2),
    st.sampled_from([(), (0,), (2, 2), (1, 3, 8, 11), (1, 8, 10, 4), (2, 8, 10, 3), (1, 16, 16, 3)]).map(
        lambda shape: np.ones(shape, np.float32)),
)


def _in(value, allowed) -> bool:
    return isinstance(value, str) and value.lower() in allowed


def _per_input(ok):
    """A predicate for a per-input argument: `ok` for the value, or a list of one value `ok` takes."""
    return lambda v: ok(v) or isinstance(v, (list, tuple)) and len(v) == 1 and ok(v[0])


def _numbers(value) -> bool:
    """A flat list of finite numbers (one input's mean or std values)."""
    return isinstance(value, (list, tuple)) and len(value) > 0 and all(
        isinstance(x, (int, float)) and not isinstance(x, bool) and abs(x) < 1e38 for x in value)


def _plain(value) -> bool:
    return not isinstance(value, (bool, np.ndarray)) and isinstance(value, (int, type(None)))


TOOLKIT_ARGS = {         # (method, argument) -> the values of HOSTILE that are valid there (they are skipped)
    ("config", "mean_values"): lambda v: v is None or _numbers(v),
    ("config", "std_values"): lambda v: v is None or _numbers(v) and 0 not in v and 1e-50 not in v,
    ("config", "target_platform"): lambda v: v is None or _in(v, ("rk3588", "rk3566")),
    ("config", "quantized_dtype"): lambda v: _in(v, ("w8a8",)),
    ("config", "quantized_algorithm"): lambda v: _in(v, ("normal",)),
    ("config", "quantized_method"): lambda v: _in(v, ("channel", "layer")),
    ("config", "float_dtype"): lambda v: _in(v, ("float16",)),
    ("config", "optimization_level"): lambda v: _plain(v) and v in (0, 1, 2, 3),
    ("config", "dynamic_input"): lambda v: v is None,
    ("load_onnx", "model"): lambda v: False,
    ("load_onnx", "inputs"): lambda v: v is None,
    ("load_onnx", "outputs"): lambda v: v is None,
    ("load_onnx", "input_size_list"): lambda v: v is None,
    ("load_onnx", "input_initial_val"): lambda v: v is None or isinstance(v, list) and len(v) == 1 and v[0] is None,
    ("build", "dataset"): lambda v: False,
    ("build", "rknn_batch_size"): lambda v: v is None or _plain(v) and 1 <= v <= 128,
    ("inference", "inputs"): lambda v: False,
    ("inference", "data_format"): _per_input(lambda v: v is None or _in(v, ("nhwc",))),
    ("inference", "inputs_pass_through"): _per_input(lambda v: v in (None, 0, 1) if _plain(v) or
                                                     isinstance(v, bool) else False),
    ("export_rknn", "export_path"): lambda v: False,
    ("init_runtime", "target"): lambda v: v is None,
    ("init_runtime", "core_mask"): lambda v: _plain(v) and v in RKNN._CORE_MASKS,
    ("accuracy_analysis", "inputs"): lambda v: False,
    ("accuracy_analysis", "output_dir"): lambda v: v is None or isinstance(v, str) and v != "",
    ("accuracy_analysis", "target"): lambda v: v is None,
    ("load_rknn", "path"): lambda v: False,
    ("reg_custom_op", "custom_op"): lambda v: False,
    ("hybrid_quantization_step1", "dataset"): lambda v: False,
    ("hybrid_quantization_step1", "rknn_batch_size"): lambda v: v is None or _plain(v) and 1 <= v <= 128,
    ("hybrid_quantization_step1", "custom_hybrid"): lambda v: v is None or isinstance(v, (list, tuple)) and not v,
    ("hybrid_quantization_step2", "model_input"): lambda v: False,
    ("hybrid_quantization_step2", "data_input"): lambda v: False,
    ("hybrid_quantization_step2", "model_quantization_cfg"): lambda v: False,
}
LITE_ARGS = {
    ("load_rknn", "path"): lambda v: False,
    ("init_runtime", "target"): lambda v: v is None,
    ("init_runtime", "core_mask"): lambda v: _plain(v) and v in RKNN._CORE_MASKS,
    ("inference", "inputs"): lambda v: False,
    ("inference", "data_type"): _per_input(lambda v: v is None),
    ("inference", "data_format"): _per_input(lambda v: v is None or _in(v, ("nhwc",))),
    ("inference", "inputs_pass_through"): _per_input(lambda v: _plain(v) and v in (None, 0)),
}


@pytest.fixture(scope="module")
def ready(tmp_path_factory):
    """A toolkit RKNN built (int8) with its runtime up, an RKNNLite on the same model, the valid arguments of each
    method, and the reference output of the valid inference."""
    tmp = tmp_path_factory.mktemp("hostile")
    model, dataset = _files(tmp, n=2)
    cwd = os.getcwd()
    os.chdir(tmp)                                   # step1 writes its files in the current folder
    try:
        rknn = _built(tmp)
        assert rknn.hybrid_quantization_step1(dataset=dataset) == 0
    finally:
        os.chdir(cwd)
    assert rknn.export_rknn(str(tmp / "conv.npurt")) == 0 and rknn.init_runtime() == 0
    lite = RKNNLite()
    assert lite.load_rknn(str(tmp / "conv.npurt")) == 0 and lite.init_runtime() == 0
    x = _pixels(9).transpose(0, 2, 3, 1)
    valid = {"config": dict(mean_values=MEAN, std_values=STD, target_platform="rk3588"), "load_onnx": dict(model=model),
             "build": dict(dataset=dataset), "inference": dict(inputs=[x]), "export_rknn": dict(export_path=str(
                 tmp / "again.npurt")), "init_runtime": {}, "accuracy_analysis": dict(inputs=[str(tmp / "s0.npy")],
                                                                                       output_dir=str(tmp / "snap")),
             "load_rknn": dict(path=str(tmp / "conv.npurt")), "reg_custom_op": {},
             "hybrid_quantization_step1": dict(dataset=dataset),
             "hybrid_quantization_step2": {k: str(tmp / f"conv.{e}") for k, e in (
                 ("model_input", "model"), ("data_input", "data"), ("model_quantization_cfg", "quantization.cfg"))}}
    yield rknn, lite, valid, x, rknn.inference(inputs=[x])[0], lite.inference(inputs=[x.astype(np.uint8)])[0]
    rknn.release()
    lite.release()


def _names_it(line: str, arg: str, value) -> bool:
    """The E line names the argument, or shows the value given."""
    shown = [repr(value), str(value)] if not isinstance(value, np.ndarray) else [str(value.shape), str(value.dtype)]
    if isinstance(value, str) and value:
        shown.append(os.path.normpath(value))
    if isinstance(value, list):                     # a list of paths: the one refused
        shown += [os.path.normpath(v) for v in value if isinstance(v, str) and v]
    return arg in line or arg.replace("_", " ") in line or any(s and s in line for s in shown)


def _call(obj, method: str, kwargs: dict):
    """(result, raised, the E lines) of one call, stderr captured."""
    err = io.StringIO()
    raised = None
    with contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)      # numpy's casts of nan / huge values: not lines of ours
        try:
            result = getattr(obj, method)(**kwargs)
        except Exception as exc:                    # noqa: BLE001  (what the property is about)
            result, raised = None, exc
    lines = err.getvalue().splitlines()
    assert all(line[:2] in ("E ", "W ", "I ") for line in lines), lines           # one line per message
    return result, raised, [line for line in lines if line.startswith("E ")]


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_hostile_arguments_fail_with_one_line_and_change_nothing(ready, data):
    """Every hostile argument of every method: -1 (None from inference) with exactly one E line that names the
    argument, no other exception (load_onnx of a path that is not a file raises ValueError, as the toolkit does),
    and the object works as before (the same outputs of a valid inference, the configuration kept)."""
    rknn, lite, valid, x, want, want_lite = ready
    face = data.draw(st.sampled_from(["toolkit", "lite"]), label="face")
    table = TOOLKIT_ARGS if face == "toolkit" else LITE_ARGS
    method, arg = data.draw(st.sampled_from(sorted(table)), label="argument")
    value = data.draw(HOSTILE.filter(lambda v: not table[method, arg](v)), label="value")
    obj = rknn if face == "toolkit" else lite
    kwargs = dict(valid.get(method, {})) if face == "toolkit" else \
        {"load_rknn": dict(path=valid["load_rknn"]["path"]), "inference": dict(inputs=[x.astype(np.uint8)])}.get(
            method, {})
    kwargs[arg] = value
    config = dict(rknn._config)
    result, raised, errors = _call(obj, method, kwargs)
    failure = None if method == "inference" else -1
    if face == "toolkit" and (method, arg) == ("load_onnx", "model") and isinstance(value, str) and value:
        assert isinstance(raised, ValueError) and "not exists" in str(raised)         # the toolkit's behaviour
    else:
        assert raised is None, f"{method}({arg}={value!r}) raised {raised!r}"
        assert result is failure, f"{method}({arg}={value!r}) returned {result!r}"
    assert len(errors) == 1 and errors[0].startswith(f"E {method}: "), errors
    assert _names_it(errors[0], arg, value), errors[0]
    assert rknn._config == config
    np.testing.assert_array_equal(rknn.inference(inputs=[x])[0], want)
    np.testing.assert_array_equal(lite.inference(inputs=[x.astype(np.uint8)])[0], want_lite)
