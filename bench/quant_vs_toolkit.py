"""npurt's int8 against rknn-toolkit2's own quantiser, side by side, on the real trained models of the optional tier.

One toolkit-style script (`config(quantized_algorithm='normal', target_platform='rk3588')`, `load_onnx` with the
input shape fixed, `build(do_quantization=True, dataset=...)`, `init_runtime()` (simulator), `inference`) is run
twice, unchanged: in a separate venv with rknn-toolkit2 2.3.2 (made once in the git-ignored cache, `.cache/
toolkit-venv`; the toolkit is a benchmark peer, never a test dependency) and under `npurt exec`. Both get the same
calibration files (16 inputs of a fixed seed: 8 rendered text pages and 8 generated scenes, as the tier makes them)
and the same held-out inputs (two other pages, two other scenes, and, when scikit-image's wheel can be fetched
into the cache, its scanned page and its photo of text). Printed per model and held-out image: the cosine of each
side's int8 outputs against onnxruntime float32 (the minimum over the model's outputs), and per model min / mean;
and each side's `inference` time (median of every timed call; the toolkit's simulator against npurt, same run).

ratio (for `npurt bench`) = npurt's mean cosine / the toolkit's (>= 1: npurt's int8 is at least as close to float).
The bench skips with one line when the toolkit venv cannot be made (no python3.11, no network for its wheels).
With `--optimize=cle,bias[,adaround]` the same script also runs on `npurt optimize`'s output (columns "+eq": the
vendor's quantiser given the equalised / bias-corrected / grid-aligned float model); with `--qdq`, onnxruntime's QDQ
int8 as the QNN EP's flow makes it (`get_qnn_qdq_config`, same calibration images) on each model too.
Run: python bench/quant_vs_toolkit.py [--quick] [--cfg] [--optimize=LIST] [--qdq] [--fp16] [--one-core] [model ...]
(--quick: PP-OCRv4 det only, 8 calibration inputs; --cfg: also write both sides' hybrid_quantization_step1 .quantization.cfg
into the work folder; --fp16: both sides build without quantisation, for the fp16 cosines and times; --one-core:
each side's script pinned to one CPU, as the executor's 1-thread rows (the simulator's onnxruntime otherwise runs
on every core, npurt on one))
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
from _timing import cpu  # bench/ is on sys.path: the script's folder, or `npurt bench`'s

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers import real_models as rm  # noqa: E402

# The toolkit and the pins it needs to run (its own requirements resolve to numpy 2 / onnx 1.22, which break it).
TOOLKIT = "rknn-toolkit2==2.3.2"
REPEAT = 3          # timed inference calls per held-out image on each side (the cosines use the last)
PINS = ["numpy==1.26.4", "onnx==1.16.1", "onnxruntime==1.18.1", "protobuf==4.25.4", "setuptools<81"]  # it imports pkg_resources
SKIMAGE = "scikit-image==0.24.0"  # only for its bundled photos (data/page.png, data/text.png)
MODELS = ("ppocr_det", "ddddocr_det", "yolov8n")
# (mean, std) per model as the toolkit's config takes them: the model's own input normalisation of raw pixels.
NORM = {"ppocr_det": ([127.5] * 3, [127.5] * 3), "ddddocr_det": ([0.0] * 3, [1.0] * 3),
        "yolov8n": ([0.0] * 3, [255.0] * 3)}

# The toolkit-style script both sides run (argv[1]: a JSON job file). Written into the work folder at run time.
SCRIPT = r'''
import json, sys
import numpy as np
from rknn.api import RKNN

job = json.load(open(sys.argv[1]))
rknn = RKNN(verbose=False)
rknn.config(mean_values=[job["mean"]], std_values=[job["std"]], quantized_algorithm="normal",
            target_platform="rk3588")
if rknn.load_onnx(model=job["model"], inputs=[job["input"]], input_size_list=[job["shape"]]) != 0:
    sys.exit("load_onnx failed")
if job.get("cfg"):
    if rknn.hybrid_quantization_step1(dataset=job["dataset"]) != 0:
        sys.exit("hybrid_quantization_step1 failed")
    sys.exit(0)
if rknn.build(do_quantization=job.get("quantize", True), dataset=job["dataset"]) != 0:
    sys.exit("build failed")
if rknn.init_runtime() != 0:
    sys.exit("init_runtime failed")
import time
outs, ms = {}, []
for k, path in enumerate(job["heldout"]):
    x = np.load(path)
    for _ in range(job.get("repeat", 1)):
        t0 = time.perf_counter()
        res = rknn.inference(inputs=[x], data_format=["nchw"])
        ms.append((time.perf_counter() - t0) * 1e3)
    for j, o in enumerate(res):
        outs[f"{k}_{j}"] = np.asarray(o, np.float32)
np.savez(job["out"], inference_ms=np.array(ms), **outs)
rknn.release()
'''


def toolkit_python() -> Path | None:
    """The toolkit venv's python, made on first use; None (and one line why) if it cannot be made."""
    venv = rm.cache() / "toolkit-venv"
    py = venv / "bin" / "python"
    if (venv / ".ready").exists():
        return py
    base = shutil.which("python3.11")
    if not base:
        print("quant_vs_toolkit: skipped: rknn-toolkit2 2.3.2 needs python3.11, not found")
        return None
    pip = [str(py), "-m", "pip", "install", "--quiet"]
    try:
        if not py.exists():
            subprocess.run([base, "-m", "venv", str(venv)], check=True, capture_output=True)
        for step in ([TOOLKIT], PINS):           # the toolkit pulls torch <= 2.4 itself
            subprocess.run(pip + step, check=True, capture_output=True, text=True)
        subprocess.run([str(py), "-c", "from rknn.api import RKNN"], check=True, capture_output=True)
    except subprocess.CalledProcessError as exc:
        last = ((exc.stderr or "") if isinstance(exc.stderr, str) else exc.stderr.decode(errors="replace"))
        why = (last.strip().splitlines() or ["?"])[-1]
        print(f"quant_vs_toolkit: skipped: the rknn-toolkit2 venv could not be made ({why})")
        return None
    (venv / ".ready").touch()
    return py


def page(size: int, seed: int) -> np.ndarray:
    """A rendered text page (uint8 RGB): lines of the tier's words, black on white, random sizes and margins."""
    from PIL import Image, ImageDraw
    rng = np.random.default_rng(seed)
    img = Image.new("RGB", (size, size), "white")
    draw = ImageDraw.Draw(img)
    y = int(rng.integers(8, 30))
    while y < size - 40:
        height = int(rng.integers(16, 36))
        words = " ".join(rm.WORDS[int(i)] for i in rng.integers(0, len(rm.WORDS), int(rng.integers(1, 5))))
        draw.text((int(rng.integers(5, size // 4)), y), words, fill="black", font=rm._font(height))
        y += int(height * rng.uniform(1.5, 2.6))
    return np.asarray(img)


def photos(size: int) -> dict[str, np.ndarray]:
    """scikit-image's scanned page, photo of text and a photo of a coffee cup (uint8 RGB, resized to `size`), if its wheel
    can be fetched."""
    import io
    from PIL import Image
    try:
        whl = rm.wheel(SKIMAGE)
    except (subprocess.CalledProcessError, OSError):
        return {}
    out = {}
    with zipfile.ZipFile(whl) as z:
        for name in ("page", "text", "coffee"):
            img = Image.open(io.BytesIO(z.read(f"skimage/data/{name}.png"))).convert("RGB")
            out[f"photo:{name}"] = np.asarray(img.resize((size, size), Image.BILINEAR))
    return out


def inputs(name: str, quick: bool) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    """(calibration images, {label: held-out image}) as uint8 RGB HWC of the model's size."""
    size = rm.MODELS[name].shape[2]
    n = 4 if quick else 8
    calib = [page(size, s) for s in range(n)] + [rm.scene(size, 100 + s) for s in range(n)]
    held = {f"page:{s}": page(size, s) for s in (50, 51)}
    held.update({f"scene:{s}": rm.scene(size, s) for s in (150, 151)})
    held.update(photos(size))
    return calib, held


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """The tier's cosine; 1 when both are all zeros (a detector that finds nothing in either), 0 when one is."""
    na, nb = np.linalg.norm(np.asarray(a, np.float64)), np.linalg.norm(np.asarray(b, np.float64))
    return rm.cosine(a, b) if na and nb else float(na == nb)


def nchw(img: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(img.astype(np.float32).transpose(2, 0, 1)[None])


def normalised(name: str, img: np.ndarray) -> np.ndarray:
    """The model's input for image `img`: NCHW float32 with the model's own mean / std applied (what onnxruntime float32
    and onnxruntime's QDQ are given; the toolkit and npurt get the raw pixels and apply the config's mean / std)."""
    mean, std = NORM[name]
    return (nchw(img) - np.float32(mean[0])) / np.float32(std[0])


def prepare(work: Path, folder: Path, lines: list[str]) -> None:
    """A folder the script runs in: the script, the calibration files (from `folder`) and their dataset.txt."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "quant_script.py").write_text(SCRIPT)
    for f in lines:
        if work != folder:
            shutil.copyfile(folder / f, work / f)
    (work / "dataset.txt").write_text("\n".join(lines) + "\n")


ONE_CORE = "--one-core" in sys.argv


def one_core() -> None:
    """Pin the calling (child) process to the first CPU it may use: one core for each side, in turn."""
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


def run_side(python: list[str], job: dict, folder: Path) -> dict[str, np.ndarray]:
    """Run the script with `python` (the toolkit venv's, or `npurt exec`) on `job`; its outputs."""
    path = folder / f"job_{job['side']}.json"
    path.write_text(json.dumps(job))
    done = subprocess.run(python + [str(folder / "quant_script.py"), str(path)], cwd=folder, capture_output=True,
                          text=True, preexec_fn=one_core if ONE_CORE else None)
    if done.returncode != 0:
        raise RuntimeError(f"{job['side']} script failed: {(done.stderr or done.stdout).strip()[-800:]}")
    if job.get("cfg"):
        return {}
    with np.load(job["out"]) as z:
        return {k: z[k] for k in z.files}


def npurt_cli() -> list[str]:
    return [sys.executable, "-c", "import sys; from npurt.cli.main import main; sys.exit(main())"]


def optimized(name: str, model: Path, folder: Path, techniques: str) -> Path:
    """`npurt optimize` of `model` on the calibration files (the toolkit's mean / std) into `folder`/eq/model.onnx:
    the float model the vendor's quantiser is then given."""
    spec = rm.MODELS[name]
    mean, std = NORM[name]
    out = folder / "eq" / "model.onnx"      # the same stem: the toolkit names its files after it
    out.parent.mkdir(exist_ok=True)
    cmd = npurt_cli() + ["optimize", str(model), "-o", str(out), "--dataset", "dataset.txt", "--techniques",
                         techniques, "--for", "rknn", "--mean", ",".join(map(str, mean)), "--std",
                         ",".join(map(str, std)), "--input-shape", f"{spec.input}={','.join(map(str, spec.shape))}"]
    done = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"npurt optimize failed: {(done.stderr or done.stdout).strip()[-800:]}")
    return out


def ort_qdq(name: str, model: Path, calib: list[np.ndarray], held: list[np.ndarray], folder: Path) -> dict:
    """onnxruntime's QDQ int8 of `model` as the QNN EP's flow makes it (`get_qnn_qdq_config`: uint8 activations and
    weights, min / max on the same calibration images), run on onnxruntime's CPU EP; its outputs per held-out image."""
    import contextlib

    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import CalibrationDataReader, quantize
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config

    from npurt.model.onnx_import import fix_input_shapes
    spec = rm.MODELS[name]
    fixed = onnx.load(str(model))                   # the tier's static input shape (the QDQ tool wants one)
    fix_input_shapes(fixed, {spec.input: list(spec.shape)})
    src, dst = folder / f"{model.parent.name}_static.onnx", folder / f"{model.parent.name}_qdq.onnx"
    onnx.save(fixed, str(src))
    folding = ort.SessionOptions()                  # fold the exporter's shape chain (Shape / Gather / Concat) into
    folding.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC     # constants, else the QDQ
    folding.optimized_model_filepath = str(src)     # tool quantises it and a Gather's indices run out of bounds
    ort.InferenceSession(str(src), folding, providers=["CPUExecutionProvider"])

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            self.items = iter([{spec.input: normalised(name, c)} for c in calib])

        def get_next(self):
            return next(self.items, None)
    with contextlib.chdir(folder):                  # its shape inference may leave a file in the working folder
        quantize(str(src), str(dst), get_qnn_qdq_config(str(src), Reader()))
    sess = ort.InferenceSession(str(dst), providers=["CPUExecutionProvider"])
    outs = {}
    for k, img in enumerate(held):
        for j, o in enumerate(sess.run(None, {spec.input: normalised(name, img)})):
            outs[f"{k}_{j}"] = np.asarray(o, np.float32)
    return outs


def run(quick: bool = False, names: list[str] | None = None, cfg: bool = False, techniques: str | None = None,
        qdq: bool = False, fp16: bool = False) -> list[dict]:
    """One row per (model, held-out image) and one summary row per model; [] when the toolkit cannot run. Columns
    (`side`): npurt and the toolkit on the model; with `techniques`, both again on `npurt optimize`'s output ("+eq");
    with `qdq`, onnxruntime's QDQ (the QNN EP's quantiser) on each; with `fp16`, both sides build unquantised."""
    tk = toolkit_python()
    if tk is None:
        return []
    names = names or (["ppocr_det"] if quick else list(MODELS))
    rows = []
    for name in names:
        spec = rm.MODELS[name]
        folder = rm.cache() / "quant_vs_toolkit" / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        calib, held = inputs(name, quick)
        lines = []
        for k, img in enumerate(calib):
            np.save(folder / f"calib{k}.npy", nchw(img))
            lines.append(f"calib{k}.npy")
        prepare(folder, folder, lines)          # `npurt optimize` reads the folder's dataset.txt
        labels = list(held)
        for k, label in enumerate(labels):
            np.save(folder / f"held{k}.npy", nchw(held[label]))
        mean, std = NORM[name]
        model = folder / "orig" / "model.onnx"   # the toolkit's hybrid files are named after the model's stem
        model.parent.mkdir()
        shutil.copyfile(rm.model_path(name), model)
        variants = {"": model}
        if techniques:
            variants["+eq"] = optimized(name, model, folder, techniques)
        outs = {}
        for suffix, path in variants.items():
            work = path.parent
            prepare(work, folder, lines)
            job = {"model": str(path), "input": spec.input, "shape": list(spec.shape), "mean": mean, "std": std,
                   "dataset": "dataset.txt", "heldout": [str(folder / f"held{k}.npy") for k in range(len(labels))],
                   "repeat": REPEAT, "quantize": not fp16}
            for side, python in {"npurt": npurt_cli() + ["exec"], "toolkit": [str(tk)]}.items():
                outs[side + suffix] = run_side(python, {**job, "side": side, "out": str(work / f"{side}.npz")}, work)
                if cfg:
                    sub = work / f"cfg_{side}"
                    prepare(sub, folder, lines)
                    run_side(python, {**job, "side": side, "cfg": True}, sub)
            if qdq:
                try:
                    outs["ort_qdq" + suffix] = ort_qdq(name, path, calib, [held[label] for label in labels], folder)
                except Exception as exc:        # onnxruntime's tool or run refusing the model: one line, no column
                    print(f"quant_vs_toolkit: onnxruntime's QDQ of {name}{suffix} failed: "
                          f"{str(exc).strip().splitlines()[-1][:200]}")
        ms = {side: float(np.median(o.pop("inference_ms"))) for side, o in outs.items() if "inference_ms" in o}
        per: dict[str, list[float]] = {side: [] for side in outs}
        for k, label in enumerate(labels):
            ref = rm.onnxruntime_run(name, normalised(name, held[label]))
            row = {"model": name, "image": label}
            for side in outs:
                cos = min(cosine(outs[side][f"{k}_{j}"], r) for j, r in enumerate(ref))
                per[side].append(cos)
                row[side] = cos
            row["ratio"] = row["npurt"] / row["toolkit"]
            rows.append(row)
        summary = {"model": name, "image": "min / mean", "ratio": float(np.mean(per["npurt"]) / np.mean(per["toolkit"]))}
        summary.update({side: (min(v), float(np.mean(v))) for side, v in per.items()})
        rows.append({**summary, "inference_ms": ms})
        print(f"{name}: inference, median of {REPEAT * len(labels)} ms: " + ", ".join(f"{side} {t:.1f}" for side, t in ms.items())
              + f"; npurt / toolkit {ms['npurt'] / ms['toolkit']:.2f}", flush=True)
    return rows


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    techniques = next((a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--optimize=")), None)
    print(cpu())
    rows = run(quick="--quick" in sys.argv, names=args or None, cfg="--cfg" in sys.argv, techniques=techniques,
               qdq="--qdq" in sys.argv, fp16="--fp16" in sys.argv)
    sides = list(dict.fromkeys(k for row in rows for k in row if k not in ("model", "image", "ratio", "inference_ms")))
    print(f"{'model':12} {'image':12} " + " ".join(f"{side:>17}" for side in sides))
    for row in rows:
        if row["image"] != "min / mean":
            cells = (f"{row[side]:17.4f}" if side in row else f"{'-':>17}" for side in sides)
        else:
            cells = (f"{row[side][0]:8.4f}/{row[side][1]:.4f}" if side in row else f"{'-':>17}" for side in sides)
        print(f"{row['model']:12} {row['image']:12} " + " ".join(cells), flush=True)


if __name__ == "__main__":
    main()
