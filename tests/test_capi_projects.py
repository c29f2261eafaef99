"""Build systems find npurt's prefix: a CMake project with find_package(rknnrt) and a Makefile with pkg-config
(tests/c/project) both build against it and run."""
from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from helpers.capi import C_DIR, prefix, run_c
from helpers.models import convnet


def _tool(name: str) -> str:
    path = shutil.which(name)
    assert path, f"{name} is needed to build the example projects"
    return path


@pytest.fixture
def project(tmp_path):
    shutil.copytree(C_DIR / "project", tmp_path / "project")
    (tmp_path / "conv.onnx").write_bytes(convnet())
    return tmp_path


def _check_run(exe, model):
    proc = run_c(exe, model)
    assert "OK project" in proc.stdout and "input 0: x n_elems=240" in proc.stdout


def test_cmake_find_package(project):
    pfx = prefix()
    build = project / "build"
    subprocess.run([_tool("cmake"), "-S", project / "project", "-B", build, f"-DCMAKE_PREFIX_PATH={pfx}"],
                   check=True, capture_output=True)
    subprocess.run([_tool("cmake"), "--build", build], check=True, capture_output=True)
    _check_run(build / "rknn_query_demo", project / "conv.onnx")


def test_makefile_with_pkg_config(project):
    pfx = prefix()
    env = {**os.environ, "PKG_CONFIG_PATH": str(pfx / "lib" / "pkgconfig")}
    flags = subprocess.run([_tool("pkg-config"), "--cflags", "--libs", "librknnrt"], env=env, check=True,
                           capture_output=True, text=True).stdout
    assert f"-I{pfx}/lib/pkgconfig/../../include" in flags and "-lrknnrt" in flags
    subprocess.run([_tool("make"), "-C", project / "project"], env=env, check=True, capture_output=True)
    _check_run(project / "project" / "rknn_query_demo", project / "conv.onnx")


def test_examples_c_classifier_builds_with_its_makefile_and_ranks_like_onnxruntime(tmp_path):
    """examples/c: `make PREFIX=...` as docs/c-api.md says; its top-5 equals onnxruntime's on the same image."""
    import numpy as np
    from helpers.capi import REPO
    from helpers.flows import classifier_model, frame, onnx_ref
    from npurt.model import zoo
    shutil.copytree(REPO / "examples" / "c", tmp_path / "c", ignore=shutil.ignore_patterns("classify"))
    subprocess.run([_tool("make"), "-C", tmp_path / "c", f"PREFIX={prefix()}"], check=True, capture_output=True)
    (tmp_path / "cls.npurt").write_bytes(classifier_model())
    img = frame(24, 24, seed=9)
    (tmp_path / "img.ppm").write_bytes(b"P6\n24 24\n255\n" + img.tobytes())
    proc = run_c(tmp_path / "c" / "classify", tmp_path / "cls.npurt", tmp_path / "img.ppm")
    assert "input 24x24, w_stride 32; top 5 of 10 classes:" in proc.stdout
    ranked = [int(line.split("class")[1].split()[0]) for line in proc.stdout.splitlines() if "class " in line]
    want = onnx_ref(zoo.small_convnet(24).SerializeToString(), img).reshape(-1)
    assert ranked == list(np.argsort(-want)[:5])
