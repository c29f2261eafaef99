"""QNN graphs as plain data, and the builder that turns them into npurt's IR (`model.qnn_import`'s front end).

The QNN mirror collects what `tensorCreateGraphTensor` and `graphAddNode` are given as `QnnTensor` / `QnnOp`
(numpy dtypes, dims, scale/offset, static values, params). `IrBuilder` keeps, per QNN tensor, its IR tensor as given
(NHWC for 4-D activations) and, on demand, its NCHW form (one Transpose per tensor), as the IR is ONNX's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.model.ir import Node, TensorInfo

PACKAGE = "qti.aisw"
OPSET = 17                  # the IR's ONNX opset (Gelu is npurt's own kernel at any opset)
APP_WRITE, APP_READ, NATIVE, STATIC = "app_write", "app_read", "native", "static"
KINDS = (APP_WRITE, APP_READ, NATIVE, STATIC)
TO_NCHW, TO_NHWC = (0, 3, 1, 2), (0, 2, 3, 1)


def invalid(msg: str) -> NpuError:
    """INVALID_ARGUMENT: a tensor or param the op definitions do not allow."""
    return NpuError(ErrorCode.INVALID_ARGUMENT, msg)


BAD_VALUE = "param_value"
"""The hint of `bad_value` errors: the QNN faces answer their invalid-argument codes for them, not INVALID_OP_CONFIG."""


def bad_value(msg: str) -> NpuError:
    """INVALID_ARGUMENT for a param value no op definition can take (NaN, inf, a fraction or an overflow where an
    integer is typed): a malformed argument rather than an op configured wrongly."""
    return NpuError(ErrorCode.INVALID_ARGUMENT, msg, hint=BAD_VALUE)


def unsupported(msg: str) -> NpuError:
    """NOT_SUPPORTED: valid QNN that npurt does not build."""
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
            raise invalid(f"tensor {self.name!r} has no static data")
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


# ---------------------------------------------------------------------------------------------------------
# the builder: QNN tensors -> IR tensors (NHWC as given, NCHW forms added on demand)
# ---------------------------------------------------------------------------------------------------------
class IrBuilder:
    """IR nodes, tensors and constants built from QNN tensors while the op translations run."""

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
            self.add("Transpose", [self.nchw[name]], [name], perm=list(TO_NHWC))
            return name
        if t.kind in (STATIC, APP_WRITE):
            self._declare(t)
            return name
        raise invalid(f"tensor {name!r} is read before any node produced it")

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
            raise unsupported(f"{what} ({name!r}) must be a STATIC tensor")
        return t.values()

    def as_nchw(self, name: str) -> str:
        """The NCHW form of 4-D tensor `name` (a Transpose added the first time)."""
        t = self.tensor(name)
        if len(t.dims) != 4:
            raise invalid(f"tensor {name!r} must be 4-D (NHWC), it has dims {list(t.dims)}")
        if name not in self.nchw:
            if t.kind == STATIC:
                self.nchw[name] = self.const(name, np.ascontiguousarray(t.values().transpose(TO_NCHW)))
            else:
                src = self.value(name)
                out = self.fresh(f"{name}#nchw", [t.dims[i] for i in TO_NCHW], self.infos[src].dtype, like=name)
                self.add("Transpose", [src], [out], perm=list(TO_NCHW))
                self.nchw[name] = out
        return self.nchw[name]

    def produce_nchw(self, name: str) -> str:
        """A new IR tensor that will hold the NCHW form of output `name`."""
        t = self.tensor(name)
        if len(t.dims) != 4:
            raise invalid(f"output {name!r} must be 4-D (NHWC), it has dims {list(t.dims)}")
        out = self.fresh(f"{name}#nchw", [t.dims[i] for i in TO_NCHW], "float32" if t.is_float else t.dtype,
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


