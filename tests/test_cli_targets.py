"""The CLI never destroys a file or blocks on one: every command, given a FIFO, a directory, a character-device
node (made with os.mknod in a temporary folder, never a real /dev path) or its own input as a path, exits 2 with a
message and leaves every target exactly as it was. Outputs are written to exactly the path given."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from helpers.cli import fails, npurt as run_cli
from helpers.models import convnet

PLAN_CSV = "id,lower,upper,size\n0,0,2,64\n1,1,3,32\n"

# Runs every case in one interpreter (main() in-process): a command that blocks on a FIFO hangs it (the timeout
# fails the test), one that crashes kills it.
RUNNER = textwrap.dedent("""
    import contextlib, io, json, sys
    from npurt.cli.main import main
    results = []
    for argv in json.loads(sys.argv[1]):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(argv)
        results.append([code, err.getvalue()])
    print(json.dumps(results))
""")


def _snapshot(folder) -> dict:
    """What is in `folder`: name -> (file type, size, rdev, content of regular files)."""
    out = {}
    for name in sorted(os.listdir(folder)):
        st = os.lstat(folder / name)
        data = (folder / name).read_bytes() if stat.S_ISREG(st.st_mode) else None
        out[name] = (stat.S_IFMT(st.st_mode), st.st_rdev, data,
                     sorted(os.listdir(folder / name)) if stat.S_ISDIR(st.st_mode) else None)
    return out


@pytest.fixture
def targets(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "keep").write_text("x")
    os.mknod(tmp_path / "chardev", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    (tmp_path / "m.onnx").write_bytes(convnet())
    (tmp_path / "plan.csv").write_text(PLAN_CSV)
    np.save(tmp_path / "x.npy", np.zeros((1, 3, 8, 10), np.float32))
    return tmp_path


def _cases(d) -> list[list[str]]:
    m, x, inst = str(d / "m.onnx"), str(d / "x.npy"), str(d / "plan.csv")
    bad = [str(d / "fifo"), str(d / "dir"), str(d / "chardev")]
    cases = []
    for b in bad:                                   # non-regular inputs
        cases += [["convert", b, "-o", str(d / "new.npurt")], ["run", b], ["run", m, "--input", b],
                  ["report", b], ["plan", b], ["mm", b], ["demo", "--model", b, "--runs", "1"]]
    for b in bad + ["INPUT"]:                       # non-regular outputs, and the command's own input
        cases += [["convert", m, "-o", m if b == "INPUT" else b],
                  ["run", m, "--input", x, "--output", x if b == "INPUT" else b],
                  ["run", m, "--output", m if b == "INPUT" else b],
                  ["report", m, "--plot", m if b == "INPUT" else b],
                  ["plan", inst, "--output", inst if b == "INPUT" else b],
                  ["plan", inst, "--plot", inst if b == "INPUT" else b],
                  ["mm", m, "--plot", m if b == "INPUT" else b]]
    return cases


def test_every_command_refuses_fifo_directory_device_and_its_input(targets):
    before = _snapshot(targets)
    cases = _cases(targets)
    proc = subprocess.run([sys.executable, "-c", RUNNER, json.dumps(cases)], capture_output=True, text=True,
                          timeout=300, cwd=targets)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for argv, (code, err) in zip(cases, json.loads(proc.stdout)):
        assert code == 2, (argv, code, err)
        assert "error:" in err and "Traceback" not in err, (argv, err)
    assert _snapshot(targets) == before                # nothing replaced, nothing written beside a target


def test_outputs_are_written_to_exactly_the_path_given(targets):
    out, pic, svg = targets / "outputs", targets / "picture", targets / "plan.svg"
    assert run_cli("run", targets / "m.onnx", "--output", out).returncode == 0
    assert run_cli("report", targets / "m.onnx", "--plot", pic).returncode == 0
    assert run_cli("plan", targets / "plan.csv", "--plot", svg, "--method", "greedy").returncode == 0
    assert sorted(np.load(out, allow_pickle=False).files)                 # a real .npz, no ".npz" appended
    assert pic.read_bytes()[:4] == b"\x89PNG" and svg.read_bytes().lstrip().startswith((b"<?xml", b"<svg"))
    assert not (targets / "outputs.npz").exists() and not (targets / "picture.png").exists()


def test_plan_absurd_size_and_unreadable_model_are_messages_not_tracebacks(targets):
    (targets / "huge.csv").write_text("id,lower,upper,size\n0,0,2,%d\n" % 10**30)
    fails("plan", targets / "huge.csv", words=("larger than",))
    fails("run", "/proc/self/mem", words=("/proc/self/mem",))          # read only: EIO names the path
    fails("report", targets / "m.onnx", "--plot", targets / "p.unknownformat", words=("cannot save a picture",))
    assert not (targets / "p.unknownformat").exists()
