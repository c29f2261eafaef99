"""Before / after: two npurt source trees against onnxruntime, run for run interleaved (a helper run by path, not
one of `npurt bench`'s benchmarks: it has no `run()`).

On a loaded machine separate benchmark runs disagree by more than the change being measured; here one worker process
per tree (PYTHONPATH = that tree's `src`, the same onnxruntime) holds the row's executor and onnxruntime session,
and the coordinator asks them in turn for one timed block each (one untimed warm run, then 1 run, or 10 of
small_convnet, averaged) — before npurt, before onnxruntime, after npurt, after onnxruntime, the order of the two
trees swapped every round — so both trees see the same load. Reported per row: each tree's median npurt / the median
of both workers' onnxruntime times (the same session, pooled, so a worker's own luck does not move one tree's ratio;
onnxruntime's int8 for int8 rows, as `executor.py`'s "vs ORT int8", float32 for fp16 rows) and after / before npurt
time. Rows are `executor.py`'s (`--models` as there); `NPURT_NATIVE_LEVEL` applies to both trees.
Run: python bench/_executor_ab.py BEFORE_SRC AFTER_SRC [--models NAME,...] [--rounds N] [--precision fp16|int8]
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _worker() -> None:
    """Serve one row: a `setup` line builds it, then each `npurt` / `peer` line is answered with one run's seconds."""
    import executor as bench
    import npurt
    executor = session = feed = None
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["op"] == "setup":
            [(_, model)] = bench._models(False, only=[msg["model"]])
            sess = bench._session(model.SerializeToString(), 1)
            feed, x, calibration = bench.row_inputs(sess)
            cm = bench.compile_row(model, msg["precision"], calibration)
            executor = bench._executor(cm, x, True)
            session = bench._session(bench.ort_int8(model, calibration), 1) if msg["precision"] == "int8" else sess
            for _ in range(3):
                executor.run()
                session.run(None, feed)
            answer = {"cpu": bench.cpu(), "npurt": npurt.__file__}
        else:
            run = executor.run if msg["op"] == "npurt" else (lambda: session.run(None, feed))
            run()                                       # warm: the other worker ran in between
            t0 = time.perf_counter()
            for _ in range(msg["n"]):
                run()
            answer = {"s": (time.perf_counter() - t0) / msg["n"]}
        print(json.dumps(answer), flush=True)


def _spawn(src: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(src).resolve()), str(Path(__file__).parent)])}
    return subprocess.Popen([sys.executable, __file__, "--worker"], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)


def _ask(worker: subprocess.Popen, **msg) -> dict:
    worker.stdin.write(json.dumps(msg) + "\n")
    worker.stdin.flush()
    return json.loads(worker.stdout.readline())


def main() -> None:
    args = [a for a in sys.argv[1:]]
    before, after = args[0], args[1]
    rounds = int(args[args.index("--rounds") + 1]) if "--rounds" in args else 60
    precisions = [args[args.index("--precision") + 1]] if "--precision" in args else ["fp16", "int8"]
    models = args[args.index("--models") + 1].split(",") if "--models" in args else ["mobilenet_v2_like",
                                                                                     "small_convnet"]
    print(f"load average {os.getloadavg()[0]:.2f}; NPURT_NATIVE_LEVEL={os.environ.get('NPURT_NATIVE_LEVEL', '')}; "
          f"{rounds} rounds")
    workers = {"before": _spawn(before), "after": _spawn(after)}
    try:
        for model in models:
            for precision in precisions:
                ready = [_ask(w, op="setup", model=model, precision=precision) for w in workers.values()]
                assert ready[0]["npurt"] != ready[1]["npurt"], "both workers import the same npurt"
                cpu = ready[0]["cpu"]
                n = 1 if model != "small_convnet" else 10       # runs per timed block (after one warm run)
                times = {(side, op): [] for side in workers for op in ("npurt", "peer")}
                for r in range(rounds):
                    for side in (("before", "after") if r % 2 == 0 else ("after", "before")):
                        for op in ("npurt", "peer"):
                            times[side, op].append(_ask(workers[side], op=op, n=n)["s"])
                med = {k: statistics.median(v) for k, v in times.items()}
                peer = "ORT int8" if precision == "int8" else "ORT fp32"
                pooled = statistics.median(times["before", "peer"] + times["after", "peer"])   # one onnxruntime
                ratio = {side: med[side, "npurt"] / pooled for side in workers}
                print(f"{cpu} | {model} {precision}: npurt / {peer} before {ratio['before']:.2f}"
                      f" after {ratio['after']:.2f}; npurt ms before "
                      f"{med['before', 'npurt'] * 1e3:.3f} after {med['after', 'npurt'] * 1e3:.3f} "
                      f"(x{med['after', 'npurt'] / med['before', 'npurt']:.2f}); load average "
                      f"{os.getloadavg()[0]:.2f}", flush=True)
    finally:
        for w in workers.values():
            w.stdin.close()
            w.wait()


if __name__ == "__main__":
    if "--worker" in sys.argv:
        _worker()
    else:
        main()
