"""RKNN-style log lines on stderr, filtered by `RKNN_LOG_LEVEL` as librknnrt does.

Levels (read from the environment at every call, so a test or a user can change it at run time):

| level | prints |
|---|---|
| 0 | nothing |
| 1 | `E RKNN: ...` errors (npurt's default, like the vendor's: failures always say why) |
| 2 | + `W RKNN: ...` warnings |
| 3 | + `I RKNN: ...` information, including the memory table `rknn_init` prints for each context |
| 4 | + `D RKNN: ...` debug: allocation / import / release of every runtime buffer |
| 5 | + per-layer lines of each run (`D RKNN: ... layer ...`) |

Each line is `<letter> RKNN: [hh:mm:ss.mmm] <message>`, as on the board. Lines go to `sys.stderr` as it is at call
time (so pytest's capsys/capfd see them).
"""
from __future__ import annotations

import os
import sys
import time

ENV = "RKNN_LOG_LEVEL"
DEFAULT_LEVEL = 1

ERROR, WARNING, INFO, DEBUG, VERBOSE = 1, 2, 3, 4, 5
_LETTER = {ERROR: "E", WARNING: "W", INFO: "I", DEBUG: "D", VERBOSE: "D"}


def level() -> int:
    """The level in force: `$RKNN_LOG_LEVEL` clamped to 0..5 (unset or not an int: the default, 1)."""
    raw = os.environ.get(ENV)
    if raw is None or not raw.strip():
        return DEFAULT_LEVEL
    try:
        return max(0, min(5, int(raw.strip())))
    except ValueError:
        return DEFAULT_LEVEL


def enabled(lvl: int) -> bool:
    """Whether a line of level `lvl` would be printed now."""
    return level() >= lvl


def _stamp() -> str:
    now = time.time()
    return time.strftime("%H:%M:%S", time.localtime(now)) + f".{int(now * 1000) % 1000:03d}"


def emit(lvl: int, message: str) -> None:
    """Print `message` (each of its lines) at level `lvl` if the level in force allows it."""
    if level() < lvl:
        return
    letter = _LETTER[lvl]
    stamp = _stamp()
    out = "".join(f"{letter} RKNN: [{stamp}] {line}\n" for line in str(message).splitlines() or [""])
    sys.stderr.write(out)
    sys.stderr.flush()


def error(message: str) -> None:
    """An `E RKNN:` line."""
    emit(ERROR, message)


def warning(message: str) -> None:
    """A `W RKNN:` line."""
    emit(WARNING, message)


def info(message: str) -> None:
    """An `I RKNN:` line."""
    emit(INFO, message)


def debug(message: str) -> None:
    """A `D RKNN:` line (level 4)."""
    emit(DEBUG, message)


def verbose(message: str) -> None:
    """A per-layer `D RKNN:` line (level 5)."""
    emit(VERBOSE, message)


def runtime_sink(lvl: str, message: str) -> None:
    """Adapter for `npurt.runtime.Context(log=...)`: neutral level names ("error", "warning", "info", "debug",
    "verbose") to RKNN lines; a hinted message is worded as librknnrt words it (`npurt.rknn.boundary.HINTS`)."""
    if getattr(message, "hint", None):
        from npurt.rknn.boundary import vendor_message      # the boundary logs through this module
        message = vendor_message(message)  # type: ignore[arg-type]
    emit({"error": ERROR, "warning": WARNING, "info": INFO, "debug": DEBUG}.get(lvl, VERBOSE), message)
