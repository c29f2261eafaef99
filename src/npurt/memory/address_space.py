"""Address bookkeeping: `RangeMap` (O(log n) lookups of non-overlapping ranges) and `AddressSpace`
(npurt's device address space: 4 KiB pages handed out first-fit inside a fixed-size domain)."""
from __future__ import annotations

import bisect
from typing import Any

from npurt.errors import ErrorCode, NpuError
from npurt.memory.mapping import PAGE_SIZE

DEFAULT_DOMAIN_SIZE = 4 << 30    # the board's IOMMU domain 0: 4 GiB for everything loaded
DOMAIN_BASE = PAGE_SIZE          # page 0 is never handed out: device address 0 stays NULL


class RangeMap:
    """Non-overlapping half-open ranges [start, end) with a payload; lookups bisect over sorted starts."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._entries: dict[int, tuple[int, Any]] = {}   # start -> (end, payload)

    def __len__(self) -> int:
        return len(self._starts)

    def insert(self, start: int, end: int, payload: Any) -> None:
        """Add [start, end); ValueError if it is empty or overlaps an existing range."""
        if end <= start:
            raise ValueError(f"empty range [{start:#x}, {end:#x})")
        i = bisect.bisect_right(self._starts, start)
        if i > 0 and self._entries[self._starts[i - 1]][0] > start:
            raise ValueError(f"range [{start:#x}, {end:#x}) overlaps")
        if i < len(self._starts) and self._starts[i] < end:
            raise ValueError(f"range [{start:#x}, {end:#x}) overlaps")
        self._starts.insert(i, start)
        self._entries[start] = (end, payload)

    def remove(self, start: int) -> Any:
        """Remove the range starting at `start` and return its payload (KeyError if there is none)."""
        _, payload = self._entries.pop(start)
        del self._starts[bisect.bisect_left(self._starts, start)]
        return payload

    def find(self, addr: int, nbytes: int = 1) -> tuple[int, int, Any] | None:
        """(start, end, payload) of the range holding all of [addr, addr + nbytes), or None."""
        i = bisect.bisect_right(self._starts, addr) - 1
        if i < 0:
            return None
        start = self._starts[i]
        end, payload = self._entries[start]
        if addr + max(nbytes, 1) > end:
            return None
        return start, end, payload

    def items(self) -> list[tuple[int, int, Any]]:
        """All ranges in address order."""
        return [(s, *self._entries[s]) for s in self._starts]


class AddressSpace:
    """A device address domain [base, base + size) handed out in whole pages, first fit, with coalescing."""

    def __init__(self, size: int = DEFAULT_DOMAIN_SIZE, base: int = DOMAIN_BASE) -> None:
        if size <= 0 or size % PAGE_SIZE or base % PAGE_SIZE:
            raise NpuError(ErrorCode.INVALID_ARGUMENT,
                           f"device address domain must be a positive multiple of {PAGE_SIZE} bytes, got {size}")
        self.base = base
        self.size = size
        self.used = 0
        self._free_starts: list[int] = [base]
        self._free: dict[int, int] = {base: size}     # free extent start -> length
        self._allocated: dict[int, int] = {}          # allocated start -> length

    def allocate(self, nbytes: int) -> int:
        """Reserve `nbytes` (page-rounded) and return the start; OUT_OF_MEMORY past the domain limit."""
        length = (nbytes + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1)
        for start in self._free_starts:
            extent = self._free[start]
            if extent >= length:
                del self._free[start]
                i = bisect.bisect_left(self._free_starts, start)
                if extent > length:
                    self._free_starts[i] = start + length
                    self._free[start + length] = extent - length
                else:
                    del self._free_starts[i]
                self._allocated[start] = length
                self.used += length
                return start
        raise NpuError(ErrorCode.OUT_OF_MEMORY,
                       f"device address space exhausted: {length} bytes requested, "
                       f"{self.size - self.used} of {self.size} free (largest hole {self.largest_free()})")

    def release(self, start: int) -> None:
        """Give back the range that `allocate` returned at `start`; coalesces with free neighbours."""
        length = self._allocated.pop(start)
        self.used -= length
        i = bisect.bisect_left(self._free_starts, start)
        end = start + length
        if i < len(self._free_starts) and self._free_starts[i] == end:      # merge with the next hole
            length += self._free.pop(end)
            del self._free_starts[i]
        if i > 0:
            prev = self._free_starts[i - 1]
            if prev + self._free[prev] == start:                             # merge with the previous hole
                self._free[prev] += length
                return
        self._free_starts.insert(i, start)
        self._free[start] = length

    def largest_free(self) -> int:
        """The largest free extent, in bytes."""
        return max(self._free.values(), default=0)
