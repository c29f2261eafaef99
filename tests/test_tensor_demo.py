"""`npurt demo` shows the seed's worked NC1HWC2 example."""
from __future__ import annotations

from npurt.cli.main import main

from helpers.data import nc1hwc2_examples


def test_demo_prints_the_nc1hwc2_example(capsys):
    assert main(["demo", "--profiles"]) == 0
    text = capsys.readouterr().out
    example = nc1hwc2_examples()[0]
    assert str(tuple(example["shape"])) in text and str(tuple(example["native_shape"])) in text
    assert "lanes 5..7 of block C1=1" in text and "equal" in text and "MISMATCH" not in text
