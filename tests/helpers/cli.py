"""Run `npurt` as a user does: a subprocess of `python -m npurt.cli.main`, stdout not a terminal."""
from __future__ import annotations

import json
import os
import subprocess
import sys


def npurt(*args: str, cwd=None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NPURT_SOC", "NPURT_COHERENCE", "RKNN_LOG_LEVEL")}
    return subprocess.run([sys.executable, "-m", "npurt.cli.main", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout)


def ok_json(*args: str, **kw) -> dict:
    """Run with --json, require exit 0 and stdout that is exactly one JSON document."""
    p = npurt(*args, "--json", **kw)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def fails(*args: str, words: tuple[str, ...] = ()) -> str:
    """Run, require exit status 2 and an `npurt CMD: error:` line naming `words`; returns stderr."""
    p = npurt(*args)
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "error:" in p.stderr, p.stderr
    for w in words:
        assert w in p.stderr, (w, p.stderr)
    assert "Traceback" not in p.stderr
    return p.stderr
