"""Quantisation techniques the vendors' toolkits lack, as passes over the optimised float IR before calibration:

- `equalize` — cross-layer equalisation (Nagel et al. 2019, "Data-Free Quantization"): for a Conv whose output feeds
  only another Conv, through no activation, Relu, LeakyRelu or a Clip with no upper bound (positive scales commute
  with them), output channel i of the first is divided by s_i = sqrt(r1_i * r2_i) / r2_i and input channel i of the
  second multiplied by it (r: the channels' weight ranges), over every such pair until the scales converge. Exactly
  float-equivalent. A Clip with an upper bound (ReLU6) does not commute with a per-channel scale, so such pairs are
  left as they are (npurt does not turn ReLU6 into ReLU: that would change the float model). High-bias absorption
  is not done.
- `correct_bias` — empirical bias correction: the mean shift that per-channel int8 weights (as npurt's compiler
  quantises them) add to each Conv / Gemm output channel on the calibration set's float inputs to that layer,
  subtracted from its bias. Changes biases only. The shift is linear in the input, so it is computed in closed form,
  (W_q - W) applied to the layer's mean input patch (`bias_shift`); a Conv's mean patch comes from box sums of its
  input per kernel tap (`Layer.patch_mean`), about one pass over each layer input, no quantised conv run.
- `adaround` — adaptive rounding (Nagel et al. 2020, "Up or Down?"): per Conv / Gemm / MatMul layer, each weight
  rounded down or up on the per-channel int8 grid so that the layer's pre-activation output error over the
  calibration inputs, (W_q - W) H (W_q - W)^T with H = E[x x^T] of the layer's input patches, is small: AdaRound's
  rectified-sigmoid relaxation with the annealed rounding regulariser, optimised with Adam for a bounded number of
  steps per layer (numpy, float32), then rounded; kept for each output channel where it beats round-to-nearest on
  that error. The result lies on npurt's weight grid (per channel, or per layer), so int8 compilation then stores
  those weights exactly. Layer inputs come from the float model, not the quantised one.

`apply_techniques` runs the chosen ones in the order equalisation, rounding, bias correction (the statistics of the
calibration run are taken after equalisation; bias correction measures the shift of the final int8 weights from the
float ones, so after rounding it corrects what rounding left). The layer statistics come from one float run of the
calibration set through the `evaluate` callable the caller passes (the model layer does not import the kernels),
stopped after the last layer input; the calibration that follows makes its own run of the corrected model.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.model.calibrate import iterate_float, normalized_feeds
from npurt.model.ir import Graph, Node
from npurt.model.options import TECHNIQUES
from npurt.model.passes import NodeEvaluator
from npurt.model.weights import (_weight_axis, asymmetric_weights, centred_codes, quantize_weight,
                                 quantize_weight_asymmetric)
from npurt.tensor.window import conv_geometry

MAX_POSITIONS = 1024
"""Input patches per sample and layer that enter H (adaptive rounding), drawn at random with a fixed seed."""
ADAROUND_ITERATIONS = 400
"""Adam steps per layer of the adaptive rounding (fewer for large layers: `LAYER_FLOPS`)."""
ADAROUND_MIN_ITERATIONS = 50
LAYER_FLOPS = 5e9
"""A layer whose step costs c = rows * (2 K^2 + 200 K) (the matrix product and the elementwise work) gets
LAYER_FLOPS / c steps, between the two bounds above: the rounding of a large layer (a 3x3 conv over 256 channels, a
classifier) stays within seconds."""

_ZETA, _GAMMA = 1.1, -0.1            # AdaRound's rectified sigmoid stretch
_NO_UPPER = 3.0e38                   # a Clip bound at or above this is no bound (float32 max)


# --- cross-layer equalisation ----------------------------------------------------------------------------------------

def _positive_homogeneous(node: Node) -> bool:
    """True when the node's fused activation f has f(x / s) = f(x) / s for every s > 0 (none, Relu, LeakyRelu, a
    Clip with lower bound 0 or none and no upper bound)."""
    if node.activation in (None, "Relu", "LeakyRelu"):
        return True
    if node.activation == "Clip" and node.activation_params:
        lo, hi = node.activation_params
        return (lo is None or lo == 0.0) and (hi is None or hi >= _NO_UPPER)
    return False


def _const_conv(graph: Graph, node: Node) -> bool:
    """A plain 2-D Conv with constant weights (and bias, if any)."""
    return node.op_type == "Conv" and not node.domain and len(node.inputs) >= 2 \
        and node.inputs[1] in graph.constants and graph.constants[node.inputs[1]].ndim == 4 \
        and (len(node.inputs) < 3 or not node.inputs[2] or node.inputs[2] in graph.constants)


def equalization_pairs(graph: Graph) -> list[tuple[int, int]]:
    """(first, second) schedule indices of the Conv -> Conv pairs `equalize` can scale: the first's output is read by
    the second only (as its data input), is not a graph output nor a tensor the graph keeps, and passes through an
    activation that commutes with positive scales."""
    graph.link()
    pairs = []
    for i, a in enumerate(graph.nodes):
        if not _const_conv(graph, a) or not _positive_homogeneous(a):
            continue
        out = graph.tensors[a.outputs[0]]
        if len(out.consumers) != 1 or out.is_output or out.name in graph.keep:
            continue
        j = out.consumers[0]
        b = graph.nodes[j]
        if _const_conv(graph, b) and b.inputs[0] == out.name and out.name not in b.inputs[1:] \
                and graph.constants[b.inputs[1]].shape[1] * int(b.attrs.get("group", 1)) \
                == graph.constants[a.inputs[1]].shape[0]:
            pairs.append((i, j))
    return pairs


def _set_constant(graph: Graph, node: Node, position: int, value: np.ndarray, tag: str) -> None:
    """Give `node`'s input `position` the constant `value`: in place when only that input reads the old constant,
    else (a shared constant, or none yet) under a new name."""
    old = node.inputs[position] if position < len(node.inputs) else ""
    readers = sum(t == old for n in graph.nodes for t in n.inputs) if old else 0
    if old and readers == 1 and old not in graph.outputs:
        graph.constants[old] = value.astype(np.float32)
        return
    name = f"{node.name}.{tag}"
    while name in graph.tensors:
        name += "_"
    graph.constants[name] = value.astype(np.float32)
    info = graph.tensor(name)
    info.shape, info.dtype = tuple(value.shape), "float32"
    while len(node.inputs) <= position:
        node.inputs.append("")
    node.inputs[position] = name
    graph.link()


def _input_channel_ranges(w: np.ndarray, group: int) -> np.ndarray:
    """max |w| per input channel of a Conv weight (M, C/group, kh, kw)."""
    m, cg = w.shape[:2]
    per = np.abs(w).reshape(group, m // group, cg, -1).max(axis=(1, 3))      # (group, cg)
    return per.reshape(-1)


def _scale_input_channels(w: np.ndarray, group: int, s: np.ndarray) -> np.ndarray:
    m, cg = w.shape[:2]
    return (w.reshape(group, m // group, cg, -1) * s.reshape(group, 1, cg, 1)).reshape(w.shape)


def equalize(graph: Graph, iterations: int = 100, tolerance: float = 1e-6) -> int:
    """Cross-layer equalisation of every pair of `equalization_pairs` (see the module doc), repeated until no scale
    moves by more than `tolerance` (relative) or `iterations` rounds; returns the number of pairs. The graph's float
    outputs are unchanged (up to float rounding)."""
    pairs = equalization_pairs(graph)
    for a, b in pairs:            # weights of their own (a constant shared with another node is copied first)
        for k in (a, b):
            node = graph.nodes[k]
            for pos in (1, 2):
                if pos < len(node.inputs) and node.inputs[pos]:
                    _set_constant(graph, node, pos, graph.constants[node.inputs[pos]].astype(np.float64),
                                  "W" if pos == 1 else "B")
    weights = {k: graph.constants[graph.nodes[k].inputs[1]].astype(np.float64) for p in pairs for k in p}
    biases = {k: graph.constants[graph.nodes[k].inputs[2]].astype(np.float64)
              for p in pairs for k in p if len(graph.nodes[k].inputs) > 2 and graph.nodes[k].inputs[2]}
    for _ in range(iterations):
        moved = 0.0
        for a, b in pairs:
            w1, w2 = weights[a], weights[b]
            group2 = int(graph.nodes[b].attrs.get("group", 1))
            r1 = np.abs(w1).reshape(w1.shape[0], -1).max(axis=1)
            r2 = _input_channel_ranges(w2, group2)
            ok = (r1 > 0) & (r2 > 0)
            s = np.ones_like(r1)
            s[ok] = np.sqrt(r1[ok] * r2[ok]) / r2[ok]
            moved = max(moved, float(np.max(np.abs(s - 1.0))) if s.size else 0.0)
            weights[a] = w1 / s.reshape(-1, 1, 1, 1)
            if a in biases:
                biases[a] = biases[a] / s
            weights[b] = _scale_input_channels(w2, group2, s)
        if moved <= tolerance:
            break
    for k, w in weights.items():
        graph.constants[graph.nodes[k].inputs[1]] = w.astype(np.float32)
    for k, bias in biases.items():
        graph.constants[graph.nodes[k].inputs[2]] = bias.astype(np.float32)
    return len(pairs)


# --- layer statistics --------------------------------------------------------------------------------------------------

@dataclass
class Layer:
    """A Conv / Gemm / MatMul with a constant weight, seen as groups of rows: output = patches @ rows^T (+ bias).
    `matrix(w)` gives the weight as (groups, rows per group, K) and `patches(x)` the input as (groups, P, K)."""

    index: int
    node: Node
    groups: int
    axis: int                                   # the weight's output-channel axis (npurt's per-channel axis)
    kernel: tuple[int, int] = (1, 1)            # a Conv's (kh, kw)

    @property
    def weight(self) -> str:
        return self.node.inputs[1]

    def matrix(self, w: np.ndarray) -> np.ndarray:
        if self.node.op_type == "Conv":
            return w.reshape(self.groups, w.shape[0] // self.groups, -1)
        return np.moveaxis(w, self.axis, 0).reshape(1, w.shape[self.axis], -1)

    def from_matrix(self, m: np.ndarray, like: np.ndarray) -> np.ndarray:
        if self.node.op_type == "Conv":
            return m.reshape(like.shape)
        moved = np.moveaxis(like, self.axis, 0).shape
        return np.moveaxis(m.reshape(moved), 0, self.axis)

    def windows(self, x: np.ndarray, out_shape: Sequence[int]) -> np.ndarray:
        """Conv input as a (N, C, Ho, Wo, kh, kw) view of the padded input."""
        kh, kw = self.kernel
        g = conv_geometry(x.shape, (kh, kw), self.node.attrs)
        (sh, sw), (dh, dw) = g.strides, g.dilations
        ho, wo = int(out_shape[2]), int(out_shape[3])
        xp = np.pad(x, ((0, 0), (0, 0), (g.pads_begin[0], g.pads_end[0]), (g.pads_begin[1], g.pads_end[1])))
        win = np.lib.stride_tricks.sliding_window_view(xp, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(2, 3))
        return win[:, :, :ho * sh:sh, :wo * sw:sw, ::dh, ::dw][:, :, :ho, :wo]

    def patch_mean(self, x: np.ndarray, out_shape: Sequence[int]) -> np.ndarray:
        """The mean input patch per group, (groups, K), over every output position (zero padding included). For a
        Conv, the box sums of each kernel tap's positions (`_tap_sums`) along the rows, then along the columns of
        those: about one pass over the input instead of one per tap and output position."""
        if self.node.op_type != "Conv":
            return x.reshape(-1, x.shape[-1]).astype(np.float64).mean(axis=0)[None]
        kh, kw = self.kernel
        g = conv_geometry(x.shape, (kh, kw), self.node.attrs)
        ho, wo = int(out_shape[2]), int(out_shape[3])
        rows = _tap_sums(x, 2, kh, g.dilations[0], g.strides[0], g.pads_begin[0], ho)         # (N, C, kh, W)
        taps = _tap_sums(rows, 3, kw, g.dilations[1], g.strides[1], g.pads_begin[1], wo)      # (N, C, kh, kw)
        return (taps.sum(axis=0) / (x.shape[0] * ho * wo)).reshape(self.groups, -1)

    def patch_sample(self, x: np.ndarray, out_shape: Sequence[int], rng: np.random.Generator) -> np.ndarray:
        """Up to MAX_POSITIONS input patches, (groups, P, K) float32, drawn at random output positions."""
        if self.node.op_type != "Conv":
            rows = x.reshape(-1, x.shape[-1])
            pick = rng.choice(len(rows), MAX_POSITIONS, replace=False) if len(rows) > MAX_POSITIONS else slice(None)
            return rows[pick].astype(np.float32)[None]
        win = self.windows(x, out_shape)
        n, c, ho, wo = win.shape[:4]
        total = n * ho * wo
        flat = rng.choice(total, MAX_POSITIONS, replace=False) if total > MAX_POSITIONS else np.arange(total)
        b, rest = np.divmod(flat, ho * wo)
        i, j = np.divmod(rest, wo)
        p = win[b, :, i, j].astype(np.float32)                                         # (P, C, kh, kw)
        return p.reshape(len(flat), self.groups, -1).transpose(1, 0, 2)


def _tap_sums(x: np.ndarray, axis: int, k: int, dilation: int, stride: int, pad: int, out: int) -> np.ndarray:
    """x with `axis` replaced by the k kernel taps along it, summed in float64: tap a's entry is the sum of what the
    `out` windows read there, x[a * dilation - pad + i * stride] for i < out, positions outside x being zero
    padding. A box sum: every stride-th position from the tap's first (one pass over x serves all taps of a
    stride class) less the few before the first window's and after the last window's."""
    n = x.shape[axis]

    def part(start: int, stop: int | None) -> np.ndarray:
        idx = [slice(None)] * x.ndim
        idx[axis] = slice(start, stop, stride)
        return x[tuple(idx)].sum(axis=axis, dtype=np.float64)
    shape = list(x.shape)
    shape[axis] = k
    sums = np.zeros(shape, np.float64)
    classes: dict[int, np.ndarray] = {}
    for a in range(k):
        first = a * dilation - pad                          # where window 0's tap a reads
        lo = max(0, -(first // stride))                     # the first window reading inside x: ceil(-first / stride)
        hi = min(out, (n - 1 - first) // stride + 1)        # one past the last
        if hi <= lo:
            continue
        start, last = first + lo * stride, first + (hi - 1) * stride
        dst = [slice(None)] * x.ndim
        dst[axis] = a
        r = start % stride
        if 2 * (hi - lo) <= len(range(r, n, stride)):       # reads under half its class: sum them directly
            sums[tuple(dst)] = part(start, last + 1)
            continue
        if r not in classes:
            classes[r] = part(r, None)
        sums[tuple(dst)] = classes[r] - part(r, start) - part(last + stride, None)
    return sums


def quant_layers(graph: Graph) -> list[Layer]:
    """The layers the data-driven techniques treat: Conv (4-D, constant weights), Gemm (alpha 1, transA 0) and
    MatMul with a constant 2-D weight, each with the output-channel axis npurt quantises per channel."""
    out = []
    for i, node in enumerate(graph.nodes):
        if node.domain or len(node.inputs) < 2 or node.inputs[1] not in graph.constants \
                or node.inputs[0] in graph.constants:
            continue
        w = graph.constants[node.inputs[1]]
        if np.dtype(w.dtype).kind != "f" or not np.all(np.isfinite(w)):
            continue
        if node.op_type == "Conv" and w.ndim == 4 and (len(node.inputs) < 3 or not node.inputs[2]
                                                       or node.inputs[2] in graph.constants):
            out.append(Layer(i, node, int(node.attrs.get("group", 1)), 0, (int(w.shape[2]), int(w.shape[3]))))
        elif node.op_type == "Gemm" and w.ndim == 2 and float(node.attrs.get("alpha", 1.0)) == 1.0 \
                and not int(node.attrs.get("transA", 0)) and (len(node.inputs) < 3 or not node.inputs[2]
                                                              or node.inputs[2] in graph.constants):
            out.append(Layer(i, node, 1, _weight_axis("Gemm", 1, node.attrs, w.shape)))
        elif node.op_type == "MatMul" and w.ndim == 2:
            out.append(Layer(i, node, 1, 1))
    return out


@dataclass
class LayerStats:
    """What the calibration run saw at one layer's input: the mean patch (groups, K) and, when asked for, the
    second moment H = E[x x^T] of the patches (groups, K, K)."""

    mean: np.ndarray
    second: np.ndarray | None


def layer_statistics(graph: Graph, layers: list[Layer], samples: list[list[np.ndarray]], mean: list | None,
                     std: list | None, evaluate: NodeEvaluator, second_moment: bool) -> dict[int, LayerStats]:
    """{layer index: LayerStats} over one float run of every calibration sample, up to the last layer input."""
    by_input: dict[str, list[Layer]] = {}
    for layer in layers:
        by_input.setdefault(layer.node.inputs[0], []).append(layer)
    sums: dict[int, np.ndarray] = {}
    seconds: dict[int, np.ndarray] = {}
    counts: dict[int, int] = {}
    for k, sample in enumerate(samples):
        rng = np.random.default_rng(k)
        seen = 0
        for name, value in iterate_float(graph, normalized_feeds(graph, sample, mean, std), evaluate):
            if name not in by_input:
                continue
            seen += 1
            for layer in by_input[name]:
                out_shape = graph.tensors[layer.node.outputs[0]].shape
                i = layer.index
                sums[i] = sums.get(i, 0) + layer.patch_mean(value, out_shape)
                if second_moment:
                    p = layer.patch_sample(value, out_shape, rng)
                    h = np.matmul(p.transpose(0, 2, 1), p).astype(np.float64) / p.shape[1]
                    seconds[i] = seconds.get(i, 0) + h
                counts[i] = counts.get(i, 0) + 1
            if seen == len(by_input):
                break                                   # the nodes after feed no layer: not run
    return {i: LayerStats(sums[i] / counts[i], seconds[i] / counts[i] if second_moment else None) for i in sums}




def _dequant(q: np.ndarray, scales: np.ndarray, axis: int) -> np.ndarray:
    shape = [1] * q.ndim
    shape[axis] = -1
    return q.astype(np.float64) * scales.astype(np.float64).reshape(shape)


def _stored_weights(graph: Graph, layer: "Layer", w: np.ndarray, per_layer: bool, asymmetric_first: bool) -> np.ndarray:
    """The weight values int8 compilation stores for `layer` (float64): symmetric per channel (or per layer), or,
    with `asymmetric_first`, asymmetric for a conv reading a model input (`weights.asymmetric_weights`)."""
    if asymmetric_weights(graph, layer.node, per_layer, asymmetric_first):
        q, scales, zps = quantize_weight_asymmetric(w, layer.axis)
        return _dequant(centred_codes(q, zps, layer.axis), scales, layer.axis)
    return _dequant(*quantize_weight(w, layer.axis, per_layer), layer.axis)


# --- bias correction ---------------------------------------------------------------------------------------------------

def bias_shift(layer: Layer, stored: np.ndarray, float_w: np.ndarray, mean: np.ndarray) -> np.ndarray:
    """The mean output shift per output channel (float64) of `layer` with the weights int8 compilation stores
    (`stored`, their values) against `float_w`, in closed form: the output is linear in the input patch, so the
    shift is (W_q - W) applied to the mean patch `mean` (`Layer.patch_mean`); a Gemm's in units of its bias
    (divided by beta)."""
    delta = layer.matrix(stored - float_w.astype(np.float64))
    shift = np.einsum("gmk,gk->gm", delta, mean).reshape(-1)
    if layer.node.op_type == "Gemm":
        shift = shift / float(layer.node.attrs.get("beta", 1.0))
    return shift


def correct_bias(graph: Graph, layers: list[Layer], stats: dict[int, LayerStats],
                 float_weights: dict[int, np.ndarray], per_layer: bool = False, asymmetric_first: bool = True) -> int:
    """Subtract from each layer's bias the mean output shift of its int8 weights (quantised from the weights the
    graph holds now) against `float_weights` (the float weights before rounding), on the mean input patch of the
    calibration run; a Conv / Gemm without a bias gets one. MatMul has no bias and is left alone. Returns the
    number of layers corrected."""
    done = 0
    for layer in layers:
        node = layer.node
        if layer.index not in stats or node.op_type == "MatMul":
            continue
        w = graph.constants[layer.weight]
        stored = _stored_weights(graph, layer, w, per_layer, asymmetric_first)
        shift = bias_shift(layer, stored, float_weights[layer.index], stats[layer.index].mean)
        has_bias = len(node.inputs) > 2 and node.inputs[2]
        bias = graph.constants[node.inputs[2]].astype(np.float64) if has_bias else np.zeros(shift.size)
        if bias.shape != shift.shape:
            continue                                        # a broadcast Gemm C: not a per-channel bias
        _set_constant(graph, node, 2, bias - shift, "B")
        done += 1
    return done


# --- adaptive rounding -------------------------------------------------------------------------------------------------

def _rectified_sigmoid(v: np.ndarray) -> np.ndarray:
    return np.clip(1.0 / (1.0 + np.exp(-v)) * (_ZETA - _GAMMA) + _GAMMA, 0.0, 1.0)


def round_layer(w: np.ndarray, scales: np.ndarray, h: np.ndarray, iterations: int | None = None,
                reg: float = 3.0, lr: float = 0.05, asymmetric: bool = False) -> np.ndarray:
    """AdaRound of one layer's weight rows `w` (groups, R, K) on the grid `scales` (groups, R), with the input
    second moment `h` (groups, K, K): the integer weights (groups, R, K) in [-127, 127]. The element holding a
    row's largest |w| keeps its nearest integer (+-127), so the row's scale does not change (`asymmetric`: the
    row's smallest and largest weights keep theirs and the others stay between, so its [min, max] grid does not);
    each group keeps the rounding with the lower output error of AdaRound's and round-to-nearest for each row.
    `iterations`: Adam steps (None: ADAROUND_ITERATIONS, fewer for a large layer as LAYER_FLOPS says); the steps run
    in float32."""
    if iterations is None:
        cost = w.shape[0] * w.shape[1] * (2.0 * w.shape[2] ** 2 + 200.0 * w.shape[2])
        iterations = int(min(ADAROUND_ITERATIONS, max(ADAROUND_MIN_ITERATIONS, LAYER_FLOPS // max(cost, 1.0))))
    t = w / scales[..., None]                                            # weights in grid steps
    base = np.floor(t)
    rest = t - base
    nearest = np.rint(t)
    if asymmetric:
        low, high = np.min(nearest, axis=-1, keepdims=True), np.max(nearest, axis=-1, keepdims=True)
        pinned = (t >= np.max(t, axis=-1, keepdims=True) - 1e-6) | (t <= np.min(t, axis=-1, keepdims=True) + 1e-6)
    else:
        low, high = -127, 127
        pinned = np.abs(t) >= np.max(np.abs(t), axis=-1, keepdims=True) - 1e-6
    norm = np.maximum(np.einsum("gr,gkk->g", scales ** 2, h), 1e-30)[:, None, None]
    s32, t32, base32, h32 = (a.astype(np.float32) for a in (scales[..., None], t, base, h))
    scale32 = (2.0 * s32 / norm).astype(np.float32)
    v = (-np.log((_ZETA - _GAMMA) / (np.clip(rest, 0.01, 0.99) - _GAMMA) - 1.0)).astype(np.float32)
    m1, m2 = np.zeros_like(v), np.zeros_like(v)
    b1, b2, eps = 0.9, 0.999, 1e-8
    warm = iterations // 5
    for step in range(1, iterations + 1):
        sig = 1.0 / (1.0 + np.exp(-v))
        soft = np.clip(sig * (_ZETA - _GAMMA) + _GAMMA, 0.0, 1.0)
        err = (base32 + soft - t32) * s32                                 # output-space weight error per element
        grad = np.matmul(err, h32) * scale32
        if step > warm:
            beta = 20.0 + (2.0 - 20.0) * (step - warm) / max(iterations - warm, 1)
            x = 2.0 * soft - 1.0
            grad = grad - reg * beta * np.abs(x) ** (beta - 1.0) * np.sign(x) * 2.0 / (rest.shape[-1] * rest.shape[-2])
        inside = (soft > 0.0) & (soft < 1.0)
        grad = grad * sig * (1.0 - sig) * (_ZETA - _GAMMA) * inside
        m1 = b1 * m1 + (1 - b1) * grad
        m2 = b2 * m2 + (1 - b2) * grad * grad
        v = v - lr * (m1 / (1 - b1 ** step)) / (np.sqrt(m2 / (1 - b2 ** step)) + eps)
    rounded = base + (_rectified_sigmoid(v) >= 0.5)
    rounded = np.where(pinned, nearest, np.clip(rounded, low, high))

    def loss(q: np.ndarray) -> np.ndarray:           # per row: the rows' output errors are independent
        e = q - t
        return np.sum(np.matmul(e, h) * e, axis=-1)
    better = loss(rounded) < loss(nearest)
    return np.where(better[..., None], rounded, nearest)


def adaround(graph: Graph, layers: list[Layer], stats: dict[int, LayerStats],
             iterations: int = ADAROUND_ITERATIONS, per_layer: bool = False, asymmetric_first: bool = True) -> int:
    """Replace each layer's weights by their adaptively rounded values on npurt's per-channel int8 grid (float
    weights that int8 compilation stores exactly; asymmetric ones for a conv reading a model input); returns the
    number of layers rounded."""
    done = 0
    for layer in layers:
        st = stats.get(layer.index)
        if st is None or st.second is None:
            continue
        w = graph.constants[layer.weight].astype(np.float64)
        asymmetric = asymmetric_weights(graph, layer.node, per_layer, asymmetric_first)
        scales = quantize_weight_asymmetric(w, layer.axis)[1] if asymmetric else \
            quantize_weight(w, layer.axis, per_layer)[1]
        mat = layer.matrix(w)
        q = round_layer(mat, scales.astype(np.float64).reshape(mat.shape[:2]), st.second, iterations,
                        asymmetric=asymmetric)
        value = layer.from_matrix(q * scales.astype(np.float64).reshape(mat.shape[:2])[..., None], w)
        _set_constant(graph, layer.node, 1, value, "W")
        done += 1
    return done


# --- the pipeline ------------------------------------------------------------------------------------------------------

def apply_techniques(graph: Graph, techniques: Sequence[str], samples: list[list[np.ndarray]] | None,
                     mean: list | None, std: list | None, evaluate: NodeEvaluator,
                     per_layer: bool = False, asymmetric_first: bool = True) -> dict[str, dict[str, int]]:
    """Run `techniques` (names of `TECHNIQUES`, in any order: they run as the module doc says) over `graph` in place;
    `samples` (normalised by `mean` / `std`) drive bias correction and adaptive rounding, on the int8 weight grid
    npurt compiles to (per channel, or `per_layer`; `asymmetric_first`: the first layer's as `encode_weights` stores
    it for an RKNN SoC). Returns what each did,
    e.g. {"cle": {"pairs": 12}, "bias": {"layers": 27}}."""
    chosen = [t for t in TECHNIQUES if t in techniques]
    report: dict[str, dict[str, int]] = {}
    if "cle" in chosen:
        report["cle"] = {"pairs": equalize(graph)}
    data = [t for t in chosen if t != "cle"]
    if not data:
        return report
    if not samples:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{' and '.join(data)} need a calibration dataset")
    layers = quant_layers(graph)
    stats = layer_statistics(graph, layers, samples, mean, std, evaluate, "adaround" in chosen)
    float_weights = {layer.index: graph.constants[layer.weight] for layer in layers}
    if "adaround" in chosen:
        report["adaround"] = {"layers": adaround(graph, layers, stats, per_layer=per_layer,
                                                     asymmetric_first=asymmetric_first)}
    if "bias" in chosen:
        report["bias"] = {"layers": correct_bias(graph, layers, stats, float_weights, per_layer,
                                                      asymmetric_first)}
    return report
