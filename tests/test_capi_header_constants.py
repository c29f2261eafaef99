"""Every integer constant of npurt's own headers (`#define NAME value` and enum members, across all of them) against
the mirror constant of the same name: a C program and a Python program see one value. Sentinels (`*_UNDEFINED`,
QNN's 32-bit enum fillers) are 0x7FFFFFFF as the facts say, in both."""
from __future__ import annotations

import re
from pathlib import Path

import npurt.capi
import npurt.qnn.constants as qnn_constants
import npurt.qnn.rpcmem as rpcmem
import npurt.rknn.constants as rknn_constants

INCLUDE = Path(npurt.capi.__file__).resolve().parent / "include"
MIRRORS = (rknn_constants, qnn_constants, rpcmem)
SENTINEL = 0x7FFFFFFF
_DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)[ \t]+(.+?)\s*$", re.M)
_ENUM = re.compile(r"enum\s*\w*\s*\{(.*?)\}", re.S)
_CAST = re.compile(r"\(\s*(?:unsigned|signed|int|long|\w+_t)\s*\)")
_SUFFIX = re.compile(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b")


def _expressions() -> dict[str, str]:
    """NAME -> C expression of every #define and enum member (an enum member without `=` is `previous + 1`)."""
    out: dict[str, str] = {}
    for header in sorted(INCLUDE.rglob("*.h")):
        text = re.sub(r"/\*.*?\*/|//[^\n]*", "", header.read_text(), flags=re.S)
        out.update(_DEFINE.findall(text))
        for body in _ENUM.findall(text):
            previous = "-1"
            for item in filter(None, (i.strip() for i in body.split(","))):
                name, _, expr = (part.strip() for part in item.partition("="))
                out[name] = expr or f"({previous}) + 1"
                previous = name
    return out


def header_constants() -> dict[str, int]:
    """The integer value of every header constant that is an integer expression (names resolve across headers)."""
    exprs, values = _expressions(), {}
    for _ in range(8):                                   # constants refer to constants of other headers
        for name, expr in exprs.items():
            if name in values:
                continue
            e = _CAST.sub("", _SUFFIX.sub(r"\1", expr))
            if not re.fullmatch(r"[\w\s()+\-*/<>|&~^]+", e):
                continue
            try:
                values[name] = int(eval(e, {"__builtins__": {}}, dict(values)))    # noqa: S307 - integer C text
            except (NameError, SyntaxError, TypeError):
                pass
    return values


def test_every_header_constant_equals_the_mirrors():
    values = header_constants()
    compared, differ = 0, []
    for name, value in values.items():
        mirror = next((getattr(m, name) for m in MIRRORS if isinstance(getattr(m, name, None), int)), None)
        if mirror is None:
            continue
        compared += 1
        if mirror != value:
            differ.append(f"{name}: header {value:#x}, mirror {mirror:#x}")
    assert not differ, differ
    assert compared >= 420, compared


# The sentinels QNN's headers spell otherwise: Qnn_ParamType_t's "unused, present to ensure 32 bits" value, and
# QnnContext_createFromBinaryAsyncNotifyType_t's, which the header writes with seven F's.
OTHER_SENTINELS = {"QNN_PARAMTYPE_UNDEFINED": 0xFFFFFFFF, "QNN_CONTEXT_NOTIFY_TYPE_UNDEFINED": 0x7FFFFFF}


def test_sentinels_are_0x7fffffff_in_headers_and_mirrors():
    values = header_constants()
    names = [n for n in values if n.startswith("QNN_") and n.endswith("_UNDEFINED")]
    assert len(names) >= 20
    for name in names:
        assert values[name] == OTHER_SENTINELS.get(name, SENTINEL), name
    for name in dir(qnn_constants):
        if name.startswith("QNN_") and name.endswith("_UNDEFINED") and isinstance(getattr(qnn_constants, name), int):
            assert getattr(qnn_constants, name) == OTHER_SENTINELS.get(name, SENTINEL), name


def test_backend_free_of_a_freed_backend_is_the_headers_invalid_handle():
    import npurt.qnn as q
    qi = q.interface("fastrpc", soc="sm8350")
    backend = q.Qnn_BackendHandle_t()
    assert qi.backendCreate(None, None, backend) == q.QNN_SUCCESS
    assert qi.backendFree(backend) == q.QNN_SUCCESS
    assert q.qnn_error_code(qi.backendFree(backend)) == header_constants()["QNN_BACKEND_ERROR_INVALID_HANDLE"] == 4011
