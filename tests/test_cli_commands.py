"""CLI end to end (subprocess): every command's --json output parsed, its text output, its errors (exit 2 + message)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import npurt
from helpers.cli import fails, npurt as run_cli, ok_json

COMMANDS = ("accuracy", "bench", "capi", "convert", "demo", "mm", "plan", "report", "run")


def test_help_lists_every_command():
    p = run_cli("--help")
    assert p.returncode == 0
    for cmd in COMMANDS:
        assert cmd in p.stdout


def test_no_command_prints_help_and_fails():
    p = run_cli()
    assert p.returncode == 1 and "usage" in p.stdout


@pytest.fixture(scope="module")
def small_npurt(tmp_path_factory):
    """small_convnet compiled int8 for rk3588 through `npurt convert --json`."""
    out = tmp_path_factory.mktemp("cli") / "small.npurt"
    d = ok_json("convert", "small_convnet", "-o", out, "--quantize", "random", "--mean", "0,0,0", "--std", "1,1,1")
    assert d["soc"] == "rk3588" and d["precision"] == "int8" and d["file_size"] == out.stat().st_size
    assert d["weight_size"] > 0 and d["internal_size"] > 0
    assert npurt.load_compiled(out).soc == "rk3588"
    return out


def test_convert_errors(tmp_path, small_npurt):
    fails("convert", tmp_path / "missing.onnx", "-o", tmp_path / "m.npurt", words=("not found",))
    fails("convert", "no_such_zoo_model", "-o", tmp_path / "m.npurt", words=("unknown model",))
    fails("convert", small_npurt, "-o", tmp_path / "m.npurt", words=("already",))
    fails("convert", "small_convnet", "-o", tmp_path / "m.npurt", "--mean", "a,b", words=("--mean",))
    fails("convert", "small_convnet", "-o", tmp_path / "m.npurt", "--soc", "nosuchsoc")
    fails("convert", "small_convnet", "-o", tmp_path / "m.npurt", "--quantize", tmp_path / "nope.txt",
          words=("dataset",))
    p = run_cli("convert", "small_convnet")                       # -o is required: argparse's usage error
    assert p.returncode == 2 and "-o" in p.stderr


def test_run_general_and_zero_copy_agree(tmp_path, small_npurt):
    x = np.random.default_rng(0).random((1, 3, 32, 32), dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    g = ok_json("run", small_npurt, "--input", tmp_path / "x.npy", "--output", tmp_path / "g.npz")
    z = ok_json("run", small_npurt, "--input", tmp_path / "x.npy", "--zero-copy", "--output", tmp_path / "z.npz")
    assert g["path"] == "general" and z["path"] == "zero_copy" and not g["random_inputs"]
    yg, yz = np.load(tmp_path / "g.npz"), np.load(tmp_path / "z.npz")
    assert list(yg) == list(yz) == [o["name"] for o in g["outputs"]]
    for k in yg:
        np.testing.assert_allclose(yg[k].reshape(-1), yz[k].reshape(-1), atol=1e-5)
    assert abs(sum(yg[k].sum() for k in yg) - 1.0) < 0.05         # softmax probabilities


def test_run_text_output_and_sram():
    p = run_cli("run", "small_convnet", "--sram")
    assert p.returncode == 0, p.stderr
    assert "random inputs" in p.stdout and "top-5" in p.stdout and "\x1b[" not in p.stdout


def test_run_errors(tmp_path, small_npurt):
    np.save(tmp_path / "bad.npy", np.zeros((1, 3, 8, 8), np.float32))
    fails("run", small_npurt, "--input", tmp_path / "bad.npy", words=("shape",))
    fails("run", small_npurt, "--input", tmp_path / "bad.npy", "--input", tmp_path / "bad.npy", words=("1 input",))
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    fails("run", small_npurt, "--input", tmp_path / "junk.npy", words=("junk.npy is not a .npy file",))
    fails("run", small_npurt, "--soc", "rk3576", words=("PLATFORM_MISMATCH", "rk3588"))
    fails("run", tmp_path / "none.onnx", words=("not found",))
    (tmp_path / "broken.onnx").write_bytes(b"\x00garbage")
    fails("run", tmp_path / "broken.onnx")


def test_report_json_is_the_seed_table(tmp_path):
    png = tmp_path / "plan.png"
    d = ok_json("report", "mobilenet_v1", "--quantize", "random", "--plot", png)
    for key in ("total_weight_size", "total_internal_size", "internal_rw", "weight_rw", "sram_hit_rw", "sram_size",
                "tensors"):
        assert key in d
    assert d["sram_size"] == 956 * 1024 and d["precision"] == "int8"
    rows = d["tensors"]
    assert len(rows) == 31 and rows[0]["name"] == "input0" and rows[-1]["name"] == "output57"
    for r in rows:
        assert set(r) >= {"id", "user", "name", "dtype", "shape", "native_shape", "start", "end", "size", "sram_hit"}
    internal = [r for r in rows if r["sram_hit"] is not None]
    assert rows[0]["sram_hit"] is None and rows[-1]["sram_hit"] is None and len(internal) == 29
    assert rows[1]["user"] == "ConvRelu" and rows[1]["native_shape"] == [1, 2, 112, 112, 16]
    assert d["sram_hit_rw"] == 2 * sum(r["sram_hit"] for r in internal)
    assert d["total_internal_size"] == max(r["end"] for r in internal) and min(r["start"] for r in internal) == 0
    for r in internal:                     # hit = the tensor's bytes below the SRAM size, start/end arena-relative
        assert r["sram_hit"] == max(0, min(r["end"], d["sram_size"]) - r["start"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    sram_md = (Path(__file__).resolve().parents[1] / "docs" / "sram.md").read_text()   # its numbers are this run's
    for key in ("total_internal_size", "sram_size", "sram_hit_rw", "internal_rw"):
        assert f"{d[key]:,}" in sram_md, (key, d[key])
    assert f"{d['sram_hit_rw'] * 30 / 2 ** 20:.0f} MiB/s" in sram_md


def test_report_text_and_sram_override():
    p = run_cli("report", "mobilenet_v1", "--sram", "524288")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "Total allocated Internal SRAM Size: 524288" in out and "| SramHit" in out
    assert "Predict SRAM Hit RW Amount:" in out and "Total Weight Memory Size:" in out
    assert "User is the op that consumes the tensor" in out.splitlines()[0]    # the vendor column, explained
    d = ok_json("report", "mobilenet_v1", "--sram", "0")
    assert d["sram_hit_rw"] == 0 and all(r["sram_hit"] in (0, None) for r in d["tensors"])
    fails("report", "mobilenet_v1", "--sram", "-1", words=("--sram",))


def test_mm_json_text_and_plot(tmp_path):
    png = tmp_path / "mm.png"
    d = ok_json("mm", "small_convnet", "mobilenet_v1", "--plot", png)
    first, second = d["contexts"]
    assert first["sram_held"] == first["internal_size"] and second["sram_held"] == d["sram_total"] - first["sram_held"]
    assert d["dump"].startswith('SRAM bitmap: "*" - used, "." - free (1bit = 4KB)')
    assert "SRAM total size: 978944, used: 978944, free: 0" in d["dump"]
    assert "used: 0, free: 978944" in d["empty_dump"]
    assert png.read_bytes()[:4] == b"\x89PNG"
    p = run_cli("mm", "small_convnet")
    assert p.returncode == 0 and "[000] [**********" in p.stdout and "cat /sys/kernel/debug/rknpu/mm" in p.stdout
    fails("mm", "small_convnet", "--soc", "rk3568", words=("no NPU SRAM",))


def test_bench_quick_only_and_errors():
    d = ok_json("bench", "--quick", "--only", "layout")
    assert d["rows"] and all(r["bench"] == "layout" and r["ratio"] > 0 for r in d["rows"])
    fails("bench", "--only", "nosuchbench", words=("unknown benchmark", "layout"))


def test_bench_without_a_bench_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("NPURT_BENCH_DIR", str(tmp_path))
    fails("bench", "--quick", words=("no bench/ folder", "NPURT_BENCH_DIR"))


def test_bench_keeps_going_when_one_benchmark_fails(tmp_path, monkeypatch):
    (tmp_path / "a_broken.py").write_text("def run(quick=False):\n    raise RuntimeError('boom')\n")
    (tmp_path / "b_fine.py").write_text("def run(quick=False):\n    return [{'name': 'x', 'ratio': 0.5}]\n")
    monkeypatch.setenv("NPURT_BENCH_DIR", str(tmp_path))
    p = run_cli("bench", "--quick", "--json")
    assert p.returncode == 1 and "a_broken.py failed: RuntimeError: boom" in p.stderr
    import json
    d = json.loads(p.stdout)
    assert d["rows"] == [{"bench": "b_fine", "name": "x", "ratio": 0.5}] and "a_broken" in d["errors"]


def test_every_bench_runs_as_npurt_bench_calls_it():
    """Each bench/NAME.py imports by path and its run() takes `quick` alone, as `npurt bench` calls it."""
    import inspect
    from npurt.cli.cmd_bench import available, bench_dir, load
    folder = bench_dir()
    for name in available(folder):
        inspect.signature(load(folder, name).run).bind(quick=True)


def test_bench_accuracy_quick():
    d = ok_json("bench", "--quick", "--only", "accuracy", timeout=600)
    row, = d["rows"]
    assert row["bench"] == "accuracy" and row["ratio"] > 0 and row["inputs"] == 2 and row["tensors"] > 20
