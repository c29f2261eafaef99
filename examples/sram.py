"""NPU SRAM on the RK3588 (docs/sram.md).

RKNN_FLAG_ENABLE_SRAM puts as much of a context's internal memory as fits into the SRAM the SoC gives the NPU
(956 KiB on the RK3588), the rest in DDR, one contiguous mapping. SRAM held by one context is not shared; what is
left goes to the next context. The driver's debugfs bitmap (/sys/kernel/debug/rknpu/mm) shows the pages, and
RKNN_QUERY_MEM_SIZE reports total_sram_size / free_sram_size. Tensors in SRAM cost no DDR traffic: the memory
table's SramHit column and "Predict SRAM Hit RW Amount" say how much per frame (also `npurt report`).
Run: python examples/sram.py
"""

import npurt
from npurt.memory import open_device
from npurt.rknn import *  # noqa: F403
from _common import check, compare, image, query, reference, small_model

dev = open_device("rk3588")
print("before:\n" + dev.sram_dump())

model = small_model()
blob = npurt.compile(model, soc="rk3588", precision="fp16", progress=False).to_bytes()
ctxs = []
free = dev.stats().sram_free
for k in range(2):
    ctx = rknn_context()
    check(rknn_init(ctx, blob, len(blob), RKNN_FLAG_ENABLE_SRAM, None), "rknn_init(ENABLE_SRAM)")
    ctxs.append(ctx)
    ms = query(ctx, RKNN_QUERY_MEM_SIZE, rknn_mem_size())
    print(f"context {k}: internal {ms.total_internal_size} B, of which {free - ms.free_sram_size} B in SRAM; "
          f"total_sram_size {ms.total_sram_size}, free_sram_size {ms.free_sram_size}")
    free = ms.free_sram_size
print("while both are alive:\n" + dev.sram_dump())

# the model runs the same with its activations in SRAM
x = image(seed=5)
inputs = (rknn_input * 1)()
inputs[0].index, inputs[0].type, inputs[0].fmt = 0, RKNN_TENSOR_FLOAT32, RKNN_TENSOR_NCHW
inputs[0].buf, inputs[0].size = x.ctypes.data, x.nbytes
outputs = (rknn_output * 1)()
outputs[0].want_float = 1
check(rknn_inputs_set(ctxs[1], 1, inputs), "rknn_inputs_set")
check(rknn_run(ctxs[1], None), "rknn_run")
check(rknn_outputs_get(ctxs[1], 1, outputs, None), "rknn_outputs_get")
compare("output with internal memory in SRAM", output_view(outputs[0]).copy(), reference(model, x), atol=2e-3)
rknn_outputs_release(ctxs[1], 1, outputs)
for ctx in ctxs:
    rknn_destroy(ctx)
after = dev.sram_dump()
print("after rknn_destroy:\n" + after)
assert "used: 0," in after
dev.close()
print("sram example OK")
