"""`npurt capi --prefix DIR`: build npurt's RKNN C library (headers, librknnrt.so, librknnmrt.so, pkg-config and
CMake files) and its QNN HTP libraries (libcdsprpc.so, libQnnHtp.so, libQnnSystem.so and their headers) into DIR,
for compiling unmodified RKNN and QNN C/C++ programs on this machine (see docs/c-api.md, docs/qnn-c-api.md)."""
from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("capi", help="install the RKNN / QNN C headers and libraries into a folder")
    p.add_argument("--prefix", type=Path, required=True, metavar="DIR",
                   help="where to write include/, lib/, lib/pkgconfig/ and lib/cmake/")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from npurt.capi.install import install

    for path in install(args.prefix):
        print(path)
    return 0
