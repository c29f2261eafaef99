"""An experiment behind a decision (docs/quantization.md section 6: not an option, it does not beat npurt's own):
bias correction from each layer's inputs in npurt's own *int8* model, sequentially (AIMET's empirical variant),
against npurt's bias correction from the *float* model's inputs (`npurt.model.techniques.correct_bias`), on
PP-OCRv4 det of the optional tier (skipped with one line when not cached).

The int8 model is compiled first (calibration ranges of the uncorrected float model, with the other techniques
given applied: cle, adaround). One executor per calibration image, all sharing one weight buffer, then runs the
model step by step: before each Conv / Gemm step, its bias is set (in the stored int32 bias) to
b0 - (W_q m_q - W m_f), m_q the mean input patch over the images of the int8 inputs the corrected layers before it
produce, m_f the float model's (`Layer.patch_mean`), so each layer cancels the mean shift of its own output, given
the corrections above it. Printed: mean / min cosine to onnxruntime float32 on the held-out images of
`bench/quant_vs_toolkit.py` (16 calibration images, 8 with --quick), for no correction, float-input and sequential
int8-input correction.

ratio (for `npurt bench`) = mean cosine with the sequential correction / with npurt's float-input correction.
Run: python bench/sequential_bias.py [--quick] [TECHNIQUES]   (TECHNIQUES: the others to apply first, e.g. cle or
cle,adaround; default cle)
"""
from __future__ import annotations

import copy
import sys
import time
from pathlib import Path

import numpy as np
from _timing import cpu  # bench/ is on sys.path: the script's folder, or `npurt bench`'s

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import quant_vs_toolkit as qt  # noqa: E402  (the real model's images and normalisation)
from helpers import real_models as rm  # noqa: E402

MODEL = "ppocr_det"


def _sequential(compiled, float_graph, layers: dict, stats: dict, float_weights: dict,
                calib: list[np.ndarray]) -> int:
    """Set the int32 biases of `compiled` (in its weight blob) sequentially as the module doc says (W: the
    `float_weights` before any rounding, W_q: the int8 weights of `float_graph`); returns how many were set."""
    from npurt.exec.executor import Executor, allocate
    from npurt.model import techniques as T
    from npurt.model.weights import stored_view
    from npurt.runtime.user_io import pack_input
    c, g = compiled, compiled.graph
    weights = allocate(c)[0]
    runs = []
    for x in calib:
        _, internal, ins, outs = allocate(c)
        ex = Executor(c, cache_weights=False, inplace=False)      # weights decoded at each step: sees the new biases
        ex.bind(weights, internal, ins, outs)
        attr = c.native_input_attrs[0]
        pack_input(attr, x, ins[0], c.mean[0] if c.mean else None, c.std[0] if c.std else None,
                   shape=c.storage[attr.name].shape)
        runs.append(ex)
    offsets = runs[0].plan.weight_offsets
    done = 0
    for i, node in enumerate(g.nodes):
        layer = layers.get(node.name)
        entry = c.weights.get(node.inputs[2]) if layer is not None and len(node.inputs) > 2 and node.inputs[2] \
            else None
        if entry is not None and entry.scales:
            out_shape = float_graph.tensors[layer.node.outputs[0]].shape
            m_q = sum(layer.patch_mean(ex.read_tensor(node.inputs[0]), out_shape) for ex in runs) / len(runs)
            w = float_graph.constants[layer.weight]
            stored = T._stored_weights(float_graph, layer, w, False, True)     # the grid rk3588 compiles to
            shift = (np.einsum("gmk,gk->gm", layer.matrix(stored), m_q)
                     - np.einsum("gmk,gk->gm", layer.matrix(float_weights[layer.index].astype(np.float64)),
                                 stats[layer.index].mean))
            shift = shift.reshape(-1) / (float(node.attrs.get("beta", 1.0)) if node.op_type == "Gemm" else 1.0)
            b0 = float_graph.constants[layer.node.inputs[2]].astype(np.float64)
            bias_scales = stored_view(c.weights[entry.scales], weights, offsets[entry.scales]).astype(np.float64)
            stored_view(entry, weights, offsets[entry.name])[...] = np.clip(
                np.rint((b0 - shift) / bias_scales), -2**31, 2**31 - 1).astype(np.int32)
            done += 1
        for ex in runs:
            ex.run_step(i)
    c.weight_blob[...] = weights
    return done


def run(quick: bool = False, techniques: str = "cle") -> list[dict]:
    import npurt
    from npurt.exec.compile import optimize as optimize_ir
    from npurt.exec.compile import supported_ops
    from npurt.exec.evaluate import evaluate_node
    from npurt.model import techniques as T
    from npurt.model.compiler import compile_graph
    from npurt.model.onnx_import import import_onnx
    from npurt.model.options import CompileOptions
    if not (rm.cache() / "real" / f"{MODEL}.onnx").exists():
        print(f"{MODEL}: skipped, not in the cache (make test-real fetches the real models)", file=sys.stderr)
        return []
    spec = rm.MODELS[MODEL]
    calib_imgs, held = qt.inputs(MODEL, quick)
    mean, std = qt.NORM[MODEL]
    calib = [qt.nchw(img) for img in calib_imgs]
    xs = [qt.nchw(img) for img in held.values()]
    refs = [rm.onnxruntime_run(MODEL, qt.normalised(MODEL, img)) for img in held.values()]
    others = [t for t in techniques.split(",") if t and t != "bias"]
    base = optimize_ir(import_onnx(str(rm.model_path(MODEL)), {spec.input: list(spec.shape)}))
    if "cle" in others:
        T.equalize(base)
    layers = T.quant_layers(base)
    stats = T.layer_statistics(base, layers, [[x] for x in calib], [mean], [std], evaluate_node,
                               "adaround" in others)
    float_weights = {layer.index: base.constants[layer.weight] for layer in layers}     # before rounding
    if "adaround" in others:
        T.adaround(base, layers, stats)

    def compiled_of(graph):
        options = CompileOptions(precision="int8", quantize=calib, mean=[mean], std=[std])
        return compile_graph(graph, "rk3588", options, evaluate=evaluate_node, supported=supported_ops())

    def cosines(compiled) -> list[float]:
        with npurt.Session(compiled) as s:
            return [min(qt.cosine(o, r) for o, r in zip(s.run(x), ref)) for x, ref in zip(xs, refs)]

    floated = copy.deepcopy(base)
    T.correct_bias(floated, T.quant_layers(floated), stats, float_weights)
    results = {"none": cosines(compiled_of(copy.deepcopy(base))), "float inputs": cosines(compiled_of(floated))}
    t0 = time.perf_counter()
    compiled = compiled_of(copy.deepcopy(base))
    n = _sequential(compiled, base, {l.node.name: l for l in layers if l.node.op_type != "MatMul"}, stats,
                    float_weights, calib)
    seconds = time.perf_counter() - t0
    results["int8 inputs, sequential"] = cosines(compiled)
    ref_mean = float(np.mean(results["float inputs"]))
    return [{"name": f"{MODEL} {'+'.join(others + ['bias']) if others else 'bias'} {kind}", "model": MODEL,
             "correction": kind, "mean_cos": float(np.mean(cos)), "min_cos": float(np.min(cos)),
             "ratio": float(np.mean(cos)) / ref_mean, "calibration_inputs": len(calib),
             **({"layers": n, "seconds": seconds} if kind.startswith("int8") else {})}
            for kind, cos in results.items()]


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    print(cpu())
    print("| techniques | bias correction | mean / min cos |\n|---|---|---|")
    for row in run(quick="--quick" in sys.argv, techniques=args[0] if args else "cle"):
        print(f"| {row['name'].split()[1]} | {row['correction']} | {row['mean_cos']:.4f} / {row['min_cos']:.4f} |"
              + (f" ({row['layers']} layers, {row['seconds']:.0f} s)" if "layers" in row else ""), flush=True)


if __name__ == "__main__":
    main()
