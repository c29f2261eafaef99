"""Native-layout steps: ops computed straight on their NC1HWC2 slots, without the generic
slot -> NCHW float32 -> kernel -> NCHW float32 -> slot round trip.

`prepare(...)` returns, for a node it can handle, a zero-argument callable that reads the node's inputs from their
slots and writes its outputs into theirs (native layout and type, padding lanes zero); None otherwise, and the
executor keeps the generic path. Every buffer is prepared at bind; the per-run work is a few numpy calls with
`out=`. The arithmetic is the generic path's:

- unary elementwise ops (Sigmoid, Relu, ...) on fp16 or int8: a lookup table over all 65536 (fp16) or 256
  (int8) stored values, computed at bind by the op's own kernel with the generic dequantise/quantise steps, so
  results are bit-identical to the generic path; one gather pass per run.
- binary Add/Sub/Mul of two identically stored tensors: fp16 computes in float32 in one ufunc call
  (`dtype=float32`, cast once on store); int8 uses a 65536-entry table indexed by the two stored bytes. When
  both inputs are functions of one tensor x (SiLU's Mul(x, Sigmoid(x))), one table over x's stored values.
- Concat / Split along channels whose counts are multiples of C2: whole C1 blocks are copied (int8 with
  different quantisation goes through a 256-entry requantisation table). Reshape/Flatten into a plain slot:
  one same-type unpacking copy. Nearest Resize: a gather of whole C2 groups with source indices found at bind
  by the Resize kernel itself.
- Conv (2-D, batch 1, dilation 1): dense convolutions are an NHWC im2col from a bordered float32 copy of
  the input (one buffer shared by all steps; each fills its border every run) plus one GEMM that yields (pixels, channels) = NHWC, stored to NC1HWC2 by a C2-group copy; the
  output channels are padded to C1*C2 with zero weights. int8 folds the output quantisation into the weights
  and bias. Depthwise convolutions accumulate taps in the native layout itself (the kernel never leaves
  NC1HWC2), in cache-sized blocks, with per-tap weights pre-tiled along W so every numpy loop is long.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from npurt.exec.bind import typed_view
from npurt.tensor import DType, Layout

UNARY = {"Sigmoid", "Relu", "LeakyRelu", "Elu", "Selu", "Softplus", "HardSigmoid", "HardSwish", "Tanh", "Erf",
         "Gelu", "Mish", "Abs", "Neg", "Exp", "Clip", "Softsign", "ThresholdedRelu", "Celu"}
BINARY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply}
# table gathers use np.take(mode="clip"): indices are stored bit patterns, always in range, and skipping the
# bounds check measured 20% faster than the default mode
_BLOCK = 1 << 16            # float32 elements per depthwise block (256 KiB; 1<<12..1<<18 measured: smaller blocks pay
                            # ~1 us of call overhead per numpy call, larger ones fall out of L2)


class Context:
    """What `prepare` needs from the executor: storage, slot views, constant values, shared scratch."""

    def __init__(self, storage: dict, views: dict, constants: dict) -> None:
        self.storage = storage
        self.views = views
        self.constants = constants          # name -> decoded float32 array (cached weights), else absent
        self._shared: dict[tuple, np.ndarray] = {}
        self.tables: dict[str, tuple[str, np.ndarray]] = {}   # unary LUT outputs: name -> (input name, table)

    def slot(self, name: str) -> np.ndarray:
        st = self.storage[name]
        raw, off = self.views[name]
        return typed_view(raw, st.dtype.numpy_dtype, st.dims, off)

    def _grow(self, key: str, nbytes: int) -> np.ndarray:
        """A flat byte buffer of at least `nbytes`, one per key, shared by all steps. It grows by at least 2x, so
        the buffers left to earlier (smaller) steps add up to less than the final one: native scratch stays
        within a few times the largest step's need, never a copy of all activations."""
        buf = self._shared.get(key)
        if buf is None or buf.size < nbytes:
            buf = self._shared[key] = np.empty(max(nbytes, 2 * (buf.size if buf is not None else 0), 64), np.uint8)
        return buf

    def padded(self, shape: tuple) -> np.ndarray:
        """A float32 buffer of `shape` for a padded conv input, shared by all steps: each step fills its own
        border on every run (the interior is rewritten anyway)."""
        n = math.prod(shape)
        return self._grow("padded", 4 * n)[:4 * n].view(np.float32).reshape(shape)

    def scratch(self, n: int) -> np.ndarray:
        """A float32 scratch shared by all steps, for per-step temporaries (conv results, accumulators)."""
        return self._grow("scratch", 4 * n)[:4 * n].view(np.float32)

    def scratch2(self, n: int) -> np.ndarray:
        """A second float32 scratch (im2col columns, depthwise tap products)."""
        return self._grow("scratch2", 4 * n)[:4 * n].view(np.float32)

    def typed_scratch(self, dtype: np.dtype, n: int) -> np.ndarray:
        """A scratch of `n` elements of `dtype` shared by all steps (stored-type staging of conv outputs)."""
        dt = np.dtype(dtype)
        return self._grow("typed", n * dt.itemsize)[:n * dt.itemsize].view(dt)


def _kind(st) -> str | None:
    """'fp16' / 'int8' for an NC1HWC2 activation the native steps handle, else None."""
    if st.layout is not Layout.NC1HWC2 or len(st.shape) != 4 or st.dims[3] != st.shape[3]:
        return None
    if st.dtype is DType.FLOAT16 and not st.quantized:
        return "fp16"
    if st.dtype is DType.INT8 and st.quantized:
        return "int8"
    return None


def _pads(st, view: np.ndarray) -> list[np.ndarray]:
    """Views of the padding lanes of an NC1HWC2 slot (channels >= C)."""
    c, c2, c1 = st.shape[1], st.dims[4], st.dims[1]
    full, rem = divmod(c, c2)
    out = []
    if rem:
        out.append(view[:, full, :, :, rem:])
    used = full + (1 if rem else 0)
    if used < c1:
        out.append(view[:, used:])
    return out


def _zero(pads: list[np.ndarray]) -> None:
    for p in pads:
        p.fill(0)


def _dequant(q: np.ndarray, st) -> np.ndarray:
    """Stored int8 values as float32, exactly as `SlotReader.read` computes them."""
    t = np.empty(q.shape, np.float32)
    np.multiply(q, np.float32(st.scale), out=t)
    np.subtract(t, np.float32(st.zp * st.scale), out=t)
    return t


def _quant(y: np.ndarray, st) -> np.ndarray:
    """float32 values as stored int8, exactly as `SlotWriter._quantize` + the casting store compute them."""
    t = np.multiply(np.asarray(y, np.float32), np.float32(1.0 / st.scale))
    np.add(t, np.float32(st.zp), out=t)
    np.rint(t, out=t)
    np.clip(t, -128, 127, out=t)
    return t.astype(np.int8)


def _values(kind: str, st) -> tuple[np.ndarray, np.ndarray]:
    """(table index dtype view, float32 value) of every storable value of `st`."""
    if kind == "fp16":
        idx = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
        return idx, idx.view(np.float16).astype(np.float32)
    idx = np.arange(256, dtype=np.uint16).astype(np.uint8)
    return idx, _dequant(idx.view(np.int8), st)


def _store(kind: str, y: np.ndarray, st) -> np.ndarray:
    """float32 results as the stored bit patterns (uint16 for fp16, uint8 for int8)."""
    if kind == "fp16":
        return np.asarray(y, np.float32).astype(np.float16).view(np.uint16)
    return _quant(y, st).view(np.uint8)


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint16 if a.dtype.itemsize == 2 else np.uint8)


def prepare(node: Any, kernel: Callable, attrs: dict, ctx: Context) -> Callable[[], None] | None:
    """A zero-argument step computing `node` directly on its slots, or None when the native path does not
    handle it (op, layout or type) and the executor must use the generic read/kernel/write path."""
    op = node.op_type
    try:
        with np.errstate(all="ignore"):
            return _prepare(op, node, kernel, attrs, ctx)
    except _Skip:
        return None


def _prepare(op, node, kernel, attrs, ctx):
    if op in UNARY:
        return _unary(node, kernel, attrs, ctx)
    if op in BINARY:
        return _binary(node, kernel, attrs, ctx)
    if op == "Concat":
        return _concat(node, attrs, ctx)
    if op == "Split":
        return _split(node, ctx)
    if op == "Conv":
        return _conv(node, attrs, ctx)
    if op in ("Reshape", "Flatten"):
        return _unpack_reshape(node, ctx)
    if op == "Resize" and attrs.get("mode", "nearest") == "nearest":
        return _resize_nearest(node, kernel, attrs, ctx)
    return None


class _Skip(Exception):
    pass


def _act(name: str, ctx: Context) -> tuple[Any, str]:
    if not name or name not in ctx.storage or name in ctx.constants:
        raise _Skip
    st = ctx.storage[name]
    kind = _kind(st)
    if kind is None:
        raise _Skip
    return st, kind


# --- elementwise -----------------------------------------------------------------------------------------------

def _unary(node, kernel, attrs, ctx):
    st_in, kind = _act(node.inputs[0], ctx)
    st_out, kind_out = _act(node.outputs[0], ctx)
    extra = []
    for t in node.inputs[1:]:                     # Clip min/max: constants only
        if not t:
            extra.append(None)
        elif t in ctx.constants:
            extra.append(ctx.constants[t])
        else:
            raise _Skip
    if kind != kind_out or st_in.dims != st_out.dims or st_in.shape != st_out.shape or len(node.outputs) != 1:
        raise _Skip
    idx, vals = _values(kind, st_in)
    y = kernel([vals] + extra, attrs)[0]
    if y.shape != vals.shape:
        raise _Skip
    table = _store(kind, y, st_out)
    ctx.tables[node.outputs[0]] = (node.inputs[0], table)
    src, dst = _bits(ctx.slot(node.inputs[0])), _bits(ctx.slot(node.outputs[0]))
    pads = _pads(st_out, ctx.slot(node.outputs[0]))

    def run() -> None:
        np.take(table, src, out=dst, mode="clip")
        _zero(pads)
    return run


def _binary(node, kernel, attrs, ctx):
    if len(node.inputs) != 2 or len(node.outputs) != 1:
        raise _Skip
    sa, ka = _act(node.inputs[0], ctx)
    sb, kb = _act(node.inputs[1], ctx)
    so, ko = _act(node.outputs[0], ctx)
    if not (ka == kb == ko) or not (sa.dims == sb.dims == so.dims) or not (sa.shape == sb.shape == so.shape):
        raise _Skip
    a, b, o = ctx.slot(node.inputs[0]), ctx.slot(node.inputs[1]), ctx.slot(node.outputs[0])
    pads = _pads(so, o)
    derived = _derived(node, kernel, attrs, ctx, ka, so)
    if derived is not None:
        return derived
    if ka == "fp16":
        ufunc = BINARY[node.op_type]
        if attrs.get("activation") is None:
            def run() -> None:
                ufunc(a, b, out=o, dtype=np.float32, casting="unsafe")
                _zero(pads)
            return run
        tmp = ctx.scratch(a.size)[:a.size].reshape(a.shape)

        def run_act() -> None:
            ufunc(a, b, out=tmp, dtype=np.float32)
            kernel_act(tmp)
            np.copyto(o, tmp, casting="unsafe")
            _zero(pads)
        from npurt.exec.kernels import apply_activation

        def kernel_act(t):
            apply_activation(t, attrs)
        return run_act
    # int8: a table over every pair of stored bytes
    ia, va = _values("int8", sa)
    _, vb = _values("int8", sb)
    y = kernel([np.repeat(va, 256), np.tile(vb, 256)], attrs)[0]
    table = _store("int8", y, so)
    au, bu, ou = _bits(a), _bits(b), _bits(o)
    index = np.empty(a.shape, np.uint16)

    def run8() -> None:
        np.left_shift(au, 8, out=index, dtype=np.uint16)
        np.bitwise_or(index, bu, out=index)
        np.take(table, index, out=ou, mode="clip")
        _zero(pads)
    return run8


def _derived(node, kernel, attrs, ctx, kind, so):
    """Binary ops whose two inputs are both functions of one stored tensor x — x itself or the output of a
    native unary table step on x (SiLU: Mul(x, Sigmoid(x))) — as one table over x's stored values. Exact: the
    other input's slot holds table[x] (written by that step; both stay live until this node), so the table
    gives the generic path's result for every x."""
    names = node.inputs[:2]
    roots = [ctx.tables[t][0] if t in ctx.tables else t for t in names]
    if roots[0] != roots[1] or roots[0] not in ctx.storage:
        return None
    sr = ctx.storage[roots[0]]
    if _kind(sr) != kind or sr.dims != so.dims or sr.shape != so.shape:
        return None
    _, vr = _values(kind, sr)
    args = []
    for t in names:
        if t == roots[0]:
            args.append(vr)
            continue
        bits = ctx.tables[t][1]
        st = ctx.storage[t]
        args.append(bits.view(np.float16).astype(np.float32) if kind == "fp16" else _dequant(bits.view(np.int8), st))
    y = kernel(args, attrs)[0]
    table = _store(kind, y, so)
    src, dst = _bits(ctx.slot(roots[0])), _bits(ctx.slot(node.outputs[0]))
    pads = _pads(so, ctx.slot(node.outputs[0]))

    def run() -> None:
        np.take(table, src, out=dst, mode="clip")
        _zero(pads)
    return run


def _same_storage_type(si, so) -> bool:
    """Stored values of `si` can be copied into `so` unchanged (same type, and same quantisation if int8)."""
    if si.dtype is not so.dtype or si.quantized != so.quantized:
        return False
    return not si.quantized or (si.scale == so.scale and si.zp == so.zp)


def _unpack_reshape(node, ctx):
    """Reshape/Flatten of an NC1HWC2 tensor into a plain (NCHW-ordered) slot: one same-type transposing copy of
    the C2 lanes into channel planes (no float32 round trip; the result is the NCHW data, reshaped)."""
    si, ki = _act(node.inputs[0], ctx)
    name = node.outputs[0] if len(node.outputs) == 1 else None
    if not name or name not in ctx.storage:
        raise _Skip
    so = ctx.storage[name]
    if so.layout in (Layout.NC1HWC2, Layout.NHWC) or tuple(so.dims) != tuple(so.shape) \
            or math.prod(so.shape) != math.prod(si.shape) or not _same_storage_type(si, so) or si.shape[0] != 1:
        raise _Skip
    _, c, h, w = si.shape
    c2 = si.dims[4]
    full, rem = divmod(c, c2)
    x = ctx.slot(node.inputs[0])[0]
    o = ctx.slot(name).reshape(-1)
    moves = []
    if full:
        moves.append((o[:full * c2 * h * w].reshape(full, c2, h * w), x[:full].reshape(full, h * w, c2).transpose(0, 2, 1)))
    if rem:
        moves.append((o[full * c2 * h * w:].reshape(rem, h * w), x[full, :, :, :rem].reshape(h * w, rem).T))

    def run() -> None:
        for d, src in moves:
            np.copyto(d, src)
    return run


def _resize_nearest(node, kernel, attrs, ctx):
    """Nearest Resize between NC1HWC2 slots (batch 1, channels kept): the source pixel of every output pixel is
    found at bind by running the Resize kernel itself on a probe whose values are pixel indices, then each run
    gathers whole C2 groups (16-byte items) per output pixel. Exact for every coordinate/nearest mode."""
    si, ki = _act(node.inputs[0], ctx)
    so, ko = _act(node.outputs[0], ctx)
    if ki != ko or si.shape[:2] != so.shape[:2] or si.dims[4] != so.dims[4] or si.dims[1] != so.dims[1] \
            or si.shape[0] != 1 or not _same_storage_type(si, so) or len(node.outputs) != 1:
        raise _Skip
    extra = []
    for t in node.inputs[1:]:
        if not t:
            extra.append(None)
        elif t in ctx.constants:
            extra.append(ctx.constants[t])
        else:
            raise _Skip
    _, c, h, w = si.shape
    if h * w >= 1 << 24:
        raise _Skip
    probe = np.broadcast_to(np.arange(h * w, dtype=np.float32).reshape(1, 1, h, w), si.shape)
    y = kernel([np.ascontiguousarray(probe)] + extra, attrs)[0]
    if tuple(y.shape) != tuple(so.shape) or not np.all(y == y[:, :1]):
        raise _Skip
    idx = y[0, 0].reshape(-1).astype(np.intp)
    c1, c2 = si.dims[1], si.dims[4]
    unit = np.dtype(f"V{c2 * si.dtype.numpy_dtype.itemsize}")
    src = ctx.slot(node.inputs[0])[0].reshape(c1, h * w, c2).view(unit)[..., 0]
    dst = ctx.slot(node.outputs[0])[0].reshape(c1, -1, c2).view(unit)[..., 0]

    def run() -> None:
        np.take(src, idx, axis=1, out=dst, mode="clip")
    return run


def _requant_table(si, so) -> np.ndarray | None:
    """None when int8 `si` and `so` share quantisation (a plain copy), else the 256-entry requantisation table."""
    if si.scale == so.scale and si.zp == so.zp:
        return None
    idx, vals = _values("int8", si)
    return _store("int8", vals, so)


def _concat(node, attrs, ctx):
    so, ko = _act(node.outputs[0], ctx)
    axis = int(attrs.get("axis", 0))
    if axis < 0:
        axis += 4
    ins = [t for t in node.inputs if t]
    if axis != 1 or so.shape[0] != 1:
        raise _Skip
    c2 = so.dims[4]
    o = ctx.slot(node.outputs[0])
    moves, c1 = [], 0
    for k, t in enumerate(ins):
        si, ki = _act(t, ctx)
        if ki != ko or si.dims[4] != c2 or si.shape[2:] != so.shape[2:] or (si.shape[1] % c2 and k != len(ins) - 1):
            raise _Skip
        n1 = -(-si.shape[1] // c2)
        table = _requant_table(si, so) if ko == "int8" else None
        moves.append((o[:, c1:c1 + n1], ctx.slot(t)[:, :n1], table))
        c1 += n1
    if sum(ctx.storage[t].shape[1] for t in ins) != so.shape[1]:
        raise _Skip
    pads = _pads(so, o)

    def run() -> None:
        for dst, src, table in moves:
            if table is None:
                np.copyto(dst, src)
            else:
                np.take(table, _bits(src), out=_bits(dst), mode="clip")
        _zero(pads)
    return run


def _split(node, ctx):
    si, ki = _act(node.inputs[0], ctx)
    c2 = si.dims[4]
    x = ctx.slot(node.inputs[0])
    if si.shape[0] != 1:
        raise _Skip
    moves, c1 = [], 0
    outs = [t for t in node.outputs if t]
    if len(outs) != len(node.outputs):
        raise _Skip
    for k, t in enumerate(outs):
        so, ko = _act(t, ctx)
        if ko != ki or so.dims[4] != c2 or so.shape[2:] != si.shape[2:] or so.shape[0] != 1:
            raise _Skip
        if so.shape[1] % c2 and k != len(outs) - 1:
            raise _Skip
        n1 = -(-so.shape[1] // c2)
        o = ctx.slot(t)
        moves.append((o[:, :n1], x[:, c1:c1 + n1], _requant_table(si, so) if ki == "int8" else None, _pads(so, o)))
        c1 += n1
    if sum(ctx.storage[t].shape[1] for t in outs) != si.shape[1]:
        raise _Skip

    def run() -> None:
        for dst, src, table, pads in moves:
            if table is None:
                np.copyto(dst, src)
            else:
                np.take(table, _bits(src), out=_bits(dst), mode="clip")
            _zero(pads)
    return run


# --- convolution -----------------------------------------------------------------------------------------------

def _conv_in(name: str, ctx: Context):
    """(storage, kind, 'nc1hwc2' | 'nhwc') of a conv input."""
    if not name or name not in ctx.storage or name in ctx.constants:
        raise _Skip
    st = ctx.storage[name]
    kind = _kind(st)
    if kind is not None:
        return st, kind, "nc1hwc2"
    if st.layout is Layout.NHWC and len(st.shape) == 4 and st.shape[0] == 1:
        if st.dtype is DType.FLOAT16 and not st.quantized:
            return st, "fp16", "nhwc"
        if st.dtype is DType.INT8 and st.quantized:
            return st, "int8", "nhwc"
    raise _Skip


def _conv(node, attrs, ctx):
    from npurt.exec.kernels.conv import _conv_geometry
    if len(node.outputs) != 1 or len(node.inputs) < 2:
        raise _Skip
    si, ki, lay = _conv_in(node.inputs[0], ctx)
    so, ko = _act(node.outputs[0], ctx)
    wname = node.inputs[1]
    bname = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    if wname not in ctx.constants or (bname is not None and bname not in ctx.constants) or ki != ko:
        raise _Skip
    w = np.asarray(ctx.constants[wname], np.float32)
    b = np.asarray(ctx.constants[bname], np.float32).reshape(-1) if bname else None
    if w.ndim != 4 or si.shape[0] != 1:
        raise _Skip
    kshape = list(attrs.get("kernel_shape") or w.shape[2:])
    if any(d != 1 for d in (attrs.get("dilations") or [1, 1])):
        raise _Skip
    strides, _, pb, pe, out = _conv_geometry(si.shape, kshape, attrs)
    if any(p < 0 for p in pb + pe) or list(so.shape[2:]) != list(out):
        raise _Skip
    act = attrs.get("activation")
    if act not in (None, "Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish"):
        raise _Skip
    group = int(attrs.get("group", 1))
    c, m = si.shape[1], w.shape[0]
    if group == 1:
        return _dense(node, attrs, ctx, si, ki, lay, so, w, b, kshape, strides, pb, pe, out)
    if group == c == m and w.shape[1] == 1 and lay == "nc1hwc2" and si.dims[4] == so.dims[4] \
            and si.dims[1] == so.dims[1]:
        return _depthwise(node, attrs, ctx, si, ki, so, w, b, kshape, strides, pb, pe, out)
    raise _Skip


def _fold_act(attrs, inv: float, zp: float) -> tuple[float, float] | None:
    """Bounds (lo, hi) in the quantised domain that apply the fused activation and int8 saturation at once;
    None when the activation is not a clamp."""
    act = attrs.get("activation")
    lo, hi = -128.0, 127.0
    if act is None:
        return lo, hi
    if act == "Relu":
        return max(lo, zp), hi
    if act == "Clip":
        p = attrs.get("activation_params") or (None, None)
        a, z = p[0], p[1]
        if a is not None:
            lo = max(lo, a * inv + zp)
        if z is not None:
            hi = min(hi, z * inv + zp)
        return lo, hi
    return None


def _requantize(y: np.ndarray, attrs, bounds: tuple[float, float] | None, inv, zp) -> None:
    """In place, an int8 conv result to its stored codes: one clamp when `_fold_act` folded the activation into the
    quantised domain (`bounds`), else the activation, scale and zero point, saturation; then rounding."""
    if bounds is not None:
        np.clip(y, bounds[0], bounds[1], out=y)
    else:
        from npurt.exec.kernels import apply_activation
        apply_activation(y, attrs)
        np.multiply(y, inv, out=y)
        np.add(y, zp, out=y)
        np.clip(y, -128, 127, out=y)
    np.rint(y, out=y)


def _input_filler(si, lay, x: np.ndarray, interior: np.ndarray, as_nhwc: bool):
    """A function writing the conv input slot `x` as float32 into `interior` (NHWC (H, W, C1*C2 | C) when
    `as_nhwc`, else native (C1, H, W, C2)): a casting copy. int8 values stay quantised (the conv folds the input
    scale into its weights and the zero point into its bias; the padded border holds the zero point)."""
    h, w = si.shape[2], si.shape[3]
    if lay == "nhwc":
        src = x[0, :, :w, :]
    elif as_nhwc:
        c1, c2 = si.dims[1], si.dims[4]
        src = x[0].transpose(1, 2, 0, 3)
        interior = interior.reshape(h, w, c1, c2)
    else:
        src = x[0]
    return lambda: np.copyto(interior, src, casting="unsafe")


def _fold_input(si, ki, wm: np.ndarray, bias: np.ndarray, axis) -> float:
    """int8 input: fold its dequantisation (q - zp) * s into the weights (in place, x s) and the bias (in place,
    - s * zp * sum of each output's weights); returns the float value of the padding border (zp, or 0)."""
    if ki != "int8":
        return 0.0
    s, zp = float(si.scale), float(si.zp)
    bias -= np.float32(s * zp) * wm.sum(axis=axis, dtype=np.float64).astype(np.float32)
    wm *= np.float32(s)
    return zp


def _dense(node, attrs, ctx, si, ki, lay, so, w, b, kshape, strides, pb, pe, out):
    from npurt.exec.kernels import apply_activation
    h, wd = si.shape[2], si.shape[3]
    kh, kw = kshape
    ho, wo = out
    sh, sw = strides
    cp = si.dims[1] * si.dims[4] if lay == "nc1hwc2" else si.dims[3]
    c = si.shape[1]
    m = so.shape[1]
    o1, o2 = so.dims[1], so.dims[4]
    mp = o1 * o2
    # weights (M, C, kh, kw) -> (kh, kw, Cp, Mp), zero rows for padding input lanes and zero padding outputs
    wm = np.zeros((kh, kw, cp, mp), np.float32)
    wm[:, :, :c, :m] = w.transpose(2, 3, 1, 0)
    bias = np.zeros(mp, np.float32)
    if b is not None:
        bias[:m] = b
    border = _fold_input(si, ki, wm, bias, (0, 1, 2))
    quant = None
    if ko_int8 := (so.dtype is DType.INT8):
        inv, zp = 1.0 / so.scale, float(so.zp)
        quant = _fold_act(attrs, inv, zp)
        if quant is not None:                       # fold the output quantisation into weights and bias
            wm *= np.float32(inv)
            bias = bias * np.float32(inv) + np.float32(zp)
    wm = np.ascontiguousarray(wm.reshape(kh * kw * cp, mp))
    hp, wp = h + pb[0] + pe[0], wd + pb[1] + pe[1]
    direct = kh == kw == 1 and sh == sw == 1 and not any(pb + pe)
    x = ctx.slot(node.inputs[0])
    xp = ctx.padded((hp, wp, cp))
    edges = [e for e in (xp[:pb[0]], xp[pb[0] + h:], xp[pb[0]:pb[0] + h, :pb[1]], xp[pb[0]:pb[0] + h, pb[1] + wd:])
             if e.size]
    fill = _input_filler(si, lay, x, xp[pb[0]:pb[0] + h, pb[1]:pb[1] + wd, :c if lay == "nhwc" else cp],
                         as_nhwc=True)
    k = kh * kw * cp
    taps = []
    if not direct:
        cols = ctx.scratch2(ho * wo * k)[:ho * wo * k].reshape(ho, wo, kh, kw, cp)
        for dy in range(kh):
            for dx in range(kw):
                taps.append((cols[:, :, dy, dx, :], xp[dy:dy + sh * (ho - 1) + 1:sh, dx:dx + sw * (wo - 1) + 1:sw]))
        a2 = cols.reshape(ho * wo, k)
    else:
        a2 = xp.reshape(ho * wo, k)
    y = ctx.scratch(ho * wo * mp)[:ho * wo * mp].reshape(ho * wo, mp)
    o = ctx.slot(node.outputs[0])
    # store: cast (or round) contiguously into a stored-type scratch, then move whole C2 groups (NHWC ->
    # NC1HWC2) as single 16-byte items: 3x faster than one casting transpose
    stored = ctx.typed_scratch(so.dtype.numpy_dtype, ho * wo * mp).reshape(ho * wo, mp)
    unit = np.dtype(f"V{o2 * stored.itemsize}")
    dst = o[0].reshape(o1, ho * wo, o2).view(unit)[..., 0]
    src = stored.view(unit).reshape(ho * wo, o1).T
    pads = _pads(so, o)
    lohi = quant
    out_inv, out_zp = (np.float32(1.0 / so.scale), np.float32(so.zp)) if ko_int8 else (None, None)

    def run() -> None:
        for e in edges:
            e.fill(border)
        fill()
        for d, s in taps:
            np.copyto(d, s)
        np.matmul(a2, wm, out=y)
        np.add(y, bias, out=y)
        if ko_int8:
            _requantize(y, attrs, lohi, out_inv, out_zp)
        else:
            apply_activation(y, attrs)
        np.copyto(stored, y, casting="unsafe")
        np.copyto(dst, src)
        _zero(pads)
    return run


def _depthwise(node, attrs, ctx, si, ki, so, w, b, kshape, strides, pb, pe, out):
    from npurt.exec.kernels import apply_activation
    h, wd = si.shape[2], si.shape[3]
    kh, kw = kshape
    ho, wo = out
    sh, sw = strides
    c1, c2 = si.dims[1], si.dims[4]
    c = si.shape[1]
    hp, wp = h + pb[0] + pe[0], wd + pb[1] + pe[1]
    wq = -(-wp // sw)                                 # padded columns per phase
    # per-tap weights tiled along W: wt[t, c1, 1, wo, c2]
    wc = np.zeros((c1 * c2, kh * kw), np.float32)
    wc[:c] = w.reshape(c, kh * kw)
    bias = np.zeros(c1 * c2, np.float32)
    if b is not None:
        bias[:c] = b
    border = _fold_input(si, ki, wc, bias, 1)
    wt = np.ascontiguousarray(np.broadcast_to(wc.reshape(c1, c2, kh * kw).transpose(2, 0, 1)[:, :, None, None, :],
                                              (kh * kw, c1, 1, wo, c2)))
    bt = np.ascontiguousarray(np.broadcast_to(bias.reshape(c1, 1, 1, c2), (c1, 1, wo, c2)))
    # phase-split padded input: xph[c1, row, phase, j, c2] = padded[c1, row, j * sw + phase, c2]
    xph = ctx.padded((c1, hp, sw, wq, c2))
    edges = [xph[:, :pb[0]], xph[:, pb[0] + h:]]
    x = ctx.slot(node.inputs[0])[0]
    fills = []
    for p in range(sw):
        w0 = (p - pb[1]) % sw                        # first input column with (w + pad) % sw == p
        if w0 >= wd:
            edges.append(xph[:, pb[0]:pb[0] + h, p])
            continue
        cnt = len(range(w0, wd, sw))
        j0 = (w0 + pb[1]) // sw
        edges += [xph[:, pb[0]:pb[0] + h, p, :j0], xph[:, pb[0]:pb[0] + h, p, j0 + cnt:]]
        interior = xph[:, pb[0]:pb[0] + h, p, j0:j0 + cnt, :]
        fills.append(_input_filler(si, "nc1hwc2", x[None, :, :, w0::sw, :], interior, as_nhwc=False))
    int8 = so.dtype is DType.INT8
    quant = _fold_act(attrs, 1.0 / so.scale, float(so.zp)) if int8 else None
    if quant is not None:
        wt *= np.float32(1.0 / so.scale)
        bt = bt * np.float32(1.0 / so.scale) + np.float32(so.zp)
    o = ctx.slot(node.outputs[0])[0]
    acc_all = ctx.scratch(c1 * ho * wo * c2)[:c1 * ho * wo * c2].reshape(c1, ho, wo, c2)
    tmp_all = ctx.scratch2(_BLOCK + wo * c2)
    # blocks: (c1 range, row range) of about _BLOCK floats
    row = wo * c2
    blocks = []
    if ho * row >= _BLOCK:
        rows = max(1, _BLOCK // row)
        for k1 in range(c1):
            for r0 in range(0, ho, rows):
                blocks.append((k1, k1 + 1, r0, min(ho, r0 + rows)))
    else:
        per = max(1, _BLOCK // (ho * row))
        for k1 in range(0, c1, per):
            blocks.append((k1, min(c1, k1 + per), 0, ho))
    plan = []
    for a1, b1, r0, r1 in blocks:
        acc = acc_all[a1:b1, r0:r1]
        tmp = tmp_all[:acc.size].reshape(acc.shape)
        tap_srcs = []
        for dy in range(kh):
            for dx in range(kw):
                rs = dy + sh * r0
                src = xph[a1:b1, rs:rs + sh * (r1 - r0 - 1) + 1:sh, dx % sw, dx // sw:dx // sw + wo, :]
                tap_srcs.append((src, wt[dy * kw + dx, a1:b1]))
        plan.append((acc, tmp, tap_srcs, bt[a1:b1], o[a1:b1, r0:r1]))
    pads = _pads(so, ctx.slot(node.outputs[0]))
    inv, zp = np.float32(1.0 / so.scale), np.float32(so.zp)

    edges = [e for e in edges if e.size]

    def run() -> None:
        for e in edges:
            e.fill(border)
        for f in fills:
            f()
        for acc, tmp, tap_srcs, bb, dst in plan:
            (s0, w0_), rest = tap_srcs[0], tap_srcs[1:]
            np.multiply(s0, w0_, out=acc)
            for s, wv in rest:
                np.multiply(s, wv, out=tmp)
                np.add(acc, tmp, out=acc)
            np.add(acc, bb, out=acc)
            if int8:
                _requantize(acc, attrs, quant, inv, zp)
            else:
                apply_activation(acc, attrs)
            np.copyto(dst, acc, casting="unsafe")
        _zero(pads)
    return run
