"""Host mappings: libc `mmap`/`munmap` through ctypes, and numpy views that keep their mapping alive.

A `HostMapping` is the one owner of one host address range. It is unmapped by a finalizer when the last
reference to it is gone: the buffer that created it, or any numpy view built by `ndarray_at` (each view's
base chain holds the mapping). Destroying a buffer therefore never invalidates a live view, and no Python
code can touch unmapped memory through npurt.
"""
from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import weakref

import numpy as np

from npurt.memory.identity import FileId

PAGE_SIZE = 4096

PROT_NONE = 0x0
PROT_READ = 0x1
PROT_WRITE = 0x2
MAP_SHARED = 0x01
MAP_PRIVATE = 0x02
MAP_FIXED = 0x10
MAP_ANONYMOUS = 0x20
MAP_NORESERVE = 0x4000
MAP_FIXED_NOREPLACE = 0x100000

_libc = ctypes.CDLL(None, use_errno=True)
_mmap = _libc.mmap
_mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_mmap.restype = ctypes.c_void_p
_munmap = _libc.munmap
_munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_munmap.restype = ctypes.c_int
_MAP_FAILED = ctypes.c_void_p(-1).value


def page_round(nbytes: int) -> int:
    """`nbytes` rounded up to a whole number of 4 KiB pages."""
    return (nbytes + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1)


def _raw_mmap(addr: int | None, length: int, prot: int, flags: int, fd: int, offset: int) -> int:
    result = _mmap(addr, length, prot, flags, fd, offset)
    if result is None or result == _MAP_FAILED:
        err = ctypes.get_errno()
        raise OSError(err, f"mmap(length={length}, fd={fd}, offset={offset}): {os.strerror(err)}")
    return int(result)


def _unmap(addr: int, length: int) -> None:
    _munmap(addr, length)


class HostMapping:
    """One host address range [addr, addr + length) that npurt mapped and will unmap exactly once."""

    __slots__ = ("addr", "length", "_finalizer", "__weakref__")

    def __init__(self, addr: int, length: int) -> None:
        self.addr = addr
        self.length = length
        self._finalizer = weakref.finalize(self, _unmap, addr, length)
        # At interpreter exit the process unmaps everything anyway; unmapping earlier could pull memory
        # from under a view still referenced by a module global.
        self._finalizer.atexit = False

    @property
    def mapped(self) -> bool:
        """True until the mapping has been unmapped (which only happens once nothing references it)."""
        return self._finalizer.alive

    def __repr__(self) -> str:
        return f"HostMapping({self.addr:#x}, {self.length})"


def map_fd(fd: int, length: int, offset: int = 0) -> HostMapping:
    """Map `length` bytes of `fd` from `offset` (page-aligned) read-write and shared; OSError on failure."""
    return HostMapping(_raw_mmap(None, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset), length)


def map_fd_at(fd: int, length: int, offset: int, addr: int) -> HostMapping:
    """Map `length` bytes of `fd` at exactly host address `addr`, never over an existing mapping; OSError
    (EEXIST) when the range is taken."""
    got = _raw_mmap(addr, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, offset)
    if got != addr:             # a kernel without MAP_FIXED_NOREPLACE takes the address as a hint only
        _unmap(got, length)
        raise OSError(errno.EEXIST, f"mmap at 0x{addr:x}: {os.strerror(errno.EEXIST)}")
    return HostMapping(got, length)


def map_anonymous(length: int) -> HostMapping:
    """A private zero-filled anonymous mapping (the strict mode's separate CPU view)."""
    addr = _raw_mmap(None, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
    return HostMapping(addr, length)


def map_parts(parts: list[tuple[int, int, int]]) -> HostMapping:
    """Map several (fd, offset, length) pieces back to back into one contiguous host range.

    An address range is reserved with an anonymous PROT_NONE mapping, then each piece is mapped over it with
    MAP_FIXED. Every length but the last must be page-aligned. One `HostMapping` owns the whole range.
    """
    total = sum(page_round(length) for _, _, length in parts)
    base = _raw_mmap(None, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
    try:
        cursor = base
        for fd, offset, length in parts:
            _raw_mmap(cursor, page_round(length), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, offset)
            cursor += page_round(length)
    except OSError:
        _unmap(base, total)
        raise
    return HostMapping(base, total)


class _MappedMemory:
    """The base object of every numpy view npurt builds: it holds the mapping the view points into."""

    __slots__ = ("mapping", "__array_interface__")

    def __init__(self, mapping: HostMapping, addr: int, nbytes: int, readonly: bool) -> None:
        self.mapping = mapping
        self.__array_interface__ = {"data": (addr, readonly), "shape": (nbytes,), "typestr": "|u1",
                                    "version": 3}


def ndarray_at(mapping: HostMapping, offset: int, nbytes: int, readonly: bool = False) -> np.ndarray:
    """A uint8 numpy view of `nbytes` at `offset` inside `mapping`; the view keeps the mapping alive."""
    if offset < 0 or nbytes < 0 or offset + nbytes > mapping.length:
        raise ValueError(f"view [{offset}, {offset + nbytes}) outside {mapping!r}")
    return np.asarray(_MappedMemory(mapping, mapping.addr + offset, nbytes, readonly))


def typed_view(raw: np.ndarray, dtype=np.uint8, shape=None, offset: int = 0, nbytes: int | None = None) -> np.ndarray:
    """Reinterpret part of a uint8 view as `dtype` with `shape` (1-D over the bytes when shape is None)."""
    dtype = np.dtype(dtype)
    if nbytes is None:
        if shape is not None:
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        else:
            nbytes = ((raw.nbytes - offset) // dtype.itemsize) * dtype.itemsize
    if offset < 0 or nbytes < 0 or offset + nbytes > raw.nbytes:
        raise ValueError(f"view [{offset}, {offset + nbytes}) outside {raw.nbytes} bytes")
    if nbytes % dtype.itemsize:
        raise ValueError(f"{nbytes} bytes is not a whole number of {dtype} elements")
    out = raw[offset:offset + nbytes].view(dtype)
    return out if shape is None else out.reshape(shape)


def new_memfd(name: str, length: int) -> int:
    """A fresh sealed memfd of `length` bytes (size sealed so no holder can shrink it under a mapping).

    The caller owns the returned fd. OSError on failure (nothing left open).
    """
    fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, length)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
    except OverflowError:
        os.close(fd)
        raise OSError(errno.EFBIG, f"memfd of {length} bytes: {os.strerror(errno.EFBIG)}") from None
    except BaseException:
        os.close(fd)
        raise
    return fd


SEAL_HOW = ("create it with memfd_create(name, MFD_ALLOW_SEALING) and seal it with fcntl(fd, F_ADD_SEALS, "
            "F_SEAL_SHRINK), or pass a dma-buf")


def seal_against_shrink(fd: int) -> bool:
    """Make sure nobody can shrink `fd` under a mapping of it (an access past the new end would be SIGBUS):
    True when it is already sealed with F_SEAL_SHRINK or could be sealed now; False for an fd that cannot be
    sealed (a regular file, a memfd created without MFD_ALLOW_SEALING or sealed against further seals)."""
    try:
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    except (OSError, OverflowError, ValueError):
        return False
    if seals & fcntl.F_SEAL_SHRINK:
        return True
    try:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)
    except OSError:
        return False
    return True


def _maps_entries():
    """(start, end, perms, file offset, (major, minor), inode) of each line of /proc/self/maps, in address order."""
    with open("/proc/self/maps", "rb") as f:
        for line in f:
            fields = line.split(None, 5)
            if len(fields) < 5:
                continue
            lo, hi = fields[0].split(b"-")
            major, minor = fields[3].split(b":")
            yield (int(lo, 16), int(hi, 16), fields[1].decode(), int(fields[2], 16), (int(major, 16), int(minor, 16)),
                   int(fields[4]))


def maps_file(addr: int, nbytes: int, file: FileId, file_offset: int) -> bool:
    """True when host addresses [addr, addr + nbytes) are readable shared mappings of `file` ((st_dev, st_ino)),
    with `addr` at byte `file_offset` of it (checked against /proc/self/maps: device, inode and file offset of every
    mapping the range crosses). How a caller's own mapping of an fd is told from any other pointer."""
    ident = ((os.major(file[0]), os.minor(file[0])), file[1])
    cursor, end, want = int(addr), int(addr) + int(nbytes), int(file_offset)
    if nbytes <= 0 or cursor <= 0:
        return False
    for lo, hi, perms, off, dev, inode in _maps_entries():
        if hi <= cursor:
            continue
        if lo > cursor or (dev, inode) != ident or perms[0] != "r" or perms[3] != "s" \
                or off + (cursor - lo) != want:
            return False
        step = min(hi, end) - cursor
        cursor, want = cursor + step, want + step
        if cursor >= end:
            return True
    return False
