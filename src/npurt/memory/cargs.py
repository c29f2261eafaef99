"""The one reading of a C `T*` argument handed to a mirror from Python: the struct itself, a ctypes pointer to one,
or `ctypes.byref` of one — shared by the RKNN and QNN mirrors and the C face.

What C passes as `&x` reaches a mirror in three spellings; all three name the caller's own object, so an in/out
struct is filled in place as in C. An integer address (what the C face and QNN's `void*` fields hand over) is never
dereferenced here: with `address=True` it is read as a copy through `npurt.memory.raw`, which refuses unmapped
memory — for in-parameters only, as writing to a copy would be lost.
"""
from __future__ import annotations

import ctypes
from typing import Any, TypeVar

from npurt.memory import raw

T = TypeVar("T")

__all__ = ["as_struct"]


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
