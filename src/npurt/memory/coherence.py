"""The coherence model: the three device modes, sync directions, and the check mode's CPU-write snapshots.

- `coherent`: one mapping; a sync is bookkeeping only (counted, no copy).
- `strict`: a cacheable buffer has a separate CPU view (private anonymous memory, the "cache"). TO_DEVICE copies
  CPU view -> device memory, FROM_DEVICE copies device memory -> CPU view, BIDIRECTIONAL does TO_DEVICE (clean +
  invalidate leaves both equal). A missing sync gives stale data, deterministically. Non-cacheable buffers have
  one mapping.
- `check`: data path as `coherent`; TO_DEVICE takes a cheap snapshot (CRC-32 of the bytes) so that
  `Buffer.cpu_written_since_sync()` can tell whether the CPU changed the buffer since its last sync to device.
"""
from __future__ import annotations

import enum
import os
import zlib

import numpy as np

from npurt.errors import ErrorCode, NpuError

COHERENT = "coherent"
STRICT = "strict"
CHECK = "check"
MODES = (COHERENT, STRICT, CHECK)


class SyncMode(enum.IntFlag):
    """Sync directions, with the values of RKNN_MEMORY_SYNC_TO_DEVICE / _FROM_DEVICE / _BIDIRECTIONAL."""

    TO_DEVICE = 0x1
    FROM_DEVICE = 0x2
    BIDIRECTIONAL = 0x3


def check_mode(mode: str | None) -> str:
    """Validate a coherence mode name; None means `$NPURT_COHERENCE`, else `coherent`."""
    given = mode if mode is not None else os.environ.get("NPURT_COHERENCE")
    if given is not None and not isinstance(given, str):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"coherence mode must be a name, got {given!r}")
    name = (given or COHERENT).strip().lower()
    if name not in MODES:
        source = "" if mode is not None else " (from $NPURT_COHERENCE)"
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"unknown coherence mode {given!r}{source}; known: "
                                                   f"{', '.join(MODES)}")
    return name


def sync_mode(mode: int | str | SyncMode) -> SyncMode:
    """Normalise a sync direction given as SyncMode, its int value or a name ("to_device", "from_device", "both")."""
    if isinstance(mode, str):
        key = mode.strip().lower().replace("-", "_")
        names = {"to_device": SyncMode.TO_DEVICE, "from_device": SyncMode.FROM_DEVICE,
                 "both": SyncMode.BIDIRECTIONAL, "bidirectional": SyncMode.BIDIRECTIONAL}
        if key in names:
            return names[key]
    elif isinstance(mode, int) and not isinstance(mode, bool) and mode in (1, 2, 3):
        return SyncMode(mode)
    raise NpuError(ErrorCode.INVALID_ARGUMENT, f"invalid sync mode {mode!r}")


def snapshot(view: np.ndarray) -> int:
    """A cheap fingerprint of a byte view (CRC-32): equal bytes give equal snapshots."""
    return zlib.crc32(view)
