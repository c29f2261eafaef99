"""librknnrt.so / librknnmrt.so: the RKNN C API as thin adapters over the `npurt.rknn` mirror.

Each entry point gets C's arguments with pointers as ints (see `npurt.capi.build`), turns them into the mirror's
ctypes structs (`npurt.capi.guard`: validated, aliasing the caller's memory where the call fills it), calls the
mirror function of the same name and returns its status, or the address of the `rknn_tensor_mem` it issued.
`rknn_tensor_mem*` arguments are looked up among the structs the mirror issued, never dereferenced blindly.
Failures of the adapter itself (a wild pointer) are `E RKNN:` lines and statuses, as the mirror's are.

Around the mirror, only what a C process needs: the C environment is re-read at every `rknn_init` (so a `setenv`
before it counts), custom-op plugins (`librkcst_*.so`) are registered after `rknn_init`
(`npurt.rknn.op_plugins`), and the emulated debugfs file `rknpu/mm` is kept current (`npurt.capi.debugfs`).
"""
from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import Any, Callable

import npurt.rknn as r
from npurt.capi import debugfs, guard
from npurt.capi.build import LibrarySpec, header_functions
from npurt.capi.embed import sync_environ
from npurt.errors import ErrorCode, NpuError
from npurt.rknn import handles, log, op_plugins
from npurt.rknn.boundary import BOUNDARY
from npurt.rknn.api_query import QUERIES

LIBRARY_NAME = "librknnrt.so"
HEADER_DIR = Path(__file__).resolve().parent / "include"
HEADERS = ["rknn_api.h", "rknn_matmul_api.h", "rknn_custom_op.h"]
CORE_MASK_FUNCTIONS = {"rknn_set_core_mask", "rknn_set_batch_core_num"}


def _functions(names: list[str], skip: set[str] = frozenset()) -> str:
    decls = "\n".join(header_functions(HEADER_DIR / h) for h in names)
    return "\n".join(d + ";" for d in decls.split(";") if d.strip() and d.split("(")[0].split()[-1].lstrip("*")
                     not in skip)


def spec() -> LibrarySpec:
    """librknnrt.so: all 34 functions of seed table 3-1 plus rknn_set_input_shape."""
    return LibrarySpec(name=LIBRARY_NAME, headers=HEADERS, header_dir=HEADER_DIR, functions=_functions(HEADERS),
                       module=__name__)


def mini_spec() -> LibrarySpec:
    """librknnmrt.so (RV1106 / RV1103 programs link it): the rknn_api.h functions without the core-mask ones;
    without $NPURT_SOC it emulates an rv1106."""
    return LibrarySpec(name="librknnmrt.so", headers=["rknn_api.h"], header_dir=HEADER_DIR,
                       functions=_functions(["rknn_api.h"], CORE_MASK_FUNCTIONS), module="npurt.capi.rknnmrt")


def entry(func_name: str, failure: Any = "status") -> Callable:
    """An adapter's own boundary: its argument checks fail as the mirror's do (`E RKNN:` line, status or NULL)."""
    return BOUNDARY.wrap(func_name, failure, export=False)


def _mem(addr: int, what: str = "mem") -> Any:
    """The registry record of the `rknn_tensor_mem*` a C caller passed (the mirror takes it in place of the
    struct, so the struct is looked up once)."""
    if not addr:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} is NULL")
    record = handles.mems.record_at(addr)
    if record is None:
        raise NpuError(ErrorCode.INVALID_HANDLE, f"invalid {what} 0x{addr:x}: not an rknn_tensor_mem from "
                                                 f"rknn_create_mem*, or already destroyed")
    return record


def _mem_address(mem: Any) -> int:
    return ctypes.addressof(mem) if mem is not None else 0


def _ctx_in(addr: int, what: str) -> Any:
    """The handle a `rknn_context*` argument points to (read after validation); None for NULL."""
    box = guard.struct_at(r.rknn_context, addr, what, write=False)
    return None if box is None else box.value


def _refreshed(result: Any) -> Any:
    debugfs.refresh()
    return result


# --- rknn_api.h -------------------------------------------------------------------------------------------------
@entry("rknn_init")
def rknn_init(context: int, model: int, size: int, flag: int, extend: int) -> int:
    sync_environ()
    ctx = guard.struct_at(r.rknn_context, context, "context")
    ext = guard.struct_at(r.rknn_init_extend, extend, "extend", write=False)      # input structs are only read
    if size == 0:
        source = guard.c_string(model, "model path")
        source = os.fsdecode(source) if source is not None else None
    elif flag & r.RKNN_FLAG_MODEL_BUFFER_ZERO_COPY:
        source = model
    else:
        source = guard.checked_bytes(model, size, "model")
    ret = r.rknn_init(ctx, source, size, flag, ext)
    if ret == r.RKNN_SUCC:
        op_plugins.register_plugins(ctx.value)
    return _refreshed(ret)


@entry("rknn_dup_context")
def rknn_dup_context(context_in: int, context_out: int) -> int:
    return _refreshed(r.rknn_dup_context(_ctx_in(context_in, "context_in"),
                                         guard.struct_at(r.rknn_context, context_out, "context_out")))


def rknn_destroy(context: int) -> int:
    return _refreshed(r.rknn_destroy(context))


@entry("rknn_query")
def rknn_query(context: int, cmd: int, info: int, size: int) -> int:
    entry = QUERIES.get(cmd)
    struct = guard.struct_at(entry[1], info, "info", size) if entry is not None else (info or None)
    return r.rknn_query(context, cmd, struct, size)


@entry("rknn_inputs_set")
def rknn_inputs_set(context: int, n_inputs: int, inputs: int) -> int:
    return r.rknn_inputs_set(context, n_inputs, guard.array_at(r.rknn_input, inputs, n_inputs, "inputs",
                                                               write=False))


def rknn_set_batch_core_num(context: int, core_num: int) -> int:
    return r.rknn_set_batch_core_num(context, core_num)


def rknn_set_core_mask(context: int, core_mask: int) -> int:
    return r.rknn_set_core_mask(context, core_mask)


@entry("rknn_run")
def rknn_run(context: int, extend: int) -> int:
    return r.rknn_run(context, guard.struct_at(r.rknn_run_extend, extend, "extend"))


@entry("rknn_wait")
def rknn_wait(context: int, extend: int) -> int:
    return r.rknn_wait(context, guard.struct_at(r.rknn_run_extend, extend, "extend"))


@entry("rknn_outputs_get")
def rknn_outputs_get(context: int, n_outputs: int, outputs: int, extend: int) -> int:
    return r.rknn_outputs_get(context, n_outputs, guard.array_at(r.rknn_output, outputs, n_outputs, "outputs"),
                              guard.struct_at(r.rknn_output_extend, extend, "extend"))


@entry("rknn_outputs_release")
def rknn_outputs_release(context: int, n_ouputs: int, outputs: int) -> int:
    return r.rknn_outputs_release(context, n_ouputs, guard.array_at(r.rknn_output, outputs, n_ouputs, "outputs"))


@entry("rknn_create_mem_from_phys", failure=0)
def rknn_create_mem_from_phys(ctx: int, phys_addr: int, virt_addr: int, size: int) -> int:
    return _refreshed(_mem_address(r.rknn_create_mem_from_phys(ctx, phys_addr, virt_addr, size)))


@entry("rknn_create_mem_from_fd", failure=0)
def rknn_create_mem_from_fd(ctx: int, fd: int, virt_addr: int, size: int, offset: int) -> int:
    return _refreshed(_mem_address(r.rknn_create_mem_from_fd(ctx, fd, virt_addr, size, offset)))


@entry("rknn_create_mem_from_mb_blk", failure=0)
def rknn_create_mem_from_mb_blk(ctx: int, mb_blk: int, offset: int) -> int:
    return _mem_address(r.rknn_create_mem_from_mb_blk(ctx, mb_blk, offset))


@entry("rknn_create_mem", failure=0)
def rknn_create_mem(ctx: int, size: int) -> int:
    return _refreshed(_mem_address(r.rknn_create_mem(ctx, size)))


@entry("rknn_create_mem2", failure=0)
def rknn_create_mem2(ctx: int, size: int, alloc_flags: int) -> int:
    if not ctx:
        sync_environ()
    return _refreshed(_mem_address(r.rknn_create_mem2(ctx, size, alloc_flags)))


@entry("rknn_destroy_mem")
def rknn_destroy_mem(ctx: int, mem: int) -> int:
    return _refreshed(r.rknn_destroy_mem(ctx, _mem(mem)))


@entry("rknn_set_weight_mem")
def rknn_set_weight_mem(ctx: int, mem: int) -> int:
    return _refreshed(r.rknn_set_weight_mem(ctx, _mem(mem)))


@entry("rknn_set_internal_mem")
def rknn_set_internal_mem(ctx: int, mem: int) -> int:
    return _refreshed(r.rknn_set_internal_mem(ctx, _mem(mem)))


@entry("rknn_set_io_mem")
def rknn_set_io_mem(ctx: int, mem: int, attr: int) -> int:
    return r.rknn_set_io_mem(ctx, _mem(mem), guard.struct_at(r.rknn_tensor_attr, attr, "attr", write=False))


@entry("rknn_set_input_shape")
def rknn_set_input_shape(ctx: int, attr: int) -> int:
    return r.rknn_set_input_shape(ctx, guard.struct_at(r.rknn_tensor_attr, attr, "attr", write=False))


@entry("rknn_set_input_shapes")
def rknn_set_input_shapes(ctx: int, n_inputs: int, attr: int) -> int:
    return r.rknn_set_input_shapes(ctx, n_inputs, guard.array_at(r.rknn_tensor_attr, attr, n_inputs, "attr",
                                                                 write=False))


@entry("rknn_mem_sync")
def rknn_mem_sync(context: int, mem: int, mode: int) -> int:
    return r.rknn_mem_sync(context, _mem(mem), mode)


# --- rknn_matmul_api.h ------------------------------------------------------------------------------------------
@entry("rknn_matmul_create")
def rknn_matmul_create(ctx: int, info: int, io_attr: int) -> int:
    sync_environ()
    return _refreshed(r.rknn_matmul_create(guard.struct_at(r.rknn_context, ctx, "ctx"),
                                           guard.struct_at(r.rknn_matmul_info, info, "info", write=False),
                                           guard.struct_at(r.rknn_matmul_io_attr, io_attr, "io_attr")))


@entry("rknn_matmul_create_dynamic_shape")
def rknn_matmul_create_dynamic_shape(ctx: int, info: int, shape_num: int, dynamic_shapes: int,
                                     io_attrs: int) -> int:
    sync_environ()
    count = max(int(shape_num), 0)
    return _refreshed(r.rknn_matmul_create_dynamic_shape(
        guard.struct_at(r.rknn_context, ctx, "ctx"), guard.struct_at(r.rknn_matmul_info, info, "info", write=False),
        shape_num,
        guard.array_at(r.rknn_matmul_shape, dynamic_shapes, count, "dynamic_shapes", write=False),
        guard.array_at(r.rknn_matmul_io_attr, io_attrs, count, "io_attrs")))


@entry("rknn_matmul_set_io_mem")
def rknn_matmul_set_io_mem(ctx: int, mem: int, attr: int) -> int:
    return r.rknn_matmul_set_io_mem(ctx, _mem(mem), guard.struct_at(r.rknn_matmul_tensor_attr, attr, "attr",
                                                                    write=False))


def rknn_matmul_set_core_mask(context: int, core_mask: int) -> int:
    return r.rknn_matmul_set_core_mask(context, core_mask)


@entry("rknn_matmul_set_quant_params")
def rknn_matmul_set_quant_params(context: int, params: int) -> int:
    return r.rknn_matmul_set_quant_params(context, guard.struct_at(r.rknn_quant_params, params, "params",
                                                                   write=False))


@entry("rknn_matmul_get_quant_params")
def rknn_matmul_get_quant_params(ctx: int, params: int, scale: int) -> int:
    return r.rknn_matmul_get_quant_params(ctx, guard.struct_at(r.rknn_quant_params, params, "params"),
                                          guard.struct_at(ctypes.c_float, scale, "scale"))


@entry("rknn_matmul_set_dynamic_shape")
def rknn_matmul_set_dynamic_shape(ctx: int, shape: int) -> int:
    return r.rknn_matmul_set_dynamic_shape(ctx, guard.struct_at(r.rknn_matmul_shape, shape, "shape",
                                                                write=False))


def rknn_matmul_run(ctx: int) -> int:
    return r.rknn_matmul_run(ctx)


def rknn_matmul_destroy(ctx: int) -> int:
    return _refreshed(r.rknn_matmul_destroy(ctx))


@entry("rknn_B_normal_layout_to_native_layout")
def rknn_B_normal_layout_to_native_layout(B_input: int, B_output: int, K: int, N: int, info: int) -> int:
    return r.rknn_B_normal_layout_to_native_layout(B_input or None, B_output or None, K, N,
                                                   guard.struct_at(r.rknn_matmul_info, info, "info", write=False))


# --- rknn_custom_op.h -------------------------------------------------------------------------------------------
@entry("rknn_register_custom_ops")
def rknn_register_custom_ops(ctx: int, op: int, custom_op_num: int) -> int:
    ops = guard.struct_copy(r.rknn_custom_op, op, custom_op_num, "op") if custom_op_num > 0 else op or None
    return r.rknn_register_custom_ops(ctx, ops, custom_op_num)


def rknn_custom_op_get_op_attr(op_ctx: int, attr_name: int, op_attr: int) -> None:
    try:
        name = guard.c_string(attr_name, "attr_name")
        r.rknn_custom_op_get_op_attr(guard.struct_at(r.rknn_custom_op_context, op_ctx, "op_ctx", write=False),
                                     name if name is not None else b"",
                                     guard.struct_at(r.rknn_custom_op_attr, op_attr, "op_attr"))
    except NpuError as exc:
        log.error(f"rknn_custom_op_get_op_attr: {exc.message}")
