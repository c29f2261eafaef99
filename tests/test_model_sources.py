"""One resolver of model names and datasets (`npurt.model.sources`) and one refusal of vendor `.rknn` files
(`npurt.model.file_format.refuse_vendor_model`), used alike by the CLI, `npurt.Session`, `RKNNLite`, `rknn_init`
and `npurt.compile`."""
from __future__ import annotations

import numpy as np
import pytest

import npurt
from helpers.cli import npurt as run_cli
from npurt import ErrorCode, NpuError
from npurt.model import file_format, sources, zoo

VENDOR_LINE = "is a vendor-compiled .rknn model, which only runs on the board: pass the ONNX model it was built " \
              "from, or an .npurt compiled from it (npurt convert model.onnx -o model.npurt)"


@pytest.fixture
def vendor_rknn(tmp_path):
    path = tmp_path / "vendor.rknn"
    path.write_bytes(b"RKNN" + bytes(252))          # the vendor toolkit's file magic, as test_capi_bad_input makes it
    return path


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private model cache: zoo models and random sets are generated here, not in the shared one."""
    monkeypatch.setenv("NPURT_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("argv", [
    ("run", "{m}"), ("report", "{m}"), ("convert", "{m}", "-o", "{out}"), ("accuracy", "{m}", "--quantize", "random"),
    ("mm", "{m}"), ("demo", "--model", "{m}", "--json"),
])
def test_every_command_refuses_a_vendor_rknn_with_one_line(argv, vendor_rknn, tmp_path):
    out = tmp_path / "out.npurt"
    p = run_cli(*(a.format(m=vendor_rknn, out=out) for a in argv))
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert lines == [f"npurt {argv[0]}: error: INVALID_MODEL: {vendor_rknn} {VENDOR_LINE}"], p.stderr
    assert not out.exists()


def test_python_entry_points_refuse_a_vendor_rknn_with_the_same_words(vendor_rknn, capsys):
    data = vendor_rknn.read_bytes()
    for model in (str(vendor_rknn), vendor_rknn, data):
        with pytest.raises(NpuError) as e:
            npurt.Session(model)
        assert e.value.code is ErrorCode.INVALID_MODEL and VENDOR_LINE in e.value.message
    for model in (str(vendor_rknn), data):
        with pytest.raises(NpuError) as e:
            npurt.compile(model, progress=False)
        assert e.value.code is ErrorCode.INVALID_MODEL and VENDOR_LINE in e.value.message
    from npurt.rknn.lite import RKNNLite
    lite = RKNNLite()
    assert lite.load_rknn(str(vendor_rknn)) == -1
    assert f"E load_rknn: {vendor_rknn} {VENDOR_LINE}" in capsys.readouterr().err
    from npurt.rknn import RKNN_ERR_MODEL_INVALID, rknn_context, rknn_init
    ctx = rknn_context()
    assert rknn_init(ctx, str(vendor_rknn), 0, 0, None) == RKNN_ERR_MODEL_INVALID
    assert rknn_init(ctx, data, len(data), 0, None) == RKNN_ERR_MODEL_INVALID
    assert ctx.value == 0


def test_a_file_that_only_looks_like_the_magic_later_is_not_refused(tmp_path):
    path = tmp_path / "x.onnx"
    path.write_bytes(b"\x00RKNN")
    assert not file_format.is_vendor_model(path)


def test_zoo_names_resolve_to_the_cached_model(cache):
    path = sources.resolve_model("small_convnet")
    assert path == zoo.cached(zoo.small_convnet) and path.parent == cache
    assert sources.resolve_model("small_convnet.onnx") == path
    for bad, words in (("no_such_zoo_model", "unknown model"), ("missing/x.onnx", "model file not found")):
        with pytest.raises(NpuError) as e:
            sources.resolve_model(bad)
        assert e.value.code is ErrorCode.INVALID_MODEL and words in e.value.message


def test_session_takes_zoo_names_and_random_calibration_as_the_cli_does(cache, tmp_path):
    out = tmp_path / "cli.npurt"
    p = run_cli("convert", "small_convnet", "--quantize", "random", "-o", out)
    assert p.returncode == 0, p.stderr
    cli = npurt.load_compiled(out)
    with npurt.Session("small_convnet", quantize="random") as s:
        mine = s.context.compiled
        assert mine.precision == cli.precision == "int8"
        assert [(a.scale, a.zp) for a in mine.native_output_attrs] == \
            [(a.scale, a.zp) for a in cli.native_output_attrs]
        assert np.array_equal(mine.weight_blob, cli.weight_blob)
        x = sources.random_inputs(sources.resolve_model("small_convnet"), seed=3)[0]
        assert np.isfinite(s.run(x)[0]).all()
    assert len(list((cache / "calib").glob("*/dataset.txt"))) == 1     # the CLI's random set, reused


def test_random_calibration_of_an_in_memory_model(cache):
    model = zoo.small_convnet()
    first = sources.resolve_dataset("random", model)
    assert sources.resolve_dataset("random", model.SerializeToString()) == first       # keyed by content
    with npurt.Session(model, quantize="random") as s:
        assert s.context.compiled.precision == "int8"
    with pytest.raises(NpuError) as e:
        npurt.Session(model, quantize=str(cache / "missing.txt"))
    assert e.value.code is ErrorCode.INVALID_ARGUMENT and "calibration dataset not found" in e.value.message
