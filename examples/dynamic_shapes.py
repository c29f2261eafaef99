"""Dynamic shapes: one model, several input shapes, chosen per frame with rknn_set_input_shapes (docs/dynamic-shapes.md).

The ONNX model has symbolic H and W; the shapes it must accept are listed in its metadata
(`npurt.dynamic_input`, a JSON list of shape sets — the toolkit's `dynamic_input` option). RKNN_QUERY_INPUT_DYNAMIC_RANGE
lists them, rknn_set_input_shapes picks one, CURRENT_INPUT_ATTR / CURRENT_OUTPUT_ATTR describe it. Zero-copy buffers
are allocated once for the largest shape and re-bound after each change.
Run: python examples/dynamic_shapes.py
"""
import json

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import npurt  # noqa: F401
from npurt.rknn import *  # noqa: F403
from _common import check, compare, query, reference

SHAPES = [[[1, 3, 16, 16]], [[1, 3, 8, 8]], [[1, 3, 12, 10]]]     # one list of input shapes per shape set
rng = np.random.default_rng(0)
W1, B1 = rng.normal(0, 0.3, (8, 3, 3, 3)).astype(np.float32), rng.normal(0, 0.1, 8).astype(np.float32)
W2 = rng.normal(0, 0.3, (4, 8, 1, 1)).astype(np.float32)
graph = helper.make_graph(
    [helper.make_node("Conv", ["x", "W1", "B1"], ["c1"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c1"], ["r1"]),
     helper.make_node("Conv", ["r1", "W2"], ["y"])], "dynamic",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "H", "W"])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, "H", "W"])],
    [numpy_helper.from_array(v, k) for k, v in {"W1": W1, "B1": B1, "W2": W2}.items()])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
helper.set_model_props(model, {"npurt.dynamic_input": json.dumps(SHAPES)})
blob = model.SerializeToString()                 # rknn_init compiles ONNX on the fly (fp16)

ctx = rknn_context()
check(rknn_init(ctx, blob, len(blob), 0, None), "rknn_init")
rng_ = query(ctx, RKNN_QUERY_INPUT_DYNAMIC_RANGE, rknn_input_range(index=0))
print("shapes the model accepts:",
      [[rng_.dyn_range[s][j] for j in range(rng_.n_dims)] for s in range(rng_.shape_number)],
      get_format_string(rng_.fmt))
ia0 = query(ctx, RKNN_QUERY_INPUT_ATTR, rknn_tensor_attr(index=0))
oa0 = query(ctx, RKNN_QUERY_OUTPUT_ATTR, rknn_tensor_attr(index=0))
imem = rknn_create_mem(ctx, ia0.n_elems * 4)               # the largest shape, float32
omem = rknn_create_mem(ctx, oa0.n_elems * 4)
for shape in ([1, 8, 8, 3], [1, 12, 10, 3], [1, 16, 16, 3]):
    a = rknn_tensor_attr(index=0, n_dims=4, fmt=RKNN_TENSOR_NHWC)
    for j, d in enumerate(shape):
        a.dims[j] = d
    check(rknn_set_input_shapes(ctx, 1, [a]), "rknn_set_input_shapes")
    cur_in = query(ctx, RKNN_QUERY_CURRENT_INPUT_ATTR, rknn_tensor_attr(index=0))
    cur_in.type = RKNN_TENSOR_FLOAT32
    cur_out = query(ctx, RKNN_QUERY_CURRENT_OUTPUT_ATTR, rknn_tensor_attr(index=0))
    cur_out.type, cur_out.fmt = RKNN_TENSOR_FLOAT32, RKNN_TENSOR_NCHW
    check(rknn_set_io_mem(ctx, imem, cur_in), "set_io_mem")
    check(rknn_set_io_mem(ctx, omem, cur_out), "set_io_mem")
    n, h, w, c = shape
    x = np.random.default_rng(h).random((n, c, h, w), dtype=np.float32)
    rows = mem_view(imem, np.float32, count=n * h * cur_in.w_stride * c).reshape(n, h, cur_in.w_stride, c)
    rows[:, :, :w, :] = x.transpose(0, 2, 3, 1)
    check(rknn_run(ctx, None), "rknn_run")
    out_dims = [cur_out.dims[i] for i in range(cur_out.n_dims)]
    y = mem_view(omem, np.float32, count=cur_out.n_elems).reshape(out_dims)
    compare(f"input NHWC {shape} -> output {out_dims}", y, reference(model, x), atol=5e-3)
rknn_destroy_mem(ctx, imem)
rknn_destroy_mem(ctx, omem)
rknn_destroy(ctx)
print("dynamic_shapes example OK")
