"""Shape and data-movement ops: Concat, Split, Slice, Reshape, Flatten, Transpose, Squeeze,
Unsqueeze, Pad, Shape, Size, Gather(Elements), ConstantOfShape, Expand, Tile, Range, Identity (and
npurt's storage conversion `Convert`), Dropout, DepthToSpace, SpaceToDepth.

Where an ONNX opset moved an attribute to an input (Split, Slice, Squeeze, Unsqueeze, Pad,
Reshape), the kernel reads the one the model's opset defines.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.exec.kernels import kernel
from npurt.model.mixed import CONVERT


def _ints(a) -> list[int]:
    return [int(v) for v in np.asarray(a).reshape(-1)]


@kernel("Identity", CONVERT)
def identity(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Identity, and npurt's `Convert` (`npurt.model.mixed`): the identity on logical values; Convert's change of
    storage (fp16 to int8) is the executor's slot reader and writer."""
    return [inputs[0]]


@kernel("Dropout")
def dropout(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Inference: identity plus an all-true mask. training_mode=True (opset 12+ input) drops with
    probability `ratio` and scales by 1/(1-ratio); the mask comes from numpy's legacy
    RandomState(seed) (the ONNX test generator's choice), or a fresh generator without `seed`."""
    x = inputs[0]
    training = len(inputs) > 2 and inputs[2] is not None and bool(np.asarray(inputs[2]))
    ratio = float(np.asarray(inputs[1])) if len(inputs) > 1 and inputs[1] is not None else 0.5
    if not training or ratio == 0:
        return [x, np.ones(x.shape, np.bool_)]
    rng = np.random.RandomState(int(attrs["seed"])) if "seed" in attrs else np.random.RandomState()
    mask = rng.uniform(0, 1.0, x.shape) >= ratio
    return [(mask * x * (1 / (1 - ratio))).astype(x.dtype), mask]


@kernel("Concat")
def concat(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    xs = [x for x in inputs if x is not None]
    return [np.concatenate(xs, axis=int(attrs.get("axis", 0)))]


@kernel("Split")
def split(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Split sizes: attribute `split` (< 13), input 1 (>= 13), or `num_outputs` (18) / equal parts."""
    x = inputs[0]
    axis = int(attrs.get("axis", 0))
    if attrs["_opset"] >= 13:
        sizes = _ints(inputs[1]) if len(inputs) > 1 and inputs[1] is not None else None
    else:
        sizes = attrs.get("split")
    n_dim = x.shape[axis]
    if not sizes:
        n = int(attrs.get("num_outputs", attrs.get("_n_outputs", 1)))
        chunk = -(-n_dim // n)
        sizes = [min(chunk, n_dim - i * chunk) for i in range(n)]
    bounds = np.cumsum(sizes)[:-1]
    return [p.copy() for p in np.split(x, bounds, axis=axis)]


@kernel("Slice")
def slice_(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """starts/ends/axes/steps as attributes (< 10) or inputs (>= 10); numpy clamping semantics."""
    x = inputs[0]
    if attrs["_opset"] < 10:
        starts, ends = attrs["starts"], attrs["ends"]
        axes, steps = attrs.get("axes"), None
    else:
        starts, ends = _ints(inputs[1]), _ints(inputs[2])
        axes = _ints(inputs[3]) if len(inputs) > 3 and inputs[3] is not None else None
        steps = _ints(inputs[4]) if len(inputs) > 4 and inputs[4] is not None else None
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps if steps is not None else [1] * len(starts)
    idx = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        n = x.shape[a]
        # ONNX clamps with INT_MAX/INT_MIN sentinels; map them to numpy's open bounds.
        if st < 0 and e < -n:
            e = None
        elif e > n:
            e = n
        s = max(min(s, n), -n - 1) if s is not None else None
        idx[a] = slice(s, e, st)
    return [x[tuple(idx)].copy()]


@kernel("Reshape")
def reshape(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """0 copies the input dim unless allowzero=1; -1 is inferred."""
    x = inputs[0]
    shape = attrs["shape"] if attrs["_opset"] < 5 else _ints(inputs[1])
    if not attrs.get("allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return [x.reshape(shape)]


@kernel("Flatten")
def flatten(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = inputs[0]
    axis = int(attrs.get("axis", 1))
    axis = axis + x.ndim if axis < 0 else axis
    return [x.reshape(int(np.prod(x.shape[:axis])), -1)]


@kernel("Transpose")
def transpose(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    perm = attrs.get("perm")
    return [np.ascontiguousarray(np.transpose(inputs[0], perm))]


def _axes_arg(inputs: list, attrs: dict[str, Any]) -> list[int] | None:
    if attrs["_opset"] >= 13:
        return _ints(inputs[1]) if len(inputs) > 1 and inputs[1] is not None else None
    return attrs.get("axes")


@kernel("Squeeze")
def squeeze(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = inputs[0]
    axes = _axes_arg(inputs, attrs)
    return [np.squeeze(x, axis=tuple(axes)) if axes else np.squeeze(x)]


@kernel("Unsqueeze")
def unsqueeze(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = inputs[0]
    axes = _axes_arg(inputs, attrs)
    rank = x.ndim + len(axes)
    return [np.expand_dims(x, tuple(sorted(a % rank for a in axes)))]


@kernel("Pad")
def pad(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Pad (constant / reflect / edge / wrap); pads and value as attributes (< 11) or inputs,
    optional `axes` input (18); negative pads crop."""
    x = inputs[0]
    mode = attrs.get("mode", "constant")
    if attrs["_opset"] < 11:
        pads = list(attrs.get("pads", attrs.get("paddings", [])))
        value = attrs.get("value", 0.0)
        axes = None
    else:
        pads = _ints(inputs[1])
        value = inputs[2] if len(inputs) > 2 and inputs[2] is not None else 0
        value = np.asarray(value).reshape(-1)[0] if np.asarray(value).size else 0
        axes = _ints(inputs[3]) if len(inputs) > 3 and inputs[3] is not None else None
    axes = [a % x.ndim for a in axes] if axes is not None else list(range(x.ndim))
    k = len(axes)
    width = [(0, 0)] * x.ndim
    for i, a in enumerate(axes):
        width[a] = (pads[i], pads[i + k])
    # crop negative pads first, then pad the positive part
    crop = tuple(slice(max(0, -b), x.shape[a] - max(0, -e)) for a, (b, e) in enumerate(width))
    x = x[crop]
    width = [(max(0, b), max(0, e)) for b, e in width]
    if mode == "constant":
        return [np.pad(x, width, mode="constant", constant_values=np.asarray(value).astype(x.dtype))]
    return [np.pad(x, width, mode={"reflect": "reflect", "edge": "edge", "wrap": "wrap"}[mode])]


@kernel("Shape")
def shape(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    dims = inputs[0].shape
    start = attrs.get("start", 0)
    end = attrs.get("end", None)
    return [np.array(dims[start:end] if end is not None else dims[start:], np.int64)]


@kernel("Size")
def size(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    return [np.array(inputs[0].size, np.int64)]


def _indices(idx: np.ndarray, size: int, op: str, axis: int) -> np.ndarray:
    """Gather indices in [-size, size) made non-negative; an index outside is the caller's input error
    (INVALID_INPUT naming it), never a wrapped or internal one."""
    bad = idx[(idx < -size) | (idx >= size)]
    if bad.size:
        raise NpuError(ErrorCode.INVALID_INPUT, f"{op}: index {int(bad.reshape(-1)[0])} is out of range "
                                                f"[{-size}, {size - 1}] for axis {axis}")
    return np.where(idx < 0, idx + size, idx)


@kernel("Gather")
def gather(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x, idx = inputs
    axis = int(attrs.get("axis", 0))
    idx = _indices(idx, x.shape[axis], "Gather", axis)
    return [np.take(x, idx, axis=axis)]


@kernel("GatherElements")
def gather_elements(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x, idx = inputs
    axis = int(attrs.get("axis", 0))
    idx = _indices(idx, x.shape[axis], "GatherElements", axis)
    return [np.take_along_axis(x, idx, axis=axis)]


@kernel("ConstantOfShape")
def constant_of_shape(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    value = attrs.get("value")
    value = np.zeros(1, np.float32) if value is None else np.asarray(value).reshape(-1)
    return [np.full(_ints(inputs[0]), value[0], dtype=value.dtype)]


@kernel("Expand")
def expand(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Bidirectional broadcast of the input against `shape`."""
    x = inputs[0]
    target = np.broadcast_shapes(x.shape, tuple(_ints(inputs[1])))
    return [np.broadcast_to(x, target).copy()]


@kernel("Tile")
def tile(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    return [np.tile(inputs[0], _ints(inputs[1]))]


@kernel("Range")
def range_(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    start, limit, delta = inputs
    return [np.arange(start, limit, delta).astype(start.dtype)]


@kernel("DepthToSpace")
def depth_to_space(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = inputs[0]
    b = int(attrs["blocksize"])
    n, c, h, w = x.shape
    if attrs.get("mode", "DCR") == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return [y.reshape(n, c // (b * b), h * b, w * b)]


@kernel("SpaceToDepth")
def space_to_depth(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = inputs[0]
    b = int(attrs["blocksize"])
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b)
    if attrs.get("mode", "DCR") == "CRD":
        y = y.transpose(0, 1, 3, 5, 2, 4)
    else:
        y = y.transpose(0, 3, 5, 1, 2, 4)
    return [y.reshape(n, c * b * b, h // b, w // b)]


@kernel("Trilu")
def trilu(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x = inputs[0]
    k = int(inputs[1]) if len(inputs) > 1 and inputs[1] is not None else 0
    return [np.triu(x, k) if attrs.get("upper", 1) else np.tril(x, k)]


def _cumulative(fn, identity):
    def run(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
        """Cumulative op along `axis`; `exclusive` shifts by one, `reverse` runs backwards."""
        x, axis = inputs[0], int(np.asarray(inputs[1]).reshape(-1)[0])
        if attrs.get("reverse", 0):
            x = np.flip(x, axis)
        y = fn(x, axis=axis, dtype=x.dtype)
        if attrs.get("exclusive", 0):
            first = np.full_like(np.take(y, [0], axis=axis), identity)
            y = np.concatenate([first, np.take(y, np.arange(y.shape[axis] - 1), axis=axis)], axis=axis)
        if attrs.get("reverse", 0):
            y = np.flip(y, axis)
        return [np.ascontiguousarray(y)]

    return run


kernel("CumSum")(_cumulative(np.cumsum, 0))
kernel("CumProd")(_cumulative(np.cumprod, 1))


@kernel("CenterCropPad")
def center_crop_pad(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Center-crop or zero-pad `axes` to `shape` (crop start / pad start is the smaller half)."""
    x, target = inputs[0], _ints(inputs[1])
    axes = [a % x.ndim for a in attrs.get("axes", range(x.ndim))]
    out_shape = list(x.shape)
    for a, t in zip(axes, target):
        out_shape[a] = t
    y = np.zeros(out_shape, x.dtype)
    src, dst = [slice(None)] * x.ndim, [slice(None)] * x.ndim
    for a, t in zip(axes, target):
        n = x.shape[a]
        if t <= n:
            s0 = (n - t) // 2
            src[a] = slice(s0, s0 + t)
        else:
            d0 = (t - n) // 2
            dst[a] = slice(d0, d0 + n)
    y[tuple(dst)] = x[tuple(src)]
    return [y]


@kernel("ReverseSequence")
def reverse_sequence(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x, lens = inputs
    t_axis, b_axis = int(attrs.get("time_axis", 0)), int(attrs.get("batch_axis", 1))
    y = x.copy()
    for b, n in enumerate(_ints(lens)):
        idx = [slice(None)] * x.ndim
        idx[b_axis] = b
        idx[t_axis] = slice(0, n)
        src = x[tuple(idx)]
        y[tuple(idx)] = np.flip(src, axis=t_axis - (1 if b_axis < t_axis else 0))
    return [y]


@kernel("Unique")
def unique(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Unique values (sorted, or in order of first occurrence), first indices, inverse, counts."""
    x = inputs[0]
    axis = attrs.get("axis")
    vals, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True, return_counts=True,
                                             axis=axis)
    if not attrs.get("sorted", 1):
        order = np.argsort(first, kind="stable")
        remap = np.empty_like(order)
        remap[order] = np.arange(order.size)
        vals = np.take(vals, order, axis=0 if axis is None else axis)
        first, counts, inverse = first[order], counts[order], remap[inverse.reshape(-1)]
    return [vals, first.astype(np.int64), inverse.reshape(-1).astype(np.int64), counts.astype(np.int64)]


@kernel("TopK")
def topk(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """The k largest (or smallest) along `axis`, ties broken by the lower index (stable sort)."""
    x, k = inputs[0], int(np.asarray(inputs[1]).reshape(-1)[0])
    axis = int(attrs.get("axis", -1))
    largest = attrs.get("largest", 1)
    key = x if not largest else (np.iinfo(x.dtype).max - x if x.dtype.kind == "u" else -x)
    order = np.argsort(key, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    return [np.take_along_axis(x, idx, axis=axis), idx.astype(np.int64)]


@kernel("OneHot")
def one_hot(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    indices, depth, values = inputs
    depth = int(np.asarray(depth).reshape(-1)[0])
    axis = int(attrs.get("axis", -1))
    idx = np.asarray(indices).astype(np.int64)
    idx = np.where(idx < 0, idx + depth, idx)
    hot = idx[..., None] == np.arange(depth)
    y = np.where(hot, values[1], values[0]).astype(values.dtype)
    return [np.moveaxis(y, -1, axis if axis >= 0 else y.ndim + axis)]


@kernel("GatherND")
def gather_nd(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x, idx = inputs
    b = int(attrs.get("batch_dims", 0))
    batch = x.shape[:b]
    xb = x.reshape((-1,) + x.shape[b:])
    ib = idx.reshape((-1,) + idx.shape[b:])
    out = []
    for xi, ii in zip(xb, ib):
        k = ii.shape[-1]
        flat = ii.reshape(-1, k)
        out.append(np.stack([xi[tuple(t)] for t in flat]).reshape(ii.shape[:-1] + xi.shape[k:]))
    return [np.stack(out).reshape(batch + out[0].shape)]


def _scatter_reduce(reduction: str):
    return {"none": None, "add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[reduction]


@kernel("ScatterND")
def scatter_nd(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x, idx, upd = inputs
    y = x.copy()
    red = _scatter_reduce(attrs.get("reduction", "none"))
    k = idx.shape[-1]
    for t, u in zip(idx.reshape(-1, k), upd.reshape((-1,) + x.shape[k:])):
        key = tuple(t)
        y[key] = u if red is None else red(y[key], u)
    return [y]


@kernel("ScatterElements", "Scatter")
def scatter_elements(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x, idx, upd = inputs
    axis = int(attrs.get("axis", 0)) % x.ndim
    idx = np.where(idx < 0, idx + x.shape[axis], idx)
    y = x.copy()
    red = _scatter_reduce(attrs.get("reduction", "none"))
    coords = list(np.indices(idx.shape))
    coords[axis] = idx
    key = tuple(coords)
    if red is None:
        y[key] = upd
    else:
        red.at(y, key, upd)
    return [y]


@kernel("Compress")
def compress(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x, cond = inputs
    axis = attrs.get("axis")
    return [np.compress(cond.astype(bool), x, axis=axis)]


@kernel("EyeLike")
def eye_like(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    from onnx import helper

    x = inputs[0]
    dtype = helper.tensor_dtype_to_np_dtype(attrs["dtype"]) if "dtype" in attrs else x.dtype
    return [np.eye(x.shape[0], x.shape[1], k=int(attrs.get("k", 0)), dtype=dtype)]


@kernel("NonZero")
def non_zero(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    return [np.array(np.nonzero(inputs[0]), dtype=np.int64).reshape(inputs[0].ndim, -1)]


@kernel("Einsum")
def einsum(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    return [np.asarray(np.einsum(attrs["equation"], *inputs, optimize=True))]
