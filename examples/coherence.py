"""Cache maintenance and the three coherence modes (docs/coherence.md).

On the board, cacheable memory the CPU wrote may still sit in the CPU cache when the NPU reads DDR: the app must
call rknn_mem_sync(TO_DEVICE) after writing and (FROM_DEVICE) before reading what the NPU wrote. The runtime does it
itself for memory it knows (rknn_create_mem buffers) unless the DISABLE_FLUSH flags are set; external memory is
the app's job. npurt models this per device ($NPURT_COHERENCE, fixed when the device is first opened):
- coherent: one mapping, syncs are bookkeeping (fast, forgiving, like a coherent interconnect);
- strict: cacheable buffers get a separate CPU view; a missed sync gives stale data, every time;
- check: data as coherent, but a missed sync is reported with the buffer and the call that was missing.
Run: python examples/coherence.py
"""
import os

import numpy as np

import npurt
from npurt.memory import dma_alloc
from npurt.rknn import *  # noqa: F403
from npurt.rknn.api import context_of
from _common import check, image, query, reference, small_model

model = small_model()
x = image(seed=3)
ref = reference(model, x)                        # None without onnxruntime: the synced result is the reference


def run_once(soc: str, coherence: str, sync: bool, flag: int = 0) -> np.ndarray:
    """One frame with the input in an external cacheable buffer (dma_alloc), written by the CPU."""
    os.environ["NPURT_SOC"], os.environ["NPURT_COHERENCE"] = soc, coherence
    blob = npurt.compile(model, soc=soc, precision="fp16", progress=False).to_bytes()
    ctx = rknn_context()
    check(rknn_init(ctx, blob, len(blob), flag, None), "rknn_init")
    dev = context_of(ctx).device
    ia = query(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR, rknn_tensor_attr(index=0))
    ia.type = RKNN_TENSOR_FLOAT32                          # the runtime converts float32 NHWC to its fp16
    oa = query(ctx, RKNN_QUERY_OUTPUT_ATTR, rknn_tensor_attr(index=0))
    oa.type = RKNN_TENSOR_FLOAT32
    n, h, w, c = (ia.dims[i] for i in range(4))
    dma = dma_alloc(n * h * ia.w_stride * c * 4, cacheable=True, device=dev)
    imem = rknn_create_mem_from_fd(ctx, dma.fd, dma.virt_addr, dma.size, 0)
    omem = rknn_create_mem(ctx, oa.n_elems * 4)
    check(rknn_set_io_mem(ctx, imem, ia), "set_io_mem")
    check(rknn_set_io_mem(ctx, omem, oa), "set_io_mem")
    mem_view(imem, np.float32).reshape(n, h, ia.w_stride, c)[:, :, :w] = x.transpose(0, 2, 3, 1)
    if sync:
        check(rknn_mem_sync(ctx, imem, RKNN_MEMORY_SYNC_TO_DEVICE), "rknn_mem_sync")
    check(rknn_run(ctx, None), "rknn_run")
    check(rknn_mem_sync(ctx, omem, RKNN_MEMORY_SYNC_FROM_DEVICE), "rknn_mem_sync")
    y = mem_view(omem, np.float32).copy()
    rknn_destroy_mem(ctx, imem), rknn_destroy_mem(ctx, omem)
    rknn_destroy(ctx)
    dma.close()
    return y


good = run_once("rk3588", "strict", sync=True)
stale = run_once("rk3588", "strict", sync=False)
target = ref if ref is not None else good
err_good = float(np.abs(good - np.ravel(target)).max())
err_stale = float(np.abs(stale - np.ravel(target)).max())
print(f"strict, with rknn_mem_sync(TO_DEVICE):    max error {err_good:.2e}")
print(f"strict, sync forgotten:                   max error {err_stale:.2e}  (the NPU read stale memory)")
assert err_good < 2e-3 and err_stale > 1e-2

# check mode (another SoC, so another device with its own mode): the missed sync is named on stderr (W RKNN:)
os.environ["RKNN_LOG_LEVEL"] = "2"
y = run_once("rk3566", "check", sync=False)
print(f"check, sync forgotten: the data path is coherent (max error {float(np.abs(y - np.ravel(target)).max()):.2e}),"
      f" the W RKNN line on stderr names the buffer")
print("coherence example OK")
