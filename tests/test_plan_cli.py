"""`npurt plan` end to end through a subprocess."""
from __future__ import annotations

import json
import subprocess
import sys

from helpers.data import BENCH

from npurt.plan import PlanBuffer, Problem, Solution, check, read_csv


def npurt(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "npurt.cli.main", "plan", *args], capture_output=True, text=True,
                          timeout=120)


def test_table_output():
    r = npurt(str(BENCH / "real" / "G_1.csv"), "--time-limit", "2")
    assert r.returncode == 0, r.stderr
    for word in ("buffers", "lower bound", "arena", "ratio", "time", "fits"):
        assert word in r.stdout


def test_json_and_offsets(tmp_path):
    path = BENCH / "challenging" / "B.1048576.csv"
    out = tmp_path / "offsets.csv"
    r = npurt(str(path), "--json", "--method", "greedy", "--output", str(out))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["buffers"] == 170 and d["capacity"] == 1048576 and d["fits"] is False
    assert d["arena"] >= d["lower_bound"] and abs(d["ratio"] - d["arena"] / d["lower_bound"]) < 1e-5
    assert "seconds" in d
    problem = read_csv(path)
    rows = out.read_text().splitlines()
    assert rows[0] == "id,offset" and len(rows) == 171
    offsets = {int(a): int(b) for a, b in (line.split(",") for line in rows[1:])}
    check(problem, Solution(offsets, d["arena"], d["lower_bound"], 0.0, "cli", False))


def test_capacity_override_and_plot(tmp_path):
    csv = tmp_path / "tiny.csv"
    csv.write_text("id,lower,upper,size\n0,0,2,8\n1,1,3,8\n")
    r = npurt(str(csv), "--capacity", "16", "--json", "--plot", str(tmp_path / "p.png"), "--time-limit", "1")
    d = json.loads(r.stdout)
    assert d["fits"] is True and d["arena"] == 16 and (tmp_path / "p.png").exists()
    r = npurt(str(csv), "--capacity", "12", "--json", "--time-limit", "1")
    assert r.returncode == 0 and json.loads(r.stdout)["fits"] is False


def test_bad_input_exit_2(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("id,lower,upper,size\n0,5,5,8\n")
    r = npurt(str(bad))
    assert r.returncode == 2 and "line 2" in r.stderr and "empty lifetime" in r.stderr
    bad.write_text("id,lower,upper,size\n0,0,1,-8\n")
    assert npurt(str(bad)).returncode == 2
    assert npurt(str(tmp_path / "missing.csv")).returncode == 2
    bad.write_text("id,lower,upper,size\n0,0,1,8\n")
    r = npurt(str(bad), "--capacity", "-1")
    assert r.returncode == 2 and "capacity" in r.stderr
    r = npurt(str(bad), "--time-limit", "0")
    assert r.returncode == 2
