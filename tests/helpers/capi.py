"""Helpers of the C-face tests: the libraries built once (keyed by the sources of `npurt.capi`, shared by the
test workers through a lock), C programs under tests/c compiled into build/ with the system compiler, and runs of
them as subprocesses."""
from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import npurt.capi

REPO = Path(__file__).resolve().parents[2]
C_DIR = REPO / "tests" / "c"
BUILD = REPO / "build" / "test-capi"
CAPI_SRC = Path(npurt.capi.__file__).resolve().parent


def _digest(paths: list[Path], extra: str = "") -> str:
    h = hashlib.sha256(extra.encode())
    for p in sorted(paths):
        h.update(str(p).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


class _Lock:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file = open(path, "w")

    def __enter__(self) -> "_Lock":
        fcntl.flock(self.file, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc) -> None:
        fcntl.flock(self.file, fcntl.LOCK_UN)
        self.file.close()


def prefix() -> Path:
    """An installed prefix (include/, lib/) of the current `npurt.capi` sources, built at most once."""
    sources = [*CAPI_SRC.rglob("*.py"), *CAPI_SRC.rglob("*.h"), *CAPI_SRC.rglob("*.c")]
    target = BUILD / ("prefix-" + _digest(sources, sys.executable + str(CAPI_SRC)))
    with _Lock(BUILD / "build.lock"):
        from npurt.capi.install import LIBRARIES, install
        if not all((target / "lib" / make_spec().name).exists() for make_spec in LIBRARIES):
            install(target)
    return target


def compile_c(name: str, pfx: Path, libs: tuple[str, ...] = ("rknnrt",), shared: bool = False,
              flags: tuple[str, ...] = (), src: Path | None = None) -> Path:
    """tests/c/<name>.c (or `src`) compiled once per source, header and flag set against `pfx`; the binary."""
    src = src or C_DIR / f"{name}.c"
    key = _digest([src, *C_DIR.glob("*.h"), *(pfx / "include").glob("*.h")], str(pfx) + repr((libs, shared, flags)))
    out = BUILD / "bin" / (f"lib{name}-{key}.so" if shared else f"{name}-{key}")
    with _Lock(BUILD / "compile.lock"):
        if not out.exists():
            out.parent.mkdir(parents=True, exist_ok=True)
            cmd = ["gcc", "-std=gnu11", "-O1", "-Wall", "-Werror", "-I", str(C_DIR), "-I", str(pfx / "include"),
                   str(src), "-o", str(out) + ".tmp", *flags]
            if shared:
                cmd += ["-shared", "-fPIC"]
            else:
                cmd += ["-L", str(pfx / "lib"), *(f"-l{lib}" for lib in libs), f"-Wl,-rpath,{pfx / 'lib'}",
                        "-lpthread", "-lm"]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            assert proc.returncode == 0, f"compiling {src.name} failed:\n{proc.stderr}"
            os.replace(str(out) + ".tmp", out)
    return out


def run_c(exe: Path, *args: object, env: dict | None = None, timeout: float = 180,
          check: bool = True) -> subprocess.CompletedProcess:
    """Run a compiled test program; `check`: fail with its output unless it exits 0."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("NPURT_", "RKNN_"))}
    full_env.update(env or {})
    proc = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          env=full_env)
    if check:
        assert proc.returncode == 0, f"{exe.name} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc
