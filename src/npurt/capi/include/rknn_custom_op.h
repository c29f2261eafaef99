/* rknn_custom_op.h: npurt's header for RKNN custom operators (C callbacks run by the runtime for an op type).
 *
 * Written for npurt from the public description of the API; layouts match the vendor's on x86-64 and aarch64.
 * A plugin is a shared library named librkcst_<anything>.so exporting `get_rknn_custom_op` (see
 * RKNN_CUSTOM_OP_EXPORT); npurt loads plugins from the folder named by $NPURT_RKNN_OP_PLUGIN_DIR.
 */
#ifndef NPURT_RKNN_CUSTOM_OP_H
#define NPURT_RKNN_CUSTOM_OP_H

#include "rknn_api.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE -14   /* from init: use the runtime's own implementation */
#define RKNN_CUSTOM_OP_MAX_STR_LEN 64
#define RKNN_CUSTOM_OP_MAX_VALUE_LEN 32
#define RKNN_CUSTOM_OP_EXPORT __attribute__((visibility("default")))

#ifdef __arm__
typedef uint32_t rknn_custom_op_interal_context;  /* sic: the API's spelling */
#else
typedef uint64_t rknn_custom_op_interal_context;
#endif

typedef enum _rknn_target_type {
    RKNN_TARGET_TYPE_CPU = 1,
    RKNN_TARGET_TYPE_GPU = 2,
    RKNN_TARGET_TYPE_MAX
} rknn_target_type;

typedef struct _rknn_gpu_op_context {
    void *cl_context;
    void *cl_command_queue;
    void *cl_kernel;
} rknn_gpu_op_context;

typedef struct _rknn_custom_op_context {
    rknn_target_type target;
    rknn_custom_op_interal_context internal_ctx;
    rknn_gpu_op_context gpu_ctx;
    void *priv_data;                      /* the op's own */
} rknn_custom_op_context;

typedef struct _rknn_custom_op_tensor {
    rknn_tensor_attr attr;
    rknn_tensor_mem mem;                  /* device memory: data at mem.virt_addr + mem.offset */
} rknn_custom_op_tensor;

typedef struct _rknn_custom_op_attr {
    char name[RKNN_MAX_NAME_LEN];
    rknn_tensor_type dtype;
    uint32_t n_elems;
    void *data;
} rknn_custom_op_attr;

typedef struct _rknn_custom_op {
    uint32_t version;
    rknn_target_type target;
    char op_type[RKNN_MAX_NAME_LEN];
    char cl_kernel_name[RKNN_MAX_NAME_LEN];
    char *cl_kernel_source;
    uint64_t cl_source_size;
    char cl_build_options[RKNN_MAX_NAME_LEN];
    int (*init)(rknn_custom_op_context *op_ctx, rknn_custom_op_tensor *inputs, uint32_t n_inputs,
                rknn_custom_op_tensor *outputs, uint32_t n_outputs);
    int (*prepare)(rknn_custom_op_context *op_ctx, rknn_custom_op_tensor *inputs, uint32_t n_inputs,
                   rknn_custom_op_tensor *outputs, uint32_t n_outputs);
    int (*compute)(rknn_custom_op_context *op_ctx, rknn_custom_op_tensor *inputs, uint32_t n_inputs,
                   rknn_custom_op_tensor *outputs, uint32_t n_outputs);
    int (*compute_native)(rknn_custom_op_context *op_ctx, rknn_custom_op_tensor *inputs, uint32_t n_inputs,
                          rknn_custom_op_tensor *outputs, uint32_t n_outputs);
    int (*destroy)(rknn_custom_op_context *op_ctx);
} rknn_custom_op;

typedef rknn_custom_op *(*get_custom_op_func)(void);

int rknn_register_custom_ops(rknn_context ctx, rknn_custom_op *op, uint32_t custom_op_num);
void rknn_custom_op_get_op_attr(rknn_custom_op_context *op_ctx, const char *attr_name, rknn_custom_op_attr *op_attr);

#ifdef __cplusplus
}
#endif

#endif /* NPURT_RKNN_CUSTOM_OP_H */
