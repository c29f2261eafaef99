"""Pooling and Resize kernels against onnxruntime on single-node models."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

from npurt.errors import ErrorCode, NpuError
from npurt.exec.kernels import get_kernel, supported_ops
from npurt.exec.reference import run_reference


POOL_CASES = {
    "max_2x2": ("MaxPool", dict(kernel_shape=[2, 2], strides=[2, 2])),
    "max_3x3_s2_ceil": ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    "max_3x3_pads_ceil": ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)),
    "max_5x5_sppf": ("MaxPool", dict(kernel_shape=[5, 5], strides=[1, 1], pads=[2, 2, 2, 2])),
    "max_dilation": ("MaxPool", dict(kernel_shape=[2, 2], dilations=[2, 2])),
    "max_same_upper": ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")),
    "avg_3x3_pads_exclude": ("AveragePool", dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
    "avg_3x3_pads_include": ("AveragePool", dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)),
    "avg_ceil": ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    "avg_ceil_pads_include": ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                                                  ceil_mode=1, count_include_pad=1)),
    "avg_same_lower": ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_LOWER")),
    "avg_7x7_global_like": ("AveragePool", dict(kernel_shape=[7, 7])),
}


@pytest.mark.parametrize("name", POOL_CASES)
def test_pool(single_node, run_ort, name, rng):
    op, attrs = POOL_CASES[name]
    x = rng.standard_normal((2, 3, 12, 13) if "7x7" not in name else (1, 8, 7, 7), dtype=np.float32)
    model = single_node(op, {"x": x}, **attrs)
    want = run_ort(model, {"x": x})[0]
    got = run_reference(model, {"x": x})["y0"]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_maxpool_indices(single_node, run_ort, rng):
    x = rng.standard_normal((1, 2, 7, 9), dtype=np.float32)
    model = single_node("MaxPool", {"x": x}, n_outputs=2, out_types=[TensorProto.FLOAT, TensorProto.INT64],
                        kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    want = run_ort(model, {"x": x})
    got = run_reference(model, {"x": x})
    np.testing.assert_array_equal(got["y0"], want[0])
    np.testing.assert_array_equal(got["y1"], want[1])


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pool(single_node, run_ort, op, rng):
    x = rng.standard_normal((2, 5, 6, 7), dtype=np.float32)
    model = single_node(op, {"x": x})
    np.testing.assert_allclose(run_reference(model, {"x": x})["y0"], run_ort(model, {"x": x})[0], rtol=1e-5, atol=1e-6)


RESIZE_CASES = {
    "nearest_x2_asym_floor": dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    "nearest_x2_default": dict(mode="nearest"),
    "nearest_round_prefer_ceil": dict(mode="nearest", nearest_mode="round_prefer_ceil"),
    "nearest_ceil_align": dict(mode="nearest", nearest_mode="ceil", coordinate_transformation_mode="align_corners"),
    "linear_half_pixel": dict(mode="linear"),
    "linear_pytorch_half_pixel": dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel"),
    "linear_align_corners": dict(mode="linear", coordinate_transformation_mode="align_corners"),
    "linear_asymmetric": dict(mode="linear", coordinate_transformation_mode="asymmetric"),
    "cubic_half_pixel": dict(mode="cubic"),
}


@pytest.mark.parametrize("scales", [(1, 1, 2, 2), (1, 1, 0.5, 0.75), (1, 1, 1.7, 2.5)])
@pytest.mark.parametrize("name", RESIZE_CASES)
def test_resize_scales(single_node, run_ort, name, scales, rng):
    x = rng.standard_normal((1, 3, 8, 10), dtype=np.float32)
    model = single_node("Resize", {"x": x}, {"roi": None, "scales": np.array(scales, np.float32)}, **RESIZE_CASES[name])
    want = run_ort(model, {"x": x})[0]
    got = run_reference(model, {"x": x})["y0"]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["nearest_x2_default", "linear_half_pixel", "linear_align_corners"])
def test_resize_sizes(single_node, run_ort, name, rng):
    x = rng.standard_normal((1, 2, 9, 7), dtype=np.float32)
    consts = {"roi": None, "scales": None, "sizes": np.array([1, 2, 20, 5], np.int64)}
    model = single_node("Resize", {"x": x}, consts, **RESIZE_CASES[name])
    np.testing.assert_allclose(run_reference(model, {"x": x})["y0"], run_ort(model, {"x": x})[0], rtol=1e-4, atol=1e-5)


def test_registry_errors_name_the_op_and_list_supported():
    assert supported_ops() == sorted(supported_ops())
    assert {"Conv", "Gemm", "Resize", "Softmax", "Concat"} <= set(supported_ops())
    with pytest.raises(NpuError) as e:
        get_kernel("NoSuchOp")
    assert e.value.code == ErrorCode.NOT_SUPPORTED
    assert "'NoSuchOp'" in str(e.value) and "Conv" in str(e.value)


def test_reference_names_the_unsupported_node(single_node):
    x = np.zeros((2, 2), np.float32)
    model = single_node("NoSuchOp", {"x": x})
    model.graph.node[0].name = "my_node"
    with pytest.raises(NpuError, match="my_node.*NoSuchOp"):
        run_reference(model, {"x": x})
