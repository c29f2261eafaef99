"""npurt's C libraries in a hostile host (tests/c/hostile.c, every library loaded with dlopen(RTLD_LOCAL)): two
libraries' first calls racing, dlclose with a live log forwarder, exit with a run in flight, a log callback
blocking on the application's lock, fork while a thread runs, code pointers that are not code. The concurrency
cases run as many processes at once, each with a timeout, so a hang fails instead of stalling the suite."""
from __future__ import annotations

import os
import signal
import subprocess

import numpy as np
import pytest

from helpers.capi import compile_c, prefix
from helpers.models import convnet

RUNS = 30


@pytest.fixture(scope="module")
def pfx():
    return prefix()


@pytest.fixture(scope="module")
def exe(pfx):
    return compile_c("hostile", pfx, libs=(), flags=("-I", str(pfx / "include" / "QNN"), "-ldl", "-lpthread",
                                                    "-lm"))


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    (d / "conv.onnx").write_bytes(convnet())
    np.random.default_rng(22).standard_normal((1, 3, 8, 10)).astype(np.float32).tofile(d / "x.bin")
    return d


def _env(extra: dict | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NPURT_", "RKNN_"))}
    env.update(extra or {})
    return env


def _many(exe, args: list, runs: int, timeout: float, env: dict | None = None) -> list[tuple[int, str]]:
    """Start `runs` processes at once; (returncode, output) of each; a process still running at `timeout` is
    killed and reads as a hang."""
    procs = [subprocess.Popen([str(exe), *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, env=_env(env), start_new_session=True) for _ in range(runs)]
    out = []
    for p in procs:
        try:
            text, _ = p.communicate(timeout=timeout)
            out.append((p.returncode, text))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            text, _ = p.communicate()
            out.append((-999, "HANG\n" + text))
    return out


def _one(exe, args: list, timeout: float = 120, env: dict | None = None) -> str:
    rc, text = _many(exe, args, 1, timeout, env)[0]
    assert rc == 0, text
    return text


@pytest.mark.timeout(400)
def test_two_libraries_first_calls_race_from_two_threads(exe, pfx):
    results = _many(exe, ["race", pfx / "lib"], RUNS, timeout=300)
    bad = [text for rc, text in results if rc != 0 or "OK race" not in text]
    assert not bad, f"{len(bad)} of {RUNS} processes failed; first:\n{bad[0]}"


@pytest.mark.timeout(200)
def test_dlclose_of_the_qnn_library_with_a_live_log_handle(exe, pfx):
    assert "OK dlclose" in _one(exe, ["dlclose", pfx / "lib"])


@pytest.mark.timeout(400)
@pytest.mark.parametrize("wait_ms", ["0", "50"])
def test_exit_with_a_run_in_flight_neither_crashes_nor_hangs(exe, pfx, model, wait_ms):
    results = _many(exe, ["exit", pfx / "lib", model / "conv.onnx", model / "x.bin"], RUNS // 2, timeout=300,
                    env={"NPURT_CAPI_EXIT_WAIT_MS": wait_ms})
    bad = [(rc, text) for rc, text in results if rc != 3 or "OK exit" not in text]
    assert not bad, f"{len(bad)} of {RUNS // 2} processes: {bad[0]}"


@pytest.mark.timeout(200)
def test_a_log_callback_holding_up_does_not_block_another_threads_logging(exe, pfx):
    assert "OK logcb" in _one(exe, ["logcb", pfx / "lib"], timeout=150)


@pytest.mark.timeout(300)
def test_fork_while_a_thread_runs_children_refuse_inherited_and_run_fresh(exe, pfx, model):
    assert "OK fork" in _one(exe, ["fork", pfx / "lib", model / "conv.onnx", model / "x.bin", 4], timeout=250)


@pytest.mark.timeout(200)
def test_code_pointers_that_are_not_code_are_refused(exe, pfx, model):
    assert "OK fnptr" in _one(exe, ["fnptr", pfx / "lib", model / "conv.onnx"])


@pytest.mark.timeout(200)
def test_destroy_mem_never_closes_a_reused_fd_number(exe, pfx, model):
    assert "OK fdreuse" in _one(exe, ["fdreuse", pfx / "lib", model / "conv.onnx", model / "x.bin"])


@pytest.mark.timeout(200)
@pytest.mark.parametrize("library", ["librknnrt.so", "librknnmrt.so"])
def test_rknn_libraries_work_loaded_rtld_local(exe, pfx, model, library):
    assert "OK local" in _one(exe, ["local", pfx / "lib", library, model / "conv.onnx"])


@pytest.mark.timeout(200)
def test_read_only_input_structs_and_an_offset_past_the_model(exe, pfx, model):
    assert "OK readonly" in _one(exe, ["readonly", pfx / "lib", model / "conv.onnx"])


@pytest.mark.timeout(200)
def test_sizes_larger_than_the_buffer_are_refused_before_allocating(exe, pfx, model):
    import npurt
    from npurt.model import zoo
    npurt.compile(zoo.small_convnet(size=32), soc="sm8350", progress=False).save(model / "ctx.bin")
    assert "OK bigsize" in _one(exe, ["bigsize", pfx / "lib", model / "conv.onnx", model / "ctx.bin"])
