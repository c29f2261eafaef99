"""Handle arguments in, out-parameters out: what every member does with the C arguments it is given.

An out-parameter is a ctypes cell (`Qnn_*Handle_t()`, `ctypes.byref` / `ctypes.pointer` of one), a ctypes array or a
Python list; a handle argument is a cell, an int or an address. Lookups answer the member's own QNN code.
"""
from __future__ import annotations

import ctypes
from typing import Any

from npurt.memory.cargs import as_struct
from npurt.memory.raw import pointer_value
from npurt.qnn import constants as C
from npurt.qnn import services
from npurt.qnn.backend import lookup
from npurt.qnn.boundary import QnnError
from npurt.qnn.context import QnnContext


def set_handle(out: Any, value: int | None) -> bool:
    """Write one handle (or NULL) into a c_void_p out-parameter; False when `out` is no such cell."""
    cell = as_struct(out, ctypes.c_void_p)
    if cell is None:
        return False
    cell.value = value or None
    return True


def set_handles(out: Any, values: list[int | None], count: int) -> bool:
    """Write `count` handles into an out array (ctypes array, list, or a single cell when count is 1)."""
    if isinstance(out, list):
        while len(out) < count:
            out.append(None)
        for k in range(count):
            out[k] = values[k] if k < len(values) else None
        return True
    if isinstance(out, ctypes.Array):
        if len(out) < count:
            return False
        for k in range(count):
            out[k] = values[k] if k < len(values) else None
        return True
    if count == 1:
        return set_handle(out, values[0] if values else None)
    return False


def handles_in(arr: Any, count: int) -> list[int] | None:
    """`count` handle values from an array / list / single cell; None if the argument is unusable."""
    if arr is None or count < 0:
        return None
    if isinstance(arr, (list, tuple, ctypes.Array)):
        if len(arr) < count:
            return None
        return [pointer_value(h) for h in list(arr)[:count]]
    if count <= 1:
        cell = as_struct(arr, ctypes.c_void_p)
        if cell is not None:
            return [pointer_value(cell.value)][:count]
        if isinstance(arr, int):
            return [arr][:count]
    return None


def ids_out(out: Any, ids: ctypes.Array) -> None:
    """Profile event ids out: copied into a list, or the array's address (NULL when empty) into a cell."""
    if isinstance(out, list):
        out[:] = list(ids)
    else:
        set_handle(out, ctypes.addressof(ids) if len(ids) else None)


def out_handle(out: Any, value: int, code: int, what: str) -> None:
    """`set_handle` for a member whose out-parameter is required: QnnError `code` naming `what` when it is not one."""
    cell = as_struct(out, ctypes.c_void_p)
    if cell is None:
        raise QnnError(code, f"{what} out-parameter must be a handle cell")
    cell.value = value


def live_context(handle: Any, code: int = C.QNN_CONTEXT_ERROR_INVALID_HANDLE) -> QnnContext:
    """The live context a handle names; QnnError `code` (the member's invalid-handle code) otherwise."""
    ctx = lookup(handle, QnnContext)
    if ctx is None or ctx.freed:
        raise QnnError(code, f"context handle {pointer_value(handle):#x} is not a live context")
    return ctx


def profile_arg(handle: Any, code: int) -> services.Profile | None:
    """The profile a profiled call was given (None for NULL); `code` for a handle that is not a live profile."""
    if handle is None or not pointer_value(handle):
        return None
    p = lookup(handle, services.Profile)
    if p is None:
        raise QnnError(code, f"{pointer_value(handle):#x} is not a profile handle")
    return p
