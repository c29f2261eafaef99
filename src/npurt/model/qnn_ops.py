"""The QNN op translations (package "qti.aisw"): each op config onto IR nodes with ONNX semantics.

QNN's conventions (the op definitions): 4-D activations NHWC; convolution weights HWIO ([kh, kw, cin/group, cout];
depthwise [kh, kw, 1, cout]; transpose-conv [kh, kw, cin, cout/group]); pads as [[begin, end], ...] tensors. Spatial
ops read the NCHW form of their input; elementwise ops keep whichever form their inputs have. `OPS` is the table.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from npurt.model.qnn_graph import STATIC, TO_NCHW, IrBuilder, QnnOp, bad_value, invalid, unsupported

_AXIS_NCHW = {0: 0, 1: 2, 2: 3, 3: 1}       # an NHWC axis -> the same axis of the NCHW form
_BIG = np.iinfo(np.int64).max


# ---------------------------------------------------------------------------------------------------------
# params
# ---------------------------------------------------------------------------------------------------------
def _param(op: QnnOp, name: str, default: Any = None, *, shape: tuple | None = None, required: bool = False) -> Any:
    """Param `name` of `op`: a scalar as a Python number, a tensor param as an int64 / float array of `shape`
    (-1 = any length); INVALID_ARGUMENT when missing (if required) or of the wrong shape."""
    if name not in op.params:
        if required:
            raise invalid(f"param {name!r} is required")
        return default
    value = op.params[name]
    if shape is None:
        if isinstance(value, np.ndarray):
            if value.size != 1:
                raise invalid(f"param {name!r} must be a scalar, got a tensor of shape {list(value.shape)}")
            value = value.reshape(()).item()
        return value
    arr = np.asarray(value)
    if arr.ndim != len(shape) or any(want not in (-1, got) for want, got in zip(shape, arr.shape)):
        want = "x".join("n" if d == -1 else str(d) for d in shape)
        raise invalid(f"param {name!r} must be a {want} tensor, got shape {list(arr.shape)}")
    return arr


def _whole(value: Any, name: str) -> np.ndarray:
    """The int64 values of a param the op definitions type as integer (scalar or tensor, given as any QNN type);
    `bad_value` for NaN, inf, a fraction or a value beyond int64, which no integer param can be."""
    arr = np.asarray(value)
    if arr.dtype.kind == "f" and not (np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))
                                     and np.all(np.abs(arr) < 2.0 ** 62)) \
            or arr.dtype.kind == "u" and np.any(arr > _BIG) or arr.dtype.kind not in "biuf":
        raise bad_value(f"param {name!r} must be whole numbers, got {arr.reshape(-1)[:8].tolist()}")
    return arr.astype(np.int64)


def _int(op: QnnOp, name: str, default: Any = None, *, required: bool = False) -> int:
    """Scalar integer param `name` (see `_whole`); `default` when absent."""
    value = _param(op, name, default, required=required)
    return value if value is None else int(_whole(value, name))


def _float(op: QnnOp, name: str, default: Any = None, *, required: bool = False) -> float:
    """Scalar real param `name`; `bad_value` for NaN (no op definition takes one)."""
    value = float(_param(op, name, default, required=required))
    if np.isnan(value):
        raise bad_value(f"param {name!r} is NaN")
    return value


def _ints(op: QnnOp, name: str, n: int, default: int) -> list[int]:
    arr = _param(op, name, None, shape=(n,))
    return [default] * n if arr is None else _whole(arr, name).tolist()


def _pads2d(op: QnnOp) -> list[int]:
    pad = _param(op, "pad_amount", None, shape=(2, 2))
    if pad is None:
        return [0, 0, 0, 0]
    pad = _whole(pad, "pad_amount")
    return [int(pad[0, 0]), int(pad[1, 0]), int(pad[0, 1]), int(pad[1, 1])]


def _arity(op: QnnOp, n_in: tuple[int, int], n_out: int = 1) -> None:
    lo, hi = n_in
    if not lo <= len(op.inputs) <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        raise invalid(f"takes {want} inputs, got {len(op.inputs)}")
    if n_out >= 0 and len(op.outputs) != n_out:
        raise invalid(f"has {n_out} output(s), got {len(op.outputs)}")


# ---------------------------------------------------------------------------------------------------------
# the ops
# ---------------------------------------------------------------------------------------------------------
def _conv(b: IrBuilder, op: QnnOp, kind: str) -> None:
    _arity(op, (2, 3))
    x, out = op.inputs[0], op.outputs[0]
    w = b.static(op.inputs[1], "the weight")
    if w.ndim != 4:
        raise invalid(f"weight must be 4-D [kh, kw, cin, cout], got {list(w.shape)}")
    cin = b.tensor(x).dims[3] if len(b.tensor(x).dims) == 4 else 0
    if kind == "transpose":
        weight = np.ascontiguousarray(w.transpose(2, 3, 0, 1))         # [kh,kw,cin,cout/g] -> [cin,cout/g,kh,kw]
        group = _int(op, "group", 1)
        attrs = dict(strides=_ints(op, "stride", 2, 1), pads=_pads2d(op), group=group,
                     output_padding=_ints(op, "output_padding", 2, 0), kernel_shape=list(w.shape[:2]))
        op_type = "ConvTranspose"
    else:
        weight = np.ascontiguousarray(w.transpose(3, 2, 0, 1))         # HWIO -> OIHW
        group = cin if kind == "depthwise" else _int(op, "group", 1)
        if kind == "depthwise" and w.shape[2] != 1:
            raise invalid(f"depthwise weight must be [kh, kw, 1, cout], got {list(w.shape)}")
        attrs = dict(strides=_ints(op, "stride", 2, 1), pads=_pads2d(op), dilations=_ints(op, "dilation", 2, 1),
                     group=group, kernel_shape=list(w.shape[:2]))
        op_type = "Conv"
    inputs = [b.as_nchw(x), b.weight(f"{op.name}.weight", op.inputs[1], weight, 3)]
    if len(op.inputs) == 3 and op.inputs[2]:
        cout = w.shape[3] * (group if kind == "transpose" else 1)
        inputs.append(b.const(f"{op.name}.bias", _bias(b, op.inputs[2], cout)))
    b.add(op_type, inputs, [b.produce_nchw(out)], **attrs)


def _bias(b: IrBuilder, name: str, n: int) -> np.ndarray:
    """The float32 values of bias tensor `name`, which the op definitions give as [n] (one per output channel)."""
    bias = b.static(name, "the bias")
    if bias.shape != (n,):
        raise invalid(f"bias {name!r} must be [{n}] (one value per output channel), it has dims {list(bias.shape)}")
    return bias.astype(np.float32)


def _pool(b: IrBuilder, op: QnnOp, op_type: str) -> None:
    _arity(op, (1, 1))
    attrs: dict[str, Any] = dict(kernel_shape=_ints(op, "filter_size", 2, 1), strides=_ints(op, "stride", 2, 1),
                                 pads=_pads2d(op), ceil_mode=_int(op, "rounding_mode", 0))
    pads, kernel = attrs["pads"], attrs["kernel_shape"]
    if any(p >= kernel[k % 2] for k, p in enumerate(pads)):
        raise invalid(f"pad_amount {pads} must be smaller than filter_size {kernel} (a window would hold only "
                      f"padding)")
    if op_type == "AveragePool":
        attrs["count_include_pad"] = int(bool(_param(op, "count_pad_for_edges", 0)))
    b.add(op_type, [b.as_nchw(op.inputs[0])], [b.produce_nchw(op.outputs[0])], **attrs)


def _broadcast_nchw(value: np.ndarray) -> np.ndarray:
    """A constant that broadcasts against an NHWC tensor, as it broadcasts against its NCHW form."""
    v = value.reshape((1,) * (4 - value.ndim) + value.shape) if value.ndim < 4 else value
    return np.ascontiguousarray(v.transpose(TO_NCHW))


def _elementwise(b: IrBuilder, op: QnnOp, op_type: str, extra: Sequence[np.ndarray] = (), **attrs: Any) -> None:
    """An elementwise op: in NCHW when every non-static input is 4-D and already has its NCHW form (so chains of
    convolutions and activations stay NCHW), else as given. `extra`: constant inputs appended."""
    out = op.outputs[0]
    live = [n for n in op.inputs if b.tensor(n).kind != STATIC]
    nchw = bool(live) and len(b.tensor(out).dims) == 4 and all(
        len(b.tensor(n).dims) == 4 and n in b.nchw for n in live) and all(
        b.tensor(n).values().ndim <= 4 for n in op.inputs if b.tensor(n).kind == STATIC)
    ins = []
    for n in op.inputs:
        t = b.tensor(n)
        if nchw:
            ins.append(b.nchw[n] if t.kind != STATIC else b.const(n, _broadcast_nchw(t.values())))
        else:
            ins.append(b.value(n))
    for k, value in enumerate(extra):
        ins.append(b.const(f"{op.name}.c{k}", value))
    b.add(op_type, ins, [b.produce_nchw(out) if nchw else b.produce(out)], **attrs)


_BINARY = {"ElementWiseAdd": "Add", "ElementWiseSubtract": "Sub", "ElementWiseMultiply": "Mul",
           "ElementWiseDivide": "Div", "ElementWiseMaximum": "Max", "ElementWiseMinimum": "Min",
           "ElementWisePower": "Pow"}
_BINARY_OPERATION = {0: "Add", 2: "Div", 10: "Max", 11: "Min", 13: "Mul", 16: "Pow", 18: "Sub"}
_UNARY = {"Relu": "Relu", "Sigmoid": "Sigmoid", "Tanh": "Tanh", "Gelu": "Gelu", "HardSwish": "HardSwish",
          "ElementWiseExp": "Exp", "ElementWiseAbs": "Abs", "ElementWiseNeg": "Neg", "ElementWiseSquareRoot": "Sqrt",
          "ElementWiseLog": "Log", "ElementWiseFloor": "Floor", "ElementWiseCeil": "Ceil", "ElementWiseSin": "Sin",
          "ElementWiseCos": "Cos", "ElementWiseAsin": "Asin", "ElementWiseAtan": "Atan", "ElementWiseRound": "Round",
          "ElementWiseSign": "Sign"}
# ElementWiseUnary `operation` values (QNN op definitions) -> ONNX op
_UNARY_OPERATION = {0: "Abs", 1: "Asin", 2: "Atan", 3: "Ceil", 4: "Cos", 5: "Exp", 6: "Floor", 7: "Log", 8: "Neg",
                    10: "Reciprocal", 11: "Round", 13: "Sign", 14: "Sin", 15: "Sqrt"}
# ElementWiseNeuron `operation` values (QNN op definitions)
_NEURON_ELU, _NEURON_GELU, _NEURON_HARD_SIGMOID, _NEURON_HARD_SWISH, _NEURON_RELU, _NEURON_RELU_MIN_MAX, \
    _NEURON_SIGMOID, _NEURON_SOFTPLUS, _NEURON_TANH = range(9)


def _binary(b: IrBuilder, op: QnnOp, op_type: str) -> None:
    _arity(op, (2, 2))
    _elementwise(b, op, op_type)


def _unary(b: IrBuilder, op: QnnOp, op_type: str, **attrs: Any) -> None:
    _arity(op, (1, 1))
    _elementwise(b, op, op_type, **attrs)


def _clip(b: IrBuilder, op: QnnOp, lo: float, hi: float) -> None:
    _arity(op, (1, 1))
    _elementwise(b, op, "Clip", [np.array(lo, np.float32), np.array(hi, np.float32)])


def _neuron(b: IrBuilder, op: QnnOp) -> None:
    operation = _int(op, "operation", required=True)
    if operation == _NEURON_ELU:
        _unary(b, op, "Elu", alpha=_float(op, "alpha", 1.0))
    elif operation == _NEURON_GELU:
        _unary(b, op, "Gelu")
    elif operation == _NEURON_HARD_SIGMOID:
        _unary(b, op, "HardSigmoid", alpha=_float(op, "alpha", 0.2), beta=_float(op, "beta", 0.5))
    elif operation == _NEURON_HARD_SWISH:
        _unary(b, op, "HardSwish")
    elif operation == _NEURON_RELU:
        _unary(b, op, "Relu")
    elif operation == _NEURON_RELU_MIN_MAX:
        _clip(b, op, _float(op, "min_value", 0.0), _float(op, "max_value", required=True))
    elif operation == _NEURON_SIGMOID:
        _unary(b, op, "Sigmoid")
    elif operation == _NEURON_SOFTPLUS:
        _unary(b, op, "Softplus")
    elif operation == _NEURON_TANH:
        _unary(b, op, "Tanh")
    else:
        raise unsupported(f"ElementWiseNeuron operation {operation} is not supported")


def _prelu(b: IrBuilder, op: QnnOp) -> None:
    _arity(op, (2, 2))
    b.static(op.inputs[1], "the slope")
    _elementwise(b, op, "PRelu")


def _transpose(b: IrBuilder, op: QnnOp) -> None:
    _arity(op, (1, 1))
    rank = len(b.tensor(op.inputs[0]).dims)
    perm = _whole(_param(op, "perm", shape=(rank,), required=True), "perm").tolist()
    if sorted(perm) != list(range(rank)):
        raise invalid(f"param 'perm' {perm} is not a permutation of {rank} axes")
    b.add("Transpose", [b.value(op.inputs[0])], [b.produce(op.outputs[0])], perm=perm)


def _reshape_to(b: IrBuilder, op: QnnOp, src: str, src_dims: Sequence[int], what: str = "the op") -> None:
    """IR tensor `src` (of dims `src_dims`) reshaped into the op's output; INVALID_ARGUMENT when the output's
    declared dims hold another number of values."""
    out = op.outputs[0]
    dims = b.tensor(out).dims
    if int(np.prod(src_dims, dtype=np.int64)) != int(np.prod(dims, dtype=np.int64)):
        raise invalid(f"output {out!r} is declared with dims {list(dims)}, {what} gives {list(src_dims)} "
                      f"({int(np.prod(src_dims, dtype=np.int64))} values)")
    b.add("Reshape", [src, b.const(f"{op.name}.shape", np.array(dims, np.int64))], [b.produce(out)])


def _reshape(b: IrBuilder, op: QnnOp) -> None:
    _arity(op, (1, 2))
    _reshape_to(b, op, b.value(op.inputs[0]), b.tensor(op.inputs[0]).dims, "its input")


def _axis(op: QnnOp, rank: int, name: str = "axis", default: int | None = None) -> int:
    axis = _int(op, name, default, required=default is None)
    if not -rank <= axis < rank:
        raise invalid(f"param {name!r} {axis} is out of range for rank {rank}")
    return axis % rank


def _axes(op: QnnOp, rank: int, default: Any = None) -> list[int]:
    """Tensor param "axes": distinct axes of a rank-`rank` tensor, sorted, each in [-rank, rank)."""
    axes = _whole(_param(op, "axes", default, shape=(-1,), required=default is None), "axes").tolist()
    if not axes or any(not -rank <= a < rank for a in axes):
        raise invalid(f"param 'axes' {axes} is not a list of axes of a rank-{rank} tensor")
    return sorted({a % rank for a in axes})


def _concat(b: IrBuilder, op: QnnOp) -> None:
    if not op.inputs or len(op.outputs) != 1:
        raise invalid("takes 1 or more inputs and has 1 output")
    rank = len(b.tensor(op.outputs[0]).dims)
    axis = _axis(op, rank, default=rank - 1)
    if rank == 4 and all(n in b.nchw for n in op.inputs):
        b.add("Concat", [b.nchw[n] for n in op.inputs], [b.produce_nchw(op.outputs[0])], axis=_AXIS_NCHW[axis])
    else:
        b.add("Concat", [b.value(n) for n in op.inputs], [b.produce(op.outputs[0])], axis=axis)


def _split(b: IrBuilder, op: QnnOp) -> None:
    _arity(op, (1, 1), -1)
    dims = b.tensor(op.inputs[0]).dims
    axis = _axis(op, len(dims))
    index = _param(op, "split_index", None, shape=(-1,))
    starts = [0] + (_whole(index, "split_index").tolist() if index is not None else [])
    if len(starts) != len(op.outputs):
        raise invalid(f"param 'split_index' has {len(starts) - 1} entries for {len(op.outputs)} outputs")
    ends = starts[1:] + [dims[axis]]
    sizes = [e - s for s, e in zip(starts, ends)]
    if any(s <= 0 for s in sizes):
        raise invalid(f"param 'split_index' {starts[1:]} does not split an axis of {dims[axis]}")
    b.add("Split", [b.value(op.inputs[0]), b.const(f"{op.name}.split", np.array(sizes, np.int64))],
          [b.produce(o) for o in op.outputs], axis=axis)


def _strided_slice(b: IrBuilder, op: QnnOp) -> None:
    _arity(op, (1, 1))
    dims = b.tensor(op.inputs[0]).dims
    ranges = _whole(_param(op, "ranges", shape=(len(dims), 3), required=True), "ranges")
    if _int(op, "new_axes_mask", 0):
        raise unsupported("StridedSlice with new_axes_mask is not supported")
    begin_mask, end_mask = _int(op, "begin_mask", 0), _int(op, "end_mask", 0)
    starts, ends, steps = [], [], []
    for i, (s, e, st) in enumerate(ranges.tolist()):
        if st == 0:
            raise invalid(f"param 'ranges': axis {i} has stride 0")
        starts.append((0 if st > 0 else _BIG) if begin_mask >> i & 1 else s)
        ends.append((_BIG if st > 0 else -_BIG) if end_mask >> i & 1 else e)
        steps.append(st)
    src = b.value(op.inputs[0])
    # how many values the slice keeps per axis (Python's slicing clamps begin / end as ONNX Slice does)
    got = [len(range(*slice(s, e, st).indices(d))) for s, e, st, d in zip(starts, ends, steps, dims)]
    sliced = b.fresh(f"{op.name}.slice", got, like=op.outputs[0])
    b.infos[sliced].shape = None                   # inferred by the compiler's shape rules
    consts = [b.const(f"{op.name}.{k}", np.array(v, np.int64)) for k, v in
              (("starts", starts), ("ends", ends), ("axes", list(range(len(dims)))), ("steps", steps))]
    b.add("Slice", [src] + consts, [sliced])
    _reshape_to(b, op, sliced, got, "the slice")


def _gather(b: IrBuilder, op: QnnOp) -> None:
    _arity(op, (2, 2))
    dims = b.tensor(op.inputs[0]).dims
    axis = _axis(op, len(dims), default=0)
    idx = b.tensor(op.inputs[1])
    if idx.is_float or np.dtype(idx.dtype).kind not in "iu":
        raise invalid(f"indices {op.inputs[1]!r} must be INT_32 / UINT_32 / INT_64, not {idx.dtype}"
                      f"{' (fixed point)' if idx.quantized else ''}")
    if idx.kind == STATIC:
        values = b.static(op.inputs[1], "indices").astype(np.int64)
        bad = values[(values < -dims[axis]) | (values >= dims[axis])]
        if bad.size:
            raise invalid(f"index {int(bad[0])} is out of range for axis {axis} of size {dims[axis]}")
        indices = b.const(op.inputs[1], values)
    else:
        indices = b.value(op.inputs[1])
    b.add("Gather", [b.value(op.inputs[0]), indices], [b.produce(op.outputs[0])], axis=axis)


_PAD_MODES = {0: "constant", 2: "reflect", 3: "edge"}


def _pad(b: IrBuilder, op: QnnOp) -> None:
    _arity(op, (1, 1))
    x = b.tensor(op.inputs[0])
    amounts = _whole(_param(op, "pad_amount", shape=(len(x.dims), 2), required=True), "pad_amount")
    scheme = _int(op, "scheme", 0)
    if scheme not in _PAD_MODES:
        raise unsupported(f"Pad scheme {scheme} (mirror-symmetric) is not supported")
    value = _float(op, "pad_constant_value", 0.0)
    if x.quant is not None and x.quant.axis is None:       # a quantized tensor's pad value is a stored value
        value = float(x.quant.dequantize(np.array(value)))
    pads = np.concatenate([amounts[:, 0], amounts[:, 1]])
    b.add("Pad", [b.value(op.inputs[0]), b.const(f"{op.name}.pads", pads),
                  b.const(f"{op.name}.value", np.array(value, np.float32))], [b.produce(op.outputs[0])],
          mode=_PAD_MODES[scheme])


def _resize(b: IrBuilder, op: QnnOp, mode: str) -> None:
    _arity(op, (1, 1))
    align, half = bool(_param(op, "align_corners", 0)), bool(_param(op, "half_pixel_centers", 0))
    if align and half:
        raise invalid("align_corners and half_pixel_centers are exclusive")
    ctm = "align_corners" if align else "half_pixel" if half else "asymmetric"
    attrs: dict[str, Any] = dict(mode=mode, coordinate_transformation_mode=ctm)
    if mode == "nearest":
        attrs["nearest_mode"] = "floor" if ctm == "asymmetric" else "round_prefer_ceil"
    out_dims = b.tensor(op.outputs[0]).dims
    if len(out_dims) != 4:
        raise invalid(f"output {op.outputs[0]!r} must be 4-D (NHWC), it has dims {list(out_dims)}")
    sizes = np.array([out_dims[i] for i in TO_NCHW], np.int64)
    b.add("Resize", [b.as_nchw(op.inputs[0]), "", "", b.const(f"{op.name}.sizes", sizes)],
          [b.produce_nchw(op.outputs[0])], **attrs)


def _reduce(b: IrBuilder, op: QnnOp, op_type: str) -> None:
    _arity(op, (1, 1))
    rank = len(b.tensor(op.inputs[0]).dims)
    axes = _axes(op, rank)
    keepdims = int(bool(_param(op, "keep_dims", 0)))
    if op_type == "ReduceSum":                      # at the IR's opset ReduceSum takes its axes as an input
        b.add(op_type, [b.value(op.inputs[0]), b.const(f"{op.name}.axes", np.array(axes, np.int64))],
              [b.produce(op.outputs[0])], keepdims=keepdims)
    else:
        b.add(op_type, [b.value(op.inputs[0])], [b.produce(op.outputs[0])], axes=axes, keepdims=keepdims)


def _fully_connected(b: IrBuilder, op: QnnOp) -> None:
    _arity(op, (2, 3))
    w = b.static(op.inputs[1], "the weight")
    if w.ndim != 2:
        raise invalid(f"weight must be [units, inputs], got {list(w.shape)}")
    x = b.tensor(op.inputs[0])
    if int(np.prod(x.dims)) % w.shape[1]:
        raise invalid(f"input dims {list(x.dims)} do not flatten to rows of {w.shape[1]}")
    flat = b.fresh(f"{op.name}.flat", [int(np.prod(x.dims)) // w.shape[1], w.shape[1]], like=op.inputs[0])
    b.add("Reshape", [b.value(op.inputs[0]), b.const(f"{op.name}.rows", np.array(b.infos[flat].shape, np.int64))],
          [flat])
    ins = [flat, b.weight(f"{op.name}.weight", op.inputs[1], np.ascontiguousarray(w), 0)]
    if len(op.inputs) == 3 and op.inputs[2]:
        ins.append(b.const(f"{op.name}.bias", _bias(b, op.inputs[2], w.shape[0])))
    rows = [b.infos[flat].shape[0], w.shape[0]]
    prod = b.fresh(f"{op.name}.gemm", rows, like=op.outputs[0])
    b.add("Gemm", ins, [prod], transB=1)
    _reshape_to(b, op, prod, rows, "the product")


def _matmul(b: IrBuilder, op: QnnOp) -> None:
    _arity(op, (2, 3))
    ins = []
    for k, flag in enumerate(("transpose_in0", "transpose_in1")):
        name = op.inputs[k]
        t = b.tensor(name)
        src = b.value(name)
        if bool(_param(op, flag, 0)):
            rank = len(t.dims)
            if rank < 2:
                raise invalid(f"{flag} needs input {name!r} of rank 2 or more, it has dims {list(t.dims)}")
            perm = list(range(rank - 2)) + [rank - 1, rank - 2]
            dst = b.fresh(f"{name}.T", [t.dims[p] for p in perm], like=name)
            b.add("Transpose", [src], [dst], perm=perm)
            src = dst
        ins.append(src)
    if len(op.inputs) == 3 and op.inputs[2]:
        mid = b.fresh(f"{op.name}.mm", ())
        b.infos[mid].shape = None                   # the product's dims (before the bias broadcasts): inferred
        b.add("MatMul", ins, [mid])
        b.add("Add", [mid, b.value(op.inputs[2])], [b.produce(op.outputs[0])])
    else:
        b.add("MatMul", ins, [b.produce(op.outputs[0])])


def _softmax(b: IrBuilder, op: QnnOp) -> None:
    _arity(op, (1, 1))
    rank = len(b.tensor(op.inputs[0]).dims)
    axis = _axis(op, rank, default=rank - 1)
    beta = _float(op, "beta", 1.0)
    src = b.value(op.inputs[0])
    if beta != 1.0:
        scaled = b.fresh(f"{op.name}.beta", b.tensor(op.inputs[0]).dims)
        b.add("Mul", [src, b.const(f"{op.name}.b", np.array(beta, np.float32))], [scaled])
        src = scaled
    b.add("Softmax", [src], [b.produce(op.outputs[0])], axis=axis)


def _layer_norm(b: IrBuilder, op: QnnOp) -> None:
    _arity(op, (2, 3))
    rank = len(b.tensor(op.inputs[0]).dims)
    axes = _axes(op, rank, np.array([rank - 1]))
    if axes != list(range(axes[0], rank)):
        raise unsupported(f"LayerNorm over axes {axes} (not the trailing axes) is not supported")
    gamma = b.static(op.inputs[1], "gamma").astype(np.float32)
    ins = [b.value(op.inputs[0]), b.const(f"{op.name}.gamma", gamma)]
    if len(op.inputs) == 3 and op.inputs[2]:
        ins.append(b.const(f"{op.name}.beta", b.static(op.inputs[2], "beta").astype(np.float32)))
    b.add("LayerNormalization", ins, [b.produce(op.outputs[0])], axis=axes[0],
          epsilon=_float(op, "epsilon", 1e-5))


def _batchnorm(b: IrBuilder, op: QnnOp) -> None:
    _arity(op, (3, 3))
    x = b.tensor(op.inputs[0])
    if not x.dims:
        raise invalid(f"input {op.inputs[0]!r} has no channel axis (rank 0)")
    scale = b.static(op.inputs[1], "the scale").astype(np.float32).reshape(-1)
    bias = b.static(op.inputs[2], "the bias").astype(np.float32).reshape(-1)
    channels = x.dims[-1]
    if scale.size != channels or bias.size != channels:
        raise invalid(f"scale and bias need {channels} values (the last axis), got {scale.size} and {bias.size}")
    if len(x.dims) == 4:
        zeros, ones = np.zeros(channels, np.float32), np.ones(channels, np.float32)
        b.add("BatchNormalization", [b.as_nchw(op.inputs[0]), b.const(f"{op.name}.scale", scale),
                                     b.const(f"{op.name}.bias", bias), b.const(f"{op.name}.mean", zeros),
                                     b.const(f"{op.name}.var", ones)], [b.produce_nchw(op.outputs[0])], epsilon=0.0)
    else:
        mid = b.fresh(f"{op.name}.scaled", x.dims)
        b.add("Mul", [b.value(op.inputs[0]), b.const(f"{op.name}.scale", scale)], [mid])
        b.add("Add", [mid, b.const(f"{op.name}.bias", bias)], [b.produce(op.outputs[0])])


def _identity(b: IrBuilder, op: QnnOp) -> None:
    """Quantize / Dequantize / Convert / Cast: the value is unchanged, only its storage changes (the int8 storage
    of each side carries its own scale / offset, so npurt's Convert requantizes; Cast changes the logical type)."""
    _arity(op, (1, 1))
    src, dst = b.tensor(op.inputs[0]), b.tensor(op.outputs[0])
    if src.is_float != dst.is_float:
        to = _ONNX_TYPES.get(np.dtype("float32" if dst.is_float else dst.dtype).name)
        if to is None:
            raise unsupported(f"cast to {dst.dtype} is not supported")
        b.add("Cast", [b.value(op.inputs[0])], [b.produce(op.outputs[0])], to=to)
        return
    nchw = op.inputs[0] in b.nchw and len(dst.dims) == 4 and op.inputs[0] not in b.have
    ins = [b.nchw[op.inputs[0]]] if nchw else [b.value(op.inputs[0])]
    b.add("Convert", ins, [b.produce_nchw(op.outputs[0]) if nchw else b.produce(op.outputs[0])])


def _rsqrt(b: IrBuilder, op: QnnOp) -> None:
    _arity(op, (1, 1))
    t = b.tensor(op.inputs[0])
    root = b.fresh(f"{op.name}.sqrt", t.dims)
    b.add("Sqrt", [b.value(op.inputs[0])], [root])
    b.add("Reciprocal", [root], [b.produce(op.outputs[0])])


_ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7, "bool": 9,
               "float16": 10, "uint32": 12, "uint64": 13}

OPS: dict[str, Callable[[IrBuilder, QnnOp], None]] = {
    "Conv2d": lambda b, op: _conv(b, op, "conv"),
    "DepthWiseConv2d": lambda b, op: _conv(b, op, "depthwise"),
    "TransposeConv2d": lambda b, op: _conv(b, op, "transpose"),
    "PoolMax2d": lambda b, op: _pool(b, op, "MaxPool"),
    "PoolAvg2d": lambda b, op: _pool(b, op, "AveragePool"),
    "ReluMinMax": lambda b, op: _clip(b, op, _float(op, "min_value", required=True),
                                      _float(op, "max_value", required=True)),
    "Relu6": lambda b, op: _clip(b, op, 0.0, 6.0),
    "Relu1": lambda b, op: _clip(b, op, -1.0, 1.0),
    "Prelu": _prelu,
    "ElementWiseNeuron": _neuron,
    "ElementWiseBinary": lambda b, op: _binary(b, op, _binary_operation(op)),
    "ElementWiseUnary": lambda b, op: _unary(b, op, _unary_operation(op)),
    "ElementWiseRsqrt": _rsqrt,
    "Elu": lambda b, op: _unary(b, op, "Elu", alpha=_float(op, "alpha", 1.0)),
    "Transpose": _transpose,
    "Reshape": _reshape,
    "Concat": _concat,
    "Split": _split,
    "StridedSlice": _strided_slice,
    "Gather": _gather,
    "Pad": _pad,
    "ResizeNearestNeighbor": lambda b, op: _resize(b, op, "nearest"),
    "ResizeBilinear": lambda b, op: _resize(b, op, "linear"),
    "ReduceMean": lambda b, op: _reduce(b, op, "ReduceMean"),
    "ReduceMax": lambda b, op: _reduce(b, op, "ReduceMax"),
    "ReduceMin": lambda b, op: _reduce(b, op, "ReduceMin"),
    "ReduceSum": lambda b, op: _reduce(b, op, "ReduceSum"),
    "FullyConnected": _fully_connected,
    "MatMul": _matmul,
    "Softmax": _softmax,
    "LayerNorm": _layer_norm,
    "Batchnorm": _batchnorm,
    "Quantize": _identity,
    "Dequantize": _identity,
    "Convert": _identity,
    "Cast": _identity,
    **{name: (lambda t: lambda b, op: _binary(b, op, t))(t) for name, t in _BINARY.items()},
    **{name: (lambda t: lambda b, op: _unary(b, op, t))(t) for name, t in _UNARY.items()},
}
"""Every QNN op type (package qti.aisw) the front end builds, with its translation."""


def _unary_operation(op: QnnOp) -> str:
    operation = _int(op, "operation", required=True)
    if operation not in _UNARY_OPERATION:
        raise unsupported(f"ElementWiseUnary operation {operation} is not supported")
    return _UNARY_OPERATION[operation]


def _binary_operation(op: QnnOp) -> str:
    operation = _int(op, "operation", required=True)
    if operation not in _BINARY_OPERATION:
        raise unsupported(f"ElementWiseBinary operation {operation} is not supported")
    return _BINARY_OPERATION[operation]


