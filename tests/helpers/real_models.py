"""Real trained models shipped inside PyPI wheels, for the real-weights tier (`make test-real`).

The wheels are downloaded once (`pip download --no-deps`) into a git-ignored cache (`.cache/wheels`, or
`$NPURT_CACHE/wheels`) and the .onnx files unzipped next to them; nothing is committed. Inputs are made here:
text lines and pages rendered with Pillow (a dependency of matplotlib, in the test extras) in the DejaVu Sans font
matplotlib ships, and generated scenes for the detectors. Everything is deterministic (seeded generators).
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import onnx

from helpers.oracle import ort_session


@dataclass(frozen=True)
class RealModel:
    """One model: the wheel that ships it, its path inside the wheel, its input and the shape the tier uses."""

    wheel: str              # pip requirement, pinned
    member: str             # path of the .onnx inside the wheel
    input: str
    shape: tuple[int, ...]
    kind: str               # "detector", "classifier" or "recognizer"


MODELS = {
    "ppocr_det": RealModel("rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
                           "x", (1, 3, 480, 480), "detector"),
    "ppocr_cls": RealModel("rapidocr-onnxruntime==1.4.4",
                           "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx", "x", (1, 3, 48, 192),
                           "classifier"),
    "ppocr_rec": RealModel("rapidocr-onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
                           "x", (1, 3, 48, 320), "recognizer"),
    "yolov8n": RealModel("nudenet==3.4.2", "nudenet/320n.onnx", "images", (1, 3, 320, 320), "detector"),
    "ddddocr_det": RealModel("ddddocr==1.6.1", "ddddocr/common_det.onnx", "images", (1, 3, 416, 416), "detector"),
    "ddddocr_crnn": RealModel("ddddocr==1.6.1", "ddddocr/common.onnx", "input1", (1, 1, 64, 256), "recognizer"),
}

WORDS = ["npurt", "OCR", "2026", "Hello", "RK3588", "zero copy", "SRAM", "tensor", "Paris", "model", "48 km",
         "NPU", "fp16", "int8", "world", "Quick", "brown", "fox"]


def cache() -> Path:
    env = os.environ.get("NPURT_CACHE")
    return Path(env) if env else Path(__file__).resolve().parents[2] / ".cache"


def wheel(requirement: str) -> Path:
    """The wheel of `requirement` ("name==version"), downloaded into the cache the first time."""
    name, version = requirement.split("==")
    wheels = cache() / "wheels"
    pattern = f"{name.replace('-', '_')}-{version}-*.whl"
    found = sorted(wheels.glob(pattern))
    if not found:
        wheels.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=wheels) as tmp:     # then renamed: parallel workers never see half a file
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", tmp, requirement],
                           check=True)
            for f in Path(tmp).glob("*.whl"):
                os.replace(f, wheels / f.name)
        found = sorted(wheels.glob(pattern))
    return found[-1]


def model_path(name: str) -> Path:
    """The .onnx of model `name`, unzipped from its wheel on first use."""
    spec = MODELS[name]
    target = cache() / "real" / f"{name}.onnx"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel(spec.wheel)) as z, \
                tempfile.NamedTemporaryFile(dir=target.parent, suffix=".part", delete=False) as tmp:
            tmp.write(z.read(spec.member))
        os.replace(tmp.name, target)
    return target


@lru_cache(maxsize=None)
def dictionary(name: str) -> tuple[str, ...]:
    """The CTC alphabet of a recognizer, index 0 the blank: PP-OCRv4's from the model's `character` metadata (plus
    the space rapidocr appends), ddddocr's CHARSET_BETA from its wheel (`common.onnx` is the "beta" model)."""
    if name == "ppocr_rec":
        meta = {p.key: p.value for p in onnx.load(str(model_path(name)), load_external_data=False).metadata_props}
        return tuple(["<blank>"] + meta["character"].splitlines() + [" "])
    if name == "ddddocr_crnn":
        with zipfile.ZipFile(wheel(MODELS[name].wheel)) as z:
            tree = ast.parse(z.read("ddddocr/charsets.py").decode("utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "CHARSET_BETA" for t in node.targets):
                return tuple(ast.literal_eval(node.value))
        raise LookupError("ddddocr/charsets.py has no CHARSET_BETA")
    raise KeyError(name)


def ctc_greedy(probs: np.ndarray, alphabet: tuple[str, ...]) -> str:
    """CTC greedy decode of (T, classes) scores: best class per step, repeats merged, blanks (0) dropped."""
    best = probs.argmax(-1)
    keep = np.concatenate([[True], best[1:] != best[:-1]]) & (best != 0)
    return "".join(alphabet[i] for i in best[keep] if i < len(alphabet))


def _font(size: int):
    import matplotlib
    from PIL import ImageFont
    return ImageFont.truetype(os.path.join(matplotlib.get_data_path(), "fonts", "ttf", "DejaVuSans.ttf"), size)


def render_line(text: str, height: int = 48) -> np.ndarray:
    """Black `text` on white, cropped to the ink with a small margin, as uint8 RGB of the given height."""
    from PIL import Image, ImageDraw
    font = _font(64)
    x0, y0, x1, y1 = font.getbbox(text)
    img = Image.new("RGB", (x1 - x0 + 16, y1 - y0 + 16), "white")
    ImageDraw.Draw(img).text((8 - x0, 8 - y0), text, fill="black", font=font)
    w = max(1, round(img.width * height / img.height))
    return np.asarray(img.resize((w, height), Image.BILINEAR))


def rec_input(name: str, text: str) -> np.ndarray:
    """A rendered line as the recognizer's input: PP-OCR (x/255 - 0.5)/0.5 RGB padded with 0 on the right;
    ddddocr grey x/255 padded with white."""
    n, c, h, w = MODELS[name].shape
    line = render_line(text, h)[:, :w].astype(np.float32)
    if name == "ppocr_rec":
        x = np.zeros((n, c, h, w), np.float32)
        x[0, :, :, :line.shape[1]] = ((line / 255.0 - 0.5) / 0.5).transpose(2, 0, 1)
    else:
        x = np.ones((n, c, h, w), np.float32)
        x[0, 0, :, :line.shape[1]] = line.mean(axis=2) / 255.0
    return x


def cls_input(text: str, rotated: bool = False) -> np.ndarray:
    """A rendered line as PP-OCR's direction classifier takes it (upright, or rotated by 180 degrees)."""
    _, c, h, w = MODELS["ppocr_cls"].shape
    line = render_line(text, h)[:, :w].astype(np.float32)
    x = np.zeros((1, c, h, w), np.float32)
    x[0, :, :, :line.shape[1]] = ((line / 255.0 - 0.5) / 0.5).transpose(2, 0, 1)
    return np.ascontiguousarray(x[:, :, ::-1, ::-1]) if rotated else x


def scene(size: int, seed: int, text: bool = True) -> np.ndarray:
    """A generated uint8 RGB scene: a colour gradient, filled ellipses and rectangles, and (if `text`) a few
    rendered words at random places and sizes."""
    from PIL import Image, ImageDraw
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size] / size
    base = np.stack([200 + 50 * xx, 180 + 60 * yy, 220 - 40 * xx * yy], -1)
    img = Image.fromarray(np.clip(base, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(img)
    for _ in range(6):
        x0, y0 = rng.integers(0, size - 40, 2)
        x1, y1 = x0 + rng.integers(20, size // 3), y0 + rng.integers(20, size // 3)
        colour = tuple(int(v) for v in rng.integers(0, 255, 3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)([int(x0), int(y0), int(x1), int(y1)], fill=colour)
    if text:
        for _ in range(5):
            word = WORDS[int(rng.integers(len(WORDS)))]
            draw.text((int(rng.integers(0, size // 2)), int(rng.integers(0, size - 40))), word, fill="black",
                      font=_font(int(rng.integers(18, 40))))
    return np.asarray(img)


def det_input(name: str, seed: int) -> np.ndarray:
    """A generated scene as the detector's input: PP-OCR det (x/255 - 0.5)/0.5, YOLOv8 x/255, ddddocr's YOLOX raw
    0..255; NCHW float32."""
    size = MODELS[name].shape[2]
    img = scene(size, seed, text=True).astype(np.float32).transpose(2, 0, 1)[None]
    if name == "ppocr_det":
        return np.ascontiguousarray((img / 255.0 - 0.5) / 0.5)
    if name == "yolov8n":
        return np.ascontiguousarray(img / 255.0)
    return np.ascontiguousarray(img)


def onnxruntime_run(name: str, x: np.ndarray) -> list[np.ndarray]:
    """onnxruntime's outputs (CPU, one thread) for input `x`."""
    return _ort_session(name).run(None, {MODELS[name].input: x})


@lru_cache(maxsize=None)
def _ort_session(name: str):
    # quiet: ddddocr's CRNN declares output [1, -1] and returns [T, 1, C], and onnxruntime warns on every run
    return ort_session(model_path(name), quiet=True)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64).reshape(-1), np.asarray(b, np.float64).reshape(-1)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
