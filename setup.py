"""Builds npurt's compiled kernel module (`npurt._kernels_c`, from csrc/) with the machine's C compiler; everything
else about the package is in pyproject.toml."""
import os
import shutil
import sys
import sysconfig

from setuptools import setup


def _require_c_toolchain() -> None:
    """Stop with one clear line when the kernels cannot be built (instead of a compiler's traceback)."""
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if not (shutil.which(cc) or shutil.which("cc") or shutil.which("gcc")):
        sys.exit("npurt: building the compiled kernels needs a C compiler (install gcc or clang); none was found")
    if not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
        sys.exit("npurt: building the compiled kernels needs the Python headers (Python.h, e.g. python3-dev); "
                 "none were found")


_require_c_toolchain()
setup(cffi_modules=["csrc/build.py:ffibuilder"])
