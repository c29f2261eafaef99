"""RKNN mirror, `rknn_query`: the 20 commands of seed table 3-2, each filling its struct in place.

Validation as the vendor's mini runtime does it: a known `cmd`, `info` not NULL and of the command's struct type,
`size >= sizeof(struct)` ("info_len(%d) < sizeof(rknn_tensor_attr)(%d)"), `index < input_num / output_num`. A
command the SoC's column marks with a cross returns RKNN_ERR_FAIL with an `E RKNN:` line; `info` is untouched on
every failure.
"""
from __future__ import annotations

import ctypes
from typing import Any

from npurt._version import __version__
from npurt.errors import ErrorCode, NpuError
from npurt.rknn import constants as c
from npurt.rknn.api_common import LAYOUT_TO_FMT, RknnContext, fill_attr, get_ctx, require_api, struct_arg
from npurt.rknn.boundary import mirror
from npurt.rknn.structs import (rknn_custom_string, rknn_input_output_num, rknn_input_range, rknn_mem_size,
                                rknn_perf_detail, rknn_perf_run, rknn_sdk_version, rknn_tensor_attr, rknn_tensor_mem)

API_VERSION = f"2.5.0 (npurt {__version__})"      # the SDK the seeds document; npurt's own version in brackets
DRV_VERSION = "0.9.8 (npurt emulated)"             # npurt's choice: an RKNPU driver version that has SRAM support

# cmd -> (table 3-2 name, struct type); 8/9 are also the NC1HWC2 aliases
QUERIES: dict[int, tuple[str, type]] = {
    c.RKNN_QUERY_IN_OUT_NUM: ("RKNN_QUERY_IN_OUT_NUM", rknn_input_output_num),
    c.RKNN_QUERY_INPUT_ATTR: ("RKNN_QUERY_INPUT_ATTR", rknn_tensor_attr),
    c.RKNN_QUERY_OUTPUT_ATTR: ("RKNN_QUERY_OUTPUT_ATTR", rknn_tensor_attr),
    c.RKNN_QUERY_PERF_DETAIL: ("RKNN_QUERY_PERF_DETAIL", rknn_perf_detail),
    c.RKNN_QUERY_PERF_RUN: ("RKNN_QUERY_PERF_RUN", rknn_perf_run),
    c.RKNN_QUERY_SDK_VERSION: ("RKNN_QUERY_SDK_VERSION", rknn_sdk_version),
    c.RKNN_QUERY_MEM_SIZE: ("RKNN_QUERY_MEM_SIZE", rknn_mem_size),
    c.RKNN_QUERY_CUSTOM_STRING: ("RKNN_QUERY_CUSTOM_STRING", rknn_custom_string),
    c.RKNN_QUERY_NATIVE_INPUT_ATTR: ("RKNN_QUERY_NATIVE_INPUT_ATTR", rknn_tensor_attr),
    c.RKNN_QUERY_NATIVE_OUTPUT_ATTR: ("RKNN_QUERY_NATIVE_OUTPUT_ATTR", rknn_tensor_attr),
    c.RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR: ("RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR", rknn_tensor_attr),
    c.RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR: ("RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR", rknn_tensor_attr),
    c.RKNN_QUERY_DEVICE_MEM_INFO: ("RKNN_QUERY_DEVICE_MEM_INFO", rknn_tensor_mem),
    c.RKNN_QUERY_INPUT_DYNAMIC_RANGE: ("RKNN_QUERY_INPUT_DYNAMIC_RANGE", rknn_input_range),
    c.RKNN_QUERY_CURRENT_INPUT_ATTR: ("RKNN_QUERY_CURRENT_INPUT_ATTR", rknn_tensor_attr),
    c.RKNN_QUERY_CURRENT_OUTPUT_ATTR: ("RKNN_QUERY_CURRENT_OUTPUT_ATTR", rknn_tensor_attr),
    c.RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR: ("RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR", rknn_tensor_attr),
    c.RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR: ("RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR", rknn_tensor_attr),
}
_ATTR_KIND = {
    c.RKNN_QUERY_INPUT_ATTR: (True, "logical"), c.RKNN_QUERY_OUTPUT_ATTR: (False, "logical"),
    c.RKNN_QUERY_NATIVE_INPUT_ATTR: (True, "native"), c.RKNN_QUERY_NATIVE_OUTPUT_ATTR: (False, "native"),
    c.RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR: (True, "native_nhwc"),
    c.RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR: (False, "native_nhwc"),
    c.RKNN_QUERY_CURRENT_INPUT_ATTR: (True, "current"), c.RKNN_QUERY_CURRENT_OUTPUT_ATTR: (False, "current"),
    c.RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR: (True, "current_native"),
    c.RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR: (False, "current_native"),
}
_INFO_ONLY_OK = {c.RKNN_QUERY_IN_OUT_NUM, c.RKNN_QUERY_INPUT_ATTR, c.RKNN_QUERY_OUTPUT_ATTR, c.RKNN_QUERY_SDK_VERSION,
                 c.RKNN_QUERY_MEM_SIZE, c.RKNN_QUERY_CUSTOM_STRING, c.RKNN_QUERY_NATIVE_INPUT_ATTR,
                 c.RKNN_QUERY_NATIVE_OUTPUT_ATTR, c.RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR,
                 c.RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR, c.RKNN_QUERY_INPUT_DYNAMIC_RANGE}


def _info(info: Any, cls: type) -> Any:
    """`struct_arg` with the query's own wording for a wrong `info`."""
    try:
        return struct_arg(info, cls, "info")
    except NpuError:
        raise NpuError(ErrorCode.INVALID_ARGUMENT,
                       f"info must be an {cls.__name__}, got {type(info).__name__}") from None


def _copy_into(dst: Any, src: Any) -> None:
    ctypes.memmove(ctypes.addressof(dst), ctypes.addressof(src), ctypes.sizeof(dst))


def _put_text(field_owner: Any, name: str, text: str) -> None:
    size = type(field_owner).__dict__[name].size
    setattr(field_owner, name, text.encode("utf-8")[:size - 1])


@mirror("rknn_query")
def rknn_query(ctx: Any, cmd: int, info: Any, size: int) -> int:
    """Fill `info` for `cmd` (see the module doc); RKNN_SUCC or a status with an `E RKNN:` line."""
    obj = get_ctx(ctx)
    profile = obj.device.profile
    if isinstance(cmd, bool) or not isinstance(cmd, int) or cmd not in QUERIES:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"invalid query cmd: {cmd!r}")
    name, cls = QUERIES[cmd]
    require_api("rknn_query", profile)
    if not profile.supports_query(name):
        raise NpuError(ErrorCode.NOT_SUPPORTED, f"{name} is not supported on {profile.name} (seed table 3-2)")
    if info is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "info is NULL")
    target = _info(info, cls)
    if isinstance(size, bool) or not isinstance(size, int) or size < ctypes.sizeof(cls):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"info_len({size}) < sizeof({cls.__name__})({ctypes.sizeof(cls)})")
    context = obj.context
    if context.options.info_only and cmd not in _INFO_ONLY_OK:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{name}: the context was created with "
                                                   f"RKNN_FLAG_COLLECT_MODEL_INFO_ONLY (sizes and attrs only)")
    result = cls()
    if cmd in _ATTR_KIND:
        is_input, kind = _ATTR_KIND[cmd]
        if cmd == c.RKNN_QUERY_INPUT_ATTR and profile.mini_runtime:
            kind = "native"          # the mini runtime's INPUT_ATTR is the native attr (RV110x / RK2118)
        index = int(target.index)
        getter = context.input_attr if is_input else context.output_attr
        limit = context.n_inputs if is_input else context.n_outputs
        if index >= limit:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{'input' if is_input else 'output'} index({index}) >= "
                                                       f"{'input' if is_input else 'output'}_num({limit})")
        fill_attr(result, getter(index, kind))
    elif cmd == c.RKNN_QUERY_IN_OUT_NUM:
        result.n_input, result.n_output = context.n_inputs, context.n_outputs
    elif cmd == c.RKNN_QUERY_PERF_DETAIL:
        obj.perf_text = context.perf_detail(not_collected="per-op timings were not collected (init with "
                                                          "RKNN_FLAG_COLLECT_PERF_MASK for them)").encode("utf-8")
        result.perf_data = obj.perf_text
        result.data_len = len(obj.perf_text)
    elif cmd == c.RKNN_QUERY_PERF_RUN:
        result.run_duration = int(context.perf.run_us)
    elif cmd == c.RKNN_QUERY_SDK_VERSION:
        _put_text(result, "api_version", API_VERSION)
        _put_text(result, "drv_version", DRV_VERSION)
    elif cmd == c.RKNN_QUERY_MEM_SIZE:
        _fill_mem_size(result, obj)
    elif cmd == c.RKNN_QUERY_CUSTOM_STRING:
        _put_text(result, "string", context.custom_string())
    elif cmd == c.RKNN_QUERY_DEVICE_MEM_INFO:
        _fill_device_mem(result, context)
    elif cmd == c.RKNN_QUERY_INPUT_DYNAMIC_RANGE:
        index = int(target.index)
        if index >= context.n_inputs:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"input index({index}) >= input_num({context.n_inputs})")
        tname, fmt, shapes = context.dynamic_range(index)
        result.index = index
        result.shape_number = len(shapes)
        result.fmt = LAYOUT_TO_FMT[fmt]
        _put_text(result, "name", tname)
        result.n_dims = len(shapes[0])
        for s, shape in enumerate(shapes[:c.RKNN_MAX_DYNAMIC_SHAPE_NUM]):
            for j, d in enumerate(shape):
                result.dyn_range[s][j] = int(d)
    _copy_into(target, result)
    return c.RKNN_SUCC


def _fill_mem_size(result: rknn_mem_size, obj: RknnContext) -> None:
    from npurt.rknn import handles
    m = obj.context.mem_size()
    issued = sum(r.buffer.capacity for r in handles.mems.owned_by(obj.handle)
                 if r.owns_buffer and r.buffer.alive and not r.buffer.imported)
    outputs = sum(b.capacity for b in obj.outputs.values() if b.alive)
    result.total_weight_size = min(m.weight_size, 0xFFFFFFFF)
    result.total_internal_size = min(m.internal_size, 0xFFFFFFFF)
    result.total_dma_allocated_size = m.dma_allocated + issued + outputs
    result.total_sram_size = m.sram_total
    result.free_sram_size = m.sram_free


def _fill_device_mem(result: rknn_tensor_mem, context: Any) -> None:
    """The runtime's own model (weight) buffer: where the mini runtime keeps the model it loaded."""
    store = context.weight_store
    buf = store.buffer if store is not None else None
    if buf is None or not buf.alive:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "the runtime holds no model buffer of its own for this context "
                                                   "(weights are outside or zero-copy)")
    result.virt_addr = buf.virt_addr
    result.phys_addr = buf.dev_addr
    result.fd = buf.fd
    result.offset = 0
    result.size = buf.size
    result.flags = c.RKNN_TENSOR_MEMORY_FLAGS_ALLOC_INSIDE
