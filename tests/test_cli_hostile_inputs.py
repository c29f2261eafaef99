"""Leftovers of the Python/CLI campaign, each refused with exit 2 and one line (nothing written): complex inputs, a
.npy header declaring more than the file holds, NaN means, an empty SoC name, SRAM a SoC does not have; `-o`
through a symbolic link writes the file it points to."""
from __future__ import annotations

import struct

import numpy as np
import pytest

from helpers.cli import fails, npurt


def _huge_npy(path) -> None:
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000000,), }"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + bytes(64))


@pytest.mark.parametrize("case", ["complex", "huge"])
def test_run_refuses_inputs_it_cannot_take(tmp_path, case):
    x = tmp_path / f"{case}.npy"
    if case == "complex":
        np.save(x, np.full((1, 3, 32, 32), 1 + 2j, np.complex64))
    else:
        _huge_npy(x)
    err = fails("run", "small_convnet", "--input", x, words=(x.name,))
    assert ("complex64" if case == "complex" else "declares 4000000000000000 bytes") in err
    assert "internal error" not in err


@pytest.mark.parametrize("args,words", [
    (("convert", "small_convnet", "--mean", "nan,0,0"), ("--mean", "finite")),
    (("convert", "small_convnet", "--soc", ""), ("unknown SoC ''",)),
    (("report", "small_convnet", "--sram", str(10 ** 30)), ("--sram", "bytes of NPU SRAM")),
    (("run", "small_convnet", "--soc", "rk3568", "--sram"), ("--sram", "rk3568 has no NPU SRAM")),
])
def test_options_that_contradict_the_soc_or_are_not_numbers(tmp_path, args, words):
    extra = ("-o", tmp_path / "m.npurt") if args[0] == "convert" else ()
    fails(*args, *extra, words=words)
    assert not (tmp_path / "m.npurt").exists()


def test_convert_output_through_a_symlink_writes_its_target(tmp_path):
    link, target = tmp_path / "link.npurt", tmp_path / "target.npurt"
    link.symlink_to(target.name)
    p = npurt("convert", "small_convnet", "-o", link)
    assert p.returncode == 0, p.stderr
    assert link.is_symlink() and target.is_file() and target.stat().st_size > 0
