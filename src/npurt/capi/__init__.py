"""npurt.capi: the C face — npurt's RKNN and QNN headers and the x86-64 shared libraries whose exported C functions are
thin adapters over the mirrors (pointers in -> mirror structs -> the mirror's function -> status out).

- `build`: the one builder: a `LibrarySpec` (name, headers, C declarations, Python module) -> an embedded-cffi
  shared library (interpreter start-up, error values, signal handlers, exit hook: see its docstring).
- `embed`: what a library's start-up code runs inside the interpreter (binding, C environment).
- `guard`: C pointers -> validated ctypes structs.
- `rknnrt` / `rknnmrt`: librknnrt.so / librknnmrt.so; `debugfs`: the emulated `rknpu/mm` file.
- `cdsprpc` / `qnnhtp` / `qnnsystem`: libcdsprpc.so / libQnnHtp.so / libQnnSystem.so (`qnn_common`: their provider
  tables in C, their headers).
- `install`: `npurt capi --prefix DIR` (headers, libraries, pkg-config and CMake files).
"""
