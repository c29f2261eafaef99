"""The Python half of an npurt C library: what its start-up code calls inside the embedded interpreter.

`attach` binds every `extern "Python+C"` function of the library to the same-named callable of the spec's module
(`_npurt_rknn_init` -> `module.rknn_init`); an exception escaping a callable prints one line and returns the C
error value, never 0. `sync_environ` copies the C environment into `os.environ`: the interpreter's copy is a
snapshot taken at start-up, so entry points that read configuration (`rknn_init`) call it to see a `setenv` the
program made later.
"""
from __future__ import annotations

import ctypes
import importlib
import os
import sys
import traceback
from typing import Any

__all__ = ["attach", "sync_environ"]

_libc = ctypes.CDLL(None)
_environ = ctypes.POINTER(ctypes.c_char_p).in_dll(_libc, "environ")


def sync_environ(prefixes: tuple[str, ...] = ("NPURT_", "RKNN_")) -> None:
    """Make `os.environ` agree with the C environment for the variables starting with `prefixes`."""
    current: dict[str, str] = {}
    i = 0
    while _environ[i] is not None:
        key, _, value = os.fsdecode(_environ[i]).partition("=")
        if key.startswith(prefixes):
            current[key] = value
        i += 1
    for key in [k for k in os.environ if k.startswith(prefixes) and k not in current]:
        os.environ.pop(key, None)
    for key, value in current.items():
        if os.environ.get(key) != value:
            os.environ[key] = value


def _reporter(library: str, name: str):
    def onerror(exc_type: type, exc: BaseException, tb: Any) -> None:
        line = "".join(traceback.format_exception_only(exc_type, exc)).strip()
        sys.stderr.write(f"E npurt: {library}: {name}: internal error: {line}\n")
        sys.stderr.flush()
    return onerror


def attach(ffi: Any, module: str, names: list[str], errors: dict[str, int]) -> None:
    """`ffi.def_extern` each `_npurt_<f>` in `names` to `module.<f>` (error value from `errors`; void functions have none)."""
    mod = importlib.import_module(module)
    library = getattr(mod, "LIBRARY_NAME", module)
    for name in names:
        target = name[len("_npurt_"):] if name.startswith("_npurt_") else name
        fn = getattr(mod, target)
        error = {"error": errors[name]} if name in errors else {}          # none for void functions
        ffi.def_extern(name=name, onerror=_reporter(library, target), **error)(fn)
