"""`npurt.Session` and `DeviceTensor`: the copying path against onnxruntime (fp16) and the executor (int8), every
model source, the zero-copy path being the executor's own memory (same addresses, real fds, dlpack views),
dynamic shapes, SRAM and the memory report, strict coherence, errors with codes, and nothing left behind by
close() (fds, device buffers and bytes)."""
from __future__ import annotations

import os

import numpy as np
import pytest

import npurt
from npurt import ErrorCode, NpuError
from npurt.runtime.user_io import run_once
from npurt.memory import open_device
from conftest import open_fds
from helpers.models import Y_SHAPE, convnet, dynamic_convnet, image, reference, two_io

ATOL = 0.02

pytestmark = pytest.mark.usefixtures("no_leaks")   # every fd, device buffer and byte given back


def test_run_copying_path_matches_onnxruntime():
    x = image(seed=1)
    ref = reference(convnet(), x)[0]
    with npurt.Session(convnet()) as s:
        y, = s.run(x)
        assert y.dtype == np.float32 and y.shape == Y_SHAPE
        np.testing.assert_allclose(y, ref, atol=ATOL)
        np.testing.assert_array_equal(s.run([x])[0], y)
        np.testing.assert_array_equal(s.run({"x": x})[0], y)
        np.testing.assert_array_equal(s.run_dict(x)["y"], y)
        np.testing.assert_array_equal(s(x.astype(np.float64))[0], y)     # any numeric dtype is converted


def test_two_inputs_two_outputs():
    x, z = image((1, 3, 6, 6), seed=3), np.linspace(-2, 2, 5, dtype=np.float32).reshape(1, 5)
    ry, rv = reference(two_io(), x, z)
    with npurt.Session(two_io()) as s:
        assert s.input_names == ["x", "z"] and s.output_names == ["y", "v"]
        out = s.run_dict({"z": z, "x": x})
        np.testing.assert_allclose(out["y"], ry, atol=ATOL)
        np.testing.assert_allclose(out["v"], rv, atol=ATOL)
        assert s.input("z").layout == "UNDEFINED" and s.output(1) is s.output("v")


def test_model_sources(tmp_path):
    """ONNX path / bytes / ModelProto, a .npurt path (its own SoC is used), a CompiledModel."""
    import onnx
    x = image(seed=2)
    onnx_path = tmp_path / "m.onnx"
    onnx_path.write_bytes(convnet())
    cm = npurt.compile(convnet(), soc="rk3566", progress=False)
    npurt_path = tmp_path / "m.npurt"
    cm.save(npurt_path)
    results = []
    for src in (str(onnx_path), convnet(), onnx.load_from_string(convnet())):
        with npurt.Session(src) as s:
            results.append(s.run(x)[0])
    for src in (npurt_path, cm):
        with npurt.Session(src) as s:
            assert s.soc == "rk3566"
            results.append(s.run(x)[0])
    for y in results:
        np.testing.assert_allclose(y, reference(convnet(), x)[0], atol=ATOL)
    with pytest.raises(NpuError) as e:
        npurt.Session(cm, soc="rk3588")                       # compiled for another SoC
    assert e.value.code is ErrorCode.PLATFORM_MISMATCH
    dev = open_device("rk3566")
    assert dev.stats().buffers == 0
    dev.close()


def test_int8_quantize_matches_the_executor():
    calib = [image(seed=s) for s in range(6)]
    x = image(seed=9)
    with npurt.Session(convnet(), quantize=calib) as s:
        y, = s.run(x)
        assert s.input(0).dtype == np.int8 and s.output(0).dtype == np.int8
        cm = s.context.compiled
        np.testing.assert_array_equal(y, run_once(cm, [x])[0])
        assert y.dtype == np.float32


def test_zero_copy_tensors_are_the_executors_memory():
    x = image(seed=4)
    with npurt.Session(convnet()) as s:
        xin, yout = s.input(0), s.output(0)
        a = xin.attr
        assert xin.layout == "NHWC" and xin.dtype == np.float16 and xin.shape == (1, 8, a.w_stride, 3)
        assert yout.layout == "NC1HWC2" and yout.shape == tuple(yout.attr.dims) and yout.logical_shape == Y_SHAPE
        assert os.fstat(xin.fd).st_size >= xin.nbytes                    # a real fd
        xin.write(x.transpose(0, 2, 3, 1), layout="nhwc")
        assert np.all(xin.numpy()[:, :, 10:, :] == 0)                   # rows padded to w_stride
        outs = s.run()
        assert outs[0] is yout
        ex = s.context.executor
        assert ex.tensor_view("x").__array_interface__["data"][0] == xin.virt_addr
        assert ex.tensor_view("y").__array_interface__["data"][0] == yout.virt_addr
        view = yout.numpy()
        assert view.__array_interface__["data"][0] == yout.virt_addr and view.dtype == np.float16
        np.testing.assert_allclose(yout.read(), reference(convnet(), x)[0], atol=ATOL)
        dl = np.from_dlpack(yout)
        assert np.shares_memory(dl, view) and yout.__dlpack_device__() == (1, 0)
        np.testing.assert_array_equal(np.asarray(yout), view)
        # writing the native bytes directly is the same as write()
        xin.numpy()[:, :, :10, :] = image(seed=5).transpose(0, 2, 3, 1)
        s.run()
        np.testing.assert_allclose(yout.to_numpy(), reference(convnet(), image(seed=5))[0], atol=ATOL)
        np.testing.assert_allclose(xin.read(), image(seed=5), atol=1e-3)   # inputs decode too
        yout.sync("from_device")


def test_write_uint8_frames_with_fused_mean_std():
    frame = np.random.default_rng(6).integers(0, 256, (1, 8, 10, 3), dtype=np.uint8)
    xf = ((frame.astype(np.float32) - 127.5) / 127.5).transpose(0, 3, 1, 2)
    with npurt.Session(convnet(), mean=[[127.5] * 3], std=[[127.5] * 3]) as s:
        s.input(0).write(frame)                          # NHWC guessed from the shape
        s.run()
        np.testing.assert_allclose(s.output(0).read(), reference(convnet(), xf)[0], atol=ATOL)
        np.testing.assert_allclose(s.run(frame.transpose(0, 3, 1, 2))[0], reference(convnet(), xf)[0], atol=ATOL)


def test_dynamic_shapes_from_the_arrays():
    with npurt.Session(dynamic_convnet()) as s:
        for shape in ((1, 3, 8, 8), (1, 3, 16, 16), (1, 3, 12, 10), (1, 3, 8, 8)):
            x = image(shape, seed=shape[2])
            y, = s.run(x)
            np.testing.assert_allclose(y, reference(dynamic_convnet(), x)[0], atol=ATOL)
        s.set_input_shapes([(1, 3, 12, 10)])                   # zero-copy: switch explicitly, take the tensors again
        x = image((1, 3, 12, 10), seed=7)
        s.input(0).write(x)
        s.run()
        np.testing.assert_allclose(s.output(0).read(), reference(dynamic_convnet(), x)[0], atol=ATOL)
        with pytest.raises(NpuError) as e:
            s.run(image((1, 3, 9, 9)))
        assert e.value.code is ErrorCode.INVALID_ARGUMENT


def test_sram_and_memory_report():
    x = image(seed=8)
    with npurt.Session(convnet(), sram=True) as s:
        np.testing.assert_allclose(s.run(x)[0], reference(convnet(), x)[0], atol=ATOL)
        m = s.mem_size()
        assert m.sram_used > 0 and m.sram_used <= m.sram_total
        text = s.memory_report()
        assert "Total allocated Internal SRAM Size" in text and "SramHit" in text
        assert f"Total Weight Memory Size: {m.weight_size}" in text
        assert f"Total Internal Memory Size: {m.internal_size}" in text
        for name in ("InputOperator", "OutputOperator", "ConvRelu"):
            assert name in text
        for name in s.context.compiled.plan.offsets:
            assert name[:16] in text
    with npurt.Session(convnet()) as s:
        assert "SRAM Size" not in s.memory_report() and s.mem_size().sram_used == 0


def test_strict_coherence_session():
    """On a strict device the session's own memory is synced by the runtime around each run, as on the board."""
    x = image(seed=10)
    with npurt.Session(convnet(), soc="rk3562", coherence="strict") as s:
        np.testing.assert_allclose(s.run(x)[0], reference(convnet(), x)[0], atol=ATOL)
        s.input(0).write(image(seed=11))
        s.run()
        np.testing.assert_allclose(s.output(0).read(), reference(convnet(), image(seed=11))[0], atol=ATOL)
        assert s.context.device.coherence == "strict"
    dev = open_device("rk3562")
    assert dev.stats().buffers == 0
    dev.close()


@pytest.mark.parametrize("call, code", [
    (lambda s: s.run(image((1, 3, 8, 9))), ErrorCode.INVALID_INPUT),
    (lambda s: s.run([image(), image()]), ErrorCode.INVALID_INPUT),
    (lambda s: s.run({"nope": image()}), ErrorCode.INVALID_INPUT),
    (lambda s: s.input(1), ErrorCode.INVALID_ARGUMENT),
    (lambda s: s.output("nope"), ErrorCode.INVALID_ARGUMENT),
    (lambda s: s.output(0).write(image()), ErrorCode.INVALID_ARGUMENT),
    (lambda s: s.input(0).write(image(), layout="nc1hwc2"), ErrorCode.INVALID_ARGUMENT),
    (lambda s: s.input(0).sync("sideways"), ErrorCode.INVALID_ARGUMENT),
])
def test_errors_carry_codes(call, code):
    with npurt.Session(convnet()) as s:
        with pytest.raises(NpuError) as e:
            call(s)
        assert e.value.code is code


def test_bad_models_and_options(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    for src, code in ((str(bad), ErrorCode.INVALID_MODEL), (str(tmp_path / "missing.onnx"), ErrorCode.INVALID_MODEL)):
        with pytest.raises(NpuError) as e:
            npurt.Session(src)
        assert e.value.code is code
    cm = npurt.compile(convnet(), progress=False)
    with pytest.raises(NpuError) as e:
        npurt.Session(cm, quantize=[image()])
    assert e.value.code is ErrorCode.INVALID_ARGUMENT


def test_close_releases_everything_and_old_views_stay_valid():
    dev = open_device()
    before, fds = dev.stats(), open_fds()
    s = npurt.Session(convnet())
    xin, yout = s.input(0), s.output(0)
    s.run(image())
    view = yout.numpy()
    assert dev.stats().buffers > before.buffers
    s.close()
    s.close()                                                  # idempotent
    after = dev.stats()
    assert (after.buffers, after.ddr_bytes) == (before.buffers, before.ddr_bytes)
    assert float(view.astype(np.float32).sum()) == float(view.astype(np.float32).sum())   # still mapped: no crash
    del view
    assert open_fds() == fds
    for call in (lambda: s.run(image()), lambda: s.input(0), lambda: s.memory_report()):
        with pytest.raises(NpuError) as e:
            call()
        assert e.value.code is ErrorCode.INVALID_CONTEXT
    for call in (xin.numpy, yout.read, lambda: xin.fd):
        with pytest.raises(NpuError) as e:
            call()
        assert e.value.code is ErrorCode.INVALID_HANDLE
    dev.close()


def test_many_sessions_do_not_leak():
    dev = open_device()
    before, fds = dev.stats(), open_fds()
    for k in range(20):
        with npurt.Session(convnet()) as s:
            s.run(image(seed=k))
    s = npurt.Session(convnet())                      # dropped without close: garbage collection releases it
    del s
    import gc
    gc.collect()
    after = dev.stats()
    assert (after.buffers, after.ddr_bytes) == (before.buffers, before.ddr_bytes) and open_fds() == fds
    dev.close()


def test_runs_allocate_nothing_on_the_device():
    """After the first run, neither path allocates device memory, and Python allocations stay flat."""
    import gc
    import tracemalloc
    dev = open_device()
    x = image(seed=12)
    with npurt.Session(convnet()) as s:
        s.run(x), s.run()
        gc.collect()
        allocs = dev.stats().allocations
        tracemalloc.start()
        snap0 = tracemalloc.take_snapshot()
        for _ in range(200):
            s.run(x)
            s.run()
        gc.collect()
        snap1 = tracemalloc.take_snapshot()
        tracemalloc.stop()
        assert dev.stats().allocations == allocs
        assert sum(d.size_diff for d in snap1.compare_to(snap0, "filename")) < 64 * 1024
    dev.close()


@pytest.mark.parametrize("norm", [False, True])
def test_write_fast_path_equals_pack_input(norm):
    """DeviceTensor.write's NHWC float fast path writes the same bytes as the runtime's pack_input."""
    from npurt.runtime.user_io import pack_input
    opts = {"mean": [[127.5, 100.0, 90.0]], "std": [[127.5, 60.0, 70.0]]} if norm else {}
    with npurt.Session(convnet(), **opts) as s:
        t, cm = s.input(0), s.context.compiled
        for arr, fmt in ((np.random.default_rng(0).integers(0, 256, (1, 8, 10, 3), dtype=np.uint8), "nhwc"),
                         (image(seed=1), "nchw"), (image(seed=2).astype(np.float64), "nchw")):
            t.write(arr, layout=fmt)
            ref = np.full(t.nbytes, 0xAB, np.uint8)
            pack_input(t.attr, arr, ref, cm.mean[0], cm.std[0], layout=fmt, shape=t.logical_shape)
            np.testing.assert_array_equal(t.numpy().reshape(-1).view(np.uint8), ref)
