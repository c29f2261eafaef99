"""Which weights rknn-toolkit2's simulator computes each convolution with, read off its own per-layer dumps.

The toolkit (2.3.2, its venv as `bench/quant_vs_toolkit.py` makes it) quantises a real model of the optional tier
(`config(quantized_algorithm='normal', target_platform='rk3588')`, the 16 calibration inputs of
`quant_vs_toolkit`), then `accuracy_analysis` on one held-out input (page:50) writes every layer's simulator output,
and `hybrid_quantization_step1` the .quantization.cfg (each activation's scale / zero point). Each dense Conv whose
input and output both have a dump is recomputed in float64 from the toolkit's own input dump with three candidate
weights: symmetric int8 per channel (max |w| / 127, npurt's default), asymmetric int8 per channel ([min, max] widened
to 0 onto all 256 codes, with a zero point) and float. Per conv: the relative RMS difference of each candidate to
the toolkit's conv output (its dump is the accumulator before any fused activation, in float). For the first conv,
when a fused SiLU follows it, also the fraction of the activation's int8 codes each candidate reproduces (SiLU of the
recomputed conv output rounded once to the activation's grid from the cfg).

ratio (for `npurt bench`) = the symmetric candidate's difference / the asymmetric one's (> 1: the toolkit's weights are
asymmetric). Skips with one line when the toolkit venv cannot be made.
Run: python bench/toolkit_weights.py [--quick] [model ...]   (default yolov8n; --quick: 8 calibration inputs)
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from _timing import cpu  # bench/ is on sys.path: the script's folder, or `npurt bench`'s

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import quant_vs_toolkit as qt  # noqa: E402  (the toolkit venv, the real models' inputs and normalisation)
from helpers import real_models as rm  # noqa: E402

# The toolkit side (argv[1]: a JSON job): quantise and dump every layer on one input; write the cfg.
SCRIPT = r'''
import json, sys
from rknn.api import RKNN

job = json.load(open(sys.argv[1]))
for step in ("analysis", "cfg"):
    rknn = RKNN(verbose=False)
    rknn.config(mean_values=[job["mean"]], std_values=[job["std"]], quantized_algorithm="normal",
                target_platform="rk3588")
    if rknn.load_onnx(model=job["model"], inputs=[job["input"]], input_size_list=[job["shape"]]) != 0:
        sys.exit("load_onnx failed")
    if step == "cfg":
        if rknn.hybrid_quantization_step1(dataset="dataset.txt") != 0:
            sys.exit("hybrid_quantization_step1 failed")
    elif rknn.build(do_quantization=True, dataset="dataset.txt") != 0 or rknn.init_runtime() != 0 \
            or rknn.accuracy_analysis(inputs=[job["held"]], output_dir="snapshot") != 0:
        sys.exit("accuracy_analysis failed")
    rknn.release()
'''


def _weights(w: np.ndarray, kind: str) -> np.ndarray:
    """`w` (M, C, kh, kw) as the candidate stores it, dequantised (float64)."""
    w = w.astype(np.float64)
    if kind == "float":
        return w
    if kind == "symmetric":
        s = np.abs(w).max(axis=(1, 2, 3), keepdims=True) / 127
        return np.rint(w / np.where(s > 0, s, 1)) * s
    lo = np.minimum(w.min(axis=(1, 2, 3), keepdims=True), 0)
    hi = np.maximum(w.max(axis=(1, 2, 3), keepdims=True), 0)
    s = np.where(hi > lo, (hi - lo) / 255, 1)
    return np.rint(w / s) * s


def _conv(x: np.ndarray, w: np.ndarray, b: np.ndarray, strides, pads) -> np.ndarray:
    """Dense conv (M, P) of x (C, H, W) in float64, dilation 1."""
    m, c, kh, kw = w.shape
    p = np.pad(x, ((0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    ho, wo = (p.shape[1] - kh) // strides[0] + 1, (p.shape[2] - kw) // strides[1] + 1
    cols = np.stack([p[:, i:i + strides[0] * (ho - 1) + 1:strides[0], j:j + strides[1] * (wo - 1) + 1:strides[1]]
                     for i in range(kh) for j in range(kw)], axis=1).reshape(c * kh * kw, -1)
    return w.reshape(m, -1) @ cols + b[:, None]


def _qparams(cfg: str) -> dict[str, tuple[float, int]]:
    """{tensor: (scale, zero point)} of a .quantization.cfg (YAML as the toolkit writes it: a tensor's name at indent
    4, its `scale:` and `zero_point:` lists at indent 8, one value per `-` line)."""
    out: dict[str, dict] = {}
    tensor = key = None
    for line in cfg.splitlines():
        indent, text = len(line) - len(line.lstrip()), line.strip()
        if indent == 4 and text.endswith(":"):
            tensor, key = text[:-1].strip("'\""), None
        elif indent == 8 and text.endswith(":"):
            key = text[:-1]
        elif tensor and key in ("scale", "zero_point") and text.startswith("-"):
            out.setdefault(tensor, {}).setdefault(key, float(text[1:]))
    return {t: (v["scale"], int(v["zero_point"])) for t, v in out.items() if "scale" in v and "zero_point" in v}


def _compare(name: str, folder: Path) -> list[dict]:
    import onnx
    from onnx import numpy_helper
    model = onnx.load(str(folder / "model.onnx"))
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    files = dict(line.split() for line in (folder / "snapshot" / "map_name_to_file.txt").read_text().splitlines()[2:]
                 if len(line.split()) == 2)
    qparams = _qparams((folder / "model.quantization.cfg").read_text())

    def dump(tensor: str) -> np.ndarray:
        return np.loadtxt(folder / "snapshot" / "simulator" / files[tensor], dtype=np.float64)
    readers = {}
    for node in model.graph.node:
        for t in node.input:
            readers.setdefault(t, []).append(node)
    rows = []
    for k, node in enumerate(n for n in model.graph.node if n.op_type == "Conv"):
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if attrs.get("group", 1) != 1 or node.input[0] not in files or node.output[0] not in files \
                or node.input[1] not in inits:
            continue
        w = inits[node.input[1]]
        b = inits[node.input[2]].astype(np.float64) if len(node.input) > 2 else np.zeros(w.shape[0])
        x = dump(node.input[0])
        side = int(round(np.sqrt(x.size / w.shape[1])))
        if x.size != w.shape[1] * side * side:
            continue                                    # not a square map (the tier's are): a reshaped tensor
        x = x.reshape(w.shape[1], side, side)
        got = dump(node.output[0])
        strides, pads = attrs.get("strides", [1, 1]), attrs.get("pads", [0, 0, 0, 0])
        ho = (x.shape[1] + pads[0] + pads[2] - w.shape[2]) // strides[0] + 1
        wo = (x.shape[2] + pads[1] + pads[3] - w.shape[3]) // strides[1] + 1
        if got.size != w.shape[0] * ho * wo:
            continue                                    # the dump is of another tensor shape (a head's reshape)
        got = got.reshape(w.shape[0], -1)
        row = {"model": name, "case": node.name}
        ys = {kind: _conv(x, _weights(w, kind), b, strides, pads) for kind in ("symmetric", "asymmetric", "float")}
        norm = np.sqrt(np.mean(got ** 2))
        for kind, y in ys.items():
            row[kind] = float(np.sqrt(np.mean((y - got) ** 2)) / norm)
        row["ratio"] = row["symmetric"] / max(row["asymmetric"], 1e-12)
        mul = [r for r in readers.get(node.output[0], []) if r.op_type == "Mul"]
        if k == 0 and mul and mul[0].output[0] in files and mul[0].output[0] in qparams:
            scale, zp = qparams[mul[0].output[0]]
            codes = np.rint(dump(mul[0].output[0]).reshape(got.shape) / scale) + zp
            for kind, y in ys.items():
                mine = np.clip(np.rint(y / (1 + np.exp(-y)) / scale) + zp, -128, 127)
                row[f"{kind} codes"] = float(np.mean(mine == codes))
        rows.append(row)
    return rows


def run(quick: bool = False, names: list[str] | None = None) -> list[dict]:
    tk = qt.toolkit_python()
    if tk is None:
        return []
    rows = []
    for name in names or ["yolov8n"]:
        spec = rm.MODELS[name]
        folder = rm.cache() / "toolkit_weights" / name
        folder.mkdir(parents=True, exist_ok=True)
        calib, held = qt.inputs(name, quick)
        lines = []
        for k, img in enumerate(calib):
            np.save(folder / f"calib{k}.npy", qt.nchw(img))
            lines.append(f"calib{k}.npy")
        (folder / "dataset.txt").write_text("\n".join(lines) + "\n")
        np.save(folder / "held.npy", qt.nchw(held["page:50"]))
        (folder / "model.onnx").write_bytes(rm.model_path(name).read_bytes())
        (folder / "toolkit_script.py").write_text(SCRIPT)
        mean, std = qt.NORM[name]
        job = {"model": "model.onnx", "input": spec.input, "shape": list(spec.shape), "mean": mean, "std": std,
               "held": "held.npy"}
        (folder / "job.json").write_text(json.dumps(job))
        done = subprocess.run([str(tk), "toolkit_script.py", "job.json"], cwd=folder, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"toolkit script failed: {(done.stderr or done.stdout).strip()[-800:]}")
        rows += _compare(name, folder)
    return rows


def main() -> None:
    print(cpu())
    rows = run(quick="--quick" in sys.argv, names=[a for a in sys.argv[1:] if not a.startswith("--")] or None)
    print(f"{'model':9} {'conv':44} {'symmetric':>10} {'asymmetric':>10} {'float':>10}   (relative RMS difference)")
    for row in rows:
        codes = "".join(f"  {kind} codes {row[kind + ' codes']:.5f}" for kind in ("symmetric", "asymmetric", "float")
                        if kind + " codes" in row)
        print(f"{row['model']:9} {row['case']:44} {row['symmetric']:10.2e} {row['asymmetric']:10.2e} "
              f"{row['float']:10.2e}{codes}")


if __name__ == "__main__":
    main()
