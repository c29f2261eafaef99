"""npurt.tensor: element types, layouts, native NC1HWC2 shapes and strides, layout conversions, quantisation.

Every public function here raises `NpuError` (INVALID_ARGUMENT) for a bad argument
(`npurt.errors.bad_arguments_raise_npu_error`)."""
from npurt.tensor.convert import (nc1hwc2_to_nchw, nc1hwc2_to_nhwc, nchw_to_nc1hwc2, nchw_to_nhwc,
                                  nhwc_to_nc1hwc2, nhwc_to_nchw)
from npurt.tensor.dtypes import DType, pack_int4, unpack_int4
from npurt.tensor.layout import (Layout, align_up, c1_for, logical_shape, native_shape, size_with_stride,
                                 w_stride)
from npurt.tensor.quant import (choose_affine_params, choose_dfp_fl, dequantize, dequantize_dfp,
                                normalize_quantize, quantize, quantize_dfp, quantize_per_channel, to_float16)

__all__ = [
    "DType", "pack_int4", "unpack_int4",
    "Layout", "align_up", "c1_for", "logical_shape", "native_shape", "size_with_stride", "w_stride",
    "nchw_to_nc1hwc2", "nc1hwc2_to_nchw", "nhwc_to_nc1hwc2", "nc1hwc2_to_nhwc", "nchw_to_nhwc", "nhwc_to_nchw",
    "quantize", "dequantize", "quantize_per_channel", "choose_affine_params", "quantize_dfp", "dequantize_dfp",
    "choose_dfp_fl", "to_float16", "normalize_quantize",
]

from npurt.errors import bad_arguments_raise_npu_error as _npu_errors  # noqa: E402

for _name in __all__:
    if _name not in ("DType", "Layout"):
        globals()[_name] = _npu_errors(globals()[_name])
del _name
