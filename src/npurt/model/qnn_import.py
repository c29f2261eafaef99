"""QNN graph → IR: the front end for graphs built op by op through the QNN graph API (beside the ONNX importer).

The QNN mirror collects what `tensorCreateGraphTensor` and `graphAddNode` are given as `QnnTensor` / `QnnOp` (plain
data: numpy dtypes, dims, scale/offset, static values, params) and hands them here; `translate` builds the same IR
the ONNX importer builds (`model.ir.Graph`, ONNX op semantics), plus what the compiler needs to quantise it the way
the graph says (`QnnModel`: precision, each quantized tensor's scale / zero point, the nodes kept in float). The
compiler then treats it like any other model (`compiler.compile_graph`).

Semantics are the QNN op definitions' (package "qti.aisw"): 4-D activations are NHWC, convolution weights HWIO
([kh, kw, cin/group, cout]; depthwise [kh, kw, 1, cout]; transpose-conv [kh, kw, cin, cout/group]), pads come as
[[begin, end], ...] tensors, quantized values are float = (q + offset) * scale. The IR is ONNX's (NCHW for the
spatial ops), so a spatial op reads the NCHW form of its input (a Transpose is added once per tensor, and elementwise
ops keep whichever form their inputs have). `check_op` translates one op alone with the same code and runs the
compiler's shape rules on it, so what it accepts is exactly what `translate` can build (backendValidateOpConfig).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Mapping, Sequence

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.model.ir import Graph, Node, TensorInfo

PACKAGE = "qti.aisw"
OPSET = 17                  # the IR's ONNX opset (Gelu is npurt's own kernel at any opset)
APP_WRITE, APP_READ, NATIVE, STATIC = "app_write", "app_read", "native", "static"
KINDS = (APP_WRITE, APP_READ, NATIVE, STATIC)
_TO_NCHW, _TO_NHWC = (0, 3, 1, 2), (0, 2, 3, 1)
_AXIS_NCHW = {0: 0, 1: 2, 2: 3, 3: 1}       # an NHWC axis -> the same axis of the NCHW form
_BIG = np.iinfo(np.int64).max


def _bad(msg: str) -> NpuError:
    return NpuError(ErrorCode.INVALID_ARGUMENT, msg)


def _unsupported(msg: str) -> NpuError:
    return NpuError(ErrorCode.NOT_SUPPORTED, msg)


@dataclass(frozen=True)
class Quant:
    """Scale/offset of a fixed-point tensor (float = (q + offset) * scale): per tensor (`axis` None) or per axis."""

    scale: np.ndarray               # float32: () or (n,)
    offset: np.ndarray              # int64: () or (n,)
    axis: int | None = None

    def dequantize(self, q: np.ndarray) -> np.ndarray:
        """The float32 values of stored values `q`."""
        scale, offset = self.scale.astype(np.float64), self.offset.astype(np.float64)
        if self.axis is not None:
            shape = [1] * q.ndim
            shape[self.axis] = -1
            scale, offset = scale.reshape(shape), offset.reshape(shape)
        return ((q.astype(np.float64) + offset) * scale).astype(np.float32)


@dataclass
class QnnTensor:
    """One QNN tensor: name, kind (APP_WRITE / APP_READ / NATIVE / STATIC), the numpy dtype of its stored values,
    whether they are fixed point (then `quant`), dims, and a STATIC tensor's values (copied at creation)."""

    name: str
    kind: str
    dtype: str
    dims: tuple[int, ...]
    quant: Quant | None = None
    data: np.ndarray | None = None

    @property
    def quantized(self) -> bool:
        return self.quant is not None

    @property
    def q8(self) -> bool:
        """An 8-bit per-tensor quantized activation: what npurt's int8 storage holds exactly."""
        return self.quant is not None and self.quant.axis is None and np.dtype(self.dtype).itemsize == 1

    @property
    def is_float(self) -> bool:
        """Holds real numbers (float or fixed point), as opposed to integer indices / booleans."""
        return self.quant is not None or np.dtype(self.dtype).kind == "f"

    def values(self) -> np.ndarray:
        """A STATIC tensor's logical values: float32 for float / fixed point, else its integers."""
        if self.data is None:
            raise _bad(f"tensor {self.name!r} has no static data")
        if self.quant is not None:
            return self.quant.dequantize(self.data)
        if np.dtype(self.dtype).kind == "f":
            return self.data.astype(np.float32)
        return self.data


@dataclass
class QnnOp:
    """One `graphAddNode` op config: name, package, op type, params (scalars as Python numbers, tensor params as
    numpy arrays), input and output tensor names."""

    name: str
    package: str
    type: str
    params: dict[str, Any]
    inputs: list[str]
    outputs: list[str]


@dataclass
class QnnModel:
    """A translated QNN graph: the IR, the precision it compiles at and the int8 (scale, zero point) of its quantized
    tensors (the compiler runs the nodes on real values without one in fp16: `compiler.compile_graph`)."""

    graph: Graph
    precision: str
    qparams: dict[str, tuple[float, int]] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------------------
# the builder: QNN tensors -> IR tensors (NHWC as given, NCHW forms added on demand)
# ---------------------------------------------------------------------------------------------------------
class _Builder:
    def __init__(self, tensors: Mapping[str, QnnTensor]) -> None:
        self.qt = tensors
        self.nodes: list[Node] = []
        self.infos: dict[str, TensorInfo] = {}
        self.constants: dict[str, np.ndarray] = {}
        self.nchw: dict[str, str] = {}          # QNN name -> IR name of its NCHW form
        self.have: set[str] = set()             # QNN names whose own (as given) IR tensor exists
        self.derived: dict[str, str] = {}       # IR tensor -> the QNN tensor whose scale/offset it takes
        self.steps: dict[str, np.ndarray] = {}  # IR weight -> its quantization step per output channel
        self.op: QnnOp | None = None
        self._n = 0

    # -- names and tensors -----------------------------------------------------------------------------
    def fresh(self, base: str, shape: Sequence[int], dtype: str = "float32", like: str | None = None) -> str:
        """A new IR tensor; `like`: the QNN tensor whose values (so scale/offset) it holds, reordered or not."""
        self._n += 1
        name = f"{base}#{self._n}"
        self.infos[name] = TensorInfo(name, tuple(int(d) for d in shape), dtype)
        if like is not None:
            self.derived[name] = like
        return name

    def const(self, base: str, value: np.ndarray) -> str:
        name = self.fresh(base, value.shape, value.dtype.name)
        self.constants[name] = value
        return name

    def tensor(self, name: str) -> QnnTensor:
        t = self.qt.get(name)
        if t is None:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tensor {name!r} was never created")
        return t

    def _declare(self, t: QnnTensor) -> None:
        dtype = "float32" if t.is_float else np.dtype(t.dtype).name
        self.infos[t.name] = TensorInfo(t.name, tuple(t.dims), dtype)
        if t.kind == STATIC:
            self.constants[t.name] = t.values()
        self.have.add(t.name)

    def value(self, name: str) -> str:
        """The IR tensor of QNN tensor `name` as given (NHWC for 4-D)."""
        t = self.tensor(name)
        if name in self.have:
            return name
        if name in self.nchw:                   # produced in NCHW: transpose back once
            self.infos[name] = TensorInfo(name, tuple(t.dims), "float32" if t.is_float else np.dtype(t.dtype).name)
            self.have.add(name)
            self.add("Transpose", [self.nchw[name]], [name], perm=list(_TO_NHWC))
            return name
        if t.kind in (STATIC, APP_WRITE):
            self._declare(t)
            return name
        raise _bad(f"tensor {name!r} is read before any node produced it")

    def weight(self, base: str, name: str, value: np.ndarray, qnn_axis: int) -> str:
        """A weight constant; when QNN tensor `name` is fixed point, its step per output channel (`qnn_axis` of the
        QNN tensor is the IR weight's output-channel axis) goes with it."""
        ir = self.const(base, value)
        quant = self.tensor(name).quant
        if quant is not None:
            n = self.tensor(name).dims[qnn_axis]
            if quant.axis is None:
                self.steps[ir] = np.full(n, float(quant.scale), np.float32)
            elif quant.axis == qnn_axis:
                self.steps[ir] = quant.scale.astype(np.float32)
        return ir

    def static(self, name: str, what: str) -> np.ndarray:
        t = self.tensor(name)
        if t.kind != STATIC:
            raise _unsupported(f"{what} ({name!r}) must be a STATIC tensor")
        return t.values()

    def as_nchw(self, name: str) -> str:
        """The NCHW form of 4-D tensor `name` (a Transpose added the first time)."""
        t = self.tensor(name)
        if len(t.dims) != 4:
            raise _bad(f"tensor {name!r} must be 4-D (NHWC), it has dims {list(t.dims)}")
        if name not in self.nchw:
            if t.kind == STATIC:
                self.nchw[name] = self.const(name, np.ascontiguousarray(t.values().transpose(_TO_NCHW)))
            else:
                src = self.value(name)
                out = self.fresh(f"{name}#nchw", [t.dims[i] for i in _TO_NCHW], self.infos[src].dtype, like=name)
                self.add("Transpose", [src], [out], perm=list(_TO_NCHW))
                self.nchw[name] = out
        return self.nchw[name]

    def produce_nchw(self, name: str) -> str:
        """A new IR tensor that will hold the NCHW form of output `name`."""
        t = self.tensor(name)
        if len(t.dims) != 4:
            raise _bad(f"output {name!r} must be 4-D (NHWC), it has dims {list(t.dims)}")
        out = self.fresh(f"{name}#nchw", [t.dims[i] for i in _TO_NCHW], "float32" if t.is_float else t.dtype,
                         like=name)
        self.nchw[name] = out
        return out

    def produce(self, name: str) -> str:
        """The IR tensor (as given) that an op writes output `name` into."""
        t = self.tensor(name)
        self.infos[name] = TensorInfo(name, tuple(t.dims), "float32" if t.is_float else np.dtype(t.dtype).name)
        self.have.add(name)
        return name

    def add(self, op_type: str, inputs: list[str], outputs: list[str], **attrs: Any) -> None:
        base = self.op.name if self.op is not None else op_type
        self.nodes.append(Node(f"{base}#{len(self.nodes)}", op_type, inputs, outputs, attrs))


# ---------------------------------------------------------------------------------------------------------
# params
# ---------------------------------------------------------------------------------------------------------
def _param(op: QnnOp, name: str, default: Any = None, *, shape: tuple | None = None, required: bool = False) -> Any:
    """Param `name` of `op`: a scalar as a Python number, a tensor param as an int64 / float array of `shape`
    (-1 = any length); INVALID_ARGUMENT when missing (if required) or of the wrong shape."""
    if name not in op.params:
        if required:
            raise _bad(f"param {name!r} is required")
        return default
    value = op.params[name]
    if shape is None:
        if isinstance(value, np.ndarray):
            if value.size != 1:
                raise _bad(f"param {name!r} must be a scalar, got a tensor of shape {list(value.shape)}")
            value = value.reshape(()).item()
        return value
    arr = np.asarray(value)
    if arr.ndim != len(shape) or any(want not in (-1, got) for want, got in zip(shape, arr.shape)):
        want = "x".join("n" if d == -1 else str(d) for d in shape)
        raise _bad(f"param {name!r} must be a {want} tensor, got shape {list(arr.shape)}")
    return arr


def _ints(op: QnnOp, name: str, n: int, default: int) -> list[int]:
    arr = _param(op, name, None, shape=(n,))
    return [default] * n if arr is None else [int(v) for v in arr]


def _pads2d(op: QnnOp) -> list[int]:
    pad = _param(op, "pad_amount", None, shape=(2, 2))
    if pad is None:
        return [0, 0, 0, 0]
    return [int(pad[0, 0]), int(pad[1, 0]), int(pad[0, 1]), int(pad[1, 1])]


def _arity(op: QnnOp, n_in: tuple[int, int], n_out: int = 1) -> None:
    lo, hi = n_in
    if not lo <= len(op.inputs) <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        raise _bad(f"takes {want} inputs, got {len(op.inputs)}")
    if n_out >= 0 and len(op.outputs) != n_out:
        raise _bad(f"has {n_out} output(s), got {len(op.outputs)}")


# ---------------------------------------------------------------------------------------------------------
# the ops
# ---------------------------------------------------------------------------------------------------------
def _conv(b: _Builder, op: QnnOp, kind: str) -> None:
    _arity(op, (2, 3))
    x, out = op.inputs[0], op.outputs[0]
    w = b.static(op.inputs[1], "the weight")
    if w.ndim != 4:
        raise _bad(f"weight must be 4-D [kh, kw, cin, cout], got {list(w.shape)}")
    cin = b.tensor(x).dims[3] if len(b.tensor(x).dims) == 4 else 0
    if kind == "transpose":
        weight = np.ascontiguousarray(w.transpose(2, 3, 0, 1))         # [kh,kw,cin,cout/g] -> [cin,cout/g,kh,kw]
        group = int(_param(op, "group", 1))
        attrs = dict(strides=_ints(op, "stride", 2, 1), pads=_pads2d(op), group=group,
                     output_padding=_ints(op, "output_padding", 2, 0), kernel_shape=list(w.shape[:2]))
        op_type = "ConvTranspose"
    else:
        weight = np.ascontiguousarray(w.transpose(3, 2, 0, 1))         # HWIO -> OIHW
        group = cin if kind == "depthwise" else int(_param(op, "group", 1))
        if kind == "depthwise" and w.shape[2] != 1:
            raise _bad(f"depthwise weight must be [kh, kw, 1, cout], got {list(w.shape)}")
        attrs = dict(strides=_ints(op, "stride", 2, 1), pads=_pads2d(op), dilations=_ints(op, "dilation", 2, 1),
                     group=group, kernel_shape=list(w.shape[:2]))
        op_type = "Conv"
    inputs = [b.as_nchw(x), b.weight(f"{op.name}.weight", op.inputs[1], weight, 3)]
    if len(op.inputs) == 3 and op.inputs[2]:
        inputs.append(b.const(f"{op.name}.bias", b.static(op.inputs[2], "the bias").astype(np.float32).reshape(-1)))
    b.add(op_type, inputs, [b.produce_nchw(out)], **attrs)


def _pool(b: _Builder, op: QnnOp, op_type: str) -> None:
    _arity(op, (1, 1))
    attrs: dict[str, Any] = dict(kernel_shape=_ints(op, "filter_size", 2, 1), strides=_ints(op, "stride", 2, 1),
                                 pads=_pads2d(op), ceil_mode=int(_param(op, "rounding_mode", 0)))
    if op_type == "AveragePool":
        attrs["count_include_pad"] = int(bool(_param(op, "count_pad_for_edges", 0)))
    b.add(op_type, [b.as_nchw(op.inputs[0])], [b.produce_nchw(op.outputs[0])], **attrs)


def _broadcast_nchw(value: np.ndarray) -> np.ndarray:
    """A constant that broadcasts against an NHWC tensor, as it broadcasts against its NCHW form."""
    v = value.reshape((1,) * (4 - value.ndim) + value.shape) if value.ndim < 4 else value
    return np.ascontiguousarray(v.transpose(_TO_NCHW))


def _elementwise(b: _Builder, op: QnnOp, op_type: str, extra: Sequence[np.ndarray] = (), **attrs: Any) -> None:
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


def _binary(b: _Builder, op: QnnOp, op_type: str) -> None:
    _arity(op, (2, 2))
    _elementwise(b, op, op_type)


def _unary(b: _Builder, op: QnnOp, op_type: str, **attrs: Any) -> None:
    _arity(op, (1, 1))
    _elementwise(b, op, op_type, **attrs)


def _clip(b: _Builder, op: QnnOp, lo: float, hi: float) -> None:
    _arity(op, (1, 1))
    _elementwise(b, op, "Clip", [np.array(lo, np.float32), np.array(hi, np.float32)])


def _neuron(b: _Builder, op: QnnOp) -> None:
    operation = int(_param(op, "operation", required=True))
    alpha, beta = _param(op, "alpha"), _param(op, "beta")
    if operation == _NEURON_ELU:
        _unary(b, op, "Elu", alpha=float(1.0 if alpha is None else alpha))
    elif operation == _NEURON_GELU:
        _unary(b, op, "Gelu")
    elif operation == _NEURON_HARD_SIGMOID:
        _unary(b, op, "HardSigmoid", alpha=float(0.2 if alpha is None else alpha),
               beta=float(0.5 if beta is None else beta))
    elif operation == _NEURON_HARD_SWISH:
        _unary(b, op, "HardSwish")
    elif operation == _NEURON_RELU:
        _unary(b, op, "Relu")
    elif operation == _NEURON_RELU_MIN_MAX:
        _clip(b, op, float(_param(op, "min_value", 0.0)), float(_param(op, "max_value", required=True)))
    elif operation == _NEURON_SIGMOID:
        _unary(b, op, "Sigmoid")
    elif operation == _NEURON_SOFTPLUS:
        _unary(b, op, "Softplus")
    elif operation == _NEURON_TANH:
        _unary(b, op, "Tanh")
    else:
        raise _unsupported(f"ElementWiseNeuron operation {operation} is not supported")


def _prelu(b: _Builder, op: QnnOp) -> None:
    _arity(op, (2, 2))
    b.static(op.inputs[1], "the slope")
    _elementwise(b, op, "PRelu")


def _transpose(b: _Builder, op: QnnOp) -> None:
    _arity(op, (1, 1))
    rank = len(b.tensor(op.inputs[0]).dims)
    perm = [int(p) for p in _param(op, "perm", shape=(rank,), required=True)]
    if sorted(perm) != list(range(rank)):
        raise _bad(f"param 'perm' {perm} is not a permutation of {rank} axes")
    b.add("Transpose", [b.value(op.inputs[0])], [b.produce(op.outputs[0])], perm=perm)


def _reshape(b: _Builder, op: QnnOp) -> None:
    _arity(op, (1, 2))
    shape = np.array(b.tensor(op.outputs[0]).dims, np.int64)
    b.add("Reshape", [b.value(op.inputs[0]), b.const(f"{op.name}.shape", shape)], [b.produce(op.outputs[0])])


def _axis(op: QnnOp, rank: int, name: str = "axis", default: int | None = None) -> int:
    axis = _param(op, name, default, required=default is None)
    axis = int(axis)
    if not -rank <= axis < rank:
        raise _bad(f"param {name!r} {axis} is out of range for rank {rank}")
    return axis % rank


def _concat(b: _Builder, op: QnnOp) -> None:
    if not op.inputs or len(op.outputs) != 1:
        raise _bad("takes 1 or more inputs and has 1 output")
    rank = len(b.tensor(op.outputs[0]).dims)
    axis = _axis(op, rank, default=rank - 1)
    if rank == 4 and all(n in b.nchw for n in op.inputs):
        b.add("Concat", [b.nchw[n] for n in op.inputs], [b.produce_nchw(op.outputs[0])], axis=_AXIS_NCHW[axis])
    else:
        b.add("Concat", [b.value(n) for n in op.inputs], [b.produce(op.outputs[0])], axis=axis)


def _split(b: _Builder, op: QnnOp) -> None:
    _arity(op, (1, 1), -1)
    dims = b.tensor(op.inputs[0]).dims
    axis = _axis(op, len(dims))
    index = _param(op, "split_index", None, shape=(-1,))
    starts = [0] + ([int(i) for i in index] if index is not None else [])
    if len(starts) != len(op.outputs):
        raise _bad(f"param 'split_index' has {len(starts) - 1} entries for {len(op.outputs)} outputs")
    ends = starts[1:] + [dims[axis]]
    sizes = [e - s for s, e in zip(starts, ends)]
    if any(s <= 0 for s in sizes):
        raise _bad(f"param 'split_index' {starts[1:]} does not split an axis of {dims[axis]}")
    b.add("Split", [b.value(op.inputs[0]), b.const(f"{op.name}.split", np.array(sizes, np.int64))],
          [b.produce(o) for o in op.outputs], axis=axis)


def _strided_slice(b: _Builder, op: QnnOp) -> None:
    _arity(op, (1, 1))
    dims = b.tensor(op.inputs[0]).dims
    ranges = _param(op, "ranges", shape=(len(dims), 3), required=True).astype(np.int64)
    if int(_param(op, "new_axes_mask", 0)):
        raise _unsupported("StridedSlice with new_axes_mask is not supported")
    begin_mask, end_mask = int(_param(op, "begin_mask", 0)), int(_param(op, "end_mask", 0))
    starts, ends, steps = [], [], []
    for i, (s, e, st) in enumerate(ranges.tolist()):
        if st == 0:
            raise _bad(f"param 'ranges': axis {i} has stride 0")
        starts.append((0 if st > 0 else _BIG) if begin_mask >> i & 1 else s)
        ends.append((_BIG if st > 0 else -_BIG) if end_mask >> i & 1 else e)
        steps.append(st)
    src = b.value(op.inputs[0])
    out_dims = b.tensor(op.outputs[0]).dims
    sliced = b.fresh(f"{op.name}.slice", [0] * len(dims), like=op.outputs[0])
    b.infos[sliced].shape = None                   # inferred by the compiler's shape rules
    consts = [b.const(f"{op.name}.{k}", np.array(v, np.int64)) for k, v in
              (("starts", starts), ("ends", ends), ("axes", list(range(len(dims)))), ("steps", steps))]
    b.add("Slice", [src] + consts, [sliced])
    b.add("Reshape", [sliced, b.const(f"{op.name}.shape", np.array(out_dims, np.int64))], [b.produce(op.outputs[0])])


def _gather(b: _Builder, op: QnnOp) -> None:
    _arity(op, (2, 2))
    axis = _axis(op, len(b.tensor(op.inputs[0]).dims), default=0)
    idx = b.tensor(op.inputs[1])
    indices = b.const(op.inputs[1], b.static(op.inputs[1], "indices").astype(np.int64)) if idx.kind == STATIC \
        else b.value(op.inputs[1])
    b.add("Gather", [b.value(op.inputs[0]), indices], [b.produce(op.outputs[0])], axis=axis)


_PAD_MODES = {0: "constant", 2: "reflect", 3: "edge"}


def _pad(b: _Builder, op: QnnOp) -> None:
    _arity(op, (1, 1))
    x = b.tensor(op.inputs[0])
    amounts = _param(op, "pad_amount", shape=(len(x.dims), 2), required=True).astype(np.int64)
    scheme = int(_param(op, "scheme", 0))
    if scheme not in _PAD_MODES:
        raise _unsupported(f"Pad scheme {scheme} (mirror-symmetric) is not supported")
    value = float(_param(op, "pad_constant_value", 0.0))
    if x.quant is not None and x.quant.axis is None:       # a quantized tensor's pad value is a stored value
        value = float(x.quant.dequantize(np.array(value)))
    pads = np.concatenate([amounts[:, 0], amounts[:, 1]])
    b.add("Pad", [b.value(op.inputs[0]), b.const(f"{op.name}.pads", pads),
                  b.const(f"{op.name}.value", np.array(value, np.float32))], [b.produce(op.outputs[0])],
          mode=_PAD_MODES[scheme])


def _resize(b: _Builder, op: QnnOp, mode: str) -> None:
    _arity(op, (1, 1))
    align, half = bool(_param(op, "align_corners", 0)), bool(_param(op, "half_pixel_centers", 0))
    if align and half:
        raise _bad("align_corners and half_pixel_centers are exclusive")
    ctm = "align_corners" if align else "half_pixel" if half else "asymmetric"
    attrs: dict[str, Any] = dict(mode=mode, coordinate_transformation_mode=ctm)
    if mode == "nearest":
        attrs["nearest_mode"] = "floor" if ctm == "asymmetric" else "round_prefer_ceil"
    out_dims = b.tensor(op.outputs[0]).dims
    sizes = np.array([out_dims[i] for i in _TO_NCHW], np.int64)
    b.add("Resize", [b.as_nchw(op.inputs[0]), "", "", b.const(f"{op.name}.sizes", sizes)],
          [b.produce_nchw(op.outputs[0])], **attrs)


def _reduce(b: _Builder, op: QnnOp, op_type: str) -> None:
    _arity(op, (1, 1))
    rank = len(b.tensor(op.inputs[0]).dims)
    axes = sorted({int(a) % rank for a in _param(op, "axes", shape=(-1,), required=True)})
    b.add(op_type, [b.value(op.inputs[0])], [b.produce(op.outputs[0])], axes=axes,
          keepdims=int(bool(_param(op, "keep_dims", 0))))


def _fully_connected(b: _Builder, op: QnnOp) -> None:
    _arity(op, (2, 3))
    w = b.static(op.inputs[1], "the weight")
    if w.ndim != 2:
        raise _bad(f"weight must be [units, inputs], got {list(w.shape)}")
    x = b.tensor(op.inputs[0])
    if int(np.prod(x.dims)) % w.shape[1]:
        raise _bad(f"input dims {list(x.dims)} do not flatten to rows of {w.shape[1]}")
    flat = b.fresh(f"{op.name}.flat", [int(np.prod(x.dims)) // w.shape[1], w.shape[1]], like=op.inputs[0])
    b.add("Reshape", [b.value(op.inputs[0]), b.const(f"{op.name}.rows", np.array(b.infos[flat].shape, np.int64))],
          [flat])
    ins = [flat, b.weight(f"{op.name}.weight", op.inputs[1], np.ascontiguousarray(w), 0)]
    if len(op.inputs) == 3 and op.inputs[2]:
        ins.append(b.const(f"{op.name}.bias", b.static(op.inputs[2], "the bias").astype(np.float32).reshape(-1)))
    out_dims = b.tensor(op.outputs[0]).dims
    prod = b.fresh(f"{op.name}.gemm", [b.infos[flat].shape[0], w.shape[0]], like=op.outputs[0])
    b.add("Gemm", ins, [prod], transB=1)
    b.add("Reshape", [prod, b.const(f"{op.name}.shape", np.array(out_dims, np.int64))], [b.produce(op.outputs[0])])


def _matmul(b: _Builder, op: QnnOp) -> None:
    _arity(op, (2, 3))
    ins = []
    for k, flag in enumerate(("transpose_in0", "transpose_in1")):
        name = op.inputs[k]
        t = b.tensor(name)
        src = b.value(name)
        if bool(_param(op, flag, 0)):
            rank = len(t.dims)
            perm = list(range(rank - 2)) + [rank - 1, rank - 2]
            dst = b.fresh(f"{name}.T", [t.dims[p] for p in perm], like=name)
            b.add("Transpose", [src], [dst], perm=perm)
            src = dst
        ins.append(src)
    if len(op.inputs) == 3 and op.inputs[2]:
        mid = b.fresh(f"{op.name}.mm", b.tensor(op.outputs[0]).dims)
        b.add("MatMul", ins, [mid])
        b.add("Add", [mid, b.value(op.inputs[2])], [b.produce(op.outputs[0])])
    else:
        b.add("MatMul", ins, [b.produce(op.outputs[0])])


def _softmax(b: _Builder, op: QnnOp) -> None:
    _arity(op, (1, 1))
    rank = len(b.tensor(op.inputs[0]).dims)
    axis = _axis(op, rank, default=rank - 1)
    beta = float(_param(op, "beta", 1.0))
    src = b.value(op.inputs[0])
    if beta != 1.0:
        scaled = b.fresh(f"{op.name}.beta", b.tensor(op.inputs[0]).dims)
        b.add("Mul", [src, b.const(f"{op.name}.b", np.array(beta, np.float32))], [scaled])
        src = scaled
    b.add("Softmax", [src], [b.produce(op.outputs[0])], axis=axis)


def _layer_norm(b: _Builder, op: QnnOp) -> None:
    _arity(op, (2, 3))
    rank = len(b.tensor(op.inputs[0]).dims)
    axes = sorted({int(a) % rank for a in _param(op, "axes", np.array([rank - 1]), shape=(-1,))})
    if axes != list(range(axes[0], rank)):
        raise _unsupported(f"LayerNorm over axes {axes} (not the trailing axes) is not supported")
    gamma = b.static(op.inputs[1], "gamma").astype(np.float32)
    ins = [b.value(op.inputs[0]), b.const(f"{op.name}.gamma", gamma)]
    if len(op.inputs) == 3 and op.inputs[2]:
        ins.append(b.const(f"{op.name}.beta", b.static(op.inputs[2], "beta").astype(np.float32)))
    b.add("LayerNormalization", ins, [b.produce(op.outputs[0])], axis=axes[0],
          epsilon=float(_param(op, "epsilon", 1e-5)))


def _batchnorm(b: _Builder, op: QnnOp) -> None:
    _arity(op, (3, 3))
    x = b.tensor(op.inputs[0])
    scale = b.static(op.inputs[1], "the scale").astype(np.float32).reshape(-1)
    bias = b.static(op.inputs[2], "the bias").astype(np.float32).reshape(-1)
    channels = x.dims[-1]
    if scale.size != channels or bias.size != channels:
        raise _bad(f"scale and bias need {channels} values (the last axis), got {scale.size} and {bias.size}")
    if len(x.dims) == 4:
        zeros, ones = np.zeros(channels, np.float32), np.ones(channels, np.float32)
        b.add("BatchNormalization", [b.as_nchw(op.inputs[0]), b.const(f"{op.name}.scale", scale),
                                     b.const(f"{op.name}.bias", bias), b.const(f"{op.name}.mean", zeros),
                                     b.const(f"{op.name}.var", ones)], [b.produce_nchw(op.outputs[0])], epsilon=0.0)
    else:
        mid = b.fresh(f"{op.name}.scaled", x.dims)
        b.add("Mul", [b.value(op.inputs[0]), b.const(f"{op.name}.scale", scale)], [mid])
        b.add("Add", [mid, b.const(f"{op.name}.bias", bias)], [b.produce(op.outputs[0])])


def _identity(b: _Builder, op: QnnOp) -> None:
    """Quantize / Dequantize / Convert / Cast: the value is unchanged, only its storage changes (the int8 storage
    of each side carries its own scale / offset, so npurt's Convert requantizes; Cast changes the logical type)."""
    _arity(op, (1, 1))
    src, dst = b.tensor(op.inputs[0]), b.tensor(op.outputs[0])
    if src.is_float != dst.is_float:
        to = _ONNX_TYPES.get(np.dtype("float32" if dst.is_float else dst.dtype).name)
        if to is None:
            raise _unsupported(f"cast to {dst.dtype} is not supported")
        b.add("Cast", [b.value(op.inputs[0])], [b.produce(op.outputs[0])], to=to)
        return
    nchw = op.inputs[0] in b.nchw and len(dst.dims) == 4 and op.inputs[0] not in b.have
    ins = [b.nchw[op.inputs[0]]] if nchw else [b.value(op.inputs[0])]
    b.add("Convert", ins, [b.produce_nchw(op.outputs[0]) if nchw else b.produce(op.outputs[0])])


def _rsqrt(b: _Builder, op: QnnOp) -> None:
    _arity(op, (1, 1))
    t = b.tensor(op.inputs[0])
    root = b.fresh(f"{op.name}.sqrt", t.dims)
    b.add("Sqrt", [b.value(op.inputs[0])], [root])
    b.add("Reciprocal", [root], [b.produce(op.outputs[0])])


_ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7, "bool": 9,
               "float16": 10, "uint32": 12, "uint64": 13}

OPS: dict[str, Callable[[_Builder, QnnOp], None]] = {
    "Conv2d": lambda b, op: _conv(b, op, "conv"),
    "DepthWiseConv2d": lambda b, op: _conv(b, op, "depthwise"),
    "TransposeConv2d": lambda b, op: _conv(b, op, "transpose"),
    "PoolMax2d": lambda b, op: _pool(b, op, "MaxPool"),
    "PoolAvg2d": lambda b, op: _pool(b, op, "AveragePool"),
    "ReluMinMax": lambda b, op: _clip(b, op, float(_param(op, "min_value", required=True)),
                                      float(_param(op, "max_value", required=True))),
    "Relu6": lambda b, op: _clip(b, op, 0.0, 6.0),
    "Relu1": lambda b, op: _clip(b, op, -1.0, 1.0),
    "Prelu": _prelu,
    "ElementWiseNeuron": _neuron,
    "ElementWiseBinary": lambda b, op: _binary(b, op, _binary_operation(op)),
    "ElementWiseUnary": lambda b, op: _unary(b, op, _unary_operation(op)),
    "ElementWiseRsqrt": _rsqrt,
    "Elu": lambda b, op: _unary(b, op, "Elu", alpha=float(_param(op, "alpha", 1.0))),
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
    operation = int(_param(op, "operation", required=True))
    if operation not in _UNARY_OPERATION:
        raise _unsupported(f"ElementWiseUnary operation {operation} is not supported")
    return _UNARY_OPERATION[operation]


def _binary_operation(op: QnnOp) -> str:
    operation = int(_param(op, "operation", required=True))
    if operation not in _BINARY_OPERATION:
        raise _unsupported(f"ElementWiseBinary operation {operation} is not supported")
    return _BINARY_OPERATION[operation]


# ---------------------------------------------------------------------------------------------------------
# checks, translation
# ---------------------------------------------------------------------------------------------------------
_CONVERTING = ("Quantize", "Dequantize", "Convert", "Cast")


def _check_types(op: QnnOp, tensors: Mapping[str, QnnTensor]) -> None:
    """The tensor-type rules npurt's storage can keep: activations of one op are all quantized or all not (only
    Quantize / Dequantize / Convert / Cast change that); a quantized activation has one scale/offset."""
    acts = [tensors[n] for n in list(op.inputs) + list(op.outputs) if n and tensors[n].kind != STATIC]
    for t in acts:
        if t.quant is not None and t.quant.axis is not None:
            raise _unsupported(f"tensor {t.name!r}: per-axis quantization is supported for STATIC tensors only")
    if op.type in _CONVERTING:
        return
    reals = [t for t in acts if t.is_float]
    if any(t.q8 for t in reals) and not all(t.q8 for t in reals):
        mixed = ", ".join(f"{t.name} ({'quantized' if t.quantized else t.dtype})" for t in reals)
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"mixes 8-bit quantized and other tensors ({mixed}); put a "
                                                   f"Quantize / Dequantize / Convert between them")


def _check_known(op: QnnOp, tensors: Mapping[str, QnnTensor]) -> None:
    if op.package != PACKAGE:
        raise _unsupported(f"package {op.package!r} is not supported (only {PACKAGE!r})")
    if op.type not in OPS:
        raise _unsupported(f"op type {op.type!r} is not supported")
    for n in list(op.inputs) + list(op.outputs):
        if n and n not in tensors:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tensor {n!r} was never created")
    for n in op.outputs:
        if tensors[n].kind in (STATIC, APP_WRITE):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"output {n!r} is a {tensors[n].kind.upper()} tensor")


def _run_op(b: _Builder, op: QnnOp) -> None:
    b.op = op
    try:
        OPS[op.type](b, op)
    except NpuError as exc:
        raise NpuError(exc.code, f"node {op.name!r} ({op.type}): {exc.message}") from None
    finally:
        b.op = None


_SAME_SHAPE = ("Convert", "Gelu")


def check_op(op: QnnOp, tensors: Mapping[str, QnnTensor], supported: Collection[str],
             infer: Callable[[Graph], Graph]) -> None:
    """Whether `op` (with its tensors) can be built: the same translation `translate` runs, its IR ops among the
    executor's `supported` ones, and the compiler's shape rules (`infer`) agreeing with the output dims the op
    declares. NpuError (NOT_SUPPORTED / INVALID_ARGUMENT) naming the node and the reason otherwise."""
    _check_known(op, tensors)
    _check_types(op, tensors)
    scoped = {n: tensors[n] for n in list(op.inputs) + list(op.outputs) if n}
    local = {n: (t if t.kind == STATIC or n not in op.inputs else
                 QnnTensor(t.name, APP_WRITE, t.dtype, t.dims, t.quant)) for n, t in scoped.items()}
    local.update({n: QnnTensor(t.name, APP_READ, t.dtype, t.dims, t.quant)
                  for n, t in scoped.items() if n in op.outputs})
    b = _Builder(local)
    _run_op(b, op)
    for node in b.nodes:
        if node.op_type not in supported:
            raise _unsupported(f"node {op.name!r} ({op.type}): npurt has no {node.op_type} kernel")
    graph = _finish(b, op.name, [n for n in op.inputs if n and local[n].kind == APP_WRITE], list(op.outputs))
    for node in graph.nodes:                        # what the op gives is inferred, not taken from the declaration
        if node.op_type in _SAME_SHAPE:             # (no ONNX shape rule at the IR's opset: same shape as input)
            if graph.tensors[node.inputs[0]].shape != graph.tensors[node.outputs[0]].shape:
                raise _bad(f"node {op.name!r} ({op.type}): output {node.outputs[0]!r} must have its input's dims")
            continue
        for o in node.outputs:
            if o:
                graph.tensors[o].shape = None
    _shapes_agree(infer(graph), local, op.outputs, op)


def _finish(b: _Builder, name: str, inputs: list[str], outputs: list[str]) -> Graph:
    for out in outputs:
        b.value(out)                                # an output produced in NCHW gets its transpose back
    for n in inputs:
        b.value(n)
    graph = Graph(name, OPSET, b.nodes, dict(b.infos), list(inputs), list(outputs), dict(b.constants),
                  dict(b.steps))
    return graph.link()


def _shapes_agree(graph: Graph, tensors: Mapping[str, QnnTensor], names: Sequence[str], op: QnnOp | None) -> None:
    for n in names:
        got = graph.tensors[n].shape if n in graph.tensors else None
        want = tuple(tensors[n].dims)
        if got is not None and tuple(got) != want:
            where = f"node {op.name!r} ({op.type}): " if op is not None else ""
            raise _bad(f"{where}output {n!r} is declared with dims {list(want)}, the op gives {list(got)}")


def translate(name: str, tensors: Mapping[str, QnnTensor], ops: Sequence[QnnOp], inputs: Sequence[str],
              outputs: Sequence[str]) -> QnnModel:
    """The IR of a whole QNN graph (`inputs` / `outputs`: its APP_WRITE / APP_READ tensors in creation order) and
    how to quantise it: int8 with the graph's own scale/offset when it has 8-bit quantized activations (nodes on
    other real-valued tensors kept in float), else fp16 (the HTP's float precision)."""
    if not outputs:
        raise _bad("the graph has no APP_READ tensor")
    b = _Builder(tensors)
    for op in ops:
        _run_op(b, op)
    for out in outputs:
        if out not in b.have and out not in b.nchw:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"output tensor {out!r} is produced by no node")
    graph = _finish(b, name, list(inputs), list(outputs))
    quantized = {n: t for n, t in tensors.items() if t.kind != STATIC and t.q8}
    if not quantized:
        return QnnModel(graph, "fp16")
    return _quantized_model(graph, ops, quantized, b.derived)


def _int8(t: QnnTensor) -> tuple[float, int]:
    """npurt's int8 (scale, zero point) for an 8-bit QNN tensor: the same values (uint8 is shifted by 128)."""
    assert t.quant is not None
    zp = -int(t.quant.offset) - (128 if np.dtype(t.dtype).kind == "u" else 0)
    return float(t.quant.scale), zp


def _quantized_model(graph: Graph, ops: Sequence[QnnOp], quantized: Mapping[str, QnnTensor],
                     derived: Mapping[str, str]) -> QnnModel:
    """int8 with the graph's own scale/offset for its 8-bit tensors and the IR tensors derived from them."""
    qparams: dict[str, tuple[float, int]] = {n: _int8(t) for n, t in quantized.items()}
    # A float tensor read by a Quantize takes that Quantize's scale/offset (a graph input is then quantized on
    # entry, exactly); a float graph output written by a Dequantize takes its input's.
    for op in ops:
        if op.type == "Quantize" and op.outputs[0] in quantized and op.inputs[0] in graph.inputs:
            qparams.setdefault(op.inputs[0], qparams[op.outputs[0]])
        if op.type == "Dequantize" and op.inputs[0] in quantized:
            qparams.setdefault(op.outputs[0], qparams[op.inputs[0]])
    for name, qnn_name in derived.items():         # NCHW forms, reshaped / transposed pieces
        if qnn_name in qparams:
            qparams.setdefault(name, qparams[qnn_name])
    graph.keep = set(qparams)
    return QnnModel(graph, "int8", qparams)
