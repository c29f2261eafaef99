"""The folder `accuracy_analysis` writes, in the toolkit's layout:

    error_analysis.txt     header, then one row per tensor: [OpType] name, entire cos | euc, single cos | euc
                           (and a runtime column for the model outputs when a target was given)
    map_name_to_file.txt   tensor name -> file name
    golden/<file>.txt      the float reference, one value per line (%f), ONNX (NCHW) order; golden/npy/<file>.npy
    simulator/<file>.txt   npurt's quantised run, dequantised to float32; simulator/npy/<file>.npy
    runtime/<file>.txt     with a target: the outputs of an inference on the runtime for that SoC

The tensors are the compiled graph's (`npurt.api.accuracy`); `golden/<input>.txt` holds the input after
mean / std. euc is npurt's normalised distance ||x - golden|| / ||golden||.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

HEADER = """\
# simulator_error: the error of each layer of npurt's quantised run against the float reference ('golden').
#     entire: the layer's output when the whole model runs quantised (errors accumulate layer by layer).
#     single: the layer run alone on the golden values of its inputs (only its own error).
#     cos: cosine similarity; euc: euclidean distance normalised by the golden tensor's norm.
"""

MAX_STEM = 200
"""The longest file name stem written (file systems allow 255 bytes)."""


def file_name(tensor: str) -> str:
    """A file name for a tensor name (path separators and other specials become '_'; a name too long for a file
    system keeps its start and a hash of the whole)."""
    stem = re.sub(r"[^A-Za-z0-9_.\-]", "_", tensor)
    if len(stem) > MAX_STEM:
        stem = stem[:MAX_STEM - 9] + "_" + hashlib.sha1(tensor.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return stem + ".txt"


def file_names(tensors: Sequence[str]) -> dict[str, str]:
    """{tensor: file name}, one file per tensor: a name that is already a plain file name keeps it; one whose
    replaced characters make it collide (`a/b` and `a_b`) gets `_1`, `_2`, ... in the order given (the graph's)."""
    base = {t: file_name(t) for t in tensors}
    names: dict[str, str] = {t: f for t, f in base.items() if f == t + ".txt"}
    taken = set(names.values())
    for t in tensors:
        if t in names:
            continue
        name, k = base[t], 0
        while name in taken:
            k += 1
            name = f"{base[t][:-4]}_{k}.txt"
        names[t] = name
        taken.add(name)
    return {t: names[t] for t in tensors}


def _dump(folder: Path, values: Mapping[str, np.ndarray], names: Mapping[str, str]) -> None:
    (folder / "npy").mkdir(parents=True, exist_ok=True)
    for name, value in values.items():
        if name not in names:
            continue
        arr = np.asarray(value, np.float32)
        np.savetxt(folder / names[name], arr.reshape(-1), fmt="%f")
        np.save(folder / "npy" / (names[name][:-len(".txt")] + ".npy"), arr)


def write(out: Path, report: Any, golden: Mapping[str, np.ndarray] | None, quantised: Mapping[str, np.ndarray] | None,
          runtime: Mapping[str, np.ndarray] | None = None, dumps: bool = True) -> None:
    """The snapshot folder `out` for an `AccuracyReport` and the values of one input (see the module doc)."""
    from npurt.api.accuracy import cosine, euclidean
    out.mkdir(parents=True, exist_ok=True)
    names = file_names([row.name for row in report.tensors])
    width = max([len(f"[{r.produced_by}] {r.name}") for r in report.tensors] + [30]) + 2
    cols = "entire              single"
    head2 = "cos      euc        cos      euc"
    if runtime:
        cols += "              runtime"
        head2 += "        cos      euc"
    lines = [HEADER, f"{'layer_name':<{width}}{'simulator_error':<40}", f"{'':<{width}}{cols}",
             f"{'':<{width}}{head2}", "-" * (width + 60)]
    for r in report.tensors:
        label = f"[{r.produced_by}] {r.name}"
        if np.isnan(r.entire_cosine):
            lines.append(label)             # no golden value (a tensor the reference does not have)
            continue
        row = (f"{label:<{width}}{r.entire_cosine:.5f} | {r.entire_euclidean:<9.4g} "
               f"{r.single_cosine:.5f} | {r.single_euclidean:<9.4g}")
        if runtime and r.name in runtime and golden is not None and r.name in golden:
            ref = np.asarray(golden[r.name], np.float32)
            got = np.asarray(runtime[r.name], np.float32).reshape(ref.shape)
            row += f"  {cosine(got, ref):.5f} | {euclidean(got, ref):.4g}"
        lines.append(row.rstrip())
    (out / "error_analysis.txt").write_text("\n".join(lines) + "\n")
    (out / "map_name_to_file.txt").write_text("".join(f"{n} -> {f}\n" for n, f in names.items()))
    if not dumps:
        return
    if golden is not None:
        _dump(out / "golden", golden, names)
    if quantised is not None:
        _dump(out / "simulator", quantised, names)
    if runtime:
        _dump(out / "runtime", runtime, names)
