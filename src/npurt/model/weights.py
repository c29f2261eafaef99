"""Weights in their compute-ready stored form, packed into one blob.

- fp16 precision: float constants as float16 (float32 if a value would overflow float16); others unchanged.
- int8 precision: Conv/ConvTranspose/Gemm/MatMul weight operands as symmetric int8 + float32 scales per channel
  (or one scale repeated for every channel: per-layer weights), except a dense Conv reading a model input (the first
  layer): asymmetric int8 per channel (+ int8 zero points: [min, max] with 0 onto all 256 codes), as rknn-toolkit2
  quantises it;
  their biases as int32 with scale = input scale * weight scale (per channel); other float constants float16;
  the constants of the nodes kept in fp16 (mixed precision, `float_nodes`) float16.
- float32 precision: everything as given (float constants as float32).

`decode_weight` turns a stored entry back into the logical float32 (or integer) array the kernels take.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from npurt.model.ir import Graph
from npurt.tensor import DType
from npurt.tensor.quant import choose_affine_params, quantize_per_channel

WEIGHT_ALIGN = 64          # offset alignment of each weight in the blob (npurt's choice)
WEIGHT_TOTAL_ALIGN = 1024  # the whole weight region is a 1 KiB multiple, as the seed's totals are

_FP16_MAX = 65504.0


@dataclass
class WeightEntry:
    """One stored constant: its stored type/shape, per-channel axis and the name of its scale entry (if any)."""

    name: str
    dtype: DType
    shape: tuple[int, ...]
    logical_dtype: str
    axis: int | None = None
    scales: str | None = None   # name of a float32 entry holding the per-channel (or single) scales
    zero_points: str | None = None  # name of an int8 entry of per-channel zero points (asymmetric weights)

    def to_json(self) -> dict:
        return {"name": self.name, "dtype": self.dtype.value, "shape": list(self.shape),
                "logical_dtype": self.logical_dtype, "axis": self.axis, "scales": self.scales,
                **({"zero_points": self.zero_points} if self.zero_points else {})}

    @classmethod
    def from_json(cls, d: dict) -> "WeightEntry":
        return cls(d["name"], DType(d["dtype"]), tuple(int(x) for x in d["shape"]), d["logical_dtype"],
                   d["axis"], d["scales"], d.get("zero_points"))


def _weight_axis(op: str, position: int, attrs: dict, shape: tuple[int, ...]) -> int | None:
    """The output-channel axis when `position` is the weight operand of a matmul-like op, else None."""
    if position != 1 or len(shape) < 2:
        return None
    if op == "Conv":
        return 0
    if op == "ConvTranspose":
        return 1 if int(attrs.get("group", 1)) == 1 else None
    if op == "Gemm":
        return 0 if int(attrs.get("transB", 0)) else 1
    if op == "MatMul":
        return len(shape) - 1
    return None


def _bias_of(op: str, position: int, shape: tuple[int, ...]) -> bool:
    return len(shape) == 1 and ((op in ("Conv", "ConvTranspose") and position == 2) or (op == "Gemm" and position == 2))


def _as_fp16_or_f32(value: np.ndarray) -> np.ndarray:
    """float16 unless a finite value would overflow it (then float32)."""
    v = value.astype(np.float32, copy=False)
    if v.size:
        lo, hi = float(v.min()), float(v.max())
        if not (np.isfinite(lo) and np.isfinite(hi)):
            finite = v[np.isfinite(v)]
            lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
        if max(-lo, hi) > _FP16_MAX:
            return v
    return v.astype(np.float16)


def quantize_weight(w: np.ndarray, axis: int, per_layer: bool = False,
                    steps: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(int8 values, one float32 scale per channel along `axis`) of a matmul-like op's weight: symmetric per
    channel, or with `per_layer` one scale (max |w| / 127) repeated for every channel; `steps` as
    `quantize_per_channel` takes them."""
    w = np.asarray(w, np.float32)
    if per_layer and w.size:
        peak = float(np.max(np.abs(w)))
        steps = np.full(w.shape[axis], peak / 127.0 if peak > 0 else 1.0, np.float32)
    return quantize_per_channel(w, axis, "int8", steps)


def asymmetric_weights(graph: Graph, node, per_layer: bool = False, asymmetric_first: bool = True) -> bool:
    """Whether int8 compilation stores `node`'s weights asymmetric per channel: with per-channel weights and
    `asymmetric_first` (an RKNN SoC), a dense Conv reading a model input.

    rknn-toolkit2 quantises every conv's weights so; npurt does it where it measured better than symmetric weights,
    the first layer (few weights per channel, an exact pixel input: the weights' grid is its error)."""
    return (not per_layer and asymmetric_first and node.op_type == "Conv" and int(node.attrs.get("group", 1)) == 1
            and bool(node.inputs) and node.inputs[0] in graph.inputs)


def quantize_weight_asymmetric(w: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(int8 codes, float32 scales, int32 zero points) per channel along `axis`: each channel's [min, max], widened
    to hold 0, onto the 256 int8 codes (`choose_affine_params`); the value of code q is (q - zero point) * scale."""
    w = np.asarray(w, np.float32)
    axis %= w.ndim
    rows = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
    params = [choose_affine_params(float(r.min()), float(r.max())) if r.size else (1.0, 0) for r in rows]
    scales = np.array([p[0] for p in params], np.float32)
    zps = np.array([p[1] for p in params], np.int32)
    bshape = [1] * w.ndim
    bshape[axis] = -1
    q = np.rint(np.divide(w, scales.reshape(bshape), dtype=np.float32)) + zps.reshape(bshape)
    return np.clip(q, -128, 127).astype(np.int8), scales, zps


def encode_weights(graph: Graph, precision: str, act_qparams: dict[str, tuple[float, int]] | None = None,
                   float_nodes: "set[int] | frozenset[int]" = frozenset(), per_layer: bool = False,
                   asymmetric_first: bool = True) -> tuple[dict[str, WeightEntry], dict[str, np.ndarray]]:
    """({name: WeightEntry}, {entry name: stored array}) for every constant a node reads (`float_nodes`: schedule
    indices of the nodes of an int8 model that compute in fp16; `per_layer`: one int8 scale per weight tensor;
    `asymmetric_first`: the first layer's weights asymmetric, as rknn-toolkit2 stores them, where the HTP's int8
    per-channel weights are symmetric)."""
    used: dict[str, list[tuple[int, int]]] = {}
    for i, node in enumerate(graph.nodes):
        for pos, t in enumerate(node.inputs):
            if t and t in graph.constants:
                used.setdefault(t, []).append((i, pos))
    entries: dict[str, WeightEntry] = {}
    arrays: dict[str, np.ndarray] = {}
    weight_scales: dict[str, np.ndarray] = {}

    def add(name: str, stored: np.ndarray, logical: str, axis: int | None = None, scales: str | None = None):
        stored = np.ascontiguousarray(stored)
        dt = DType.from_numpy(stored.dtype)
        entries[name] = WeightEntry(name, dt, tuple(stored.shape), logical, axis, scales)
        arrays[name] = stored

    biases = []
    for name, uses in used.items():
        value = graph.constants[name]
        logical = value.dtype.name
        if value.dtype.kind != "f":
            add(name, value, logical)
            continue
        if precision == "float32":
            add(name, value.astype(np.float32, copy=False), logical)
            continue
        if precision == "int8" and not any(i in float_nodes for i, _ in uses):
            axes = {_weight_axis(graph.nodes[i].op_type, p, graph.nodes[i].attrs, value.shape) for i, p in uses}
            if len(axes) == 1 and None not in axes and np.all(np.isfinite(value)):
                axis = axes.pop()
                if name not in graph.weight_steps and all(
                        p == 1 and asymmetric_weights(graph, graph.nodes[i], per_layer, asymmetric_first)
                        for i, p in uses):
                    q, scales, zps = quantize_weight_asymmetric(value, axis)
                    add(f"{name}#scale", scales, "float32")
                    add(f"{name}#zp", zps.astype(np.int8), "int8")
                    add(name, q, logical, axis, f"{name}#scale")
                    entries[name].zero_points = f"{name}#zp"
                    weight_scales[name] = scales
                    continue
                q, scales = quantize_weight(value, axis, per_layer, graph.weight_steps.get(name))
                add(f"{name}#scale", scales, "float32")
                add(name, q, logical, axis, f"{name}#scale")
                weight_scales[name] = scales
                continue
            if all(_bias_of(graph.nodes[i].op_type, p, value.shape) for i, p in uses) and len(uses) == 1:
                biases.append((name, uses[0]))
                continue
        add(name, _as_fp16_or_f32(value), logical)
    for name, (i, _) in biases:
        node = graph.nodes[i]
        value = graph.constants[name].astype(np.float64)
        w_name = node.inputs[1]
        in_q = (act_qparams or {}).get(node.inputs[0])
        if w_name in weight_scales and in_q is not None and weight_scales[w_name].size == value.size:
            scales = (weight_scales[w_name].astype(np.float64) * in_q[0]).astype(np.float32)
            q = np.clip(np.rint(value / scales), -2**31, 2**31 - 1).astype(np.int32)
            add(f"{name}#scale", scales, "float32")
            add(name, q, "float32", 0, f"{name}#scale")
        else:
            add(name, _as_fp16_or_f32(value), "float32")
    return entries, arrays


def layout_blob(arrays: dict[str, np.ndarray]) -> tuple[dict[str, tuple[int, int]], int]:
    """({name: (offset, nbytes)}, total) placing each array at a WEIGHT_ALIGN offset, biggest first."""
    placed: dict[str, tuple[int, int]] = {}
    offset = 0
    for name in sorted(arrays, key=lambda n: -arrays[n].nbytes):
        offset = -(-offset // WEIGHT_ALIGN) * WEIGHT_ALIGN
        placed[name] = (offset, int(arrays[name].nbytes))
        offset += arrays[name].nbytes
    total = -(-offset // WEIGHT_TOTAL_ALIGN) * WEIGHT_TOTAL_ALIGN
    return placed, total


def build_blob(arrays: dict[str, np.ndarray], placed: dict[str, tuple[int, int]], total: int) -> np.ndarray:
    """One uint8 blob of `total` bytes holding every array at its offset (padding zeroed)."""
    blob = np.zeros(total, np.uint8)
    for name, (off, nbytes) in placed.items():
        blob[off:off + nbytes] = np.ascontiguousarray(arrays[name]).reshape(-1).view(np.uint8)
    return blob


def stored_view(entry: WeightEntry, blob: np.ndarray, offset: int) -> np.ndarray:
    """The stored array of `entry` as a view of `blob` (no copy)."""
    dt = entry.dtype.numpy_dtype
    n = int(np.prod(entry.shape, dtype=np.int64))
    return blob[offset:offset + n * dt.itemsize].view(dt).reshape(entry.shape)


def centred_codes(codes: np.ndarray, zero_points: np.ndarray, axis: int) -> np.ndarray:
    """Asymmetric weights' int8 `codes` less their per-channel `zero_points` along `axis`, as int16 (within
    [-255, 255]): value = centred code * scale."""
    shape = [1] * codes.ndim
    shape[axis] = -1
    return np.subtract(codes, zero_points.reshape(shape), dtype=np.int16)


def decode_weight(entry: WeightEntry, stored: np.ndarray, scales: np.ndarray | None,
                  zero_points: np.ndarray | None = None) -> np.ndarray:
    """The logical value the kernels take: float32 for float constants (dequantised: (code - zero point) * scale),
    else the stored array."""
    if not entry.logical_dtype.startswith("float"):
        return stored
    if entry.scales is None:
        return stored.astype(np.float32)
    shape = [1] * stored.ndim
    if entry.axis is not None and stored.ndim:
        shape[entry.axis] = -1
    s = scales.reshape(shape) if scales.size > 1 else scales.reshape(())
    if zero_points is not None:
        stored = centred_codes(stored, zero_points, entry.axis)
    return np.multiply(stored, s, dtype=np.float32)
