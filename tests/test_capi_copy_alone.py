"""Every C library of `npurt capi` is one file: copied alone into an empty folder (as the RKNN model zoo's demos
drop librknnrt.so into 3rdparty/), it NEEDs no other npurt library, a C program links against that copy only and
a real call through it works. Libraries copied into separate folders and loaded into one process still share one
process state (tests/c/copy_alone.c, tests/c/copy_two.c)."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from helpers.capi import C_DIR, prefix, run_c
from helpers.models import convnet

NPURT_LIBRARIES = ("librknnrt.so", "librknnmrt.so", "libQnnHtp.so", "libQnnSystem.so", "libcdsprpc.so")
MACRO = {"librknnrt.so": "COPY_RKNNRT", "librknnmrt.so": "COPY_RKNNRT", "libQnnHtp.so": "COPY_QNNHTP",
         "libQnnSystem.so": "COPY_QNNSYSTEM", "libcdsprpc.so": "COPY_CDSPRPC"}
RACES = 8


@pytest.fixture(scope="module")
def pfx() -> Path:
    return prefix()


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("copy-alone") / "conv.onnx"
    path.write_bytes(convnet())
    return path


def _copy_alone(pfx: Path, name: str, folder: Path) -> Path:
    """`name` copied by itself into the new folder `folder`; its path."""
    folder.mkdir(parents=True)
    shutil.copyfile(pfx / "lib" / name, folder / name)
    assert sorted(os.listdir(folder)) == [name]
    return folder / name


def _needed(lib: Path) -> list[str]:
    out = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True, check=True).stdout
    return [line.split("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


def _link(src: Path, exe: Path, pfx: Path, lib: Path, *flags: str) -> Path:
    """`src` compiled against npurt's headers and linked with `lib` only (-L its folder -l...)."""
    cmd = ["gcc", "-std=gnu11", "-O1", "-Wall", "-Werror", "-I", str(C_DIR), "-I", str(pfx / "include"),
           "-I", str(pfx / "include" / "QNN"), *flags, str(src), "-o", str(exe),
           "-L", str(lib.parent), f"-l{lib.name[3:-3]}", f"-Wl,-rpath,{lib.parent}", "-ldl", "-lpthread"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"linking against the lone {lib.name} failed:\n{proc.stderr}"
    return exe


@pytest.mark.parametrize("name", NPURT_LIBRARIES)
def test_a_library_copied_alone_links_and_runs(pfx, model, tmp_path, name):
    lib = _copy_alone(pfx, name, tmp_path / "3rdparty")
    needed = _needed(lib)
    assert not [n for n in needed if "npurt" in n or n in NPURT_LIBRARIES], needed
    ldd = subprocess.run(["ldd", str(lib)], capture_output=True, text=True, check=True).stdout
    assert "not found" not in ldd, ldd
    exe = _link(C_DIR / "copy_alone.c", tmp_path / "app", pfx, lib, f"-D{MACRO[name]}")
    resolved = subprocess.run(["ldd", str(exe)], capture_output=True, text=True, check=True).stdout
    assert f"{name} => {lib}" in resolved, resolved          # the program runs the lone copy
    proc = run_c(exe, *([model] if MACRO[name] == "COPY_RKNNRT" else []))
    assert "OK copy_alone" in proc.stdout, proc.stdout + proc.stderr


@pytest.fixture
def two(pfx, tmp_path) -> tuple[Path, Path, Path]:
    """(program linked with a lone librknnrt.so copy, lone libQnnHtp.so copy, lone libcdsprpc.so copy), each
    library in its own folder."""
    rknn = _copy_alone(pfx, "librknnrt.so", tmp_path / "a")
    htp = _copy_alone(pfx, "libQnnHtp.so", tmp_path / "b")
    cdsp = _copy_alone(pfx, "libcdsprpc.so", tmp_path / "c")
    return _link(C_DIR / "copy_two.c", tmp_path / "two", pfx, rknn), htp, cdsp


@pytest.mark.timeout(300)
def test_copied_libraries_first_calls_race_and_share_one_start(two, model):
    """Three lone copies' first calls at the same moment from three threads, in RACES processes at once: one
    interpreter start (a second, concurrent start would crash or hang)."""
    exe, htp, cdsp = two
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NPURT_", "RKNN_"))}
    procs = [subprocess.Popen([str(exe), "race", str(model), str(htp), str(cdsp)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
             for _ in range(RACES)]
    bad = []
    for p in procs:
        try:
            text, _ = p.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            text = "HANG\n" + p.communicate()[0]
        if p.returncode != 0 or "OK race" not in text:
            bad.append(text)
    assert not bad, f"{len(bad)} of {RACES} processes failed; first:\n{bad[0]}"


def test_copied_libraries_share_one_exit_handler(two, model):
    """libQnnHtp's copy is called first, then the program registers an atexit handler, then librknnrt's copy is
    called: librknnrt uses the process state libQnnHtp started (one exit handler, registered before the
    program's), so in the program's handler the process is not yet exiting for librknnrt either."""
    exe, htp, _ = two
    proc = run_c(exe, "exit", model, htp)
    assert "OK exit" in proc.stdout, proc.stdout + proc.stderr
