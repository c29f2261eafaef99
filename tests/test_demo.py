"""`npurt demo` end to end: the real main job once (text), a small model as JSON, the flags and the errors."""
from __future__ import annotations

import re

import pytest

from helpers.cli import fails, npurt, ok_json


def test_demo_main_job_prints_table_dumps_and_timings():
    p = npurt("demo", timeout=300)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "\x1b[" not in out                                        # no colour codes off a terminal
    # the seed's memory table with SramHit and the totals
    assert "Total allocated Internal SRAM Size: 978944" in out
    assert re.search(r"ID\s+User\s+Tensor\s+DataType\s+OrigShape\s+NativeShape\s+\| \[Start\s+End\)\s+Size\s+\| SramHit",
                     out)
    assert re.search(r"ConvRelu\s+output2\s+INT8\s+\(1,32,112,112\)\s+\(1,2,112,112,16\)", out)
    hits = [int(h, 16) for h in re.findall(r"\| (0x[0-9a-f]{8})$", out, re.M)]
    assert len(hits) == 29 and sum(hits) > 0
    saved = int(re.search(r"Predict SRAM Hit RW Amount: (\d+)", out).group(1))
    assert saved == 2 * sum(hits)
    for total in ("Total Weight Memory Size", "Total Internal Memory Size", "Predict Internal Memory RW Amount",
                  "Predict Weight Memory RW Amount"):
        assert total + ":" in out
    # the SRAM bitmap before, while and after
    dumps = re.findall(r"SRAM total size: (\d+), used: (\d+), free: (\d+)", out)
    assert [d[1] for d in dumps] == ["0", "978944", "0"]
    assert out.count('SRAM bitmap: "*" - used, "." - free (1bit = 4KB)') == 3
    # timings of both paths, the agreement check and the savings
    assert re.search(r"general\s+[\d.]+ ms\s+[\d.]+ ms", out) and re.search(r"zero copy\s+[\d.]+ ms\s+[\d.]+ ms", out)
    assert "outputs: general and zero copy" in out and "DDR traffic SRAM saves" in out
    assert re.search(r"NPU time SRAM saves \(predicted[^)]*\): [\d.]+ ms -> [\d.]+ ms per frame", out)
    assert "NC1HWC2" in out                                           # the short first part


def test_demo_json_small_model_and_no_sram():
    d = ok_json("demo", "--model", "small_convnet", "--runs", "1")
    assert d["sram_enabled"] and d["mem_size"]["total_sram_size"] == 978944
    assert d["timing"]["general"]["frames"] == d["timing"]["zero_copy"]["frames"] == 1
    assert d["check"]["general_vs_zero_copy_max_abs_diff"] < 1e-4
    assert d["sram_savings"]["bytes_per_frame"] == d["memory_table"]["totals"]["sram_hit_rw"] > 0
    assert d["sram_dump"]["after"] == d["sram_dump"]["before"]
    saved = d["sram_savings"]                       # the timing model's prediction, with and without the SRAM
    assert saved["predicted_ms_sram"] < saved["predicted_ms_ddr"]
    assert saved["predicted_ms_saved"] == pytest.approx(saved["predicted_ms_ddr"] - saved["predicted_ms_sram"])
    n = ok_json("demo", "--model", "small_convnet", "--runs", "1", "--no-sram", "--fp16")
    assert not n["sram_enabled"] and n["precision"] == "fp16" and n["memory_table"]["sram"] is None
    assert n["sram_savings"]["bytes_per_frame"] == 0 and n["mem_size"]["free_sram_size"] == 978944
    assert n["sram_savings"]["predicted_ms_saved"] == 0


def test_demo_profiles_and_errors():
    p = npurt("demo", "--profiles")
    assert p.returncode == 0 and "rk3588" in p.stdout and "(1, 2, 4, 4, 8)" in p.stdout
    for soc, vtcm in (("sm8350", "4 MiB"), ("sm8450", "8 MiB"), ("sm8550", "8 MiB"), ("sm8650", "8 MiB"),
                      ("sm8750", "8 MiB")):                      # the QNN HTP SoCs that --soc takes too
        assert any(soc in line and vtcm in line for line in p.stdout.splitlines()), soc
    fails("demo", "--runs", "0", words=("--runs",))
    fails("demo", "--soc", "nosuchsoc")
    fails("demo", "--model", "nosuchmodel", words=("unknown model",))
