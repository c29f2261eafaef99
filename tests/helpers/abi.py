"""The vendor's RKNN struct sizes, the one table both ABI tests check: the mirror's ctypes structs
(test_rknn_abi.py) and the C face's headers as the system compiler lays them out (test_capi_abi.py)."""
from __future__ import annotations

# sizeof on x86-64 / aarch64 (LP64; the public SDK V2.3.2 headers `rknn_api.h`, `rknn_matmul_api.h`,
# `rknn_custom_op.h`).
RKNN_SIZES: dict[str, int] = {
    "rknn_context": 8, "rknn_input_output_num": 8, "rknn_tensor_attr": 376, "rknn_tensor_mem": 40, "rknn_input": 32,
    "rknn_output": 24, "rknn_mem_size": 64, "rknn_init_extend": 136, "rknn_run_extend": 24,
    "rknn_output_extend": 8, "rknn_input_range": 33040, "rknn_sdk_version": 512, "rknn_custom_string": 1024,
    "rknn_perf_detail": 16, "rknn_perf_run": 8,
    "rknn_quant_params": 288, "rknn_matmul_tensor_attr": 332, "rknn_matmul_io_attr": 996,
    "rknn_matmul_shape": 12, "rknn_matmul_info": 64,
    "rknn_gpu_op_context": 24, "rknn_custom_op_context": 48, "rknn_custom_op_tensor": 416,
    "rknn_custom_op_attr": 272, "rknn_custom_op": 832,
}
