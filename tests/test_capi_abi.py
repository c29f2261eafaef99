"""The C face's headers against the mirror and the vendor ABI: sizeof / offsetof of every struct field as the
system compiler lays out npurt's headers (tests/c/abi.c) equal the ctypes structs of `npurt.rknn` and the vendor's
x86-64 sizes; every constant of `npurt.rknn.constants` has the same value in C; the header's inline string
helpers agree with the mirror's; the libraries export exactly the API's functions."""
from __future__ import annotations

import ctypes
import subprocess

import pytest

from npurt import rknn
from npurt.rknn import constants
from npurt.soc.profiles import API_FUNCTIONS
from helpers.abi import RKNN_SIZES
from helpers.capi import BUILD, compile_c, prefix, run_c


@pytest.fixture(scope="module")
def layout() -> dict[str, int]:
    out = run_c(compile_c("abi", prefix())).stdout
    return {name: int(value) for name, value in (line.split() for line in out.splitlines())}


def test_struct_sizes_match_vendor_and_ctypes(layout):
    sizes = {k: v for k, v in layout.items() if "." not in k}
    for name, size in RKNN_SIZES.items():
        assert sizes[name] == size, name
    for name, size in sizes.items():
        cls = getattr(rknn, name)
        assert ctypes.sizeof(cls) == size, name


def test_every_field_offset_matches_ctypes(layout):
    fields = {k: v for k, v in layout.items() if "." in k}
    structs = {k.split(".")[0] for k in fields}
    for struct in structs:
        cls = getattr(rknn, struct)
        c_fields = [name for name, *_ in cls._fields_]
        seen = [k.split(".")[1] for k in fields if k.startswith(struct + ".")]
        assert seen == c_fields, f"{struct}: abi.c must list every field in order"
        for field in c_fields:
            assert getattr(cls, field).offset == fields[f"{struct}.{field}"], f"{struct}.{field}"


def _compile_generated(name: str, body: str):
    BUILD.mkdir(parents=True, exist_ok=True)
    src = BUILD / f"{name}.c"
    text = ('#include <stdio.h>\n#include "rknn_api.h"\n#include "rknn_matmul_api.h"\n#include "rknn_custom_op.h"\n'
            f"int main(void) {{\n{body}    return 0;\n}}\n")
    if not src.exists() or src.read_text() != text:
        src.write_text(text)
    return compile_c(name, prefix(), src=src)


def test_every_constant_has_the_mirrors_value():
    names = [n for n in constants.__all__ if n.startswith("RKNN_") and n != "RKNN_SUCCESS"]
    body = "".join(f'    printf("{n} %lld\\n", (long long)({n}));\n' for n in names)
    out = run_c(_compile_generated("constants", body)).stdout.split()
    got = dict(zip(out[::2], map(int, out[1::2])))
    assert got == {n: getattr(constants, n) for n in names}


def test_string_helpers_agree_with_the_mirror():
    calls = [("get_type_string", range(-1, 14)), ("get_qnt_type_string", range(-1, 5)),
             ("get_format_string", range(-1, 6)), ("get_matmul_type_string", range(0, 17))]
    body = "".join(f'    printf("%s\\n", {fn}(({"rknn_matmul_type" if "matmul" in fn else "int"}){v}));\n'
                   for fn, values in calls for v in values)
    out = run_c(_compile_generated("strings", body)).stdout.splitlines()
    want = [getattr(constants, fn)(v) for fn, values in calls for v in values]
    assert out == want


def _exports(lib: str) -> set[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", str(prefix() / "lib" / lib)], capture_output=True,
                         text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()[1] == "T"}


def test_librknnrt_exports_table_3_1_and_nothing_else():
    assert _exports("librknnrt.so") == set(API_FUNCTIONS) | {"rknn_set_input_shape"}
    assert len(API_FUNCTIONS) == 34


def test_librknnmrt_exports_no_matmul_custom_op_or_core_mask_function():
    names = _exports("librknnmrt.so")
    assert "rknn_init" in names and "rknn_create_mem2" in names and "rknn_set_io_mem" in names
    assert not {n for n in names if "matmul" in n or "custom_op" in n or "core" in n}
    assert names <= set(API_FUNCTIONS) | {"rknn_set_input_shape"}


def test_every_export_has_a_mirror_function_wearing_the_boundary():
    from npurt.capi import rknnrt
    from npurt.rknn import boundary
    for name in API_FUNCTIONS:
        assert name in boundary.WRAPPED, name
        assert callable(getattr(rknnrt, name)), name
