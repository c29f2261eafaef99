"""The one reading of a C `T*` argument handed to a mirror from Python: the struct itself, a ctypes pointer to one,
or `ctypes.byref` of one — and of a `T[]` / `const T**` argument (`as_struct_list`) — shared by the RKNN and QNN
mirrors and the C face.

What C passes as `&x` reaches a mirror in three spellings; all three name the caller's own object, so an in/out
struct is filled in place as in C. An integer address (what the C face and QNN's `void*` fields hand over) is never
dereferenced here: with `address=True` it is read as a copy through `npurt.memory.raw`, which refuses unmapped
memory — for in-parameters only, as writing to a copy would be lost.

`as_int` is the one reading of an integer argument (a C `int` / `uint32_t`, a count, a mode, a dimension): an
integer or nothing — a float is refused, never truncated.
"""
from __future__ import annotations

import ctypes
import operator
from typing import Any, TypeVar

from npurt.errors import ErrorCode, NpuError
from npurt.memory import raw

T = TypeVar("T")

__all__ = ["as_int", "as_struct", "as_struct_list", "MAX_TERMINATED"]

MAX_TERMINATED = 256   # longest NULL-terminated `const T**` list read


def as_int(value: Any, what: str) -> int:
    """`value` as an int when it is an integer (int, numpy integer); INVALID_ARGUMENT naming `what` for anything else:
    a bool, a string, and every float — 8.5 would be truncated to 8, and 1.0 is refused as well, as the mirrors refuse
    a float size or flag."""
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} must be an integer, got {value!r}")


def as_struct(obj: Any, cls: type[T], *, address: bool = False) -> T | None:
    """The `cls` object `obj` names (the object, a non-NULL ctypes pointer to it, or ctypes.byref of it); with
    `address`, also a copy of the `cls` at an int / c_void_p address. None for NULL and anything else."""
    if isinstance(obj, cls):
        return obj
    if isinstance(obj, ctypes._Pointer):  # type: ignore[attr-defined]
        pointee = getattr(obj, "_type_", None)
        if isinstance(pointee, type) and issubclass(pointee, cls):
            return obj.contents if obj else None
    inner = getattr(obj, "_obj", None)         # ctypes.byref(x) keeps x as _obj
    if inner is not None and isinstance(inner, cls):
        return inner
    if address and isinstance(cls, type) and issubclass(cls, ctypes.Structure) and \
            (isinstance(obj, (int, ctypes.c_void_p)) and not isinstance(obj, bool)):
        return raw.read_struct(cls, obj)
    return None


def as_struct_list(items: Any, count: int | None, cls: type[T], what: str, *, address: bool = False) -> list[T]:
    """The structs of a C array argument, in the caller's own objects (an in/out array is filled in place).

    `count` an int: the first `count` of a `T[]` — a ctypes array, list or tuple of `cls`, one `cls` (a one-struct
    array), or a non-NULL ctypes pointer to `cls`; with `address`, also `count` copies at an int address.
    `count` None: a NULL-terminated `const T**` — a sequence of `cls` or pointers to it (None ends it), or with
    `address` the C array of pointers at an int address (the structs aliased, after checking they are readable).
    NpuError(INVALID_ARGUMENT) naming `what` for NULL, too few structs or another type."""
    if items is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} is NULL")
    if count is None:
        return _terminated(items, cls, what, address)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what}: invalid count {count!r}")
    if isinstance(items, cls):
        items = [items]
    elif isinstance(items, ctypes._Pointer) and issubclass(getattr(items, "_type_", object), cls):  # type: ignore
        if not items:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} is NULL")
        items = [items[i] for i in range(count)]
    elif address and isinstance(items, (int, ctypes.c_void_p)) and not isinstance(items, bool):
        base, size = raw.pointer_value(items), ctypes.sizeof(cls)
        if not base:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} is NULL")
        items = [raw.read_struct(cls, base + k * size) for k in range(count)]
        if any(s is None for s in items):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what}: {count} {cls.__name__} at {base:#x} are not "
                                                       f"readable memory")
    try:
        seq = list(items)
    except TypeError:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what}: expected an array of {cls.__name__}") from None
    if count > len(seq):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what}: n={count!r} but {len(seq)} structs given")
    out = seq[:count]
    for s in out:
        if not isinstance(s, cls):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what}: expected {cls.__name__}, got {type(s).__name__}")
    return out


def _terminated(items: Any, cls: type[T], what: str, address: bool) -> list[T]:
    """The structs of a NULL-terminated `const T**` (see `as_struct_list`)."""
    if address and isinstance(items, (int, ctypes.c_void_p)) and not isinstance(items, bool):
        base = raw.pointer_value(items)
        if not base:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} is NULL")
        items = _pointers_at(base, what)
    try:
        seq = iter(items)
    except TypeError:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what}: expected a NULL-terminated list of {cls.__name__}") \
            from None
    out: list = []
    for k, item in enumerate(seq):
        if item is None:
            break
        if k >= MAX_TERMINATED:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what}: no NULL within {MAX_TERMINATED} entries")
        if isinstance(item, int) and not isinstance(item, bool):        # an entry of a C list: alias it
            raw.read_bytes(item, ctypes.sizeof(cls), f"{what}[{k}]")
            item = cls.from_address(item)
        struct = as_struct(item, cls)
        if struct is None:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what}[{k}]: expected {cls.__name__}, got "
                                                       f"{type(item).__name__}")
        out.append(struct)
    return out


def _pointers_at(base: int, what: str) -> list[int | None]:
    """The entries of the C array of pointers at `base` up to its NULL (at most MAX_TERMINATED + 1 read)."""
    out: list[int | None] = []
    for k in range(MAX_TERMINATED + 1):
        cell = raw.read_bytes(base + 8 * k, 8, f"{what}[{k}]")
        value = int.from_bytes(cell.tobytes(), "little")
        if not value:
            return out + [None]
        out.append(value)
    return out
