/* The ABI as this compiler lays out npurt's headers: "struct size" and "struct.field offset" lines for every
 * struct of rknn_api.h, rknn_matmul_api.h and rknn_custom_op.h, compared by test_capi_abi.py with the ctypes
 * structs of the mirror and the vendor's sizes. */
#include <stddef.h>
#include <stdio.h>
#include "rknn_api.h"
#include "rknn_custom_op.h"
#include "rknn_matmul_api.h"

#define S(T) printf("%s %zu\n", #T, sizeof(T))
#define F(T, f) printf("%s.%s %zu\n", #T, #f, offsetof(T, f))

int main(void)
{
    S(rknn_context); S(rknn_matmul_ctx); S(rknn_custom_op_interal_context);
    S(rknn_query_cmd); S(rknn_tensor_type); S(rknn_tensor_format); S(rknn_core_mask); S(rknn_matmul_type);
    S(rknn_input_output_num); F(rknn_input_output_num, n_input); F(rknn_input_output_num, n_output);
    S(rknn_tensor_attr); F(rknn_tensor_attr, index); F(rknn_tensor_attr, n_dims); F(rknn_tensor_attr, dims);
    F(rknn_tensor_attr, name); F(rknn_tensor_attr, n_elems); F(rknn_tensor_attr, size); F(rknn_tensor_attr, fmt);
    F(rknn_tensor_attr, type); F(rknn_tensor_attr, qnt_type); F(rknn_tensor_attr, fl); F(rknn_tensor_attr, zp);
    F(rknn_tensor_attr, scale); F(rknn_tensor_attr, w_stride); F(rknn_tensor_attr, size_with_stride);
    F(rknn_tensor_attr, pass_through); F(rknn_tensor_attr, h_stride);
    S(rknn_input_range); F(rknn_input_range, index); F(rknn_input_range, shape_number); F(rknn_input_range, fmt);
    F(rknn_input_range, name); F(rknn_input_range, dyn_range); F(rknn_input_range, n_dims);
    S(rknn_perf_detail); F(rknn_perf_detail, perf_data); F(rknn_perf_detail, data_len);
    S(rknn_perf_run); F(rknn_perf_run, run_duration);
    S(rknn_sdk_version); F(rknn_sdk_version, api_version); F(rknn_sdk_version, drv_version);
    S(rknn_mem_size); F(rknn_mem_size, total_weight_size); F(rknn_mem_size, total_internal_size);
    F(rknn_mem_size, total_dma_allocated_size); F(rknn_mem_size, total_sram_size); F(rknn_mem_size, free_sram_size);
    F(rknn_mem_size, reserved);
    S(rknn_custom_string); F(rknn_custom_string, string);
    S(rknn_tensor_mem); F(rknn_tensor_mem, virt_addr); F(rknn_tensor_mem, phys_addr); F(rknn_tensor_mem, fd);
    F(rknn_tensor_mem, offset); F(rknn_tensor_mem, size); F(rknn_tensor_mem, flags); F(rknn_tensor_mem, priv_data);
    S(rknn_input); F(rknn_input, index); F(rknn_input, buf); F(rknn_input, size); F(rknn_input, pass_through);
    F(rknn_input, type); F(rknn_input, fmt);
    S(rknn_output); F(rknn_output, want_float); F(rknn_output, is_prealloc); F(rknn_output, index);
    F(rknn_output, buf); F(rknn_output, size);
    S(rknn_init_extend); F(rknn_init_extend, ctx); F(rknn_init_extend, real_model_offset);
    F(rknn_init_extend, real_model_size); F(rknn_init_extend, model_buffer_fd);
    F(rknn_init_extend, model_buffer_flags); F(rknn_init_extend, reserved);
    S(rknn_run_extend); F(rknn_run_extend, frame_id); F(rknn_run_extend, non_block); F(rknn_run_extend, timeout_ms);
    F(rknn_run_extend, fence_fd);
    S(rknn_output_extend); F(rknn_output_extend, frame_id);
    S(rknn_quant_params); F(rknn_quant_params, name); F(rknn_quant_params, scale); F(rknn_quant_params, scale_len);
    F(rknn_quant_params, zp); F(rknn_quant_params, zp_len);
    S(rknn_matmul_tensor_attr); F(rknn_matmul_tensor_attr, name); F(rknn_matmul_tensor_attr, n_dims);
    F(rknn_matmul_tensor_attr, dims); F(rknn_matmul_tensor_attr, size); F(rknn_matmul_tensor_attr, type);
    S(rknn_matmul_io_attr); F(rknn_matmul_io_attr, A); F(rknn_matmul_io_attr, B); F(rknn_matmul_io_attr, C);
    S(rknn_matmul_shape); F(rknn_matmul_shape, M); F(rknn_matmul_shape, K); F(rknn_matmul_shape, N);
    S(rknn_matmul_info); F(rknn_matmul_info, M); F(rknn_matmul_info, K); F(rknn_matmul_info, N);
    F(rknn_matmul_info, type); F(rknn_matmul_info, B_layout); F(rknn_matmul_info, B_quant_type);
    F(rknn_matmul_info, AC_layout); F(rknn_matmul_info, AC_quant_type); F(rknn_matmul_info, iommu_domain_id);
    F(rknn_matmul_info, group_size); F(rknn_matmul_info, reserved);
    S(rknn_gpu_op_context); F(rknn_gpu_op_context, cl_context); F(rknn_gpu_op_context, cl_command_queue);
    F(rknn_gpu_op_context, cl_kernel);
    S(rknn_custom_op_context); F(rknn_custom_op_context, target); F(rknn_custom_op_context, internal_ctx);
    F(rknn_custom_op_context, gpu_ctx); F(rknn_custom_op_context, priv_data);
    S(rknn_custom_op_tensor); F(rknn_custom_op_tensor, attr); F(rknn_custom_op_tensor, mem);
    S(rknn_custom_op_attr); F(rknn_custom_op_attr, name); F(rknn_custom_op_attr, dtype);
    F(rknn_custom_op_attr, n_elems); F(rknn_custom_op_attr, data);
    S(rknn_custom_op); F(rknn_custom_op, version); F(rknn_custom_op, target); F(rknn_custom_op, op_type);
    F(rknn_custom_op, cl_kernel_name); F(rknn_custom_op, cl_kernel_source); F(rknn_custom_op, cl_source_size);
    F(rknn_custom_op, cl_build_options); F(rknn_custom_op, init); F(rknn_custom_op, prepare);
    F(rknn_custom_op, compute); F(rknn_custom_op, compute_native); F(rknn_custom_op, destroy);
    return 0;
}
