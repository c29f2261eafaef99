"""Handle tables of the mirrors: C hands out pointers, a mirror hands out integers and never trusts one blindly.

A handle counts up and is never reused, so a freed handle stays invalid however many objects come later. A freed
object may be `retire`d instead of removed: its handle then still resolves (a late call gets the precise "was
freed" error rather than "not a handle"), and only the last `keep_retired` retired entries are kept, so the table
does not grow with create / free cycles. `Retired` is that rule on its own (RKNN keeps destroyed structs alive with
it, so a C pointer to one is recognised as stale rather than taken for a newer struct at the same address).
"""
from __future__ import annotations

import collections
import itertools
import operator
from typing import Any

import npurt.forksafe as forksafe

__all__ = ["HandleTable", "Retired"]


class Retired:
    """The last `keep` retired items, oldest first. Thread-safe."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._items: collections.deque = collections.deque()
        self._lock = forksafe.lock()

    def add(self, item: Any) -> list[Any]:
        """Keep `item`; returns the items that no longer fit (oldest first)."""
        with self._lock:
            self._items.append(item)
            return [self._items.popleft() for _ in range(max(0, len(self._items) - self.keep))]

    def clear(self) -> list[Any]:
        """Let every item go; returns them."""
        with self._lock:
            items = list(self._items)
            self._items.clear()
            return items


class HandleTable:
    """int handles -> live objects. Handles count up from `first` in steps of `step` and are never reused; an
    entry has a `kind` tag (a string) so that one table can hold several kinds of object. Thread-safe."""

    def __init__(self, first: int = 1, step: int = 1, keep_retired: int = 0) -> None:
        self._next = itertools.count(first, step)
        self._objects: dict[int, tuple[str, Any]] = {}
        self._retired = Retired(keep_retired)
        self._lock = forksafe.lock()
        forksafe.after_fork(self._forget_inherited)

    def _forget_inherited(self) -> None:
        """In a forked child: the parent's objects are no handles of the child (refused as unknown)."""
        forksafe.inherit(self._objects)
        self._objects = {}
        self._retired.clear()

    def add(self, obj: Any, kind: str = "") -> int:
        """Register `obj` under a new handle."""
        with self._lock:
            handle = next(self._next)
            self._objects[handle] = (kind, obj)
            return handle

    def get(self, handle: Any, kind: str | type | None = None) -> Any | None:
        """The object of `handle` (an int or a ctypes cell holding one), or None if unknown, not an int, or not of
        `kind` (a kind tag, or a type the object must be an instance of)."""
        value = getattr(handle, "value", handle)
        if isinstance(value, bool):
            return None
        try:
            value = operator.index(value)           # an int, or a numpy integer holding one
        except TypeError:
            return None
        with self._lock:
            entry = self._objects.get(value)
        if entry is None:
            return None
        tag, obj = entry
        if kind is None or (tag == kind if isinstance(kind, str) else isinstance(obj, kind)):
            return obj
        return None

    def remove(self, handle: int) -> Any | None:
        """Forget `handle` now; returns its object (None if it was not registered)."""
        with self._lock:
            entry = self._objects.pop(int(handle), None)
        return None if entry is None else entry[1]

    def replace(self, handle: int, obj: Any, kind: str = "") -> None:
        """Let live `handle` stand for `obj` from now on (an object that takes over another's handle)."""
        with self._lock:
            if int(handle) not in self._objects:
                raise KeyError(handle)
            self._objects[int(handle)] = (kind, obj)

    def retire(self, handle: int) -> None:
        """Keep freed `handle` resolvable for a while (the last `keep_retired` of them)."""
        for old in self._retired.add(int(handle)):
            self.remove(old)

    def forget_retired(self) -> None:
        """Remove every retired handle now."""
        for old in self._retired.clear():
            self.remove(old)

    def live(self, kind: str | None = None) -> list[tuple[int, Any]]:
        """(handle, object) of every entry (of `kind`)."""
        with self._lock:
            return [(h, o) for h, (k, o) in self._objects.items() if kind is None or k == kind]

    def __len__(self) -> int:
        with self._lock:
            return len(self._objects)
