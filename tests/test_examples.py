"""Every example in examples/ runs as a user runs it (a subprocess) and prints what its guide says it prints. The
guides' own code blocks (docs/python.md's programs, the README's snippet, every shell block): tests/test_guides.py.

The PP-OCR examples download a wheel the first time: they are in the optional tier (`@pytest.mark.optional`), skipped
unless NPURT_OPTIONAL=1.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

# example -> patterns its stdout must contain
EXPECT = {
    "zero_copy.py": [r"native input: NHWC FP16", r"executor reads the input buffer itself: True; writes the output "
                     r"buffer itself: True", r"general API: max \|npurt - onnxruntime\| = ", r"per frame: general"],
    "external_buffers.py": [r"input  buffer: fd \d+, phys 0x", r"process \d+ wrote the frame through the fd",
                            r"output read from the app's own buffer: max", r"still valid"],
    "coherence.py": [r"strict, with rknn_mem_sync\(TO_DEVICE\): +max error", r"sync forgotten: +max error",
                     r"check, sync forgotten"],
    "shared_memory.py": [r"second \(shared weights\) \+\d+ B", r"one shared buffer of \d+ B",
                         r"model 1 on the shared internal buffer: max"],
    "sram.py": [r"context 1: internal \d+ B, of which \d+ B in SRAM", r"used: 0, free: 978944",
                r"output with internal memory in SRAM: max"],
    "dynamic_shapes.py": [r"shapes the model accepts: \[\[1, 16, 16, 3\], \[1, 8, 8, 3\], \[1, 12, 10, 3\]\] NHWC",
                          r"input NHWC \[1, 12, 10, 3\] -> output \[1, 4, 12, 10\]: max"],
    "qnn_shared_buffer.py": [r"ION buffers: max", r"one rpcmem buffer of \d+ B", r"one shared buffer: max"],
    "qnn_llm_pair.py": [r"separate: 2 context binary file\(s\)", r"shared: 1 context binary file\(s\)",
                        r"context 0x[0-9a-f]+: 2 graph\(s\), weights [\d,]+ B stored \(shared; unshared",
                        r"shared: token graph \(seq 1\) on the EP: max \|npurt - onnxruntime CPU\|",
                        r"sharing saves [\d,]+ B of stored weights and [\d,]+ B of weight memory"],
}


def user_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("NPURT_SOC", "NPURT_COHERENCE", "RKNN_LOG_LEVEL")}


def run_example(name: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, timeout=timeout,
                          env=user_env())


def test_every_example_is_listed():
    found = {p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_")}
    assert found == set(EXPECT) | {"ppocr_cls.py", "ocr_pipeline.py"}


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_example_runs(name):
    p = run_example(name)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"{name[:-3]} example OK" in p.stdout
    for pattern in EXPECT[name]:
        assert re.search(pattern, p.stdout), (pattern, p.stdout)
    assert "not installed" not in p.stdout           # the test venv has onnxruntime: every output was compared


def test_coherence_check_mode_names_the_buffer():
    p = run_example("coherence.py")
    assert "W RKNN:" in p.stderr and "RKNN_MEMORY_SYNC_TO_DEVICE" in p.stderr


def optional_tier(test):
    """The optional tier's marks: downloads the rapidocr-onnxruntime wheel once; runs with NPURT_OPTIONAL=1."""
    skip = pytest.mark.skipif(os.environ.get("NPURT_OPTIONAL") != "1",
                              reason="optional tier: set NPURT_OPTIONAL=1 (downloads the rapidocr-onnxruntime wheel once)")
    return pytest.mark.optional(skip(test))


@optional_tier
def test_ppocr_classifier_matches_onnxruntime():
    p = run_example("ppocr_cls.py", timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = re.findall(r"^(fp16|int8) '.*?' (upright|rotated) .*-> (0|180) +onnxruntime", p.stdout, re.M)
    assert len(rows) == 8
    assert all((d == "upright") == (c == "0") for _, d, c in rows)


@optional_tier
def test_ocr_pipeline_reads_the_rendered_page():
    p = run_example("ocr_pipeline.py", timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = re.findall(r"^npurt det (fp16|int8) \+ rec (fp16|int8): (\[.*?\]) .*binarised map agrees", p.stdout,
                      re.M)
    rendered = re.search(r"^rendered: (\[.*\])$", p.stdout, re.M).group(1)
    assert [r[:2] for r in rows] == [("fp16", "fp16"), ("int8", "fp16"), ("int8", "int8")], p.stdout
    assert all(r[2] == rendered for r in rows), p.stdout
