"""Bad input, second round: each refused in one line that says what the input is, in the vendor's terms where a
mirror is called (exit 2 from the CLI; the RKNN status and an `E RKNN:` line from the mirror)."""
from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from npurt.rknn import RKNN_ERR_MODEL_INVALID, rknn_context, rknn_init
from helpers.cli import fails, npurt
from helpers.rknn import errline, state


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def _png(path) -> None:
    """A small real PNG picture (what a user may pass by mistake where a model goes)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.imsave(path, np.random.default_rng(0).random((8, 8, 3)))


# --- CLI --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_exec_names_what_the_script_is(tmp_path, kind):
    script = tmp_path / "s.py"
    if kind == "directory":
        script.mkdir()
    else:
        os.mkfifo(script)
    line = _one_line(fails("exec", script))
    assert f"script {script} is a {'directory' if kind == 'directory' else 'FIFO'}, not a regular file" in line
    assert "No such file" not in line


@pytest.mark.parametrize("command", ["run", "convert"])
def test_a_picture_given_as_the_model_is_named_as_no_model(tmp_path, command):
    pic = tmp_path / "cat.png"
    _png(pic)
    extra = ("-o", tmp_path / "m.npurt") if command == "convert" else ()
    line = _one_line(fails(command, pic, *extra))
    assert "cat.png is neither an npurt compiled model nor ONNX" in line and "QNN context binary" in line
    assert "Wire format" not in line and "protobuf" not in line
    assert not (tmp_path / "m.npurt").exists()


def test_bytes_protobuf_parses_without_error_are_no_model_either():
    from npurt.errors import NpuError
    from npurt.model.onnx_import import load_onnx
    with pytest.raises(NpuError) as info:            # these parse as an empty ModelProto: still not a model
        load_onnx(b"\x89PNG\r\n\x1a\n0000000000000000")
    assert "neither an npurt compiled model nor ONNX" in str(info.value)


def _dynamic_conv(path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "h", "w"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 3, 3, 3],
                           np.random.default_rng(1).standard_normal(108).astype(np.float32))
    conv = helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])
    model = helper.make_model(helper.make_graph([conv], "g", [x], [y], [w]),
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)


def test_convert_random_calibration_uses_the_given_input_shape(tmp_path, monkeypatch):
    monkeypatch.setenv("NPURT_CACHE", str(tmp_path / "cache"))
    model, out = tmp_path / "dyn.onnx", tmp_path / "dyn.npurt"
    _dynamic_conv(model)
    fails("convert", model, "--quantize", "random", "-o", out, words=("dynamic shape", "--input-shape"))
    p = npurt("convert", model, "--input-shape", "x=1,3,8,16", "--quantize", "random", "-o", out)
    assert p.returncode == 0, p.stderr
    import npurt as npu
    compiled = npu.load_compiled(out)
    assert compiled.precision == "int8" and tuple(compiled.storage["x"].shape) == (1, 3, 8, 16)
    samples = sorted((tmp_path / "cache" / "calib").glob("*/sample0_in0.npy"))
    assert [np.load(s).shape for s in samples] == [(1, 3, 8, 16)]


def test_run_with_an_nhwc_array_for_an_nchw_input_says_transpose(tmp_path):
    nhwc, other = tmp_path / "nhwc.npy", tmp_path / "other.npy"
    np.save(nhwc, np.zeros((1, 32, 32, 3), np.float32))
    np.save(other, np.zeros((1, 3, 16, 16), np.float32))
    line = _one_line(fails("run", "small_convnet", "--input", nhwc))
    assert "shape (1, 32, 32, 3) != input 'input' shape (1, 3, 32, 32)" in line and "NHWC" in line
    assert "transpose(0, 3, 1, 2)" in line
    line = _one_line(fails("run", "small_convnet", "--input", other))
    assert "NHWC" not in line and "transpose" not in line             # only when the transposed shape matches


def test_plan_on_a_csv_that_is_not_utf8_names_the_file(tmp_path):
    csv = tmp_path / "latin1.csv"
    csv.write_bytes("id,lower,upper,size\ncafé,0,1,4\n".encode("latin-1"))
    line = _one_line(fails("plan", csv))
    assert line == f"npurt plan: error: INVALID_ARGUMENT: instance {csv} is not a UTF-8 text CSV (byte 23 is 0xe9)"


# --- rknn_init ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind,words", [
    ("directory", ("is a directory, not a regular file",)),
    ("device", ("/dev/null is a character device, not a regular file",)),
    ("empty", ("is empty (0 bytes)",)),
])
def test_rknn_init_says_what_the_model_path_is(tmp_path, capsys, kind, words):
    path = {"directory": tmp_path, "device": "/dev/null", "empty": tmp_path / "empty.onnx"}[kind]
    if kind == "empty":
        path.write_bytes(b"")
    before = state()
    ctx = rknn_context()
    assert rknn_init(ctx, str(path), 0, 0, None) == RKNN_ERR_MODEL_INVALID
    assert ctx.value == 0 and state() == before
    line = errline(capsys, "rknn_init", *words)
    assert "does not exist" not in line
