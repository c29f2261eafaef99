"""cffi builder of `npurt._kernels_c`, the compiled kernel module (API mode: a C extension that setup.py builds with
the machine's compiler). The header is the cdef, so the function list is written once. Paths are relative to the
repository root, where setup.py runs."""
from pathlib import Path

from cffi import FFI

HEADER = Path(__file__).resolve().parent / "npurt_kernels.h"

ffibuilder = FFI()
ffibuilder.cdef("\n".join(line for line in HEADER.read_text(encoding="utf-8").splitlines()
                          if not line.startswith("#")))
ffibuilder.set_source("npurt._kernels_c", '#include "npurt_kernels.h"', sources=["csrc/npurt_kernels.c", "csrc/npurt_int8.c", "csrc/npurt_convf.c", "csrc/npurt_pool.c"],
                      include_dirs=["csrc"], extra_compile_args=["-O3", "-ffp-contract=off", "-fno-strict-aliasing"])
