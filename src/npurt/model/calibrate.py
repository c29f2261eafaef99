"""int8 calibration: read the dataset (the vendor's `dataset.txt` or arrays), run the float graph, collect the
min/max (and, for `kl_divergence` / `mmse`, the histogram) of every activation, and choose per-tensor asymmetric
affine parameters over the range the `quantized_algorithm` picks (`npurt.tensor.ranges`).

The float run walks the optimised IR with the node evaluator the caller passes in (the compiler passes the
executor's kernels, so the calibrated tensors are exactly the tensors the executor stores, fused activations
included) and frees each value after its last use.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.files import read_npy
from npurt.model.ir import Graph, node_guard
from npurt.model.passes import NodeEvaluator
from npurt.tensor.quant import choose_affine_params
from npurt.tensor.ranges import HIST_BINS, check_algorithm, choose_range, histogram_range, histogram_values

Dataset = "str | os.PathLike | Sequence[np.ndarray] | Sequence[Sequence[np.ndarray]] | Sequence[Mapping[str, np.ndarray]]"


def _bad(msg: str) -> NpuError:
    return NpuError(ErrorCode.INVALID_ARGUMENT, msg)


def read_dataset_file(path: "str | os.PathLike") -> list[list[np.ndarray]]:
    """The samples of a vendor-style dataset.txt: one sample per line, one `.npy` path per input, space separated
    (relative paths are relative to the file's folder); blank lines and `#` comments are skipped."""
    p = Path(os.fspath(path))
    if not p.is_file():
        raise _bad(f"dataset file not found: {p}")
    samples = []
    for lineno, line in enumerate(p.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        arrays = []
        for item in line.split():
            f = Path(item) if os.path.isabs(item) else p.parent / item
            if f.suffix.lower() != ".npy":
                raise _bad(f"{p.name}:{lineno}: {item!r} is not a .npy file (images are not decoded by npurt)")
            try:
                arrays.append(read_npy(f, "sample"))
            except NpuError as exc:
                raise _bad(f"{p.name}:{lineno}: {exc.message}") from None
        samples.append(arrays)
    if not samples:
        raise _bad(f"dataset file {p} lists no samples")
    return samples


def normalize_samples(dataset: object, input_names: Sequence[str]) -> list[list[np.ndarray]]:
    """Any accepted dataset form as a list of samples, each a list with one array per model input."""
    if isinstance(dataset, (str, os.PathLike)):
        return read_dataset_file(dataset)
    if isinstance(dataset, np.ndarray):
        dataset = list(dataset)     # a stacked array: one sample of the (single) input per row
    samples = []
    for i, item in enumerate(dataset):
        if isinstance(item, np.ndarray):
            samples.append([item])
        elif isinstance(item, Mapping):
            missing = [n for n in input_names if n not in item]
            if missing:
                raise _bad(f"calibration sample {i} lacks inputs {missing}")
            samples.append([np.asarray(item[n]) for n in input_names])
        elif isinstance(item, (list, tuple)):
            samples.append([np.asarray(a) for a in item])
        else:
            raise _bad(f"calibration sample {i}: expected an array, a list of arrays or a dict, got "
                       f"{type(item).__name__}")
    if not samples:
        raise _bad("calibration dataset is empty")
    return samples


def check_samples(samples: list[list[np.ndarray]], graph: Graph) -> None:
    """Each sample has one numeric array per input with exactly the input's shape (INVALID_ARGUMENT otherwise)."""
    for i, sample in enumerate(samples):
        if len(sample) != len(graph.inputs):
            raise _bad(f"calibration sample {i} has {len(sample)} arrays, the model has {len(graph.inputs)} inputs")
        for name, arr in zip(graph.inputs, sample):
            info = graph.tensors[name]
            if arr.dtype.kind not in "fiub":
                raise _bad(f"calibration sample {i}, input {name!r}: dtype {arr.dtype} is not numeric")
            if tuple(arr.shape) != tuple(info.shape):
                raise _bad(f"calibration sample {i}, input {name!r}: shape {tuple(arr.shape)} != model input "
                           f"shape {tuple(info.shape)}")


def apply_normalization(x: np.ndarray, mean: Sequence[float] | None, std: Sequence[float] | None) -> np.ndarray:
    """(x - mean) / std per channel (axis 1 of 4-D NCHW tensors; scalars broadcast), as float32."""
    y = np.asarray(x, dtype=np.float32)
    if mean is None and std is None:
        return y
    shape = [1] * y.ndim
    if y.ndim >= 2:
        shape[1] = -1
    m = np.asarray(mean if mean is not None else [0.0], np.float32)
    s = np.asarray(std if std is not None else [1.0], np.float32)
    m = m.reshape(shape) if m.size > 1 else m.reshape(())
    s = s.reshape(shape) if s.size > 1 else s.reshape(())
    return (y - m) / s


def iterate_float(graph: Graph, feeds: Mapping[str, np.ndarray],
                  evaluate: NodeEvaluator) -> Iterable[tuple[str, np.ndarray]]:
    """Run the IR in float32 (each node through `evaluate`) and yield (name, value) of every input and node
    output, freeing dead values."""
    last_use: dict[str, int] = {}
    for i, node in enumerate(graph.nodes):
        for t in node.inputs:
            if t:
                last_use[t] = i
    values: dict[str, np.ndarray] = {}
    for name in graph.inputs:
        values[name] = feeds[name]
        yield name, feeds[name]
    for i, node in enumerate(graph.nodes):
        args = [None if not t else (graph.constants[t] if t in graph.constants else values[t]) for t in node.inputs]
        with node_guard(node, "calibration run"):
            results = evaluate(node, args, graph.opset)
        for name, value in zip(node.outputs, results):
            if name:
                values[name] = value
                yield name, value
        for t in node.inputs:
            if t and last_use.get(t) == i and t not in graph.outputs:
                values.pop(t, None)


def normalized_feeds(graph: Graph, sample: list[np.ndarray], mean: list | None,
                     std: list | None) -> dict[str, np.ndarray]:
    """One calibration sample as the float run's feeds: float inputs normalised by their mean / std."""
    feeds = {}
    for k, (name, arr) in enumerate(zip(graph.inputs, sample)):
        if graph.tensors[name].is_float:
            arr = apply_normalization(arr, mean[k] if mean else None, std[k] if std else None)
        feeds[name] = arr
    return feeds


def _float_values(graph: Graph, sample: list[np.ndarray], mean: list | None, std: list | None,
                  evaluate: NodeEvaluator) -> Iterable[tuple[str, np.ndarray]]:
    """(name, finite float values) of every float activation of one calibration sample's float run."""
    for name, value in iterate_float(graph, normalized_feeds(graph, sample, mean, std), evaluate):
        if value.dtype.kind != "f" or value.size == 0:
            continue
        if not np.isfinite(value).all():
            value = value[np.isfinite(value)]
        yield name, value


def calibrate(graph: Graph, samples: list[list[np.ndarray]], mean: list | None = None, std: list | None = None,
              progress: bool = True, *, evaluate: NodeEvaluator,
              algorithm: str = "normal") -> dict[str, tuple[float, int]]:
    """{tensor: (scale, zero_point)} for every float activation of `graph` over `samples` (the float run evaluates
    each node with `evaluate`); `algorithm` picks the range as `npurt.tensor.ranges` says."""
    return calibrate_shared([(graph, samples)], mean, std, progress, evaluate=evaluate, algorithm=algorithm)


def calibrate_shared(runs: Sequence[tuple[Graph, list[list[np.ndarray]]]], mean: list | None = None,
                     std: list | None = None, progress: bool = True, *, evaluate: NodeEvaluator,
                     algorithm: str = "normal") -> dict[str, tuple[float, int]]:
    """One calibration shared by several graphs of one model (its dynamic shape sets), each run on its own
    samples: ranges are taken over all of them. `normal` needs one float run per sample, the histogram
    algorithms two (min/max, then the histograms over those ranges)."""
    check_algorithm(algorithm)
    lo: dict[str, float] = {}
    hi: dict[str, float] = {}
    hists: dict[str, np.ndarray] = {}
    passes = 1 if algorithm == "normal" else 2
    from rich.progress import Progress
    with Progress(transient=True, disable=not progress) as bar:
        task = bar.add_task(f"calibrating ({algorithm})", total=passes * sum(len(s) for _, s in runs))
        for pass_no in range(passes):
            for graph, samples in runs:
                for sample in samples:
                    for name, value in _float_values(graph, sample, mean, std, evaluate):
                        if pass_no == 1:
                            h, _ = np.histogram(histogram_values(value), HIST_BINS,
                                                histogram_range(lo[name], hi[name]))
                            hists[name] = hists[name] + h if name in hists else h
                        elif value.size:
                            mn, mx = float(np.min(value)), float(np.max(value))
                            lo[name] = min(lo.get(name, mn), mn)
                            hi[name] = max(hi.get(name, mx), mx)
                        else:
                            lo.setdefault(name, 0.0)
                            hi.setdefault(name, 0.0)
                    bar.advance(task)
    ranges = {}
    for name in lo:
        a, b = histogram_range(lo[name], hi[name]) if name in hists else (lo[name], hi[name])
        if name in hists:
            a, b = choose_range(algorithm, hists[name], a, b)
        ranges[name] = (a, b)
    ranges = narrow_to_consumers(runs[0][0], ranges)
    params = {name: choose_affine_params(a, b, "int8") for name, (a, b) in ranges.items()}
    return share_passthrough_params(runs[0][0], params)


# A Sigmoid cannot tell inputs beyond ±7 apart at int8: sigmoid(±7) is within 0.001 of 0 / 1, under half a step
# (1/510) of its [0, 1] output. rknn-toolkit2 clips Sigmoid inputs to the same bound.
SIGMOID_INPUT_BOUND = 7.0


def narrow_to_consumers(graph: Graph, ranges: dict[str, tuple[float, float]]) -> dict[str, tuple[float, float]]:
    """Each tensor's range cut to what its consumers can use: a Sigmoid's input to ±`SIGMOID_INPUT_BOUND`, and back
    through the ops that only move or gather values (Concat and the pass-through ops: a Split, a Reshape ...) the
    union of what their outputs keep. A tensor that any other op (or the graph's output) reads keeps its range.
    With it a Concat of box coordinates and class logits before a Split and a Sigmoid (YOLOv8's head) is not widened
    by logits the Sigmoid flattens anyway."""
    graph.link()
    out = dict(ranges)
    for node in reversed(graph.nodes):              # consumers before producers: their needs are known
        for t in node.outputs:
            info = graph.tensors.get(t)
            if t not in out or info is None or info.is_output or not info.consumers:
                continue
            needs = []
            for c in (graph.nodes[i] for i in info.consumers):
                kept = [out[o] for o in c.outputs if o in out]
                if c.activation:
                    needs.append(out[t])
                elif c.op_type == "Sigmoid":
                    needs.append(tuple(min(max(v, -SIGMOID_INPUT_BOUND), SIGMOID_INPUT_BOUND) for v in out[t]))
                elif kept and (c.op_type == "Concat" or c.op_type in PASSTHROUGH_OPS and c.inputs[0] == t):
                    needs.append((min(k[0] for k in kept), max(k[1] for k in kept)))
                else:
                    needs.append(out[t])
            (a, b), lo, hi = out[t], min(n[0] for n in needs), max(n[1] for n in needs)
            a, b = max(a, lo), min(b, hi)
            out[t] = (a, b) if a <= b else ((lo, lo) if b < lo else (hi, hi))   # every value clips to one end
    return out


# Ops whose output values are a subset of their (first) input's values: they keep the input's quantisation, as
# the vendor's do, so int8 data passes through them without a second rounding.
PASSTHROUGH_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "MaxPool", "Identity",
                             "Slice", "Split", "Gather", "Expand", "Tile", "SpaceToDepth", "DepthToSpace",
                             "GlobalMaxPool", "ReduceMax", "ReduceMin"})


def share_passthrough_params(graph: Graph, params: dict[str, tuple[float, int]]) -> dict[str, tuple[float, int]]:
    """Give each float output of a pass-through op (Reshape, MaxPool, ...) its data input's (scale, zp).
    Resize (nearest) and Pad keep values too but may add zeros; zero is exact in every affine range."""
    out = dict(params)
    for node in graph.nodes:
        if node.op_type not in PASSTHROUGH_OPS and not (
                node.op_type == "Resize" and node.attrs.get("mode", "nearest") == "nearest"):
            continue
        src = node.inputs[0] if node.inputs else ""
        if not src or src not in out:
            continue
        for o in node.outputs:
            if o and o in out:
                out[o] = out[src]
    return out
