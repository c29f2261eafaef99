"""Every documented Context error not covered by the flow tests: its code, its message, and that the context is
unchanged and usable afterwards."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from npurt.errors import ErrorCode, NpuError
from npurt.rknn.boundary import vendor_message
from npurt.runtime import Context, ContextOptions, InputData, MemRef, load_family
from npurt.runtime.loader import parse_shape_sets
from npurt.tensor import DType, Layout
from helpers.models import convnet, dynamic_convnet, image, reference, two_io


pytestmark = pytest.mark.usefixtures("no_leaks")   # every fd, device buffer, byte and handle given back


def _raises(code: ErrorCode, words: str, call) -> None:
    """`call` fails with `code`; `words` in its neutral message or, for a hinted error, in the RKNN wording."""
    with pytest.raises(NpuError) as e:
        call()
    assert e.value.code is code, e.value
    assert words in str(e.value) or words in vendor_message(e.value), str(e.value)


def test_query_errors():
    with Context(two_io()) as ctx:
        _raises(ErrorCode.INVALID_ARGUMENT, "attr kind must be one of", lambda: ctx.input_attr(0, "bogus"))
        _raises(ErrorCode.INVALID_ARGUMENT, "input index 2 >= input_num 2", lambda: ctx.input_attr(2))
        _raises(ErrorCode.INVALID_ARGUMENT, "output index 5 >= output_num 2", lambda: ctx.output_attr(5, "native"))
        _raises(ErrorCode.INVALID_ARGUMENT, "input index -1", lambda: ctx.input_attr(-1))
    with Context(dynamic_convnet()) as ctx:
        _raises(ErrorCode.INVALID_ARGUMENT, "input index 1 >= input_num 1", lambda: ctx.dynamic_range(1))
        _raises(ErrorCode.INVALID_ARGUMENT, "2 shapes given, the model has 1 inputs",
                lambda: ctx.set_input_shapes([[1, 3, 8, 8], [1, 3, 8, 8]]))


def test_option_and_model_errors():
    _raises(ErrorCode.INVALID_ARGUMENT, "priority must be one of", lambda: Context(convnet(),
                                                                                   options=ContextOptions(priority="x")))
    _raises(ErrorCode.INVALID_MODEL, "not a model: dict", lambda: Context({"a": 1}))
    _raises(ErrorCode.INVALID_MODEL, "empty model", lambda: load_family(memoryview(b""), "rk3588"))


@pytest.mark.parametrize("value,words", [("nope", "list of shape sets"), ([], "one shape per input"),
                                         ([[[1, 3, 8, 8]], [[1, 3, 8, 8], [1, 5]]], "one shape per input"),
                                         ([[[1, 3, 0, 8]]], "non-positive")])
def test_dynamic_input_declarations(value, words):
    _raises(ErrorCode.INVALID_ARGUMENT, words, lambda: parse_shape_sets(value))


def _runs_like_the_reference_at(ctx: Context, shape: tuple[int, ...]) -> None:
    """Set the input shape, run an image of it, and compare with the float reference of the dynamic convnet."""
    x = image(shape)
    ctx.set_input_shapes([list(shape)])
    ctx.set_inputs([InputData(0, x, DType.FLOAT32, Layout.NCHW)])
    ctx.run()
    np.testing.assert_allclose(ctx.get_outputs()[0], reference(dynamic_convnet(), x)[0], atol=0.02)


def test_dynamic_input_given_to_the_context():
    with Context(dynamic_convnet(with_metadata=False), dynamic_input=[[[1, 3, 8, 8]], [[1, 3, 4, 4]]]) as ctx:
        assert ctx.family.dynamic and ctx.input_attr(0).dims == [1, 8, 8, 3]
        _runs_like_the_reference_at(ctx, (1, 3, 4, 4))
    _raises(ErrorCode.INVALID_ARGUMENT, "shape sets have 2 shapes, the model has 1 inputs",
            lambda: Context(dynamic_convnet(False), dynamic_input=[[[1, 3, 8, 8], [1, 3, 8, 8]]]))
    _raises(ErrorCode.INVALID_ARGUMENT, "dynamic shape",
            lambda: Context(dynamic_convnet(False)))                     # symbolic dims and no shape sets


def test_dynamic_input_on_a_static_onnx_frees_the_dims_it_varies():
    import onnx
    proto = onnx.load_from_string(dynamic_convnet(with_metadata=False))
    for vi, dims in ((proto.graph.input[0], (1, 3, 8, 8)), (proto.graph.output[0], (1, 4, 8, 8))):
        for d, v in zip(vi.type.tensor_type.shape.dim, dims):
            d.dim_value = v                                  # a static model, as most exported ONNX files are
    static = proto.SerializeToString()
    with Context(static, dynamic_input=[[[1, 3, 8, 8]], [[1, 3, 4, 6]]]) as ctx:
        _runs_like_the_reference_at(ctx, (1, 3, 4, 6))
    _raises(ErrorCode.INVALID_ARGUMENT, "has rank 3, the input has rank 4",
            lambda: Context(static, dynamic_input=[[[1, 3, 8, 8]], [[1, 3, 4]]]))


def test_int8_dynamic_models_need_a_calibration_set():
    from npurt.model.options import CompileOptions
    from npurt.runtime.loader import _family_from_onnx
    _raises(ErrorCode.INVALID_ARGUMENT, "calibration dataset", lambda: _family_from_onnx(
        dynamic_convnet(False), "rk3588", [[(1, 3, 8, 8)]], CompileOptions(precision="int8")))


@pytest.mark.parametrize("edit,words", [
    ({"fmt": Layout.NC1HWC2, "type": DType.FLOAT32}, "NC1HWC2 input needs pass_through=1"),
    ({"fmt": Layout.UNDEFINED, "type": DType.FLOAT32}, "tensor layout : UNDEFINED not supported"),
    ({"fmt": Layout.NCHW, "pass_through": 1}, "tensor layout must be: NHWC, but is: NCHW (pass_through == 1)"),
    ({"type": DType.INT4}, "tensor type : INT4 not supported for input"),
])
def test_input_format_errors(edit, words):
    with Context(convnet()) as ctx:
        buf = ctx.device.alloc(1 << 14)
        try:
            _raises(ErrorCode.INVALID_ARGUMENT, words,
                    lambda: ctx.bind(MemRef(buf), dataclasses.replace(ctx.input_attr(0, "native"), **edit)))
            assert ctx.io_path is None and ctx.bindings() == ([None], [None])
        finally:
            buf.free()


def test_output_format_errors():
    with Context(two_io()) as ctx:
        buf = ctx.device.alloc(1 << 14)
        try:
            v = ctx.output_attr(1, "native")
            _raises(ErrorCode.INVALID_ARGUMENT, "tensor layout must be: UNDEFINED, but is: NHWC",
                    lambda: ctx.bind(MemRef(buf), dataclasses.replace(v, fmt=Layout.NHWC, type=DType.FLOAT32)))
            _raises(ErrorCode.INVALID_ARGUMENT, "tensor layout must be: UNDEFINED, but is: NC1HWC2",
                    lambda: ctx.bind(MemRef(buf), dataclasses.replace(v, fmt=Layout.NC1HWC2, type=DType.FLOAT32)))
        finally:
            buf.free()


def test_general_path_errors():
    with Context(convnet(), options=ContextOptions(internal_outside=True)) as ctx:
        ctx.set_inputs([InputData(0, image(), DType.FLOAT32, Layout.NCHW)])
        _raises(ErrorCode.INVALID_ARGUMENT, "you must call rknn_set_internal_mem before rknn_run", ctx.run)
    with Context(convnet()) as ctx:
        _raises(ErrorCode.INVALID_INPUT, "input size -1 is negative",
                lambda: ctx.set_inputs([InputData(0, image(), DType.FLOAT32, Layout.NCHW, size=-1)]))
        ctx.set_inputs([InputData(0, image(), DType.FLOAT32, Layout.NCHW)])
        ctx.run()
        _raises(ErrorCode.INVALID_OUTPUT, "output index 1 >= output_num 1", lambda: ctx.get_outputs(True, [1]))
        assert ctx.get_outputs(True, [0])[0].shape == (1, 4, 8, 10)       # still usable


def test_general_pass_through_must_be_the_native_type():
    with Context(convnet()) as ctx:                                  # fp16 model: native input FLOAT16 NHWC
        native = ctx.compiled.native_input_attrs[0]
        f32 = np.ones(native.size_with_stride, np.float32)            # enough bytes, wrong type (was: NaNs)
        _raises(ErrorCode.INVALID_INPUT, "tensor type : FLOAT32 not supported in pass_through == 1",
                lambda: ctx.set_inputs([InputData(0, f32, DType.FLOAT32, pass_through=True)]))
        _raises(ErrorCode.INVALID_INPUT, "request FLOAT16",
                lambda: ctx.set_inputs([InputData(0, f32.view(np.uint8), DType.UINT8, pass_through=True)]))
        _raises(ErrorCode.INVALID_INPUT, "input(x) tensor not attached", ctx.run)  # nothing was set
        ctx.set_inputs([InputData(0, np.zeros(native.size_with_stride // 2, np.float16), pass_through=True)])
        ctx.run()                                                     # dtype None + pass_through: native bytes


def test_general_inputs_warn_when_fewer_than_the_model_has():
    msgs = []
    with Context(two_io(), log=lambda lvl, m: msgs.append((lvl, m))) as ctx:
        ctx.set_inputs([InputData(0, image((1, 3, 6, 6)), DType.FLOAT32, Layout.NCHW)])
        assert msgs and msgs[0][0] == "warning" and "1 inputs given, the model has 2" in msgs[0][1]
        _raises(ErrorCode.INVALID_INPUT, "input(z) is not set", ctx.run)


def test_destroy_while_another_context_shares_the_weights():
    a = Context(convnet())
    b = Context(convnet(), share_weights_with=a)
    store = a.weight_store
    a.destroy()
    assert store.holders == 1 and store.buffer is not None and store.buffer.alive
    b.set_inputs([InputData(0, image(), DType.FLOAT32, Layout.NCHW)])
    b.run()
    b.destroy()
    assert store.holders == 0 and store.buffer is None
    _raises(ErrorCode.INVALID_CONTEXT, "has been destroyed", lambda: Context(convnet(), share_weights_with=a))
