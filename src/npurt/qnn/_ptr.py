"""Safe access to raw C pointers handed to the QNN mirror (struct pointers, client buffers, dimension arrays).

The mirror's C-style functions receive `void*` values (ints) that user code built with ctypes. npurt never
dereferences one blindly: `safe_read` / `safe_write` copy through `process_vm_readv` / `process_vm_writev` on our
own process, which the kernel lets a process do to itself and which fail with EFAULT (instead of crashing the
interpreter) when the address range is not mapped. That is the "validate every raw address before touching it"
rule of DESIGN.md for memory that is not device memory.
"""
from __future__ import annotations

import ctypes
import os
from typing import TypeVar

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
T = TypeVar("T", bound=ctypes.Structure)


def _as_int(addr: object) -> int | None:
    """The integer value of a pointer-ish object (int, c_void_p, ctypes pointer, None -> None)."""
    if addr is None:
        return None
    if isinstance(addr, bool):
        return None
    if isinstance(addr, int):
        return addr
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
    return int(value) if value else 0


def safe_copy_in(addr: int, dest: ctypes.Array | memoryview | bytearray, nbytes: int) -> bool:
    """Copy `nbytes` from raw address `addr` into writable `dest` (a ctypes array / bytearray / buffer).
    False (nothing copied that matters) when any byte of the source is not mapped."""
    if not addr or nbytes < 0 or nbytes > MAX_COPY:
        return False
    if nbytes == 0:
        return True
    local = _IoVec(ctypes.addressof(dest) if isinstance(dest, ctypes.Array)
                   else ctypes.addressof(ctypes.c_char.from_buffer(dest)), nbytes)
    remote = _IoVec(addr, nbytes)
    return _readv(os.getpid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) == nbytes


def safe_read(addr: int, nbytes: int) -> bytes | None:
    """The `nbytes` at raw address `addr`, or None when the range is not (entirely) readable."""
    if nbytes < 0 or nbytes > MAX_COPY:
        return None
    buf = ctypes.create_string_buffer(max(nbytes, 1))
    if not safe_copy_in(addr, buf, nbytes):
        return None
    return buf.raw[:nbytes]


def safe_write(addr: int, src_addr: int, nbytes: int) -> bool:
    """Copy `nbytes` from our own address `src_addr` (known good) to raw address `addr`; False on EFAULT."""
    if not addr or nbytes < 0 or nbytes > MAX_COPY:
        return False
    if nbytes == 0:
        return True
    local = _IoVec(src_addr, nbytes)
    remote = _IoVec(addr, nbytes)
    return _writev(os.getpid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) == nbytes


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


def field_ref(obj: ctypes.Structure, name: str):
    """C's `&obj.name`: a ctypes object of the field's type that aliases the field's memory (writing its
    `.value` writes the struct). Used for out-parameters such as `&(inputTensor.v1.memHandle)`:
    `qi.memRegister(ctx, desc, 1, field_ref(tensor.v1, "memHandle"))`."""
    desc = getattr(type(obj), name)
    for field_name, field_type, *_ in type(obj)._fields_:
        if field_name == name:
            return field_type.from_buffer(obj, desc.offset)
    for anon in getattr(type(obj), "_anonymous_", ()):          # a member of an anonymous union
        union_type = dict((f[0], f[1]) for f in type(obj)._fields_)[anon]
        for field_name, field_type, *_ in union_type._fields_:
            if field_name == name:
                return field_type.from_buffer(obj, desc.offset)
    raise AttributeError(name)
