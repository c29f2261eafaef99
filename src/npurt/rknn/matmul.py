"""The RKNN matmul C-API mirror (`rknn_matmul_api.h`): C names, argument order, in-place structs, int statuses.

Flow (the vendor's demo, line by line):

    ctx = rknn_matmul_ctx(); info = rknn_matmul_info(M=4, K=64, N=32, type=RKNN_INT8_MM_INT8_TO_INT32)
    io = rknn_matmul_io_attr()
    rknn_matmul_create(ctx, info, io)                 # fills io.A / io.B / io.C: dims, size, type
    A = rknn_create_mem(ctx, io.A.size)               # the ordinary rknn_create_mem: matmul contexts live in
    B = rknn_create_mem(ctx, io.B.size)               # the same handle table as model contexts
    C = rknn_create_mem(ctx, io.C.size)
    ... fill A.virt_addr / B.virt_addr (B through rknn_B_normal_layout_to_native_layout for NATIVE) ...
    rknn_matmul_set_io_mem(ctx, A, io.A); ... B ...; ... C ...
    rknn_matmul_run(ctx)                              # reads A and B from their memory, writes C into its memory
    rknn_destroy_mem(ctx, A) ...; rknn_matmul_destroy(ctx)

Zero copy: `rknn_matmul_run` reads the operands from the bound device memory at run time and writes C straight into
C's memory. The only intermediate arrays are the ones the arithmetic needs (operands widened to the accumulation
type in one pass, which is also where a native or transposed layout is undone). The board re-arranges inputs in
`rknn_matmul_set_io_mem` and asks users to call it again after changing the data; npurt reads at run time, so data
written after `set_io_mem` is used too (a superset of the board's behaviour). Memory the runtime allocated
(`rknn_create_mem`) is flushed before and invalidated after the run, as `rknn_run` does; imported memory is the
user's to sync (a `check`-mode device reports a missed sync of A or B with a `W RKNN:` line and in the context's
`coherence_violations`).

Decisions (see also `matmul_math`'s module doc):

- SoC: the process's board, `$NPURT_SOC` (default rk3588), as for `rknn_init`. On a SoC whose table 3-1 row is a
  cross, every function returns RKNN_ERR_FAIL with an `E RKNN:` line naming the SoC.
- `rknn_matmul_set_core_mask` (RK3576/RK3588 only): AUTO and single cores that exist are accepted. Multi-core masks
  (CORE_0_1, CORE_0_1_2, CORE_ALL, any other OR) are refused as librknnrt refuses them (airockchip/rknn-toolkit2#7,
  #253): the two `E RKNN:` lines the board prints, the context falls back to AUTO, and the status is RKNN_ERR_FAIL.
  A matmul runs on one core; npurt records the mask (`core_mask` of the context) and computes on the CPU.
- `rknn_matmul_get_quant_params`: as documented, only for RKNN_INT8_MM_INT8_TO_INT32; it fills `params` with B's
  parameters (pointers to runtime-owned arrays, valid until the context is destroyed) and `*scale` with the
  normalised B scale.
- Dynamic shape: `rknn_matmul_set_dynamic_shape` must pick one of the created shapes before the first run.
  Bindings survive a shape change; at run each bound memory must be large enough for the current shape.
- `iommu_domain_id` must be >= 0 and is recorded; npurt has one device address space per SoC.
- Threads: runs of one context are serialised (a lock; `rknn_matmul_destroy` waits for a running one); different
  contexts run in parallel. A live context keeps the SoC it was created on, whatever `$NPURT_SOC` says later.
"""
from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.memory import raw
from npurt.memory.cargs import as_struct
from npurt.memory.device import open_device
from npurt.rknn import constants as c
from npurt.rknn import handles, log
from npurt.rknn import matmul_math as mm
from npurt.rknn.api_common import require_api, store_ctx, struct_arg
from npurt.rknn.boundary import mirror
from npurt.rknn.structs import (rknn_matmul_info, rknn_matmul_io_attr, rknn_matmul_shape, rknn_matmul_tensor_attr,
                                rknn_quant_params, rknn_tensor_mem)
from npurt.tensor.dtypes import DType

__all__ = [
    "rknn_matmul_create", "rknn_matmul_create_dynamic_shape", "rknn_matmul_set_io_mem", "rknn_matmul_set_core_mask",
    "rknn_matmul_set_quant_params", "rknn_matmul_get_quant_params", "rknn_matmul_set_dynamic_shape",
    "rknn_matmul_run", "rknn_matmul_destroy", "rknn_B_normal_layout_to_native_layout", "MatmulContext",
]

_SINGLE_CORES = (c.RKNN_NPU_CORE_0, c.RKNN_NPU_CORE_1, c.RKNN_NPU_CORE_2)
_NAMES = ("A", "B", "C")


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


@dataclass
class _Binding:
    """One bound operand: the issued mem record and the attr it was bound with."""

    record: handles.TensorMemRecord
    attr_size: int


@dataclass
class MatmulContext:
    """A live matmul context: validated info, its shapes and attrs, bindings, quantisation, core mask."""

    device: Any                               # npurt.memory.Device (the handle table requires `.device`)
    soc: str
    spec: mm.TypeSpec
    tiles: mm.Tiles
    B_layout: int
    AC_layout: int
    B_quant_type: int
    group_size: int
    iommu_domain_id: int
    shapes: list[mm.Shape]
    attrs: list[dict[str, tuple[list[int], int, Any]]]
    dynamic: bool
    current: int | None = None
    core_mask: int = c.RKNN_NPU_CORE_AUTO
    bindings: dict[str, _Binding] = field(default_factory=dict)
    quant: dict[str, mm.Quant] = field(default_factory=lambda: {n: mm.Quant.default() for n in _NAMES})
    handle: int = 0
    runs: int = 0
    _exported: dict = field(default_factory=dict)   # operand -> (quant, scale array, zp array) get_quant_params gave
    lock: threading.Lock = field(default_factory=threading.Lock)   # one run at a time; destroy waits for it
    coherence_violations: list[str] = field(default_factory=list)  # check mode: missed syncs of imported memory

    @property
    def shape(self) -> mm.Shape | None:
        """The shape runs use (None until a dynamic context has chosen one)."""
        return None if self.current is None else self.shapes[self.current]

    def quant_shape(self) -> mm.Shape:
        """The shape quantisation parameters are checked against: the current one, else the first."""
        return self.shapes[self.current if self.current is not None else 0]


def _get_ctx(ctx: Any, func: str) -> MatmulContext:
    """The live matmul context of `ctx`, on a SoC where `func` exists; CTX_INVALID / NOT_SUPPORTED otherwise.
    (A live context is gated by its own SoC; an unknown handle by the board's.)"""
    obj = handles.contexts.get(ctx, "matmul")
    if obj is None:
        require_api(func)
        raise NpuError(ErrorCode.INVALID_CONTEXT, f"invalid matmul context: {getattr(ctx, 'value', ctx)!r}")
    if not obj.device.profile.supports(func):
        raise NpuError(ErrorCode.NOT_SUPPORTED, f"not supported on {obj.soc} (seed table 3-1)")
    return obj


def _fill_attr(attr: rknn_matmul_tensor_attr, name: str, dims: list[int], size: int, dt: Any) -> None:
    ctypes.memset(ctypes.addressof(attr), 0, ctypes.sizeof(attr))
    attr.name = name.encode()
    attr.n_dims = len(dims)
    for i, d in enumerate(dims):
        attr.dims[i] = d
    attr.size = size
    attr.type = mm.RKNN_TYPE[dt]


def _fill_io(io: rknn_matmul_io_attr, attrs: dict) -> None:
    for name in _NAMES:
        dims, size, dt = attrs[name]
        _fill_attr(getattr(io, name), name, dims, size, dt)


def _build(func: str, info: Any, shapes: list[mm.Shape]) -> MatmulContext:
    """Validate `info` with each shape and build (not yet register) a context."""
    soc = require_api(func).name
    info = struct_arg(info, rknn_matmul_info, "info")
    if info.iommu_domain_id < 0:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"invalid iommu_domain_id: {info.iommu_domain_id}")
    spec = tiles = None
    for s in shapes:
        spec, tiles = mm.check_info(soc, info.type, s.M, s.K, s.N, info.B_layout, info.AC_layout, info.B_quant_type,
                                    info.AC_quant_type, info.group_size)
    attrs = [mm.operand_attrs(spec, tiles, s, info.B_layout, info.AC_layout) for s in shapes]
    return MatmulContext(device=None, soc=soc, spec=spec, tiles=tiles, B_layout=info.B_layout,
                         AC_layout=info.AC_layout, B_quant_type=info.B_quant_type, group_size=info.group_size,
                         iommu_domain_id=info.iommu_domain_id, shapes=shapes, attrs=attrs, dynamic=False)


def _register(obj: MatmulContext, ctx_out: Any) -> None:
    obj.device = open_device(obj.soc)
    obj.handle = handles.contexts.add(obj, "matmul")
    try:
        store_ctx(ctx_out, obj.handle)
    except NpuError:
        handles.contexts.remove(obj.handle)
        obj.device.close()
        raise
    log.debug(f"matmul context {obj.handle:#x}: {obj.spec.name}, shapes "
              f"{[(s.M, s.K, s.N) for s in obj.shapes]}, B_layout {obj.B_layout}, AC_layout {obj.AC_layout}")


# --- create / destroy ----------------------------------------------------------------------------------------
@mirror("rknn_matmul_create")
def rknn_matmul_create(ctx: Any, info: Any, io_attr: Any) -> int:
    """Create a matmul context for info.M/K/N/type/layouts; fill `io_attr` (A, B, C) in place."""
    if ctx is None or info is None or io_attr is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "ctx, info and io_attr must not be NULL")
    inf = struct_arg(info, rknn_matmul_info, "info")
    io = struct_arg(io_attr, rknn_matmul_io_attr, "io_attr")
    obj = _build("rknn_matmul_create", inf, [mm.Shape(inf.M, inf.K, inf.N)])
    obj.current = 0
    _register(obj, ctx)
    _fill_io(io, obj.attrs[0])
    return c.RKNN_SUCC


@mirror("rknn_matmul_create_dynamic_shape")
def rknn_matmul_create_dynamic_shape(ctx: Any, info: Any, shape_num: int, dynamic_shapes: Any,
                                     io_attrs: Any) -> int:
    """Create a context for `shape_num` (M, K, N) shapes (info.M/K/N ignored); fill `io_attrs[i]` per shape."""
    if ctx is None or info is None or dynamic_shapes is None or io_attrs is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "ctx, info, dynamic_shapes and io_attrs must not be NULL")
    if isinstance(shape_num, bool) or not isinstance(shape_num, int) or shape_num <= 0:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"invalid shape_num: {shape_num!r}")
    try:
        given = [struct_arg(dynamic_shapes[i], rknn_matmul_shape, f"dynamic_shapes[{i}]") for i in range(shape_num)]
        ios = [struct_arg(io_attrs[i], rknn_matmul_io_attr, f"io_attrs[{i}]") for i in range(shape_num)]
    except (IndexError, TypeError):
        raise NpuError(ErrorCode.INVALID_ARGUMENT,
                       f"dynamic_shapes and io_attrs must hold shape_num = {shape_num} entries") from None
    shapes = [mm.Shape(s.M, s.K, s.N) for s in given]
    obj = _build("rknn_matmul_create_dynamic_shape", info, shapes)
    obj.dynamic = True
    _register(obj, ctx)
    for io, attrs in zip(ios, obj.attrs):
        _fill_io(io, attrs)
    return c.RKNN_SUCC


@mirror("rknn_matmul_destroy", ctx=_get_ctx)
def rknn_matmul_destroy(ctx: Any) -> int:
    """Destroy the context (and any rknn_tensor_mem still created with it). The handle is never valid again."""
    with ctx.lock:
        if handles.contexts.remove(ctx.handle) is not ctx:
            raise NpuError(ErrorCode.INVALID_CONTEXT, "matmul context already destroyed")
    ctx.bindings.clear()
    ctx._exported.clear()
    leaked = handles.mems.release_owned_by(ctx.handle)
    if leaked:
        log.warning(f"rknn_matmul_destroy: released {len(leaked)} rknn_tensor_mem not destroyed before")
    ctx.device.close()
    return c.RKNN_SUCC


# --- configuration -------------------------------------------------------------------------------------------
@mirror("rknn_matmul_set_dynamic_shape", ctx=_get_ctx)
def rknn_matmul_set_dynamic_shape(ctx: Any, shape: Any) -> int:
    """Choose the shape the next runs use: one of those given to rknn_matmul_create_dynamic_shape."""
    if shape is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "shape must not be NULL")
    s = struct_arg(shape, rknn_matmul_shape, "shape")
    wanted = mm.Shape(s.M, s.K, s.N)
    if not ctx.dynamic:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "context was not created by rknn_matmul_create_dynamic_shape")
    if wanted not in ctx.shapes:
        raise NpuError(ErrorCode.INVALID_ARGUMENT,
                       f"shape M = {s.M}, K = {s.K}, N = {s.N} is not one of the context's shapes "
                       f"{[(x.M, x.K, x.N) for x in ctx.shapes]}")
    ctx.current = ctx.shapes.index(wanted)
    return c.RKNN_SUCC


@mirror("rknn_matmul_set_core_mask", ctx=_get_ctx)
def rknn_matmul_set_core_mask(ctx: Any, core_mask: int) -> int:
    """Pin the matmul to one NPU core (RK3576/RK3588). Multi-core masks are refused (see the module doc)."""
    mask = int(core_mask)
    cores = ctx.device.profile.npu_cores
    if mask == c.RKNN_NPU_CORE_AUTO or (mask in _SINGLE_CORES and mask < (1 << cores)):
        ctx.core_mask = mask
        return c.RKNN_SUCC
    if 0 < mask < (1 << cores) or mask == c.RKNN_NPU_CORE_ALL:
        ctx.core_mask = c.RKNN_NPU_CORE_AUTO
        log.error(f"Not support core mask: {mask}, fallback to single core auto mode")
        log.error(f"rknn_set_core_mask: failed to set core mask: {mask}")
        return c.RKNN_ERR_FAIL
    raise NpuError(ErrorCode.INVALID_ARGUMENT, f"invalid core mask: {mask} ({ctx.soc} has {cores} NPU cores)")


def _array(ptr: Any, length: int, ctype: Any, what: str) -> np.ndarray:
    if length == 0:
        return np.zeros(0, dtype=np.dtype(ctype))
    if length < 0 or not ptr:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"invalid {what}: NULL pointer or negative length {length}")
    return raw.read_bytes(ptr, length * ctypes.sizeof(ctype), what).view(np.dtype(ctype))


@mirror("rknn_matmul_set_quant_params", ctx=_get_ctx)
def rknn_matmul_set_quant_params(ctx: Any, params: Any) -> int:
    """Set scale / zero point of tensor `params.name` ("A", "B" or "C"); lengths follow B_quant_type for B."""
    if params is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "params must not be NULL")
    p = struct_arg(params, rknn_quant_params, "params")
    name = _text(p.name)
    if name not in _NAMES:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"unknown tensor name {name!r} (expected A, B or C)")
    if p.scale_len <= 0:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"invalid scale_len: {p.scale_len}")
    q = mm.Quant(_array(p.scale, p.scale_len, ctypes.c_float, "scale"),
                 _array(p.zp, p.zp_len, ctypes.c_int32, "zp"))
    mm.check_quant(name, q, ctx.spec, ctx.quant_shape(), ctx.B_quant_type, ctx.group_size)
    ctx.quant[name] = q
    return c.RKNN_SUCC


def _float_target(out: Any) -> Any:
    """Where a C `float*` out-parameter points: a ctypes float, array or numpy array to write element 0 of."""
    for cls in (ctypes.c_float, ctypes.c_double, ctypes.Array):
        target = as_struct(out, cls)
        if target is not None:
            return target
    if isinstance(out, np.ndarray) and out.size >= 1 and out.dtype.kind == "f":
        return out
    raise NpuError(ErrorCode.INVALID_ARGUMENT, f"scale must be a float*, got {type(out).__name__}")


def _store_float(target: Any, value: float) -> None:
    if isinstance(target, ctypes.Array):
        target[0] = value
    elif isinstance(target, np.ndarray):
        target.reshape(-1)[0] = value
    else:
        target.value = value


@mirror("rknn_matmul_get_quant_params", ctx=_get_ctx)
def rknn_matmul_get_quant_params(ctx: Any, params: Any, scale: Any) -> int:
    """B's quantisation parameters and its normalised scale (RKNN_INT8_MM_INT8_TO_INT32 only)."""
    if params is None or scale is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "params and scale must not be NULL")
    if ctx.spec.value != c.RKNN_INT8_MM_INT8_TO_INT32:
        raise NpuError(ErrorCode.INVALID_ARGUMENT,
                       f"only RKNN_INT8_MM_INT8_TO_INT32 is supported, the context is {ctx.spec.name}")
    p = struct_arg(params, rknn_quant_params, "params")
    out = _float_target(scale)                        # validated before anything is written
    q = ctx.quant["B"]
    held = ctx._exported.get("B")
    if held is None or held[0] is not q:             # one copy per quantisation of B, not one per call
        held = ctx._exported["B"] = (q, (ctypes.c_float * q.scale.size)(*q.scale.tolist()),
                                     (ctypes.c_int32 * max(1, q.zp.size))(*(q.zp.tolist() or [0])))
    _, scales, zps = held                            # valid until B's quantisation changes or the context goes
    p.name = b"B"
    p.scale = ctypes.cast(scales, ctypes.POINTER(ctypes.c_float))
    p.scale_len = q.scale.size
    p.zp = ctypes.cast(zps, ctypes.POINTER(ctypes.c_int32))
    p.zp_len = q.zp.size
    _store_float(out, mm.normalised_b_scale(q))
    return c.RKNN_SUCC


# --- memory and run ------------------------------------------------------------------------------------------
@mirror("rknn_matmul_set_io_mem", ctx=_get_ctx)
def rknn_matmul_set_io_mem(ctx: Any, mem: Any, attr: Any) -> int:
    """Bind `mem` (from rknn_create_mem*, any context of this device) as operand `attr.name` ("A", "B", "C")."""
    if mem is None or attr is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "mem and attr must not be NULL")
    a = struct_arg(attr, rknn_matmul_tensor_attr, "attr")
    name = _text(a.name)
    if name not in _NAMES:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"unknown tensor name {name!r} (expected A, B or C)")
    dims = list(a.dims[: min(a.n_dims, 16)])
    known = [(att[name][0], att[name][1], mm.RKNN_TYPE[att[name][2]]) for att in ctx.attrs]
    if (dims, a.size, a.type) not in known:
        raise NpuError(ErrorCode.INVALID_ARGUMENT,
                       f"{name} attr (dims {dims}, size {a.size}, type {c.get_type_string(a.type)}) does not "
                       f"match the context's {name}: pass io_attr.{name} as rknn_matmul_create filled it")
    record = handles.mems.lookup(mem)
    if record.buffer.device is not ctx.device:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{name} memory belongs to another device")
    have = min(record.struct.size, record.size)
    if have < a.size:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{name} memory size must be >= {a.size}, but is: {have}")
    ctx.bindings[name] = _Binding(record, a.size)
    return c.RKNN_SUCC


def _bound_bytes(ctx: MatmulContext, name: str, need: int) -> tuple[handles.TensorMemRecord, np.ndarray]:
    """The live record and a uint8 device view of operand `name`, at least `need` bytes; errors name the operand."""
    code = ErrorCode.INVALID_OUTPUT if name == "C" else ErrorCode.INVALID_INPUT
    binding = ctx.bindings.get(name)
    if binding is None:
        raise NpuError(code, f"{name} tensor not attached to memory! call rknn_matmul_set_io_mem")
    record = binding.record
    try:
        record = handles.mems.lookup(record.struct, name)
    except NpuError as exc:
        raise NpuError(code, f"{name} memory is no longer valid: {exc.message}") from None
    have = min(record.struct.size, record.size)
    if have < need:
        raise NpuError(code, f"{name} memory size must be >= {need} for the current shape, but is: {have}")
    return record, record.buffer.device_view(np.uint8, offset=record.data_offset, nbytes=need)


def _runtime_owned(record: handles.TensorMemRecord) -> bool:
    return record.kind == c.RKNN_TENSOR_MEMORY_FLAGS_ALLOC_INSIDE


@mirror("rknn_matmul_run", ctx=_get_ctx)
def rknn_matmul_run(ctx: Any) -> int:
    """C = A · B for the current shape, from and into the bound memory (blocking; runs of one context are
    serialised)."""
    with ctx.lock:
        if handles.contexts.get(ctx.handle, "matmul") is not ctx:
            raise NpuError(ErrorCode.INVALID_CONTEXT, "matmul context destroyed")
        return _run(ctx)


def _run(ctx: MatmulContext) -> int:
    shape = ctx.shape
    if shape is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "no shape set: call rknn_matmul_set_dynamic_shape first")
    attrs = ctx.attrs[ctx.current]
    if not ctx.spec.b.is_float:            # per-channel / per-group lengths follow N and K of the current shape
        try:
            mm.check_quant("B", ctx.quant["B"], ctx.spec, shape, ctx.B_quant_type, ctx.group_size)
        except NpuError as exc:
            raise NpuError(ErrorCode.INVALID_ARGUMENT,
                           f"B quantization parameters do not fit the current shape: {exc.message}") from None
    rec_a, raw_a = _bound_bytes(ctx, "A", attrs["A"][1])
    rec_b, raw_b = _bound_bytes(ctx, "B", attrs["B"][1])
    rec_c, raw_c = _bound_bytes(ctx, "C", attrs["C"][1])
    for name, rec in (("A", rec_a), ("B", rec_b)):
        buf = rec.buffer
        if _runtime_owned(rec) and buf.cacheable:
            buf.sync("to_device")
        elif ctx.device.coherence == "check" and buf.cpu_written_since_sync():
            msg = (f"coherence: matmul {name} memory ({rec.phys_addr:#x}) was written by the CPU after its last "
                   f"sync to device: rknn_matmul_run reads stale data on the board; call rknn_mem_sync(ctx, mem, "
                   f"RKNN_MEMORY_SYNC_TO_DEVICE) first")
            ctx.coherence_violations.append(msg)
            log.warning(msg)
    a = mm.read_a(raw_a, ctx.spec, ctx.tiles, shape, ctx.AC_layout)
    b = mm.read_b(raw_b, ctx.spec, ctx.tiles, shape, ctx.B_layout, mm.k_segment(ctx.soc), mm.work_dtype(ctx.spec.b))
    values = mm.compute(a, b, ctx.spec, shape, ctx.quant, ctx.B_quant_type, ctx.group_size)
    mm.write_c(raw_c, values, ctx.spec, ctx.tiles, shape, ctx.AC_layout)
    rec_c.buffer.note_device_write()
    if _runtime_owned(rec_c) and rec_c.buffer.cacheable:
        rec_c.buffer.sync("from_device")
    ctx.runs += 1
    return c.RKNN_SUCC


# --- B layout conversion -------------------------------------------------------------------------------------
def _host_bytes(ptr: Any, nbytes: int, what: str, writable: bool) -> np.ndarray:
    """A uint8 array of `nbytes` for a C `void*`: a view of a numpy array / buffer object, or for an int address
    a guarded copy of the caller's memory (`npurt.memory.raw`; written back with `_store`)."""
    if isinstance(ptr, np.ndarray):
        if not ptr.flags.c_contiguous:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} must be a C-contiguous array")
        arr = ptr.reshape(-1).view(np.uint8)
    elif isinstance(ptr, (bytes, bytearray, memoryview, ctypes.Array)):
        arr = np.frombuffer(ptr, dtype=np.uint8)
    elif isinstance(ptr, (int, ctypes.c_void_p)) and not isinstance(ptr, bool):
        if writable:
            raw.check_writable(ptr, nbytes, what)
        return raw.read_bytes(ptr, nbytes, what)
    else:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} must be a pointer or a buffer, got {type(ptr).__name__}")
    if arr.size < nbytes:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} holds {arr.size} bytes, {nbytes} needed")
    if writable and not arr.flags.writeable:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} is read-only")
    return arr[:nbytes]


def _store(ptr: Any, data: np.ndarray, what: str) -> None:
    """Finish a write into `_host_bytes(ptr, ..., writable=True)`: an int address gets the bytes (guarded)."""
    if isinstance(ptr, (int, ctypes.c_void_p)) and not isinstance(ptr, bool):
        raw.write_bytes(ptr, data, what)


@mirror("rknn_B_normal_layout_to_native_layout")
def rknn_B_normal_layout_to_native_layout(B_input: Any, B_output: Any, K: int, N: int, info: Any) -> int:
    """Convert B from the normal [K, N] layout (int4 packed low nibble first) to the native layout of info.type on
    this SoC (K-segmented on RK3588/RK3576; int4 packed high nibble first)."""
    soc = require_api("rknn_B_normal_layout_to_native_layout").name
    if B_input is None or B_output is None or info is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "B_input, B_output and info must not be NULL")
    inf = struct_arg(info, rknn_matmul_info, "info")
    spec = mm.MATMUL_TYPES.get(int(inf.type))
    if spec is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"invalid matmul type: {int(inf.type)}")
    K, N = int(K), int(N)
    tiles = mm.tiles_for(soc, spec)
    mm.check_shape(soc, spec, tiles, 1, K, N)
    nbytes = spec.b.nbytes(K * N)
    src = _host_bytes(B_input, nbytes, "B_input", writable=False)
    dst = _host_bytes(B_output, nbytes, "B_output", writable=True)
    if spec.b is DType.INT4:
        logical = mm.unpack_int4(src, K * N).reshape(K, N)
        mm.pack_int4(mm.b_normal_to_native(logical, K, N, tiles, mm.k_segment(soc)), high_first=True, out=dst)
    else:
        logical = src.view(spec.b.numpy_dtype).reshape(K, N).copy()   # B_input and B_output may overlap
        native = mm.b_normal_to_native(logical, K, N, tiles, mm.k_segment(soc))
        np.copyto(dst.view(spec.b.numpy_dtype), native)
    _store(B_output, dst, "B_output")
    return c.RKNN_SUCC
