"""Bad arguments get one plain line about what the user passed: never an internal temporary file, a column the docs
do not use, or numpy's advice to unpickle a file."""
from __future__ import annotations

import numpy as np

from helpers.cli import fails


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def test_convert_into_a_missing_folder_names_the_output(tmp_path):
    out = tmp_path / "nonexistent" / "x.npurt"
    line = _one_line(fails("convert", "small_convnet", "-o", out))
    assert line == f"npurt convert: error: {out}: No such file or directory"
    assert not out.parent.exists()


def test_plan_bad_header_names_the_documented_columns(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    line = _one_line(fails("plan", bad))
    assert "id,lower,upper,size[,alignment]" in line and "start" not in line and "'end'" not in line


def test_input_that_is_not_a_npy_file(tmp_path):
    (tmp_path / "dataset.txt").write_text("a.npy\n")
    line = _one_line(fails("run", "small_convnet", "--input", tmp_path / "dataset.txt"))
    assert line.endswith(f"--input {tmp_path / 'dataset.txt'} is not a .npy file (an array written by numpy.save)")
    assert "pickle" not in line


def test_input_that_holds_python_objects(tmp_path):
    obj = tmp_path / "obj.npy"
    np.save(obj, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    line = _one_line(fails("run", "small_convnet", "--input", obj))
    assert line.endswith(f"--input {obj}: holds Python objects, not an array of numbers")
    assert "allow_pickle" not in line


def test_calibration_sample_that_is_not_a_npy_file(tmp_path):
    (tmp_path / "x.npy").write_text("not an array")
    (tmp_path / "dataset.txt").write_text("x.npy\n")
    line = _one_line(fails("convert", "small_convnet", "--quantize", tmp_path / "dataset.txt",
                           "-o", tmp_path / "m.npurt"))
    assert line.endswith(f"dataset.txt:1: sample {tmp_path / 'x.npy'} is not a .npy file (an array written by "
                         f"numpy.save)")
    assert not (tmp_path / "m.npurt").exists()
