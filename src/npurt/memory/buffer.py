"""`Buffer`: one piece of device memory (fd, host mapping, device address, size, placement, owner), and
`Region`: the host memory one or more buffers live in (imports of the same file share one region).

Views: `cpu_view()` / `view()` is what user code reads and writes (the CPU's side of the cache); `device_view()`
is what the executor reads and writes (the memory the NPU sees). They are the same memory except for cacheable
buffers of a `strict` device, where the CPU view is separate and only `sync()` moves bytes between the two.

Identity: `file_ranges(offset, size)` is which file bytes a buffer's bytes are (`npurt.memory.identity`), read once
when the buffer is made; every "is this the same memory?" question compares those.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.memory import coherence
from npurt.memory.coherence import SyncMode
from npurt.memory.identity import FileId, FileRange, file_id, merged
from npurt.memory.mapping import HostMapping, ndarray_at, typed_view

if TYPE_CHECKING:
    from npurt.memory.device import Device

DDR = "ddr"
SRAM = "sram"
SRAM_DDR = "sram+ddr"


class Region:
    """Host memory behind buffers: the device mapping, the CPU mapping (the same one unless strict and
    cacheable), and the fds this region owns (closed when the last buffer using it is released)."""

    __slots__ = ("device_map", "cpu_map", "owned_fds", "key", "buffers", "cacheable")

    def __init__(self, device_map: HostMapping, cpu_map: HostMapping, owned_fds: list[int],
                 cacheable: bool, key: tuple | None = None) -> None:
        self.device_map = device_map
        self.cpu_map = cpu_map
        self.owned_fds = owned_fds
        self.cacheable = cacheable
        self.key = key
        self.buffers: list[Buffer] = []

    @property
    def split_cpu(self) -> bool:
        """True when the CPU view is separate memory (strict mode, cacheable)."""
        return self.cpu_map is not self.device_map


class Buffer:
    """A live piece of device memory. Create it with `Device.alloc` / `Device.import_fd`; release it with
    `free()` (or `Device.free`). Attributes are plain values; after `free()` views and syncs raise INVALID_HANDLE,
    while views taken before stay valid memory (their mapping lives until the last view is gone)."""

    def __init__(self, device: Device, handle: int, region: Region, window: int, size: int, *,
                 capacity: int, iova: int, dev_addr: int, placement: str, sram_offset: int, sram_size: int,
                 ddr_size: int,
                 fd: int, fd_offset: int, fd_parts: tuple[tuple[int, int, int], ...], files: tuple[FileId, ...],
                 owner: str, imported: bool, name: str) -> None:
        self.device = device
        self.handle = handle
        self.size = size                    # bytes requested
        self.capacity = capacity            # bytes addressable from byte 0 (owned: page-rounded size)
        self.region: Region | None = region
        self.window = window                # offset of this buffer inside its region's mappings
        self.iova = iova                    # page-aligned start of its device address range
        self.dev_addr = dev_addr            # device address of byte 0 (iova + in-page offset of imports)
        self.placement = placement          # "ddr", "sram" or "sram+ddr"
        self.sram_offset = sram_offset      # offset inside the SoC SRAM region (-1 when no SRAM)
        self.sram_size = sram_size          # bytes of this buffer that live in SRAM (page-rounded)
        self.ddr_size = ddr_size            # bytes of owned DDR behind it (page-rounded; 0 for imports)
        self.fd = fd                        # the fd holding the memory (-1 for sram+ddr: see fd_parts)
        self.fd_offset = fd_offset
        self.fd_parts = fd_parts            # (fd, offset, length) pieces, in address order
        self.files = files                  # the file of each fd part (its identity: read once, at creation)
        self.cacheable = region.cacheable
        self.owner = owner
        self.imported = imported
        self.name = name
        self.virt_addr = region.cpu_map.addr + window            # the CPU view's host address (as in C)
        self.device_virt_addr = region.device_map.addr + window  # the device view's host address
        self.syncs_to_device = 0
        self.syncs_from_device = 0
        self._snapshot: int | None = None   # check mode: CRC at last sync to device (None: all zeros)
        self._device_wrote = False          # check mode: device wrote since the last sync from device
        self._dev_cache: np.ndarray | None = None      # uint8 views over [0, size), made on first use
        self._cpu_cache: np.ndarray | None = None

    # -- state -----------------------------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        """False once the buffer has been freed (or released by the device's close)."""
        return self.region is not None

    @property
    def phys_addr(self) -> int:
        """The device address (what `rknn_tensor_mem.phys_addr` reports)."""
        return self.dev_addr

    def file_pieces(self, offset: int = 0, size: int | None = None) -> list[tuple[int, int, int, FileId]]:
        """The (fd, file offset, length, file) pieces behind bytes [offset, offset + size), in address order;
        INVALID_ARGUMENT when the buffer's fds do not hold them all."""
        size = self.size - offset if size is None else size
        out, cursor = [], 0
        for (fd, part_off, length), file in zip(self.fd_parts, self.files):
            lo, hi = max(offset, cursor), min(offset + size, cursor + length)
            if lo < hi:
                out.append((fd, part_off + lo - cursor, hi - lo, file))
            cursor += length
        if offset < 0 or sum(n for _, _, n, _ in out) != size:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"[{offset}, +{size}) of {self!r} is not backed by its fds")
        return out

    def file_ranges(self, offset: int = 0, size: int | None = None) -> tuple[FileRange, ...]:
        """The identity of bytes [offset, offset + size): the file byte ranges behind them (`npurt.memory.identity`),
        from what was read at creation — no system call, valid after `free()` too."""
        return merged((*file, off, off + n) for _, off, n, file in self.file_pieces(offset, size))

    def backed_by(self, fd: int) -> bool:
        """True when `fd` names, now, a file this buffer's bytes are in: a dup()ed fd counts, a closed fd or a number
        since reused for another file does not."""
        try:
            return file_id(fd) in self.files
        except (OSError, OverflowError, TypeError):
            return False

    def _require_alive(self) -> None:
        if self.region is None:
            raise NpuError(ErrorCode.INVALID_HANDLE, f"buffer #{self.handle} has been freed")

    def _raw_dev(self) -> np.ndarray:
        if self._dev_cache is None:
            self._dev_cache = ndarray_at(self.region.device_map, self.window, self.size)
        return self._dev_cache

    def _raw_cpu(self) -> np.ndarray:
        if not self.region.split_cpu:
            return self._raw_dev()
        if self._cpu_cache is None:
            self._cpu_cache = ndarray_at(self.region.cpu_map, self.window, self.size)
        return self._cpu_cache

    # -- views -----------------------------------------------------------------------------------------
    def cpu_view(self, dtype=np.uint8, shape=None, offset: int = 0, nbytes: int | None = None) -> np.ndarray:
        """The CPU's view (what user code writes and reads), as `dtype`/`shape` from byte `offset`."""
        self._require_alive()
        return self._typed(self._raw_cpu(), dtype, shape, offset, nbytes)

    view = cpu_view

    def device_view(self, dtype=np.uint8, shape=None, offset: int = 0, nbytes: int | None = None) -> np.ndarray:
        """The device's view (what the executor reads and writes), as `dtype`/`shape` from byte `offset`."""
        self._require_alive()
        return self._typed(self._raw_dev(), dtype, shape, offset, nbytes)

    def _typed(self, raw, dtype, shape, offset, nbytes) -> np.ndarray:
        try:
            return typed_view(raw, dtype, shape, offset, nbytes)
        except (ValueError, TypeError) as exc:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"buffer #{self.handle} ({self.size} bytes): {exc}") from None

    # -- coherence -------------------------------------------------------------------------------------
    def sync(self, mode: int | str | SyncMode = SyncMode.BIDIRECTIONAL) -> None:
        """Cache maintenance: TO_DEVICE (flush CPU writes), FROM_DEVICE (invalidate: see device writes), or both."""
        self._require_alive()
        self.device._sync(self, coherence.sync_mode(mode))

    def note_device_write(self) -> None:
        """The executor wrote this buffer: the CPU must sync FROM_DEVICE before reading (check mode tracks it)."""
        self._require_alive()
        if self.device.coherence == coherence.CHECK and self.cacheable:
            self._device_wrote = True
            self._snapshot = coherence.snapshot(self._raw_dev())

    def cpu_written_since_sync(self) -> bool:
        """Check mode: has the CPU changed this cacheable buffer since its last sync to device? (False otherwise.)"""
        self._require_alive()
        if self.device.coherence != coherence.CHECK or not self.cacheable:
            return False
        if self._snapshot is None:
            return bool(self._raw_cpu().any())
        return coherence.snapshot(self._raw_cpu()) != self._snapshot

    @property
    def needs_sync_from_device(self) -> bool:
        """Check mode: the device wrote this cacheable buffer and the CPU has not synced FROM_DEVICE since."""
        return self._device_wrote

    # -- lifetime --------------------------------------------------------------------------------------
    def free(self) -> None:
        """Release the buffer (device address, SRAM, accounting, fd); INVALID_HANDLE if already freed."""
        self.device.free(self)

    def _detach(self) -> None:
        """Forget the region and views (the device calls this once, when it releases the buffer)."""
        self.region = None
        self._dev_cache = self._cpu_cache = None

    def __enter__(self) -> Buffer:
        return self

    def __exit__(self, *exc) -> None:
        if self.alive:
            self.free()

    def describe(self) -> dict:
        """A plain dict of the buffer's identity and placement (for reports and leak messages)."""
        return {"handle": self.handle, "name": self.name, "owner": self.owner, "size": self.size,
                "placement": self.placement, "dev_addr": self.dev_addr, "virt_addr": self.virt_addr,
                "fd": self.fd, "cacheable": self.cacheable, "imported": self.imported}

    def __repr__(self) -> str:
        state = "" if self.alive else " freed"
        return (f"<Buffer #{self.handle} {self.name or ''} {self.size} B {self.placement} dev={self.dev_addr:#x} "
                f"virt={self.virt_addr:#x} owner={self.owner}{state}>")
