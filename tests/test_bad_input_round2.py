"""Bad input, second round: each refused in one line that says what the input is, in the vendor's terms where a
mirror is called (exit 2 from the CLI; the RKNN status and an `E RKNN:` line from the mirror)."""
from __future__ import annotations

import os
import stat
import subprocess
import sys

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


# --- rknn_set_io_mem: the attr must be the tensor's --------------------------------------------------------------

def _edited(attr, field: str, value):
    from npurt.rknn import rknn_tensor_attr
    bad = rknn_tensor_attr.from_buffer_copy(attr)
    if field.startswith("dims"):
        bad.dims[int(field[5:-1])] = value
    else:
        setattr(bad, field, value)
    return bad


@pytest.mark.parametrize("field,value,words", [
    ("n_dims", 100, ("attr.n_dims 100", "1 to 16")),
    ("n_dims", 0, ("attr.n_dims 0",)),
    ("dims[1]", 0, ("attr.dims [1, 0, 10, 3]", "the tensor's dims are")),
    ("dims[2]", 2 ** 32 - 1, (f"attr.dims [1, 8, {2 ** 32 - 1}, 3]",)),
    ("size_with_stride", 2 ** 32 - 1, (f"attr.size_with_stride {2 ** 32 - 1}", "the tensor's is 768")),
    ("w_stride", 1, ("attr.w_stride 1", "less than the width 10")),
])
def test_set_io_mem_refuses_an_attr_that_is_not_the_tensors(capsys, field, value, words):
    from npurt.rknn import (RKNN_ERR_PARAM_INVALID, RKNN_QUERY_NATIVE_INPUT_ATTR, RKNN_SUCC, rknn_create_mem,
                            rknn_destroy, rknn_destroy_mem, rknn_set_io_mem, rknn_tensor_attr)
    from npurt.rknn.api import context_of
    from helpers.rknn import init, query
    ctx = init()
    ia = rknn_tensor_attr(index=0)
    query(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR, ia)
    assert [ia.dims[i] for i in range(4)] == [1, 8, 10, 3] and ia.size_with_stride == 768  # NHWC, w_stride 16
    mem = rknn_create_mem(ctx, ia.size_with_stride)
    before = state()
    capsys.readouterr()
    assert rknn_set_io_mem(ctx, mem, _edited(ia, field, value)) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "rknn_set_io_mem", *words)
    assert state() == before and context_of(ctx).io_path is None                        # nothing bound
    assert rknn_set_io_mem(ctx, mem, ia) == RKNN_SUCC                                   # the queried attr binds
    wide = _edited(ia, "w_stride", 10)                                                  # == width: accepted
    assert rknn_set_io_mem(ctx, mem, wide) == RKNN_SUCC
    rknn_destroy_mem(ctx, mem)
    rknn_destroy(ctx)


# --- integers are integers: a float is refused, never truncated --------------------------------------------------

@pytest.mark.parametrize("call,words", [
    (lambda T, x: T.nchw_to_nc1hwc2(x, 8.5), "C2 must be an integer, got 8.5"),
    (lambda T, x: T.nchw_to_nc1hwc2(x, 8.0), "C2 must be an integer, got 8.0"),      # integral: refused the same
    (lambda T, x: T.nchw_to_nc1hwc2(x, 8, c1=1.0), "C1 must be an integer"),
    (lambda T, x: T.nchw_to_nc1hwc2(x, 8, w_stride=4.5), "w_stride must be an integer"),
    (lambda T, x: T.native_shape((1, 3, 2, 4.0), 8), "a dimension must be an integer"),
    (lambda T, x: T.nc1hwc2_to_nchw(np.zeros((1, 1, 2, 4, 8), np.float32), 3, width=2.5), "width must be an integer"),
    (lambda T, x: T.unpack_int4(np.zeros(4, np.uint8), 5.5), "n_elems must be an integer, got 5.5"),
    (lambda T, x: T.size_with_stride((1, 3, 2, 4), "NCHW", "float32", w_stride=8.0), "w_stride must be an integer"),
])
def test_tensor_functions_refuse_non_integers(call, words):
    import npurt.tensor as T
    from npurt.errors import ErrorCode, NpuError
    x = np.arange(24, dtype=np.float32).reshape(1, 3, 2, 4)
    with pytest.raises(NpuError) as info:
        call(T, x)
    assert info.value.code == ErrorCode.INVALID_ARGUMENT and words in info.value.message
    assert T.nchw_to_nc1hwc2(x, np.int64(8)).shape == (1, 1, 2, 4, 8)             # numpy integers are integers
    assert T.unpack_int4(np.zeros(4, np.uint8), np.int32(5)).shape == (5,)


def test_mem_view_and_mem_sync_refuse_non_integers(capsys):
    from npurt.errors import NpuError
    from npurt.rknn import (RKNN_ERR_PARAM_INVALID, RKNN_MEMORY_SYNC_TO_DEVICE, RKNN_SUCC, mem_view, rknn_create_mem,
                            rknn_destroy, rknn_destroy_mem, rknn_mem_sync)
    from helpers.rknn import init
    ctx = init()
    mem = rknn_create_mem(ctx, 64)
    for kwargs, words in ((dict(count=1.5), "count must be an integer, got 1.5"),
                          (dict(count=2.0), "count must be an integer, got 2.0"),
                          (dict(offset=4.0), "offset must be an integer")):
        with pytest.raises(NpuError) as info:
            mem_view(mem, np.float32, **kwargs)
        assert words in info.value.message
    assert mem_view(mem, np.float32, count=np.int64(2), offset=4).shape == (2,)
    capsys.readouterr()
    assert rknn_mem_sync(ctx, mem, 1.0) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "rknn_mem_sync", "sync mode must be an integer, got 1.0")
    assert rknn_mem_sync(ctx, mem, RKNN_MEMORY_SYNC_TO_DEVICE) == RKNN_SUCC
    rknn_destroy_mem(ctx, mem)
    rknn_destroy(ctx)


# --- newcomer papercuts -----------------------------------------------------------------------------------------

def test_help_describes_the_tool_with_one_line_per_command():
    p = subprocess.run([sys.executable, "-m", "npurt.cli.main", "--help"], capture_output=True, text=True,
                       env={**os.environ, "COLUMNS": "80"}, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "Layers" not in p.stdout and "imports only" not in p.stdout            # no developer notes
    assert "without the board" in p.stdout and "npurt demo" in p.stdout
    from npurt.cli.main import _command_modules
    commands = [m.__name__.rsplit("cmd_", 1)[1] for m in _command_modules()]
    lines = p.stdout.splitlines()
    for cmd in commands:
        at = [k for k, line in enumerate(lines) if line.startswith(f"    {cmd} ")]
        assert len(at) == 1, (cmd, p.stdout)
        follows = lines[at[0] + 1]
        assert not follows.startswith(" " * 10), (cmd, follows)                     # its help is one line
    assert max(map(len, lines)) <= 80


def test_capi_libraries_all_have_the_linkers_mode():
    from helpers.capi import prefix
    umask = os.umask(0)
    os.umask(umask)
    modes = {lib.name: stat.S_IMODE(lib.stat().st_mode) for lib in (prefix() / "lib").glob("*.so")}
    assert {"librknnrt.so", "libQnnHtp.so", "libcdsprpc.so"} <= set(modes), modes
    assert set(modes.values()) == {0o777 & ~umask}, modes                            # 0755 under umask 022


@pytest.mark.parametrize("soc,native,padding", [
    ("rv1106", "(1, 2, 4, 4, 16)", "lanes 5..15 of block C1=1"),
    ("rk2118", "(1, 3, 4, 4, 4)", "lanes 1..3 of block C1=2"),         # no int8 on rk2118: its float16 C2
])
def test_demo_walk_through_uses_the_soc_asked_for(soc, native, padding):
    p = npurt("demo", "--soc", soc, "--model", "small_convnet", "--runs", "1")
    assert p.returncode == 0, p.stderr
    text = " ".join(p.stdout.split())                                  # rich wraps long lines
    assert f"on {soc} (C2 = " in text and f"native {native}" in text and padding in text
    assert "rk3568" not in text and "back to NCHW: equal" in text
    q = npurt("demo", "--profiles", "--soc", soc)
    assert q.returncode == 0 and f"native {native}" in " ".join(q.stdout.split())


@pytest.mark.parametrize("command", [["accuracy", "--quantize", "random"], ["run"], ["report"], ["perf"]])
def test_every_compiling_command_takes_input_shape(tmp_path, command):
    """`--input-shape` fixes a dynamic dimension for every command that compiles an ONNX model (not only convert);
    without it the one line says which option to give."""
    from npurt.model.zoo import small_convnet
    model = small_convnet()
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
    path = tmp_path / "dyn.onnx"
    path.write_bytes(model.SerializeToString())
    p = npurt(command[0], str(path), *command[1:])
    assert p.returncode == 2 and "--input-shape" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    p = npurt(command[0], str(path), *command[1:], "--input-shape", "1,3,32,32")
    assert p.returncode == 0, p.stderr
