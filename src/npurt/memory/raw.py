"""Guarded access to a caller's raw memory by integer address: the one way the mirrors touch a C pointer.

npurt never dereferences a caller's address blindly. Bytes are copied with `process_vm_readv` /
`process_vm_writev` on our own process, which the kernel lets a process do to itself and which fail with EFAULT
(instead of killing the interpreter with SIGSEGV / SIGBUS) when any byte of the range is not mapped. When an
address falls inside a live buffer of an open device, the whole range must lie inside that buffer: a C caller
that runs past the end of runtime memory gets INVALID_ARGUMENT, not the neighbouring buffer's bytes.
"""
from __future__ import annotations

import ctypes
import os
from typing import TypeVar

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.memory.device import open_devices

_libc = ctypes.CDLL(None, use_errno=True)


class _IoVec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


_readv = _libc.process_vm_readv
_readv.argtypes = [ctypes.c_int, ctypes.POINTER(_IoVec), ctypes.c_ulong, ctypes.POINTER(_IoVec), ctypes.c_ulong,
                   ctypes.c_ulong]
_readv.restype = ctypes.c_ssize_t
_writev = _libc.process_vm_writev
_writev.argtypes = _readv.argtypes
_writev.restype = ctypes.c_ssize_t

MAX_COPY = 1 << 31
ADDR_LIMIT = 1 << 64
T = TypeVar("T", bound=ctypes.Structure)


def _as_int(addr: object) -> int | None:
    """The integer value of a pointer-ish object (int, c_void_p, ctypes pointer, None -> None)."""
    if addr is None or isinstance(addr, bool):
        return None
    if isinstance(addr, (int, np.integer)):
        return int(addr)
    if isinstance(addr, ctypes.c_void_p):
        return addr.value
    if isinstance(addr, ctypes._Pointer):  # type: ignore[attr-defined]
        return ctypes.cast(addr, ctypes.c_void_p).value
    if isinstance(addr, (ctypes.Structure, ctypes.Union, ctypes.Array)):
        return ctypes.addressof(addr)
    return None


def pointer_value(addr: object) -> int:
    """The address held by a pointer-ish object; 0 for NULL or anything that is not a pointer."""
    value = _as_int(addr)
    return int(value) if value and 0 < value < ADDR_LIMIT else 0


def _transfer(fn, local: int, remote: int, nbytes: int) -> bool:
    if not remote or nbytes < 0 or nbytes > MAX_COPY or remote + nbytes > ADDR_LIMIT:
        return False
    if nbytes == 0:
        return True
    lv, rv = _IoVec(local, nbytes), _IoVec(remote, nbytes)
    return fn(os.getpid(), ctypes.byref(lv), 1, ctypes.byref(rv), 1, 0) == nbytes


def _check_owned(addr: int, nbytes: int, what: str) -> None:
    """INVALID_ARGUMENT when `addr` falls in a live buffer of an open device but [addr, addr + nbytes) leaves it."""
    for device in open_devices():
        try:
            buf, offset = device.lookup_host(addr, 1)
        except NpuError:
            continue
        try:
            device.lookup_host(addr, max(nbytes, 1))
        except NpuError:
            raise NpuError(ErrorCode.INVALID_ARGUMENT,
                           f"{what} {addr:#x} (+{nbytes}) runs past the end of {buf.name or 'buffer'} "
                           f"({buf.size} bytes, {buf.size - offset} left at that address)") from None
        return


def safe_copy_in(addr: int, dest: ctypes.Array | memoryview | bytearray, nbytes: int) -> bool:
    """Copy `nbytes` from raw address `addr` into writable `dest` (a ctypes array / bytearray / buffer).
    False (nothing copied that matters) when any byte of the source is not mapped or leaves npurt's buffer."""
    addr = pointer_value(addr)
    try:
        _check_owned(addr, nbytes, "address")
    except NpuError:
        return False
    local = ctypes.addressof(dest) if isinstance(dest, ctypes.Array) else \
        ctypes.addressof(ctypes.c_char.from_buffer(dest)) if nbytes else 0
    return _transfer(_readv, local, addr, nbytes)


LARGE = 1 << 20                 # reads above this size check the mappings before allocating their copy


def readable_span(addr: int, nbytes: int) -> bool:
    """True when [addr, addr + nbytes) lies in readable mappings of the process (`/proc/self/maps`), back to back:
    checked before a large copy is allocated, so a size that the memory does not back costs nothing."""
    end = addr + nbytes
    with open("/proc/self/maps", encoding="ascii") as maps:
        for line in maps:
            span, perms = line.split(None, 2)[:2]
            low, high = (int(x, 16) for x in span.split("-"))
            if high <= addr:
                continue
            if low > addr or "r" not in perms:
                return False
            addr = high
            if addr >= end:
                return True
    return False


def safe_read(addr: int, nbytes: int) -> bytes | None:
    """The `nbytes` at raw address `addr`, or None when the range is not (entirely) readable."""
    if nbytes < 0 or nbytes > MAX_COPY:
        return None
    if nbytes > LARGE and not readable_span(pointer_value(addr), nbytes):
        return None
    buf = ctypes.create_string_buffer(max(nbytes, 1))
    if not safe_copy_in(addr, buf, nbytes):
        return None
    return buf.raw[:nbytes]


def safe_write(addr: int, src_addr: int, nbytes: int) -> bool:
    """Copy `nbytes` from our own address `src_addr` (known good) to raw address `addr`; False on EFAULT or when
    the range leaves the npurt buffer `addr` falls in."""
    addr = pointer_value(addr)
    try:
        _check_owned(addr, nbytes, "address")
    except NpuError:
        return False
    return _transfer(_writev, src_addr, addr, nbytes)


def check_code(addr: object, what: str = "function pointer") -> int:
    """`addr` when it points into an executable mapping of the process (`/proc/self/maps`); INVALID_ARGUMENT
    otherwise (0x10, a data page, unmapped memory), so a code pointer that is not code is refused when it is
    registered instead of crashing the first call through it. A CFUNCTYPE object counts as its address."""
    value = pointer_value(ctypes.cast(addr, ctypes.c_void_p) if isinstance(addr, ctypes._CFuncPtr) else addr)
    if value:
        with open("/proc/self/maps", encoding="ascii") as maps:
            for line in maps:
                span, perms = line.split(None, 2)[:2]
                low, high = (int(x, 16) for x in span.split("-"))
                if low <= value < high:
                    if "x" in perms:
                        return value
                    break
    raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} {value:#x} does not point into executable code")


def _checked_addr(addr: object, nbytes: int, what: str) -> int:
    value = pointer_value(addr)
    if not value:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} is NULL or not a pointer ({addr!r})")
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)) or not 0 <= nbytes <= MAX_COPY:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what}: invalid size {nbytes!r}")
    _check_owned(value, int(nbytes), what)
    return value


def read_bytes(addr: object, nbytes: int, what: str = "pointer") -> np.ndarray:
    """A uint8 copy of the `nbytes` at the caller's address `addr`; INVALID_ARGUMENT (naming `what`) when the
    range is not readable memory or runs past the npurt buffer it starts in."""
    value = _checked_addr(addr, nbytes, what)
    if nbytes > LARGE and not readable_span(value, int(nbytes)):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} {value:#x} (+{nbytes}) is not readable memory")
    out = np.empty(int(nbytes), np.uint8)
    if not _transfer(_readv, out.ctypes.data, value, int(nbytes)):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} {value:#x} (+{nbytes}) is not readable memory")
    return out


def check_writable(addr: object, nbytes: int, what: str = "pointer") -> int:
    """Validate that the caller's [addr, addr + nbytes) can be written (its bytes are read and written back
    unchanged); the address as an int. INVALID_ARGUMENT otherwise. Lets a call check every destination
    before it writes any."""
    value = _checked_addr(addr, nbytes, what)
    old = np.empty(int(nbytes), np.uint8)
    if not (_transfer(_readv, old.ctypes.data, value, int(nbytes))
            and _transfer(_writev, old.ctypes.data, value, int(nbytes))):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} {value:#x} (+{nbytes}) is not writable memory")
    return value


def write_bytes(addr: object, data: np.ndarray, what: str = "pointer") -> None:
    """Copy the bytes of contiguous `data` to the caller's address `addr`; INVALID_ARGUMENT (nothing written)
    when the range is not writable memory or runs past the npurt buffer it starts in."""
    src = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    value = _checked_addr(addr, src.size, what)
    if not _transfer(_writev, src.ctypes.data, value, src.size):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} {value:#x} (+{src.size}) is not writable memory")


def read_struct(cls: type[T], addr: object) -> T | None:
    """A copy of the `cls` struct at pointer `addr`, or None for NULL / unmapped memory."""
    value = pointer_value(addr)
    if not value:
        return None
    raw = safe_read(value, ctypes.sizeof(cls))
    return None if raw is None else cls.from_buffer_copy(raw)


def read_u32_array(addr: object, count: int) -> list[int] | None:
    """`count` uint32 values at `addr` (e.g. a tensor's `dimensions`), or None when unreadable."""
    if count == 0:
        return []
    value = pointer_value(addr)
    if not value or count < 0 or count > 64:
        return None
    raw = safe_read(value, 4 * count)
    return None if raw is None else list((ctypes.c_uint32 * count).from_buffer_copy(raw))


def c_string(addr: int, what: str, limit: int = 4096) -> bytes | None:
    """The NUL-terminated string at `addr` (without the NUL), read page by page; None for NULL."""
    if not addr:
        return None
    out = b""
    while len(out) < limit:
        chunk = 4096 - (addr + len(out)) % 4096          # never cross into a page not yet known to be mapped
        part = safe_read(addr + len(out), min(chunk, limit - len(out)))
        if part is None:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} 0x{addr:x} is not a readable string")
        end = part.find(b"\0")
        if end >= 0:
            return out + part[:end]
        out += part
    raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what}: no NUL within {limit} bytes")


def field_pointer(struct: ctypes.Structure, cls: type, name: str) -> int:
    """The pointer stored in field `name` (of `cls`'s layout) of `struct`, read from the struct's bytes, never
    dereferenced; 0 for NULL."""
    return ctypes.c_void_p.from_address(ctypes.addressof(struct) + getattr(cls, name).offset).value or 0


def field_text(struct: ctypes.Structure, cls: type, name: str, what: str) -> str | None:
    """The string a `char *` field of `struct` points at (`c_string`: NpuError when unreadable), UTF-8 with
    replacement; None for NULL."""
    raw = c_string(field_pointer(struct, cls, name), what)
    return None if raw is None else raw.decode("utf-8", "replace")
