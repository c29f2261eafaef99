"""Every guide (README.md, docs/*.md) runs as a newcomer would run it: its shell blocks (```sh / ```bash / ```console)
and its python blocks, verbatim and in order, in a fresh folder with the venv's bin first on PATH (so `npurt` and
`python` are this checkout's), each exiting 0; a python block the guide shows the output of prints that output.
The folder holds what a clone has beside the guides and nothing else: a copy of `examples/`, and `.cache` (the
clone's git-ignored cache of zoo models and real-weights wheels). So every input a guide uses must be made by a
command the guide shows.

Blocks that cannot run here carry a marker comment in the guide (`tests/helpers/guides.py`): `<!-- not run: REASON
-->` (a board, a vendor SDK checkout, ...) is listed by `test_block_not_run` as a skip with its reason;
`<!-- real-weights tier: REASON -->` runs only in that tier (`make test-real`: NPURT_OPTIONAL=1, `-m optional`), as
tests/test_examples.py's optional examples do."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.guides import RUN, Block, blocks, output_matches

ROOT = Path(__file__).resolve().parents[1]
GUIDES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
OPTIONAL = os.environ.get("NPURT_OPTIONAL") == "1"
COMMAND = ("npurt ", "python ", "make ", "cc ", "pip ", "$ ")


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _env() -> dict[str, str]:
    """The user's environment with this venv's bin first on PATH, without the variables that change npurt's
    defaults (the guides show the defaults)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NPURT_SOC", "NPURT_COHERENCE", "RKNN_LOG_LEVEL",
                                                             "NPURT_PERF", "NPURT_CACHE")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.pop("PYTHONPATH", None)
    return env


def _clone_folder(tmp: Path) -> Path:
    """A fresh folder with what a clone has beside its guides: examples/ (copied, so builds stay here) and the
    git-ignored .cache (linked, so zoo models and wheels are made once)."""
    shutil.copytree(ROOT / "examples", tmp / "examples",
                    ignore=shutil.ignore_patterns("__pycache__", "classify", "qnn_shared_buffer"))
    (ROOT / ".cache").mkdir(exist_ok=True)
    (tmp / ".cache").symlink_to(ROOT / ".cache")
    return tmp


def _run(block: Block, guide: str, cwd: Path) -> None:
    """Run one block in `cwd`: it exits 0, logs no RKNN error, and prints what the guide shows (when it shows it)."""
    where = f"{guide}:{block.line}"
    if block.lang == "python":
        cmd = [sys.executable, "-c", block.code]
    else:
        cmd = ["bash", "-e", "-o", "pipefail", "-c", block.script()]
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300, env=_env())
    assert p.returncode == 0, f"{where} exited {p.returncode}\n{block.code}\nstdout:\n{p.stdout[-3000:]}\n" \
                              f"stderr:\n{p.stderr[-3000:]}"
    assert "E RKNN" not in p.stderr, f"{where}: {p.stderr[-3000:]}"
    if block.expected is not None:
        assert output_matches(block.expected, p.stdout), f"{where} printed\n{p.stdout}\nthe guide shows\n" \
                                                         f"{block.expected}"


def _run_guide(guide: Path, tmp: Path, real_weights: bool) -> int:
    """Run the guide's runnable blocks in order in a fresh clone-like folder, the real-weights ones only when
    `real_weights`; the number of blocks run."""
    cwd, ran = _clone_folder(tmp), 0
    for block in blocks(guide):
        if block.runs and (block.marker != "real-weights tier" or real_weights):
            _run(block, _name(guide), cwd)
            ran += 1
    return ran


@pytest.mark.timeout(600)
@pytest.mark.parametrize("guide", GUIDES, ids=_name)
def test_guide_runs_as_written(guide, tmp_path):
    """The guide's runnable blocks, in order, in one fresh folder (its real-weights blocks: the test below)."""
    _run_guide(guide, tmp_path, real_weights=False)


_REAL = [g for g in GUIDES if any(b.marker == "real-weights tier" for b in blocks(g))]


@pytest.mark.optional
@pytest.mark.skipif(not OPTIONAL, reason="real-weights tier: set NPURT_OPTIONAL=1 (downloads the wheels once)")
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("guide", _REAL, ids=_name)
def test_guide_runs_with_the_real_weights(guide, tmp_path):
    """The guides whose blocks need the real-weights wheels, all their blocks in order (`make test-real`)."""
    assert _run_guide(guide, tmp_path, real_weights=True)


_NOT_RUN = [(g, b) for g in GUIDES for b in blocks(g) if b.marker == "not run"]


@pytest.mark.parametrize("guide, block", _NOT_RUN, ids=[f"{_name(g)}:{b.line}" for g, b in _NOT_RUN])
def test_block_not_run(guide, block):
    """The blocks a guide marks as not runnable here, each listed (`pytest -rs`) with the guide's reason."""
    assert block.lang in RUN and block.reason, f"{_name(guide)}:{block.line}: a marker needs a runnable block and " \
                                               f"a reason"
    pytest.skip(f"{_name(guide)}:{block.line}: {block.reason}")


def test_commands_are_in_runnable_blocks():
    """A command shown in a plain block would never be run: commands go in sh / console blocks (or carry a
    marker); plain blocks hold output and listings, ```text blocks synopses."""
    bad = [f"{_name(g)}:{b.line}" for g in GUIDES for b in blocks(g)
           if b.lang == "" and b.code.lstrip().startswith(COMMAND)]
    assert not bad, bad


def test_markers_are_read():
    """The marker comments and the "prints" convention as the guides use them."""
    found = {b.marker for g in GUIDES for b in blocks(g)}
    assert {"not run", "real-weights tier"} <= found
    assert sum(b.expected is not None for b in blocks(ROOT / "docs" / "python.md")) == 6
    assert output_matches("a\n...\nz", "a\nb\nc\nz") and output_matches("x ... y", "x 12 y")
    assert not output_matches("a\nz", "a\nb\nz") and not output_matches("x ... y", "x 1\n2 y")
