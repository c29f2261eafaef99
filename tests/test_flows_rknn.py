"""Conformance flows: the seeds' RKNN sample code and the vendor demos' memory flows (rknpu2 examples), ported line by
line to the mirror (`from npurt.rknn import *`), each step commented with the section it comes from.

Seeds (chapters of the vendor's RKNN SDK guide): memory ownership and zero copy §3.5 (figure 3-1 general flow,
figure 3-2 zero-copy flow), tensor memory API §5.4 (rknn_create_mem_from_phys / _from_fd / rknn_create_mem / rknn_create_mem2 /
rknn_destroy_mem / rknn_set_io_mem / rknn_mem_sync samples), runtime lifecycle §3.1.5
(release order, general and zero-copy). The rknpu2 demos: 4.1 create_mem demo, 4.2 with RGA,
4.3 everything from fds, 4.4 MMZ physical addresses, 4.5 internal-memory reuse, 4.6 dynamic shapes with all
memory outside, 4.10 model-buffer zero copy.

Every flow's outputs are checked against onnxruntime and against the general API path of the mirror on the same
input; every flow must leave the contexts, mems, device buffers and fds as it found them. The runtime
developer's tests (test_rknn_api_run.py) cover the demos' rules and error cases; here the samples appear as
written, preamble and clean-up included.
"""
from __future__ import annotations

import ctypes
import mmap

import numpy as np
import pytest

from npurt.memory import dma_alloc
from npurt.rknn import *  # noqa: F403
from npurt.rknn.api import context_of
from helpers.flows import ATOL, classifier_model, classifier_onnx, frame, general_path, onnx_ref, uint8_model
from helpers.models import convnet, convnet_other, dynamic_convnet, reference

pytestmark = pytest.mark.usefixtures("no_leaks")   # every fd, device buffer, byte and handle given back


# --- the demos' boilerplate ------------------------------------------------------------------------------------------
def query(ctx, cmd, info) -> int:
    return rknn_query(ctx, cmd, info, ctypes.sizeof(info))


def preamble(ctx):
    """The demos' common preamble (§4): SDK version, IN_OUT_NUM, per-index INPUT_ATTR / OUTPUT_ATTR (zeroed,
    .index set), CUSTOM_STRING."""
    version = rknn_sdk_version()
    assert query(ctx, RKNN_QUERY_SDK_VERSION, version) == RKNN_SUCC
    assert version.api_version and version.drv_version
    io_num = rknn_input_output_num()
    assert query(ctx, RKNN_QUERY_IN_OUT_NUM, io_num) == RKNN_SUCC
    input_attrs = [rknn_tensor_attr() for _ in range(io_num.n_input)]
    for i, a in enumerate(input_attrs):
        a.index = i
        assert query(ctx, RKNN_QUERY_INPUT_ATTR, a) == RKNN_SUCC
    output_attrs = [rknn_tensor_attr() for _ in range(io_num.n_output)]
    for i, a in enumerate(output_attrs):
        a.index = i
        assert query(ctx, RKNN_QUERY_OUTPUT_ATTR, a) == RKNN_SUCC
    custom = rknn_custom_string()
    assert query(ctx, RKNN_QUERY_CUSTOM_STRING, custom) == RKNN_SUCC
    return io_num, input_attrs, output_attrs


def copy_image(dst: np.ndarray, img: np.ndarray, w_stride: int) -> None:
    """The demos' input copy (§4.1 step 3): one memcpy when W == w_stride, else H rows with source pitch W*C and
    destination pitch w_stride*C. `dst` is the uint8 view at virt_addr."""
    h, w, c = img.shape
    if w == w_stride:
        dst[:h * w * c] = img.reshape(-1)
        return
    for row in range(h):
        dst[row * w_stride * c:row * w_stride * c + w * c] = img[row].reshape(-1)


def check(y: np.ndarray, onnx_bytes: bytes, model: bytes, img: np.ndarray) -> None:
    ref = onnx_ref(onnx_bytes, img)
    np.testing.assert_allclose(y.reshape(ref.shape), ref, atol=ATOL)
    np.testing.assert_array_equal(y.reshape(-1), general_path(model, img)[0].reshape(-1))


# --- seed: rknn-memory-ownership-and-zero-copy.txt §3.5, figure 3-1 -------------------------------------------------
def test_fig_3_1_general_api_flow():
    model, img = uint8_model(), frame(seed=1)
    ctx = rknn_context()
    # 1. Call rknn_init() to initialize the model
    assert rknn_init(ctx, model, len(model), 0, None) == RKNN_SUCC
    # 2. Call rknn_query() to query the input/output attributes of the model
    io_num, input_attrs, output_attrs = preamble(ctx)
    assert (io_num.n_input, io_num.n_output) == (1, 1)
    # 3. Preprocess the input (here: none, the uint8 image is what the model takes)
    # 4. Call rknn_inputs_set() to set the input data
    inputs = (rknn_input * io_num.n_input)()
    inputs[0].index, inputs[0].type, inputs[0].fmt = 0, RKNN_TENSOR_UINT8, RKNN_TENSOR_NHWC
    inputs[0].buf, inputs[0].size = img.ctypes.data, img.nbytes
    assert rknn_inputs_set(ctx, io_num.n_input, inputs) == RKNN_SUCC
    # 5. Call rknn_run() to perform model inference
    assert rknn_run(ctx, None) == RKNN_SUCC
    # 6. Call rknn_outputs_get() to get the inference result data
    outputs = (rknn_output * io_num.n_output)()
    outputs[0].index, outputs[0].want_float = 0, 1
    assert rknn_outputs_get(ctx, io_num.n_output, outputs, None) == RKNN_SUCC
    # 7. Postprocess the output
    y = output_view(outputs[0])
    assert outputs[0].size == output_attrs[0].n_elems * 4
    np.testing.assert_allclose(y.reshape(1, 4, 8, 10), onnx_ref(convnet(), img), atol=ATOL)
    # 8./9. release order (lifecycle seed §3.1.5, general API): rknn_outputs_release, then rknn_destroy
    assert rknn_outputs_release(ctx, io_num.n_output, outputs) == RKNN_SUCC
    assert rknn_destroy(ctx) == RKNN_SUCC


# --- seeds: figure 3-2 and the rknn_set_io_mem sample (tensor-memory-api §5.4) --------------------------------------
def test_fig_3_2_zero_copy_flow_as_the_set_io_mem_sample():
    model, img = classifier_model(), frame(24, 24, seed=2)
    ctx = rknn_context()
    # 1. rknn_init
    assert rknn_init(ctx, model, len(model), 0, None) == RKNN_SUCC
    io_num = rknn_input_output_num()
    query(ctx, RKNN_QUERY_IN_OUT_NUM, io_num)
    # 2. query the NATIVE input/output attributes (sample: memset, index = 0, RKNN_QUERY_NATIVE_INPUT_ATTR)
    input_attrs, output_attrs = (rknn_tensor_attr * 1)(), (rknn_tensor_attr * 1)()
    ctypes.memset(input_attrs, 0, ctypes.sizeof(input_attrs))
    input_attrs[0].index = 0
    assert query(ctx, RKNN_QUERY_NATIVE_INPUT_ATTR, input_attrs[0]) == RKNN_SUCC
    # "if uint8 is set, normalize and quantize will be fused into the NPU"; "the NPU only supports NHWC input"
    input_attrs[0].type = RKNN_TENSOR_UINT8
    input_attrs[0].fmt = RKNN_TENSOR_NHWC
    # 4. rknn_create_mem for the input, size_with_stride
    input_mems = [rknn_create_mem(ctx, input_attrs[0].size_with_stride)]
    # 3. "Copy input data to input_mems[0]->virt_addr ..." (rows padded to w_stride: 24 -> 32 on RK3588)
    assert input_attrs[0].w_stride == 32
    copy_image(mem_view(input_mems[0]), img, input_attrs[0].w_stride)
    ctypes.memset(output_attrs, 0, ctypes.sizeof(output_attrs))
    output_attrs[0].index = 0
    assert query(ctx, RKNN_QUERY_NATIVE_OUTPUT_ATTR, output_attrs[0]) == RKNN_SUCC
    # "float32 is required here to compute top5": the size becomes n_elems * sizeof(float)
    output_attrs[0].type = RKNN_TENSOR_FLOAT32
    output_mems = [rknn_create_mem(ctx, output_attrs[0].n_elems * 4)]
    # 5. Set input/output memory
    assert rknn_set_io_mem(ctx, input_mems[0], input_attrs[0]) == RKNN_SUCC
    assert rknn_set_io_mem(ctx, output_mems[0], output_attrs[0]) == RKNN_SUCC
    # 6. Run inference
    assert rknn_run(ctx, None) == RKNN_SUCC
    # 7. "Read the output result from output_mems[0]->virt_addr ..."
    probs = mem_view(output_mems[0], np.float32).copy()
    top5 = np.argsort(probs)[::-1][:5]
    ref = onnx_ref(classifier_onnx(), img).reshape(-1)
    np.testing.assert_allclose(probs, ref, atol=ATOL)
    assert set(top5[:3]) == set(np.argsort(ref)[::-1][:3])
    # 8./9. release order (lifecycle seed §3.1.5, zero-copy API): every input and output mem, then the context
    for i in range(io_num.n_input):
        assert rknn_destroy_mem(ctx, input_mems[i]) == RKNN_SUCC
    for i in range(io_num.n_output):
        assert rknn_destroy_mem(ctx, output_mems[i]) == RKNN_SUCC
    assert rknn_destroy(ctx) == RKNN_SUCC
    np.testing.assert_array_equal(probs, general_path(model, img)[0])


# --- seed: rknn-tensor-memory-api.txt §5.4, the four creation samples and rknn_destroy_mem ---------------------------
@pytest.mark.parametrize("how", ["from_phys", "from_fd", "create_mem", "create_mem2"])
def test_create_mem_samples(how):
    model, img = uint8_model(), frame(seed=3)
    ctx = rknn_context()
    assert rknn_init(ctx, model, len(model), 0, None) == RKNN_SUCC
    _, input_attrs, output_attrs = preamble(ctx)
    input_attrs[0].type, input_attrs[0].fmt = RKNN_TENSOR_UINT8, RKNN_TENSOR_NHWC
    size = input_attrs[0].size_with_stride
    external = None
    input_mems = [None]
    if how == "from_phys":
        # "suppose we have got buffer information as input_phys, input_virt and size"
        external = dma_alloc(size, cacheable=False, device=context_of(ctx).device)
        input_phys, input_virt = external.phys_addr, external.virt_addr
        input_mems[0] = rknn_create_mem_from_phys(ctx, input_phys, input_virt, size)
    elif how == "from_fd":
        # "suppose we have got buffer information as input_fd, input_virt and size"
        external = dma_alloc(size, cacheable=False, device=context_of(ctx).device)
        input_fd, input_virt = external.fd, external.virt_addr
        input_mems[0] = rknn_create_mem_from_fd(ctx, input_fd, input_virt, size, 0)
    elif how == "create_mem":
        input_mems[0] = rknn_create_mem(ctx, size)
    else:
        input_mems[0] = rknn_create_mem2(ctx, size, RKNN_FLAG_MEMORY_NON_CACHEABLE)
    assert input_mems[0] is not None and input_mems[0].size == size
    copy_image(mem_view(input_mems[0]), img, input_attrs[0].w_stride)
    output_attrs[0].type = RKNN_TENSOR_FLOAT32
    out = rknn_create_mem(ctx, output_attrs[0].n_elems * 4)
    assert rknn_set_io_mem(ctx, input_mems[0], input_attrs[0]) == RKNN_SUCC
    assert rknn_set_io_mem(ctx, out, output_attrs[0]) == RKNN_SUCC
    assert rknn_run(ctx, None) == RKNN_SUCC
    y = mem_view(out, np.float32).copy()
    # rknn_destroy_mem sample: "int ret = rknn_destroy_mem(ctx, input_mems[0]);" — user memory stays the user's
    ret = rknn_destroy_mem(ctx, input_mems[0])
    assert ret == RKNN_SUCC
    if external is not None:
        assert external.view()[:8].size == 8            # still the user's, still mapped
        external.close()
    assert rknn_destroy_mem(ctx, out) == RKNN_SUCC
    assert rknn_destroy(ctx) == RKNN_SUCC
    check(y, convnet(), model, img)


# --- seed: rknn_mem_sync sample (tensor-memory-api §5.4), on a strict-coherence device ------------------------------
def test_mem_sync_sample_with_cacheable_external_memory(monkeypatch):
    """Cacheable memory the runtime does not know (an external fd) is the user's to sync: rknn_mem_sync
    TO_DEVICE after the CPU writes the input, FROM_DEVICE before the CPU reads the output. On a strict device a
    missed FROM_DEVICE sync reads stale memory, as the board does."""
    monkeypatch.setenv("NPURT_SOC", "rk3568")
    monkeypatch.setenv("NPURT_COHERENCE", "strict")
    onnx, img = convnet(), frame(seed=4)
    model = uint8_model(onnx, "rk3568")
    ctx = rknn_context()
    assert rknn_init(ctx, model, len(model), 0, None) == RKNN_SUCC
    _, input_attrs, output_attrs = preamble(ctx)
    dev = context_of(ctx).device
    assert dev.coherence == "strict"
    input_attrs[0].type, input_attrs[0].fmt = RKNN_TENSOR_UINT8, RKNN_TENSOR_NHWC
    output_attrs[0].type = RKNN_TENSOR_FLOAT32
    blocks = [dma_alloc(input_attrs[0].size_with_stride, cacheable=True, device=dev),
              dma_alloc(output_attrs[0].n_elems * 4, cacheable=True, device=dev)]
    mems = [rknn_create_mem_from_fd(ctx, b.fd, b.virt_addr, b.size, 0) for b in blocks]
    assert rknn_set_io_mem(ctx, mems[0], input_attrs[0]) == RKNN_SUCC
    assert rknn_set_io_mem(ctx, mems[1], output_attrs[0]) == RKNN_SUCC
    copy_image(mem_view(mems[0]), img, input_attrs[0].w_stride)
    assert rknn_mem_sync(ctx, mems[0], RKNN_MEMORY_SYNC_TO_DEVICE) == RKNN_SUCC
    assert rknn_run(ctx, None) == RKNN_SUCC
    stale = mem_view(mems[1], np.float32).copy()                  # no sync yet: the CPU's stale copy
    # the sample: ret = rknn_mem_sync(ctx, &outputs[0].mem, RKNN_MEMORY_SYNC_FROM_DEVICE); if (ret < 0) ...
    ret = rknn_mem_sync(ctx, mems[1], RKNN_MEMORY_SYNC_FROM_DEVICE)
    assert ret >= 0
    y = mem_view(mems[1], np.float32).copy()
    assert not np.array_equal(stale, y) and not stale.any()
    for m in mems:
        assert rknn_destroy_mem(ctx, m) == RKNN_SUCC
    for b in blocks:
        b.close()
    assert rknn_destroy(ctx) == RKNN_SUCC
    ref = onnx_ref(onnx, img)
    np.testing.assert_allclose(y.reshape(ref.shape), ref, atol=ATOL)


# --- rknpu2 demo 4.1 rknn_create_mem_demo ----------------------------------------------------------------------------
def test_demo_4_1_create_mem():
    model, img = uint8_model(), frame(seed=5)
    ctx = rknn_context()
    # 1. init from bytes, flag 0; query the non-native INPUT_ATTR / OUTPUT_ATTR
    assert rknn_init(ctx, model, len(model), 0, None) == RKNN_SUCC
    io_num, input_attrs, output_attrs = preamble(ctx)
    # 2. input UINT8 / NHWC; rknn_create_mem(ctx, attr.size_with_stride). The board reports this image input as
    #    NHWC [1,H,W,C] already; the demo sets the fmt anyway.
    assert input_attrs[0].fmt == RKNN_TENSOR_NHWC
    input_attrs[0].type, input_attrs[0].fmt = RKNN_TENSOR_UINT8, RKNN_TENSOR_NHWC
    input_mem = rknn_create_mem(ctx, input_attrs[0].size_with_stride)
    # 3. copy the H x W x C image, sized from the queried dims: one memcpy if W == w_stride, else row by row
    h, w, c = (input_attrs[0].dims[i] for i in (1, 2, 3))
    assert (h, w, c) == img.shape and input_attrs[0].w_stride == 16
    copy_image(mem_view(input_mem), img, input_attrs[0].w_stride)
    # 4. outputs: rknn_create_mem(n_elems * sizeof(float)), type FLOAT32 (fmt as queried), set_io_mem
    output_mems = []
    for i in range(io_num.n_output):
        output_mems.append(rknn_create_mem(ctx, output_attrs[i].n_elems * 4))
        output_attrs[i].type = RKNN_TENSOR_FLOAT32
        assert rknn_set_io_mem(ctx, output_mems[i], output_attrs[i]) == RKNN_SUCC
    assert rknn_set_io_mem(ctx, input_mem, input_attrs[0]) == RKNN_SUCC
    # 5. rknn_run in a loop; read floats straight from out_mem->virt_addr (no sync call)
    results = []
    for _ in range(3):
        assert rknn_run(ctx, None) == RKNN_SUCC
        results.append(mem_view(output_mems[0], np.float32).copy())
    # 6. destroy each mem, then the context
    assert rknn_destroy_mem(ctx, input_mem) == RKNN_SUCC
    for m in output_mems:
        assert rknn_destroy_mem(ctx, m) == RKNN_SUCC
    assert rknn_destroy(ctx) == RKNN_SUCC
    assert all(np.array_equal(r, results[0]) for r in results)
    check(results[0], convnet(), model, img)


# --- rknpu2 demo 4.2 rknn_create_mem_with_rga_demo ---------------------------------------------------------------------
def test_demo_4_2_create_mem_with_rga(tmp_path):
    """As 4.1, init from a path; "RGA" (another device: here a separate mapping of the fd) writes the image
    into the input memory through its fd, wstride = align(W, 8), hstride = H, RGB888."""
    model, img = uint8_model(), frame(seed=6)
    path = tmp_path / "model.npurt"
    path.write_bytes(model)
    ctx = rknn_context()
    assert rknn_init(ctx, str(path), 0, 0, None) == RKNN_SUCC
    io_num, input_attrs, output_attrs = preamble(ctx)
    input_attrs[0].type, input_attrs[0].fmt = RKNN_TENSOR_UINT8, RKNN_TENSOR_NHWC
    input_mem = rknn_create_mem(ctx, input_attrs[0].size_with_stride)
    h, w, c = img.shape
    wstride, hstride = (w + 7) // 8 * 8, h                        # the demo's ALIGN 8
    assert wstride == input_attrs[0].w_stride
    with mmap.mmap(input_mem.fd, mmap.PAGESIZE * ((input_mem.size + mmap.PAGESIZE - 1) // mmap.PAGESIZE)) as rga:
        dst = np.frombuffer(rga, np.uint8, count=hstride * wstride * c).reshape(hstride, wstride, c)
        dst[:, :w] = img                                          # imresize into the dst buffer
        dst[:, w:] = 0
        del dst
    output_mems = []
    for i in range(io_num.n_output):
        output_attrs[i].type = RKNN_TENSOR_FLOAT32
        output_mems.append(rknn_create_mem(ctx, output_attrs[i].n_elems * 4))
        assert rknn_set_io_mem(ctx, output_mems[i], output_attrs[i]) == RKNN_SUCC
    assert rknn_set_io_mem(ctx, input_mem, input_attrs[0]) == RKNN_SUCC
    assert rknn_run(ctx, None) == RKNN_SUCC
    y = mem_view(output_mems[0], np.float32).copy()
    assert rknn_destroy_mem(ctx, input_mem) == RKNN_SUCC
    for m in output_mems:
        assert rknn_destroy_mem(ctx, m) == RKNN_SUCC
    assert rknn_destroy(ctx) == RKNN_SUCC
    check(y, convnet(), model, img)


# --- rknpu2 demo 4.3 rknn_set_internal_mem_from_fd_demo ---------------------------------------------------------------
def test_demo_4_3_everything_allocated_outside():
    model, img = uint8_model(), frame(seed=7)
    ctx = rknn_context()
    # 1. rknn_init(path/bytes, RKNN_FLAG_MEM_ALLOC_OUTSIDE); RKNN_QUERY_MEM_SIZE
    assert rknn_init(ctx, model, len(model), RKNN_FLAG_MEM_ALLOC_OUTSIDE, None) == RKNN_SUCC
    mem_size = rknn_mem_size()
    assert query(ctx, RKNN_QUERY_MEM_SIZE, mem_size) == RKNN_SUCC
    io_num, input_attrs, output_attrs = preamble(ctx)
    dev = context_of(ctx).device
    mmz = []                                                      # MMZ (CMA, uncached) blocks: dma_alloc here
    # 2. weight: MMZ alloc of total_weight_size, rknn_create_mem_from_fd(ctx, fd, virt, size, 0), set_weight_mem
    mmz.append(dma_alloc(mem_size.total_weight_size, cacheable=False, device=dev))
    weight_mem = rknn_create_mem_from_fd(ctx, mmz[-1].fd, mmz[-1].virt_addr, mem_size.total_weight_size, 0)
    assert rknn_set_weight_mem(ctx, weight_mem) == RKNN_SUCC
    # 3. internal: the same with total_internal_size
    mmz.append(dma_alloc(mem_size.total_internal_size, cacheable=False, device=dev))
    internal_mem = rknn_create_mem_from_fd(ctx, mmz[-1].fd, mmz[-1].virt_addr, mem_size.total_internal_size, 0)
    assert rknn_set_internal_mem(ctx, internal_mem) == RKNN_SUCC
    # 4. input: MMZ alloc of size_with_stride, create_mem_from_fd, strided copy as in 4.1
    input_attrs[0].type, input_attrs[0].fmt = RKNN_TENSOR_UINT8, RKNN_TENSOR_NHWC
    mmz.append(dma_alloc(input_attrs[0].size_with_stride, cacheable=False, device=dev))
    input_mem = rknn_create_mem_from_fd(ctx, mmz[-1].fd, mmz[-1].virt_addr, input_attrs[0].size_with_stride, 0)
    copy_image(mmz[-1].view(), img, input_attrs[0].w_stride)
    # 5. outputs: type FLOAT32, attr.size = n_elems * 4 (overwritten), MMZ alloc, create_mem_from_fd(attr.size)
    output_mems = []
    for i in range(io_num.n_output):
        output_attrs[i].type = RKNN_TENSOR_FLOAT32
        output_attrs[i].size = output_attrs[i].n_elems * 4
        mmz.append(dma_alloc(output_attrs[i].size, cacheable=False, device=dev))
        output_mems.append(rknn_create_mem_from_fd(ctx, mmz[-1].fd, mmz[-1].virt_addr, output_attrs[i].size, 0))
    assert rknn_set_io_mem(ctx, input_mem, input_attrs[0]) == RKNN_SUCC
    for i in range(io_num.n_output):
        assert rknn_set_io_mem(ctx, output_mems[i], output_attrs[i]) == RKNN_SUCC
    assert rknn_run(ctx, None) == RKNN_SUCC
    y = mmz[3].view(np.float32)[:output_attrs[0].n_elems].copy()
    # 6. clean-up in the demo's order: free the MMZ blocks, rknn_destroy_mem the io mems (the weight / internal
    #    wrappers are not destroyed by the demo: rknn_destroy releases them), rknn_destroy
    for block in mmz:
        block.close()
    assert rknn_destroy_mem(ctx, input_mem) == RKNN_SUCC
    for m in output_mems:
        assert rknn_destroy_mem(ctx, m) == RKNN_SUCC
    assert rknn_destroy(ctx) == RKNN_SUCC
    check(y, convnet(), model, img)


# --- rknpu2 demo 4.4 rknn_with_mmz_demo --------------------------------------------------------------------------------
def test_demo_4_4_physical_addresses():
    model, img = uint8_model(), frame(seed=8)
    ctx = rknn_context()
    assert rknn_init(ctx, model, len(model), 0, None) == RKNN_SUCC
    io_num, input_attrs, output_attrs = preamble(ctx)
    dev = context_of(ctx).device
    input_attrs[0].type, input_attrs[0].fmt = RKNN_TENSOR_UINT8, RKNN_TENSOR_NHWC
    mmz_in = dma_alloc(input_attrs[0].size_with_stride, cacheable=False, device=dev)       # MMZ CMA, uncached
    input_mem = rknn_create_mem_from_phys(ctx, mmz_in.phys_addr, mmz_in.virt_addr, input_attrs[0].size_with_stride)
    copy_image(mmz_in.view(), img, input_attrs[0].w_stride)
    mmz_out, output_mems = [], []
    for i in range(io_num.n_output):
        output_attrs[i].type = RKNN_TENSOR_FLOAT32
        mmz_out.append(dma_alloc(output_attrs[i].n_elems * 4, cacheable=False, device=dev))
        output_mems.append(rknn_create_mem_from_phys(ctx, mmz_out[i].phys_addr, mmz_out[i].virt_addr,
                                                     output_attrs[i].n_elems * 4))
        assert output_mems[i].phys_addr == mmz_out[i].phys_addr
        assert rknn_set_io_mem(ctx, output_mems[i], output_attrs[i]) == RKNN_SUCC
    assert rknn_set_io_mem(ctx, input_mem, input_attrs[0]) == RKNN_SUCC
    assert rknn_run(ctx, None) == RKNN_SUCC
    y = mmz_out[0].view(np.float32)[:output_attrs[0].n_elems].copy()
    assert rknn_destroy_mem(ctx, input_mem) == RKNN_SUCC
    for m in output_mems:
        assert rknn_destroy_mem(ctx, m) == RKNN_SUCC
    assert rknn_destroy(ctx) == RKNN_SUCC
    for block in [mmz_in] + mmz_out:
        block.close()
    check(y, convnet(), model, img)


# --- rknpu2 demo 4.5 rknn_internal_mem_reuse_demo ----------------------------------------------------------------------
def test_demo_4_5_internal_memory_reuse():
    onnx = [convnet(), convnet_other()]
    models = [uint8_model(m) for m in onnx]
    imgs = [frame(seed=9), frame(seed=10)]
    ctxs, mem_sizes, attrs = [], [], []
    max_internal_size = 0
    # 1. per model: init(MEM_ALLOC_OUTSIDE), SDK, MEM_SIZE, IN_OUT_NUM, attrs; track max_internal_size
    for model in models:
        ctx = rknn_context()
        assert rknn_init(ctx, model, len(model), RKNN_FLAG_MEM_ALLOC_OUTSIDE, None) == RKNN_SUCC
        mem_size = rknn_mem_size()
        assert query(ctx, RKNN_QUERY_MEM_SIZE, mem_size) == RKNN_SUCC
        attrs.append(preamble(ctx))
        max_internal_size = max(max_internal_size, mem_size.total_internal_size)
        ctxs.append(ctx)
        mem_sizes.append(mem_size)
    # 2. one big internal buffer, allocated with ctx[0]
    big = rknn_create_mem(ctxs[0], max_internal_size)
    internals, weights, inputs, outputs = [], [], [], []
    for n, ctx in enumerate(ctxs):
        # 3. a view of it per model via its fd, and each model's own weight memory
        internals.append(rknn_create_mem_from_fd(ctx, big.fd, big.virt_addr, mem_sizes[n].total_internal_size, 0))
        assert rknn_set_internal_mem(ctx, internals[n]) == RKNN_SUCC
        weights.append(rknn_create_mem(ctx, mem_sizes[n].total_weight_size))
        assert rknn_set_weight_mem(ctx, weights[n]) == RKNN_SUCC
        # 4. I/O: input UINT8/NHWC create_mem(size_with_stride); outputs n_elems*4 FLOAT32/NCHW
        io_num, input_attrs, output_attrs = attrs[n]
        input_attrs[0].type, input_attrs[0].fmt = RKNN_TENSOR_UINT8, RKNN_TENSOR_NHWC
        inputs.append(rknn_create_mem(ctx, input_attrs[0].size_with_stride))
        assert rknn_set_io_mem(ctx, inputs[n], input_attrs[0]) == RKNN_SUCC
        output_attrs[0].type, output_attrs[0].fmt = RKNN_TENSOR_FLOAT32, RKNN_TENSOR_NCHW
        outputs.append(rknn_create_mem(ctx, output_attrs[0].n_elems * 4))
        assert rknn_set_io_mem(ctx, outputs[n], output_attrs[0]) == RKNN_SUCC
    assert internals[0].virt_addr == internals[1].virt_addr == big.virt_addr       # one internal area
    # 5. run model A (a loop), read; then model B — one after the other
    ys = []
    for n, ctx in enumerate(ctxs):
        # "input copy writes at virt_addr + offset"
        copy_image(mem_view(inputs[n], offset=inputs[n].offset), imgs[n], attrs[n][1][0].w_stride)
        for _ in range(2):
            assert rknn_run(ctx, None) == RKNN_SUCC
        ys.append(mem_view(outputs[n], np.float32).copy())
    # 6. clean-up: big first (with ctx[0]), then per context: io mems, internal view, weight mem, rknn_destroy
    assert rknn_destroy_mem(ctxs[0], big) == RKNN_SUCC
    for n, ctx in enumerate(ctxs):
        for m in (inputs[n], outputs[n], internals[n], weights[n]):
            assert rknn_destroy_mem(ctx, m) == RKNN_SUCC
        assert rknn_destroy(ctx) == RKNN_SUCC
    for n in range(2):
        check(ys[n], onnx[n], models[n], imgs[n])


# --- rknpu2 demo 4.6 rknn_dynshape_inference_zero_copy_alloc_outside ---------------------------------------------------
def _align128(n: int) -> int:
    return (n + 127) // 128 * 128                                      # SIZE_ALIGN_128


def test_demo_4_6_dynamic_shapes_all_memory_outside_with_own_cache_maintenance(monkeypatch):
    """Model bytes in a cacheable MMZ buffer; dummy init (COLLECT_MODEL_INFO_ONLY | MEM_ALLOC_OUTSIDE) for sizes;
    the real init; per shape: set_input_shapes, CURRENT attrs, MMZ blocks rounded up to 128 bytes while RKNN is
    told the exact sizes; the demo's own cache maintenance (flush weight once; flush internal, inputs, outputs
    before every run; invalidate outputs after it). On a strict device, so the maintenance is what makes it
    right."""
    monkeypatch.setenv("NPURT_SOC", "rk3568")
    monkeypatch.setenv("NPURT_COHERENCE", "strict")
    from npurt.memory import open_device
    onnx = dynamic_convnet()
    board = open_device()                                             # rk3568, strict (the environment's)
    model_buf = dma_alloc(len(onnx), cacheable=True, device=board)    # MMZ, IOMMU, cacheable
    model_buf.view()[:] = np.frombuffer(onnx, np.uint8)
    model_buf.sync(RKNN_MEMORY_SYNC_TO_DEVICE)
    dummy = rknn_context()
    assert rknn_init(dummy, model_buf.virt_addr, len(onnx),
                     RKNN_FLAG_COLLECT_MODEL_INFO_ONLY | RKNN_FLAG_MEM_ALLOC_OUTSIDE, None) == RKNN_SUCC
    dummy_size = rknn_mem_size()
    assert query(dummy, RKNN_QUERY_MEM_SIZE, dummy_size) == RKNN_SUCC
    ctx = rknn_context()
    assert rknn_init(ctx, model_buf.virt_addr, len(onnx), RKNN_FLAG_MEM_ALLOC_OUTSIDE, None) == RKNN_SUCC
    mem_size = rknn_mem_size()
    assert query(ctx, RKNN_QUERY_MEM_SIZE, mem_size) == RKNN_SUCC
    assert (mem_size.total_weight_size, mem_size.total_internal_size) == \
        (dummy_size.total_weight_size, dummy_size.total_internal_size)
    io_num, input_attrs, output_attrs = preamble(ctx)
    dyn_range = rknn_input_range(index=0)
    assert query(ctx, RKNN_QUERY_INPUT_DYNAMIC_RANGE, dyn_range) == RKNN_SUCC
    dev = context_of(ctx).device
    weight_blk = dma_alloc(_align128(mem_size.total_weight_size), cacheable=True, device=dev)
    internal_blk = dma_alloc(_align128(mem_size.total_internal_size), cacheable=True, device=dev)
    weight_mem = rknn_create_mem_from_fd(ctx, weight_blk.fd, weight_blk.virt_addr, mem_size.total_weight_size, 0)
    internal_mem = rknn_create_mem_from_fd(ctx, internal_blk.fd, internal_blk.virt_addr,
                                           mem_size.total_internal_size, 0)
    assert rknn_set_weight_mem(ctx, weight_mem) == RKNN_SUCC
    assert rknn_set_internal_mem(ctx, internal_mem) == RKNN_SUCC
    weight_blk.sync(RKNN_MEMORY_SYNC_TO_DEVICE)                       # flush weight once
    for s in range(dyn_range.shape_number):
        shape_attr = rknn_tensor_attr(index=0, n_dims=dyn_range.n_dims, fmt=dyn_range.fmt)
        for j in range(dyn_range.n_dims):
            shape_attr.dims[j] = dyn_range.dyn_range[s][j]
        assert rknn_set_input_shapes(ctx, io_num.n_input, [shape_attr]) == RKNN_SUCC
        cur_in = rknn_tensor_attr(index=0)
        assert query(ctx, RKNN_QUERY_CURRENT_INPUT_ATTR, cur_in) == RKNN_SUCC
        cur_out = rknn_tensor_attr(index=0)
        assert query(ctx, RKNN_QUERY_CURRENT_OUTPUT_ATTR, cur_out) == RKNN_SUCC
        cur_out.type, cur_out.fmt = RKNN_TENSOR_FLOAT32, RKNN_TENSOR_NCHW
        cur_out.size = cur_out.n_elems * 4                                # size overwritten
        in_blk = dma_alloc(_align128(cur_in.size_with_stride), cacheable=True, device=dev)
        out_blk = dma_alloc(_align128(cur_out.size), cacheable=True, device=dev)
        in_mem = rknn_create_mem_from_fd(ctx, in_blk.fd, in_blk.virt_addr, cur_in.size_with_stride, 0)
        out_mem = rknn_create_mem_from_fd(ctx, out_blk.fd, out_blk.virt_addr, cur_out.size, 0)
        assert rknn_set_io_mem(ctx, in_mem, cur_in) == RKNN_SUCC
        assert rknn_set_io_mem(ctx, out_mem, cur_out) == RKNN_SUCC
        n, h, w, c = (cur_in.dims[i] for i in range(4))
        x = np.random.default_rng(s).uniform(-1, 1, (n, c, h, w)).astype(np.float32)
        rows = in_blk.view(np.float16, offset=0)[:n * h * cur_in.w_stride * c].reshape(n, h, cur_in.w_stride, c)
        rows[:, :, :w, :] = x.transpose(0, 2, 3, 1)
        for blk in (internal_blk, in_blk, out_blk):                      # before every run: flush
            blk.sync(RKNN_MEMORY_SYNC_TO_DEVICE)
        assert rknn_run(ctx, None) == RKNN_SUCC
        out_blk.sync(RKNN_MEMORY_SYNC_FROM_DEVICE)                       # after it: invalidate outputs
        y = out_blk.view(np.float32)[:cur_out.n_elems].copy()
        ref = reference(onnx, x)[0]
        np.testing.assert_allclose(y.reshape(ref.shape), ref, atol=ATOL)
        for m in (in_mem, out_mem):
            assert rknn_destroy_mem(ctx, m) == RKNN_SUCC
        in_blk.close(), out_blk.close()
    for m in (weight_mem, internal_mem):
        assert rknn_destroy_mem(ctx, m) == RKNN_SUCC
    assert rknn_destroy(ctx) == RKNN_SUCC
    assert rknn_destroy(dummy) == RKNN_SUCC                               # the demo leaves it; we do not
    for blk in (weight_blk, internal_blk, model_buf):
        blk.close()
    board.close()


# --- rknpu2 demo 4.10 model-buffer zero copy ---------------------------------------------------------------------------
def test_demo_4_10_model_buffer_zero_copy():
    model, img = uint8_model(), frame(seed=11)
    model_size = len(model)
    # m = rknn_create_mem2(0, model_size, RKNN_MEM_FLAG_ALLOC_NO_CONTEXT); copy the model bytes to m->virt_addr
    m = rknn_create_mem2(0, model_size, RKNN_MEM_FLAG_ALLOC_NO_CONTEXT)
    mem_view(m)[:] = np.frombuffer(model, np.uint8)
    # rknn_init_extend e zeroed; real_model_offset 0, real_model_size, model_buffer_fd, model_buffer_flags
    e = rknn_init_extend()
    ctypes.memset(ctypes.byref(e), 0, ctypes.sizeof(e))
    e.real_model_offset, e.real_model_size = 0, model_size
    e.model_buffer_fd, e.model_buffer_flags = m.fd, m.flags
    ctx = rknn_context()
    assert rknn_init(ctx, m.virt_addr, model_size, RKNN_FLAG_MODEL_BUFFER_ZERO_COPY, e) == RKNN_SUCC
    assert np.shares_memory(context_of(ctx)._weights.view(), mem_view(m))     # weights read in place
    io_num, _, _ = preamble(ctx)
    inputs = (rknn_input * 1)()
    inputs[0].index, inputs[0].type, inputs[0].fmt = 0, RKNN_TENSOR_UINT8, RKNN_TENSOR_NHWC
    inputs[0].buf, inputs[0].size = img.ctypes.data, img.nbytes
    assert rknn_inputs_set(ctx, 1, inputs) == RKNN_SUCC
    assert rknn_run(ctx, None) == RKNN_SUCC
    outputs = (rknn_output * io_num.n_output)()
    outputs[0].index, outputs[0].want_float = 0, 1
    assert rknn_outputs_get(ctx, io_num.n_output, outputs, None) == RKNN_SUCC
    y = output_view(outputs[0]).copy()
    assert rknn_outputs_release(ctx, io_num.n_output, outputs) == RKNN_SUCC
    # the doc's text: free m only after the context is destroyed (its sample does the opposite; see §9)
    assert rknn_destroy(ctx) == RKNN_SUCC
    assert rknn_destroy_mem(0, m) == RKNN_SUCC
    check(y, convnet(), model, img)


def test_demo_4_10_sample_order_frees_the_model_buffer_first(capsys):
    """The sample's own order (rknn_destroy_mem before rknn_destroy): the context must not run on freed model
    memory — rknn_run fails cleanly, destroy still works, nothing leaks."""
    model = uint8_model()
    m = rknn_create_mem2(0, len(model), RKNN_MEM_FLAG_ALLOC_NO_CONTEXT)
    mem_view(m)[:] = np.frombuffer(model, np.uint8)
    e = rknn_init_extend(real_model_size=len(model), model_buffer_fd=m.fd, model_buffer_flags=m.flags)
    ctx = rknn_context()
    assert rknn_init(ctx, m.virt_addr, len(model), RKNN_FLAG_MODEL_BUFFER_ZERO_COPY, e) == RKNN_SUCC
    assert rknn_destroy_mem(0, m) == RKNN_SUCC
    img = frame(seed=12)
    inputs = (rknn_input * 1)()
    inputs[0].index, inputs[0].type, inputs[0].fmt = 0, RKNN_TENSOR_UINT8, RKNN_TENSOR_NHWC
    inputs[0].buf, inputs[0].size = img.ctypes.data, img.nbytes
    rknn_inputs_set(ctx, 1, inputs)
    assert rknn_run(ctx, None) < 0
    assert "E RKNN:" in capsys.readouterr().err
    assert rknn_destroy(ctx) == RKNN_SUCC
