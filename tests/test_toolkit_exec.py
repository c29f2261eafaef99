"""`npurt exec`: scripts written the way Rockchip's examples are (tests/toolkit_scripts/) run unchanged with
`rknn.api` / `rknnlite.api` resolved to npurt's classes for that process only; the model a convert script exports
runs in a C program against npurt's librknnrt.so and in RKNNLite with equal outputs."""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers.capi import compile_c, prefix, run_c
from helpers.cli import npurt
from helpers.models import convnet, reference
from npurt.api.accuracy import cosine

SCRIPTS = Path(__file__).resolve().parent / "toolkit_scripts"


@pytest.fixture
def workdir(tmp_path) -> Path:
    """The scripts, conv.onnx and a dataset.txt of three JPEG images, as a model zoo example folder has them."""
    from PIL import Image
    for script in SCRIPTS.glob("*.py"):
        shutil.copy(script, tmp_path / script.name)
    (tmp_path / "conv.onnx").write_bytes(convnet())
    rng = np.random.default_rng(21)
    for k in range(3):
        Image.fromarray(rng.integers(0, 256, (8, 10, 3), dtype=np.uint8)).save(tmp_path / f"img{k}.jpg", quality=95)
    (tmp_path / "dataset.txt").write_text("img0.jpg\nimg1.jpg\nimg2.jpg\n")
    np.save(tmp_path / "frame.npy", rng.integers(0, 256, (8, 10, 3), dtype=np.uint8))
    return tmp_path


def _exec(workdir: Path, *args: object) -> subprocess.CompletedProcess:
    return npurt("exec", *map(str, args), cwd=workdir, timeout=300)


def test_no_package_named_rknn_is_installed():
    assert importlib.util.find_spec("rknn") is None and importlib.util.find_spec("rknnlite") is None
    p = subprocess.run([sys.executable, "-c", "import rknn.api"], capture_output=True, text=True)
    assert p.returncode == 1 and "ModuleNotFoundError" in p.stderr


def test_the_hook_maps_the_vendor_names_in_this_process_only():
    from npurt.rknn.lite import RKNNLite
    from npurt.toolkit import RKNN, vendor_names
    vendor_names.install()
    try:
        from rknn.api import RKNN as VendorRKNN
        from rknn.api.custom_op import get_node_attr
        from rknnlite.api import RKNNLite as VendorLite
        assert VendorRKNN is RKNN and VendorLite is RKNNLite and callable(get_node_attr)
    finally:
        vendor_names.uninstall()
    assert "rknn.api" not in sys.modules and importlib.util.find_spec("rknn") is None


@pytest.mark.timeout(600)
def test_convert_script_then_c_program_rknnlite_and_the_zoo_demo_agree(workdir):
    p = _exec(workdir, "convert.py", "conv.onnx", "rk3588", "i8", "out.rknn")
    assert p.returncode == 0, p.stderr
    assert "--> Building model" in p.stdout and "Build model failed" not in p.stdout
    model = workdir / "out.rknn"
    assert model.read_bytes()[:8] == b"NPURTMDL"
    frame = np.load(workdir / "frame.npy")
    frame.tofile(workdir / "img.bin")
    run_c(compile_c("general_flow", prefix()), model, workdir / "img.bin", workdir / "c_out.bin")
    c_out = np.fromfile(workdir / "c_out.bin", dtype=np.float32)
    for script in ("run_lite.py", "run_rknn.py"):
        p = _exec(workdir, script, "out.rknn", "frame.npy", f"{script}.npy")
        assert p.returncode == 0, p.stderr
        np.testing.assert_array_equal(np.load(workdir / f"{script}.npy").reshape(-1), c_out)
    assert "predicted NPU time (npurt timing model; rk3588" in p.stdout and "Memory Profile Info Dump" in p.stdout
    from npurt.rknn.lite import RKNNLite
    lite = RKNNLite()
    assert lite.load_rknn(str(model)) == 0 and lite.init_runtime() == 0
    np.testing.assert_array_equal(lite.inference(inputs=[frame])[0].reshape(-1), c_out)
    lite.release()
    want = reference(convnet(), (frame.astype(np.float32) / 255).transpose(2, 0, 1)[None])[0]
    assert cosine(c_out, want) > 0.99


def test_convert_script_usage_and_bad_dtype_exit_1(workdir):
    p = _exec(workdir, "convert.py", "conv.onnx")
    assert p.returncode == 1 and p.stdout.startswith("Usage: python3 convert.py")
    p = _exec(workdir, "convert.py", "conv.onnx", "rk3588", "i4")
    assert p.returncode == 1 and "ERROR: Invalid model type: i4" in p.stdout
    p = _exec(workdir, "convert.py", "conv.onnx", "rk9999", "fp", "x.rknn")     # config's -1 is not checked
    assert p.returncode == 0 and "E config: target_platform 'rk9999' is not supported" in p.stderr
    p = _exec(workdir, "convert.py", "conv.onnx", "rk3588", "fp")               # ../model/ does not exist
    assert p.returncode == 255 and "Export rknn model failed!" in p.stdout and "E export_rknn:" in p.stderr
    assert not any(workdir.parent.glob("model/*.rknn"))


def test_fp16_convert_and_the_accuracy_and_hybrid_script(workdir):
    p = _exec(workdir, "convert.py", "conv.onnx", "rk3566", "fp", "fp.rknn")
    assert p.returncode == 0, p.stderr
    from npurt.model.compiled import read_compiled
    cm = read_compiled(workdir / "fp.rknn")
    assert (cm.soc, cm.precision) == ("rk3566", "fp16")
    p = _exec(workdir, "analyse.py", "conv.onnx", "dataset.txt", "img0.jpg")
    assert p.returncode == 0, p.stderr
    assert "golden values 320" in p.stdout
    assert {f.name for f in (workdir / "snapshot").iterdir()} >= {"error_analysis.txt", "map_name_to_file.txt",
                                                                   "golden", "simulator"}
    assert all((workdir / f).is_file() for f in ("conv.model", "conv.data", "conv.quantization.cfg", "hybrid.rknn"))


def test_a_script_error_prints_its_traceback_and_a_missing_script_is_one_line(workdir):
    (workdir / "boom.py").write_text("from rknn.api import RKNN\nRKNN().load_onnx(model='none.onnx')\n")
    p = _exec(workdir, "boom.py")
    assert p.returncode == 1 and "Traceback" in p.stderr and "ValueError: Model file none.onnx not exists!" in p.stderr
    p = _exec(workdir, "nothere.py")
    assert p.returncode == 2 and p.stderr.strip().startswith("npurt exec: error:") and "nothere.py" in p.stderr
    (workdir / "argv.py").write_text("import sys\nprint(__name__, sys.argv)\n")
    p = _exec(workdir, "argv.py", "-x", "--flag", "v")
    assert p.stdout.strip() == "__main__ ['argv.py', '-x', '--flag', 'v']"
