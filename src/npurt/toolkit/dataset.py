"""The toolkit's dataset files: `dataset.txt` with one sample per line, the files of a sample's inputs separated by
spaces, each a `.npy` array or an image (`.jpg` / `.jpeg` / `.png` / `.bmp`); what `build`, hybrid quantisation and
`accuracy_analysis` read.

Rules, as rknn-toolkit2 2.3.2 reads them: a relative path is taken from the current folder (npurt also tries the
dataset file's folder when it is not there); an image is read as RGB pixels (uint8, HWC), flipped to BGR when
`quant_img_RGB2BGR` says so for that input, resized to the input's height and width when it differs, and given to
the model as NCHW raw pixels (mean / std are the model's to apply); an `.npy` for a 4-D image input must be NCHW (an
NHWC array is refused, as the toolkit refuses it); an array without its batch axis gets one; a model built with
`rknn_batch_size` N gets each sample repeated N times along the batch axis.

Images are decoded with Pillow (a dependency of npurt: one wheel, no further dependencies, the reference decoder of
the Python ecosystem for JPEG / PNG / BMP); nothing else of the toolkit's (opencv, torch) is needed.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.files import read_npy

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp")


def _bad(msg: str) -> NpuError:
    return NpuError(ErrorCode.INVALID_ARGUMENT, msg)


def find_entry(item: str, dataset: Path | None) -> Path:
    """The file a dataset entry names: from the current folder, else from the dataset file's folder."""
    path = Path(item)
    if path.is_file() or path.is_absolute() or dataset is None:
        return path
    beside = dataset.parent / item
    return beside if beside.is_file() else path


def read_image(path: Path, bgr: bool = False) -> np.ndarray:
    """An image file as uint8 RGB (or BGR) pixels, HWC."""
    from PIL import Image, UnidentifiedImageError
    try:
        with Image.open(path) as img:
            pixels = np.asarray(img.convert("RGB"), dtype=np.uint8)
    except Image.DecompressionBombError as exc:     # its header declares more pixels than Pillow decodes
        raise _bad(f"cannot read image {path}: too large ({exc})") from None
    except (OSError, UnidentifiedImageError) as exc:
        raise _bad(f"cannot read image {path}: {exc}") from None
    return np.ascontiguousarray(pixels[:, :, ::-1]) if bgr else pixels


def _resize(pixels: np.ndarray, height: int, width: int) -> np.ndarray:
    from PIL import Image
    return np.asarray(Image.fromarray(pixels).resize((width, height), Image.BILINEAR), dtype=np.uint8)


def load_entry(path: Path, shape: Sequence[int], bgr: bool = False) -> np.ndarray:
    """One input of one sample, shaped as the model input `shape` (ONNX order, batch 1 or the model's batch)."""
    if not path.is_file():
        raise _bad(f"dataset entry {os.fspath(path)!r} does not exist")
    if path.suffix.lower() in IMAGE_SUFFIXES:
        pixels = read_image(path, bgr)
        if len(shape) != 4 or shape[1] != pixels.shape[2]:
            raise _bad(f"image {path} (3 channels) does not fit the input of shape {list(shape)}: use a .npy file")
        if pixels.shape[:2] != (shape[2], shape[3]):
            pixels = _resize(pixels, shape[2], shape[3])
        return pixels.transpose(2, 0, 1)[None].astype(np.float32)
    arr = read_npy(path, "dataset entry")
    if arr.dtype.kind not in "biuf":
        raise _bad(f"dataset entry {path}: an array of {arr.dtype} (numbers are needed)")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():     # calibration would give NaN ranges
        raise _bad(f"dataset entry {path} holds NaN or infinite values")
    if arr.ndim == len(shape) - 1:
        arr = arr[None]
    if arr.ndim == 4 and len(shape) == 4 and tuple(arr.shape[1:]) != tuple(shape[1:]) \
            and (arr.shape[3], arr.shape[1], arr.shape[2]) == tuple(shape[1:]):
        raise _bad(f"{path}: shape {tuple(arr.shape)} is wrong, expect 'nchw' {tuple([arr.shape[0], *shape[1:]])}")
    return arr


def read_dataset(dataset: "str | os.PathLike", shapes: Sequence[Sequence[int]], bgr: Sequence[bool] = (),
                 batch: int | None = None) -> list[list[np.ndarray]]:
    """The samples of a toolkit dataset file for a model whose inputs have `shapes` (one list of arrays per line);
    `bgr` per input (quant_img_RGB2BGR); `batch`: each sample repeated to the model's batch."""
    path = Path(os.fspath(dataset))
    if not path.is_file():
        raise _bad(f"dataset file {os.fspath(dataset)!r} does not exist")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise _bad(f"dataset file {path} is not a UTF-8 text file listing one sample per line ({exc.reason} at "
                   f"byte {exc.start})") from None
    samples = []
    for lineno, line in enumerate(text.splitlines(), 1):
        items = line.split()
        if not items or items[0].startswith("#"):
            continue
        if len(items) != len(shapes):
            raise _bad(f"{path.name}:{lineno}: {len(items)} files for a model with {len(shapes)} inputs")
        sample = []
        for k, (item, shape) in enumerate(zip(items, shapes)):
            one = [1, *shape[1:]] if len(shape) else list(shape)     # a file holds one sample
            arr = load_entry(find_entry(item, path), one, bool(bgr[k]) if k < len(bgr) else False)
            if batch and batch > 1 and arr.shape[0] == 1:
                arr = np.repeat(arr, batch, axis=0)
            sample.append(arr)
        samples.append(sample)
    if not samples:
        raise _bad(f"dataset file {path} lists no samples")
    return samples


def per_input_flags(value: object, n: int) -> list[bool]:
    """quant_img_RGB2BGR as one flag per input (a single bool applies to every input)."""
    if isinstance(value, (list, tuple)):
        return [bool(v) for v in value] + [False] * (n - len(value))
    return [bool(value)] * n
