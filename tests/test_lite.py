"""`npurt.rknn.lite.RKNNLite`: a vendor Lite program runs unchanged (load_rknn -> init_runtime -> inference ->
release) on .onnx and .npurt models, against onnxruntime (fp16) and the executor (int8, dequantised float32
outputs); input formats and types as the vendor takes them; dynamic shapes from the arrays; the vendor's 0/-1
and None returns with `E <call>:` lines; and no memory growth over many inferences (the vendor class's known complaint):
Python allocations, RSS, fds and device accounting stay flat, and release() gives everything back."""
from __future__ import annotations

import gc
import os
import tracemalloc

import numpy as np
import pytest

import npurt
from npurt.runtime.user_io import run_once
from npurt.memory import open_device
from npurt.rknn.lite import RKNNLite
from conftest import open_fds
from helpers.models import Y_SHAPE, convnet, dynamic_convnet, image, reference, two_io

ATOL = 0.02

pytestmark = pytest.mark.usefixtures("no_leaks")   # every fd, device buffer and byte given back


@pytest.fixture
def onnx_file(tmp_path):
    p = tmp_path / "convnet.onnx"
    p.write_bytes(convnet())
    return str(p)


def _lite(path: str, **init) -> RKNNLite:
    rknn = RKNNLite()
    assert rknn.load_rknn(path) == 0
    assert rknn.init_runtime(**init) == 0
    return rknn


def test_vendor_program_on_onnx(onnx_file):
    """The Lite example as written: NHWC input by default, a list of float32 outputs."""
    x = image(seed=1)
    rknn = RKNNLite()
    assert rknn.load_rknn(onnx_file) == 0
    assert rknn.init_runtime(core_mask=RKNNLite.NPU_CORE_0) == 0
    outputs = rknn.inference(inputs=[x.transpose(0, 2, 3, 1)])
    assert isinstance(outputs, list) and outputs[0].dtype == np.float32 and outputs[0].shape == Y_SHAPE
    np.testing.assert_allclose(outputs[0], reference(convnet(), x)[0], atol=ATOL)
    nchw = rknn.inference(inputs=[x], data_format=["nchw"])
    np.testing.assert_array_equal(nchw[0], outputs[0])
    np.testing.assert_array_equal(rknn.inference(inputs=[x])[0], outputs[0])        # only fits NCHW: taken as such
    np.testing.assert_array_equal(rknn.inference(inputs=[x.transpose(0, 2, 3, 1).astype(np.float64)])[0],
                                  outputs[0])
    rknn.release()


def test_int8_npurt_outputs_are_dequantised_float32(tmp_path):
    cm = npurt.compile(convnet(), quantize=[image(seed=s) for s in range(6)], progress=False)
    path = tmp_path / "convnet_int8.npurt"
    cm.save(path)
    x = image(seed=2)
    rknn = _lite(str(path))
    y, = rknn.inference(inputs=[x], data_format="nchw", data_type="float32")
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, run_once(cm, [x])[0])
    rknn.release()


def test_uint8_images_with_fused_mean_std(tmp_path):
    cm = npurt.compile(convnet(), mean=[[127.5] * 3], std=[[127.5] * 3], progress=False)
    path = tmp_path / "m.npurt"
    cm.save(path)
    img = np.random.default_rng(3).integers(0, 256, (1, 8, 10, 3), dtype=np.uint8)
    xf = ((img.astype(np.float32) - 127.5) / 127.5).transpose(0, 3, 1, 2)
    rknn = _lite(str(path))
    y, = rknn.inference(inputs=[img])                       # data_type from the array: uint8, NHWC
    np.testing.assert_allclose(y, reference(convnet(), xf)[0], atol=ATOL)
    y2, = rknn.inference(inputs=[img], data_type="uint8", data_format="nhwc")
    np.testing.assert_array_equal(y, y2)
    y3, = rknn.inference(inputs=[img.astype(np.int64)], data_type="uint8")      # values converted to data_type
    np.testing.assert_array_equal(y, y3)
    rknn.release()


def test_two_inputs_and_frame_ids(tmp_path):
    path = tmp_path / "two.onnx"
    path.write_bytes(two_io())
    x, z = image((1, 3, 6, 6), seed=4), np.linspace(-2, 2, 5, dtype=np.float32).reshape(1, 5)
    rknn = _lite(str(path))
    for k in (1, 2):
        (y, v), frame = rknn.inference(inputs=[x, z], data_format=["nchw", None], get_frame_id=True)
        assert frame == k
    ry, rv = reference(two_io(), x, z)
    np.testing.assert_allclose(y, ry, atol=ATOL)
    np.testing.assert_allclose(v, rv, atol=ATOL)
    rknn.release()


def test_dynamic_shape_from_the_input_arrays(tmp_path):
    """The vendor's dynamic-shape Lite example: NCHW inputs of several sizes, no set-shape call."""
    path = tmp_path / "dyn.onnx"
    path.write_bytes(dynamic_convnet())
    rknn = _lite(str(path))
    for shape in ((1, 3, 16, 16), (1, 3, 8, 8), (1, 3, 12, 10), (1, 3, 16, 16)):
        x = image(shape, seed=shape[3])
        y, = rknn.inference(inputs=[x], data_format=["nchw"])
        np.testing.assert_allclose(y, reference(dynamic_convnet(), x)[0], atol=ATOL)
    assert rknn.inference(inputs=[image((1, 3, 9, 9))], data_format=["nchw"]) is None      # not a declared shape
    rknn.release()


def test_load_rknn_rejects_a_non_path_and_leaves_an_fd_alone(onnx_file, capsys):
    # an int used to reach open() as a file descriptor: the model was read from it, the caller's fd was closed,
    # and a TypeError escaped instead of the vendor's -1
    fd = os.open(onnx_file, os.O_RDONLY)
    try:
        rknn = RKNNLite()
        assert rknn.load_rknn(fd) == -1
        assert "E load_rknn:" in capsys.readouterr().err
        os.fstat(fd)                                  # still open
    finally:
        os.close(fd)


def test_vendor_statuses_and_error_lines(onnx_file, tmp_path, capsys):
    rknn = RKNNLite()
    assert rknn.inference(inputs=[image()]) is None
    assert rknn.init_runtime() == -1
    assert rknn.get_sdk_version() is None
    assert rknn.load_rknn(str(tmp_path / "missing.rknn")) == -1
    err = capsys.readouterr().err
    for call in ("inference", "init_runtime", "get_sdk_version", "load_rknn"):
        assert f"E {call}:" in err
    vendor = tmp_path / "vendor.rknn"
    vendor.write_bytes(b"RKNN\x00\x00\x00\x00" + bytes(64))
    assert rknn.load_rknn(str(vendor)) == -1
    assert "only runs on the board" in capsys.readouterr().err
    assert rknn.load_rknn(onnx_file) == 0
    for mask in (5, 6, -1, True, "0"):                       # only the NPU_CORE_* values
        assert rknn.init_runtime(core_mask=mask) == -1
    assert "Not support core mask" in capsys.readouterr().err
    assert rknn.init_runtime(target="rk9999") == -1
    assert rknn.init_runtime(core_mask=RKNNLite.NPU_CORE_0_1_2) == 0
    assert "API:" in rknn.get_sdk_version()
    assert rknn.inference(inputs=[image(), image()]) is None              # one input too many
    assert rknn.inference(inputs=[image((1, 3, 8, 9))], data_format="nchw") is None
    assert rknn.inference(inputs=[image()], data_format="nc1hwc2") is None
    err = capsys.readouterr().err
    assert err.count("E inference:") == 3
    native = np.zeros((1, 8, 16, 3), np.float16)              # pass_through: the native bytes (fp16 NHWC, w_stride 16)
    native[:, :, :10, :] = image(seed=6).transpose(0, 2, 3, 1)
    y, = rknn.inference(inputs=[native], inputs_pass_through=[1])
    np.testing.assert_allclose(y, reference(convnet(), image(seed=6))[0], atol=ATOL)
    rknn.release()
    rknn.release()
    assert rknn.inference(inputs=[image()]) is None



def test_a_3d_hwc_image_gets_its_batch_axis_and_a_2d_one_is_one_plain_line(onnx_file, capsys):
    """A 3-D HWC image for a 4-D input runs as the toolkit runs it (batch axis added: the model zoo's demos pass
    the image as is); a 2-D array is refused with a line that says what was passed and what the model takes."""
    rknn = _lite(onnx_file)
    hwc = image(seed=2)[0].transpose(1, 2, 0)
    y, = rknn.inference(inputs=[hwc])
    np.testing.assert_allclose(y, reference(convnet(), image(seed=2))[0], atol=ATOL)
    np.testing.assert_array_equal(y, rknn.inference(inputs=[hwc[None]])[0])
    assert rknn.inference(inputs=[hwc[0]]) is None
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"E inference: inputs[0] is 2-D {hwc[0].shape}, the model's "
                                                   f"input 0 is 4-D {image().shape}")
    assert "UNDEFINED" not in lines[0]
    rknn.release()


def test_targets_and_core_masks(tmp_path, capsys):
    cm = npurt.compile(convnet(), soc="rk3566", progress=False)
    path = str(tmp_path / "rk3566.npurt")
    cm.save(path)
    rknn = _lite(path, core_mask=RKNNLite.NPU_CORE_1)         # target None: the model's SoC; single core: warning
    assert "W init_runtime:" in capsys.readouterr().err
    assert rknn.inference(inputs=[image()], data_format="nchw")[0].shape == Y_SHAPE
    assert rknn.init_runtime(target="rk3588") == -1           # compiled for rk3566
    assert "E init_runtime:" in capsys.readouterr().err
    rknn.release()
    info = rknn.list_support_target_platform(path)
    assert info["filled_target_platform"] == ["rk3566"] and "rk3588" in info["support_target_platform"]
    assert rknn.list_devices()
    dev = open_device("rk3566")
    assert dev.stats().buffers == 0
    dev.close()


def test_verbose_file(onnx_file, tmp_path):
    log = tmp_path / "lite.log"
    rknn = RKNNLite(verbose=True, verbose_file=str(log))
    assert rknn.load_rknn(onnx_file) == 0 and rknn.init_runtime() == 0
    rknn.release()
    text = log.read_text()
    assert "load_rknn" in text and "init_runtime" in text


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_no_memory_growth_over_many_inferences(onnx_file):
    """Pain point #1: the vendor's Lite grows ~42 kB per inference. Here 600 inferences after a warm-up leave
    Python allocations, RSS, fds and the device accounting where they were."""
    dev = open_device()
    rknn = _lite(onnx_file)
    x = image(seed=5).transpose(0, 2, 3, 1).copy()
    for _ in range(50):
        rknn.inference(inputs=[x])
    gc.collect()
    stats0, fds0, rss0 = dev.stats(), open_fds(), _rss()
    tracemalloc.start()
    snap0 = tracemalloc.take_snapshot()
    for _ in range(600):
        y = rknn.inference(inputs=[x])
    gc.collect()
    snap1 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in snap1.compare_to(snap0, "filename"))
    assert grown < 64 * 1024, f"Python allocations grew by {grown} bytes over 600 inferences"
    assert _rss() - rss0 < 4 * 1024 * 1024                  # the vendor's rate would be ~25 MB
    stats1 = dev.stats()
    assert (stats1.buffers, stats1.ddr_bytes, stats1.allocations) == (stats0.buffers, stats0.ddr_bytes,
                                                                      stats0.allocations)
    assert open_fds() == fds0
    assert y[0].shape == Y_SHAPE
    rknn.release()
    dev.close()
