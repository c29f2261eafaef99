"""The library builder of `npurt.capi.build`, on a demo spec: declarations parsed, exported C functions backed by
Python callables, the error value (never 0) for an exception or an interpreter that cannot start, NULL for
pointers, the program's SIGINT handler kept, a `setenv` after start-up visible, exports limited to the API."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from npurt.capi.build import LibrarySpec, build_library, header_functions, parse_functions
from npurt.capi.rknnrt import HEADER_DIR, HEADERS
from npurt.soc.profiles import API_FUNCTIONS
from helpers.capi import BUILD, C_DIR, compile_c, run_c

DEMO = Path(__file__).resolve().parent / "capi_demo"


def test_parse_functions_reads_pointers_arrays_and_scalars():
    (f,) = parse_functions("int rknn_inputs_set(rknn_context context, uint32_t n_inputs, rknn_input inputs[]);")
    assert f.name == "rknn_inputs_set" and f.ret == "int"
    assert [(p.name, p.pointer) for p in f.params] == [("context", False), ("n_inputs", False), ("inputs", True)]
    assert f.typedef_names() == {"rknn_context"}
    (g,) = parse_functions("rknn_tensor_mem *rknn_create_mem(rknn_context ctx, uint32_t size)")
    assert g.returns_pointer and not g.returns_void
    (h,) = parse_functions("void cb(int (*fn)(void *p, int n), const char *name, void);"[:-7] + ")")
    assert [(p.name, p.pointer) for p in h.params] == [("fn", True), ("name", True)]
    with pytest.raises(ValueError):
        parse_functions("int broken(int);")


def test_the_headers_declare_table_3_1_and_set_input_shape():
    names = [f.name for h in HEADERS for f in parse_functions(header_functions(HEADER_DIR / h))]
    assert sorted(names) == sorted([*API_FUNCTIONS, "rknn_set_input_shape"])


def _demo_spec(module: str = "capi_demo_module") -> LibrarySpec:
    """The demo library; `demo_via_table` calls, through a C table of function pointers (the shape of the QNN
    interface table), a callback of `extra_cdef` that is implemented in Python but not exported."""
    return LibrarySpec(name="libnpurtdemo.so", headers=["demo.h"], header_dir=DEMO,
                       functions=header_functions(DEMO / "demo.h"), module=module, python_path=[str(DEMO)],
                       extra_cdef='extern "Python+C" int demo_triple(int x);\nuintptr_t demo_table(void);',
                       extra_source="int demo_triple(int x);\nstatic int (*const demo_entries[1])(int) = "
                                    "{demo_triple};\nstatic uintptr_t demo_table(void) "
                                    "{ return (uintptr_t)demo_entries; }\n",
                       errors={"demo_triple": "-9"})


def _run_demo(lib_dir: Path) -> dict[str, str]:
    exe = BUILD / "bin" / f"capi_demo-{lib_dir.name}"
    exe.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["gcc", "-Wall", "-Werror", "-I", str(C_DIR), "-I", str(DEMO), str(C_DIR / "capi_demo.c"),
                    "-L", str(lib_dir), "-lnpurtdemo", f"-Wl,-rpath,{lib_dir}", "-o", str(exe)], check=True)
    proc = run_c(exe)
    return dict(line.split() for line in proc.stdout.splitlines()) | {"stderr": proc.stderr}


def test_demo_library_calls_python_and_never_reads_an_error_as_success(tmp_path):
    got = _run_demo(build_library(_demo_spec(), tmp_path / "ok").parent)
    assert got["add"] == "42"
    assert got["raise"] == "-1" and "demo_raise: internal error: RuntimeError: refused 3" in got["stderr"]
    assert got["pointer0"] == "1" and got["pointer1"] == "99" and got["pointer_error"] == "1"
    assert got["getenv"] == "17"                   # setenv after the interpreter started
    assert got["void"] == "7"
    assert got["table"] == "16"                    # 3 * 5 through the C table, + 1
    assert got["sigint_kept"] == "1"
    out = subprocess.run(["nm", "-D", "--defined-only", str(tmp_path / "ok" / "libnpurtdemo.so")],
                         capture_output=True, text=True, check=True).stdout
    assert {line.split()[-1] for line in out.splitlines() if " T " in line} == \
        {"demo_add", "demo_raise", "demo_pointer", "demo_getenv", "demo_void", "demo_via_table"}


def test_a_library_whose_python_side_cannot_start_fails_every_call(tmp_path):
    got = _run_demo(build_library(_demo_spec("no_such_module_anywhere"), tmp_path / "bad").parent)
    assert got["add"] == "-1" and got["raise"] == "-1" and got["pointer1"] == "-1" and got["getenv"] == "-1"
    assert got["void"] == "0"                      # not called
    lines = [ln for ln in got["stderr"].splitlines() if "npurt" in ln]
    assert len(lines) == 1 and "cannot start" in lines[0] and "No module named 'no_such_module_anywhere'" in lines[0]


def test_npurt_capi_without_a_compiler_is_one_line_naming_what_to_install(tmp_path):
    import os
    import sys
    env = {**os.environ, "PATH": str(tmp_path / "empty")}
    proc = subprocess.run([sys.executable, "-m", "npurt.cli.main", "capi", "--prefix", str(tmp_path / "p")],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no C compiler found: install gcc" in lines[0]
    assert not (tmp_path / "p").exists()
