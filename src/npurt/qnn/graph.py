"""A QNN graph of a finalized context: its I/O tensors and `graphExecute` over registered or client memory.

Graph I/O tensors are the compiled model's native input/output tensors (the layout and type the HTP reads and
writes: e.g. NHWC float16/float32, int8 with scale/offset; NCHW when the binary was made with `--qnn-io-layout
nchw`). `TensorSpec` describes one and `io_tensors` builds the
`Qnn_Tensor_t` lists an application fills (what QnnSystemContext_getBinaryInfo gives on a device).

Execution (`QnnGraph.execute`) goes through the context's `npurt.runtime.Context`, with the graph's I/O path
(`GraphIo`, a zero-copy path that also converts quantized tensors around each run) plugged in: each tensor's memory
is bound with `Context.bind` and `Context.run` runs the model, so binding rules, the run guard, perf counters and
teardown are the runtime's. What is QNN's:
- MEMHANDLE tensors are zero-copy: the registered memory itself is bound. The handle must be an ION /
  SHARED_BUFFER handle registered in *this graph's* context, its memory still allocated and at least the tensor's
  bytes (else 6004 INVALID_TENSOR).
- RAW tensors are copied through the graph's internal I/O buffers (the copy the HTP backend makes for client
  buffers), reading / writing the client pointer with EFAULT-safe copies (6004 on a bad pointer or short size).
- Weights are read from the context's weights region on every run (`cache_weights=False`), activations live in
  the VTCM + spill-fill arena.
- Sequential-only resources (external weights / spill-fill in FastRPC; spill-fill in Non-RPC without
  REGISTER_CONCURRENT_RESOURCE_SHARING) may not be used by two executing graphs at once: the second call returns
  QNN_GRAPH_ERROR_UNSUPPORTED_FEATURE (1000) at once. Graphs of contexts that share buffers under concurrent
  resource sharing queue on the HTP instead (one graph at a time per HTP).
"""
from __future__ import annotations

import ctypes
import dataclasses
import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.runtime.user_io import pack_input, unpack_output
from npurt.memory import Buffer
from npurt.model.attrs import QntType, TensorAttr
from npurt.qnn import constants as C
from npurt.memory.raw import check_writable, field_text, pointer_value, safe_copy_in, safe_write
from npurt.qnn.backend import HANDLES
from npurt.qnn.boundary import QnnError, from_npu
from npurt.qnn.mem_registry import ION, REGISTRY, SHARED, SPILLFILL, VTCMBACKUP, WEIGHTS
from npurt.qnn.structs import Qnn_Tensor_t
from npurt.runtime import MemRef
from npurt.runtime.zero_copy import ZeroCopyIo
from npurt.tensor import DType, Layout

if TYPE_CHECKING:
    from npurt.qnn.context import QnnContext

log = logging.getLogger("npurt.qnn")

_QNN_TYPE = {DType.FLOAT32: C.QNN_DATATYPE_FLOAT_32, DType.FLOAT16: C.QNN_DATATYPE_FLOAT_16,
             DType.BFLOAT16: C.QNN_DATATYPE_BFLOAT_16, DType.INT8: C.QNN_DATATYPE_INT_8,
             DType.UINT8: C.QNN_DATATYPE_UINT_8, DType.INT16: C.QNN_DATATYPE_INT_16,
             DType.UINT16: C.QNN_DATATYPE_UINT_16, DType.INT32: C.QNN_DATATYPE_INT_32,
             DType.UINT32: C.QNN_DATATYPE_UINT_32, DType.INT64: C.QNN_DATATYPE_INT_64,
             DType.BOOL: C.QNN_DATATYPE_BOOL_8}


GRAPH_IO = ("float32", "float16", "quantized")
"""How a context binary's graph I/O tensors appear (`CompiledModel.meta["qnn_io"]`, set by `npurt convert
--qnn-io` or `set_graph_io`): FLOAT_32 (the default, as the HTP backend keeps float graph I/O and converts inside the
graph), FLOAT_16, or quantized (SFIXED_POINT_8 with the tensor's scale/offset; int8 binaries only)."""


GRAPH_IO_LAYOUTS = ("nhwc", "nchw")
"""The layout of a context binary's 4-D graph I/O tensors (`CompiledModel.meta["qnn_io_layout"]`, set by `npurt
convert --qnn-io-layout` or `set_graph_io_layout`): NHWC (the default, the HTP's own layout) or NCHW (what
onnxruntime's EPContext models declare: the EP checks only byte sizes and feeds NCHW data)."""


def set_graph_io_layout(compiled: Any, layout: str) -> Any:
    """Choose the layout of `compiled`'s 4-D graph I/O tensors (see `GRAPH_IO_LAYOUTS`); returns `compiled`."""
    if layout not in GRAPH_IO_LAYOUTS:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"graph I/O layout {layout!r}: use one of "
                                                   f"{', '.join(GRAPH_IO_LAYOUTS)}")
    compiled.meta["qnn_io_layout"] = layout
    return compiled


def set_graph_io(compiled: Any, io: str) -> Any:
    """Choose how `compiled`'s graph I/O tensors appear to QNN (see `GRAPH_IO`); returns `compiled`."""
    if io not in GRAPH_IO:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"graph I/O {io!r}: use one of {', '.join(GRAPH_IO)}")
    if io == "quantized" and compiled.precision != "int8":
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"quantized graph I/O needs an int8 binary (this one is "
                                                   f"{compiled.precision})")
    compiled.meta["qnn_io"] = io
    return compiled


@dataclass(frozen=True)
class TensorSpec:
    """One graph I/O tensor as QNN shows it: name, id, data type, dims (NHWC for 4-D), byte size, scale/offset,
    the `user` attr of that format (what the graph's memory holds) and the model's native attr (what the kernels
    read and write; the graph converts between the two)."""

    index: int
    name: str
    is_input: bool
    data_type: int
    dims: tuple[int, ...]
    nbytes: int
    scale: float
    offset: int              # QNN scale/offset: float = (q + offset) * scale
    user: TensorAttr
    attr: TensorAttr
    logical_shape: tuple[int, ...]
    qnn_id: int              # the id QNN names the tensor by (the one tensorCreate gave a built graph's tensor)

    @property
    def quantized(self) -> bool:
        """Quantized I/O: the graph (de)quantizes through a float staging buffer."""
        return self.user.qnt_type is QntType.AFFINE_ASYMMETRIC

    def pack(self, x: np.ndarray, view: np.ndarray) -> None:
        """Write a user array (the ONNX model's layout, NCHW for images) into `view` in this tensor's format."""
        pack_input(self.user, x, view.reshape(-1).view(np.uint8)[:self.nbytes], shape=self.logical_shape)

    def unpack(self, view: np.ndarray) -> np.ndarray:
        """This tensor's bytes in `view` as a float32 array in the ONNX model's layout (a copy)."""
        return unpack_output(self.user, view.reshape(-1).view(np.uint8)[:self.nbytes], self.logical_shape)

    def tensor(self) -> Qnn_Tensor_t:
        """A fresh `Qnn_Tensor_t` (version 1, memType RAW, no data) describing this tensor."""
        t = Qnn_Tensor_t()
        t.version = C.QNN_TENSOR_VERSION_1
        v = t.v1
        v.id = self.qnn_id
        v.name = self.name.encode()
        v.type = C.QNN_TENSOR_TYPE_APP_WRITE if self.is_input else C.QNN_TENSOR_TYPE_APP_READ
        v.dataFormat = C.QNN_TENSOR_DATA_FORMAT_DENSE
        v.dataType = self.data_type
        if self.quantized:
            v.quantizeParams.encodingDefinition = C.QNN_DEFINITION_DEFINED
            v.quantizeParams.quantizationEncoding = C.QNN_QUANTIZATION_ENCODING_SCALE_OFFSET
            v.quantizeParams.scaleOffsetEncoding.scale = self.scale
            v.quantizeParams.scaleOffsetEncoding.offset = self.offset
        else:
            v.quantizeParams.encodingDefinition = C.QNN_DEFINITION_UNDEFINED
            v.quantizeParams.quantizationEncoding = C.QNN_QUANTIZATION_ENCODING_UNDEFINED
        v.rank = len(self.dims)
        v.dimensions = (ctypes.c_uint32 * len(self.dims))(*self.dims)   # kept alive by ctypes' _objects
        v.memType = C.QNN_TENSORMEMTYPE_RAW
        return t


def _spec(index: int, is_input: bool, native: TensorAttr, st: Any, io: str, layout: str = "nhwc") -> TensorSpec:
    shape = tuple(int(d) for d in st.shape)
    four_d = len(shape) == 4
    nhwc = four_d and layout == "nhwc"
    dims = (shape[0], shape[2], shape[3], shape[1]) if nhwc else shape
    quantized = io == "quantized" and st.quantized
    dtype = native.type if quantized else (DType.FLOAT16 if io == "float16" else DType.FLOAT32)
    nbytes = dtype.nbytes(math.prod(shape))
    fmt = (Layout.NHWC if nhwc else Layout.NCHW) if four_d else Layout.UNDEFINED
    user = dataclasses.replace(native, fmt=fmt, type=dtype, dims=list(dims),
                               n_dims=len(dims), n_elems=math.prod(shape), size=nbytes, size_with_stride=nbytes,
                               w_stride=0, h_stride=0, pass_through=0,
                               qnt_type=QntType.AFFINE_ASYMMETRIC if quantized else QntType.NONE,
                               scale=float(st.scale) if quantized else 1.0, zp=int(st.zp) if quantized else 0)
    qtype = _QNN_TYPE[dtype]
    if quantized:
        qtype = C.QNN_DATATYPE_SFIXED_POINT_8 if dtype is DType.INT8 else C.QNN_DATATYPE_UFIXED_POINT_8
    return TensorSpec(index, native.name, is_input, qtype, dims, nbytes, float(st.scale), -int(st.zp), user, native,
                      shape, index + (0 if is_input else 1000))


def _declared_spec(index: int, is_input: bool, native: TensorAttr, st: Any, declared: dict) -> TensorSpec:
    """The spec of an I/O tensor of a graph built through the graph API: exactly as its APP_WRITE / APP_READ tensor
    was declared (data type, dims in the graph's own layout, scale/offset); the IR's shape is those dims."""
    shape = tuple(int(d) for d in st.shape)
    dtype = DType.parse(declared["dtype"])
    quantized = declared.get("scale") is not None
    nbytes = dtype.nbytes(math.prod(shape))
    offset = int(declared.get("offset") or 0)
    user = dataclasses.replace(native, fmt=Layout.NCHW if len(shape) == 4 else Layout.UNDEFINED, type=dtype,
                               dims=list(shape), n_dims=len(shape), n_elems=math.prod(shape), size=nbytes,
                               size_with_stride=nbytes, w_stride=0, h_stride=0, pass_through=0,
                               qnt_type=QntType.AFFINE_ASYMMETRIC if quantized else QntType.NONE,
                               scale=float(declared["scale"]) if quantized else 1.0, zp=-offset if quantized else 0)
    return TensorSpec(index, native.name, is_input, int(declared["qnn_type"]), shape, nbytes,
                      float(declared.get("scale") or 1.0), offset, user, native, shape,
                      int(declared.get("id", index + (0 if is_input else 1000))))


def tensor_specs(ctx_or_model: Any) -> tuple[list[TensorSpec], list[TensorSpec]]:
    """The graph's input and output tensor specs (from a `QnnContext` or a `CompiledModel`)."""
    m = getattr(ctx_or_model, "compiled", ctx_or_model)
    io, layout = m.meta.get("qnn_io", "float32"), m.meta.get("qnn_io_layout", "nhwc")
    declared = m.meta.get("qnn_tensors", {})        # a graph built through the graph API
    out: tuple[list[TensorSpec], list[TensorSpec]] = ([], [])
    for is_input, attrs in ((True, m.native_input_attrs), (False, m.native_output_attrs)):
        for i, attr in enumerate(attrs):
            st = m.storage[attr.name]
            spec = _declared_spec(i, is_input, attr, st, declared[attr.name]) if attr.name in declared \
                else _spec(i, is_input, attr, st, io, layout)
            (out[0] if is_input else out[1]).append(spec)
    return out


def io_tensors(ctx_or_model: Any) -> tuple[list[Qnn_Tensor_t], list[Qnn_Tensor_t]]:
    """Fresh `Qnn_Tensor_t` lists for the graph's inputs and outputs (memType RAW; set memType/memHandle)."""
    ins, outs = tensor_specs(ctx_or_model)
    return [s.tensor() for s in ins], [s.tensor() for s in outs]


def _body(t: Qnn_Tensor_t):
    return t.v2 if int(t.version) == C.QNN_TENSOR_VERSION_2 else t.v1


def _tensor_name(body: Any) -> str | None:
    """The name a client tensor carries (read from its pointer without trusting it; None for NULL or unreadable)."""
    try:
        return field_text(body, type(body), "name", "tensor name")
    except NpuError:
        return None


def pair_tensors(specs: Sequence[TensorSpec], given: Sequence[Any], what: str, graph: str) -> list[Any]:
    """The client's tensors in the graph's order: each paired with the graph's tensor of its id, else of its name,
    in any order. QnnError 6004 naming a tensor the graph does not have, or a graph tensor given twice."""
    by_id = {s.qnn_id: s for s in specs}
    by_name = {s.name: s for s in specs}
    ordered: list[Any] = [None] * len(specs)
    for t in given:
        if not isinstance(t, Qnn_Tensor_t) or int(t.version) not in (C.QNN_TENSOR_VERSION_1, C.QNN_TENSOR_VERSION_2):
            return list(given)                      # _resolve says what is wrong with it, by position
        body = _body(t)
        spec = by_id.get(int(body.id))
        name = None
        if spec is None:
            name = _tensor_name(body)
            spec = by_name.get(name) if name else None
        if spec is None:
            raise QnnError(C.QNN_GRAPH_ERROR_INVALID_TENSOR, f"{what} tensor {name!r} (id {int(body.id)}) is not an "
                                                             f"{what} of graph {graph!r}")
        if ordered[spec.index] is not None:
            raise QnnError(C.QNN_GRAPH_ERROR_INVALID_TENSOR, f"{what} {spec.name!r} is given twice")
        ordered[spec.index] = t
    return ordered


class QnnGraph:
    """The graph of a finalized context, bound to its memory through the context's runtime context."""

    def __init__(self, ctx: "QnnContext") -> None:
        self.context: "QnnContext | None" = ctx
        self.name = ctx.compiled.graph.name
        self.inputs, self.outputs = tensor_specs(ctx)
        device = ctx.backend.device
        self._io: list[Buffer] = []
        self._fstage: list[Buffer | None] = []      # float32 staging of quantized I/O (None: bound directly)
        try:
            for spec in self.inputs + self.outputs:
                self._io.append(device.alloc(max(spec.nbytes, 1), owner="qnn-io", name=spec.name))
                self._fstage.append(device.alloc(4 * math.prod(spec.logical_shape), owner="qnn-io",
                                                 name=f"float-{spec.name}") if spec.quantized else None)
        except BaseException:
            self._free_io()                         # no handle yet: nothing else to undo
            raise
        self._bound_key: tuple | None = None
        self._run_io = GraphIo(ctx.runtime, self.inputs, self.outputs, self._fstage)
        ctx.runtime.use_io(self._run_io)
        self.handle = HANDLES.add(self)

    @property
    def runtime(self) -> Any:
        """The `npurt.runtime.Context` this graph runs on (None once its context was freed)."""
        ctx = self.context
        return ctx.runtime if ctx is not None else None

    @property
    def executor(self) -> Any:
        """The runtime's executor bound by the last execute (None before the first one or after contextFree)."""
        rt = self.runtime
        return rt.executor if rt is not None else None

    @property
    def runs(self) -> int:
        """Completed executions (the runtime context's perf counter)."""
        rt = self.runtime
        return rt.perf.runs if rt is not None else 0

    # -- lifetime --------------------------------------------------------------------------------------
    def release(self) -> None:
        """Drop memory and the context (contextFree). The handle is retired, not dropped: for a while a later
        execute returns QNN_GRAPH_ERROR_INVALID_CONTEXT instead of an unknown-handle error."""
        self._free_io()
        self._bound_key = None
        if self.context is not None:
            HANDLES.retire(self.handle)
        self.context = None

    def _free_io(self) -> None:
        """Free the graph's I/O and staging buffers (also those of a constructor that failed part way)."""
        for buf in self._io + [b for b in self._fstage if b is not None]:
            if buf.alive:
                buf.device.free(buf)
        self._io, self._fstage = [], []

    # -- execute ---------------------------------------------------------------------------------------
    def _resolve(self, spec: TensorSpec, t: Any, io_buf: Buffer) -> tuple[Any, MemRef, int]:
        """(bind key, memory to bind, client pointer for RAW or 0) for one tensor; QnnError 6004 if unusable."""
        what = f"{'input' if spec.is_input else 'output'} {spec.index} ({spec.name})"
        if not isinstance(t, Qnn_Tensor_t):
            raise QnnError(C.QNN_GRAPH_ERROR_INVALID_TENSOR, f"{what}: not a Qnn_Tensor_t")
        if int(t.version) not in (C.QNN_TENSOR_VERSION_1, C.QNN_TENSOR_VERSION_2):
            raise QnnError(C.QNN_GRAPH_ERROR_INVALID_TENSOR, f"{what}: unknown tensor version {int(t.version)}")
        body = _body(t)
        mem_type = int(body.memType)
        if mem_type == C.QNN_TENSORMEMTYPE_MEMHANDLE:
            handle = pointer_value(body.memHandle)
            if not handle:
                raise QnnError(C.QNN_GRAPH_ERROR_INVALID_TENSOR, f"{what}: No memHandle provided. Unable to execute.")
            rec = REGISTRY.get(handle)
            if rec is None or rec.kind not in (ION, SHARED):
                raise QnnError(C.QNN_GRAPH_ERROR_INVALID_TENSOR, f"{what}: {handle:#x} is not a registered tensor "
                                                                 f"memory handle")
            if rec.context is not self.context and rec.context is not self.context.parent:
                raise QnnError(C.QNN_GRAPH_ERROR_INVALID_TENSOR,
                               f"{what}: memory handle {handle:#x} is registered with another context")
            if rec.nbytes < spec.nbytes:
                raise QnnError(C.QNN_GRAPH_ERROR_INVALID_TENSOR,
                               f"{what}: handle covers {rec.nbytes} bytes, the tensor needs {spec.nbytes}")
            if not rec.alive():
                raise QnnError(C.QNN_GRAPH_ERROR_INVALID_TENSOR,
                               f"{what}: the memory of handle {handle:#x} was freed while registered")
            return ("h", handle), MemRef(rec.buffer, rec.buf_offset, spec.nbytes, spec.name), 0
        if mem_type == C.QNN_TENSORMEMTYPE_RAW:
            data, size = pointer_value(body.clientBuf.data), int(body.clientBuf.dataSize)
            if not data or size < spec.nbytes:
                raise QnnError(C.QNN_GRAPH_ERROR_INVALID_TENSOR,
                               f"{what}: clientBuf needs a pointer and {spec.nbytes} bytes (got {size})")
            return ("raw",), MemRef(io_buf, 0, spec.nbytes, spec.name), data
        raise QnnError(C.QNN_GRAPH_ERROR_INVALID_TENSOR, f"{what}: memType {mem_type} is not supported")

    def _sequential_keys(self, ctx: "QnnContext") -> list[tuple]:
        """Memory this execution must not share with another executing graph."""
        keys = []
        for kind, rec in ctx.external.items():
            if kind == WEIGHTS or (kind == SPILLFILL and not ctx.concurrent):
                keys.append(rec.key)
        return keys

    def execute(self, inputs: Sequence[Any], outputs: Sequence[Any], collect_perf: bool = False) -> None:
        """graphExecute; QnnError with the QNN code on failure. `collect_perf`: time every op (a DETAILED
        profile), read back from `runtime.perf`."""
        ctx = self.context
        if ctx is None or ctx.freed:
            raise QnnError(C.QNN_GRAPH_ERROR_INVALID_CONTEXT, f"graph {self.name!r}: its context was freed")
        if len(inputs) != len(self.inputs) or len(outputs) != len(self.outputs):
            raise QnnError(C.QNN_GRAPH_ERROR_INVALID_ARGUMENT,
                           f"graph {self.name!r} has {len(self.inputs)} inputs and {len(self.outputs)} outputs, "
                           f"got {len(inputs)} and {len(outputs)}")
        inputs = pair_tensors(self.inputs, inputs, "input", self.name)
        outputs = pair_tensors(self.outputs, outputs, "output", self.name)
        core = ctx.backend.core
        keys = self._sequential_keys(ctx)
        shared = [r.key for k, r in ctx.external.items() if k in (SPILLFILL, VTCMBACKUP)] if ctx.concurrent else []
        with core.state_lock:
            for key in keys + shared:
                other = core.busy.get(key)
                if other is not None and (key in keys or not other[1]):
                    raise QnnError(C.QNN_GRAPH_ERROR_UNSUPPORTED_FEATURE,
                                   f"graph {self.name!r}: a graph sharing its external buffer is executing; this "
                                   f"buffer is supported only with sequential execution")
            for key in keys + shared:
                core.busy[key] = (self, key not in keys)
        try:
            with ctx.lock, core.exec_lock:
                if ctx.freed or ctx.runtime is None:
                    raise QnnError(C.QNN_GRAPH_ERROR_INVALID_CONTEXT, f"graph {self.name!r}: context freed")
                self._run(ctx, core, inputs, outputs, collect_perf)
        finally:
            with core.state_lock:
                for key in keys + shared:
                    if core.busy.get(key, (None,))[0] is self:
                        del core.busy[key]

    def _run(self, ctx: "QnnContext", core, inputs: Sequence[Any], outputs: Sequence[Any],
             collect_perf: bool = False) -> None:
        for rec in ctx.external.values():
            if not rec.alive():
                raise QnnError(C.QNN_GRAPH_ERROR_MEM_ALLOC,
                               f"the context's {rec.kind} buffer was freed while registered")
        rt = ctx.runtime
        specs = self.inputs + self.outputs
        resolved = [self._resolve(s, t, b) for s, t, b in zip(specs, list(inputs) + list(outputs), self._io)]
        n_in = len(self.inputs)
        for (_, _, data), spec in zip(resolved[n_in:], self.outputs):     # every destination, before any write
            if data:
                try:
                    check_writable(data, spec.nbytes, f"output {spec.index} ({spec.name}): clientBuf.data")
                except NpuError as exc:
                    raise QnnError(C.QNN_GRAPH_ERROR_INVALID_TENSOR, exc.message) from None
        for (_, ref, data), spec in zip(resolved[:n_in], self.inputs):
            if data and not safe_copy_in(data, (ctypes.c_char * spec.nbytes).from_buffer(ref.device_u8()),
                                         spec.nbytes):
                raise QnnError(C.QNN_GRAPH_ERROR_INVALID_TENSOR,
                               f"input {spec.index} ({spec.name}): clientBuf.data {data:#x} is not readable")
        key = tuple(k for k, _, _ in resolved)
        handles = [k[1] for k in key if k[0] == "h"]
        if handles:
            log.info("<I> graphExecute %r: %d of %d tensors on memory handles %s", self.name, len(handles), len(key),
                     [hex(h) for h in handles])
        if key != self._bound_key:
            self._bound_key = None
            for (_, ref, _), spec, stage in zip(resolved, specs, self._fstage):
                try:                                        # QNN format -> native: converted around each run
                    if stage is None:
                        rt.bind(ref, spec.user)
                    else:
                        rt.bind(MemRef(stage, 0, stage.size, spec.name), _float_attr(spec.user))
                except NpuError as exc:
                    raise from_npu(exc, "graph", spec.name, general=C.QNN_GRAPH_ERROR_INVALID_TENSOR) from exc
            self._bound_key = key
        self._run_io.refs = [ref for _, ref, _ in resolved]
        _vtcm_handover(ctx, core)
        try:
            if collect_perf:                                # GraphIo converts the quantized tensors around it
                rt.run(collect_perf=True)
            else:
                rt.run()
        except NpuError as exc:
            raise from_npu(exc, "graph", f"graph {self.name!r} failed") from exc
        for (_, ref, data), spec in zip(resolved[n_in:], self.outputs):
            if data and not safe_write(data, ref.device_u8().ctypes.data, spec.nbytes):
                raise QnnError(C.QNN_GRAPH_ERROR_INVALID_TENSOR,
                               f"output {spec.index} ({spec.name}): clientBuf.data {data:#x} is not writable")


class GraphIo(ZeroCopyIo):
    """The graph's I/O path on its runtime context: the zero-copy bindings of its tensors (their memory, or the
    float32 staging of a quantized tensor), and QNN's side of a run — quantized inputs dequantized into their
    staging before it, float32 outputs quantized into the tensor's memory after it."""

    name = "qnn_graph"

    def __init__(self, rt: Any, inputs: Sequence[TensorSpec], outputs: Sequence[TensorSpec],
                 stages: Sequence[Any]) -> None:
        super().__init__(rt)
        self._ins, self._outs = list(inputs), list(outputs)
        self._stages = stages           # the graph's float32 staging per tensor (None: bound directly)
        self.refs: list[MemRef] = []    # the memory of each tensor in this execution (set by QnnGraph._run)

    def before_run(self) -> None:
        for ref, spec, stage in zip(self.refs, self._ins, self._stages):
            if stage is not None:
                _dequantize(spec, ref.device_u8(), stage.device_view(np.float32))
        super().before_run()

    def after_run(self) -> None:
        super().after_run()
        n_in = len(self._ins)
        for ref, spec, stage in zip(self.refs[n_in:], self._outs, self._stages[n_in:]):
            if stage is not None:
                _quantize(spec, stage.device_view(np.float32), ref.device_u8())


def _float_attr(user: TensorAttr) -> TensorAttr:
    """The float32 twin of a quantized I/O format (what its staging buffer holds)."""
    n = user.n_elems
    return dataclasses.replace(user, type=DType.FLOAT32, qnt_type=QntType.NONE, scale=1.0, zp=0, size=4 * n,
                               size_with_stride=4 * n)


def _dequantize(spec: TensorSpec, src: np.ndarray, dst: np.ndarray) -> None:
    """Quantized QNN input bytes -> float32 values: float = (q + offset) * scale."""
    n = dst.size
    q = src[:spec.nbytes].view(spec.user.type.numpy_dtype)[:n]
    np.multiply(q.astype(np.float32) + np.float32(spec.offset), np.float32(spec.scale), out=dst[:n])


def _quantize(spec: TensorSpec, src: np.ndarray, dst: np.ndarray) -> None:
    """float32 output values -> quantized QNN output bytes: q = round(float / scale) - offset, saturated."""
    dt = spec.user.type
    lo, hi = dt.range()
    q = np.clip(np.rint(src / np.float32(spec.scale)) - spec.offset, lo, hi).astype(dt.numpy_dtype)
    np.copyto(dst[:spec.nbytes], q.reshape(-1).view(np.uint8))


def _vtcm_handover(ctx: "QnnContext", core) -> None:
    """The VTCM passes to `ctx`: the previous owner's VTCM image is backed up into its VTCM backup buffer when it
    registered one. Runs under the HTP lock. npurt runs a graph to completion before the next one starts (one
    graph at a time per HTP), so an image is never restored: no graph resumes mid-run. The backup is the real
    write the HTP makes when another context takes the VTCM."""
    prev = core.vtcm_owner
    if prev is ctx:
        return
    backup = prev.external.get(VTCMBACKUP) if prev is not None and not prev.freed else None
    if backup is not None and backup.alive():
        src = prev.vtcm_view()
        if src is not None:
            backup.view()[:src.size] = src
    elif prev is not None and not prev.freed and _group_backup(prev) is not None:
        src = prev.vtcm_view()
        if src is not None:
            _group_backup(prev).device_view()[:src.size] = src
    core.vtcm_owner = ctx


def _group_backup(ctx: "QnnContext"):
    """The VTCM backup buffer `ctx` shares with its list (SHARE_RESOURCES), or None."""
    top = ctx.parent or ctx
    group = top.group
    return group.backup if group is not None and group.backup is not None and group.backup.alive else None
