"""`Device`: one per SoC per process — the DDR heap, the SRAM region, the device address space, imports,
coherence and accounting, with every buffer released in one place (`Device._release`).

Opening: `open_device(soc)` returns the process's device for that SoC, creating it on first use; every further
open returns the *same* object with its reference count raised, and `close()` lowers it. The last `close()`
releases whatever buffers are left, reports them as leaks (returned, and logged on `npurt.memory`) and closes the
SRAM memfd. A re-open that asks for a different coherence mode, DDR limit or domain size than the open device
has fails with BUSY (the device is in use with other settings); passing None accepts whatever is open.
"""
from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
from typing import Sequence

import numpy as np

from npurt import forksafe
from npurt.errors import ErrorCode, NpuError
from npurt.memory import coherence as coh
from npurt.memory.accounting import Accounting, MemoryStats
from npurt.memory.address_space import DEFAULT_DOMAIN_SIZE, AddressSpace, RangeMap
from npurt.memory.buffer import DDR, SRAM, SRAM_DDR, Buffer, Region
from npurt.memory.coherence import SyncMode
from npurt.memory.identity import FileId, FileRange, close_if_ours, file_id
from npurt.memory.mapping import (PAGE_SIZE, SEAL_HOW, HostMapping, map_anonymous, map_fd, map_parts, maps_file,
                                  ndarray_at, new_memfd, page_round, seal_against_shrink, typed_view)
from npurt.memory.sram import SramBitmap
from npurt.soc import SocProfile, get_profile

log = logging.getLogger("npurt.memory")

MAX_FD = 1 << 31            # fds are C ints
MAX_SIZE = 1 << 46          # 64 TiB: anything larger is not a size but a bug (negative int cast, garbage)
PLACEMENTS = ("ddr", "sram", "sram_first")

_registry: dict[str, Device] = {}
_registry_lock = forksafe.rlock()


@forksafe.after_fork
def _forget_inherited() -> None:
    """In a forked child: the parent's devices (their SRAM file is shared with it) are not reopened."""
    global _registry
    forksafe.inherit(_registry)
    _registry = {}


def open_device(soc: str | None = None, coherence: str | None = None, ddr_limit: int | None = None,
                domain_size: int | None = None) -> Device:
    """The device for `soc` (None: `$NPURT_SOC`, else rk3588), opened or re-opened (refcounted; see module doc).

    coherence: "coherent" (default; None also reads `$NPURT_COHERENCE`), "strict" or "check".
    ddr_limit: cap on owned DDR bytes (None: unlimited). domain_size: device address space (default 4 GiB).
    """
    profile = get_profile(soc)
    if domain_size is not None and (isinstance(domain_size, bool) or not isinstance(domain_size, int)):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"domain_size must be an int, got {domain_size!r}")
    with _registry_lock:
        device = _registry.get(profile.name)
        if device is not None:
            wanted = {"coherence": coh.check_mode(coherence) if coherence is not None else None,
                      "ddr_limit": ddr_limit, "domain_size": domain_size}
            have = {"coherence": device.coherence, "ddr_limit": device.ddr_limit,
                    "domain_size": device.domain_size}
            for key, value in wanted.items():
                if value is not None and value != have[key]:
                    raise NpuError(ErrorCode.BUSY, f"device {profile.name} is open with {key}={have[key]!r}; "
                                                   f"cannot re-open it with {key}={value!r}")
            device._refs += 1
            return device
        device = Device(profile, coh.check_mode(coherence), ddr_limit, domain_size or DEFAULT_DOMAIN_SIZE)
        _registry[profile.name] = device
        return device


def open_devices() -> list[Device]:
    """The devices currently open in this process."""
    with _registry_lock:
        return list(_registry.values())


def _check_size(size, what: str = "size") -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} must be an int, got {type(size).__name__}")
    size = int(size)
    if size <= 0:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} must be positive, got {size}")
    if size > MAX_SIZE:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} {size} is absurd (limit {MAX_SIZE})")
    return size


def _close_owned_fd(fd: int, files: Sequence[FileId]) -> None:
    """Close an fd npurt owns — only while it still names its file (`files`): if user code closed it behind npurt's
    back (and the number may now be another file of the caller's), log it and close nothing."""
    if not close_if_ours(fd, files):
        log.warning("fd %d owned by npurt was already closed by someone else (its number may name another file "
                    "now); not closed again", fd)


class Device:
    """The NPU's memory as one process sees it; thread-safe.

    Get one with `open_device` (registered, one per SoC; RKNN and HTP SoCs alike: an HTP device's fast-memory
    region is its VTCM, the profile's `sram_size`). Constructing `Device(profile, coherence, ddr_limit,
    domain_size)` directly gives an unregistered device (e.g. for a made-up profile); its first `close()` tears it
    down.
    """

    def __init__(self, profile: SocProfile, coherence: str, ddr_limit: int | None, domain_size: int) -> None:
        if ddr_limit is not None and (isinstance(ddr_limit, bool) or not isinstance(ddr_limit, int)
                                      or ddr_limit < 0):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"ddr_limit must be a non-negative int, got {ddr_limit!r}")
        self.profile = profile
        self.soc = profile.name
        self.coherence = coherence
        self.ddr_limit = ddr_limit
        self.domain_size = domain_size
        self.closed = False
        self.last_leaks: list[dict] = []
        self._refs = 1
        self._lock = forksafe.rlock()
        self._space = AddressSpace(domain_size)
        self._by_dev = RangeMap()            # dev_addr -> Buffer, over [dev_addr, dev_addr + capacity)
        self._by_host = RangeMap()           # host mapping start -> (Region, HostMapping)
        self._buffers: dict[int, Buffer] = {}
        self._imports: dict[FileId, Region] = {}   # imported file -> its shared import region
        self._next_handle = 1
        self._acct = Accounting()
        self._sram = SramBitmap(profile.sram_size)
        self.sram_base = profile.sram_base
        self._sram_fd = -1
        self._sram_file: FileId = (0, 0)
        if profile.sram_size:
            try:
                self._sram_fd = new_memfd(f"npurt-sram-{profile.name}", profile.sram_size)
                self._sram_file = file_id(self._sram_fd)
            except OSError as exc:
                raise NpuError(ErrorCode.OUT_OF_MEMORY, f"cannot create the SRAM region: {exc}") from None
            self._acct.open_fds += 1

    # -- lifetime --------------------------------------------------------------------------------------
    def close(self) -> list[dict]:
        """Drop one reference; the last one releases every buffer left (returned as leak records) and the SRAM."""
        with _registry_lock, self._lock:
            if self.closed:
                return []
            self._refs -= 1
            if self._refs > 0:
                return []
            leaks = [buf.describe() for buf in self._buffers.values()]
            for buf in list(self._buffers.values()):
                self._release(buf)
            for leak in leaks:
                log.warning("device %s closed with a live buffer (leak): %s", self.soc, leak)
            if self._sram_fd >= 0:
                _close_owned_fd(self._sram_fd, [self._sram_file])
                self._sram_fd = -1
                self._acct.open_fds -= 1
            self.closed = True
            if _registry.get(self.soc) is self:
                del _registry[self.soc]
            self.last_leaks = leaks
            return leaks

    def __enter__(self) -> Device:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _require_open(self) -> None:
        if self.closed:
            raise NpuError(ErrorCode.INVALID_HANDLE, f"device {self.soc} is closed")

    # -- allocation ------------------------------------------------------------------------------------
    def alloc(self, size: int, *, placement: str = "ddr", cacheable: bool = True, owner: str = "user",
              name: str = "", one_file: bool = False) -> Buffer:
        """A new zeroed buffer of `size` bytes (page-rounded underneath).

        placement: "ddr" (a memfd of its own), "sram" (SRAM only; OUT_OF_MEMORY when it does not fit,
        NOT_SUPPORTED on SoCs without SRAM) or "sram_first" (as much SRAM as fits contiguously, the rest in DDR,
        mapped contiguously in host and device address space).
        one_file: the bytes are one memfd of the buffer's own from offset 0, whatever the placement — a dma-buf
        as the driver hands one out (its fd maps the whole buffer); the SRAM pages are still reserved and counted,
        but their bytes live in that file rather than in the SRAM region's.
        """
        size = _check_size(size)
        if placement not in PLACEMENTS:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"placement must be one of {PLACEMENTS}, got {placement!r}")
        rounded = page_round(size)
        with self._lock, contextlib.ExitStack() as undo:
            self._require_open()
            sram_off, sram_len = -1, 0
            if placement == "sram":
                if not self._sram.size:
                    raise NpuError(ErrorCode.NOT_SUPPORTED, f"{self.soc} has no NPU SRAM")
                sram_off, sram_len = self._sram.allocate(rounded), rounded
            elif placement == "sram_first" and self._sram.size:
                sram_off, sram_len = self._sram.allocate_up_to(rounded)
                if not sram_len:
                    sram_off = -1
            if sram_len:
                undo.callback(self._sram.release, sram_off, sram_len)
            ddr_len = rounded - sram_len
            if ddr_len and self.ddr_limit is not None and self._acct.ddr + ddr_len > self.ddr_limit:
                raise NpuError(ErrorCode.OUT_OF_MEMORY,
                               f"DDR limit reached: {ddr_len} bytes requested, {self._acct.ddr} of "
                               f"{self.ddr_limit} in use")
            iova = self._space.allocate(rounded)
            undo.callback(self._space.release, iova)
            ddr_fd = -1
            parts, files = [], []
            try:
                if sram_len and not one_file:
                    parts.append((self._sram_fd, sram_off, sram_len))
                    files.append(self._sram_file)
                own_len = rounded if one_file else ddr_len
                if own_len:
                    ddr_fd = new_memfd(f"npurt-{self.soc}-{name or 'buf'}", own_len)
                    undo.callback(os.close, ddr_fd)
                    parts.append((ddr_fd, 0, own_len))
                    files.append(file_id(ddr_fd))
                if len(parts) == 1:
                    device_map = map_fd(parts[0][0], rounded, parts[0][1])
                else:
                    device_map = map_parts(parts)
                cpu_map = device_map
                if self.coherence == coh.STRICT and cacheable:
                    cpu_map = map_anonymous(rounded)
            except OSError as exc:
                raise NpuError(ErrorCode.OUT_OF_MEMORY, f"cannot allocate {size} bytes: {exc}") from None
            region = Region(device_map, cpu_map, [ddr_fd] if ddr_fd >= 0 else [], bool(cacheable))
            placed = DDR if not sram_len else (SRAM if not ddr_len else SRAM_DDR)
            single = parts[0] if len(parts) == 1 else (-1, 0, 0)
            buf = Buffer(self, self._take_handle(), region, 0, size, capacity=rounded, iova=iova, dev_addr=iova,
                         placement=placed, sram_offset=sram_off, sram_size=sram_len, ddr_size=ddr_len,
                         fd=single[0], fd_offset=single[1], fd_parts=tuple(parts), files=tuple(files),
                         owner=owner, imported=False, name=name)
            self._register(buf, new_region=True)
            undo.pop_all()
            return buf

    def import_fd(self, fd: int, size: int | None = None, offset: int = 0, *, cacheable: bool = True,
                  owner: str = "user", name: str = "") -> Buffer:
        """Make `size` bytes of a user-owned, mmap-able fd at `offset` known to the device (never closes `fd`).

        The fd is validated with fstat (a memfd; `offset + size` within its size) and must be sealed against
        shrinking (sealed here with F_SEAL_SHRINK when it allows it; refused otherwise), so that no holder of the
        fd can truncate it under the mapping. Importing the
        same file again (any fd of the same inode) shares one host mapping, refcounted; each import is its own
        buffer with its own device address. size None means "to the end of the file".
        """
        if isinstance(fd, bool) or not isinstance(fd, (int, np.integer)) or not 0 <= fd < MAX_FD:
            raise NpuError(ErrorCode.INVALID_HANDLE, f"invalid fd {fd!r}")
        if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)) or offset < 0:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"offset must be a non-negative int, got {offset!r}")
        fd, offset = int(fd), int(offset)
        try:
            st = os.fstat(fd)
        except OSError as exc:
            code = ErrorCode.INVALID_HANDLE if exc.errno == errno.EBADF else ErrorCode.INVALID_ARGUMENT
            raise NpuError(code, f"fd {fd}: {exc.strerror}") from None
        if not stat.S_ISREG(st.st_mode):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"fd {fd} is not an mmap-able file (mode {st.st_mode:o})")
        if not seal_against_shrink(fd):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"fd {fd} could shrink under the mapping (a regular file or "
                                                       f"an unsealable memfd): {SEAL_HOW}")
        st = os.fstat(fd)                     # the size now that it can no longer shrink
        if size is None:
            size = st.st_size - offset
            if size <= 0:
                raise NpuError(ErrorCode.INVALID_ARGUMENT, f"fd {fd}: offset {offset} is at or past the end "
                                                           f"of its {st.st_size} bytes")
        size = _check_size(size)
        if offset + size > st.st_size:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"fd {fd}: offset {offset} + size {size} is past the end "
                                                       f"of its {st.st_size} bytes")
        first_page = offset & ~(PAGE_SIZE - 1)
        span = page_round(offset + size) - first_page
        key = file_id(st)                     # this import's identity, read here once
        with self._lock, contextlib.ExitStack() as undo:
            self._require_open()
            region = self._imports.get(key)
            new_region = region is None or region.device_map.length < offset + size
            if new_region:
                length = page_round(st.st_size)
                try:
                    device_map = map_fd(fd, length, 0)
                except OSError as exc:
                    raise NpuError(ErrorCode.INVALID_ARGUMENT, f"fd {fd} cannot be mapped: {exc.strerror}") from None
                cpu_map = device_map
                if self.coherence == coh.STRICT and cacheable:
                    try:
                        cpu_map = map_anonymous(length)
                    except OSError as exc:
                        raise NpuError(ErrorCode.OUT_OF_MEMORY, f"cannot map a CPU view: {exc}") from None
                    np.copyto(ndarray_at(cpu_map, 0, st.st_size), ndarray_at(device_map, 0, st.st_size))
                region = Region(device_map, cpu_map, [], bool(cacheable), key)
            iova = self._space.allocate(span)
            undo.callback(self._space.release, iova)
            buf = Buffer(self, self._take_handle(), region, offset, size, capacity=size, iova=iova,
                         dev_addr=iova + (offset - first_page), placement=DDR, sram_offset=-1, sram_size=0,
                         ddr_size=0, fd=fd, fd_offset=offset, fd_parts=((fd, offset, size),), files=(key,),
                         owner=owner, imported=True, name=name)
            if self.coherence == coh.CHECK and region.cacheable:
                buf._snapshot = coh.snapshot(buf._raw_cpu())
            self._register(buf, new_region=new_region)
            if new_region:
                self._imports[key] = region
            undo.pop_all()
            return buf

    def compose(self, parts: list[tuple[Buffer, int, int]], *, owner: str = "user", name: str = "") -> Buffer:
        """One buffer over pieces of live buffers of this device, back to back: `parts` are (buffer, offset, size)
        in address order. Like a "sram_first" allocation that spilled (SRAM part, then DDR part), the pieces are
        mapped contiguously in host memory (`map_parts`) and given one contiguous device address range, so one
        numpy view spans them all and writes go straight to the pieces' memory.

        The composite owns no memory: it holds no SRAM or DDR of its own (accounting counts its pieces once, in
        their own buffers) and no fd; freeing it releases its device addresses and its tables entry only. Each
        offset must be page-aligned in its piece's memory, and each size but the last a page multiple.
        """
        if not parts:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, "compose needs at least one (buffer, offset, size) part")
        file_parts: list[tuple[int, int, int]] = []
        files: list[FileId] = []
        total = 0
        with self._lock, contextlib.ExitStack() as undo:
            self._require_open()
            for k, (buf, offset, size) in enumerate(parts):
                if not isinstance(buf, Buffer) or buf.device is not self or self._buffers.get(buf.handle) is not buf:
                    raise NpuError(ErrorCode.INVALID_HANDLE, f"part {k}: {buf!r} is not a live buffer of {self.soc}")
                size = _check_size(size, f"part {k} size")
                if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)) or offset < 0 \
                        or offset + size > buf.capacity:
                    raise NpuError(ErrorCode.INVALID_ARGUMENT, f"part {k}: [{offset}, +{size}) is outside {buf!r}")
                if k < len(parts) - 1 and size % PAGE_SIZE:
                    raise NpuError(ErrorCode.INVALID_ARGUMENT, f"part {k}: size {size} is not a page multiple "
                                                               f"(only the last part may end mid-page)")
                pieces = buf.file_pieces(int(offset), size)
                if any(off % PAGE_SIZE for _, off, _, _ in pieces):
                    raise NpuError(ErrorCode.INVALID_ARGUMENT, f"part {k}: offset {offset} is not page-aligned in "
                                                               f"its memory")
                file_parts += [(fd, off, n) for fd, off, n, _ in pieces]
                files += [file for _, _, _, file in pieces]
                total += size
            try:
                device_map = map_parts(file_parts)
            except OSError as exc:
                raise NpuError(ErrorCode.OUT_OF_MEMORY, f"cannot map the composite buffer: {exc}") from None
            rounded = page_round(total)
            iova = self._space.allocate(rounded)
            undo.callback(self._space.release, iova)
            region = Region(device_map, device_map, [], all(b.cacheable for b, _, _ in parts))
            srams = [b.sram_size > 0 for b, _, _ in parts]
            placed = SRAM if all(srams) else (SRAM_DDR if any(srams) else DDR)
            buf = Buffer(self, self._take_handle(), region, 0, total, capacity=rounded, iova=iova, dev_addr=iova,
                         placement=placed, sram_offset=-1, sram_size=0, ddr_size=0, fd=-1, fd_offset=0,
                         fd_parts=tuple(file_parts), files=tuple(files), owner=owner, imported=False, name=name)
            self._register(buf, new_region=True)
            undo.pop_all()
            return buf

    def _take_handle(self) -> int:
        handle = self._next_handle
        self._next_handle += 1
        return handle

    def _register(self, buf: Buffer, new_region: bool) -> None:
        """Enter a new buffer into the tables and the accounting (called with the lock held)."""
        region = buf.region
        if new_region:
            self._by_host.insert(region.device_map.addr, region.device_map.addr + region.device_map.length,
                                 (region, region.device_map))
            if region.split_cpu:
                self._by_host.insert(region.cpu_map.addr, region.cpu_map.addr + region.cpu_map.length,
                                     (region, region.cpu_map))
        self._by_dev.insert(buf.dev_addr, buf.dev_addr + buf.capacity, buf)
        region.buffers.append(buf)
        self._buffers[buf.handle] = buf
        self._acct.add(buf.owner, buf.ddr_size, buf.sram_size, buf.size if buf.imported else 0,
                       len(region.owned_fds) if new_region else 0)

    # -- release: the one place ------------------------------------------------------------------------
    def free(self, buf: Buffer) -> None:
        """Release `buf`: device address, SRAM, accounting and fd at once; INVALID_HANDLE if not live here."""
        with self._lock:
            if not isinstance(buf, Buffer) or buf.device is not self or self._buffers.get(buf.handle) is not buf:
                raise NpuError(ErrorCode.INVALID_HANDLE, f"{buf!r} is not a live buffer of device {self.soc}")
            self._release(buf)

    def _release(self, buf: Buffer) -> None:
        """The one place a buffer is released (called with the lock held): tables, device address, SRAM,
        accounting, then the fds its region owns. The host mapping goes when the last view of it does."""
        region = buf.region
        self._by_dev.remove(buf.dev_addr)
        self._space.release(buf.iova)
        if buf.sram_size:
            self._sram.release(buf.sram_offset, buf.sram_size)
        region.buffers.remove(buf)
        fds: list[int] = []
        if not region.buffers:
            self._by_host.remove(region.device_map.addr)
            if region.split_cpu:
                self._by_host.remove(region.cpu_map.addr)
            if region.key is not None and self._imports.get(region.key) is region:
                del self._imports[region.key]
            fds, region.owned_fds = region.owned_fds, []
        del self._buffers[buf.handle]
        self._acct.remove(buf.owner, buf.ddr_size, buf.sram_size, buf.size if buf.imported else 0, len(fds))
        buf._detach()
        for fd in fds:
            _close_owned_fd(fd, buf.files)

    # -- lookups ---------------------------------------------------------------------------------------
    def lookup_device(self, dev_addr: int, nbytes: int = 1) -> tuple[Buffer, int]:
        """(buffer, offset) holding device addresses [dev_addr, dev_addr + nbytes); INVALID_HANDLE otherwise."""
        with self._lock:
            hit = self._by_dev.find(int(dev_addr), int(nbytes)) if nbytes >= 0 else None
            if hit is None:
                raise NpuError(ErrorCode.INVALID_HANDLE,
                               f"device address {int(dev_addr):#x} (+{nbytes}) is not in any buffer of {self.soc}")
            start, _, buf = hit
            return buf, int(dev_addr) - start

    def _find_host(self, addr: int, nbytes: int) -> tuple[Buffer, int, HostMapping, int]:
        hit = self._by_host.find(addr, nbytes) if nbytes >= 0 else None
        if hit is not None:
            start, _, (region, mapping) = hit
            in_map = addr - start
            for buf in region.buffers:
                if buf.window <= in_map and in_map + nbytes <= buf.window + buf.capacity:
                    return buf, in_map - buf.window, mapping, in_map
        raise NpuError(ErrorCode.INVALID_HANDLE,
                       f"host address {addr:#x} (+{nbytes}) is not inside any buffer of {self.soc}")

    def lookup_host(self, addr: int, nbytes: int = 1) -> tuple[Buffer, int]:
        """(buffer, offset) whose CPU or device view holds host addresses [addr, addr + nbytes)."""
        with self._lock:
            buf, offset, _, _ = self._find_host(int(addr), int(nbytes))
            return buf, offset

    def resolve(self, dev_addr: int, virt_addr: int, nbytes: int) -> tuple[Buffer, int]:
        """(buffer, offset) for a (device address, host address, size) triple as `create_mem_from_phys` gets it:
        [dev_addr, dev_addr + nbytes) must lie in one live buffer, at any offset of it, and `virt_addr` (0: none
        given) must hold the same memory (`holds`); INVALID_HANDLE otherwise, and INVALID_ARGUMENT for a range that
        runs past the bytes of the buffer it starts in (inside its page rounding). The one resolver of device
        addresses given together with a host address."""
        nbytes = _check_size(nbytes, "nbytes")
        with self._lock:
            buf, offset = self.lookup_device(dev_addr, nbytes)
            if offset + nbytes > buf.size:
                raise NpuError(ErrorCode.INVALID_ARGUMENT, f"phys_addr {int(dev_addr):#x} + size {nbytes} runs past "
                                                           f"the {buf.size}-byte memory it starts in")
            if virt_addr and not self.holds(int(virt_addr), buf.file_ranges(offset, nbytes)):
                raise NpuError(ErrorCode.INVALID_HANDLE,
                               f"virt_addr {int(virt_addr):#x} is not the CPU address of phys_addr {int(dev_addr):#x} "
                               f"(expected {buf.virt_addr + offset:#x}): not the same memory")
            return buf, offset

    def holds(self, addr: int, ranges: tuple[FileRange, ...]) -> bool:
        """True when host addresses from `addr` are the file bytes `ranges` (`npurt.memory.identity`), back to back:
        a view of a live buffer over exactly those bytes (its CPU view or its device view), or shared mappings of
        those files at those offsets (the caller's own, per /proc/self/maps)."""
        if not ranges:
            return False
        nbytes = sum(end - start for _, _, start, end in ranges)
        with self._lock:
            try:
                buf, offset, _, _ = self._find_host(int(addr), nbytes)
                if buf.file_ranges(offset, nbytes) == ranges:
                    return True
            except NpuError:
                pass
        cursor = int(addr)
        for dev, ino, start, end in ranges:
            if not maps_file(cursor, end - start, (dev, ino), start):
                return False
            cursor += end - start
        return True

    def view_at(self, addr: int, nbytes: int, dtype=np.uint8, shape=None) -> np.ndarray:
        """A numpy view of a raw host address, only after checking that [addr, addr + nbytes) lies in a live
        buffer's mapping; INVALID_HANDLE otherwise. The view keeps its mapping alive."""
        nbytes = _check_size(nbytes, "nbytes")
        with self._lock:
            _, _, mapping, in_map = self._find_host(int(addr), nbytes)
            raw = ndarray_at(mapping, in_map, nbytes)
        try:
            return typed_view(raw, dtype, shape, 0, nbytes)
        except (ValueError, TypeError) as exc:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"view_at {int(addr):#x}: {exc}") from None

    def buffers(self) -> list[Buffer]:
        """The live buffers, in creation order."""
        with self._lock:
            return list(self._buffers.values())

    # -- coherence -------------------------------------------------------------------------------------
    def _sync(self, buf: Buffer, mode: SyncMode) -> None:
        with self._lock:
            if not buf.alive or self._buffers.get(buf.handle) is not buf:
                raise NpuError(ErrorCode.INVALID_HANDLE, f"{buf!r} is not a live buffer of device {self.soc}")
            cpu, dev = buf._raw_cpu(), buf._raw_dev()
            split = buf.region.split_cpu
        copied = 0
        if split:
            if mode & SyncMode.TO_DEVICE:        # flush (clean): CPU view -> memory; the CPU view stays valid
                np.copyto(dev, cpu)
                copied = buf.size
            elif mode & SyncMode.FROM_DEVICE:    # invalidate: memory -> CPU view
                np.copyto(cpu, dev)
                copied = buf.size
        with self._lock:
            if self.coherence == coh.CHECK and buf.cacheable:
                if mode & SyncMode.TO_DEVICE:
                    buf._snapshot = coh.snapshot(cpu)
                if mode & SyncMode.FROM_DEVICE:
                    buf._device_wrote = False
            if mode & SyncMode.TO_DEVICE:
                buf.syncs_to_device += 1
                self._acct.syncs_to_device += 1
            if mode & SyncMode.FROM_DEVICE:
                buf.syncs_from_device += 1
                self._acct.syncs_from_device += 1
            self._acct.sync_bytes += copied

    # -- reports ---------------------------------------------------------------------------------------
    def stats(self) -> MemoryStats:
        """A snapshot of the accounting (see `MemoryStats`)."""
        with self._lock:
            return self._acct.snapshot(
                soc=self.soc, coherence=self.coherence, sram_total=self._sram.size, sram_free=self._sram.free,
                sram_largest_free=self._sram.largest_free(), domain_size=self._space.size,
                domain_used=self._space.used, ddr_limit=self.ddr_limit)

    def sram_dump(self) -> str:
        """The SRAM bitmap exactly as the RKNPU driver's `/sys/kernel/debug/rknpu/mm` prints it."""
        with self._lock:
            return self._sram.dump()

    def sram_addr(self, buf: Buffer) -> int:
        """The SRAM (device-tree) address of a buffer's SRAM part; INVALID_ARGUMENT if it has none."""
        if not buf.sram_size:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{buf!r} has no SRAM part")
        return self.sram_base + buf.sram_offset

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"refs={self._refs}"
        return f"<Device {self.soc} {self.coherence} {state} buffers={len(self._buffers)}>"
