"""`npurt capi --prefix DIR`: npurt's RKNN headers, its librknnrt.so and librknnmrt.so, and the files build
systems look for (`lib/pkgconfig/librknnrt.pc`, `lib/cmake/rknnrt/rknnrtConfig.cmake`), laid out as a prefix:

    DIR/include/rknn_api.h, rknn_matmul_api.h, rknn_custom_op.h
    DIR/include/rpcmem.h, qurt_alloc.h, QNN/QnnInterface.h, ..., QNN/HTP/*.h, QNN/System/*.h  (docs/qnn-c-api.md)
    DIR/lib/librknnrt.so, librknnmrt.so
    DIR/lib/libcdsprpc.so, libQnnHtp.so, libQnnSystem.so
    DIR/lib/pkgconfig/librknnrt.pc, librknnmrt.pc
    DIR/lib/cmake/rknnrt/rknnrtConfig.cmake, rknnrtConfigVersion.cmake

The pkg-config and CMake files locate the prefix relative to themselves, so the folder can be moved. Each library
is one file (it needs no other file of the prefix) and runs the npurt (and the Python environment) that built it.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from npurt._version import __version__
from npurt.capi import cdsprpc, qnn_common, qnnhtp, qnnsystem, rknnrt
from npurt.capi.build import LibrarySpec, build_library, check_toolchain

__all__ = ["install", "LIBRARIES"]

RKNN_LIBRARIES = (rknnrt.spec, rknnrt.mini_spec)
QNN_LIBRARIES = (cdsprpc.spec, qnnhtp.spec, qnnsystem.spec)     # loaded with dlopen: no pkg-config / CMake files
LIBRARIES = RKNN_LIBRARIES + QNN_LIBRARIES

_PC = """\
prefix=${{pcfiledir}}/../..
includedir=${{prefix}}/include
libdir=${{prefix}}/lib

Name: {name}
Description: npurt's {name}: the RKNN runtime C API, emulated on the CPU
Version: {version}
Cflags: -I${{includedir}}
Libs: -L${{libdir}} -Wl,-rpath,${{libdir}} -l{link}
"""

_CMAKE = """\
# find_package(rknnrt): npurt's RKNN runtime. Defines the imported targets rknnrt::rknnrt (librknnrt.so) and
# rknnrt::rknnmrt (librknnmrt.so), and RKNNRT_INCLUDE_DIRS / RKNNRT_LIBRARIES for projects using variables.
get_filename_component(_rknnrt_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(RKNNRT_INCLUDE_DIRS "${_rknnrt_prefix}/include")
set(RKNNRT_LIBRARIES "${_rknnrt_prefix}/lib/librknnrt.so")
foreach(_rknnrt_lib rknnrt rknnmrt)
  if(NOT TARGET rknnrt::${_rknnrt_lib})
    add_library(rknnrt::${_rknnrt_lib} SHARED IMPORTED)
    set_target_properties(rknnrt::${_rknnrt_lib} PROPERTIES
      IMPORTED_LOCATION "${_rknnrt_prefix}/lib/lib${_rknnrt_lib}.so"
      IMPORTED_NO_SONAME FALSE
      INTERFACE_INCLUDE_DIRECTORIES "${_rknnrt_prefix}/include")
  endif()
endforeach()
set(rknnrt_FOUND TRUE)
"""

_CMAKE_VERSION = """\
set(PACKAGE_VERSION "{version}")
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
"""


def install(prefix: Path, specs: tuple = LIBRARIES) -> list[Path]:
    """Write the headers, build every library of `specs` and the build-system files under `prefix`; the files
    written."""
    check_toolchain()                      # before anything is written
    prefix = Path(prefix).resolve()
    include, lib = prefix / "include", prefix / "lib"
    include.mkdir(parents=True, exist_ok=True)
    written = []
    for header in (*rknnrt.HEADERS, *qnn_common.ALL_HEADERS):      # QNN's keep their QNN/, HTP/, System/ folders
        (include / header).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(rknnrt.HEADER_DIR / header, include / header)
        written.append(include / header)
    built: list[LibrarySpec] = []
    for make_spec in specs:
        spec = make_spec()
        written.append(build_library(spec, lib, work_dir=None))
        built.append(spec)
    pc_dir, cmake_dir = lib / "pkgconfig", lib / "cmake" / "rknnrt"
    pc_dir.mkdir(parents=True, exist_ok=True)
    cmake_dir.mkdir(parents=True, exist_ok=True)
    rknn_names = {make_spec().name for make_spec in RKNN_LIBRARIES}
    for spec in (s for s in built if s.name in rknn_names):
        stem = spec.name.split(".so")[0]
        pc = pc_dir / f"{stem}.pc"
        pc.write_text(_PC.format(name=stem, version=__version__, link=stem[3:]))
        written.append(pc)
    (cmake_dir / "rknnrtConfig.cmake").write_text(_CMAKE)
    (cmake_dir / "rknnrtConfigVersion.cmake").write_text(_CMAKE_VERSION.format(version=__version__))
    written += [cmake_dir / "rknnrtConfig.cmake", cmake_dir / "rknnrtConfigVersion.cmake"]
    return written
