"""rpcmem: the libcdsprpc allocator the QNN HTP shared-buffer tutorial uses, backed by npurt device memory.

`rpcmem_alloc(heapid, flags, size)` returns the buffer's base address as an int (C's `void*`; 0 is NULL). The
memory is a real memfd (`rpcmem_to_fd` gives its fd), mapped once, page aligned, known to the HTP device as an
imported buffer (so it has a device address too), exactly as qualcomm/fastrpc `rpcmem_linux.c` allocates a dma-buf
from the system heap and maps the whole fd.

C rules kept on purpose:
- `size` of `rpcmem_alloc` is a signed 32-bit `int`: values >= 2 GiB wrap negative and fail (use `rpcmem_alloc2`).
- `rpcmem_to_fd` and `rpcmem_free` look the pointer up by its **exact base address**. An interior pointer
  (base + offset) gives -1 / is silently ignored — and the buffer is then never freed: the leak ONNX Runtime hit
  (PR 23892). `rpcmem_leaks()` lists what is still allocated.
- `rpcmem_free` of an unknown pointer (or twice) is ignored, as in C.

Python helper: `rpcmem_view(ptr, nbytes, dtype, shape)` — a numpy view of rpcmem memory, validated to lie inside a
live allocation (INVALID_HANDLE otherwise); the view keeps the mapping alive even after `rpcmem_free`.
"""
from __future__ import annotations

import ctypes
import logging
import os
from dataclasses import dataclass

import numpy as np

from npurt import forksafe
from npurt.errors import ErrorCode, NpuError
from npurt.memory import Buffer, Device
from npurt.memory.address_space import RangeMap
from npurt.memory.device import MAX_SIZE
from npurt.memory.identity import FileId, close_if_ours
from npurt.memory.mapping import new_memfd, page_round, typed_view
from npurt.qnn import device as htp_device
from npurt.qnn.constants import (RPCMEM_DEFAULT_HEAP, RPCMEM_HEAP_ID_CONTIG, RPCMEM_HEAP_ID_SECURE,
                                 RPCMEM_HEAP_ID_SYSTEM, RPCMEM_HEAP_ID_SYSTEM_CONTIG, RPCMEM_HEAP_UNCACHED)

log = logging.getLogger("npurt.qnn")

CONTIG_LIMIT = 8 << 20      # RPCMEM_HEAP_ID_CONTIG serves < 8 MB (qualcomm/fastrpc)
_KNOWN_HEAPS = {RPCMEM_HEAP_ID_SYSTEM, RPCMEM_HEAP_ID_CONTIG, RPCMEM_HEAP_ID_SYSTEM_CONTIG, RPCMEM_DEFAULT_HEAP}


@dataclass
class RpcAllocation:
    """One live rpcmem buffer: its fd (owned here), its device buffer, heap and flags."""

    fd: int
    buffer: Buffer
    device: Device
    heapid: int
    flags: int
    size: int

    @property
    def base(self) -> int:
        return self.buffer.virt_addr

    @property
    def file(self) -> FileId:
        """The memfd's identity (read once, when the buffer imported it): tells it from a reused fd number."""
        return self.buffer.files[0]

    def fd_is_ours(self) -> bool:
        """True while `fd` still refers to this allocation's memfd (the user may have closed it and the number
        been reused by an unrelated file)."""
        return self.buffer.backed_by(self.fd)


_lock = forksafe.rlock()
_by_base: dict[int, RpcAllocation] = {}
_by_fd: dict[int, RpcAllocation] = {}
_ranges = RangeMap()                    # [base, base + size) -> allocation, for interior-pointer lookups


@forksafe.after_fork
def _forget_inherited() -> None:
    """In a forked child: the parent's allocations are no rpcmem buffers of the child (their memory is shared)."""
    global _by_base, _by_fd, _ranges
    forksafe.inherit((_by_base, _by_fd, _ranges))
    _by_base, _by_fd, _ranges = {}, {}, RangeMap()


def _alloc(heapid: int, flags: int, size: int, soc: str | None) -> int:
    if heapid not in _KNOWN_HEAPS:
        what = "the secure heap cannot be mapped by the CPU" if heapid == RPCMEM_HEAP_ID_SECURE else "unknown heap"
        log.error("<E> rpcmem_alloc: heap id %d: %s", heapid, what)
        return 0
    if size <= 0 or size > MAX_SIZE:
        log.error("<E> rpcmem_alloc: invalid size %d", size)
        return 0
    if heapid in (RPCMEM_HEAP_ID_CONTIG, RPCMEM_HEAP_ID_SYSTEM_CONTIG) and size >= CONTIG_LIMIT:
        log.error("<E> rpcmem_alloc: contiguous heap serves < 8 MB, %d requested", size)
        return 0
    cacheable = bool(flags & 1) and not (flags & RPCMEM_HEAP_UNCACHED)
    with _lock:
        device, _ = htp_device.acquire(soc)
        try:
            fd = new_memfd("npurt-rpcmem", page_round(size))
        except OSError as exc:
            htp_device.release(device)
            log.error("<E> rpcmem_alloc(%d): %s", size, exc)
            return 0
        try:
            buf = device.import_fd(fd, size, 0, cacheable=cacheable, owner="rpcmem", name="rpcmem")
        except NpuError as exc:
            os.close(fd)
            htp_device.release(device)
            log.error("<E> rpcmem_alloc(%d): %s", size, exc)
            return 0
        rec = RpcAllocation(fd, buf, device, int(heapid), int(flags), int(size))
        _by_base[rec.base] = rec
        _by_fd[fd] = rec
        _ranges.insert(rec.base, rec.base + rec.size, rec)
    log.info("<I> rpcmem_alloc(heap %d, flags 0x%x, %d bytes) = 0x%x (fd %d)", int(heapid), int(flags), int(size),
             rec.base, fd)
    return rec.base


def rpcmem_alloc(heapid: int, flags: int, size: int, *, soc: str | None = None) -> int:
    """`void* rpcmem_alloc(int heapid, uint32 flags, int size)`: a page-aligned shared buffer, 0 on failure.

    `size` is converted as C converts it to `int` (so 2 GiB and more wrap and fail). `soc` (npurt's addition)
    picks the HTP device; None uses `$NPURT_SOC` if it is an HTP SoC, else sm8350.
    """
    args = _c_args(heapid, flags, size)
    return 0 if args is None else _alloc(args[0], args[1], ctypes.c_int32(args[2]).value, soc)


def _c_args(heapid: object, flags: object, size: object) -> tuple[int, int, int] | None:
    """The three integer arguments as C receives them (flags as uint32); None (logged) for a non-integer."""
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in (heapid, flags, size)):
        log.error("<E> rpcmem_alloc: heapid, flags and size must be integers, got %r, %r, %r", heapid, flags, size)
        return None
    return ctypes.c_int32(int(heapid)).value, int(flags) & 0xFFFFFFFF, int(size)


def rpcmem_alloc2(heapid: int, flags: int, size: int, *, soc: str | None = None) -> int:
    """`void* rpcmem_alloc2(int heapid, uint32 flags, size_t size)`: as `rpcmem_alloc`, size is a size_t."""
    args = _c_args(heapid, flags, size)
    return 0 if args is None else _alloc(args[0], args[1], ctypes.c_uint64(args[2]).value, soc)


def rpcmem_alloc_def(size: int) -> int:
    """`rpcmem_alloc_def(size)`: the system heap with the default flags."""
    return rpcmem_alloc(RPCMEM_HEAP_ID_SYSTEM, 1, size)


def _ptr(po: object) -> int:
    """The pointer value as C sees it: an unsigned 64-bit address (-1 is 0xffffffffffffffff)."""
    if isinstance(po, ctypes.c_void_p):
        return po.value or 0
    if isinstance(po, int) and not isinstance(po, bool):
        return po & 0xFFFF_FFFF_FFFF_FFFF
    return 0


def rpcmem_to_fd(po: object) -> int:
    """`int rpcmem_to_fd(void* po)`: the fd of the buffer whose **base** is `po`; -1 otherwise (interior too)."""
    with _lock:
        rec = _by_base.get(_ptr(po))
        return rec.fd if rec is not None else -1


def rpcmem_free(po: object) -> None:
    """`void rpcmem_free(void* po)`: free the buffer whose base is `po`. Unknown or interior pointers are
    ignored silently, as in C — an interior pointer therefore leaks the whole buffer."""
    with _lock:
        rec = _by_base.pop(_ptr(po), None)
        if rec is None:
            log.debug("rpcmem_free(0x%x): not an rpcmem base address, ignored", _ptr(po))
            return
        del _by_fd[rec.fd]
        _ranges.remove(rec.base)
        _drop_registrations(rec.base, rec.size)
    try:
        if rec.buffer.alive:
            rec.device.free(rec.buffer)
    finally:
        if not close_if_ours(rec.fd, rec.buffer.files):
            log.warning("rpcmem_free(0x%x): fd %d was closed by the caller (or now names another file); not closed "
                        "again", rec.base, rec.fd)
        htp_device.release(rec.device)


# ---------------------------------------------------------------------------------------------------------
# FastRPC buffer registration (remote.h): what the QNN EP's shared-memory allocator calls beside rpcmem
# ---------------------------------------------------------------------------------------------------------
_registered: dict[int, tuple[int, int, int]] = {}      # address -> (size, fd, attr)


def remote_register_buf_attr2(buf: object, size: int, fd: int, attr: int) -> None:
    """`void remote_register_buf_attr2(void *buf, size_t size, int fd, int attr)`: register [buf, buf + size) of the
    rpcmem allocation that owns `fd` with FastRPC (the buffer can then cross to the DSP without a copy); fd -1
    deregisters `buf`. A range outside that allocation, an fd of no rpcmem buffer, or deregistering what is not
    registered is refused with one `<E>` line and changes nothing (the call returns nothing, as in C)."""
    addr, size, fd = _ptr(buf), int(size), int(fd)
    if fd == -1:
        with _lock:
            found = _registered.pop(addr, None)
        if found is None:
            log.error("<E> remote_register_buf: deregistering 0x%x: not a registered buffer; ignored", addr)
        else:
            log.info("<I> remote_register_buf: 0x%x (%d bytes, fd %d) deregistered", addr, found[0], found[1])
        return
    rec = lookup_fd(fd)
    hit = lookup_ptr(addr, size) if size > 0 else None
    if rec is None or hit is None or hit[0] is not rec:
        why = ("fd %d is not an rpcmem buffer's" % fd if rec is None else
               "[0x%x, +%d) is not inside the rpcmem buffer of fd %d (base 0x%x, %d bytes)"
               % (addr, size, fd, rec.base, rec.size))
        log.error("<E> remote_register_buf: 0x%x size %d fd %d refused: %s", addr, size, fd, why)
        return
    with _lock:
        _registered[addr] = (size, fd, int(attr))
    log.info("<I> remote_register_buf: 0x%x (%d bytes at offset %d of fd %d, attr 0x%x) registered", addr, size,
             hit[1], fd, int(attr))


def remote_register_buf_attr(buf: object, size: int, fd: int, attr: int) -> None:
    """`void remote_register_buf_attr(void *buf, int size, int fd, int attr)`: as `remote_register_buf_attr2` with an
    `int` size (negative: refused)."""
    if int(size) < 0:
        log.error("<E> remote_register_buf: size %d is negative (an int size caps at 2 GiB)", int(size))
        return
    remote_register_buf_attr2(buf, size, fd, attr)


def remote_register_buf(buf: object, size: int, fd: int) -> None:
    """`void remote_register_buf(void *buf, int size, int fd)`: `remote_register_buf_attr` with no attributes."""
    remote_register_buf_attr(buf, size, fd, 0)


def remote_registered() -> dict[int, tuple[int, int, int]]:
    """The FastRPC registrations live now: address -> (size, fd, attr)."""
    with _lock:
        return dict(_registered)


def _drop_registrations(base: int, size: int) -> None:
    """rpcmem_free deregisters what lies in the buffer it frees (as FastRPC's rpcmem does)."""
    for addr in [a for a in _registered if base <= a < base + size]:
        del _registered[addr]


def lookup_fd(fd: int) -> RpcAllocation | None:
    """The live rpcmem allocation owning `fd` (the registry's "known to FastRPC" test), or None."""
    with _lock:
        rec = _by_fd.get(int(fd)) if isinstance(fd, int) else None
    return rec if rec is not None and rec.fd_is_ours() else None


def lookup_ptr(ptr: int, nbytes: int = 1) -> tuple[RpcAllocation, int] | None:
    """(allocation, offset) of the live allocation holding [ptr, ptr + nbytes), or None."""
    with _lock:
        hit = _ranges.find(int(ptr), max(int(nbytes), 1)) if nbytes >= 0 else None
    if hit is None:
        return None
    return hit[2], int(ptr) - hit[0]


def rpcmem_view(po: object, nbytes: int | None = None, dtype=np.uint8, shape=None, offset: int = 0) -> np.ndarray:
    """A numpy view of rpcmem memory at `po + offset` (npurt's stand-in for dereferencing the pointer).

    nbytes None means "to the end of the allocation" (or as many bytes as `shape` needs). INVALID_HANDLE when the
    range is not inside one live allocation; the view keeps the mapping alive after `rpcmem_free`.
    """
    addr = _ptr(po) + int(offset)
    dt = np.dtype(dtype)
    if nbytes is None and shape is not None:
        nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    hit = lookup_ptr(addr, 1 if nbytes is None else nbytes)
    if hit is None:
        raise NpuError(ErrorCode.INVALID_HANDLE, f"{addr:#x} (+{nbytes}) is not inside a live rpcmem buffer")
    rec, off = hit
    if nbytes is None:
        nbytes = rec.size - off
    try:
        return typed_view(rec.buffer.cpu_view(), dt, shape, off, nbytes)
    except ValueError as exc:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"rpcmem_view: {exc}") from None


def rpcmem_leaks() -> list[dict]:
    """The allocations still live (base, fd, size): what a leak check looks at."""
    with _lock:
        return [{"base": r.base, "fd": r.fd, "size": r.size, "heapid": r.heapid} for r in _by_base.values()]
