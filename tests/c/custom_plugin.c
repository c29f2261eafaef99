/* librkcst_sigmoid.so: the cstSigmoid op as a plugin the runtime finds in $NPURT_RKNN_OP_PLUGIN_DIR. */
#include "custom_sigmoid.h"

static rknn_custom_op plugin_op;

RKNN_CUSTOM_OP_EXPORT rknn_custom_op *get_rknn_custom_op(void)
{
    sigmoid_fill(&plugin_op);
    return &plugin_op;
}
