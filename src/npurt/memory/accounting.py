"""Memory accounting: live bytes per placement, buffer and fd counts, peaks, imported vs owned, sync counters.

`Accounting` is the device's mutable tally (updated only by `Device` under its lock); `MemoryStats` is the frozen
snapshot `Device.stats()` hands out — what `RKNN_QUERY_MEM_SIZE` and memory reports read.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping


@dataclass(frozen=True)
class MemoryStats:
    """A snapshot of one device's memory use. Byte counts of owned memory are page-rounded (as allocated)."""

    soc: str
    coherence: str
    ddr_bytes: int              # owned DDR (heap buffers and the DDR part of SRAM+DDR buffers)
    sram_bytes: int             # SRAM in use
    imported_bytes: int         # bytes of imported (user-owned) memory currently known to the device
    buffers: int                # live buffers, owned + imported
    owned_buffers: int
    imported_buffers: int
    open_fds: int               # fds the device owns (one per DDR buffer, plus the SRAM region's memfd)
    peak_ddr_bytes: int
    peak_sram_bytes: int
    peak_imported_bytes: int
    peak_buffers: int
    allocations: int            # buffers created so far (owned + imported)
    releases: int               # buffers released so far (free, or close of the device)
    sram_total: int
    sram_free: int
    sram_largest_free: int
    domain_size: int            # device address space size
    domain_used: int
    ddr_limit: int | None
    syncs_to_device: int
    syncs_from_device: int
    sync_bytes_copied: int      # bytes moved by syncs (strict mode only; 0 otherwise)
    by_owner: Mapping[str, tuple[int, int]] = field(default_factory=dict)   # owner -> (buffers, bytes)

    @property
    def live_bytes(self) -> int:
        """Owned device memory in use (DDR + SRAM)."""
        return self.ddr_bytes + self.sram_bytes

    def as_dict(self) -> dict:
        """A plain dict (for JSON and reports)."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["by_owner"] = dict(self.by_owner)
        return out


class Accounting:
    """Mutable counters behind `MemoryStats`; `add`/`remove` are the only way buffers enter or leave the tally."""

    def __init__(self) -> None:
        self.ddr = self.sram = self.imported = 0
        self.owned_buffers = self.imported_buffers = 0
        self.open_fds = 0
        self.peak_ddr = self.peak_sram = self.peak_imported = self.peak_buffers = 0
        self.allocations = self.releases = 0
        self.syncs_to_device = self.syncs_from_device = self.sync_bytes = 0
        self.by_owner: dict[str, list[int]] = {}

    def add(self, owner: str, ddr: int, sram: int, imported: int, fds: int) -> None:
        """Count a new buffer."""
        self.ddr += ddr
        self.sram += sram
        self.imported += imported
        self.open_fds += fds
        if imported:
            self.imported_buffers += 1
        else:
            self.owned_buffers += 1
        self.allocations += 1
        slot = self.by_owner.setdefault(owner, [0, 0])
        slot[0] += 1
        slot[1] += ddr + sram + imported
        self.peak_ddr = max(self.peak_ddr, self.ddr)
        self.peak_sram = max(self.peak_sram, self.sram)
        self.peak_imported = max(self.peak_imported, self.imported)
        self.peak_buffers = max(self.peak_buffers, self.owned_buffers + self.imported_buffers)

    def remove(self, owner: str, ddr: int, sram: int, imported: int, fds: int) -> None:
        """Uncount a released buffer."""
        self.ddr -= ddr
        self.sram -= sram
        self.imported -= imported
        self.open_fds -= fds
        if imported:
            self.imported_buffers -= 1
        else:
            self.owned_buffers -= 1
        self.releases += 1
        slot = self.by_owner[owner]
        slot[0] -= 1
        slot[1] -= ddr + sram + imported
        if slot[0] == 0:
            del self.by_owner[owner]

    def snapshot(self, **device_fields) -> MemoryStats:
        """Freeze the counters together with the device-level fields passed in."""
        return MemoryStats(
            ddr_bytes=self.ddr, sram_bytes=self.sram, imported_bytes=self.imported,
            buffers=self.owned_buffers + self.imported_buffers, owned_buffers=self.owned_buffers,
            imported_buffers=self.imported_buffers, open_fds=self.open_fds,
            peak_ddr_bytes=self.peak_ddr, peak_sram_bytes=self.peak_sram, peak_imported_bytes=self.peak_imported,
            peak_buffers=self.peak_buffers, allocations=self.allocations, releases=self.releases,
            syncs_to_device=self.syncs_to_device, syncs_from_device=self.syncs_from_device,
            sync_bytes_copied=self.sync_bytes,
            by_owner=MappingProxyType({k: (v[0], v[1]) for k, v in self.by_owner.items()}),
            **device_fields)
