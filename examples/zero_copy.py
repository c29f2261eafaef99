"""General API vs zero copy on the RKNN C-API mirror (docs/zero-copy.md).

General: the app hands float32 NCHW arrays to rknn_inputs_set and gets float32 copies from rknn_outputs_get; the
runtime converts, quantises and copies on every frame. Zero copy: the app allocates the input and output in the
native format (rknn_create_mem), binds them (rknn_set_io_mem), writes each frame straight into the input buffer and
reads the output where the NPU wrote it. The executor's tensors ARE those buffers (same addresses).
Run: python examples/zero_copy.py
"""
import time

import numpy as np

import npurt
from npurt.rknn import *  # noqa: F403  (the C names, as in rknn_api.h)
from npurt.rknn.api import context_of
from _common import check, compare, image, query, reference, small_model

model = small_model()
compiled = npurt.compile(model, soc="rk3588", precision="fp16", progress=False)
blob = compiled.to_bytes()
x = image(seed=1)
ref = reference(model, x)

# --- general API -----------------------------------------------------------------------------------------------
ctx = rknn_context()
check(rknn_init(ctx, blob, len(blob), 0, None), "rknn_init")
inputs = (rknn_input * 1)()
inputs[0].index, inputs[0].type, inputs[0].fmt = 0, RKNN_TENSOR_FLOAT32, RKNN_TENSOR_NCHW
inputs[0].buf, inputs[0].size = x.ctypes.data, x.nbytes
outputs = (rknn_output * 1)()
outputs[0].want_float = 1
t = time.perf_counter()
for _ in range(10):
    check(rknn_inputs_set(ctx, 1, inputs), "rknn_inputs_set")
    check(rknn_run(ctx, None), "rknn_run")
    check(rknn_outputs_get(ctx, 1, outputs, None), "rknn_outputs_get")
    y_general = output_view(outputs[0]).copy()
    check(rknn_outputs_release(ctx, 1, outputs), "rknn_outputs_release")
t_general = (time.perf_counter() - t) / 10
compare("general API", y_general, ref, atol=2e-3)
rknn_destroy(ctx)

# --- zero copy, native formats ---------------------------------------------------------------------------------
ctx = rknn_context()
check(rknn_init(ctx, blob, len(blob), 0, None), "rknn_init")
ia = query(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR, rknn_tensor_attr(index=0))
oa = query(ctx, RKNN_QUERY_NATIVE_OUTPUT_ATTR, rknn_tensor_attr(index=0))
print(f"native input: {get_format_string(ia.fmt)} {get_type_string(ia.type)} dims "
      f"{[ia.dims[i] for i in range(ia.n_dims)]} w_stride {ia.w_stride}, {ia.size_with_stride} bytes")
print(f"native output: {get_format_string(oa.fmt)} {get_type_string(oa.type)} dims "
      f"{[oa.dims[i] for i in range(oa.n_dims)]}")
imem = rknn_create_mem(ctx, ia.size_with_stride)
omem = rknn_create_mem(ctx, oa.size_with_stride)
check(rknn_set_io_mem(ctx, imem, ia), "rknn_set_io_mem(input)")
check(rknn_set_io_mem(ctx, omem, oa), "rknn_set_io_mem(output)")
n, h, w, c = (ia.dims[i] for i in range(4))
rows = mem_view(imem, np.float16).reshape(n, h, ia.w_stride, c)     # the input buffer, as C sees virt_addr
out = mem_view(omem, np.float16, count=oa.n_elems)
t = time.perf_counter()
for _ in range(10):
    rows[:, :, :w, :] = x.transpose(0, 2, 3, 1)                       # the app's only copy: its frame, once
    check(rknn_run(ctx, None), "rknn_run")
    y_zero_copy = out.astype(np.float32)                               # read where the NPU wrote
t_zero_copy = (time.perf_counter() - t) / 10
compare("zero copy", y_zero_copy, ref, atol=2e-3)
ex = context_of(ctx).executor
same_in = ex.tensor_view(compiled.graph.inputs[0]).__array_interface__["data"][0] == imem.virt_addr
same_out = ex.tensor_view(compiled.graph.outputs[0]).__array_interface__["data"][0] == omem.virt_addr
print(f"executor reads the input buffer itself: {same_in}; writes the output buffer itself: {same_out}")
assert same_in and same_out
print(f"per frame: general {t_general * 1e3:.2f} ms, zero copy {t_zero_copy * 1e3:.2f} ms")
rknn_destroy_mem(ctx, imem)
rknn_destroy_mem(ctx, omem)
rknn_destroy(ctx)
print("zero_copy example OK")
