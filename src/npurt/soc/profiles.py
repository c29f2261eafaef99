"""SoC profiles as data: NPU cores, C2 per element type, SRAM, zero-copy alignment, API and query support.

Sources, chapters of the vendor's RKNN SDK guide: runtime lifecycle and layouts (C2 table), NPU SRAM (SRAM sizes
and device-tree addresses), memory ownership and zero-copy (tables 3-1 and 3-2, transcribed in
`tests/data/seed/`), and the user guide's input-alignment table. Values marked "npurt's choice" are not public.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from npurt.errors import ErrorCode, NpuError

DEFAULT_SOC = "rk3588"

# Seed table 3-1: the 34 runtime API functions, in the table's order.
API_FUNCTIONS: tuple[str, ...] = (
    "rknn_init", "rknn_set_core_mask", "rknn_dup_context", "rknn_destroy", "rknn_query",
    "rknn_inputs_set", "rknn_run", "rknn_wait", "rknn_outputs_get", "rknn_outputs_release",
    "rknn_create_mem_from_mb_blk", "rknn_create_mem_from_phys", "rknn_create_mem_from_fd",
    "rknn_create_mem", "rknn_destroy_mem", "rknn_set_weight_mem", "rknn_set_internal_mem",
    "rknn_set_io_mem", "rknn_set_input_shapes", "rknn_mem_sync", "rknn_matmul_create",
    "rknn_matmul_set_io_mem", "rknn_matmul_set_core_mask", "rknn_matmul_run", "rknn_matmul_destroy",
    "rknn_register_custom_ops", "rknn_custom_op_get_op_attr", "rknn_set_batch_core_num",
    "rknn_matmul_set_quant_params", "rknn_matmul_get_quant_params", "rknn_matmul_create_dynamic_shape",
    "rknn_matmul_set_dynamic_shape", "rknn_B_normal_layout_to_native_layout", "rknn_create_mem2",
)

# Seed table 3-2: the 20 query commands, in the table's order.
QUERY_COMMANDS: tuple[str, ...] = (
    "RKNN_QUERY_IN_OUT_NUM", "RKNN_QUERY_INPUT_ATTR", "RKNN_QUERY_OUTPUT_ATTR", "RKNN_QUERY_PERF_DETAIL",
    "RKNN_QUERY_PERF_RUN", "RKNN_QUERY_SDK_VERSION", "RKNN_QUERY_MEM_SIZE", "RKNN_QUERY_CUSTOM_STRING",
    "RKNN_QUERY_NATIVE_INPUT_ATTR", "RKNN_QUERY_NATIVE_OUTPUT_ATTR", "RKNN_QUERY_NATIVE_NC1HWC2_INPUT_ATTR",
    "RKNN_QUERY_NATIVE_NC1HWC2_OUTPUT_ATTR", "RKNN_QUERY_NATIVE_NHWC_INPUT_ATTR",
    "RKNN_QUERY_NATIVE_NHWC_OUTPUT_ATTR", "RKNN_QUERY_INPUT_DYNAMIC_RANGE", "RKNN_QUERY_DEVICE_MEM_INFO",
    "RKNN_QUERY_CURRENT_INPUT_ATTR", "RKNN_QUERY_CURRENT_OUTPUT_ATTR", "RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR",
    "RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR",
)

_NEVER = {"rknn_wait", "rknn_create_mem_from_mb_blk"}
_MULTI_CORE_ONLY = {"rknn_set_core_mask", "rknn_matmul_set_core_mask", "rknn_set_batch_core_num"}
_MINI_RUNTIME_API = {
    "rknn_init", "rknn_destroy", "rknn_query", "rknn_run", "rknn_create_mem_from_phys",
    "rknn_create_mem_from_fd", "rknn_create_mem", "rknn_destroy_mem", "rknn_set_weight_mem",
    "rknn_set_internal_mem", "rknn_set_io_mem", "rknn_mem_sync", "rknn_create_mem2",
}
_FULL_QUERIES = frozenset(QUERY_COMMANDS) - {"RKNN_QUERY_DEVICE_MEM_INFO"}
_MINI_QUERIES = frozenset(QUERY_COMMANDS) - {
    "RKNN_QUERY_PERF_DETAIL", "RKNN_QUERY_PERF_RUN", "RKNN_QUERY_INPUT_DYNAMIC_RANGE",
    "RKNN_QUERY_CURRENT_INPUT_ATTR", "RKNN_QUERY_CURRENT_OUTPUT_ATTR",
    "RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR", "RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR",
}


@dataclass(frozen=True)
class SocProfile:
    """What npurt knows of one SoC's NPU; every field is plain data."""

    name: str
    npu_cores: int
    c2: Mapping[str, int]           # element type name ("int8", "float16", "int16") -> C2
    input_align: int                # zero-copy input width alignment, in pixels
    api: frozenset[str]             # seed table 3-1 rows marked supported
    queries: frozenset[str]         # seed table 3-2 rows marked supported
    sram_size: int = 0              # bytes of SRAM assigned to the NPU
    sram_base: int = 0              # its device-tree address
    mini_runtime: bool = False      # librknnmrt: zero-copy only
    vtcm_size: int = 0              # QNN HTP fast memory (0: not an HTP profile)
    notes: tuple[str, ...] = field(default_factory=tuple)

    def c2_for(self, dtype: str) -> int:
        """C2 for an element type name; NOT_SUPPORTED where the SoC has no such native type."""
        try:
            return self.c2[dtype]
        except KeyError:
            raise NpuError(ErrorCode.NOT_SUPPORTED,
                           f"{self.name} has no native NC1HWC2 layout for {dtype}") from None

    def supports(self, function: str) -> bool:
        """Whether seed table 3-1 marks this runtime function as supported on this SoC."""
        return function in self.api

    def supports_query(self, command: str) -> bool:
        """Whether seed table 3-2 marks this query command as supported on this SoC."""
        return command in self.queries


def _api(group: str) -> frozenset[str]:
    if group == "mini":
        return frozenset(_MINI_RUNTIME_API)
    if group == "rk2118":
        return frozenset(_MINI_RUNTIME_API - {"rknn_create_mem_from_fd"})
    full = set(API_FUNCTIONS) - _NEVER
    if group == "single":
        full -= _MULTI_CORE_ONLY
    return frozenset(full)


def _c2(int8: int | None, fp16: int | None) -> Mapping[str, int]:
    table = {}
    if int8:
        table["int8"] = table["uint8"] = int8
    if fp16:
        table["float16"] = table["int16"] = fp16
    return MappingProxyType(table)


_KIB = 1024
PROFILES: Mapping[str, SocProfile] = MappingProxyType({p.name: p for p in (
    SocProfile("rk3562", 1, _c2(16, 8), 16, _api("single"), _FULL_QUERIES),
    SocProfile("rk3566", 1, _c2(8, 4), 8, _api("single"), _FULL_QUERIES),
    SocProfile("rk3568", 1, _c2(8, 4), 8, _api("single"), _FULL_QUERIES),
    SocProfile("rk3576", 2, _c2(16, 8), 16, _api("multi"), _FULL_QUERIES,
               sram_size=480 * _KIB, sram_base=0x3FF88000),
    SocProfile("rk3588", 3, _c2(16, 8), 16, _api("multi"), _FULL_QUERIES,
               sram_size=956 * _KIB, sram_base=0xFF001000),
    SocProfile("rv1103", 1, _c2(16, 8), 16, _api("mini"), _MINI_QUERIES, mini_runtime=True),
    SocProfile("rv1106", 1, _c2(16, 8), 16, _api("mini"), _MINI_QUERIES, mini_runtime=True),
    SocProfile("rv1103b", 1, _c2(8, None), 8, _api("mini"), _MINI_QUERIES, mini_runtime=True),
    SocProfile("rv1106b", 1, _c2(8, None), 8, _api("mini"), _MINI_QUERIES, mini_runtime=True),
    SocProfile("rv1126b", 1, _c2(16, 8), 16, _api("single"), _FULL_QUERIES,
               notes=("input alignment 16: npurt's choice (not in the public alignment table)",)),
    SocProfile("rk2118", 1, _c2(None, 4), 8, _api("rk2118"), _MINI_QUERIES, mini_runtime=True,
               notes=("input alignment 8: npurt's choice (not in the public alignment table)",)),
)})


def get_profile(name: str | None = None) -> SocProfile:
    """The profile for `name` (case-insensitive): an RKNN SoC of `PROFILES` or an HTP SoC of
    `npurt.soc.htp.HTP_PROFILES` (name or arch alias, e.g. "sm8550" / "v73"); None means `$NPURT_SOC`, else rk3588.

    HTP profiles have `vtcm_size` set (the VTCM is their fast memory, also given as `sram_size`) and support none
    of the RKNN API or query rows."""
    given = name if name is not None else (os.environ.get("NPURT_SOC") or DEFAULT_SOC)    # "" names no SoC
    key = given.strip().lower()
    hit = PROFILES.get(key)
    if hit is not None:
        return hit
    from npurt.soc import htp       # htp builds on SocProfile: imported at call time
    if htp.is_htp_soc(key):
        return htp.get_htp_profile(key).soc
    source = "" if name is not None else " (from $NPURT_SOC)"
    known = ", ".join(sorted(PROFILES) + sorted(htp.HTP_PROFILES))
    raise NpuError(ErrorCode.INVALID_ARGUMENT, f"unknown SoC {given!r}{source}; known: {known}")
