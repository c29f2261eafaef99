"""Every SoC through the CLI: the demo on each SoC `--profiles` lists (adapted from the profile's tables), `run`
choosing the path the SoC has, the SoC a `.npurt` file records as every command's default, and
`convert --dynamic-input` (several shapes per input) run at each shape."""
from __future__ import annotations

import ctypes
import dataclasses
import json
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import npurt
from helpers.cli import npurt as run_cli, ok_json
from helpers.models import dynamic_convnet
from npurt.cli import cmd_demo
from npurt.cli._rknn_flow import has_general_api
from npurt.cli.cmd_convert import parse_dynamic_input
from npurt.cli.main import main
from npurt.soc import PROFILES, get_profile


def _cli_json(capsys, *args) -> dict:
    """`npurt ARGS --json` in this process (no interpreter start per call; `helpers.cli` covers the subprocess):
    exit 0, no vendor error line, one JSON document."""
    capsys.readouterr()
    assert main([*map(str, args), "--json"]) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    assert "E RKNN" not in captured.err, captured.err
    return json.loads(captured.out)


def _cli_fails(capsys, *args, words: tuple[str, ...] = ()) -> None:
    """`npurt ARGS` in this process: exit 2 and one `npurt CMD: error:` line naming `words`."""
    capsys.readouterr()
    assert main(list(map(str, args))) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err, err
    for w in words:
        assert w in err, (w, err)


def _demo_json(capsys, *args: str) -> dict:
    return _cli_json(capsys, "demo", "--model", "small_convnet", "--runs", "1", *args)


def test_profiles_lists_exactly_the_socs_the_demo_runs():
    p = run_cli("demo", "--profiles")
    assert p.returncode == 0
    rknn_table = p.stdout.split("npurt QNN HTP profiles")[0]     # the HTP table after it: convert / report only
    listed = re.findall(r"^│ (\S+)\s+│", rknn_table, re.M)
    assert listed == list(PROFILES)


def test_demo_refuses_an_htp_soc_it_does_not_list(capsys):
    _cli_fails(capsys, "demo", "--soc", "sm8550", "--model", "small_convnet", words=("HTP SoC", "RKNN"))


@pytest.mark.parametrize("soc", list(PROFILES))
def test_demo_runs_on_every_soc_with_what_it_supports(capsys, soc):
    profile = get_profile(soc)
    d = _demo_json(capsys, "--soc", soc)
    assert d["soc"] == soc
    assert d["precision"] == ("int8" if "int8" in profile.c2 else "fp16")
    general = has_general_api(profile)
    assert d["paths"] == (["general", "zero_copy"] if general else ["zero_copy"])
    assert list(d["timing"]) == d["paths"] and d["timing"]["zero_copy"]["frames"] == 1
    assert any("zero copy only" in n for n in d["adapted"]) == (not general)
    assert any("no native int8" in n for n in d["adapted"]) == ("int8" not in profile.c2)
    if general:
        assert d["check"]["general_vs_zero_copy_max_abs_diff"] < 1e-4
    else:
        assert "general_vs_zero_copy_max_abs_diff" not in d["check"]
    assert d["check"]["cosine_vs_onnxruntime"] > 0.99


def test_demo_fp16_on_an_int8_only_soc_compiles_int8(capsys):
    d = _demo_json(capsys, "--soc", "rv1103b", "--fp16")
    assert d["precision"] == "int8" and "int8 (no native fp16 layout)" in d["adapted"]


def test_demo_text_says_in_one_line_what_it_adapted():
    p = run_cli("demo", "--soc", "rk2118", "--model", "small_convnet", "--runs", "1")
    assert p.returncode == 0, p.stderr
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("adapted to rk2118:")]
    assert len(lines) == 1 and "fp16 (no native int8 layout)" in lines[0] and "zero copy only" in lines[0]
    assert "outputs: zero copy only" in p.stdout and "E RKNN" not in p.stderr
    q = run_cli("demo", "--model", "small_convnet", "--runs", "1")
    assert q.returncode == 0 and "adapted to" not in q.stdout          # rk3588 has everything the demo calls


def test_adapt_without_dup_uses_a_second_rknn_init(capsys, monkeypatch):
    full = get_profile("rk3588")
    no_dup = dataclasses.replace(full, api=full.api - {"rknn_dup_context"})
    plan = cmd_demo.adapt(no_dup, "int8")
    assert plan.general and not plan.dup and plan.precision == "int8"
    assert plan.notes == ("a second rknn_init for the general path (no rknn_dup_context)",)
    assert cmd_demo.adapt(full, "int8") == cmd_demo.Adaptation("int8", True, True, ())
    called = []
    monkeypatch.setattr(cmd_demo, "rknn_profile", lambda soc: no_dup)
    real_dup = npurt.rknn.rknn_dup_context
    monkeypatch.setattr(npurt.rknn, "rknn_dup_context", lambda *a: called.append(a) or real_dup(*a))
    d = _demo_json(capsys)                       # the general path on its own context from a second rknn_init
    assert not called and d["paths"] == ["general", "zero_copy"] and d["adapted"] == list(plan.notes)
    assert d["check"]["general_vs_zero_copy_max_abs_diff"] < 1e-4


@pytest.fixture(scope="module")
def rv1106_npurt(tmp_path_factory):
    out = tmp_path_factory.mktemp("socs") / "rv.npurt"
    d = ok_json("convert", "small_convnet", "--soc", "rv1106", "-o", out)    # as a user does: a subprocess
    assert d["soc"] == "rv1106"
    return out


def test_commands_default_to_the_soc_the_npurt_file_records(rv1106_npurt, capsys):
    d = _cli_json(capsys, "run", rv1106_npurt)           # no --soc: rv1106, and its only path, zero copy
    assert d["soc"] == "rv1106" and d["path"] == "zero_copy"
    assert _cli_json(capsys, "report", rv1106_npurt)["soc"] == "rv1106"
    assert _demo_json(capsys, "--model", str(rv1106_npurt))["soc"] == "rv1106"
    _cli_fails(capsys, "mm", rv1106_npurt, words=("rv1106 has no NPU SRAM",))
    _cli_fails(capsys, "run", rv1106_npurt, "--soc", "rk3588", words=("PLATFORM_MISMATCH", "rv1106"))


def test_run_text_says_why_it_took_zero_copy(rv1106_npurt):
    p = run_cli("run", rv1106_npurt)
    assert p.returncode == 0, p.stderr
    assert "zero_copy path (rv1106 has no general API)" in p.stdout and "E RKNN" not in p.stderr


# --- convert --dynamic-input ------------------------------------------------------------------------------------
def test_parse_dynamic_input_one_option_per_input_or_toolkit_json():
    assert parse_dynamic_input(["1,3,224,224;1,3,160,160"]) == [[[1, 3, 224, 224]], [[1, 3, 160, 160]]]
    assert parse_dynamic_input(["1,3,8,8;1,3,4,4", "1,8; 1,6"]) == [[[1, 3, 8, 8], [1, 8]], [[1, 3, 4, 4], [1, 6]]]
    assert parse_dynamic_input(["[[[1,3,8,8]],[[1,3,4,4]]]"]) == [[[1, 3, 8, 8]], [[1, 3, 4, 4]]]
    for bad in (["1,3,x"], ["1,3,8,8;1,3,4,4", "1,8"], ["[[1,2"], [";"]):
        with pytest.raises(npurt.NpuError):
            parse_dynamic_input(bad)


@pytest.fixture
def two_input_add(tmp_path):
    """y = a + b, both inputs (1,4,8,8) in the ONNX file (static dims)."""
    graph = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"])], "add2",
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4, 8, 8]) for n in "ab"],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "add2.onnx"
    onnx.save(model, path)
    return path


def test_convert_dynamic_input_two_inputs_runs_at_each_shape(tmp_path, two_input_add, capsys):
    out = tmp_path / "add2.npurt"
    d = _cli_json(capsys, "convert", two_input_add, "-o", out, "--dynamic-input", "1,4,8,8;1,4,4,6",
                "--dynamic-input", "1,4,8,8;1,4,4,6")
    assert d["dynamic_input"] == [[[1, 4, 8, 8], [1, 4, 8, 8]], [[1, 4, 4, 6], [1, 4, 4, 6]]]
    rng = np.random.default_rng(7)
    for shape in ((1, 4, 4, 6), (1, 4, 8, 8)):
        a, b = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
        np.save(tmp_path / "a.npy", a)
        np.save(tmp_path / "b.npy", b)
        f16 = np.float16
        want = (a.astype(f16).astype(np.float32) + b.astype(f16).astype(np.float32)).astype(f16).astype(np.float32)
        for extra in ((), ("--zero-copy",)):
            r = _cli_json(capsys, "run", out, "--input", tmp_path / "a.npy", "--input", tmp_path / "b.npy",
                        "--output", tmp_path / "y.npz", *extra)
            assert r["input_shapes"] == [list(shape)] * 2 and r["precision"] == "fp16"
            y = np.load(tmp_path / "y.npz")["y"]
            assert y.shape == shape and np.array_equal(y, want)
    np.save(tmp_path / "a.npy", np.zeros((1, 4, 6, 6), np.float32))
    np.save(tmp_path / "b.npy", np.zeros((1, 4, 6, 6), np.float32))
    _cli_fails(capsys, "run", out, "--input", tmp_path / "a.npy", "--input", tmp_path / "b.npy",
               words=("not among the model's dynamic shapes",))


def test_convert_dynamic_input_int8_random_calibration_and_the_rknn_flow(tmp_path, capsys):
    out = tmp_path / "dyn8.npurt"
    d = _cli_json(capsys, "convert", "small_convnet", "-o", out, "--dynamic-input", "1,3,32,32;1,3,16,16",
                "--quantize", "random")
    assert d["precision"] == "int8" and d["dynamic_input"] == [[[1, 3, 32, 32]], [[1, 3, 16, 16]]]
    import npurt.rknn as r
    from npurt.cli._rknn_flow import board_soc
    data = out.read_bytes()
    ctx = r.rknn_context()
    with board_soc("rk3588"):
        assert r.rknn_init(ctx, data, len(data), 0, None) == r.RKNN_SUCC
        try:
            rng = r.rknn_input_range(index=0)
            assert r.rknn_query(ctx, r.RKNN_QUERY_INPUT_DYNAMIC_RANGE, rng, ctypes.sizeof(rng)) == r.RKNN_SUCC
            assert rng.shape_number == 2
            sets = sorted(tuple(rng.dyn_range[k][:rng.n_dims]) for k in range(2))
            assert sets == [(1, 16, 16, 3), (1, 32, 32, 3)]            # NHWC, as the vendor reports image inputs
        finally:
            r.rknn_destroy(ctx)


def test_convert_dynamic_input_errors(tmp_path, capsys):
    m = tmp_path / "m.npurt"
    base = ("convert", "small_convnet", "-o", m, "--dynamic-input")
    _cli_fails(capsys, *base, "1,3,32,x", words=("--dynamic-input",))
    _cli_fails(capsys, *base, "1,3,32,32;1,3,16", words=("rank 3",))
    _cli_fails(capsys, *base, "1,3,32,32", "--dynamic-input", "1,3,32,32", words=("2 shapes", "1 inputs"))
    _cli_fails(capsys, *base, "1,3,32,32;1,3,16,16", "--dynamic-input", "1,8", words=("same number of shapes",))
    assert not m.exists()


# --- convert --input-shape --------------------------------------------------------------------------------------
def test_convert_input_shape_fixes_dynamic_dims(tmp_path, capsys):
    path = tmp_path / "dyn.onnx"
    path.write_bytes(dynamic_convnet(with_metadata=False))
    for i, given in enumerate(("x=1,3,12,20", "1,3,12,20")):          # named, or the single input unnamed
        out = tmp_path / f"fixed{i}.npurt"
        d = _cli_json(capsys, "convert", path, "-o", out, "--input-shape", given)
        assert d["dynamic_input"] is None
        assert npurt.load_compiled(out).graph.tensors["y"].shape == (1, 4, 12, 20)
    for bad, words in ((["x=1,3,a,b"], ("comma-separated",)), (["x=1,3,0,4"], ("> 0",)),
                       (["x=1,3,4,4", "x=1,3,4,4"], ("twice",))):
        _cli_fails(capsys, "convert", path, "-o", tmp_path / "bad.npurt",
                   *[a for b in bad for a in ("--input-shape", b)], words=words)
    _cli_fails(capsys, "convert", path, "-o", tmp_path / "bad.npurt", "--input-shape", "1,3,4,4",
               "--dynamic-input", "1,3,4,4", words=("exclude",))
    assert not (tmp_path / "bad.npurt").exists()
