"""A real trained model: PP-OCR's text-direction classifier (ch_ppocr_mobile_v2.0_cls_infer.onnx, Apache-2.0), taken
from the `rapidocr-onnxruntime` wheel at run time, compiled for the RK3588 and run through the RKNN mirror.

The wheel is fetched once with `pip download --no-deps rapidocr-onnxruntime` into a git-ignored cache
(`.cache/wheels`, or `$NPURT_CACHE/wheels`) and the .onnx is unzipped from it; nothing is committed. The classifier
takes a (1, 3, 48, 192) text-line crop normalised to [-1, 1] and says whether the text is upright (class 0) or
upside down (class 1, "180"). The example renders a line of text with matplotlib (no image files), classifies it
upright and rotated by 180 degrees, in fp16 and int8, and compares every output with onnxruntime.
Run: python examples/ppocr_cls.py   (needs network access the first time; optional test tier: NPURT_OPTIONAL=1)
"""
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np

import npurt
from npurt.rknn import *  # noqa: F403
from _common import check

WORDS = ("npurt", "Hello npurt 2026", "abc", "Zero copy", "SRAM", "RK3588", "quantise", "text line", "OCR",
         "hello world", "42", "The End", "mobile", "classifier", "upside", "down", "NPU", "runtime", "x", "Qualcomm")
MEMBER = "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx"
SHAPE = (1, 3, 48, 192)


def cache() -> Path:
    env = os.environ.get("NPURT_CACHE")
    return Path(env) if env else Path(__file__).resolve().parents[1] / ".cache"


def model_path() -> Path:
    """The classifier's .onnx, downloading the wheel and unzipping it on first use."""
    target = cache() / "models" / Path(MEMBER).name
    if target.exists():
        return target
    wheels = cache() / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    found = sorted(wheels.glob("rapidocr_onnxruntime-*.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(wheels),
                        "rapidocr-onnxruntime"], check=True)
        found = sorted(wheels.glob("rapidocr_onnxruntime-*.whl"))
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(found[-1]) as z:
        target.write_bytes(z.read(MEMBER))
    print(f"extracted {MEMBER} from {found[-1].name}")
    return target


def text_line(text: str) -> np.ndarray:
    """A text-line crop prepared as PP-OCR prepares it for the classifier: black text rendered on white, cropped
    tight, resized to height 48 (width by aspect ratio, at most 192), scaled to [-1, 1], zero-padded on the right."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = plt.figure(figsize=(8, 1), dpi=100)
    fig.text(0.0, 0.5, text, fontsize=40, va="center", ha="left", family="DejaVu Sans")
    fig.canvas.draw()
    rgb = np.asarray(fig.canvas.buffer_rgba())[:, :, :3].copy()
    plt.close(fig)
    ys, xs = np.nonzero(rgb.min(axis=2) < 128)
    crop = rgb[max(ys.min() - 3, 0):ys.max() + 4, max(xs.min() - 3, 0):xs.max() + 4]
    h, w = crop.shape[:2]
    rw = min(SHAPE[3], int(np.ceil(SHAPE[2] * w / h)))
    resized = crop[(np.arange(SHAPE[2]) * h // SHAPE[2])][:, (np.arange(rw) * w // rw)].astype(np.float32)
    x = np.zeros(SHAPE, np.float32)
    x[0, :, :, :rw] = ((resized / 255.0 - 0.5) / 0.5).transpose(2, 0, 1)       # (x / 255 - 0.5) / 0.5
    return x


def classify(blob: bytes, images: list) -> list:
    """Probabilities for each image through the general API of the RKNN mirror."""
    ctx = rknn_context()
    check(rknn_init(ctx, blob, len(blob), 0, None), "rknn_init")
    probs = []
    for x in images:
        inputs = (rknn_input * 1)()
        inputs[0].index, inputs[0].type, inputs[0].fmt = 0, RKNN_TENSOR_FLOAT32, RKNN_TENSOR_NCHW
        inputs[0].buf, inputs[0].size = x.ctypes.data, x.nbytes
        check(rknn_inputs_set(ctx, 1, inputs), "rknn_inputs_set")
        check(rknn_run(ctx, None), "rknn_run")
        outputs = (rknn_output * 1)()
        outputs[0].want_float = 1
        check(rknn_outputs_get(ctx, 1, outputs, None), "rknn_outputs_get")
        probs.append(output_view(outputs[0]).copy())
        rknn_outputs_release(ctx, 1, outputs)
    rknn_destroy(ctx)
    return probs


path = model_path()
images, labels = [], []
for text in ("Hello npurt 2026", "npurt"):
    upright = text_line(text)
    images += [upright, np.ascontiguousarray(upright[:, :, ::-1, ::-1])]     # and rotated by 180 degrees
    labels += [f"{text!r} upright", f"{text!r} rotated"]
try:
    import onnxruntime as ort
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    ref = [sess.run(None, {"x": x})[0].reshape(-1) for x in images]
except ImportError:
    ref = None
shapes = {"x": list(SHAPE)}
calib = [text_line(t) for t in ("The quick brown fox", "0123456789 abc", "npurt SRAM zero copy", "int8", "OK")]
calib += [np.ascontiguousarray(c[:, :, ::-1, ::-1]) for c in calib]
for precision in ("fp16", "int8"):
    kw = {"quantize": calib} if precision == "int8" else {"precision": "fp16"}
    compiled = npurt.compile(path, soc="rk3588", input_shapes=shapes, progress=False, **kw)
    probs = classify(compiled.to_bytes(), images)
    for label, p, r in zip(labels, probs, ref or [None] * len(images)):
        line = f"{precision} {label:28s}: P(0 deg) = {p[0]:.4f}, P(180 deg) = {p[1]:.4f} -> {['0', '180'][int(p.argmax())]}"
        if r is not None:
            line += f"   onnxruntime {r[0]:.4f} / {r[1]:.4f}, max |diff| {np.abs(p - r).max():.4f}"
            assert int(p.argmax()) == int(r.argmax()), "npurt and onnxruntime disagree"
            assert np.abs(p - r).max() < (0.01 if precision == "fp16" else 0.15)
        print(line)
    assert [int(p.argmax()) for p in probs] == [0, 1, 0, 1], "the classifier should find the upright and the rotated line"
if ref is not None:
    # The int8 model over more lines, short ones too (unlike the calibration lines): how far P(0 deg) strays.
    lines = [text_line(t) for t in WORDS]
    lines += [np.ascontiguousarray(x[:, :, ::-1, ::-1]) for x in lines]
    diffs = [abs(float(p[0]) - float(sess.run(None, {"x": x})[0].reshape(-1)[0]))
             for x, p in zip(lines, classify(compiled.to_bytes(), lines))]
    print(f"int8 over {len(WORDS)} words, upright and rotated: |P(0 deg) - onnxruntime| mean {np.mean(diffs):.4f}, "
          f"max {np.max(diffs):.4f}")
print("ppocr_cls example OK")
