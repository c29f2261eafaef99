"""The RKNN custom-operator mirror (`rknn_custom_op.h`): `rknn_register_custom_ops` and `rknn_custom_op_get_op_attr`.

A model op the executor does not know runs when a custom op of its type is registered on the context, as on the
board (rknn_api_test_custom_cpu_op.cpp, ported line by line)::

    def compute(op_ctx, inputs, n_inputs, outputs, n_outputs):     # the C function pointer, in Python
        x = addr_view(inputs[0].mem.virt_addr + inputs[0].mem.offset, inputs[0].attr.size, np.float32)
        y = addr_view(outputs[0].mem.virt_addr + outputs[0].mem.offset, outputs[0].attr.size, np.float32)
        y[:] = 1 / (1 + np.exp(-x))
        return 0
    op = (rknn_custom_op * 1)()
    op[0].op_type = b"cstSigmoid"; op[0].version = 1; op[0].target = RKNN_TARGET_TYPE_CPU
    op[0].compute = RKNN_CUSTOM_OP_CALLBACK(compute)
    rknn_register_custom_ops(ctx, op, 1)                          # after rknn_init, before the first rknn_run

What a callback sees (CPU target, as on the board): one `rknn_custom_op_tensor` per present input and per output,
each `attr` in the op's logical ONNX shape (fmt NCHW for 4-D, else UNDEFINED) and each `mem` a real device buffer
(fd, virt_addr, phys_addr, offset 0, size; flags ALLOC_INSIDE; valid during the callbacks). Float tensors are
FLOAT32 (qnt_type NONE, n_elems * 4 bytes, size_with_stride = size) whatever the model's precision: in an int8
model the runtime dequantises the op's inputs before the call and requantises its outputs after it, in an fp16 one
it casts — what the vendor's CPU demo relies on (its compute reads and writes `n_elems` floats without looking at
`attr.type`, in an int8 model). Integer tensors keep their own type. The runtime writes the op's inputs into those
buffers before the call and reads the outputs back into the model's native activation memory after it — the
layout and type conversion a CPU op needs on the board too. The buffers are runtime-internal memory owned by the
context (`Context.alloc_scratch`: counted in RKNN_QUERY_MEM_SIZE's DMA total, freed at rknn_destroy); they are
not `rknn_create_mem` memory, so rknn_destroy_mem refuses them.

Lifecycle: `init` runs at registration for every node of the type (with the tensors described and their memory
already allocated); returning RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE makes that node use npurt's built-in kernel of the
same op type (NOT_SUPPORTED at run if there is none). `prepare` (optional) runs before every `compute`. `destroy`
runs once per initialised node when the context is destroyed. `op_ctx.priv_data` is the callbacks' own and stays
as they leave it. A non-zero return (or an exception in a Python callback) fails the run (`rknn_run` returns
RKNN_ERR_FAIL with an `E RKNN:` line naming the op, node and callback).

Decisions (npurt's, where the sources are silent):

- An int8 model with custom ops is compiled with the op's float implementation registered with the compiler
  (`npurt.compile(..., custom_ops={"cstSigmoid": fn})`, as the toolkit registers one): calibration needs its
  outputs' ranges.
- Custom ops live in a non-default ONNX domain (e.g. `rknn.custom`); ONNX checks reject unknown types in the
  default domain. Their output shapes must be declared in the model (value_info). Registering a type the model
  does not contain is allowed (a `W RKNN:` line), as plugin libraries register whatever they provide.
- A registered type also overrides a built-in ONNX op of that type (the point of SKIP_CUSTOM_OP_COMPUTE).
- Registration must precede the first `rknn_run`, and all ops of one call are validated before any takes effect.
- GPU (OpenCL) custom ops are not supported by npurt: RKNN_ERR_FAIL (the float32 rule above is the CPU target's;
  the vendor's GPU demo reads `attr.type` instead). `compute_native` is ignored (a W line), as the header says it
  is unsupported.
- `rknn_dup_context` copies do not inherit registrations; register on the copy too.
"""
from __future__ import annotations

import contextlib
import ctypes
import itertools
import sys
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from npurt import forksafe
from npurt.errors import ErrorCode, NpuError
from npurt.rknn import constants as c
from npurt.rknn import log
from npurt.memory import raw
from npurt.memory.cargs import as_struct_list
from npurt.rknn.api_common import MODEL_CTX, struct_arg
from npurt.rknn.boundary import mirror
from npurt.rknn.structs import rknn_custom_op, rknn_custom_op_attr, rknn_custom_op_context, rknn_custom_op_tensor

__all__ = ["rknn_register_custom_ops", "rknn_custom_op_get_op_attr", "CustomOpKernel"]

_RKNN_TYPE = {
    np.dtype(np.float32): c.RKNN_TENSOR_FLOAT32, np.dtype(np.float16): c.RKNN_TENSOR_FLOAT16,
    np.dtype(np.int8): c.RKNN_TENSOR_INT8, np.dtype(np.uint8): c.RKNN_TENSOR_UINT8,
    np.dtype(np.int16): c.RKNN_TENSOR_INT16, np.dtype(np.uint16): c.RKNN_TENSOR_UINT16,
    np.dtype(np.int32): c.RKNN_TENSOR_INT32, np.dtype(np.uint32): c.RKNN_TENSOR_UINT32,
    np.dtype(np.int64): c.RKNN_TENSOR_INT64, np.dtype(np.bool_): c.RKNN_TENSOR_BOOL,
}

_op_contexts: dict[int, "_NodeState"] = {}       # rknn_custom_op_context.internal_ctx -> node state
_op_context_ids = itertools.count(0xC0570001)
_op_contexts_lock = forksafe.lock()


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def _work_dtype(dtype: Any) -> np.dtype:
    """The element type a CPU custom op sees: float32 for float tensors (quantised or fp16 ones included; the
    executor hands the op their float values and stores what it returns in the tensor's own type), the tensor's
    own type otherwise."""
    dt = np.dtype(dtype)
    return np.dtype(np.float32) if dt.kind == "f" else dt


@contextlib.contextmanager
def _catch_callback_errors() -> Iterator[list]:
    """Collect exceptions raised inside ctypes callbacks (ctypes reports them as unraisable and returns 0)."""
    caught: list = []
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if "ctypes callback" in (unraisable.err_msg or ""):
            caught.append(unraisable.exc_value)
        else:
            previous(unraisable)
    sys.unraisablehook = hook
    try:
        yield caught
    finally:
        sys.unraisablehook = previous


def _referenced_objects(obj: Any) -> list:
    """Every Python object a ctypes struct (or the array it lives in) keeps alive — its callbacks among them — so
    a registration can hold them even if the caller drops or re-assigns its struct (C function pointers are
    static; Python ones must be kept)."""
    found: list = []
    base = obj
    while base is not None:
        stack = [getattr(base, "_objects", None)]
        while stack:
            x = stack.pop()
            if isinstance(x, dict):
                stack.extend(x.values())
            elif x is not None:
                found.append(x)
        base = getattr(base, "_b_base_", None)
    return found


@dataclass
class _Staged:
    """One tensor of a node as its callbacks see it: the context-owned buffer it lives in, shape, element type."""

    buffer: Any                      # npurt.memory.Buffer from Context.alloc_scratch
    shape: tuple[int, ...]
    dtype: np.dtype


@dataclass
class _NodeState:
    """Per-node state of a registered custom op: the persistent op context, tensors and their memory."""

    node: Any
    op_ctx: rknn_custom_op_context
    internal_id: int
    inputs: list[_Staged] = field(default_factory=list)
    outputs: list[_Staged] = field(default_factory=list)
    in_tensors: Any = None                       # ctypes array of rknn_custom_op_tensor
    out_tensors: Any = None
    skip: bool = False                           # init returned RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE
    attr_values: dict[str, Any] = field(default_factory=dict)   # ctypes arrays handed out by get_op_attr


class CustomOpKernel:
    """One registered op type on one context: the value stored in `Context.custom_ops[op_type]`.

    Called by the executor as `kernel(node, inputs, attrs)` with the node's logical inputs; returns its outputs.
    `release()` (at context teardown) calls `destroy` per initialised node and frees the device memory."""

    def __init__(self, op: rknn_custom_op, rknn_ctx: Any) -> None:
        self.op = rknn_custom_op()
        ctypes.pointer(self.op)[0] = op              # our own copy: the caller's struct may go away, as in C
        self._keep = _referenced_objects(op)          # ... but the Python callbacks behind its pointers may not
        self.op_type = _text(op.op_type)
        self.rknn_ctx = rknn_ctx                      # npurt.rknn.api_common.RknnContext
        self.nodes: dict[str, _NodeState] = {}
        self.released = False

    # --- tensors ------------------------------------------------------------------------------------------------
    def _graph(self) -> Any:
        return self.rknn_ctx.context.compiled.graph

    def _stage(self, state: _NodeState, shapes_in: list, dtypes_in: list, shapes_out: list, dtypes_out: list) -> None:
        """(Re)allocate the node's tensor memory when shapes or types changed, and describe it in the C structs."""
        want_in = list(zip(shapes_in, [_work_dtype(d) for d in dtypes_in]))
        want_out = list(zip(shapes_out, [_work_dtype(d) for d in dtypes_out]))
        if [(s.shape, s.dtype) for s in state.inputs] == want_in and \
                [(s.shape, s.dtype) for s in state.outputs] == want_out and state.in_tensors is not None:
            return
        self._free_tensors(state)
        state.in_tensors = (rknn_custom_op_tensor * max(1, len(want_in)))()
        state.out_tensors = (rknn_custom_op_tensor * max(1, len(want_out)))()
        node = state.node
        names_in = [t for t in node.inputs if t]
        for kind, wanted, names, table, staged in (("in", want_in, names_in, state.in_tensors, state.inputs),
                                                    ("out", want_out, [t for t in node.outputs if t],
                                                     state.out_tensors, state.outputs)):
            for i, (shape, dt) in enumerate(wanted):
                staged.append(self._allocate(table[i], i, names[i], shape, dt, f"{node.name}:{kind}{i}"))

    def _allocate(self, tensor: rknn_custom_op_tensor, index: int, name: str, shape: tuple, dt: np.dtype,
                  label: str) -> _Staged:
        """Runtime-internal memory for one tensor (owned by the context) and its description in `tensor`."""
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        buf = self.rknn_ctx.context.alloc_scratch(n * dt.itemsize, name=f"custom:{label}")
        m = tensor.mem
        m.virt_addr, m.phys_addr, m.fd, m.offset = buf.virt_addr, buf.phys_addr, buf.fd, 0
        m.size = n * dt.itemsize
        m.flags = c.RKNN_TENSOR_MEMORY_FLAGS_ALLOC_INSIDE
        a = tensor.attr
        a.index = index
        a.n_dims = len(shape)
        for d, v in enumerate(shape[: c.RKNN_MAX_DIMS]):
            a.dims[d] = int(v)
        a.name = name.encode("utf-8")[: c.RKNN_MAX_NAME_LEN - 1]
        a.n_elems = n
        a.size = n * dt.itemsize
        a.fmt = c.RKNN_TENSOR_NCHW if len(shape) == 4 else c.RKNN_TENSOR_UNDEFINED
        a.type = _RKNN_TYPE.get(dt, c.RKNN_TENSOR_TYPE_MAX)
        a.qnt_type = c.RKNN_TENSOR_QNT_NONE
        a.scale, a.zp = 1.0, 0
        a.size_with_stride = a.size
        return _Staged(buf, tuple(shape), dt)

    def _free_tensors(self, state: _NodeState) -> None:
        for staged in state.inputs + state.outputs:
            self.rknn_ctx.context.free_scratch(staged.buffer)
        state.inputs, state.outputs = [], []
        state.in_tensors = state.out_tensors = None

    # --- callbacks ----------------------------------------------------------------------------------------------
    def _call(self, name: str, state: _NodeState) -> int:
        """Invoke callback `name` of the op for `state`'s node; exceptions in it become NpuError(FAIL)."""
        fn = getattr(self.op, name)
        with _catch_callback_errors() as caught:
            if name == "destroy":
                ret = fn(ctypes.byref(state.op_ctx))
            else:
                ret = fn(ctypes.byref(state.op_ctx), state.in_tensors, len(state.inputs), state.out_tensors,
                         len(state.outputs))
        if caught:
            exc = caught[0]
            raise NpuError(ErrorCode.FAIL, f"custom op {self.op_type} (node {state.node.name!r}): {name} raised "
                                           f"{type(exc).__name__}: {exc}")
        return int(ret or 0)

    def init_node(self, node: Any) -> _NodeState:
        """Create the node's state (op context, tensor memory from the graph's shapes) and run `init`."""
        op_ctx = rknn_custom_op_context(target=self.op.target)
        with _op_contexts_lock:
            internal_id = next(_op_context_ids)
        op_ctx.internal_ctx = internal_id
        state = _NodeState(node, op_ctx, internal_id)
        tensors = self._graph().tensors
        ins = [t for t in node.inputs if t]
        outs = [t for t in node.outputs if t]
        with _op_contexts_lock:
            _op_contexts[internal_id] = state
        try:
            self._stage(state, [tuple(tensors[t].shape or ()) for t in ins], [tensors[t].dtype for t in ins],
                        [tuple(tensors[t].shape or ()) for t in outs], [tensors[t].dtype for t in outs])
            if self.op.init:
                ret = self._call("init", state)
                if ret == c.RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE:
                    state.skip = True
                    log.info(f"custom op {self.op_type} (node {node.name!r}): init asked for the built-in "
                             f"implementation (RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE)")
                elif ret != 0:
                    raise NpuError(ErrorCode.FAIL, f"custom op {self.op_type} (node {node.name!r}): init returned "
                                                   f"{ret}")
        except BaseException:
            self._forget(state)
            raise
        self.nodes[node.name] = state
        return state

    def __call__(self, node: Any, inputs: list, attrs: dict) -> list[np.ndarray]:
        if self.released:
            raise NpuError(ErrorCode.INVALID_CONTEXT, f"custom op {self.op_type}: context destroyed")
        state = self.nodes.get(node.name) or self.init_node(node)
        if state.skip:
            from npurt.exec.kernels import get_kernel
            try:
                builtin = get_kernel(node.op_type)
            except NpuError:
                raise NpuError(ErrorCode.NOT_SUPPORTED, f"custom op {self.op_type} (node {node.name!r}): init returned "
                                                        f"RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE but npurt has no "
                                                        f"built-in {node.op_type}") from None
            return builtin(inputs, attrs)
        present = [np.asarray(x) for x in inputs if x is not None]     # float values (dequantised in int8 models)
        tensors = self._graph().tensors
        outs = [t for t in node.outputs if t]
        self._stage(state, [x.shape for x in present], [x.dtype for x in present],
                    [tuple(tensors[t].shape or ()) for t in outs], [tensors[t].dtype for t in outs])
        for x, staged in zip(present, state.inputs):
            np.copyto(self._view(staged), x.reshape(staged.shape), casting="unsafe")
        for name in ("prepare", "compute"):
            if name == "prepare" and not self.op.prepare:
                continue
            ret = self._call(name, state)
            if ret != 0:
                raise NpuError(ErrorCode.FAIL, f"custom op {self.op_type} (node {node.name!r}): {name} returned "
                                               f"{ret}")
        return [self._view(staged) for staged in state.outputs]   # the executor requantises / casts into the graph

    @staticmethod
    def _view(staged: _Staged) -> np.ndarray:
        n = int(np.prod(staged.shape, dtype=np.int64)) if staged.shape else 1
        return staged.buffer.device_view(staged.dtype, shape=staged.shape, nbytes=n * staged.dtype.itemsize)

    # --- teardown -----------------------------------------------------------------------------------------------
    def _forget(self, state: _NodeState) -> None:
        with _op_contexts_lock:
            _op_contexts.pop(state.internal_id, None)
        self._free_tensors(state)
        state.attr_values.clear()

    def release(self) -> None:
        """Call `destroy` for every initialised node, then free their memory (context teardown; idempotent)."""
        if self.released:
            return
        self.released = True
        for state in list(self.nodes.values()):
            try:
                if self.op.destroy:
                    ret = self._call("destroy", state)
                    if ret != 0:
                        log.warning(f"custom op {self.op_type} (node {state.node.name!r}): destroy returned {ret}")
            except NpuError as exc:
                log.warning(exc.message)
            finally:
                self._forget(state)
        self.nodes.clear()


def _check_op(op: rknn_custom_op, i: int) -> str:
    op_type = _text(op.op_type)
    if not op_type:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"op[{i}].op_type is empty")
    if op.target == c.RKNN_TARGET_TYPE_GPU:
        raise NpuError(ErrorCode.NOT_SUPPORTED, f"op[{i}] {op_type}: GPU (OpenCL) custom ops are not supported by "
                                                f"npurt; use RKNN_TARGET_TYPE_CPU")
    if op.target != c.RKNN_TARGET_TYPE_CPU:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"op[{i}] {op_type}: invalid target {op.target}")
    if not op.compute:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"op[{i}] {op_type}: the compute callback is required")
    for name in ("init", "prepare", "compute", "compute_native", "destroy"):
        if getattr(op, name):
            raw.check_code(getattr(op, name), f"op[{i}] {op_type}: {name}")
    return op_type


def _nodes_of(context: Any, op_type: str) -> list:
    """Nodes of `op_type` in every compiled model of the context (dynamic-shape families share node names)."""
    seen: dict[str, Any] = {}
    for model in context.family.all():
        for node in model.graph.nodes:
            if node.op_type == op_type and node.name not in seen:
                seen[node.name] = node
    return list(seen.values())


@mirror("rknn_register_custom_ops", ctx=MODEL_CTX)
def rknn_register_custom_ops(ctx: Any, op: Any, custom_op_num: int) -> int:
    """Register `custom_op_num` custom ops on `ctx` (after rknn_init, before the first rknn_run)."""
    context = ctx.context
    context._require_live()
    if isinstance(custom_op_num, bool) or not isinstance(custom_op_num, int) or custom_op_num <= 0:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"invalid custom_op_num: {custom_op_num!r}")
    ops = as_struct_list(op, custom_op_num, rknn_custom_op, "op")
    if context.perf.runs:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "custom ops must be registered before the first rknn_run")
    types = [_check_op(o, i) for i, o in enumerate(ops)]
    for i, t in enumerate(types):
        if t in types[:i] or t in context.custom_ops:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"custom op {t} is already registered")
    kernels: list[CustomOpKernel] = []
    try:
        for o, t in zip(ops, types):
            if o.compute_native:
                log.warning(f"custom op {t}: compute_native is not supported; ignored")
            kernel = CustomOpKernel(o, ctx)
            kernels.append(kernel)
            nodes = _nodes_of(context, t)
            if not nodes:
                log.warning(f"custom op {t}: the model has no op of this type")
            for node in nodes:
                kernel.init_node(node)
    except BaseException:
        for kernel in kernels:
            kernel.release()
        raise
    for kernel in kernels:
        context.custom_ops[kernel.op_type] = kernel
        log.debug(f"custom op {kernel.op_type} registered on context {ctx.handle:#x} "
                  f"({len(kernel.nodes)} node(s))")
    return c.RKNN_SUCC


def _attr_array(value: Any) -> tuple[int, Any, int] | None:
    """(rknn_tensor_type, ctypes array, n_elems) for a node attribute value; None if it has no C form."""
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int):
        return c.RKNN_TENSOR_INT64, (ctypes.c_int64 * 1)(value), 1
    if isinstance(value, float):
        return c.RKNN_TENSOR_FLOAT32, (ctypes.c_float * 1)(value), 1
    if isinstance(value, (str, bytes)):
        raw = value.encode("utf-8") if isinstance(value, str) else value
        return c.RKNN_TENSOR_UINT8, (ctypes.c_uint8 * (len(raw) + 1)).from_buffer_copy(raw + b"\0"), len(raw)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, (int, bool)) for v in value):
        return c.RKNN_TENSOR_INT64, (ctypes.c_int64 * len(value))(*[int(v) for v in value]), len(value)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, (int, float)) for v in value):
        return c.RKNN_TENSOR_FLOAT32, (ctypes.c_float * len(value))(*[float(v) for v in value]), len(value)
    if isinstance(value, np.ndarray) and np.dtype(value.dtype) in _RKNN_TYPE:
        raw = np.ascontiguousarray(value).tobytes()
        buf = (ctypes.c_uint8 * max(1, len(raw))).from_buffer_copy(raw or b"\0")
        return _RKNN_TYPE[np.dtype(value.dtype)], buf, int(value.size)
    return None


@mirror("rknn_custom_op_get_op_attr", failure=None)
def rknn_custom_op_get_op_attr(op_ctx: Any, attr_name: Any, op_attr: Any) -> None:
    """Fill `op_attr` with attribute `attr_name` of the node `op_ctx` belongs to (C returns void).

    Found: name, dtype (INT64 for ints, FLOAT32 for floats, UINT8 bytes for strings, the element type for
    tensors), n_elems and `data` (runtime memory, valid until the context is destroyed). Not found: n_elems 0 and
    data NULL, as a C caller checks. A bad op_ctx / op_attr prints an `E RKNN:` line and leaves op_attr alone."""
    ctx_struct = struct_arg(op_ctx, rknn_custom_op_context, "op_ctx")
    out = struct_arg(op_attr, rknn_custom_op_attr, "op_attr")
    name = attr_name.decode("utf-8", "replace") if isinstance(attr_name, (bytes, bytearray)) else str(attr_name)
    with _op_contexts_lock:
        state = _op_contexts.get(int(ctx_struct.internal_ctx))
    if state is None:
        raise NpuError(ErrorCode.INVALID_CONTEXT, "invalid op_ctx: not a live custom op context")
    ctypes.memset(ctypes.addressof(out), 0, ctypes.sizeof(out))
    out.name = name.encode("utf-8")[: c.RKNN_MAX_NAME_LEN - 1]
    converted = _attr_array(state.node.attrs.get(name)) if name in state.node.attrs else None
    if converted is None:
        log.warning(f"rknn_custom_op_get_op_attr: node {state.node.name!r} has no attribute {name!r}")
        return
    dtype, array, n_elems = converted
    state.attr_values[name] = array
    out.dtype = dtype
    out.n_elems = n_elems
    out.data = ctypes.cast(array, ctypes.c_void_p)
