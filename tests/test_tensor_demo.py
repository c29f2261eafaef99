"""`npurt demo` shows the seed's worked NC1HWC2 example."""
from __future__ import annotations

from npurt.cli.main import main


def test_demo_prints_the_nc1hwc2_example(capsys):
    assert main(["demo", "--profiles"]) == 0
    text = capsys.readouterr().out
    assert "(1, 13, 4, 4)" in text and "(1, 2, 4, 4, 8)" in text
    assert "lanes 5..7 of block C1=1" in text and "equal" in text and "MISMATCH" not in text
