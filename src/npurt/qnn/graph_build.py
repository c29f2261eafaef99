"""QNN graphs built op by op: what contextCreate, graphCreate, tensorCreate*Tensor, graphAddNode and graphFinalize
build (their C faces are `members.building`).

A `BuildContext` (contextCreate's) holds the graphs being built (`BuildGraph`) and its context tensors. A
`Qnn_Tensor_t` becomes a `model.qnn_import.QnnTensor` (static data copied at creation), a `Qnn_OpConfig_t` a `QnnOp`
(checked with the front end's `check_op` when it is added). `finalize_graph` hands the collected graph to the front
end (`model.qnn_import.translate`) and the compiler (same quantisation, planner and executor as any model); the
compiled model is loaded like a context binary into a child `QnnContext` of the `BuildContext`, and its `QnnGraph`
takes over the graph's handle, so graphExecute, memRegister'd handles of the parent context and contextGetBinary
work as for a loaded binary. The binary holds every finalized graph; with WEIGHT_SHARING_ENABLED, weights identical
across the graphs are stored in it once (`model.context_binary`).

Every pointer in a tensor or op config (names, dims, quantization arrays, static data, params) is read through
`npurt.memory.raw` (EFAULT-safe); a failure is an NpuError / QnnError, nothing kept.
"""
from __future__ import annotations

import ctypes
import itertools
from typing import Any, Callable

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.memory.cargs import as_struct
from npurt.memory.raw import field_pointer, field_text, pointer_value, read_u32_array, safe_read, safe_write
from npurt.model import qnn_import as qi
from npurt.qnn import constants as C
from npurt.qnn.backend import HANDLES, Backend
from npurt.qnn.boundary import QnnError
from npurt.qnn.context import GraphsContext, QnnContext
from npurt.qnn.graph import QnnGraph
from npurt.qnn.htp_plan import HTP_META
from npurt.qnn.structs import (Qnn_AxisScaleOffset_t, Qnn_OpConfig_t, Qnn_OpConfigV1_t, Qnn_Param_t,
                               Qnn_ScaleOffset_t, Qnn_Tensor_t, Qnn_TensorV1_t)

# Qnn_DataType_t -> (numpy dtype of the stored values, fixed point)
DATA_TYPES: dict[int, tuple[str, bool]] = {
    C.QNN_DATATYPE_FLOAT_32: ("float32", False), C.QNN_DATATYPE_FLOAT_16: ("float16", False),
    C.QNN_DATATYPE_INT_8: ("int8", False), C.QNN_DATATYPE_UINT_8: ("uint8", False),
    C.QNN_DATATYPE_INT_16: ("int16", False), C.QNN_DATATYPE_UINT_16: ("uint16", False),
    C.QNN_DATATYPE_INT_32: ("int32", False), C.QNN_DATATYPE_UINT_32: ("uint32", False),
    C.QNN_DATATYPE_INT_64: ("int64", False), C.QNN_DATATYPE_UINT_64: ("uint64", False),
    C.QNN_DATATYPE_BOOL_8: ("bool", False),
    C.QNN_DATATYPE_SFIXED_POINT_8: ("int8", True), C.QNN_DATATYPE_UFIXED_POINT_8: ("uint8", True),
    C.QNN_DATATYPE_SFIXED_POINT_16: ("int16", True), C.QNN_DATATYPE_UFIXED_POINT_16: ("uint16", True),
    C.QNN_DATATYPE_SFIXED_POINT_32: ("int32", True), C.QNN_DATATYPE_UFIXED_POINT_32: ("uint32", True),
}
_KINDS = {C.QNN_TENSOR_TYPE_APP_WRITE: qi.APP_WRITE, C.QNN_TENSOR_TYPE_APP_READ: qi.APP_READ,
          C.QNN_TENSOR_TYPE_NATIVE: qi.NATIVE, C.QNN_TENSOR_TYPE_STATIC: qi.STATIC}
_MAX_RANK = 8
# |offset| bound of a fixed-point tensor. npurt converts and computes quantized values in float32, where each operation
# on (q + offset) * scale errs by up to |q + offset| * 2**-24 quanta: with |q + offset| <= 2**20 for every 8- and
# 16-bit q that stays within 1/16 quantum (a larger offset gives wrong stored values, e.g. 255 everywhere).
_MAX_OFFSET = 2 ** 20 - 2 ** 16
_IDS = itertools.count(1)


def _body(t: Qnn_Tensor_t) -> Any:
    if int(t.version) == C.QNN_TENSOR_VERSION_1:
        return t.v1
    if int(t.version) == C.QNN_TENSOR_VERSION_2:
        return t.v2
    raise NpuError(ErrorCode.INVALID_ARGUMENT, f"unknown tensor version {int(t.version)}")


# ---------------------------------------------------------------------------------------------------------
# Qnn_Tensor_t -> QnnTensor
# ---------------------------------------------------------------------------------------------------------
def _quant(v: Any, dtype: str, dims: tuple[int, ...], name: str) -> qi.Quant:
    q = v.quantizeParams
    enc = int(q.quantizationEncoding)
    if int(q.encodingDefinition) != C.QNN_DEFINITION_DEFINED:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tensor {name!r}: a fixed-point tensor needs defined "
                                                   f"quantization parameters")
    if enc in (C.QNN_QUANTIZATION_ENCODING_SCALE_OFFSET, C.QNN_QUANTIZATION_ENCODING_BW_SCALE_OFFSET):
        so = q.scaleOffsetEncoding if enc == C.QNN_QUANTIZATION_ENCODING_SCALE_OFFSET else q.bwScaleOffsetEncoding
        scale, offset, axis = np.array(so.scale, np.float32), np.array(int(so.offset), np.int64), None
    elif enc == C.QNN_QUANTIZATION_ENCODING_AXIS_SCALE_OFFSET:
        ax = q.axisScaleOffsetEncoding
        n, axis = int(ax.numScaleOffsets), int(ax.axis)
        if not 0 <= axis < len(dims) or n != dims[axis]:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tensor {name!r}: axis {axis} with {n} scale/offsets for "
                                                       f"dims {list(dims)}")
        raw = safe_read(field_pointer(ax, Qnn_AxisScaleOffset_t, "scaleOffset"),
                        n * ctypes.sizeof(Qnn_ScaleOffset_t))
        if raw is None:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tensor {name!r}: scaleOffset is not readable")
        pairs = (Qnn_ScaleOffset_t * n).from_buffer_copy(raw)
        scale = np.array([p.scale for p in pairs], np.float32)
        offset = np.array([p.offset for p in pairs], np.int64)
    elif enc == C.QNN_QUANTIZATION_ENCODING_BW_AXIS_SCALE_OFFSET:
        bw = q.bwAxisScaleOffsetEncoding
        n, axis = int(bw.numElements), int(bw.axis)
        if not 0 <= axis < len(dims) or n != dims[axis]:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tensor {name!r}: axis {axis} with {n} scales for dims "
                                                       f"{list(dims)}")
        scales = safe_read(pointer_value(ctypes.cast(bw.scales, ctypes.c_void_p).value), 4 * n)
        offs_addr = pointer_value(ctypes.cast(bw.offsets, ctypes.c_void_p).value)
        offsets = safe_read(offs_addr, 4 * n) if offs_addr else bytes(4 * n)
        if scales is None or offsets is None:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tensor {name!r}: scales / offsets are not readable")
        scale = np.frombuffer(scales, np.float32).copy()
        offset = np.frombuffer(offsets, np.int32).astype(np.int64)
    else:
        raise NpuError(ErrorCode.NOT_SUPPORTED, f"tensor {name!r}: quantization encoding {enc} is not supported")
    if not np.all(np.isfinite(scale)) or np.any(scale < np.finfo(np.float32).tiny):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tensor {name!r}: scale must be a positive normal float32, got "
                                                   f"{scale.min()}")
    worst = int(offset.flat[np.abs(offset).argmax()]) if offset.size else 0
    if abs(worst) > _MAX_OFFSET:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tensor {name!r}: offset {worst} is outside +-{_MAX_OFFSET} "
                                                   f"(float = (q + offset) * scale must stay exact in float32)")
    top = (abs(worst) + 2.0 ** (8 * np.dtype(dtype).itemsize)) * float(scale.max(initial=0.0))
    if top > float(np.finfo(np.float32).max):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tensor {name!r}: scale {float(scale.max())} overflows float32 "
                                                   f"((q + offset) * scale)")
    return qi.Quant(scale, offset, axis)


def decode_tensor(t: Any, what: str, *, static_data: bool = True) -> tuple[qi.QnnTensor, int, int]:
    """(QnnTensor, id, QNN data type) of a `Qnn_Tensor_t`; NpuError INVALID_ARGUMENT / NOT_SUPPORTED on anything
    npurt cannot take. A STATIC tensor's data is copied now (`static_data`)."""
    t = as_struct(t, Qnn_Tensor_t, address=True)
    if t is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} is NULL or not a Qnn_Tensor_t")
    v = _body(t)
    name = field_text(v, Qnn_TensorV1_t, "name", f"{what} name")
    if not name:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} has no name")
    kind = _KINDS.get(int(v.type))
    if kind is None:
        raise NpuError(ErrorCode.NOT_SUPPORTED, f"tensor {name!r}: tensor type {int(v.type)} is not supported "
                                                f"(APP_WRITE, APP_READ, NATIVE, STATIC are)")
    if int(v.dataFormat) != C.QNN_TENSOR_DATA_FORMAT_DENSE:
        raise NpuError(ErrorCode.NOT_SUPPORTED, f"tensor {name!r}: only dense tensors are supported")
    dtype_info = DATA_TYPES.get(int(v.dataType))
    if dtype_info is None:
        raise NpuError(ErrorCode.NOT_SUPPORTED, f"tensor {name!r}: data type {int(v.dataType):#x} is not supported")
    dtype, fixed = dtype_info
    rank = int(v.rank)
    dims = read_u32_array(field_pointer(v, Qnn_TensorV1_t, "dimensions"), rank) if rank <= _MAX_RANK else None
    if dims is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tensor {name!r}: rank {rank} with unreadable dimensions")
    if any(d == 0 for d in dims):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tensor {name!r}: dims {dims} has a zero dimension")
    quant = _quant(v, dtype, tuple(dims), name) if fixed else None
    data = None
    if kind == qi.STATIC and static_data:
        nbytes = int(np.prod(dims, dtype=np.int64)) * np.dtype(dtype).itemsize
        if int(v.memType) != C.QNN_TENSORMEMTYPE_RAW:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tensor {name!r}: STATIC data must be a RAW client buffer")
        size, addr = int(v.clientBuf.dataSize), pointer_value(v.clientBuf.data)
        if size != nbytes or not addr:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tensor {name!r}: STATIC data must be {nbytes} bytes "
                                                       f"(dims {dims}, {dtype}), got {size} bytes at {addr:#x}")
        raw = safe_read(addr, nbytes)
        if raw is None:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tensor {name!r}: STATIC data at {addr:#x} is not readable")
        data = np.frombuffer(raw, dtype).reshape(dims).copy()
    return qi.QnnTensor(name, kind, dtype, tuple(dims), quant, data), int(v.id), int(v.dataType)


# ---------------------------------------------------------------------------------------------------------
# Qnn_OpConfig_t -> QnnOp
# ---------------------------------------------------------------------------------------------------------
_SCALARS = {C.QNN_DATATYPE_FLOAT_32: "floatValue", C.QNN_DATATYPE_FLOAT_64: "doubleValue",
            C.QNN_DATATYPE_UINT_64: "uint64Value", C.QNN_DATATYPE_INT_64: "int64Value",
            C.QNN_DATATYPE_UINT_32: "uint32Value", C.QNN_DATATYPE_INT_32: "int32Value",
            C.QNN_DATATYPE_UINT_16: "uint16Value", C.QNN_DATATYPE_INT_16: "int16Value",
            C.QNN_DATATYPE_UINT_8: "uint8Value", C.QNN_DATATYPE_INT_8: "int8Value",
            C.QNN_DATATYPE_BOOL_8: "bool8Value"}


def _param_value(p: Qnn_Param_t, name: str) -> Any:
    if int(p.paramType) == C.QNN_PARAMTYPE_SCALAR:
        field = _SCALARS.get(int(p.scalarParam.dataType))
        if field is None:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"param {name!r}: scalar data type "
                                                       f"{int(p.scalarParam.dataType):#x} is not supported")
        value = getattr(p.scalarParam, field)
        return bool(value) if field == "bool8Value" else value
    if int(p.paramType) == C.QNN_PARAMTYPE_TENSOR:
        tensor, _, _ = decode_tensor(p.tensorParam, f"param {name!r}")
        if tensor.data is None:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"param {name!r}: a tensor param must be STATIC with data")
        return tensor.values()
    raise NpuError(ErrorCode.INVALID_ARGUMENT, f"param {name!r}: unknown param type {int(p.paramType)}")


def decode_op(config: Any, resolve: Callable[[Any, str], str]) -> qi.QnnOp:
    """A `QnnOp` of a `Qnn_OpConfig_t` (or a pointer to one); `resolve(tensor, what)` names each input / output
    tensor (looking it up among the created ones, or taking its description for validation)."""
    cfg = as_struct(config, Qnn_OpConfig_t, address=True)
    if cfg is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "opConfig is not a Qnn_OpConfig_t")
    if int(cfg.version) != C.QNN_OPCONFIG_VERSION_1:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"unknown op config version {int(cfg.version)}")
    v1 = cfg.v1
    name = field_text(v1, Qnn_OpConfigV1_t, "name", "op name") or ""
    package = field_text(v1, Qnn_OpConfigV1_t, "packageName", "packageName")
    op_type = field_text(v1, Qnn_OpConfigV1_t, "typeName", "typeName")
    if not name or not package or not op_type:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "an op config needs a name, a packageName and a typeName")
    arrays = {}
    for field, count, cls in (("params", v1.numOfParams, Qnn_Param_t), ("inputTensors", v1.numOfInputs,
                                                                         Qnn_Tensor_t),
                              ("outputTensors", v1.numOfOutputs, Qnn_Tensor_t)):
        n = int(count)
        addr = field_pointer(v1, Qnn_OpConfigV1_t, field)
        if n and (n > 4096 or safe_read(addr, n * ctypes.sizeof(cls)) is None):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"op {name!r}: {field} ({n}) is not readable")
        arrays[field] = [cls.from_address(addr + k * ctypes.sizeof(cls)) for k in range(n)]
    params = {}
    for p in arrays["params"]:
        pname = field_text(p, Qnn_Param_t, "name", "param name")
        if not pname:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"op {name!r}: a param has no name")
        params[pname] = _param_value(p, pname)
    ins = [resolve(t, f"op {name!r} input {k}") for k, t in enumerate(arrays["inputTensors"])]
    outs = [resolve(t, f"op {name!r} output {k}") for k, t in enumerate(arrays["outputTensors"])]
    return qi.QnnOp(name, package, op_type, params, ins, outs)


# ---------------------------------------------------------------------------------------------------------
# the objects
# ---------------------------------------------------------------------------------------------------------

def create_tensor(owner: Any, lock: Any, tensor: Any) -> int:
    """`add_tensor(owner, tensor)` under `lock`, its refusal as the tensor API's code (unsupported vs invalid)."""
    with lock:
        if isinstance(owner, BuildGraph):
            owner.check_open(C.QNN_TENSOR_ERROR_INVALID_HANDLE)
        try:
            add_tensor(owner, tensor)
        except NpuError as exc:
            raise QnnError(C.QNN_TENSOR_ERROR_UNSUPPORTED_TENSOR_PARAM if exc.code is ErrorCode.NOT_SUPPORTED
                           else C.QNN_TENSOR_ERROR_INVALID_TENSOR_PARAM, exc.message) from None
    return C.QNN_SUCCESS

class BuildContext(GraphsContext):
    """A context made by contextCreate: its graphs are built op by op; each finalized graph runs in a child
    `QnnContext` holding its compiled model. Registered memory belongs to this context. With WEIGHT_SHARING_ENABLED
    its binary stores weights identical across its graphs once (`model.context_binary`)."""

    def __init__(self, backend: Backend, weight_sharing: bool = False) -> None:
        super().__init__(backend, [], shared=weight_sharing)
        self.finalized = True
        self.building: dict[str, BuildGraph] = {}
        self.tensors: dict[str, qi.QnnTensor] = {}      # context tensors, shared by its graphs
        self.ids: dict[int, str] = {}                   # context tensor ids

    def required_size(self, kind: str) -> int:
        return 0

    def finalize(self, open_graph: Callable) -> None:
        raise QnnError(C.QNN_CONTEXT_ERROR_UNSUPPORTED_FEATURE, "a contextCreate context needs no finalization")

    def binary(self) -> bytes:
        """The context binary of its finalized graphs (in the order they were finalized)."""
        open_graphs = sorted(n for n, g in self.building.items() if not g.finalized)
        if open_graphs or not self.children:
            raise QnnError(C.QNN_CONTEXT_ERROR_GET_BINARY_FAILED,
                           f"a context binary holds finalized graphs; graph(s) {open_graphs} are not finalized"
                           if open_graphs else "the context has no finalized graph")
        return super().binary()

    def free(self) -> None:
        with self.lock:
            if not self.freed:
                for graph in self.building.values():
                    graph.drop()
            super().free()


class BuildGraph:
    """A graph being built: its tensors (by name, with their ids) and ops, until graphFinalize."""

    def __init__(self, ctx: BuildContext, name: str) -> None:
        self.context = ctx
        self.name = name
        self.tensors: dict[str, qi.QnnTensor] = {}
        self.ids: dict[int, str] = {}
        self.io_types: dict[str, int] = {}          # APP_WRITE / APP_READ name -> its Qnn_DataType_t
        self.ops: list[qi.QnnOp] = []
        self.produced: set[str] = set()
        self.finalized = False
        self.htp: dict[str, int] = {}               # graphCreate's HTP configs (`_graph_settings`)
        self.handle = HANDLES.add(self)

    def known(self) -> dict[str, qi.QnnTensor]:
        return {**self.context.tensors, **self.tensors}

    def check_open(self, code: int = C.QNN_GRAPH_ERROR_INVALID_HANDLE) -> None:
        """QnnError unless the graph can still change; called under the context lock, so a graph finalized (or its
        context freed) by another thread since its handle was looked up is seen here."""
        if self.finalized:
            raise QnnError(C.QNN_GRAPH_ERROR_GRAPH_FINALIZED, f"graph {self.name!r} is finalized")
        if self.context.freed:
            raise QnnError(code, f"graph {self.name!r}: its context was freed")

    def lookup(self, t: Any, what: str) -> str:
        """The name of a created tensor an op config refers to (by id, else by name); NpuError if none."""
        tensor = as_struct(t, Qnn_Tensor_t, address=True)
        v = _body(tensor)
        ids = {**self.context.ids, **self.ids}
        if int(v.id) in ids:
            return ids[int(v.id)]
        name = field_text(v, Qnn_TensorV1_t, "name", f"{what} name")
        if name and name in self.known():
            return name
        raise NpuError(ErrorCode.INVALID_INPUT, f"{what} ({name!r}, id {int(v.id)}) is not a tensor of graph "
                                                f"{self.name!r} or its context")

    def drop(self) -> None:
        if not self.finalized:
            HANDLES.remove(self.handle)


def add_tensor(owner: "BuildGraph | BuildContext", t: Any) -> None:
    """tensorCreate*Tensor: decode, check the name is new, assign and write back the id."""
    tensor, _, qnn_type = decode_tensor(t, "tensor")
    graphs = [owner] if isinstance(owner, BuildGraph) else list(owner.building.values())
    ctx = owner.context if isinstance(owner, BuildGraph) else owner
    if tensor.name in ctx.tensors or any(tensor.name in g.tensors for g in graphs):
        raise QnnError(C.QNN_TENSOR_ERROR_ALREADY_EXISTS, f"a tensor named {tensor.name!r} already exists")
    if isinstance(owner, BuildContext) and tensor.kind != qi.STATIC:
        raise QnnError(C.QNN_TENSOR_ERROR_UNSUPPORTED_TENSOR_PARAM, f"context tensor {tensor.name!r}: npurt "
                                                                    f"shares STATIC context tensors only")
    if tensor.kind in (qi.APP_WRITE, qi.APP_READ) and (tensor.quant is not None and tensor.quant.axis is not None):
        raise QnnError(C.QNN_TENSOR_ERROR_UNSUPPORTED_TENSOR_PARAM, f"tensor {tensor.name!r}: graph I/O must be "
                                                                    f"quantized per tensor")
    new_id = next(_IDS)
    body = _body(as_struct(t, Qnn_Tensor_t, address=True))
    cell = ctypes.c_uint32(new_id)
    if not safe_write(ctypes.addressof(body), ctypes.addressof(cell), 4):
        raise QnnError(C.QNN_TENSOR_ERROR_INVALID_TENSOR_PARAM, f"tensor {tensor.name!r} is not writable (id)")
    if isinstance(owner, BuildGraph):
        owner.tensors[tensor.name] = tensor
        owner.ids[new_id] = tensor.name
        if tensor.kind in (qi.APP_WRITE, qi.APP_READ):
            owner.io_types[tensor.name] = qnn_type
    else:
        owner.tensors[tensor.name] = tensor
        owner.ids[new_id] = tensor.name


def _io_declaration(t: qi.QnnTensor, qnn_type: int, qnn_id: int) -> dict:
    """What a finalized graph's I/O tensor looks like to QNN (`CompiledModel.meta["qnn_tensors"]`), with the id
    tensorCreate gave it (graphExecute pairs the client's tensors by it)."""
    out: dict[str, Any] = {"qnn_type": qnn_type, "dtype": t.dtype, "dims": list(t.dims), "id": qnn_id}
    if t.quant is not None:
        out.update(scale=float(t.quant.scale), offset=int(t.quant.offset))
    return out


def finalize_graph(graph: BuildGraph, compile_ir: Callable) -> None:
    """graphFinalize: translate, compile, load into a child context; the QnnGraph takes over the handle."""
    tensors = graph.known()
    inputs = [n for n, t in graph.tensors.items() if t.kind == qi.APP_WRITE]
    outputs = [n for n, t in graph.tensors.items() if t.kind == qi.APP_READ]
    try:
        model = qi.translate(graph.name, tensors, graph.ops, inputs, outputs)
        compiled = compile_ir(model, graph.context.backend.profile.name)
    except NpuError as exc:
        raise QnnError(C.QNN_GRAPH_ERROR_FINALIZE_FAILED, f"graph {graph.name!r}: {exc.message}") from exc
    ids = {name: i for i, name in graph.ids.items()}
    if graph.htp:
        compiled.meta[HTP_META] = dict(graph.htp)
    compiled.meta["qnn_tensors"] = {n: _io_declaration(tensors[n], graph.io_types[n], ids[n]) for n in inputs + outputs}
    ctx = graph.context
    child = QnnContext(ctx.backend, compiled, deferred=False, priority=ctx.priority, concurrent=False,
                       multi_contexts=False)
    try:
        qgraph = ctx.add_child(child, QnnGraph)
    except QnnError as exc:
        if C.qnn_error_code(exc.code) // 1000 == 1:          # common codes (MEM_ALLOC, ...) are graph codes too
            raise
        raise QnnError(C.QNN_GRAPH_ERROR_FINALIZE_FAILED, f"graph {graph.name!r}: {exc.message}") from exc
    ctx.models.append(compiled)
    HANDLES.remove(qgraph.handle)
    qgraph.handle = graph.handle
    HANDLES.replace(graph.handle, qgraph)
    graph.finalized = True
