"""One builder for every C library of npurt: a `LibrarySpec` in, an embedded-cffi shared library out.

A spec names the library (`librknnrt.so`), the headers its C side includes, the C declarations of the functions
it exports and the Python module whose same-named callables implement them. `build_library(spec, lib_dir)` then
writes and compiles one C file with cffi's embedding mode (`ffi.embedding_api` / `embedding_init_code` /
`compile`), in which, for every declaration `R f(A a, B* b)`:

- `f` is an exported C function: it starts the interpreter once (see below), counts the call as in flight, calls
  `_npurt_f` and returns its value — or the spec's error value (default: -1 for integers, NULL for pointers) if
  npurt could not start or the process is exiting. A Python exception never reads as success: the callable's
  exceptions return the same error value (cffi's `def_extern(error=...)`), with a line on stderr.
- `_npurt_f` is cffi's `extern "Python+C"` function. Pointer arguments and results cross as `uintptr_t`, so the
  Python callable sees plain ints (addresses) and never needs cffi; scalars keep their C type (typedef names are
  declared to cffi as `int...`, i.e. whatever integer type the header gives them).

Start-up, in C, before cffi's own (pitfalls of a prototype, each handled here):
- one start per process, whichever library is called first and from however many threads: every library carries
  the process state of `npurt_process.c` (start mutex, calls in flight, exit and fork hooks) and, at load, takes
  the earliest-loaded npurt library's as the process's (so each library is one file, and they still share one);
  the mutex serialises the interpreter's start and each library's binding; the first library's hooks start it;
- the interpreter is configured, not defaulted: isolated (no PYTHON* variables, no user site), no signal handlers,
  `executable` = the Python that built the library, so a venv's `pyvenv.cfg` and site-packages are used; the
  source folder of the building npurt goes first on `sys.path` — the library runs the npurt that built it;
- every signal disposition of the program (SIGINT, ...) is saved before and restored after start-up, as Python
  and the libraries it imports install their own;
- exit: new calls fail, calls in flight get up to `NPURT_CAPI_EXIT_WAIT_MS` (default 5000) to finish; if one is
  still running then, the process ends with `_exit(status)` (stdio flushed) rather than run destructors under it;
- fork() from a C thread: the forking thread takes the interpreter (GIL, import lock) as os.fork does, and the
  child re-creates it, so its calls return whatever the other threads were doing; Python's at-fork hooks run there
  (npurt's make the parent's handles unknown there: `npurt.forksafe`);
- loaded with `RTLD_LOCAL`, a library makes libpython's symbols global (extension modules need them);
- linked `-z nodelete`: `dlclose` never unmaps npurt's code, which the interpreter and other npurt libraries
  still point to (log forwarders, bound functions).
If the process already runs Python (a Python program loading the library), that interpreter is used as it is.

Specs: `npurt.capi.rknnrt` (librknnrt.so, librknnmrt.so); other libraries give their own `LibrarySpec`.
"""
from __future__ import annotations

import re
import shutil
import sys
import sysconfig
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from npurt.errors import ErrorCode, NpuError

__all__ = ["LibrarySpec", "Function", "parse_functions", "header_functions", "build_library", "check_toolchain",
           "PROCESS_SYMBOL"]

SRC_DIR = Path(__file__).resolve().parents[2]       # the folder holding the `npurt` package
PROCESS_SOURCE = Path(__file__).resolve().parent / "npurt_process.c"   # compiled into every library
PROCESS_SYMBOL = "npurt_process_v1"                 # each library's exported process table (npurt_process.c)

_DECL = re.compile(r"^\s*(?P<ret>[\w\s\*]+?)\s*\b(?P<name>[A-Za-z_]\w*)\s*\((?P<params>.*)\)\s*$", re.S)
_PARAM_NAME = re.compile(r"([A-Za-z_]\w*)\s*(\[[^\]]*\]\s*)*$")
_FUNC_PTR = re.compile(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)")
_C_SCALARS = {"void", "char", "short", "int", "long", "float", "double", "signed", "unsigned", "const",
              "volatile", "_Bool", "size_t", "ssize_t", "uintptr_t", "intptr_t",
              *(f"{s}int{n}_t" for s in ("", "u") for n in (8, 16, 32, 64))}


@dataclass(frozen=True)
class Param:
    """One parameter: its C type text, its name, and whether it crosses as an address (pointer / array)."""

    ctype: str
    name: str
    pointer: bool


@dataclass(frozen=True)
class Function:
    """One exported function, parsed from its C declaration."""

    name: str
    ret: str
    params: tuple[Param, ...]
    decl: str

    @property
    def returns_pointer(self) -> bool:
        return "*" in self.ret

    @property
    def returns_void(self) -> bool:
        return self.ret.replace("const", "").strip() == "void"

    def typedef_names(self) -> set[str]:
        """Scalar type names that are neither C keywords nor <stdint.h> types (so cffi must be told of them)."""
        names: set[str] = set()
        scalars = [p.ctype for p in self.params if not p.pointer]
        if not self.returns_pointer:
            scalars.append(self.ret)
        for text in scalars:
            names.update(w for w in re.findall(r"[A-Za-z_]\w*", text) if w not in _C_SCALARS)
        return names


@dataclass
class LibrarySpec:
    """What `build_library` needs to make one shared library.

    name: the file name (`librknnrt.so`), also the soname. headers: names (`"rknn_api.h"`) in `header_dir`,
    included by the generated C. functions: the exported C declarations (`;`-separated, no bodies). module:
    importable Python module with one callable per function name, taking and returning ints for pointers.
    errors: error value per function name (an integer literal or "NULL") overriding the default (-1 / NULL); also
    for the callbacks of `extra_cdef`. extra_cdef / extra_source: more cffi declarations and C code (e.g.
    `extern "Python+C"` callbacks that a C table in `extra_source` points to: declare them there too, as cffi
    defines them after it); the `extern "Python+C"` functions of `extra_cdef` are bound to same-named callables
    of `module` as well (not exported). defines: C macros set before the headers. python_path: folders put on `sys.path` after
    npurt's own (for a `module` outside npurt).
    """

    name: str
    headers: list[str]
    header_dir: Path
    functions: str
    module: str
    errors: dict[str, str] = field(default_factory=dict)
    extra_cdef: str = ""
    extra_source: str = ""
    defines: dict[str, str] = field(default_factory=dict)
    python_path: list[str] = field(default_factory=list)

    def parsed(self) -> list[Function]:
        return parse_functions(self.functions)

    @property
    def module_name(self) -> str:
        """The cffi extension module name compiled into the library (unique per library)."""
        return "_npurt_capi_" + re.sub(r"\W", "_", self.name.split(".so")[0])


def _split_params(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def _param(text: str, func: str) -> Param:
    m = _FUNC_PTR.search(text)
    if m:
        return Param(text, m.group(1), True)
    m = _PARAM_NAME.search(text)
    if not m or m.start() == 0:
        raise ValueError(f"{func}: cannot read the parameter {text!r} (write `type name`)")
    ctype = text[:m.start()].strip()
    return Param(ctype, m.group(1), "*" in ctype or "[" in text[m.start():])


def parse_functions(text: str) -> list[Function]:
    """The functions of C declarations `R name(T a, U* b, V c[]);` (comments allowed)."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)
    out = []
    for decl in (d.strip() for d in text.split(";")):
        if not decl:
            continue
        m = _DECL.match(decl)
        if not m:
            raise ValueError(f"cannot read the declaration {decl!r}")
        name, params = m.group("name"), m.group("params").strip()
        items = [] if params in ("", "void") else [_param(p, name) for p in _split_params(params)]
        out.append(Function(name, " ".join(m.group("ret").split()), tuple(items), " ".join(decl.split())))
    return out


def header_functions(path: Path) -> str:
    """The function prototypes of a header (top-level declarations, not typedefs, macros or inline bodies)."""
    text = re.sub(r"/\*.*?\*/|//[^\n]*", "", Path(path).read_text(), flags=re.S)
    found = re.findall(r"^(?!static\b|typedef\b|extern\b|#)([A-Za-z_][\w \t\*]*?\b\w+\s*\([^;{}]*\))\s*;", text, re.M)
    return ";\n".join(" ".join(f.split()) for f in found) + ";"


def _internal_decl(f: Function) -> str:
    ret = "uintptr_t" if f.returns_pointer else f.ret
    args = ", ".join("uintptr_t " + p.name if p.pointer else f"{p.ctype} {p.name}" for p in f.params)
    return f"{ret} _npurt_{f.name}({args or 'void'})"


def _error_value(spec: LibrarySpec, f: Function) -> str:
    if f.name in spec.errors:
        return spec.errors[f.name]
    return "NULL" if f.returns_pointer else "-1"


def _wrapper(spec: LibrarySpec, f: Function) -> str:
    args = ", ".join(f"(uintptr_t){p.name}" if p.pointer else p.name for p in f.params)
    call = f"_npurt_{f.name}({args})"
    if f.returns_void:
        return (f"CFFI_DLLEXPORT {f.decl} {{\n    if (!npurt_enter()) return;\n    {call};\n"
                f"    npurt_leave();\n}}\n")
    value = f"({f.ret})r" if f.returns_pointer else "r"
    rtype = "uintptr_t" if f.returns_pointer else f.ret
    return (f"CFFI_DLLEXPORT {f.decl} {{\n    if (!npurt_enter()) return {_error_value(spec, f)};\n"
            f"    {rtype} r = {call};\n    npurt_leave();\n    return {value};\n}}\n")


_RUNTIME_C = r"""
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t npurt_once = PTHREAD_ONCE_INIT;
static int npurt_ready;                 /* set by the init code once every function is bound */

static void npurt_capi_ready(void) { npurt_ready = 1; }
static int npurt_reported;              /* the start-up code already said why npurt cannot start */
static void npurt_capi_failed(void) { npurt_reported = 1; }

/* A library loaded with RTLD_LOCAL keeps libpython's symbols private to it; the extension modules Python imports
   later (numpy, ...) need them global, so the library promotes libpython once it is loaded. */
__attribute__((constructor)) static void npurt_python_global(void)
{
    Dl_info info;
    if (dladdr((void *)&Py_IsInitialized, &info) && info.dli_fname)
        dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
    /* never unmapped: the Python objects of the embedded module (its Lib, its functions) live in this library's
       memory and stay in sys.modules after a client's dlclose (onnxruntime's EP unloads its backend) */
    if (dladdr((void *)&npurt_python_global, &info) && info.dli_fname)
        dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

static int npurt_start_python(void)
{
    PyStatus status;
    PyConfig config;
    if (Py_IsInitialized())
        return 0;                       /* a Python host: its interpreter is used as it is */
    PyConfig_InitIsolatedConfig(&config);
    config.install_signal_handlers = 0;
    config.parse_argv = 0;
    status = PyConfig_SetBytesString(&config, &config.program_name, NPURT_PYTHON);
    if (!PyStatus_Exception(status))
        status = PyConfig_SetBytesString(&config, &config.executable, NPURT_PYTHON);
    if (!PyStatus_Exception(status))
        status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
        fprintf(stderr, "E npurt: %s: cannot start Python (%s): %s\n", NPURT_LIBRARY, NPURT_PYTHON,
                status.err_msg ? status.err_msg : "unknown error");
        return 0;
    }
    PyEval_SaveThread();                /* cffi takes the GIL per call */
    return 1;
}

/* fork() from a C thread: the forking thread takes the interpreter over (as os.fork does), so the child gets a
   consistent one whatever the other threads were doing; Python's at-fork hooks run in the child. */
static PyGILState_STATE npurt_fork_gil;
static int npurt_fork_took;

static void npurt_before_fork(void)
{
    npurt_fork_took = !PyGILState_Check();          /* held: Python itself is forking and does this */
    if (npurt_fork_took) {
        npurt_fork_gil = PyGILState_Ensure();
        PyOS_BeforeFork();
    }
}

static void npurt_after_fork_parent(void)
{
    if (npurt_fork_took) {
        PyOS_AfterFork_Parent();
        PyGILState_Release(npurt_fork_gil);
    }
}

static void npurt_after_fork_child(void)
{
    if (npurt_fork_took) {
        PyOS_AfterFork_Child();
        PyGILState_Release(npurt_fork_gil);
    }
}

static const struct npurt_process_hooks npurt_hooks = {
    npurt_start_python, npurt_before_fork, npurt_after_fork_parent, npurt_after_fork_child,
};

static void npurt_start(void)
{
    static struct sigaction saved[NSIG];
    int sig;
    npurt_process_lock();               /* one start per process, whichever library comes first */
    for (sig = 1; sig < NSIG; sig++)
        sigaction(sig, NULL, &saved[sig]);
    npurt_process_start(&npurt_hooks);
    if (Py_IsInitialized() && _cffi_start_python() == NULL)
        npurt_ready = 0;
    for (sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            sigaction(sig, &saved[sig], NULL);
    npurt_process_unlock();
    if (!npurt_ready && !npurt_reported)
        fprintf(stderr, "E npurt: %s: npurt could not start; every call fails\n", NPURT_LIBRARY);
}

static int npurt_enter(void)
{
    pthread_once(&npurt_once, npurt_start);
    return npurt_ready && npurt_process_enter();
}

static void npurt_leave(void) { npurt_process_leave(); }

/* The process is exiting (main returned, or the host interpreter is finalizing / gone): what is left is reclaimed
 * with the process, so release calls (contextFree, backendFree, ...) succeed without entering Python. */
static int npurt_exiting_now(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    int finalizing = Py_IsFinalizing();
#else
    int finalizing = _Py_IsFinalizing();
#endif
    return npurt_process_exiting() || (npurt_ready && (!Py_IsInitialized() || finalizing));
}
"""

_INIT_PY = """\
import sys
for _path in {paths!r}:
    if _path not in sys.path:
        sys.path.insert(0, _path)
from {module_name} import ffi, lib
try:
    from npurt.capi.embed import attach
    attach(ffi, {module!r}, {names!r}, {errors!r})
except ImportError as _exc:          # npurt or a dependency is missing from this Python: say what, in one line
    sys.stderr.write("E npurt: %s: npurt cannot start in %s (Python %d.%d): %s: %s; install npurt there "
                     "(pip install npurt) or use the Python that built the library; every call fails\\n"
                     % ({library!r}, sys.executable or "this process", sys.version_info[0], sys.version_info[1],
                        type(_exc).__name__, _exc))
    lib.npurt_capi_failed()
else:
    lib.npurt_capi_ready()
"""


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _externs(cdef: str) -> list[str]:
    return re.findall(r'extern\s+"Python\+C"\s+[^;(]*?\b([A-Za-z_]\w*)\s*\(', cdef)


def _python_errors(spec: LibrarySpec, functions: list[Function]) -> dict[str, int]:
    """The value `def_extern(error=...)` returns for an exception: the C error value, as cffi wants it (for the
    exported functions, and for the `extra_cdef` callbacks named in `spec.errors`)."""
    out = {}
    for f in functions:
        if f.returns_void:
            continue
        text = _error_value(spec, f)
        out[f"_npurt_{f.name}"] = 0 if text == "NULL" else int(text, 0)
    for name in _externs(spec.extra_cdef):
        if name in spec.errors:
            out[name] = 0 if spec.errors[name] == "NULL" else int(spec.errors[name], 0)
    return out


def check_toolchain() -> str:
    """The C compiler's path, or NpuError naming what to install (no compiler / no Python headers)."""
    cc = shutil.which(sysconfig.get_config_var("CC").split()[0] if sysconfig.get_config_var("CC") else "cc") \
        or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise NpuError(ErrorCode.NOT_SUPPORTED, "no C compiler found: install gcc (e.g. `apt-get install gcc`)")
    include = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not include.exists():
        raise NpuError(ErrorCode.NOT_SUPPORTED, f"no Python headers ({include} missing): install the Python "
                                                f"development package (e.g. `apt-get install python3-dev`)")
    return cc


def build_library(spec: LibrarySpec, lib_dir: Path, work_dir: Path | None = None) -> Path:
    """Compile `spec` into `lib_dir/spec.name` (one file: it needs only libpython and the C library); returns its
    path. Needs the system C compiler and Python headers."""
    import cffi

    check_toolchain()
    functions = spec.parsed()
    typedefs = sorted(set().union(*(f.typedef_names() for f in functions)))
    cdef = "".join(f"typedef int... {t};\n" for t in typedefs)
    cdef += "".join(f'extern "Python+C" {_internal_decl(f)};\n' for f in functions)
    cdef += spec.extra_cdef + "\nstatic void npurt_capi_ready(void);\nstatic void npurt_capi_failed(void);\n"
    ffi = cffi.FFI()
    ffi.cdef(cdef)
    ffi.embedding_api("")
    names = [f"_npurt_{f.name}" for f in functions] + _externs(spec.extra_cdef)
    ffi.embedding_init_code(_INIT_PY.format(paths=[*reversed(spec.python_path), str(SRC_DIR)],
                                            module_name=spec.module_name, module=spec.module, names=names,
                                            errors=_python_errors(spec, functions), library=spec.name))
    defines = {"NPURT_PYTHON": _c_string(sys.executable), "NPURT_LIBRARY": _c_string(spec.name), **spec.defines}
    source = "".join(f"#define {k} {v}\n" for k, v in defines.items())
    source += "".join(f'#include "{h}"\n' for h in spec.headers) + PROCESS_SOURCE.read_text() + _RUNTIME_C
    source += "".join(f"{_internal_decl(f)};\n" for f in functions) + spec.extra_source + "\n"
    source += "".join(_wrapper(spec, f) for f in functions)
    libdir = sysconfig.get_config_var("LIBDIR")
    lib_dir = Path(lib_dir)
    lib_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="npurt-capi-", dir=work_dir) as tmp:
        exports = Path(tmp) / "exports.map"            # the API and the process table (not cffi's PyInit_...)
        exports.write_text("{ global: " + "".join(f"{f.name}; " for f in functions) + f"{PROCESS_SYMBOL}; "
                           "local: *; };\n")
        ffi.set_source(spec.module_name, source, include_dirs=[str(spec.header_dir)],
                       extra_compile_args=["-O2", "-Wno-unused-function"],
                       extra_link_args=[f"-Wl,-soname,{spec.name}", f"-Wl,-rpath,{libdir}",
                                        "-Wl,-z,nodelete", f"-Wl,--version-script={exports}"])
        built = Path(ffi.compile(tmpdir=tmp, target=spec.name, verbose=False))
        target = lib_dir / spec.name
        shutil.copy(built, target.with_suffix(".tmp"))     # with the linker's mode (0755 under umask 022)
        target.with_suffix(".tmp").replace(target)
    return target
