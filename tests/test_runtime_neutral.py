"""The layers below the mirrors speak neutrally: no error they raise and no line they log names a vendor's
functions, flags or types (the mirrors render the vendor wording from the hint key, `npurt.rknn.boundary.HINTS`)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

from npurt.errors import ErrorCode, Hinted, NpuError
from npurt.rknn.boundary import HINTS, vendor_message

SRC = Path(__file__).resolve().parent.parent / "src" / "npurt"
NEUTRAL_LAYERS = ("soc", "memory", "tensor", "model", "plan", "exec", "runtime")
VENDOR = re.compile(r"\brknn_|\bRKNN_|\bQnn|\bQNN_")


MESSAGE_CALLS = {"NpuError", "Hinted", "_log"}       # errors, hinted log lines, the runtime's log calls


def _error_texts(tree: ast.AST):
    """(line, text) of every string literal inside an error or log-message call."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in MESSAGE_CALLS:
            for arg in ast.walk(node):
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    yield node.lineno, arg.value


def test_runtime_errors_and_log_lines_name_no_vendor_api():
    found = []
    for layer in NEUTRAL_LAYERS:
        for path in sorted((SRC / layer).rglob("*.py")):
            for line, text in _error_texts(ast.parse(path.read_text(encoding="utf-8"))):
                if VENDOR.search(text):
                    found.append(f"{path.relative_to(SRC)}:{line}: {text!r}")
    assert not found, "vendor wording in neutral errors:\n" + "\n".join(found)


def test_every_hint_renders():
    for key, wording in HINTS.items():
        fields = set(re.findall(r"{(\w+)}", wording)) - {"message"}
        err = NpuError(ErrorCode.INVALID_ARGUMENT, "neutral text", hint=key, **{f: "x" for f in fields})
        assert vendor_message(err), key
    assert vendor_message(NpuError(ErrorCode.FAIL, "plain")) == "plain"
    assert vendor_message(NpuError(ErrorCode.FAIL, "plain", hint="no such key")) == "plain"
    line = Hinted("coherence: input(x) was not synced", hint="input_not_synced")
    assert line == "coherence: input(x) was not synced"                       # a plain str to other sinks
    assert "RKNN_MEMORY_SYNC_TO_DEVICE" in vendor_message(line)
