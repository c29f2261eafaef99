"""The executor really keeps activations in bound memory: planned slots hold onnxruntime's values in native
layout and type; bind validates sizes; pack_input / unpack_output round trips."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

import npurt
from npurt.errors import ErrorCode, NpuError
from npurt.runtime.user_io import pack_input, unpack_output
from npurt.exec.executor import Executor, allocate
from npurt.exec.temp import TempMemory
from npurt.model.zoo import mobilenet_v2_like, small_convnet
from npurt.tensor import DType, Layout, nc1hwc2_to_nchw

from helpers.oracle import ort_session, run_ort


def _ort_with_intermediates(model: onnx.ModelProto, names: list[str], feeds: dict) -> dict[str, np.ndarray]:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for n in names:
        if n not in have:
            m.graph.output.append(helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None))
    sess = ort_session(m)
    return dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))


def _bound(cm):
    w, a, i, o = allocate(cm)
    ex = Executor(cm)
    ex.bind(w, a, i, o)
    return ex, w, a, i, o


@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_intermediates_live_in_the_arena(precision):
    model = mobilenet_v2_like(size=64)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, 3, 64, 64)).astype(np.float32)
    kw = {"quantize": [x] + [rng.normal(size=x.shape).astype(np.float32) for _ in range(3)], "progress": False} \
        if precision == "int8" else {"precision": precision}
    cm = npurt.compile(model, **kw)
    ex, w, arena, ins, outs = _bound(cm)
    pack_input(cm.native_input_attrs[0], x, ins[0])
    ex.run()
    # pick 4-D intermediates that exist in the ONNX model under the same name
    onnx_names = {o for n in model.graph.node for o in n.output}
    plan = cm.plan

    def survives(t: str) -> bool:     # no tensor produced later reuses any of its bytes
        off, size, end = plan.offsets[t], plan.sizes[t], plan.lifetimes[t][1]
        return not any(plan.lifetimes[u][0] >= end and plan.offsets[u] < off + size and off < plan.offsets[u]
                       + plan.sizes[u] for u in plan.offsets if u != t)

    picks = [t for t in plan.offsets if t in onnx_names and len(cm.storage[t].shape) == 4 and survives(t)]
    assert len(picks) >= 3
    ref = _ort_with_intermediates(model, picks, {model.graph.input[0].name: x})
    for name in picks:
        st = cm.storage[name]
        off = cm.plan.offsets[name]
        assert st.layout is Layout.NC1HWC2
        raw = arena[off:off + st.nbytes]                        # the bytes at the planned offset, nothing else
        stored = raw.view(st.dtype.numpy_dtype).reshape(st.dims)
        assert np.shares_memory(ex.tensor_view(name), arena)
        expect = ref[name]
        if precision == "fp16":
            assert stored.dtype == np.float16
            got = nc1hwc2_to_nchw(stored, st.shape[1]).astype(np.float32)
            np.testing.assert_allclose(got, expect, rtol=2e-2, atol=2e-2 * (np.abs(expect).max() + 1e-6))
        else:
            assert stored.dtype == np.int8
            q = np.clip(np.rint(expect / st.scale) + st.zp, -128, 127).astype(np.int8)
            got = nc1hwc2_to_nchw(stored, st.shape[1])
            # int8 drift from upstream requantisation: most values within 1-2 steps
            diff = np.abs(got.astype(np.int32) - q.astype(np.int32))
            assert np.mean(diff <= 2) > 0.9, (name, np.mean(diff <= 2))
        # padding channels of the native layout are zero
        c, c2 = st.shape[1], st.dims[4]
        if c % c2:
            assert not np.any(stored[:, c // c2, :, :, c % c2:])


def test_no_hidden_activation_copies():
    cm = npurt.compile(small_convnet(), precision="fp16")
    ex, *_ = _bound(cm)
    total_logical = sum(np.prod(s.shape) * 4 for n, s in cm.storage.items() if n in cm.plan.offsets)
    assert ex.temp.sizes()["float32"] < total_logical      # a bounded conversion scratch, not a copy of every tensor


def test_outputs_written_in_native_layout():
    cm = npurt.compile(small_convnet(), precision="fp16")
    ex, w, a, ins, outs = _bound(cm)
    x = np.random.default_rng(1).normal(size=(1, 3, 32, 32)).astype(np.float32)
    pack_input(cm.native_input_attrs[0], x, ins[0])
    ex.run()
    attr = cm.native_output_attrs[0]
    ref = run_ort(small_convnet(), {small_convnet().graph.input[0].name: x})[0]
    raw = outs[0][:attr.size_with_stride].view(np.float16)
    assert attr.type is DType.FLOAT16
    np.testing.assert_allclose(raw.astype(np.float32).reshape(ref.shape), ref, atol=2e-3)
    np.testing.assert_allclose(unpack_output(attr, outs[0], ref.shape), ref, atol=2e-3)


def test_bind_validates_sizes_and_types():
    cm = npurt.compile(small_convnet(), precision="fp16")
    w, a, i, o = allocate(cm)
    ex = Executor(cm)
    with pytest.raises(NpuError) as e:
        ex.run()
    assert e.value.code is ErrorCode.INVALID_CONTEXT
    cases = [
        (w[:-1], a, i, o), (w, a[:cm.internal_size - 1], i, o),
        (w, a, [i[0][:-1]], o), (w, a, i, [o[0][:-1]]),
        (w, a, [], o), (w, a, i, o + o),
        (w.view(np.int8), a, i, o), (w, a[::2], i, o), (w, a, [list(i[0])], o),
    ]
    for args in cases:
        with pytest.raises(NpuError) as e:
            ex.bind(*args)
        assert e.value.code in (ErrorCode.INVALID_ARGUMENT, ErrorCode.INVALID_INPUT, ErrorCode.INVALID_OUTPUT)
    ex.bind(w, a, i, o)
    ex.run()


def test_weights_are_read_from_the_bound_view():
    cm = npurt.compile(small_convnet(), precision="fp16")
    x = np.random.default_rng(2).normal(size=(1, 3, 32, 32)).astype(np.float32)
    w, a, i, o = allocate(cm)
    ex = Executor(cm, cache_weights=False)
    ex.bind(w, a, i, o)
    pack_input(cm.native_input_attrs[0], x, i[0])
    ex.run()
    before = unpack_output(cm.native_output_attrs[0], o[0], cm.storage[cm.graph.outputs[0]].shape)
    w[:] = 0                                       # zero the weight memory: the result must change
    ex.run()
    after = unpack_output(cm.native_output_attrs[0], o[0], cm.storage[cm.graph.outputs[0]].shape)
    assert not np.allclose(before, after)


@pytest.mark.parametrize("channels,soc", [(3, "rk3588"), (3, "rk3566"), (5, "rk3588"), (1, "rk3588")])
def test_pack_unpack_round_trip(channels, soc):
    from tests.test_model_compiled import two_input_model
    cm = npurt.compile(two_input_model(c_img=channels), soc=soc, precision="fp16")
    attr = cm.native_input_attrs[0]
    x = np.random.default_rng(0).normal(size=(1, channels, 10, 13)).astype(np.float32)
    buf = np.full(attr.size_with_stride, 0xAB, np.uint8)
    pack_input(attr, x, buf, shape=x.shape)
    back = unpack_output(attr, buf, x.shape)
    np.testing.assert_allclose(back, x, atol=1e-2)
    if attr.fmt is Layout.NHWC:
        rows = buf.view(np.float16).reshape(1, 10, attr.w_stride, channels)
        assert not np.any(rows[:, :, 13:, :])      # row padding is zero
    # NHWC user data
    buf2 = np.zeros_like(buf)
    pack_input(attr, x.transpose(0, 2, 3, 1), buf2, layout="nhwc", shape=x.shape)
    assert np.array_equal(buf, buf2)
    with pytest.raises(NpuError):
        pack_input(attr, x[:, :, :9], buf, shape=x.shape)
    with pytest.raises(NpuError):
        pack_input(attr, x, buf[:-1], shape=x.shape)


def test_pack_input_quantises_uint8_image_with_mean_std():
    from tests.test_model_compiled import two_input_model
    rng = np.random.default_rng(0)
    mean, std = [120.0, 110.0, 100.0], [60.0, 60.0, 60.0]
    calib = [[rng.uniform(0, 255, (1, 3, 10, 13)).astype(np.float32), rng.normal(size=(1, 5, 5, 7)).astype(np.float32),
              rng.normal(size=(2, 7)).astype(np.float32)] for _ in range(4)]
    cm = npurt.compile(two_input_model(), quantize=calib, mean=[mean, None, None], std=[std, None, None],
                       progress=False)
    attr = cm.native_input_attrs[0]
    img = rng.integers(0, 256, (1, 3, 10, 13), dtype=np.uint8)
    buf = np.zeros(attr.size_with_stride, np.uint8)
    pack_input(attr, img, buf, mean, std)
    q = buf.view(np.int8).reshape(1, 10, attr.w_stride, 3)[:, :, :13, :]
    norm = (img.astype(np.float32) - np.array(mean, np.float32).reshape(1, 3, 1, 1)) / \
        np.array(std, np.float32).reshape(1, 3, 1, 1)
    expect = np.clip(np.rint(norm / attr.scale) + attr.zp, -128, 127).astype(np.int8).transpose(0, 2, 3, 1)
    assert np.array_equal(q, expect)


def test_threaded_conversions_match(monkeypatch):
    from npurt.exec.bind import pcopyto
    monkeypatch.setenv("NPURT_EXEC_THREADS", "3")
    src = np.random.default_rng(0).normal(size=(1, 13, 8, 64, 64)).astype(np.float32)
    dst = np.empty((1, 13, 64, 64, 8), np.float16)
    pcopyto(dst, src.transpose(0, 1, 3, 4, 2), casting="unsafe")
    assert np.array_equal(dst, src.transpose(0, 1, 3, 4, 2).astype(np.float16))
    cm = npurt.compile(mobilenet_v2_like(size=96), precision="fp16")
    x = np.random.default_rng(1).normal(size=(1, 3, 96, 96)).astype(np.float32)
    from npurt.runtime.user_io import run_once
    threaded = run_once(cm, [x])[0]
    monkeypatch.setenv("NPURT_EXEC_THREADS", "1")
    assert np.array_equal(threaded, run_once(cm, [x])[0])


def test_temp_memory_counts_what_it_holds():
    """A region that grows keeps counting the buffer it replaced (earlier steps still hold views of it)."""
    temp = TempMemory()
    a = temp.take("r", np.float32, 10)
    b = temp.take("r", np.float32, 100)
    assert a.size == 10 and b.size == 100 and b.dtype == np.float32
    assert temp.sizes() == {"r": 64 + 400} and temp.nbytes == 464
    temp.clear()
    assert temp.nbytes == 0


def test_one_accounted_temp_memory():
    """Both step paths take their scratch from the executor's one TempMemory; a rebind replaces it (no growth),
    and its bytes are what the runtime reports (mem_size().temp_size, the memory report)."""
    cm = npurt.compile(small_convnet(), precision="fp16")
    ex, w, a, i, o = _bound(cm)
    sizes = ex.temp.sizes()
    assert {"float32", "float16", "padded"} <= set(sizes) and ex.temp.nbytes == sum(sizes.values())
    first = ex.temp.nbytes
    ex.bind(w, a, i, o)
    assert ex.temp.nbytes == first
    generic = Executor(cm, inplace=False)
    generic.bind(*allocate(cm))
    assert set(generic.temp.sizes()) == {"float32", "float16"}     # the in-place regions only with in-place steps
    x = np.random.default_rng(2).normal(size=(1, 3, 32, 32)).astype(np.float32)
    with npurt.Session(small_convnet(), precision="fp16") as s:
        assert s.mem_size().temp_size == 0                          # taken at the first run's bind
        s.run(x)
        m = s.mem_size()
        assert m.temp_size == first
        assert f"Executor Temp Memory (host, step scratch): {first}" in s.memory_report()
