"""What the three QNN libraries share: where their headers are, the C of a provider table whose members call
Python adapters.

QNN programs never link these libraries: they `dlopen` them (`RTLD_LOCAL`) and reach every function through a
provider table (`QnnInterface_getProviders`). So the table is a static C struct; each implemented member is a small
C function that enters npurt (`npurt_enter`, see `npurt.capi.build`) and calls an `extern "Python+C"` adapter with
pointers as `uintptr_t`; a member npurt does not implement returns its "not supported" code in C. (Loading with
`RTLD_LOCAL` works as for every npurt library: see `npurt.capi.build`.)
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from npurt.capi.build import parse_functions
from npurt.errors import ErrorCode, NpuError
from npurt.qnn.boundary import BOUNDARY

HEADER_DIR = Path(__file__).resolve().parent / "include"
QNN_HEADER_DIR = HEADER_DIR / "QNN"
ALL_HEADERS = ("rpcmem.h", "qurt_alloc.h", *(str(p.relative_to(HEADER_DIR)) for p in sorted(QNN_HEADER_DIR.rglob("*.h"))))

log = logging.getLogger("npurt.qnn")

# C scalar types of the QNN headers as cffi sees them (handles and callbacks cross as addresses)
_SCALARS = {"uint32_t": "uint32_t", "uint64_t": "uint64_t", "int": "int", "QnnProperty_Key_t": "uint32_t",
            "QnnProfile_EventId_t": "uint64_t",
            "Qnn_ContextBinarySize_t": "uint64_t", "QnnLog_Level_t": "uint32_t", "QnnProfile_Level_t": "uint32_t",
            "Qnn_ErrorHandle_t": "uint64_t"}


@dataclass(frozen=True)
class Member:
    """One table member: its name, its C parameters (`""` for a member npurt does not implement) and the
    Python adapter (`prefix + name`) that implements it."""

    name: str
    params: str = ""

    @property
    def implemented(self) -> bool:
        return bool(self.params)


_FN_TYPEDEF = re.compile(r"typedef\s+Qnn_ErrorHandle_t\s*\(\*\s*(\w+)\)\s*\(([^)]*)\)\s*;")
NOT_SUPPORTED_FN = "QnnInterface_NotSupportedFn_t"


def header_members(table_type: str) -> list[Member]:
    """The provider table `table_type` as npurt's QNN headers declare it — the one source of its members, their
    order and their C parameters: each member with the parameters of its function-pointer typedef; "" (not
    implemented) for a `QnnInterface_NotSupportedFn_t` or `void *` slot."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(QNN_HEADER_DIR.rglob("*.h")))
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    params = {name: " ".join(args.split()) for name, args in _FN_TYPEDEF.findall(text)}
    params[NOT_SUPPORTED_FN] = ""
    body = re.search(r"typedef struct \{([^{}]*)\}\s*%s\s*;" % re.escape(table_type), text)
    if body is None:
        raise LookupError(f"no provider table {table_type} in {QNN_HEADER_DIR}")
    return [Member(name, params.get(ftype, "")) for ftype, name in re.findall(r"(\w+)\s*\**\s*(\w+)\s*;",
                                                                              body.group(1))]


def _typedef_params() -> dict[str, str]:
    """Every `typedef Qnn_ErrorHandle_t (*NameFn_t)(...)` of npurt's QNN headers: name -> its C parameters."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(QNN_HEADER_DIR.rglob("*.h")))
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return {name: " ".join(args.split()) for name, args in _FN_TYPEDEF.findall(text)}


# The component of a member name and the typedef prefix QNN gives it (`contextFree` -> QnnContext_FreeFn_t).
_COMPONENTS = (("globalConfig", "QnnGlobalConfig"), ("property", "QnnProperty"), ("backend", "QnnBackend"),
               ("context", "QnnContext"), ("graph", "QnnGraph"), ("tensor", "QnnTensor"), ("log", "QnnLog"),
               ("profile", "QnnProfile"), ("mem", "QnnMem"), ("device", "QnnDevice"), ("signal", "QnnSignal"),
               ("error", "QnnError"))


def member_typedef(name: str) -> str:
    """QNN's function-pointer typedef of table member `name` (`memRegister` -> `QnnMem_RegisterFn_t`)."""
    for component, prefix in _COMPONENTS:
        if name.startswith(component):
            return f"{prefix}_{name[len(component):]}Fn_t"
    raise LookupError(f"{name} is no QNN interface member")


def interface_members(names: tuple[str, ...]) -> list[Member]:
    """The provider table's members from the list of names (`npurt.soc.api_coverage.QNN_INTERFACE_MEMBERS`): a
    member is implemented when npurt's headers declare its QNN typedef, with that typedef's parameters."""
    params = _typedef_params()
    return [Member(n, params.get(member_typedef(n), "")) for n in names]


def interface_struct(members: list[Member], reserved: tuple[str, ...], type_name: str) -> str:
    """The C text of the provider table's struct, as npurt's QnnInterface.h carries it (a test keeps the two
    equal): each member with its typedef (NOT_SUPPORTED_FN when npurt does not implement it), then the reserved
    slots as `void *`."""
    rows = [(member_typedef(m.name) if m.implemented else NOT_SUPPORTED_FN, m.name) for m in members]
    rows += [("void *", name) for name in reserved]
    lines = [f"    {ctype}{'' if ctype.endswith('*') else ' '}{name};".ljust(65) + f" /* {i:2d} */"
             for i, (ctype, name) in enumerate(rows)]
    return "typedef struct {\n" + "\n".join(lines) + f"\n}} {type_name};\n"


# Structs a member takes by value (graphAddNode's and backendValidateOpConfig's op config): the C member passes
# their address on to the adapter, which reads them as it reads any struct pointer.
_BY_VALUE = ("Qnn_OpConfig_t",)


def _address(ctype: str, pointer: bool) -> bool:
    return pointer or ctype.endswith("Handle_t") or ctype.endswith("Callback_t") or ctype in _BY_VALUE


def _pass(p) -> str:
    """How the C member hands parameter `p` to its adapter."""
    if p.ctype in _BY_VALUE and not p.pointer:
        return f"(uintptr_t)&{p.name}"
    return f"(uintptr_t){p.name}" if _address(p.ctype, p.pointer) else p.name


def _params(member: Member):
    return parse_functions(f"void {member.name}({member.params})")[0].params


def extern_cdef(members: list[Member], prefix: str) -> str:
    """The `extern "Python+C"` declarations of the implemented members' adapters."""
    out = []
    for m in members:
        if m.implemented:
            args = ", ".join(("uintptr_t" if _address(p.ctype, p.pointer) else _SCALARS[p.ctype]) + " " + p.name
                             for p in _params(m))
            out.append(f'extern "Python+C" uint64_t {prefix}{m.name}({args});')
    return "\n".join(out) + "\n"


def is_release(name: str) -> bool:
    """A member that releases something (contextFree, memDeRegister, destroyPowerConfigId, ...): once the process
    is exiting it returns QNN_SUCCESS without entering Python (what is left goes with the process), so a client's
    teardown during interpreter exit ends cleanly in any order."""
    return bool(re.search(r"(Free|DeRegister|^destroy\w*)$|Free[A-Z]", name))


def table_source(members: list[Member], prefix: str, not_supported: str) -> str:
    """C for every member: implemented ones call their adapter inside npurt_enter/leave (the library's start-up
    failure gives QNN_COMMON_ERROR_SYSTEM; release members succeed at once when the process is exiting), the others
    print one line and return `not_supported`."""
    out = []
    for m in members:
        if not m.implemented:
            out.append(f'static Qnn_ErrorHandle_t ns_{m.name}(void)\n{{\n'
                       f'    npurt_not_supported("{m.name}");\n    return {not_supported};\n}}\n')
            continue
        params = _params(m)
        cargs = ", ".join(("uintptr_t " if _address(p.ctype, p.pointer) else _SCALARS[p.ctype] + " ") + p.name
                          for p in params)
        call = ", ".join(_pass(p) for p in params)
        at_exit = "    if (npurt_exiting_now()) return QNN_SUCCESS;\n" if is_release(m.name) else ""
        out.append(f"uint64_t {prefix}{m.name}({cargs});\n"
                   f"static Qnn_ErrorHandle_t m_{m.name}({m.params})\n{{\n{at_exit}"
                   f"    if (!npurt_enter()) return QNN_COMMON_ERROR_SYSTEM;\n"
                   f"    Qnn_ErrorHandle_t r = {prefix}{m.name}({call});\n    npurt_leave();\n    return r;\n}}\n")
    return NOT_SUPPORTED_C + "".join(out)


def table_initializer(members: list[Member]) -> str:
    """`.member = function` lines of the provider's table (reserved slots stay NULL)."""
    return ",\n".join(f"        .{m.name} = {'m_' if m.implemented else 'ns_'}{m.name}" for m in members)


NOT_SUPPORTED_C = r"""
#include <stdio.h>
static void npurt_not_supported(const char *name)
{
    fprintf(stderr, "<E> %s: not supported by npurt's QNN HTP mirror (QNN_COMMON_ERROR_NOT_SUPPORTED)\n", name);
}
"""


def adapter(name: str, invalid: int) -> Callable:
    """The Python side of one member, guarded by the QNN mirror's boundary: a C pointer that cannot be read or
    written (`npurt.capi.guard`) returns the member's INVALID_ARGUMENT code `invalid`; any other escape is an
    internal error, counted, QNN_COMMON_ERROR_GENERAL (an `extern "Python+C"` exception would otherwise read as
    0, success)."""
    def explain(member: str, error: BaseException) -> tuple[int, str] | None:
        if isinstance(error, NpuError) and error.code is not ErrorCode.INTERNAL:
            return invalid, error.message
        return None
    return BOUNDARY.wrap(name, export=False, explain=explain)
