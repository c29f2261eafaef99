"""External buffers: memory the app (or another process) allocated, wrapped by fd or by physical address
(docs/external-buffers.md).

1. dma_alloc stands in for the board's allocators (dma-buf heaps, MMZ, ION): it returns fd, virt_addr, phys_addr.
2. The input is wrapped with rknn_create_mem_from_fd, the output with rknn_create_mem_from_phys.
3. A second process receives the input buffer's fd over a Unix socket (SCM_RIGHTS), maps it and writes the frame;
   this process runs the model on it without copying. The wrappers are freed with rknn_destroy_mem; the memory
   stays the app's until it closes it.
Run: python examples/external_buffers.py
"""
import os
import socket
import subprocess
import sys
import tempfile
import textwrap

import numpy as np

import npurt
from npurt.memory import dma_alloc, send_buffer
from npurt.rknn import *  # noqa: F403
from npurt.rknn.api import context_of
from _common import check, compare, image, query, reference, small_model

PRODUCER = textwrap.dedent("""
    import socket, sys
    import numpy as np
    from npurt.memory import recv_buffer
    sock = socket.socket(fileno=int(sys.argv[1]))
    frame = np.load(sys.argv[2])                       # (1, 32, 32, 3) float16, the native NHWC input
    view = recv_buffer(sock, np.float16)               # the same memory, mapped in this process
    view[:frame.size] = frame.reshape(-1)
    sock.sendall(b"frame written")
""")

model = small_model()
compiled = npurt.compile(model, soc="rk3588", precision="fp16", progress=False)
blob = compiled.to_bytes()
ctx = rknn_context()
check(rknn_init(ctx, blob, len(blob), 0, None), "rknn_init")
device = context_of(ctx).device
ia = query(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR, rknn_tensor_attr(index=0))
oa = query(ctx, RKNN_QUERY_OUTPUT_ATTR, rknn_tensor_attr(index=0))
oa.type = RKNN_TENSOR_FLOAT32                                   # the runtime converts the output to float32
in_dma = dma_alloc(ia.size_with_stride, device=device)
out_dma = dma_alloc(oa.n_elems * 4, device=device)
print(f"input  buffer: fd {in_dma.fd}, phys {in_dma.phys_addr:#x}, {in_dma.size} bytes")
print(f"output buffer: fd {out_dma.fd}, phys {out_dma.phys_addr:#x}, {out_dma.size} bytes")
imem = rknn_create_mem_from_fd(ctx, in_dma.fd, in_dma.virt_addr, in_dma.size, 0)
omem = rknn_create_mem_from_phys(ctx, out_dma.phys_addr, out_dma.virt_addr, out_dma.size)
check(rknn_set_io_mem(ctx, imem, ia), "rknn_set_io_mem(input)")
check(rknn_set_io_mem(ctx, omem, oa), "rknn_set_io_mem(output)")

# another process writes the frame into the input buffer through its fd
x = image(seed=2)
frame = x.transpose(0, 2, 3, 1).astype(np.float16)

tmp = tempfile.NamedTemporaryFile(suffix=".npy", delete=False)
np.save(tmp.name, frame)
parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
proc = subprocess.Popen([sys.executable, "-c", PRODUCER, str(child.fileno()), tmp.name], pass_fds=[child.fileno()])
child.close()
send_buffer(parent, in_dma.buffer)
assert parent.recv(32) == b"frame written"
proc.wait(30)
os.unlink(tmp.name)
print(f"process {proc.pid} wrote the frame through the fd (exit status {proc.returncode})")

check(rknn_mem_sync(ctx, imem, RKNN_MEMORY_SYNC_TO_DEVICE), "rknn_mem_sync")   # CPU wrote: flush for the NPU
check(rknn_run(ctx, None), "rknn_run")
check(rknn_mem_sync(ctx, omem, RKNN_MEMORY_SYNC_FROM_DEVICE), "rknn_mem_sync")
y = out_dma.view(np.float32)[:oa.n_elems].copy()
compare("output read from the app's own buffer", y, reference(model, x), atol=2e-3)

check(rknn_destroy_mem(ctx, imem), "rknn_destroy_mem")    # frees the wrapper only
check(rknn_destroy_mem(ctx, omem), "rknn_destroy_mem")
rknn_destroy(ctx)
print(f"after rknn_destroy the app's buffers are still valid: input[0] = {float(in_dma.view(np.float16)[0]):.4f}")
in_dma.close()
out_dma.close()
print("external_buffers example OK")
