"""Custom operators through the mirror: the vendor's CPU custom-op demo flow written in Python (rknn_init ->
rknn_register_custom_ops -> inputs_set -> run -> outputs_get), callbacks and their tensors in device memory,
op attributes, RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE, teardown, and every registration error."""
from __future__ import annotations

import ctypes

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from npurt.rknn import constants as c
from npurt.rknn.api import (addr_view, output_view, rknn_destroy, rknn_destroy_mem, rknn_init, rknn_inputs_set,
                            rknn_outputs_get, rknn_outputs_release, rknn_query, rknn_run)
from npurt.rknn.api_common import get_ctx
from npurt.rknn.custom_op import rknn_custom_op_get_op_attr, rknn_register_custom_ops
from npurt.rknn.structs import (RKNN_CUSTOM_OP_CALLBACK, RKNN_CUSTOM_OP_DESTROY_CALLBACK, rknn_context,
                                rknn_custom_op, rknn_custom_op_attr, rknn_input, rknn_mem_size, rknn_output,
                                rknn_tensor_mem)

from helpers.custom_op import SHAPE, compiled, model, reference

pytestmark = pytest.mark.usefixtures("no_leaks")   # every fd, device buffer, byte and handle given back


@pytest.fixture(autouse=True)
def _board(monkeypatch):
    monkeypatch.setenv("NPURT_SOC", "rk3588")


def init(data: bytes) -> rknn_context:
    ctx = rknn_context()
    assert rknn_init(ctx, data, len(data), 0, None) == c.RKNN_SUCC
    return ctx


def run(ctx, x: np.ndarray) -> tuple[int, np.ndarray | None]:
    """The general API: rknn_inputs_set (FLOAT32 NCHW) -> rknn_run -> rknn_outputs_get (float) -> release."""
    inp = rknn_input(index=0, buf=x.ctypes.data, size=x.nbytes, type=c.RKNN_TENSOR_FLOAT32, fmt=c.RKNN_TENSOR_NCHW)
    assert rknn_inputs_set(ctx, 1, [inp]) == c.RKNN_SUCC
    ret = rknn_run(ctx, None)
    if ret != c.RKNN_SUCC:
        return ret, None
    out = (rknn_output * 1)()
    out[0].index, out[0].want_float = 0, 1
    assert rknn_outputs_get(ctx, 1, out, None) == c.RKNN_SUCC
    y = output_view(out[0]).copy().reshape(SHAPE)
    assert rknn_outputs_release(ctx, 1, out) == c.RKNN_SUCC
    return ret, y


def tensor_view(t) -> np.ndarray:
    """(float*)(t.mem.virt_addr + t.mem.offset), t.attr.n_elems floats — what the C demo reads and writes."""
    return addr_view(t.mem.virt_addr + t.mem.offset, t.attr.size, np.float32)


def cpu_op(op_type: str = "cstSigmoid", **callbacks) -> tuple:
    """A CPU rknn_custom_op array of one, with Python callbacks (kept alive in the returned tuple)."""
    ops = (rknn_custom_op * 1)()
    ops[0].op_type = op_type.encode()
    ops[0].version = 1
    ops[0].target = c.RKNN_TARGET_TYPE_CPU
    keep = []
    for name, fn in callbacks.items():
        ptr = (RKNN_CUSTOM_OP_DESTROY_CALLBACK if name == "destroy" else RKNN_CUSTOM_OP_CALLBACK)(fn)
        keep.append(ptr)
        setattr(ops[0], name, ptr)
    return ops, keep


def sigmoid_compute(op_ctx, inputs, n_inputs, outputs, n_outputs):
    x, y = tensor_view(inputs[0]), tensor_view(outputs[0])
    y[:] = 1 / (1 + np.exp(-x))
    return 0


def _input() -> np.ndarray:
    """The model's input, drawn from its own seeded generator on every call (the same values each time)."""
    return np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)


def test_vendor_cpu_custom_op_demo_flow():
    ctx = init(model())
    ops, keep = cpu_op(compute=sigmoid_compute)
    assert rknn_register_custom_ops(ctx, ops, 1) == c.RKNN_SUCC
    for _ in range(2):
        ret, y = run(ctx, _input())
        assert ret == c.RKNN_SUCC
        np.testing.assert_allclose(y, reference(_input()), atol=2e-3)
    assert rknn_destroy(ctx) == c.RKNN_SUCC


def dma_total(ctx) -> int:
    m = rknn_mem_size()
    assert rknn_query(ctx, c.RKNN_QUERY_MEM_SIZE, m, ctypes.sizeof(m)) == c.RKNN_SUCC
    return m.total_dma_allocated_size


def test_callback_tensors_live_in_context_owned_device_memory(capfd):
    """Each tensor's mem is a DDR buffer of the device, owned by the context (its DMA total grows by them at
    registration), not rknn_create_mem memory: rknn_destroy_mem refuses it and it stays usable."""
    seen = {}

    def compute(op_ctx, inputs, n_inputs, outputs, n_outputs):
        seen["n"] = (n_inputs, n_outputs)
        for kind, t in (("in", inputs[0]), ("out", outputs[0])):
            buf, offset = device.lookup_host(t.mem.virt_addr, t.mem.size)
            seen[kind] = (list(t.attr.dims[:t.attr.n_dims]), t.attr.fmt, t.attr.type, t.attr.size,
                          buf.placement, buf.owner, t.attr.name, ctypes.addressof(t.mem), buf.capacity)
            assert t.mem.fd == buf.fd and t.mem.phys_addr and t.mem.offset == offset == 0
            assert t.mem.size == t.attr.size and t.mem.flags == c.RKNN_TENSOR_MEMORY_FLAGS_ALLOC_INSIDE
        np.testing.assert_allclose(tensor_view(inputs[0]).reshape(SHAPE), np.maximum(_input(), 0), atol=2e-3)
        return sigmoid_compute(op_ctx, inputs, n_inputs, outputs, n_outputs)

    ctx = init(model())
    device = get_ctx(ctx).device
    before = dma_total(ctx)
    ops, keep = cpu_op(compute=compute)
    assert rknn_register_custom_ops(ctx, ops, 1) == c.RKNN_SUCC
    grown = dma_total(ctx) - before
    assert run(ctx, _input())[0] == c.RKNN_SUCC
    assert seen["n"] == (1, 1)
    assert seen["in"][:5] == ([1, 3, 4, 4], c.RKNN_TENSOR_NCHW, c.RKNN_TENSOR_FLOAT32, 4 * 48, "ddr")
    assert seen["in"][5] == seen["out"][5] == get_ctx(ctx).context.name
    assert seen["in"][6] == b"r" and seen["out"][6] == b"m"
    assert grown == seen["in"][8] + seen["out"][8]
    capfd.readouterr()
    staged = rknn_tensor_mem.from_address(seen["in"][7])
    assert rknn_destroy_mem(ctx, staged) == c.RKNN_ERR_PARAM_INVALID               # not the caller's to free
    assert "was not created by rknn_create_mem" in capfd.readouterr().err
    ret, y = run(ctx, _input())                                          # the runtime's memory is still there
    assert ret == c.RKNN_SUCC
    np.testing.assert_allclose(y, reference(_input()), atol=2e-3)
    assert rknn_destroy(ctx) == c.RKNN_SUCC


def test_lifecycle_priv_data_and_op_attrs():
    calls = []
    attrs = {}

    def get(op_ctx, name):
        a = rknn_custom_op_attr()
        rknn_custom_op_get_op_attr(op_ctx, name, ctypes.byref(a))
        return a

    def init_cb(op_ctx, inputs, n_in, outputs, n_out):
        calls.append("init")
        op_ctx.contents.priv_data = 0xBEEF
        alpha, axis, mode, ks, missing = (get(op_ctx, n) for n in (b"alpha", b"axis", b"mode", b"ks", b"nope"))
        attrs["alpha"] = (alpha.dtype, alpha.n_elems, ctypes.cast(alpha.data, ctypes.POINTER(ctypes.c_float))[0])
        attrs["axis"] = (axis.dtype, axis.n_elems, ctypes.cast(axis.data, ctypes.POINTER(ctypes.c_int64))[0])
        attrs["mode"] = (mode.dtype, mode.n_elems, ctypes.string_at(mode.data, mode.n_elems))
        attrs["ks"] = (ks.dtype, list(ctypes.cast(ks.data, ctypes.POINTER(ctypes.c_int64))[:ks.n_elems]))
        attrs["nope"] = (missing.n_elems, missing.data)
        attrs["tensor"] = (n_in, n_out, list(inputs[0].attr.dims[:4]))
        return 0

    def prepare_cb(op_ctx, inputs, n_in, outputs, n_out):
        calls.append("prepare")
        assert op_ctx.contents.priv_data == 0xBEEF
        return 0

    def compute_cb(op_ctx, inputs, n_in, outputs, n_out):
        calls.append("compute")
        assert op_ctx.contents.target == c.RKNN_TARGET_TYPE_CPU
        return sigmoid_compute(op_ctx, inputs, n_in, outputs, n_out)

    def destroy_cb(op_ctx):
        calls.append(("destroy", op_ctx.contents.priv_data))
        return 0

    ctx = init(model())
    ops, keep = cpu_op(init=init_cb, prepare=prepare_cb, compute=compute_cb, destroy=destroy_cb)
    assert rknn_register_custom_ops(ctx, ops, 1) == c.RKNN_SUCC
    assert calls == ["init"]                                            # init at registration
    assert run(ctx, _input())[0] == c.RKNN_SUCC
    assert run(ctx, _input())[0] == c.RKNN_SUCC
    assert calls == ["init", "prepare", "compute", "prepare", "compute"]
    assert attrs["alpha"] == (c.RKNN_TENSOR_FLOAT32, 1, 2.0)
    assert attrs["axis"] == (c.RKNN_TENSOR_INT64, 1, 1)
    assert attrs["mode"] == (c.RKNN_TENSOR_UINT8, 4, b"fast")
    assert attrs["ks"] == (c.RKNN_TENSOR_INT64, [3, 3])
    assert attrs["nope"] == (0, None)
    assert attrs["tensor"] == (1, 1, [1, 3, 4, 4])
    assert rknn_destroy(ctx) == c.RKNN_SUCC
    assert calls[-1] == ("destroy", 0xBEEF)                              # once, with the callbacks' priv_data


def test_unregistered_custom_op_fails_the_run(capfd):
    ctx = init(model())
    capfd.readouterr()
    ret, _ = run(ctx, _input())
    assert ret == c.RKNN_ERR_FAIL
    err = capfd.readouterr().err
    assert "E RKNN:" in err and "cstSigmoid" in err and "rknn_register_custom_ops" in err
    assert rknn_destroy(ctx) == c.RKNN_SUCC


def test_custom_op_overrides_a_builtin_and_skip_keeps_it():
    data = model("Sigmoid", domain="")                                  # a standard Sigmoid node
    doubled = lambda o, i, ni, out, no: (tensor_view(out[0]).__setitem__(slice(None), 2 * tensor_view(i[0])), 0)[1]
    ctx = init(data)
    ops, keep = cpu_op("Sigmoid", compute=doubled)
    assert rknn_register_custom_ops(ctx, ops, 1) == c.RKNN_SUCC
    ret, y = run(ctx, _input())
    np.testing.assert_allclose(y, 2 * np.maximum(_input(), 0) + _input(), atol=3e-3)  # the custom op ran
    assert rknn_destroy(ctx) == c.RKNN_SUCC

    skip = lambda o, i, ni, out, no: c.RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE
    ctx = init(data)
    ops, keep = cpu_op("Sigmoid", init=skip, compute=doubled)
    assert rknn_register_custom_ops(ctx, ops, 1) == c.RKNN_SUCC
    ret, y = run(ctx, _input())
    np.testing.assert_allclose(y, reference(_input()), atol=2e-3)             # the built-in Sigmoid ran
    assert rknn_destroy(ctx) == c.RKNN_SUCC


def test_skip_without_builtin_is_not_supported(capfd):
    ctx = init(model())
    ops, keep = cpu_op(init=lambda o, i, ni, out, no: c.RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE,
                       compute=sigmoid_compute)
    assert rknn_register_custom_ops(ctx, ops, 1) == c.RKNN_SUCC
    capfd.readouterr()
    assert run(ctx, _input())[0] == c.RKNN_ERR_FAIL
    assert "no built-in cstSigmoid" in capfd.readouterr().err
    assert rknn_destroy(ctx) == c.RKNN_SUCC


@pytest.mark.parametrize("behaviour,words", [
    ("return", "compute returned -1"),
    ("raise", "compute raised ZeroDivisionError"),
])
def test_failing_compute_fails_the_run(capfd, behaviour, words):
    def compute(op_ctx, inputs, n_in, outputs, n_out):
        if behaviour == "raise":
            return 1 // 0
        return -1

    ctx = init(model())
    ops, keep = cpu_op(compute=compute)
    assert rknn_register_custom_ops(ctx, ops, 1) == c.RKNN_SUCC
    capfd.readouterr()
    assert run(ctx, _input())[0] == c.RKNN_ERR_FAIL
    err = capfd.readouterr().err
    assert "E RKNN:" in err and words in err and "cst0" in err
    assert rknn_destroy(ctx) == c.RKNN_SUCC


def test_registration_errors(capfd):
    ctx = init(model())
    try:
        capfd.readouterr()

        def expect(status, words, *args):
            assert rknn_register_custom_ops(*args) == status
            err = capfd.readouterr().err
            assert err.startswith("E RKNN:") and "rknn_register_custom_ops" in err and words in err, err

        ops, keep = cpu_op(compute=sigmoid_compute)
        gpu, keep2 = cpu_op(compute=sigmoid_compute)
        gpu[0].target = c.RKNN_TARGET_TYPE_GPU
        expect(c.RKNN_ERR_FAIL, "GPU (OpenCL) custom ops are not supported", ctx, gpu, 1)
        bad, keep3 = cpu_op(compute=sigmoid_compute)
        bad[0].target = 7
        expect(c.RKNN_ERR_PARAM_INVALID, "invalid target 7", ctx, bad, 1)
        nocompute, keep4 = cpu_op()
        expect(c.RKNN_ERR_PARAM_INVALID, "compute callback is required", ctx, nocompute, 1)
        noname, keep5 = cpu_op("", compute=sigmoid_compute)
        expect(c.RKNN_ERR_PARAM_INVALID, "op_type is empty", ctx, noname, 1)
        twice = (rknn_custom_op * 2)(ops[0], ops[0])
        expect(c.RKNN_ERR_PARAM_INVALID, "already registered", ctx, twice, 2)
        expect(c.RKNN_ERR_PARAM_INVALID, "custom_op_num", ctx, ops, 0)
        expect(c.RKNN_ERR_PARAM_INVALID, "n=2", ctx, ops, 2)
        expect(c.RKNN_ERR_PARAM_INVALID, "NULL", ctx, None, 1)
        expect(c.RKNN_ERR_CTX_INVALID, "invalid context", rknn_context(12345), ops, 1)
        failing, keep6 = cpu_op(init=lambda o, i, ni, out, no: -3, compute=sigmoid_compute)
        expect(c.RKNN_ERR_FAIL, "init returned -3", ctx, failing, 1)
        assert rknn_register_custom_ops(ctx, ops, 1) == c.RKNN_SUCC     # nothing above took effect
        expect(c.RKNN_ERR_PARAM_INVALID, "already registered", ctx, ops, 1)
        assert run(ctx, _input())[0] == c.RKNN_SUCC
        other, keep7 = cpu_op("cstOther", compute=sigmoid_compute)
        expect(c.RKNN_ERR_PARAM_INVALID, "before the first rknn_run", ctx, other, 1)
    finally:
        assert rknn_destroy(ctx) == c.RKNN_SUCC
    ops, keep = cpu_op(compute=sigmoid_compute)
    expect(c.RKNN_ERR_CTX_INVALID, "invalid context", ctx, ops, 1)      # destroyed


def test_unknown_type_only_warns(monkeypatch, capfd):
    monkeypatch.setenv("RKNN_LOG_LEVEL", "2")
    ctx = init(model())
    ops, keep = cpu_op("cstNotInModel", compute=sigmoid_compute)
    capfd.readouterr()
    assert rknn_register_custom_ops(ctx, ops, 1) == c.RKNN_SUCC
    assert "W RKNN:" in capfd.readouterr().err
    assert rknn_destroy(ctx) == c.RKNN_SUCC


def test_not_supported_on_rv1106(monkeypatch, capfd):
    monkeypatch.setenv("NPURT_SOC", "rv1106")
    ctx = init(model())
    ops, keep = cpu_op(compute=sigmoid_compute)
    capfd.readouterr()
    assert rknn_register_custom_ops(ctx, ops, 1) == c.RKNN_ERR_FAIL
    assert "not supported on rv1106" in capfd.readouterr().err
    assert rknn_destroy(ctx) == c.RKNN_SUCC


def test_custom_op_needs_declared_output_shapes(capfd):
    data = model(declare=False)
    ctx = rknn_context()
    capfd.readouterr()
    assert rknn_init(ctx, data, len(data), 0, None) != c.RKNN_SUCC
    assert "needs its output shapes declared" in capfd.readouterr().err


def test_get_op_attr_with_a_bad_context(capfd):
    a = rknn_custom_op_attr(n_elems=7)
    from npurt.rknn.structs import rknn_custom_op_context
    capfd.readouterr()
    rknn_custom_op_get_op_attr(rknn_custom_op_context(internal_ctx=1), b"alpha", a)
    assert "E RKNN:" in capfd.readouterr().err and a.n_elems == 7      # left alone


def test_compiled_model_keeps_the_custom_domain(tmp_path):
    import npurt
    cm = npurt.compile(onnx.load_from_string(model()), progress=False)
    again = npurt.load_compiled(cm.to_bytes()) if hasattr(npurt, "load_compiled") else None
    nodes = [n for n in (again or cm).graph.nodes if n.op_type == "cstSigmoid"]
    assert nodes and nodes[0].domain == "rknn.custom"


def test_registration_keeps_python_callbacks_alive():
    """A C port drops its rknn_custom_op after registering (C function pointers are static); the runtime keeps the
    Python callbacks alive, even if the caller re-assigns the field."""
    import gc
    ctx = init(model())
    op = rknn_custom_op(op_type=b"cstSigmoid", version=1, target=c.RKNN_TARGET_TYPE_CPU)
    op.compute = RKNN_CUSTOM_OP_CALLBACK(lambda *args: sigmoid_compute(*args))
    assert rknn_register_custom_ops(ctx, op, 1) == c.RKNN_SUCC
    op.compute = RKNN_CUSTOM_OP_CALLBACK(lambda *args: -1)
    del op
    gc.collect()
    ret, y = run(ctx, _input())
    assert ret == c.RKNN_SUCC
    np.testing.assert_allclose(y, reference(_input()), atol=2e-3)
    assert rknn_destroy(ctx) == c.RKNN_SUCC


def test_zero_copy_flow_with_a_custom_op():
    """rknn_create_mem / rknn_set_io_mem (FLOAT32 NCHW input and output) around a model with a custom op."""
    from npurt.rknn.api import mem_view, rknn_create_mem, rknn_destroy_mem, rknn_query, rknn_set_io_mem
    from npurt.rknn.structs import rknn_tensor_attr
    ctx = init(model())
    ops, keep = cpu_op(compute=sigmoid_compute)
    assert rknn_register_custom_ops(ctx, ops, 1) == c.RKNN_SUCC
    attrs = []
    for cmd in (c.RKNN_QUERY_INPUT_ATTR, c.RKNN_QUERY_OUTPUT_ATTR):
        a = rknn_tensor_attr(index=0)
        assert rknn_query(ctx, cmd, a, ctypes.sizeof(a)) == c.RKNN_SUCC
        a.type, a.fmt = c.RKNN_TENSOR_FLOAT32, c.RKNN_TENSOR_NCHW
        attrs.append(a)
    mems = [rknn_create_mem(ctx, a.n_elems * 4) for a in attrs]
    for mem, a in zip(mems, attrs):
        assert rknn_set_io_mem(ctx, mem, a) == c.RKNN_SUCC
    mem_view(mems[0], np.float32)[:] = _input().reshape(-1)
    assert rknn_run(ctx, None) == c.RKNN_SUCC
    np.testing.assert_allclose(mem_view(mems[1], np.float32).reshape(SHAPE), reference(_input()), atol=2e-3)
    for mem in mems:
        assert rknn_destroy_mem(ctx, mem) == c.RKNN_SUCC
    assert rknn_destroy(ctx) == c.RKNN_SUCC


def test_weights_several_outputs_and_integer_types():
    """A 2-D custom op with a weight input and two outputs (float32 and int64): every tensor reaches the callback
    (weights too), fmt UNDEFINED for non-4-D tensors, integer outputs keep their type."""
    from onnx import numpy_helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])
    idx = helper.make_tensor_value_info("i", TensorProto.INT64, [2])
    w = numpy_helper.from_array(np.arange(1, 6, dtype=np.float32), "w")
    g = helper.make_graph([helper.make_node("cstScaleArgmax", ["x", "w"], ["y", "i"], name="c0", domain="my.ops")],
                          "g", [x], [y, idx], initializer=[w])
    data = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13),
                                               helper.make_opsetid("my.ops", 1)]).SerializeToString()
    seen = {}

    def compute(op_ctx, ins, n_in, outs, n_out):
        seen["types"] = ([ins[k].attr.type for k in range(n_in)], [outs[k].attr.type for k in range(n_out)])
        seen["fmt"] = ins[0].attr.fmt
        xv = addr_view(ins[0].mem.virt_addr, ins[0].attr.size, np.float32).reshape(2, 5)
        wv = addr_view(ins[1].mem.virt_addr, ins[1].attr.size, np.float32)
        yv = addr_view(outs[0].mem.virt_addr, outs[0].attr.size, np.float32).reshape(2, 5)
        iv = addr_view(outs[1].mem.virt_addr, outs[1].attr.size, np.int64)
        yv[:] = xv * wv
        iv[:] = np.argmax(yv, axis=1)
        return 0

    ctx = init(data)
    ops, keep = cpu_op("cstScaleArgmax", compute=compute)
    assert rknn_register_custom_ops(ctx, ops, 1) == c.RKNN_SUCC
    xv = np.random.default_rng(1).standard_normal((2, 5)).astype(np.float32)
    inp = rknn_input(index=0, buf=xv.ctypes.data, size=xv.nbytes, type=c.RKNN_TENSOR_FLOAT32,
                     fmt=c.RKNN_TENSOR_UNDEFINED)
    assert rknn_inputs_set(ctx, 1, [inp]) == c.RKNN_SUCC
    assert rknn_run(ctx, None) == c.RKNN_SUCC
    outs = (rknn_output * 2)()
    for k in range(2):
        outs[k].index, outs[k].want_float = k, 1
    assert rknn_outputs_get(ctx, 2, outs, None) == c.RKNN_SUCC
    want = xv * np.arange(1, 6, dtype=np.float32)
    np.testing.assert_allclose(output_view(outs[0]).reshape(2, 5), want, atol=1e-2)
    np.testing.assert_array_equal(output_view(outs[1], np.int64), np.argmax(want, axis=1))
    assert rknn_outputs_release(ctx, 2, outs) == c.RKNN_SUCC
    assert seen["types"] == ([c.RKNN_TENSOR_FLOAT32] * 2, [c.RKNN_TENSOR_FLOAT32, c.RKNN_TENSOR_INT64])
    assert seen["fmt"] == c.RKNN_TENSOR_UNDEFINED
    assert rknn_destroy(ctx) == c.RKNN_SUCC


# --- int8 models with custom ops: the op registered with the compiler for calibration ------------------------------
def test_int8_model_needs_the_ops_compile_time_implementation():
    import npurt
    from npurt.errors import NpuError
    calib = [np.random.default_rng(s).standard_normal(SHAPE).astype(np.float32) for s in range(4)]
    with pytest.raises(NpuError) as e:
        npurt.compile(model(), quantize=calib, progress=False)
    assert "cstSigmoid" in str(e.value)
    with pytest.raises(NpuError) as e:                       # a result that does not fit the node is named
        npurt.compile(model(), quantize=calib, progress=False, custom_ops={"cstSigmoid": lambda ins, attrs: []})
    assert "cstSigmoid" in str(e.value) and "0 outputs" in str(e.value)


def demo_compute(op_ctx, inputs, n_inputs, outputs, n_outputs):
    """The vendor CPU demo's compute: reads and writes n_elems float32 values, never looks at attr.type."""
    n = inputs[0].attr.n_elems
    x = addr_view(inputs[0].mem.virt_addr + inputs[0].mem.offset, n * 4, np.float32)
    y = addr_view(outputs[0].mem.virt_addr + outputs[0].mem.offset, n * 4, np.float32)
    y[:] = 1 / (1 + np.exp(-x))
    return 0


@pytest.mark.parametrize("precision", ["int8", "fp16"])
def test_cpu_custom_op_gets_float32_tensors_whatever_the_model_precision(precision):
    """As on the board: the callback's tensors are FLOAT32 (n_elems * 4 bytes) in int8 and fp16 models alike, so a
    callback that ignores attr.type (the vendor demo's) computes right; its inputs are the dequantised (int8) or
    widened (fp16) activations, and what it writes is requantised / cast into the model's own tensor."""
    cm = compiled(precision)
    seen = []

    def compute(op_ctx, inputs, n_inputs, outputs, n_outputs):
        for t in (inputs[0], outputs[0]):
            a = t.attr
            seen.append((a.type, a.qnt_type, a.n_elems, a.size, a.size_with_stride, a.fmt, t.mem.size, a.zp,
                         a.scale))
        ret = demo_compute(op_ctx, inputs, n_inputs, outputs, n_outputs)
        n = inputs[0].attr.n_elems
        seen.append((tensor_view(inputs[0])[:n].copy(), tensor_view(outputs[0])[:n].copy()))
        return ret

    ctx = init(cm.to_bytes())
    ops, keep = cpu_op(compute=compute)
    assert rknn_register_custom_ops(ctx, ops, 1) == c.RKNN_SUCC
    ret, y = run(ctx, _input())
    assert ret == c.RKNN_SUCC
    float32 = (c.RKNN_TENSOR_FLOAT32, c.RKNN_TENSOR_QNT_NONE, 48, 4 * 48, 4 * 48, c.RKNN_TENSOR_NCHW, 4 * 48, 0, 1.0)
    assert seen[0] == seen[1] == float32
    x_in, y_out = seen[2]
    np.testing.assert_array_equal(y_out, 1 / (1 + np.exp(-x_in)))
    m = get_ctx(ctx).context.executor.read_tensor("m").reshape(-1)      # the op's output as the model stores it
    want = reference(_input())
    if precision == "int8":
        r, st = cm.storage["r"], cm.storage["m"]
        k = x_in / np.float32(r.scale) + r.zp                              # inputs: dequantised int8 values of r
        assert np.abs(k - np.rint(k)).max() < 1e-3 and k.min() >= -128.5 and k.max() <= 127.5
        np.testing.assert_allclose(x_in, np.maximum(_input(), 0).reshape(-1), atol=2 * r.scale)
        lo, hi = (-128 - st.zp) * st.scale, (127 - st.zp) * st.scale        # outputs: requantised to m's grid
        assert np.abs(m - np.clip(y_out, lo, hi)).max() <= st.scale / 2 * (1 + 1e-4)
        assert np.abs(y - want).max() < 0.05 * np.abs(want).max()          # int8 accuracy end to end
    else:
        np.testing.assert_array_equal(x_in, x_in.astype(np.float16).astype(np.float32))   # fp16 values, widened
        np.testing.assert_array_equal(m, y_out.astype(np.float16).astype(np.float32))      # narrowed back
        np.testing.assert_allclose(y, want, atol=2e-3)
    assert rknn_destroy(ctx) == c.RKNN_SUCC
