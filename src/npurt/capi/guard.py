"""C pointers into the mirror's ctypes structs, validated first: NULL is None, memory that is not mapped (or, for
structs the call writes, not writable) is an NpuError naming the argument; nothing is read or written before.

In/out structs (`rknn_tensor_attr*` of a query, `rknn_context*` out-parameters, `rknn_output[]`) alias the C
caller's memory (`from_address`), so the mirror fills them in place as C expects; input-only structs that the
mirror may keep (`rknn_custom_op[]`) are copied. The checks are `npurt.memory.raw`'s (the one guarded way to
touch a caller's memory: the kernel copies, and a range starting in an npurt buffer must lie inside it).
"""
from __future__ import annotations

import ctypes
from typing import Any, TypeVar

from npurt.errors import ErrorCode, NpuError
from npurt.memory import raw

__all__ = ["struct_at", "array_at", "struct_copy", "c_string", "checked_bytes"]

T = TypeVar("T")
_MAX_STRING = 4096


def _check(addr: int, nbytes: int, what: str, write: bool) -> None:
    if write:
        raw.check_writable(addr, nbytes, what)
    else:
        raw.read_bytes(addr, nbytes, what)


def struct_at(cls: type[T], addr: int, what: str, size: int | None = None, write: bool = True) -> T | None:
    """The `cls` at `addr` (aliasing it), None for NULL. `size`: bytes the caller says it holds (only
    min(size, sizeof) are checked, so a short struct reaches the mirror's own size check untouched)."""
    if not addr:
        return None
    nbytes = ctypes.sizeof(cls) if size is None else max(1, min(int(size), ctypes.sizeof(cls)))
    _check(addr, nbytes, what, write)
    return cls.from_address(addr)


def array_at(cls: type, addr: int, count: int, what: str, write: bool = True) -> Any:
    """`count` consecutive `cls` at `addr` as a ctypes array aliasing them; None for NULL; [] for count 0."""
    if not addr:
        return None
    if count <= 0:
        return []
    _check(addr, ctypes.sizeof(cls) * count, what, write)
    return (cls * count).from_address(addr)


def struct_copy(cls: type, addr: int, count: int, what: str) -> Any:
    """A private copy of `count` `cls` at `addr` (a ctypes array); None for NULL."""
    if not addr:
        return None
    raw = checked_bytes(addr, ctypes.sizeof(cls) * max(count, 0), what)
    return (cls * max(count, 0)).from_buffer_copy(raw)


def checked_bytes(addr: int, nbytes: int, what: str) -> bytes:
    """A copy of `nbytes` at `addr`; NpuError when NULL or unreadable."""
    if not addr:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} is NULL")
    return raw.read_bytes(addr, nbytes, what).tobytes()


def c_string(addr: int, what: str, limit: int = _MAX_STRING) -> bytes | None:
    """The NUL-terminated string at `addr` (without the NUL); None for NULL (`npurt.memory.raw.c_string`)."""
    return raw.c_string(addr, what, limit)
