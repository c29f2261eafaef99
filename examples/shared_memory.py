"""Weights and internal memory supplied by the app, and shared between contexts (docs/shared-memory.md).

1. Two contexts of one model share one copy of the weights (RKNN_FLAG_SHARE_WEIGHT_MEM + rknn_init_extend.ctx).
2. Two different models that run one after the other share one internal (intermediate tensor) buffer: each is
   created with RKNN_FLAG_MEM_ALLOC_OUTSIDE, the app allocates max(total_internal_size) once and hands each model
   a wrapper of it (rknn_create_mem_from_fd), plus weight memory of its own (rknn_set_weight_mem).
   Running both at the same time would corrupt both: npurt refuses the second run instead (BUSY -> RKNN_ERR_FAIL).
Run: python examples/shared_memory.py
"""
import numpy as np

import npurt
from npurt.memory import open_device
from npurt.rknn import *  # noqa: F403
from _common import check, compare, image, query, reference, small_model

dev = open_device("rk3588")

# 1. shared weights ------------------------------------------------------------------------------------------------
model = small_model()
blob = npurt.compile(model, soc="rk3588", precision="fp16", progress=False).to_bytes()
base = dev.stats()
a = rknn_context()
check(rknn_init(a, blob, len(blob), 0, None), "rknn_init(a)")
one = dev.stats()
ext = rknn_init_extend()
ext.ctx = a.value
b = rknn_context()
check(rknn_init(b, blob, len(blob), RKNN_FLAG_SHARE_WEIGHT_MEM, ext), "rknn_init(b, SHARE_WEIGHT_MEM)")
two = dev.stats()
ms = query(a, RKNN_QUERY_MEM_SIZE, rknn_mem_size())
print(f"weights {ms.total_weight_size} B, internal {ms.total_internal_size} B per context")
print(f"device memory: first context +{one.ddr_bytes - base.ddr_bytes} B, second (shared weights) +{two.ddr_bytes - one.ddr_bytes} B")
assert two.ddr_bytes - one.ddr_bytes < one.ddr_bytes - base.ddr_bytes
rknn_destroy(b)
rknn_destroy(a)

# 2. one internal buffer for two models, weights supplied by the app -----------------------------------------------
models = [small_model(seed=0), small_model(seed=1)]
ctxs, sizes = [], []
for m in models:
    data = npurt.compile(m, soc="rk3588", precision="fp16", progress=False).to_bytes()
    c = rknn_context()
    check(rknn_init(c, data, len(data), RKNN_FLAG_MEM_ALLOC_OUTSIDE, None), "rknn_init(MEM_ALLOC_OUTSIDE)")
    ctxs.append(c)
    sizes.append(query(c, RKNN_QUERY_MEM_SIZE, rknn_mem_size()))
big = rknn_create_mem(ctxs[0], max(s.total_internal_size for s in sizes))
print(f"internal sizes {[s.total_internal_size for s in sizes]} -> one shared buffer of {big.size} B at fd {big.fd}")
mems = []
for c, s in zip(ctxs, sizes):
    internal = rknn_create_mem_from_fd(c, big.fd, big.virt_addr, s.total_internal_size, 0)
    weights = rknn_create_mem(c, s.total_weight_size)
    check(rknn_set_internal_mem(c, internal), "rknn_set_internal_mem")
    check(rknn_set_weight_mem(c, weights), "rknn_set_weight_mem")
    ia = query(c, RKNN_QUERY_INPUT_ATTR, rknn_tensor_attr(index=0))
    ia.type, ia.fmt = RKNN_TENSOR_FLOAT32, RKNN_TENSOR_NHWC
    oa = query(c, RKNN_QUERY_OUTPUT_ATTR, rknn_tensor_attr(index=0))
    oa.type = RKNN_TENSOR_FLOAT32
    imem, omem = rknn_create_mem(c, ia.n_elems * 4), rknn_create_mem(c, oa.n_elems * 4)
    check(rknn_set_io_mem(c, imem, ia), "set_io_mem")
    check(rknn_set_io_mem(c, omem, oa), "set_io_mem")
    mems.append((internal, weights, imem, omem))
x = image(seed=4)
for k in (0, 1, 0, 1):                                   # one after the other: fine
    c, (_, _, imem, omem) = ctxs[k], mems[k]
    mem_view(imem, np.float32)[:] = x.transpose(0, 2, 3, 1).reshape(-1)
    check(rknn_run(c, None), "rknn_run")
    compare(f"model {k} on the shared internal buffer", mem_view(omem, np.float32).copy(),
            reference(models[k], x), atol=2e-3)
check(rknn_destroy_mem(ctxs[0], big), "rknn_destroy_mem(big)")
for c, ms_ in zip(ctxs, mems):
    for m in ms_:
        rknn_destroy_mem(c, m)
    rknn_destroy(c)
dev.close()
print("shared_memory example OK")
