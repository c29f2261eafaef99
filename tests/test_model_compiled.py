"""CompiledModel: tensor attrs, storage sizes, the memory plan, int8 calibration input, the .npurt file."""
from __future__ import annotations

import math
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npurt
from npurt.errors import ErrorCode, NpuError
from npurt.runtime.user_io import run_once
from npurt.model import file_format
from npurt.model.attrs import QntType
from npurt.model.zoo import small_convnet
from npurt.soc import get_profile
from npurt.tensor import DType, Layout


def two_input_model(c_img: int = 3, c_feat: int = 5) -> "onnx.ModelProto":
    """img (1,c_img,10,13) -> Conv -> Relu; feat (1,c_feat,5,6); vec (2,7): three outputs of different kinds."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.normal(0, .3, (c_feat, c_img, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(np.ones((1, 1, 1, 1), np.float32), "one")]
    nodes = [helper.make_node("Conv", ["img", "w"], ["c"], strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("Add", ["r", "feat"], ["sum"]),
             helper.make_node("Mul", ["sum", "one"], ["y4"]),
             helper.make_node("Relu", ["vec"], ["y2"])]
    g = helper.make_graph(nodes, "two", [helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, c_img, 10, 13]),
                                         helper.make_tensor_value_info("feat", TensorProto.FLOAT, [1, c_feat, 5, 7]),
                                         helper.make_tensor_value_info("vec", TensorProto.FLOAT, [2, 7])],
                          [helper.make_tensor_value_info("y4", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("y2", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("soc", ["rk3588", "rk3566"])
def test_native_input_attrs_fp16(soc):
    cm = npurt.compile(two_input_model(), soc=soc)
    prof = get_profile(soc)
    c2 = prof.c2_for("float16")
    img, feat, vec = cm.native_input_attrs
    assert img.fmt is Layout.NHWC and img.dims == [1, 10, 13, 3] and img.type is DType.FLOAT16
    assert img.w_stride == -(-13 // prof.input_align) * prof.input_align
    assert img.size_with_stride == 1 * 10 * img.w_stride * 3 * 2
    assert img.n_elems == 390 and img.size == 780 and img.qnt_type is QntType.NONE
    assert feat.fmt is Layout.NC1HWC2 and feat.dims == [1, math.ceil(5 / c2), 5, 7, c2]
    assert feat.size_with_stride == math.ceil(5 / c2) * 5 * 7 * c2 * 2
    assert vec.fmt is Layout.UNDEFINED and vec.dims == [2, 7] and vec.size_with_stride == 28
    # INPUT_ATTR: 4-D float inputs NHWC [1,H,W,C] as the boards report (whatever the native layout), others as ONNX
    for a, dims in zip(cm.input_attrs[:2], ([1, 10, 13, 3], [1, 5, 7, 5])):
        assert a.fmt is Layout.NHWC and a.dims == dims and a.w_stride == -(-dims[2] // prof.input_align) * prof.input_align
        assert a.size_with_stride == dims[1] * a.w_stride * dims[3] * 2
    assert cm.input_attrs[2].fmt is Layout.UNDEFINED
    # NHWC variant
    assert cm.native_nhwc_input_attrs[1].fmt is Layout.NHWC and cm.native_nhwc_input_attrs[1].dims == [1, 5, 7, 5]
    y4, y2 = cm.native_output_attrs
    assert y4.fmt is Layout.NC1HWC2 and y4.dims == [1, math.ceil(5 / c2), 5, 7, c2] and y4.w_stride == 7
    assert y2.fmt is Layout.UNDEFINED and y2.dims == [2, 7]
    assert cm.native_nhwc_output_attrs[0].fmt is Layout.NHWC and cm.native_nhwc_output_attrs[0].dims == [1, 5, 7, 5]
    assert cm.output_attrs[0].fmt is Layout.NCHW and cm.output_attrs[0].dims == [1, 5, 5, 7]
    assert cm.soc == soc


@pytest.mark.parametrize("channels", [1, 4, 2, 8])
def test_native_input_layout_by_channels(channels):
    cm = npurt.compile(two_input_model(c_img=channels))
    expect = Layout.NHWC if channels in (1, 3, 4) else Layout.NC1HWC2
    assert cm.native_input_attrs[0].fmt is expect


def test_int8_attrs_and_internal_sizes():
    rng = np.random.default_rng(0)
    calib = [[rng.normal(size=(1, 3, 10, 13)).astype(np.float32), rng.normal(size=(1, 5, 5, 7)).astype(np.float32),
              rng.normal(size=(2, 7)).astype(np.float32)] for _ in range(4)]
    cm = npurt.compile(two_input_model(), quantize=calib, progress=False)
    assert cm.precision == "int8"
    for a in cm.native_input_attrs + cm.native_output_attrs + cm.input_attrs + cm.output_attrs:
        assert a.type is DType.INT8 and a.qnt_type is QntType.AFFINE_ASYMMETRIC and a.scale > 0
        assert -128 <= a.zp <= 127
    assert cm.native_input_attrs[1].dims[-1] == 16          # int8 C2 on rk3588
    # internal tensors: native C1*H*W*C2*bytes rounded to 1 KiB; inputs/outputs outside the arena
    r = cm.storage["r"]
    assert r.layout is Layout.NC1HWC2 and r.dims == (1, 1, 5, 7, 16)
    assert r.nbytes == 5 * 7 * 16 and r.size == 1024
    assert set(cm.plan.offsets) == {"r", "sum"}
    assert all(off % 1024 == 0 for off in cm.plan.offsets.values())
    assert not cm.plan.check()


def test_plan_lifetimes_and_reuse():
    cm = npurt.compile(small_convnet(), precision="fp16")
    plan = cm.plan
    assert not plan.check()
    assert sum(plan.sizes.values()) > plan.internal_size        # slots are reused over time
    for name, (start, end) in plan.lifetimes.items():
        t = cm.graph.tensors[name]
        assert start == t.producer and end == max(t.consumers) + 1
    assert not (set(plan.offsets) & (set(cm.graph.inputs) | set(cm.graph.outputs)))
    for name, off in plan.weight_offsets.items():
        assert off % 64 == 0 and off + plan.weight_sizes[name] <= plan.weight_size
    assert plan.weight_size % 1024 == 0 and cm.weight_blob.nbytes == plan.weight_size


def test_mean_std_recorded_and_applied():
    model = two_input_model()
    mean, std = [10.0, 20.0, 30.0], [2.0, 4.0, 8.0]
    cm = npurt.compile(model, mean=[mean, None, None], std=[std, None, None], precision="float32")
    assert cm.mean[0] == mean and cm.std[0] == std and cm.mean[1] is None
    rng = np.random.default_rng(3)
    raw = rng.uniform(0, 255, (1, 3, 10, 13)).astype(np.float32)
    feat, vec = rng.normal(size=(1, 5, 5, 7)).astype(np.float32), rng.normal(size=(2, 7)).astype(np.float32)
    norm = (raw - np.array(mean, np.float32).reshape(1, 3, 1, 1)) / np.array(std, np.float32).reshape(1, 3, 1, 1)
    plain = npurt.compile(model, precision="float32")
    np.testing.assert_allclose(run_once(cm, [raw, feat, vec])[0], run_once(plain, [norm, feat, vec])[0],
                               rtol=1e-5, atol=1e-5)
    with pytest.raises(NpuError):
        npurt.compile(model, mean=[[1.0, 2.0], None, None])


def test_file_round_trip(tmp_path):
    cm = npurt.compile(small_convnet(), precision="fp16")
    path = tmp_path / "m.npurt"
    cm.save(path)
    assert [p.name for p in tmp_path.iterdir()] == ["m.npurt"]        # no temp file left behind
    back = npurt.load_compiled(path)
    assert back.soc == cm.soc and back.precision == "fp16"
    assert back.plan == cm.plan
    assert back.native_input_attrs == cm.native_input_attrs and back.output_attrs == cm.output_attrs
    assert [n.display_type for n in back.graph.nodes] == [n.display_type for n in cm.graph.nodes]
    assert np.array_equal(back.weight_blob, cm.weight_blob)
    x = np.random.default_rng(0).normal(size=(1, 3, 32, 32)).astype(np.float32)
    assert np.array_equal(run_once(back, [x])[0], run_once(cm, [x])[0])
    assert npurt.load_compiled(path.read_bytes()).plan == cm.plan


def test_read_compiled_is_the_one_reader(tmp_path):
    """One reader: the model layer's `read_compiled` is `npurt.load_compiled`, and the plan comes with the model."""
    from npurt.model import compiled
    cm = npurt.compile(small_convnet(), precision="fp16")
    raw = cm.to_bytes()
    bare = compiled.read_compiled(raw)
    assert bare.soc == cm.soc and bare.plan == cm.plan and not bare.plan.check()
    assert not hasattr(compiled, "load_compiled")
    assert npurt.load_compiled is compiled.read_compiled
    assert npurt.load_compiled(raw).plan == cm.plan


def test_inconsistent_plan_in_file_is_invalid_model():
    """A `.npurt` whose (checksummed) plan puts two live-together tensors on the same bytes is refused."""
    cm = npurt.compile(small_convnet(), precision="fp16")
    _, manifest, blob = file_format.decode(cm.to_bytes())
    life = cm.plan.lifetimes
    a, b = next((a, b) for a in life for b in life if a != b and life[a][0] < life[b][1] and life[b][0] < life[a][1])
    manifest["plan"]["offsets"][b] = manifest["plan"]["offsets"][a]
    with pytest.raises(NpuError) as e:
        npurt.load_compiled(file_format.encode(cm.soc, manifest, blob))
    assert e.value.code is ErrorCode.INVALID_MODEL and "share bytes" in str(e.value)


def test_corrupt_truncated_foreign_files(tmp_path):
    data = npurt.compile(small_convnet(), precision="fp16").to_bytes()
    bad = []
    flipped = bytearray(data)
    flipped[len(data) // 2] ^= 0xFF
    bad.append(bytes(flipped))                                 # weights corrupt -> checksum
    flipped = bytearray(data)
    flipped[file_format.HEADER_SIZE + 5] ^= 0x01
    bad.append(bytes(flipped))                                 # manifest corrupt -> checksum
    bad += [data[:-1], data[:100], data[:file_format.HEADER_SIZE + 10], data + b"\0"]
    bad.append(b"\x08\x07" + data[2:])                        # foreign magic
    bad.append(small_convnet().SerializeToString())           # an ONNX file is not a compiled model
    bad.append(b"")
    v2 = bytearray(data)
    v2[8] = 99                                                 # unknown format version
    bad.append(bytes(v2))
    for blob in bad:
        with pytest.raises(NpuError) as e:
            npurt.load_compiled(blob)
        assert e.value.code is ErrorCode.INVALID_MODEL
    p = tmp_path / "x.npurt"
    p.write_bytes(data[:-3])
    with pytest.raises(NpuError) as e:
        npurt.load_compiled(p)
    assert e.value.code is ErrorCode.INVALID_MODEL and "truncated" in str(e.value)


def test_failed_save_leaves_nothing(tmp_path, monkeypatch):
    cm = npurt.compile(small_convnet(), precision="fp16")
    target = tmp_path / "m.npurt"
    target.write_bytes(b"old")

    def boom(fd):
        raise OSError("disk full")
    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError):
        cm.save(target)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["m.npurt"]



@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_saved_model_mode_follows_the_umask(tmp_path, mask):
    """A .npurt / .bin gets the mode a plain write gives (0644 under umask 022), not mkstemp's 0600."""
    cm = npurt.compile(small_convnet(), precision="fp16")
    old = os.umask(mask)
    try:
        for name in ("m.npurt", "m.bin"):
            cm.save(tmp_path / name)
        (tmp_path / "plain").write_bytes(b"x")
    finally:
        os.umask(old)
    want = 0o666 & ~mask
    assert [(tmp_path / n).stat().st_mode & 0o777 for n in ("m.npurt", "m.bin", "plain")] == [want] * 3


def test_saving_over_a_model_keeps_its_mode(tmp_path):
    cm = npurt.compile(small_convnet(), precision="fp16")
    target = tmp_path / "m.npurt"
    target.write_bytes(b"old")
    target.chmod(0o640)
    cm.save(target)
    assert target.stat().st_mode & 0o777 == 0o640
    assert npurt.load_compiled(target).soc == cm.soc


def test_save_into_a_missing_folder_names_the_target(tmp_path):
    """The error names the path the user gave, not the temporary file beside it."""
    cm = npurt.compile(small_convnet(), precision="fp16")
    target = tmp_path / "nope" / "m.npurt"
    with pytest.raises(FileNotFoundError) as e:
        cm.save(target)
    assert e.value.filename == str(target)
    assert not (tmp_path / "nope").exists()


def test_calibration_errors(tmp_path):
    model = small_convnet()
    rng = np.random.default_rng(0)
    with pytest.raises(NpuError) as e:
        npurt.compile(model, quantize=[rng.normal(size=(1, 3, 16, 16)).astype(np.float32)], progress=False)
    assert e.value.code is ErrorCode.INVALID_ARGUMENT and "shape" in str(e.value)
    with pytest.raises(NpuError) as e:
        npurt.compile(model, quantize=[np.array([["a"] * 32] * 3 * 32).reshape(1, 3, 32, 32)], progress=False)
    assert e.value.code is ErrorCode.INVALID_ARGUMENT and "dtype" in str(e.value)
    with pytest.raises(NpuError):
        npurt.compile(model, quantize=[], progress=False)
    with pytest.raises(NpuError):
        npurt.compile(model, quantize=str(tmp_path / "missing.txt"), progress=False)
    (tmp_path / "ds.txt").write_text("a.npy\n")
    np.save(tmp_path / "a.npy", np.zeros((1, 3, 8, 8), np.float32))
    with pytest.raises(NpuError) as e:
        npurt.compile(model, quantize=str(tmp_path / "ds.txt"), progress=False)
    assert "ds.txt" not in str(e.value) or "shape" in str(e.value)
    (tmp_path / "ds2.txt").write_text("img.jpg\n")
    with pytest.raises(NpuError) as e:
        npurt.compile(model, quantize=str(tmp_path / "ds2.txt"), progress=False)
    assert ".npy" in str(e.value)


def test_dataset_txt_multi_input(tmp_path):
    rng = np.random.default_rng(1)
    lines = []
    for k in range(3):
        names = []
        for name, shape in (("img", (1, 3, 10, 13)), ("feat", (1, 5, 5, 7)), ("vec", (2, 7))):
            np.save(tmp_path / f"{name}{k}.npy", rng.normal(size=shape).astype(np.float32))
            names.append(f"{name}{k}.npy")
        lines.append(" ".join(names))
    (tmp_path / "dataset.txt").write_text("\n".join(lines) + "\n")
    cm = npurt.compile(two_input_model(), quantize=str(tmp_path / "dataset.txt"), progress=False)
    assert cm.precision == "int8"
    assert all(a.qnt_type is QntType.AFFINE_ASYMMETRIC for a in cm.native_input_attrs)


def test_precision_arguments():
    with pytest.raises(NpuError):
        npurt.compile(small_convnet(), precision="int4")
    with pytest.raises(NpuError):
        npurt.compile(small_convnet(), precision="int8")            # no dataset
    with pytest.raises(NpuError):
        npurt.compile(small_convnet(), soc="rk9999")
    cm = npurt.compile(small_convnet(), precision="float32")
    assert all(s.dtype in (DType.FLOAT32, DType.INT64) for s in cm.storage.values())


def test_int8_passthrough_ops_keep_input_quantisation():
    rng = np.random.default_rng(0)
    cm = npurt.compile(small_convnet(), quantize=[rng.normal(size=(1, 3, 32, 32)).astype(np.float32)
                                                  for _ in range(3)], progress=False)
    pools = [n for n in cm.graph.nodes if n.op_type in ("MaxPool", "Flatten", "Reshape")]
    assert pools
    for n in pools:
        src, dst = cm.storage[n.inputs[0]], cm.storage[n.outputs[0]]
        assert (dst.scale, dst.zp) == (src.scale, src.zp), n.name


def test_is_npurt_is_the_one_compiled_model_check(tmp_path):
    """Bytes, a memoryview or a path: the magic decides, whatever the file is called; unreadable paths raise."""
    data = npurt.compile(small_convnet(), precision="fp16").to_bytes()
    onnx_bytes = small_convnet().SerializeToString()
    assert file_format.is_npurt(data) and file_format.is_npurt(memoryview(data)[:8])
    assert not file_format.is_npurt(onnx_bytes) and not file_format.is_npurt(b"NPURT")
    (tmp_path / "model.onnx").write_bytes(data)
    (tmp_path / "m.npurt").write_bytes(onnx_bytes)
    assert file_format.is_npurt(tmp_path / "model.onnx") and not file_format.is_npurt(str(tmp_path / "m.npurt"))
    with pytest.raises(OSError):
        file_format.is_npurt(tmp_path / "missing.npurt")
