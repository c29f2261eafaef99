"""OCR with real trained models on npurt: PP-OCRv4's text detector (DB) finds the lines of a rendered page, each line
is cropped and read by PP-OCRv4's recognizer (SVTR; CTC greedy decode with the dictionary stored in the model).

Both .onnx files come from the `rapidocr-onnxruntime` wheel (Apache-2.0), fetched once with `pip download --no-deps`
into a git-ignored cache (`.cache/wheels`, or `$NPURT_CACHE/wheels`); nothing is committed. The page is rendered with
Pillow in matplotlib's DejaVu Sans. The detector runs in fp16 and in int8 (calibrated on three other rendered pages),
the recognizer in fp16, and both in int8 (the recognizer calibrated on the lines of those pages, with equalisation and
bias correction: `optimize="cle,bias"`); every stage is also run by onnxruntime and compared.
Run: python examples/ocr_pipeline.py   (needs network access the first time; optional test tier: NPURT_OPTIONAL=1)
"""
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

import npurt

WHEEL = "rapidocr-onnxruntime==1.4.4"
DET, REC = "ch_PP-OCRv4_det_infer.onnx", "ch_PP-OCRv4_rec_infer.onnx"
PAGE, REC_H, REC_W = 480, 48, 320
LINES = ["npurt runs PP-OCRv4", "zero copy 2026", "RK3588 NPU fp16", "Paris 48 km"]


def cache() -> Path:
    env = os.environ.get("NPURT_CACHE")
    return Path(env) if env else Path(__file__).resolve().parents[1] / ".cache"


def model_path(member: str) -> Path:
    """A model of the rapidocr wheel, downloading the wheel and unzipping the model on first use."""
    target = cache() / "models" / member
    if target.exists():
        return target
    wheels = cache() / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    found = sorted(wheels.glob("rapidocr_onnxruntime-1.4.4-*.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(wheels), WHEEL],
                       check=True)
        found = sorted(wheels.glob("rapidocr_onnxruntime-1.4.4-*.whl"))
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(found[-1]) as z:
        target.write_bytes(z.read(f"rapidocr_onnxruntime/models/{member}"))
    return target


def font(size: int):
    import matplotlib
    from PIL import ImageFont
    return ImageFont.truetype(os.path.join(matplotlib.get_data_path(), "fonts", "ttf", "DejaVuSans.ttf"), size)


def page(lines: list, seed: int = 0) -> np.ndarray:
    """A white page with one text line per entry, black, at a random size and left margin (uint8 RGB)."""
    from PIL import Image, ImageDraw
    rng = np.random.default_rng(seed)
    img = Image.new("RGB", (PAGE, PAGE), "white")
    draw = ImageDraw.Draw(img)
    for i, text in enumerate(lines):
        draw.text((int(rng.integers(10, 60)), 40 + i * 110), text, fill="black", font=font(int(rng.integers(26, 34))))
    return np.asarray(img)


def det_input(img: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(((img / 255.0 - 0.5) / 0.5).astype(np.float32).transpose(2, 0, 1)[None])


def boxes(prob: np.ndarray, thresh: float = 0.3) -> list:
    """Line boxes (y0, y1, x0, x1) of a DB probability map: bands of rows with text, each band's column extent,
    expanded as DB's unclip does (distance = area * 1.6 / perimeter)."""
    mask = prob[0, 0] > thresh
    rows = np.flatnonzero(mask.any(axis=1))
    out = []
    for band in np.split(rows, np.flatnonzero(np.diff(rows) > 1) + 1) if rows.size else []:
        cols = np.flatnonzero(mask[band[0]:band[-1] + 1].any(axis=0))
        h, w = band[-1] - band[0] + 1, cols[-1] - cols[0] + 1
        d = int(round(h * w * 1.6 / (2 * (h + w))))
        out.append((max(band[0] - d, 0), min(band[-1] + 1 + d, PAGE), max(cols[0] - d, 0), min(cols[-1] + 1 + d, PAGE)))
    return out


def rec_input(img: np.ndarray, box) -> np.ndarray:
    """The crop resized to height 48 (width by aspect, at most 320), scaled to [-1, 1], zero-padded on the right."""
    from PIL import Image
    y0, y1, x0, x1 = box
    crop = Image.fromarray(img[y0:y1, x0:x1])
    w = min(REC_W, int(np.ceil(REC_H * crop.width / crop.height)))
    line = np.asarray(crop.resize((w, REC_H), Image.BILINEAR), np.float32)
    x = np.zeros((1, 3, REC_H, REC_W), np.float32)
    x[0, :, :, :w] = ((line / 255.0 - 0.5) / 0.5).transpose(2, 0, 1)
    return x


def decode(scores: np.ndarray, alphabet: list) -> str:
    """CTC greedy: the best class per step, repeats merged, blanks (0) dropped."""
    best = scores[0].argmax(-1)
    keep = np.concatenate([[True], best[1:] != best[:-1]]) & (best != 0)
    return "".join(alphabet[i] for i in best[keep])


def read_page(img: np.ndarray, detect, recognize, alphabet: list) -> tuple:
    prob = detect(det_input(img))
    return prob, [decode(recognize(rec_input(img, b)), alphabet) for b in boxes(prob)]


import onnx  # noqa: E402

det_path, rec_path = model_path(DET), model_path(REC)
meta = {p.key: p.value for p in onnx.load(str(rec_path), load_external_data=False).metadata_props}
alphabet = ["<blank>"] + meta["character"].splitlines() + [" "]
img = page(LINES)
cal_pages = [page(["The quick brown fox", "jumps over 13 dogs"], seed=s) for s in (1, 2, 3)]
calib = [det_input(p) for p in cal_pages]

t0 = time.perf_counter()
rec = npurt.Session(npurt.compile(rec_path, soc="rk3588", input_shapes={"x": [1, 3, REC_H, REC_W]}, progress=False))
dets = {"fp16": npurt.compile(det_path, soc="rk3588", input_shapes={"x": [1, 3, PAGE, PAGE]}, progress=False),
        "int8": npurt.compile(det_path, soc="rk3588", input_shapes={"x": [1, 3, PAGE, PAGE]}, quantize=calib,
                              progress=False)}
with npurt.Session(dets["fp16"]) as det:     # the recognizer's calibration set: the lines of the calibration pages
    crops = [[rec_input(p, b)] for p in cal_pages for b in boxes(det.run(det_input(p))[0])]
rec8 = npurt.Session(npurt.compile(rec_path, soc="rk3588", input_shapes={"x": [1, 3, REC_H, REC_W]}, quantize=crops,
                                   optimize="cle,bias", progress=False))
print(f"compiled the recognizer (fp16, int8) and the detector (fp16, int8) in {time.perf_counter() - t0:.1f} s")

try:
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    ort_det = ort.InferenceSession(str(det_path), so, providers=["CPUExecutionProvider"])
    ort_rec = ort.InferenceSession(str(rec_path), so, providers=["CPUExecutionProvider"])
    ref_prob, ref_text = read_page(img, lambda x: ort_det.run(None, {"x": x})[0],
                                   lambda x: ort_rec.run(None, {"x": x})[0], alphabet)
except ImportError:
    ref_prob = ref_text = None
print(f"rendered: {LINES}")
if ref_text is not None:
    print(f"onnxruntime        : {ref_text}")
for precision, compiled, recognizer, rec_precision in [("fp16", dets["fp16"], rec, "fp16"),
                                                       ("int8", dets["int8"], rec, "fp16"),
                                                       ("int8", dets["int8"], rec8, "int8")]:
    with npurt.Session(compiled) as det:
        t0 = time.perf_counter()
        prob, text = read_page(img, lambda x: det.run(x)[0], lambda x: recognizer.run(x)[0], alphabet)
        seconds = time.perf_counter() - t0
    line = f"npurt det {precision} + rec {rec_precision}: {text}   ({len(text)} lines, {seconds * 1e3:.0f} ms)"
    if ref_prob is not None:
        a, b = prob.reshape(-1).astype(np.float64), ref_prob.reshape(-1).astype(np.float64)
        same = float(np.mean((prob > 0.3) == (ref_prob > 0.3)))
        line += f"; map cosine {a @ b / np.linalg.norm(a) / np.linalg.norm(b):.5f}, binarised map agrees on {same:.2%}"
        assert text == ref_text, "npurt and onnxruntime read the page differently"
    print(line)
    assert text == LINES, "the pipeline should read the rendered lines"
rec.close()
rec8.close()
print("ocr_pipeline example OK")
