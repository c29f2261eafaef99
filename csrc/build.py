"""cffi builder of `npurt._kernels_c`, the compiled kernel module (API mode: a C extension that setup.py builds with
the machine's compiler). The header is the cdef, so the function list is written once. Paths are relative to the
repository root, where setup.py runs."""
from pathlib import Path

from cffi import FFI

HEADER = Path(__file__).resolve().parent / "npurt_kernels.h"

ffibuilder = FFI()
ffibuilder.cdef("\n".join(line for line in HEADER.read_text(encoding="utf-8").splitlines()
                          if not line.startswith("#")))
SOURCES = ["npurt_kernels.c", "npurt_int8.c", "npurt_convf.c", "npurt_pool.c", "npurt_threads.c"]
ffibuilder.set_source("npurt._kernels_c", '#include "npurt_kernels.h"', sources=[f"csrc/{name}" for name in SOURCES],
                      include_dirs=["csrc"], extra_compile_args=["-O3", "-ffp-contract=off", "-fno-strict-aliasing", "-pthread"],
                      extra_link_args=["-pthread"])
