"""The NPU SRAM region: a 4 KiB-granular bitmap allocator over the SoC's SRAM, and its debugfs dump.

`SramBitmap` is pure bookkeeping (pages in use); `format_sram_dump` prints it exactly as the RKNPU driver's
`/sys/kernel/debug/rknpu/mm` node does (seed `rknn-npu-sram.txt`). The backing memfd lives in `Device`.
"""
from __future__ import annotations

from npurt.errors import ErrorCode, NpuError
from npurt.memory.mapping import PAGE_SIZE

_ROW_BITS = 32
_HEADER = 'SRAM bitmap: "*" - used, "." - free (1bit = 4KB)'


class SramBitmap:
    """Which 4 KiB pages of an SRAM region are in use; allocations are runs of contiguous pages."""

    def __init__(self, size: int) -> None:
        if size < 0 or size % PAGE_SIZE:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"SRAM size must be a multiple of 4 KiB, got {size}")
        self.size = size
        self.pages = size // PAGE_SIZE
        self._used = bytearray(self.pages)      # 1 = used
        self.used_pages = 0

    @property
    def used(self) -> int:
        """Bytes in use."""
        return self.used_pages * PAGE_SIZE

    @property
    def free(self) -> int:
        """Bytes free (not necessarily contiguous)."""
        return self.size - self.used

    def _runs(self):
        """Yield (first_page, n_pages) of every free run, in address order."""
        page = 0
        used = self._used
        while page < self.pages:
            try:
                start = used.index(0, page)
            except ValueError:
                return
            try:
                end = used.index(1, start)
            except ValueError:
                end = self.pages
            yield start, end - start
            page = end

    def largest_free(self) -> int:
        """The largest contiguous free run, in bytes."""
        return max((n for _, n in self._runs()), default=0) * PAGE_SIZE

    def allocate(self, nbytes: int) -> int:
        """First-fit `nbytes` (page-rounded) of contiguous pages; returns the byte offset; OUT_OF_MEMORY if none."""
        need = (nbytes + PAGE_SIZE - 1) // PAGE_SIZE
        for start, n in self._runs():
            if n >= need:
                self._used[start:start + need] = b"\x01" * need
                self.used_pages += need
                return start * PAGE_SIZE
        raise NpuError(ErrorCode.OUT_OF_MEMORY,
                       f"SRAM exhausted: {need * PAGE_SIZE} bytes requested, {self.free} free, "
                       f"largest contiguous {self.largest_free()}")

    def allocate_up_to(self, nbytes: int) -> tuple[int, int]:
        """As much of `nbytes` as fits contiguously: (offset, length); length 0 when SRAM is full.

        The first run that holds everything wins; otherwise the largest run is taken whole.
        """
        need = (nbytes + PAGE_SIZE - 1) // PAGE_SIZE
        best = (0, 0)
        for start, n in self._runs():
            if n >= need:
                best = (start, need)
                break
            if n > best[1]:
                best = (start, n)
        start, n = best
        if n:
            self._used[start:start + n] = b"\x01" * n
            self.used_pages += n
        return start * PAGE_SIZE, n * PAGE_SIZE

    def release(self, offset: int, nbytes: int) -> None:
        """Mark the pages of [offset, offset + nbytes) free again."""
        start, n = offset // PAGE_SIZE, (nbytes + PAGE_SIZE - 1) // PAGE_SIZE
        # A range past the end would make the slice assignment below grow the bitmap (bytearray semantics).
        if start < 0 or start + n > self.pages or any(b == 0 for b in self._used[start:start + n]):
            raise NpuError(ErrorCode.INVALID_HANDLE, f"SRAM pages [{start}, {start + n}) are not all in use")
        self._used[start:start + n] = bytes(n)
        self.used_pages -= n

    def dump(self) -> str:
        """The debugfs `rknpu/mm` text for this bitmap."""
        return format_sram_dump(self._used, self.size)


def format_sram_dump(used_pages: bytes | bytearray, total_size: int) -> str:
    """The RKNPU driver's SRAM bitmap dump: rows of 32 pages, `*` used, `.` free, then the totals."""
    lines = [_HEADER]
    marks = "".join("*" if b else "." for b in used_pages)
    for row, first in enumerate(range(0, len(marks), _ROW_BITS)):
        lines.append(f"[{row:03d}] [{marks[first:first + _ROW_BITS]}]")
    used = sum(1 for b in used_pages if b) * PAGE_SIZE
    lines.append(f"SRAM total size: {total_size}, used: {used}, free: {total_size - used}")
    return "\n".join(lines) + "\n"
