"""The RKNN C-API mirror (`rknn_api.h`, seed table 3-1 minus the matmul and custom-op rows), over
`npurt.runtime.Context`.

Conventions (the same for both vendor mirrors): C names and argument order; out-parameters are ctypes objects
filled in place; int status returns (RKNN_SUCC / RKNN_ERR_*); an `rknn_tensor_mem` struct or None where C returns a
pointer / NULL; every failure prints an `E RKNN:` line naming the problem (subject to RKNN_LOG_LEVEL) and leaves
every other object untouched. The SoC is the device's: `$NPURT_SOC`, default rk3588; calls its column of table
3-1 / 3-2 crosses out return RKNN_ERR_FAIL (None) with a line saying so.

A C sample ports line by line::

    ctx = rknn_context()
    ret = rknn_init(ctx, model_bytes, len(model_bytes), 0, None)      # or rknn_init(ctx, "m.onnx", 0, 0, None)
    io = rknn_input_output_num()
    rknn_query(ctx, RKNN_QUERY_IN_OUT_NUM, io, ctypes.sizeof(io))
    attr = rknn_tensor_attr(index=0)
    rknn_query(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR, attr, ctypes.sizeof(attr))
    attr.type = RKNN_TENSOR_UINT8; attr.fmt = RKNN_TENSOR_NHWC
    mem = rknn_create_mem(ctx, attr.size_with_stride)
    mem_view(mem)[:n] = image_bytes                                     # memcpy(mem->virt_addr, ...)
    rknn_set_io_mem(ctx, mem, attr)                                     # ... and every output
    rknn_run(ctx, None)
    rknn_destroy_mem(ctx, mem); rknn_destroy(ctx)

The general path: `rknn_inputs_set` (rknn_input.buf = an address, e.g. `arr.ctypes.data`), `rknn_run`,
`rknn_outputs_get` (runtime-allocated outputs: `rknn_output.buf` is the address of runtime memory; read it with
`output_view(out)`), `rknn_outputs_release`.
"""
from __future__ import annotations

import ctypes
import os
from typing import Any

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.files import regular_input
from npurt.memory import open_device, raw
from npurt.memory.cargs import as_struct_list
from npurt.rknn import constants as c
from npurt.rknn import handles, log
from npurt.rknn.api_common import (FMT_TO_LAYOUT, MODEL_CTX, TYPE_TO_DTYPE, RknnContext, ctx_value, get_ctx,
                                   require_api, store_ctx, struct_arg)
from npurt.rknn.boundary import mirror
from npurt.rknn.api_memory import (addr_view, mem_view, output_view, rknn_create_mem, rknn_create_mem2,
                                   rknn_create_mem_from_fd, rknn_create_mem_from_mb_blk, rknn_create_mem_from_phys,
                                   rknn_destroy_mem, rknn_mem_sync, rknn_set_internal_mem, rknn_set_io_mem,
                                   rknn_set_weight_mem)
from npurt.rknn.api_query import rknn_query
from npurt.rknn.structs import (rknn_init_extend, rknn_input, rknn_output, rknn_output_extend, rknn_run_extend,
                                rknn_tensor_attr)
from npurt.runtime import Context, ContextOptions, InputData, MemRef
from npurt.runtime.perf import perf_mode_from_env
from npurt.runtime.report import context_table
from npurt.soc import get_profile
from npurt.tensor import Layout

__all__ = [
    "rknn_init", "rknn_dup_context", "rknn_destroy", "rknn_query", "rknn_inputs_set", "rknn_run", "rknn_wait",
    "rknn_outputs_get", "rknn_outputs_release", "rknn_create_mem", "rknn_create_mem2", "rknn_create_mem_from_fd",
    "rknn_create_mem_from_phys", "rknn_create_mem_from_mb_blk", "rknn_destroy_mem", "rknn_set_weight_mem",
    "rknn_set_internal_mem", "rknn_set_io_mem", "rknn_mem_sync", "rknn_set_input_shapes", "rknn_set_input_shape",
    "rknn_set_core_mask",
    "rknn_set_batch_core_num", "mem_view", "output_view", "addr_view", "context_of", "memory_table",
]

_KNOWN_FLAGS = (c.RKNN_FLAG_PRIOR_MEDIUM | c.RKNN_FLAG_PRIOR_LOW | c.RKNN_FLAG_ASYNC_MASK
                | c.RKNN_FLAG_COLLECT_PERF_MASK | c.RKNN_FLAG_MEM_ALLOC_OUTSIDE | c.RKNN_FLAG_SHARE_WEIGHT_MEM
                | c.RKNN_FLAG_FENCE_IN_OUTSIDE | c.RKNN_FLAG_FENCE_OUT_OUTSIDE | c.RKNN_FLAG_COLLECT_MODEL_INFO_ONLY
                | c.RKNN_FLAG_INTERNAL_ALLOC_OUTSIDE | c.RKNN_FLAG_EXECUTE_FALLBACK_PRIOR_DEVICE_GPU
                | c.RKNN_FLAG_ENABLE_SRAM | c.RKNN_FLAG_SHARE_SRAM | c.RKNN_FLAG_DISABLE_PROC_HIGH_PRIORITY
                | c.RKNN_FLAG_DISABLE_FLUSH_INPUT_MEM_CACHE | c.RKNN_FLAG_DISABLE_FLUSH_OUTPUT_MEM_CACHE
                | c.RKNN_FLAG_MODEL_BUFFER_ZERO_COPY)


def context_of(ctx: Any) -> Context:
    """The neutral `npurt.runtime.Context` behind an rknn_context (for the Pythonic layers and tests)."""
    return get_ctx(ctx).context


# --- init / dup / destroy ---------------------------------------------------------------------------------------
def _options(flag: int) -> ContextOptions:
    prior = flag & (c.RKNN_FLAG_PRIOR_MEDIUM | c.RKNN_FLAG_PRIOR_LOW)
    alloc_outside = bool(flag & c.RKNN_FLAG_MEM_ALLOC_OUTSIDE)
    return ContextOptions(
        priority={0: "high", c.RKNN_FLAG_PRIOR_MEDIUM: "medium"}.get(prior, "low"),
        collect_perf=bool(flag & c.RKNN_FLAG_COLLECT_PERF_MASK),
        weights_outside=alloc_outside,
        internal_outside=alloc_outside or bool(flag & c.RKNN_FLAG_INTERNAL_ALLOC_OUTSIDE),
        info_only=bool(flag & c.RKNN_FLAG_COLLECT_MODEL_INFO_ONLY),
        sram=bool(flag & c.RKNN_FLAG_ENABLE_SRAM),
        flush_inputs=not flag & c.RKNN_FLAG_DISABLE_FLUSH_INPUT_MEM_CACHE,
        invalidate_outputs=not flag & c.RKNN_FLAG_DISABLE_FLUSH_OUTPUT_MEM_CACHE,
        perf=perf_mode_from_env(),
    )


def _warn_flags(flag: int, profile: Any) -> None:
    if flag & c.RKNN_FLAG_SHARE_SRAM:
        log.warning("RKNN_FLAG_SHARE_SRAM is not implemented yet: SRAM held by a context is not shared with "
                    "other contexts (the vendor runtime does the same)")
    if flag & c.RKNN_FLAG_ASYNC_MASK:
        log.warning("RKNN_FLAG_ASYNC_MASK is not supported: rknn_outputs_get returns the current frame's result")
    if flag & (c.RKNN_FLAG_FENCE_IN_OUTSIDE | c.RKNN_FLAG_FENCE_OUT_OUTSIDE):
        log.warning("RKNN_FLAG_FENCE_IN_OUTSIDE / _OUT_OUTSIDE are not supported: runs are synchronous")
    if flag & c.RKNN_FLAG_EXECUTE_FALLBACK_PRIOR_DEVICE_GPU:
        log.warning("RKNN_FLAG_EXECUTE_FALLBACK_PRIOR_DEVICE_GPU: no GPU, every op runs on the NPU (CPU executor)")
    if flag & c.RKNN_FLAG_ENABLE_SRAM and not profile.sram_size:
        log.warning(f"RKNN_FLAG_ENABLE_SRAM: {profile.name} has no NPU SRAM; internal memory stays in DDR")
    unknown = flag & ~_KNOWN_FLAGS
    if unknown:
        log.warning(f"rknn_init: unknown flag bits {unknown:#x} ignored")


def _model_source(model: Any, size: int, flag: int, ext: rknn_init_extend | None, device: Any) \
        -> tuple[Any, MemRef | None]:
    """What to load: (model bytes / path, None) or (None, MemRef of the model buffer) for MODEL_BUFFER_ZERO_COPY."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 0 or size > 0xFFFFFFFF:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"invalid model size: {size!r}")
    offset = int(ext.real_model_offset) if ext is not None else 0
    real_size = int(ext.real_model_size) if ext is not None else 0
    if offset < 0:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"invalid real_model_offset: {offset}")
    zero_copy = bool(flag & c.RKNN_FLAG_MODEL_BUFFER_ZERO_COPY)
    addr = getattr(model, "value", model) if isinstance(model, (ctypes.c_void_p,)) else model
    if isinstance(addr, int) and not isinstance(addr, bool):
        if size <= 0:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, "a model given by address needs its size")
        buf, off = device.lookup_host(addr, size)
        if zero_copy:
            if ext is not None and ext.model_buffer_fd > 0 and not buf.backed_by(ext.model_buffer_fd):
                raise NpuError(ErrorCode.INVALID_ARGUMENT, f"model_buffer_fd {ext.model_buffer_fd} is not the fd of "
                                                           f"the model buffer ({buf.fd})")
            start, length = off + offset, (real_size or size - offset)
            if offset >= size or offset + length > size:
                raise NpuError(ErrorCode.INVALID_ARGUMENT, f"real_model_offset {offset} + real_model_size {length} > "
                                                           f"model size {size}")
            return None, MemRef(buf, start, length, "model")
        data = bytes(buf.cpu_view(np.uint8, offset=off, nbytes=size))
    elif zero_copy:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "RKNN_FLAG_MODEL_BUFFER_ZERO_COPY needs the model in an "
                                                   "rknn_create_mem(2) buffer: pass its virt_addr as model")
    elif isinstance(model, (str, os.PathLike)) or (isinstance(model, bytes) and size == 0):
        path = os.fsdecode(model)
        if size:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, "a model path is given with size 0")
        if not os.path.exists(path):
            raise NpuError(ErrorCode.INVALID_MODEL, f"model file {path!r} does not exist")
        regular_input(path, "model file", ErrorCode.INVALID_MODEL)      # a directory, FIFO or device: says which
        if not offset and not real_size:
            return path, None
        with open(path, "rb") as f:
            data = f.read()
        size = len(data)
    elif isinstance(model, (bytes, bytearray, memoryview)):
        data = memoryview(model).cast("B")
        if size > len(data):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"size {size} is larger than the {len(data)}-byte model buffer")
        data = data[:size]
    elif model is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "model is NULL")
    else:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"model must be bytes, a path or an address, got "
                                                   f"{type(model).__name__}")
    if offset or real_size:
        length = real_size or len(data) - offset
        if offset >= len(data) or offset + length > len(data):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"real_model_offset {offset} + real_model_size {length} > "
                                                       f"model size {len(data)}")
        data = data[offset:offset + length]
    return bytes(data), None


def _register(context: Context, flag: int, out: Any) -> RknnContext:
    """Give `context` a handle and write it to the out-parameter `out`. On failure nothing stays registered, the
    device reference is dropped and `context` is destroyed."""
    obj = None
    try:
        obj = RknnContext(context=context, flags=flag, device=open_device(context.device.soc))
        obj.handle = handles.contexts.add(obj, "rknn")
        store_ctx(out, obj.handle)
    except BaseException:
        if obj is not None:
            if obj.handle:
                handles.contexts.remove(obj.handle)
            obj.device.close()
        context.destroy()
        raise
    return obj


def _memory_report(obj: RknnContext) -> None:
    """At RKNN_LOG_LEVEL >= 3: the seed's internal-memory table and totals for the context (`memory_table`)."""
    if not log.enabled(log.INFO):
        return
    try:
        text = memory_table(obj.context)
    except Exception as exc:          # a report must never fail an init
        text = f"memory table unavailable: {type(exc).__name__}: {exc}"
    log.info(text)


def memory_table(context: Context) -> str:
    """The RKNN_LOG_LEVEL=3 table of a context (`npurt.runtime.report.context_table`): one row per input (User =
    its first consumer), internal tensor (User = its producer; device address = internal arena + planned offset,
    SramHit = bytes in SRAM) and output ("OutputOperator"), then the totals. Inputs/outputs not bound yet show
    address 0."""
    return context_table(context)


@mirror("rknn_init")
def rknn_init(ctx: Any, model: Any, size: int, flag: int, extend: Any) -> int:
    """Create a context: `model` is the model bytes (size > 0), a path (size == 0), or — with
    RKNN_FLAG_MODEL_BUFFER_ZERO_COPY — the virt_addr of an rknn_create_mem(2) buffer holding it. `extend`
    (rknn_init_extend or None): `ctx` for RKNN_FLAG_SHARE_WEIGHT_MEM, real_model_offset / _size, model_buffer_fd.
    On success `ctx` (an rknn_context) receives the handle."""
    profile = get_profile(None)
    require_api("rknn_init", profile)
    if ctx is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "ctx is NULL")
    if ctx_value(ctx) is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"ctx must be an rknn_context, got {type(ctx).__name__}")
    if isinstance(flag, bool) or not isinstance(flag, int) or flag < 0:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"invalid flag: {flag!r}")
    ext = struct_arg(extend, rknn_init_extend, "extend") if extend is not None else None
    share_from = None
    if flag & c.RKNN_FLAG_SHARE_WEIGHT_MEM:
        if ext is None or not ext.ctx:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, "RKNN_FLAG_SHARE_WEIGHT_MEM needs rknn_init_extend.ctx (the "
                                                       "context whose weights to share)")
        share_from = get_ctx(ext.ctx).context
    device = open_device(profile.name)
    try:
        source, model_buffer = _model_source(model, size, flag, ext, device)
        _warn_flags(flag, profile)
        context = Context(source if model_buffer is None else b"", device=device, options=_options(flag),
                          share_weights_with=share_from, model_buffer=model_buffer, log=log.runtime_sink)
    finally:
        device.close()
    obj = _register(context, flag, ctx)
    log.info(f"RKNN Runtime Information, librknnrt version: 2.5.0 (npurt), driver version: 0.9.8, "
             f"target: {profile.name}")
    _memory_report(obj)
    return c.RKNN_SUCC


@mirror("rknn_dup_context", ctx=MODEL_CTX)
def rknn_dup_context(ctx_in: Any, ctx_out: Any) -> int:
    """A second context of the same model: weights shared, internal memory its own (for running in parallel)."""
    if ctx_out is None or ctx_value(ctx_out) is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "ctx_out must be an rknn_context")
    _register(ctx_in.context.dup(), ctx_in.flags, ctx_out)
    return c.RKNN_SUCC


@mirror("rknn_destroy", ctx=MODEL_CTX)
def rknn_destroy(ctx: Any) -> int:
    """Destroy the context: its runtime memory, output buffers not released, and every rknn_tensor_mem created
    with it (each such leak is named in a W line). The handle stays invalid (RKNN_ERR_CTX_INVALID) afterwards."""
    ctx.context.destroy()                     # BUSY while running: nothing is released then
    handles.contexts.remove(ctx.handle)
    try:
        for record in handles.mems.owned_by(ctx.handle):
            log.warning(f"rknn_destroy: rknn_tensor_mem (virt {record.virt_addr:#x}, size {record.size}) was not "
                        f"destroyed with rknn_destroy_mem; releasing it")
            handles.mems.release(record)
        for addr, buf in list(ctx.outputs.items()):
            log.warning(f"rknn_destroy: output buffer {addr:#x} was not released with rknn_outputs_release")
            if buf.alive:
                buf.free()
        ctx.outputs.clear()
    finally:
        ctx.device.close()
    return c.RKNN_SUCC


# --- general API ------------------------------------------------------------------------------------------------
def _user_bytes(addr: Any, size: int, device: Any) -> np.ndarray:
    """`size` bytes at user address `addr`: a view of runtime memory (the range must lie inside the buffer), or
    a guarded copy of the caller's own memory (PARAM_INVALID when it is not readable)."""
    if not raw.pointer_value(addr):
        raise NpuError(ErrorCode.INVALID_INPUT, "input buf is NULL")
    try:
        return device.view_at(raw.pointer_value(addr), size)
    except NpuError:
        return raw.read_bytes(addr, size, "input buf")


@mirror("rknn_inputs_set", ctx=MODEL_CTX)
def rknn_inputs_set(ctx: Any, n_inputs: int, inputs: Any) -> int:
    """Copy the user inputs into the runtime (type / layout conversion, normalisation, quantisation, padding;
    `pass_through=1`: the bytes are already native). `inputs`: an array (or list) of rknn_input."""
    items = as_struct_list(inputs, n_inputs, rknn_input, "inputs")
    data = []
    for inp in items:
        dtype = TYPE_TO_DTYPE.get(inp.type)
        layout = FMT_TO_LAYOUT.get(inp.fmt)
        if dtype is None or (not inp.pass_through and layout is None):     # pass_through: type must be set too
            raise NpuError(ErrorCode.INVALID_INPUT, f"invalid dtype/layout: type {c.get_type_string(inp.type)}, "
                                                    f"fmt {c.get_format_string(inp.fmt)}")
        if inp.size <= 0:
            raise NpuError(ErrorCode.INVALID_INPUT, f"param input size({inp.size}) is invalid")
        raw = _user_bytes(inp.buf, int(inp.size), ctx.device)
        data.append(InputData(int(inp.index), raw, dtype, layout or Layout.NHWC, bool(inp.pass_through),
                              int(inp.size)))
    ctx.context.set_inputs(data)
    return c.RKNN_SUCC


@mirror("rknn_run", ctx=MODEL_CTX)
def rknn_run(ctx: Any, extend: Any) -> int:
    """Run the model once (blocking). `extend` (rknn_run_extend or None): frame_id is filled in; non_block is not
    supported (the run blocks, and a W line says so)."""
    ext = struct_arg(extend, rknn_run_extend, "extend") if extend is not None else None
    if ext is not None and ext.non_block:
        log.warning("rknn_run: non_block is not supported; the run blocks")
    ctx.context.run()
    if ext is not None:
        ext.frame_id = ctx.context.perf.runs
    return c.RKNN_SUCC


@mirror("rknn_wait", api=True)
def rknn_wait(ctx: Any, extend: Any) -> int:
    """Not supported on any platform (seed table 3-1): RKNN_ERR_FAIL with an `E RKNN:` line."""
    return c.RKNN_ERR_FAIL  # pragma: no cover - no profile supports it


@mirror("rknn_outputs_get", ctx=MODEL_CTX)
def rknn_outputs_get(ctx: Any, n_outputs: int, outputs: Any, extend: Any) -> int:
    """Copy the last run's outputs out: per rknn_output, `want_float` (float32) or the model's type, logical layout;
    `is_prealloc=1`: into the user's `buf` (`size` bytes, checked); else into runtime memory whose address goes to
    `buf` (read it with `output_view`; free it with rknn_outputs_release)."""
    items = as_struct_list(outputs, n_outputs, rknn_output, "outputs")
    ext = struct_arg(extend, rknn_output_extend, "extend") if extend is not None else None
    context = ctx.context
    for out in items:
        if out.index >= context.n_outputs:
            raise NpuError(ErrorCode.INVALID_OUTPUT, f"output index({out.index}) >= output_num({context.n_outputs})")
    arrays = context.get_outputs([bool(o.want_float) for o in items], [int(o.index) for o in items])
    for out, arr in zip(items, arrays):
        if out.is_prealloc:
            if not out.buf:
                raise NpuError(ErrorCode.INVALID_OUTPUT, f"outputs[{out.index}].buf is NULL with is_prealloc=1")
            if out.size < arr.nbytes:
                raise NpuError(ErrorCode.INVALID_OUTPUT, f"param output size({out.size}) < model output "
                                                         f"size({arr.nbytes})")
            raw.check_writable(out.buf, arr.nbytes, f"outputs[{out.index}].buf")     # every one, before any write
    for out, arr in zip(items, arrays):
        b = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        if out.is_prealloc:
            raw.write_bytes(out.buf, b, f"outputs[{out.index}].buf")
            continue
        buf = ctx.device.alloc(max(b.size, 1), owner=f"rknn_ctx_{ctx.handle:#x}", name=f"output{out.index}")
        np.copyto(buf.cpu_view(np.uint8, nbytes=b.size), b)
        ctx.outputs[buf.virt_addr] = buf
        out.buf = buf.virt_addr
        out.size = b.size
    if ext is not None:
        ext.frame_id = context.perf.runs
    return c.RKNN_SUCC


@mirror("rknn_outputs_release", ctx=MODEL_CTX)
def rknn_outputs_release(ctx: Any, n_outputs: int, outputs: Any) -> int:
    """Free the runtime memory rknn_outputs_get put in `buf` (not prealloc'd buffers, not the array); `buf` is set
    to NULL. Releasing twice is harmless; a `buf` the runtime did not hand out is RKNN_ERR_PARAM_INVALID."""
    items = as_struct_list(outputs, n_outputs, rknn_output, "outputs")
    listed: set[int] = set()
    for out in items:
        if out.is_prealloc or not out.buf:
            continue
        if out.buf not in ctx.outputs:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"outputs[{out.index}].buf {out.buf:#x} was not allocated by "
                                                       f"rknn_outputs_get of this context")
        if out.buf in listed:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"outputs[{out.index}].buf {out.buf:#x} is listed twice")
        listed.add(out.buf)
    for out in items:
        if out.is_prealloc or not out.buf:
            continue
        buf = ctx.outputs.pop(out.buf)
        if buf.alive:
            buf.free()
        out.buf = None
    return c.RKNN_SUCC


# --- dynamic shapes, cores ----------------------------------------------------------------------------------------
@mirror("rknn_set_input_shapes", ctx=MODEL_CTX)
def rknn_set_input_shapes(ctx: Any, n_inputs: int, attr: Any) -> int:
    """Switch a dynamic-shape model to one of the shapes RKNN_QUERY_INPUT_DYNAMIC_RANGE lists: `attr[i].dims` in
    `attr[i].fmt` (NHWC or NCHW / UNDEFINED). Zero-copy users re-query the CURRENT attrs and call rknn_set_io_mem
    again; general-API users call rknn_inputs_set again. Memory is not reallocated (sized for the largest shape)."""
    items = as_struct_list(attr, n_inputs, rknn_tensor_attr, "attr")
    context = ctx.context
    if n_inputs != context.n_inputs:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"n_inputs({n_inputs}) != input_num({context.n_inputs})")
    shapes: list[tuple[int, ...] | None] = [None] * context.n_inputs
    for i, a in enumerate(items):
        index = int(a.index) if a.index < context.n_inputs else i
        shapes[index] = _logical_dims(a)
    if any(s is None for s in shapes):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "every input needs a shape (attr[i].index)")
    context.set_input_shapes(shapes)
    return c.RKNN_SUCC


def _logical_dims(a: rknn_tensor_attr) -> tuple[int, ...]:
    """The logical (ONNX-order) shape an attr gives: `dims` in `fmt` (NHWC 4-D dims are reordered to NCHW)."""
    dims = tuple(int(d) for d in a.dims[:min(a.n_dims, c.RKNN_MAX_DIMS)])
    if a.fmt == c.RKNN_TENSOR_NHWC and len(dims) == 4:
        dims = (dims[0], dims[3], dims[1], dims[2])
    return dims


@mirror("rknn_set_input_shape")
def rknn_set_input_shape(ctx: Any, attr: Any) -> int:
    """The deprecated single-input form of rknn_set_input_shapes, still called by public applications: input
    `attr.index` takes `attr.dims` in `attr.fmt`; every other input keeps its current shape."""
    obj = MODEL_CTX(ctx, "rknn_set_input_shapes")      # the singular form is gated by the plural's table row
    if attr is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "attr is NULL")
    a = struct_arg(attr, rknn_tensor_attr, "attr")
    context = obj.context
    if a.index >= context.n_inputs:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"input index({a.index}) >= input_num({context.n_inputs})")
    shapes = [context.input_shape(i) for i in range(context.n_inputs)]
    shapes[a.index] = _logical_dims(a)
    context.set_input_shapes(shapes)
    return c.RKNN_SUCC


@mirror("rknn_set_core_mask", ctx=MODEL_CTX)
def rknn_set_core_mask(ctx: Any, core_mask: int) -> int:
    """Choose the NPU cores (RK3588: AUTO, 0, 1, 2, 0_1, 0_1_2, ALL; RK3576: AUTO, 0, 1, 0_1, ALL)."""
    ctx.context.set_core_mask(core_mask)
    return c.RKNN_SUCC


@mirror("rknn_set_batch_core_num", ctx=MODEL_CTX)
def rknn_set_batch_core_num(ctx: Any, core_num: int) -> int:
    """How many NPU cores a multi-batch model spreads over (1..cores; RK3588 / RK3576 only)."""
    ctx.context.set_batch_core_num(core_num)
    return c.RKNN_SUCC
