"""Equalisation, bias correction and adaptive rounding (`npurt.model.techniques`): npurt's int8 with each technique
against the same model without, as the cosine of the int8 outputs to onnxruntime float32 on held-out inputs.

Models: the zoo's `mobilenet_uneven` (32x32, BN-folded depthwise output channels spread over 10**+-1, as trained
MobileNets are; 16 normal-distributed calibration inputs, 8 held-out) with per-channel and per-layer int8 weights,
the zoo's `mobilenet_v2_like` (64x64, ReLU6: only the pairs without ReLU6 between them are equalised), and the real
trained models of the optional tier when they are in the cache (PP-OCRv4 det, ddddocr det, YOLOv8n; calibration and
held-out images as `bench/quant_vs_toolkit.py` makes them: 16 / 7, or 8 / 4 with --quick), skipped with one line
otherwise (`make test-real` fetches them). Per row: mean and min cosine over the held-out inputs (a model's minimum
over its outputs) and the compile time (calibration and techniques included); and the same techniques written into
the float ONNX by `npurt optimize` (`npurt.exec.compile.optimize_onnx`), quantised by onnxruntime's own quantiser
(`quant_pre_process`, which folds BatchNormalization as a vendor's converter does, then `quantize_static`: QDQ,
per-channel int8 weights, uint8 activations, min/max calibration on the same inputs) and run by its CPU provider:
what the vendor-side int8 gains from the exported model.

ratio (for `npurt bench`) = mean cosine with the techniques / mean cosine without (> 1: the techniques help).
Run: python bench/quant_techniques.py [--quick] [model ...]
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from _timing import cpu  # bench/ is on sys.path: the script's folder, or `npurt bench`'s

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import quant_vs_toolkit as qt  # noqa: E402  (the real models' inputs and normalisation)
from helpers import real_models as rm  # noqa: E402

TECHNIQUES = (None, "cle", "bias", "adaround", "cle,bias", "cle,bias,adaround")
REAL_TECHNIQUES = (None, "cle", "bias", "cle,bias", "cle,bias,adaround")
MODELS = ("mobilenet_uneven", "mobilenet_v2_like", *qt.MODELS)


def _cosines(compiled, held: list[np.ndarray], refs: list[list[np.ndarray]]) -> list[float]:
    import npurt
    with npurt.Session(compiled) as s:
        return [min(qt.cosine(o, r) for o, r in zip(s.run(x), ref)) for x, ref in zip(held, refs)]


def _normalised(x: np.ndarray, options: dict) -> np.ndarray:
    if "mean" not in options:
        return x
    return (x - np.float32(options["mean"][0][0])) / np.float32(options["std"][0][0])


def _qdq_cosines(onnx_model, calib: list[np.ndarray], held: list[np.ndarray], refs: list[list[np.ndarray]],
                 options: dict) -> list[float] | None:
    """onnxruntime's own int8 (see the module doc; `executor.ort_int8`) of the float model `onnx_model` (a
    ModelProto)."""
    import onnx
    import onnxruntime as ort
    from executor import ort_int8
    name = onnx_model.graph.input[0].name
    opset = next((o.version for o in onnx_model.opset_import if o.domain in ("", "ai.onnx")), 13)
    try:
        if opset < 13:                                         # per-channel QDQ needs DequantizeLinear's axis
            from onnx import version_converter
            onnx_model = version_converter.convert_version(onnx_model, 13)
        if options.get("input_shapes"):                          # static shapes for the shape inference
            from npurt.model.onnx_import import fix_input_shapes
            onnx_model = onnx.ModelProto.FromString(onnx_model.SerializeToString())
            fix_input_shapes(onnx_model, options["input_shapes"])
        q = ort_int8(onnx_model, [_normalised(x, options) for x in calib], skip_symbolic_shape=False)
        sess = ort.InferenceSession(q, providers=["CPUExecutionProvider"])
    except Exception as exc:                                   # a model onnxruntime's quantiser cannot take
        print(f"onnxruntime quantize_static: {type(exc).__name__}: {exc}"[:300], file=sys.stderr)
        return None
    return [min(qt.cosine(o, r) for o, r in zip(sess.run(None, {name: _normalised(x, options)}), ref))
            for x, ref in zip(held, refs)]


def _rows(model: str, onnx_model, weights: str, calib: list[np.ndarray], held: list[np.ndarray],
          refs: list[list[np.ndarray]], techniques, **options) -> list[dict]:
    """One row per technique set: mean / min cosine, compile seconds, ratio to the row without techniques; with
    per-channel weights also onnxruntime's int8 of the exported float model."""
    import logging

    import onnx

    import npurt
    from npurt.exec.compile import optimize_onnx
    logging.getLogger().setLevel(logging.ERROR)               # onnxruntime's quantiser warns per tensor
    proto = onnx.load(onnx_model) if isinstance(onnx_model, str) else onnx_model
    rows, base = [], None
    for t in techniques:
        t0 = time.perf_counter()
        compiled = npurt.compile(onnx_model, soc="rk3588", quantize=calib, optimize=t, weight_method=weights,
                                 progress=False, **options)
        seconds = time.perf_counter() - t0
        cos = _cosines(compiled, held, refs)
        mean = float(np.mean(cos))
        base = mean if t is None else base
        row = {"name": f"{model} {weights} {t or 'none'}", "model": model, "weights": weights,
               "techniques": t or "none", "mean_cos": mean, "min_cos": float(min(cos)),
               "seconds": seconds, "ratio": mean / base}
        if weights == "channel":
            exported = proto if t is None else optimize_onnx(
                proto, t, calib, options.get("mean"), options.get("std"), input_shapes=options.get("input_shapes"))[0]
            qdq = _qdq_cosines(exported, calib, held, refs, options)
            if qdq is not None:
                row.update(qdq_mean=float(np.mean(qdq)), qdq_min=float(min(qdq)))
        rows.append(row)
    return rows


def _zoo(name: str, quick: bool) -> list[dict]:
    import onnxruntime as ort
    from npurt.model import zoo
    size = 32 if name == "mobilenet_uneven" else 64
    model = zoo.mobilenet_uneven(size=size, spread=1.0) if name == "mobilenet_uneven" else \
        zoo.mobilenet_v2_like(size=size)
    rng = np.random.default_rng(0)
    calib = [rng.normal(0, 1, (1, 3, size, size)).astype(np.float32) for _ in range(8 if quick else 16)]
    held = [rng.normal(0, 1, (1, 3, size, size)).astype(np.float32) for _ in range(4 if quick else 8)]
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    refs = [sess.run(None, {"input": x}) for x in held]
    rows = []
    for weights in (("channel", "layer") if name == "mobilenet_uneven" else ("channel",)):
        rows += _rows(name, model, weights, calib, held, refs, TECHNIQUES)
    return rows


def _real(name: str, quick: bool) -> list[dict]:
    spec = rm.MODELS[name]
    calib, held = qt.inputs(name, quick)
    mean, std = qt.NORM[name]
    xs = [qt.nchw(img) for img in held.values()]
    refs = [rm.onnxruntime_run(name, qt.normalised(name, img)) for img in held.values()]
    return _rows(name, str(rm.model_path(name)), "channel", [qt.nchw(img) for img in calib], xs, refs,
                 REAL_TECHNIQUES, mean=[mean], std=[std], input_shapes={spec.input: list(spec.shape)})


def run(quick: bool = False, names: list[str] | None = None) -> list[dict]:
    """The rows of every model (real ones only when in the cache; one line says which are skipped)."""
    names = names or MODELS
    rows = []
    for name in names:
        if name in rm.MODELS:
            if not (rm.cache() / "real" / f"{name}.onnx").exists():
                print(f"{name}: skipped, not in the cache (make test-real fetches the real models)", file=sys.stderr)
                continue
            rows += _real(name, quick)
        else:
            rows += _zoo(name, quick)
    return rows


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    print(cpu())
    print("| model | weights | techniques | npurt int8 mean / min cos | compile s | onnxruntime QDQ of the exported "
          "model, mean / min cos |\n|---|---|---|---|---|---|")
    names = args or MODELS
    for row in (r for name in names for r in run(quick="--quick" in sys.argv, names=[name])):
        qdq = f"{row['qdq_mean']:.4f} / {row['qdq_min']:.4f}" if "qdq_mean" in row else "-"
        print(f"| {row['model']} | {row['weights']} | {row['techniques']} | {row['mean_cos']:.4f} / "
              f"{row['min_cos']:.4f} | {row['seconds']:.1f} | {qdq} |", flush=True)


if __name__ == "__main__":
    main()
