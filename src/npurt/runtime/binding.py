"""Memory references and I/O bindings of a context, and the guard that keeps two runs off one piece of memory.

`MemRef` is "`size` bytes at `offset` of a device `Buffer`" — what every bind call takes (the RKNN mirror resolves
an `rknn_tensor_mem` to one). `IoBinding` is one bound input or output: the user's memory, the format the user
declared, the native format, and, when the two differ, the runtime-owned native staging buffer the executor uses
while the runtime converts around each run.

`RunGuard`: contexts that share internal memory (the vendor's internal-memory reuse: several models, one
internal buffer) must run one after the other. While a context runs, the file ranges of its internal memory are
registered; a second context whose internal memory overlaps them gets BUSY instead of corrupting both runs.
Ranges are keyed by the backing file (st_dev, st_ino) and byte range, so a buffer and every import or wrapper of
the same memory collide, whatever address each of them has.
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.model.attrs import TensorAttr

Key = tuple[int, int, int, int]     # (st_dev, st_ino, start, end) of a byte range of a backing file


@dataclass
class MemRef:
    """`size` bytes at `offset` inside a live device `Buffer`."""

    buffer: Any                  # npurt.memory.Buffer
    offset: int = 0
    size: int | None = None
    label: str = ""

    def __post_init__(self) -> None:
        if self.size is None:
            self.size = self.buffer.size - self.offset
        if self.offset < 0 or self.size < 0 or self.offset + self.size > self.buffer.size:
            raise NpuError(ErrorCode.INVALID_ARGUMENT,
                           f"memory [{self.offset}, {self.offset + self.size}) is outside its {self.buffer.size}-byte "
                           f"buffer")

    @property
    def alive(self) -> bool:
        return self.buffer.alive

    @property
    def runtime_known(self) -> bool:
        """Allocated by the runtime (not imported user memory): the runtime does its cache maintenance."""
        return not self.buffer.imported

    def require_alive(self, what: str) -> None:
        if not self.buffer.alive:
            raise NpuError(ErrorCode.INVALID_HANDLE, f"{what}: its memory has been destroyed")

    def device_u8(self) -> np.ndarray:
        """The bytes as the device sees them (what the executor and the runtime's conversions use)."""
        return self.buffer.device_view(np.uint8, offset=self.offset, nbytes=self.size)

    def keys(self) -> list[Key]:
        """The backing-file byte ranges of this memory (see the module doc)."""
        return file_keys(self.buffer, self.offset, self.size)


def file_keys(buffer: Any, offset: int, size: int) -> list[Key]:
    keys: list[Key] = []
    cursor = 0
    for fd, part_off, length in buffer.fd_parts:
        lo, hi = max(offset, cursor), min(offset + size, cursor + length)
        if lo < hi:
            try:
                st = os.fstat(fd)
                ident = (st.st_dev, st.st_ino)
            except OSError:
                ident = (-1, id(buffer.region) if buffer.region is not None else id(buffer))
            keys.append((ident[0], ident[1], part_off + lo - cursor, part_off + hi - cursor))
        cursor += length
    if not keys:
        keys.append((-2, id(buffer), offset, offset + size))
    return keys


def overlaps(a: list[Key], b: list[Key]) -> bool:
    """True when two sets of backing-file byte ranges share a byte."""
    return any(x[:2] == y[:2] and x[2] < y[3] and y[2] < x[3] for x in a for y in b)


@dataclass
class IoBinding:
    """One bound input or output (see the module doc)."""

    index: int
    is_input: bool
    ref: MemRef
    user: TensorAttr             # the format the user declared for the buffer
    native: TensorAttr
    shape: tuple[int, ...]       # logical shape
    staging: Any = None          # runtime-owned native Buffer when the user's format needs a conversion

    @property
    def direct(self) -> bool:
        return self.staging is None

    def executor_view(self) -> np.ndarray:
        """The memory the executor reads (input) or writes (output): the user's, or the staging buffer."""
        if self.staging is not None:
            return self.staging.device_view(np.uint8)
        return self.ref.device_u8()


@dataclass
class _Active:
    owner: int
    keys: list[Key] = field(default_factory=list)


class RunGuard:
    """Process-wide registry of memory in use by running contexts (see the module doc)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active: dict[int, _Active] = {}

    def enter(self, owner: int, keys: Sequence[Key], what: str) -> None:
        """Register `owner`'s `keys` for a run; BUSY if another running owner holds an overlapping range."""
        with self._lock:
            for other in self._active.values():
                if other.owner == owner:
                    continue
                for a in keys:
                    for b in other.keys:
                        if a[0] == b[0] and a[1] == b[1] and a[2] < b[3] and b[2] < a[3]:
                            raise NpuError(ErrorCode.BUSY,
                                           f"{what} is in use by another context that is running now; contexts "
                                           f"sharing it must run one after the other")
            self._active[owner] = _Active(owner, list(keys))

    def leave(self, owner: int) -> None:
        with self._lock:
            self._active.pop(owner, None)


run_guard = RunGuard()
