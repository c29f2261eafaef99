"""libcdsprpc.so: the rpcmem allocator of `rpcmem.h` as thin adapters over `npurt.qnn.rpcmem`.

Programs load it as on a phone (`dlopen("libcdsprpc.so", RTLD_NOW | RTLD_LOCAL)` + `dlsym`). Buffers are memfd
shared memory with real fds, page aligned; `rpcmem_to_fd` / `rpcmem_free` take exactly an allocation's base (an
interior pointer gives -1 / is ignored, as the open-source rpcmem does); `rpcmem_init` / `rpcmem_deinit` do nothing
(only the static rpcmem library of old SoCs needed them). `remote_register_buf` / `_attr` / `_attr2` register a range
of an rpcmem buffer with FastRPC (fd -1 deregisters), as onnxruntime's QNN EP requires of this library.
"""
from __future__ import annotations

from npurt.capi.build import LibrarySpec, header_functions
from npurt.capi.embed import sync_environ
from npurt.capi.qnn_common import HEADER_DIR
from npurt.qnn import rpcmem

LIBRARY_NAME = "libcdsprpc.so"


def spec() -> LibrarySpec:
    """libcdsprpc.so: the six rpcmem functions and the three FastRPC buffer registrations."""
    return LibrarySpec(name=LIBRARY_NAME, headers=["rpcmem.h"], header_dir=HEADER_DIR,
                       functions=header_functions(HEADER_DIR / "rpcmem.h"), module=__name__)


def rpcmem_init() -> None:
    """Nothing to set up."""


def rpcmem_deinit() -> None:
    """Nothing to tear down."""


def rpcmem_alloc(heapid: int, flags: int, size: int) -> int:
    sync_environ()
    return rpcmem.rpcmem_alloc(heapid, flags, size)


def rpcmem_alloc2(heapid: int, flags: int, size: int) -> int:
    sync_environ()
    return rpcmem.rpcmem_alloc2(heapid, flags, size)


def rpcmem_free(po: int) -> None:
    rpcmem.rpcmem_free(po)


def rpcmem_to_fd(po: int) -> int:
    return rpcmem.rpcmem_to_fd(po)


def remote_register_buf(buf: int, size: int, fd: int) -> None:
    rpcmem.remote_register_buf(buf, size, fd)


def remote_register_buf_attr(buf: int, size: int, fd: int, attr: int) -> None:
    rpcmem.remote_register_buf_attr(buf, size, fd, attr)


def remote_register_buf_attr2(buf: int, size: int, fd: int, attr: int) -> None:
    rpcmem.remote_register_buf_attr2(buf, size, fd, attr)
