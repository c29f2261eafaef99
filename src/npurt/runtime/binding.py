"""Memory references and I/O bindings of a context, and the guard that keeps two runs off one piece of memory.

`MemRef` is "`size` bytes at `offset` of a device `Buffer`" — what every bind call takes (the RKNN mirror resolves
an `rknn_tensor_mem` to one). `IoBinding` is one bound input or output: the user's memory, the format the user
declared, the native format, and, when the two differ, the runtime-owned native staging buffer the executor uses
while the runtime converts around each run.

`RunGuard`: contexts that share internal memory (the vendor's internal-memory reuse: several models, one
internal buffer) must run one after the other. While a context runs, the file ranges of its internal memory are
registered; a second context whose internal memory overlaps them gets BUSY instead of corrupting both runs.
Ranges are the buffers' identity (`npurt.memory.identity`: backing file and byte range, read when each buffer was
made), so a buffer and every import or wrapper of the same memory collide, whatever address each of them has.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from npurt import forksafe
from npurt.errors import ErrorCode, NpuError
from npurt.memory.identity import FileRange, overlaps
from npurt.model.attrs import TensorAttr


@dataclass
class MemRef:
    """`size` bytes at `offset` inside a live device `Buffer`."""

    buffer: Any                  # npurt.memory.Buffer
    offset: int = 0
    size: int | None = None
    label: str = ""
    _ranges: tuple[FileRange, ...] | None = field(default=None, init=False, repr=False, compare=False)

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

    def file_ranges(self) -> tuple[FileRange, ...]:
        """The identity of this memory (`Buffer.file_ranges`; see the module doc), sliced on first use and kept:
        a reference names the same bytes for its whole life."""
        if self._ranges is None:
            self._ranges = self.buffer.file_ranges(self.offset, self.size)
        return self._ranges

    def overlaps(self, other: "MemRef") -> bool:
        """True when the two references share a byte of memory, whatever buffer or address each goes through."""
        return overlaps(self.file_ranges(), other.file_ranges())


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
    ranges: Sequence[FileRange] = ()


class RunGuard:
    """Process-wide registry of memory in use by running contexts (see the module doc)."""

    def __init__(self) -> None:
        self._lock = forksafe.lock()
        self._active: dict[int, _Active] = {}

    def enter(self, owner: int, ranges: Sequence[FileRange], what: str) -> None:
        """Register `owner`'s memory `ranges` for a run; BUSY if another running owner holds an overlapping range."""
        with self._lock:
            for other in self._active.values():
                if other.owner != owner and overlaps(ranges, other.ranges):
                    raise NpuError(ErrorCode.BUSY,
                                   f"{what} is in use by another context that is running now; contexts "
                                   f"sharing it must run one after the other")
            self._active[owner] = _Active(owner, ranges)

    def leave(self, owner: int) -> None:
        with self._lock:
            self._active.pop(owner, None)


run_guard = RunGuard()
