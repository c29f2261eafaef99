"""RKNN mirror, tensor memory: rknn_create_mem / _mem2 / _mem_from_fd / _mem_from_phys / _mem_from_mb_blk,
rknn_destroy_mem, rknn_set_weight_mem / _internal_mem / _io_mem, rknn_mem_sync, and the pointer helpers
`mem_view` / `output_view` / `addr_view`.

Ownership (seed "Memory ownership"): `rknn_create_mem*` allocate runtime memory owned by the caller until
`rknn_destroy_mem` (which frees it); `rknn_create_mem_from_fd` / `_from_phys` wrap memory that stays the user's
(`rknn_destroy_mem` frees only the wrapper). Every returned struct is tracked in `npurt.rknn.handles.mems`; a
destroyed, stale or edited struct is a PARAM_INVALID error. Memory created with a context that is then destroyed
is released with it (a W line names each such leak); RKNN_MEM_FLAG_ALLOC_NO_CONTEXT memory is independent of
contexts (it holds a device reference of its own) and can be destroyed with any context or 0.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.memory import SyncMode, open_device, open_devices
from npurt.memory.cargs import as_int
from npurt.memory.identity import file_id
from npurt.memory.raw import pointer_value
from npurt.rknn import constants as c
from npurt.rknn import handles, log
from npurt.rknn.api_common import ANY_CTX, MODEL_CTX, any_ctx, ctx_value, read_attr, require_api, struct_arg
from npurt.rknn.boundary import mirror
from npurt.rknn.structs import rknn_output, rknn_tensor_attr, rknn_tensor_mem
from npurt.runtime import ATTR_KINDS
from npurt.runtime.binding import MemRef
from npurt.tensor import Layout

MAX_MEM = (1 << 32) - 1        # uint32_t size of rknn_create_mem
_ALLOC_FLAGS = (c.RKNN_FLAG_MEMORY_CACHEABLE | c.RKNN_FLAG_MEMORY_NON_CACHEABLE | c.RKNN_FLAG_MEMORY_TRY_ALLOC_SRAM
                | c.RKNN_MEM_FLAG_ALLOC_NO_CONTEXT)


def _owner(ctx_obj: Any) -> str:
    return f"rknn_ctx_{getattr(ctx_obj, 'handle', 0):#x}"


def _check_size(size: Any, limit: int = MAX_MEM) -> int:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not 0 < int(size) <= limit:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"invalid size: {size}")
    return int(size)


def _issue_alloc(ctx_handle: int, buf: Any, release: Any = None) -> rknn_tensor_mem:
    mem = rknn_tensor_mem()
    handles.mems.issue(mem, buffer=buf, data_offset=0, size=buf.size, owns_buffer=True,
                       kind=c.RKNN_TENSOR_MEMORY_FLAGS_ALLOC_INSIDE, ctx=ctx_handle, virt_addr=buf.virt_addr,
                       phys_addr=buf.dev_addr, fd=buf.fd, offset=0, release=release, label="create_mem")
    log.debug(f"allocate memory, name: {buf.name}, virt addr: {buf.virt_addr:#x}, dma addr: {buf.dev_addr:#x}, "
              f"size: {buf.size}, aligned size: {buf.capacity}, fd: {buf.fd}, placement: {buf.placement}")
    return mem


def _alloc_no_context(soc: str | None, size: int, placement: str, cacheable: bool) -> rknn_tensor_mem:
    """RKNN_MEM_FLAG_ALLOC_NO_CONTEXT memory: it holds a device reference of its own (so it outlives every
    context), dropped when the memory is destroyed."""
    device = open_device(soc)
    try:
        buf = device.alloc(size, placement=placement, cacheable=cacheable, owner="rknn_no_context", name="tensor",
                           one_file=True)
    except BaseException:
        device.close()
        raise
    return _issue_alloc(0, buf, release=device.close)


@mirror("rknn_create_mem", failure=None, ctx=ANY_CTX)
def rknn_create_mem(ctx: Any, size: int) -> rknn_tensor_mem | None:
    """Allocate `size` bytes of cacheable runtime memory; the struct (virt_addr, phys_addr, fd, size) or None."""
    size = _check_size(size)
    buf = ctx.device.alloc(size, owner=_owner(ctx), name="tensor", cacheable=True)
    return _issue_alloc(ctx.handle, buf)


@mirror("rknn_create_mem2", failure=None)
def rknn_create_mem2(ctx: Any, size: int, alloc_flags: int) -> rknn_tensor_mem | None:
    """Allocate with flags: RKNN_FLAG_MEMORY_CACHEABLE (default) / _NON_CACHEABLE, _TRY_ALLOC_SRAM (SRAM first,
    the rest in DDR, one contiguous mapping), RKNN_MEM_FLAG_ALLOC_NO_CONTEXT (ctx may be 0; the memory outlives
    contexts and must still be destroyed with rknn_destroy_mem)."""
    if isinstance(alloc_flags, bool) or not isinstance(alloc_flags, int) or alloc_flags & ~_ALLOC_FLAGS:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"invalid alloc_flags: {alloc_flags!r}")
    if alloc_flags & c.RKNN_FLAG_MEMORY_CACHEABLE and alloc_flags & c.RKNN_FLAG_MEMORY_NON_CACHEABLE:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "alloc_flags: CACHEABLE and NON_CACHEABLE are exclusive")
    no_context = bool(alloc_flags & c.RKNN_MEM_FLAG_ALLOC_NO_CONTEXT)
    size = _check_size(size, (1 << 64) - 1)
    placement = "sram_first" if alloc_flags & c.RKNN_FLAG_MEMORY_TRY_ALLOC_SRAM else "ddr"
    cacheable = not alloc_flags & c.RKNN_FLAG_MEMORY_NON_CACHEABLE
    if no_context and not ctx_value(ctx):
        require_api("rknn_create_mem2")
        return _alloc_no_context(None, size, placement, cacheable)
    obj = ANY_CTX(ctx, "rknn_create_mem2")
    if no_context:
        return _alloc_no_context(obj.device.soc, size, placement, cacheable)
    if placement == "sram_first" and not obj.device.profile.sram_size:
        log.warning(f"rknn_create_mem2: {obj.device.soc} has no NPU SRAM; allocating in DDR")
    buf = obj.device.alloc(size, placement=placement, cacheable=cacheable, owner=_owner(obj), name="tensor",
                           one_file=True)
    return _issue_alloc(obj.handle, buf)


def _maps_fd(device: Any, fd: int, addr: int, size: int, offset: int) -> bool:
    """True when host address `addr` holds byte `offset` of `fd`'s file, for `size` bytes (`Device.holds`: a
    mapping of the file, the caller's own or the runtime's, or a runtime buffer's CPU view of those bytes)."""
    try:
        file = file_id(fd)
    except (OSError, OverflowError):
        return False
    return device.holds(addr, ((*file, offset, offset + size),))


@mirror("rknn_create_mem_from_fd", failure=None, ctx=ANY_CTX)
def rknn_create_mem_from_fd(ctx: Any, fd: int, virt_addr: Any, size: int, offset: int) -> rknn_tensor_mem | None:
    """Wrap `size` bytes at `offset` of a user dma-buf/memfd `fd`. `virt_addr`: the start of the caller's own
    mapping of the fd (offset not added), kept in `mem->virt_addr` as the vendor does — checked to be a mapping of
    that fd at that offset (else PARAM_INVALID) — or 0, for the runtime's mapping. The memory stays the user's;
    rknn_destroy_mem frees only the wrapper."""
    size = _check_size(size)
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"invalid offset: {offset!r}")
    given = pointer_value(virt_addr)
    if getattr(virt_addr, "value", virt_addr) not in (None, 0) and not given:     # c_void_p(None) is NULL too
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"invalid virt_addr: {virt_addr!r}")
    if given and isinstance(fd, int) and not isinstance(fd, bool) and fd >= 0 \
            and not _maps_fd(ctx.device, fd, given + offset, size, offset):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"virt_addr {given:#x} is not a mapping of fd {fd}: byte "
                                                   f"{offset} of the fd is not at virt_addr + offset")
    buf = ctx.device.import_fd(fd, size, offset, owner=_owner(ctx), name=f"fd{fd}")
    mem = rknn_tensor_mem()
    handles.mems.issue(mem, buffer=buf, data_offset=0, size=size, owns_buffer=True,
                       kind=c.RKNN_TENSOR_MEMORY_FLAGS_FROM_FD, ctx=ctx.handle,
                       virt_addr=given or buf.virt_addr - offset, phys_addr=buf.dev_addr, fd=int(fd), offset=offset,
                       label="create_mem_from_fd")
    log.debug(f"import memory, fd: {fd}, offset: {offset}, size: {size}, dma addr: {buf.dev_addr:#x}")
    return mem


@mirror("rknn_create_mem_from_phys", failure=None, ctx=ANY_CTX)
def rknn_create_mem_from_phys(ctx: Any, phys_addr: int, virt_addr: Any, size: int) -> rknn_tensor_mem | None:
    """Wrap `size` bytes at device (physical) address `phys_addr` of memory the device knows (a dma_alloc buffer,
    another rknn_create_mem buffer, ..., at any offset inside it); `virt_addr` must be a CPU address of that same
    memory, or NULL for the runtime's (`Device.resolve`). Unknown addresses are PARAM_INVALID. rknn_destroy_mem
    frees only the wrapper."""
    size = _check_size(size)
    if isinstance(phys_addr, bool) or not isinstance(phys_addr, int) or phys_addr <= 0:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"invalid phys_addr: {phys_addr!r}")
    given = int(getattr(virt_addr, "value", virt_addr) or 0)
    buf, off = ctx.device.resolve(phys_addr, given, size)
    mem = rknn_tensor_mem()
    handles.mems.issue(mem, buffer=buf, data_offset=off, size=size, owns_buffer=False,
                       kind=c.RKNN_TENSOR_MEMORY_FLAGS_FROM_PHYS, ctx=ctx.handle, virt_addr=given or buf.virt_addr + off,
                       phys_addr=phys_addr, fd=buf.fd, offset=0, label="create_mem_from_phys")
    return mem


@mirror("rknn_create_mem_from_mb_blk", failure=None, api=True)
def rknn_create_mem_from_mb_blk(ctx: Any, mb_blk: Any, offset: int) -> rknn_tensor_mem | None:
    """Not supported on any platform (seed table 3-1): logs why and returns None."""
    return None  # pragma: no cover - no profile supports it


@mirror("rknn_destroy_mem")
def rknn_destroy_mem(ctx: Any, mem: Any) -> int:
    """Destroy a struct from rknn_create_mem*: runtime memory is freed, a wrapper frees only itself. A second
    destroy, a stale or a forged struct is RKNN_ERR_PARAM_INVALID; nothing else changes."""
    try:
        record = handles.mems.lookup(mem)
    except NpuError:
        record = None
    if record is None or not record.no_context:
        any_ctx(ctx)
    if record is None:
        handles.mems.lookup(mem)          # raises with the precise reason
    require_api("rknn_destroy_mem", record.buffer.device.profile if record.buffer.alive else None)
    handles.mems.release(record)
    return c.RKNN_SUCC


def mem_ref(mem: Any, device: Any, what: str) -> MemRef:
    """The MemRef an issued struct stands for (validated; its memory must be alive and on `device`)."""
    record = handles.mems.lookup(mem, what)
    if not record.buffer.alive:
        raise NpuError(ErrorCode.INVALID_HANDLE, f"{what}: the memory it wraps has been destroyed")
    if record.buffer.device is not device:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what}: memory of device {record.buffer.device.soc}, the "
                                                   f"context runs on {device.soc}")
    return MemRef(record.buffer, record.data_offset, int(record.struct.size), record.label)


@mirror("rknn_set_weight_mem", ctx=MODEL_CTX)
def rknn_set_weight_mem(ctx: Any, mem: Any) -> int:
    """Give a MEM_ALLOC_OUTSIDE context its weight memory (>= MEM_SIZE.total_weight_size); the runtime copies the
    weights into it."""
    ctx.context.set_weight_memory(mem_ref(mem, ctx.device, "weight mem"))
    return c.RKNN_SUCC


@mirror("rknn_set_internal_mem", ctx=MODEL_CTX)
def rknn_set_internal_mem(ctx: Any, mem: Any) -> int:
    """Give a MEM_ALLOC_OUTSIDE / INTERNAL_ALLOC_OUTSIDE context its internal memory
    (>= MEM_SIZE.total_internal_size); several contexts may share one buffer if they never run at the same time."""
    ctx.context.set_internal_memory(mem_ref(mem, ctx.device, "internal mem"))
    return c.RKNN_SUCC


@mirror("rknn_set_io_mem", ctx=MODEL_CTX)
def rknn_set_io_mem(ctx: Any, mem: Any, attr: Any) -> int:
    """Bind `mem` to the input or output `attr` names (a queried attr, maybe with type / fmt / pass_through /
    w_stride edited): the native format is used in place; another format is converted around each run. The
    memory must hold `size_with_stride` bytes (native) or the edited format's bytes (n_elems x element size;
    NHWC inputs: rows padded to w_stride)."""
    if attr is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "attr is NULL")
    raw_attr = struct_arg(attr, rknn_tensor_attr, "attr")
    if not 0 < raw_attr.n_dims <= c.RKNN_MAX_DIMS:        # checked here: read_attr keeps at most RKNN_MAX_DIMS dims
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"attr.n_dims {raw_attr.n_dims} (tensor "
                                                   f"{raw_attr.name.decode('utf-8', 'replace')!r}): 1 to "
                                                   f"{c.RKNN_MAX_DIMS}")
    a = read_attr(raw_attr)
    _check_io_attr(ctx.context, a)
    ref = mem_ref(mem, ctx.device, "io mem")
    binding = ctx.context.bind(ref, a)
    if not binding.is_input and binding.staging is not None and ref.size < binding.native.size_with_stride:
        log.warning(f"Output({binding.native.name}): size_with_stride larger than model origin size, if need run "
                    f"OutputOperator in NPU, please call rknn_create_memory using size_with_stride")
    return c.RKNN_SUCC


def _check_io_attr(context: Any, a: Any) -> None:
    """The read-only fields of the attr (seed: a queried attr, with type / fmt / size / pass_through / w_stride
    editable) must be those of the tensor its name names, not ignored: the index, the dims and size_with_stride of
    one of the attrs a query returns for it (logical, native, NHWC, current), and a w_stride of 0 or at least the
    width of those dims. A name that is no tensor's is left to the binding, which says so."""
    for is_input, names in ((True, list(context.compiled.graph.inputs)), (False, list(context.compiled.graph.outputs))):
        if a.name in names:
            break
    else:
        return
    index = names.index(a.name)
    if a.index != index:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"attr.index {a.index}: tensor {a.name!r} has index {index}")
    getter = context.input_attr if is_input else context.output_attr
    queried = [getter(index, kind) for kind in ATTR_KINDS]
    same = [q for q in queried if list(q.dims) == list(a.dims)]
    if not same:
        known = " or ".join(sorted({str(list(q.dims)) for q in queried}))
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"attr.dims {list(a.dims)} (tensor {a.name!r}): the tensor's dims "
                                                   f"are {known} (pass the attr a query returned)")
    strides = sorted({q.size_with_stride for q in same})
    if a.size_with_stride not in strides:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"attr.size_with_stride {a.size_with_stride} (tensor {a.name!r}): "
                                                   f"the tensor's is {' or '.join(map(str, strides))} (read-only)")
    widths = {q.dims[2] if q.fmt is Layout.NHWC else q.dims[3] for q in same
              if len(q.dims) >= 4 and q.fmt in (Layout.NHWC, Layout.NCHW, Layout.NC1HWC2)}
    if a.w_stride and widths and a.w_stride < min(widths):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"attr.w_stride {a.w_stride} (tensor {a.name!r}): less than the "
                                                   f"width {min(widths)} (0 means the width)")


@mirror("rknn_mem_sync")
def rknn_mem_sync(ctx: Any, mem: Any, mode: int) -> int:
    """Cache maintenance of a struct's memory: RKNN_MEMORY_SYNC_TO_DEVICE (CPU wrote, NPU reads next),
    _FROM_DEVICE (NPU wrote, CPU reads next) or _BIDIRECTIONAL. ctx may be 0 except on the mini runtime."""
    value = ctx_value(ctx)
    if value:
        ANY_CTX(ctx, "rknn_mem_sync")                   # refuses a dead context
    else:
        profile = require_api("rknn_mem_sync")
        if profile.mini_runtime:
            raise NpuError(ErrorCode.INVALID_CONTEXT, "context is null")
    if as_int(mode, "sync mode") not in (c.RKNN_MEMORY_SYNC_TO_DEVICE, c.RKNN_MEMORY_SYNC_FROM_DEVICE,
                                         c.RKNN_MEMORY_SYNC_BIDIRECTIONAL):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"invalid sync mode: {mode!r}")
    record = handles.mems.lookup(mem, "mem")
    if not record.buffer.alive:
        raise NpuError(ErrorCode.INVALID_HANDLE, "invalid mem: the memory it wraps has been destroyed")
    record.buffer.sync(SyncMode(mode))
    return c.RKNN_SUCC


# --- pointer helpers ------------------------------------------------------------------------------------------
def mem_view(mem: Any, dtype: Any = np.uint8, count: int | None = None, offset: int = 0) -> np.ndarray:
    """A numpy view of the memory behind `mem` — what C reads and writes at `mem->virt_addr + mem->offset`.

    `count` elements of `dtype` from byte `offset` (default: as many as fit in `mem->size`). The struct is
    validated against the registry (NpuError INVALID_HANDLE if destroyed/stale). The view is the CPU's side: in
    `strict` coherence mode sync with rknn_mem_sync as on the board. In `check` mode, reading an output the NPU
    wrote without a sync from device logs a W line.
    """
    record = handles.mems.lookup(mem)
    struct = record.struct
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"dtype {dtype!r} is not a numpy dtype") from None
    if dt.itemsize == 0 or dt.hasobject:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"dtype {dt} has no fixed size of plain bytes to view memory as")
    offset = as_int(offset, "offset")
    avail = int(struct.size) - offset
    if offset < 0 or avail < 0:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"offset {offset} outside the {struct.size}-byte memory")
    n = avail // dt.itemsize if count is None else as_int(count, "count")
    if n < 0 or n * dt.itemsize > avail:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{n} x {dt} at offset {offset} exceeds the {struct.size}-byte "
                                                   f"memory")
    if record.buffer.needs_sync_from_device:
        log.warning(f"coherence: reading memory {record.phys_addr:#x} that the NPU wrote, without "
                    f"rknn_mem_sync(..., RKNN_MEMORY_SYNC_FROM_DEVICE) first")
    return record.buffer.cpu_view(dt, offset=record.data_offset + offset, nbytes=n * dt.itemsize)


def addr_view(addr: int, nbytes: int, dtype: Any = np.uint8) -> np.ndarray:
    """A numpy view of a raw CPU address handed out by the runtime (validated against the open devices'
    mappings; NpuError INVALID_HANDLE for anything else)."""
    for device in open_devices():
        try:
            return device.view_at(int(addr), int(nbytes), dtype)
        except NpuError:
            continue
    raise NpuError(ErrorCode.INVALID_HANDLE, f"address {int(addr):#x} (+{nbytes}) is not runtime memory")


def output_view(output: Any, dtype: Any = None) -> np.ndarray:
    """A numpy view of `rknn_output.buf` after rknn_outputs_get (float32 when want_float, else uint8 unless
    `dtype` says otherwise): the runtime memory the output was copied to, valid until rknn_outputs_release."""
    out = struct_arg(output, rknn_output, "output")
    if not out.buf:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "output.buf is NULL (call rknn_outputs_get first)")
    dt = np.dtype(dtype if dtype is not None else (np.float32 if out.want_float else np.uint8))
    return addr_view(out.buf, out.size - out.size % dt.itemsize, dt)

