"""What a forked child must not take over from its parent, in one place: locks that another thread of the parent
held (re-created in the child, so its calls never wait for a thread that does not exist there) and the objects
the parent created — contexts, buffers, devices — which the child's registries forget (kept alive, never freed
there), so the child's calls refuse them as unknown handles instead of sharing, and corrupting, the parent's
memory; a fresh `rknn_init` in the child opens fresh devices.

Registries take their locks from `lock()` / `rlock()` and register what they forget with `after_fork`. The hooks
run in the child of `os.fork`, and of a C `fork()` in a program using npurt's C libraries (`npurt.capi.build`).
"""
from __future__ import annotations

import os
import threading
import weakref
from typing import Any, Callable

__all__ = ["lock", "rlock", "after_fork", "inherit"]

_locks: "weakref.WeakSet[Any]" = weakref.WeakSet()
_hooks: list[Callable[[], None]] = []
_inherited: list[Any] = []              # what the parent created: alive in the child, never freed by it


def lock() -> Any:
    """A `threading.Lock` re-created (free) in a forked child."""
    new = threading.Lock()
    _locks.add(new)
    return new


def rlock() -> Any:
    """A `threading.RLock` re-created (free) in a forked child."""
    new = threading.RLock()
    _locks.add(new)
    return new


def after_fork(hook: Callable[[], None]) -> Callable[[], None]:
    """Run `hook` in a forked child, after the locks are re-created (usable as a decorator)."""
    _hooks.append(hook)
    return hook


def inherit(obj: Any) -> None:
    """Keep `obj` (the parent's) alive in the child without using it: its finalisers must not run there."""
    _inherited.append(obj)


def _in_child() -> None:
    for held in list(_locks):
        held._at_fork_reinit()
    for hook in _hooks:
        hook()


os.register_at_fork(after_in_child=_in_child)
