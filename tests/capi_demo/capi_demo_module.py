"""The Python side of the demo library of test_capi_build.py: one callable per exported C function."""
import ctypes
import importlib
import os
import signal  # noqa: F401 - importing it is what installs Python's SIGINT handler in a fresh interpreter

LIBRARY_NAME = "libnpurtdemo.so"


def demo_add(a: int, p: int) -> int:
    return a + ctypes.c_int.from_address(p).value


def demo_raise(handle: int) -> int:
    raise RuntimeError(f"refused {handle}")


def demo_pointer(n: int) -> int:
    if n < 0:
        raise ValueError("negative")
    return ctypes.addressof(_KEEP) if n else 0


def demo_getenv(name: int) -> int:
    from npurt.capi.embed import sync_environ
    sync_environ(("DEMO_",))
    return int(os.environ.get(ctypes.string_at(name).decode(), "-2"))


def demo_void(p: int) -> None:
    ctypes.c_int.from_address(p).value = 7


_KEEP = ctypes.c_int(99)


def demo_triple(x: int) -> int:
    """An `extra_cdef` callback: not exported, reached through the C table of `extra_source`."""
    return 3 * x


def demo_via_table(x: int) -> int:
    lib = importlib.import_module("_npurt_capi_libnpurtdemo").lib
    entry = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(ctypes.c_void_p.from_address(lib.demo_table()).value)
    return entry(x) + 1
