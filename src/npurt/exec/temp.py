"""The executor's temp memory: host buffers a step needs only while it runs (ExecuTorch's split: the plan's arena is
the planned memory, these are the temp memory), shared by every step of one executor and counted in one place.

Each region is one flat byte buffer named by its role; a step takes a typed view of its first bytes at bind and
refills it on every run, so steps (which run one at a time) share it. A region grows by at least 2x; the smaller
buffer it replaces stays alive while earlier steps hold views of it, and is still counted, so `nbytes` is what
the executor really holds, within a few times its largest step's need (never a copy of all activations).
"""
from __future__ import annotations

import numpy as np


class TempMemory:
    """Named, growing host scratch regions shared by all steps of one executor, with their byte count."""

    def __init__(self) -> None:
        self._regions: dict[str, np.ndarray] = {}
        self._outgrown: dict[str, int] = {}       # role -> bytes of buffers it replaced (views of them remain)

    def take(self, role: str, dtype: np.dtype, n: int) -> np.ndarray:
        """A flat view of `n` elements of `dtype` at the start of region `role` (shared: valid while a step runs)."""
        dt = np.dtype(dtype)
        nbytes = n * dt.itemsize
        buf = self._regions.get(role)
        if buf is None or buf.size < nbytes:
            old = 0 if buf is None else buf.size
            if old:
                self._outgrown[role] = self._outgrown.get(role, 0) + old
            buf = self._regions[role] = np.empty(max(nbytes, 2 * old, 64), np.uint8)
        return buf[:nbytes].view(dt)

    def sizes(self) -> dict[str, int]:
        """Bytes held per role (its current buffer plus the ones it outgrew)."""
        return {role: buf.size + self._outgrown.get(role, 0) for role, buf in self._regions.items()}

    @property
    def nbytes(self) -> int:
        """All bytes of temp memory this executor holds."""
        return sum(self.sizes().values())

    def clear(self) -> None:
        """Drop every region (at rebind: the new steps take fresh views)."""
        self._regions.clear()
        self._outgrown.clear()
