"""`npurt --help`, `npurt --version` and `npurt CMD --help` build the parser without loading numpy, onnx or the
runtime: every command module imports its heavy parts inside the functions that run the command."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("numpy", "onnx", "onnxruntime", "matplotlib", "npurt.runtime", "npurt.exec", "npurt.model.compiled",
         "npurt.tensor", "npurt.memory", "npurt.rknn", "npurt.qnn")


def _commands() -> list[str]:
    """Every subcommand the parser has (building it is light too: the probes below check that in a clean process)."""
    from npurt.cli.main import build_parser
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    return sorted(sub.choices)


COMMANDS = _commands()

_PROBE = """
import json, sys
from npurt.cli.main import main
try:
    status = main({argv!r})
except SystemExit as exc:
    status = exc.code
print(json.dumps({{"status": status, "loaded": sorted(m for m in {heavy!r} if m in sys.modules)}}))
"""


def _probe(argv: list[str]) -> dict:
    p = subprocess.run([sys.executable, "-c", _PROBE.format(argv=argv, heavy=HEAVY)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("argv", [["--version"], ["--help"], *[[c, "--help"] for c in COMMANDS]])
def test_help_and_version_load_nothing_heavy(argv):
    r = _probe(argv)
    assert r["status"] == 0
    assert r["loaded"] == []


def test_every_command_is_probed():
    assert {"accuracy", "convert", "demo", "plan", "report", "run"} <= set(COMMANDS)


def test_a_command_that_runs_still_loads_what_it_needs():
    """The probe can fail: running a command (not its help) imports numpy and the runtime."""
    r = _probe(["run", "small_convnet", "--json"])
    assert r["status"] == 0
    assert "numpy" in r["loaded"] and "npurt.runtime" in r["loaded"]


def test_bad_choice_values_are_one_line_errors(tmp_path):
    """--qnn-io and --quantized-algorithm are checked when the command runs (their names live in the heavy layers),
    still as one line and exit 2, before anything is compiled."""
    from helpers.cli import fails
    fails("convert", "small_convnet", "--qnn-io", "float64", "-o", tmp_path / "x.npurt", words=("--qnn-io", "float16"))
    fails("convert", "small_convnet", "--quantize", "random", "--quantized-algorithm", "entropy", "-o", tmp_path / "x.npurt",
          words=("kl_divergence",))
    assert not (tmp_path / "x.npurt").exists()
