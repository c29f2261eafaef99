"""Every documented matmul error: vendor status, an `E RKNN:` line, and nothing else changed."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from npurt.rknn import constants as c
from npurt.rknn import handles
from npurt.rknn.matmul import (rknn_B_normal_layout_to_native_layout, rknn_matmul_create,
                               rknn_matmul_create_dynamic_shape, rknn_matmul_destroy, rknn_matmul_get_quant_params,
                               rknn_matmul_run, rknn_matmul_set_core_mask, rknn_matmul_set_dynamic_shape,
                               rknn_matmul_set_io_mem, rknn_matmul_set_quant_params)
from npurt.rknn.structs import (rknn_matmul_ctx, rknn_matmul_info, rknn_matmul_io_attr, rknn_matmul_shape,
                                rknn_quant_params)
from helpers.matmul import quant_params, rknn_create_mem, rknn_destroy_mem

PARAM, CTX, FAIL = c.RKNN_ERR_PARAM_INVALID, c.RKNN_ERR_CTX_INVALID, c.RKNN_ERR_FAIL
I8_I32, F16_F32 = c.RKNN_INT8_MM_INT8_TO_INT32, c.RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32


pytestmark = pytest.mark.usefixtures("no_leaks")   # every fd, device buffer, byte and handle given back


@pytest.fixture(autouse=True)
def _board(monkeypatch):
    monkeypatch.setenv("NPURT_SOC", "rk3588")


def _create(**fields):
    ctx, io = rknn_matmul_ctx(), rknn_matmul_io_attr()
    ret = rknn_matmul_create(ctx, rknn_matmul_info(**fields), io)
    return ret, ctx, io


def _expect_error(capfd, ret, status, *words):
    assert ret == status
    err = capfd.readouterr().err
    assert err.startswith("E RKNN: ["), err
    for w in words:
        assert w in err, err


@pytest.mark.parametrize("fields,words", [
    (dict(M=4, K=64, N=32, type=0), ["invalid matmul type: 0"]),
    (dict(M=4, K=64, N=32, type=13), ["invalid matmul type: 13"]),
    (dict(M=4, K=64, N=32, type=99), ["invalid matmul type"]),
    (dict(M=4, K=64, N=32, type=c.RKNN_FLOAT16_MM_INT4_TO_FLOAT32), ["not supported on rk3588"]),
    (dict(M=0, K=64, N=32, type=I8_I32), ["M = 0"]),
    (dict(M=4, K=-32, N=32, type=I8_I32), ["K = -32"]),
    (dict(M=4, K=48, N=32, type=I8_I32), ["K = 48 must be aligned with 32"]),
    (dict(M=4, K=64, N=48, type=I8_I32), ["N = 48 must be aligned with 32"]),
    (dict(M=4, K=64, N=16, type=F16_F32), []),                       # fp16 N tile is 16 on rk3588: fine
    (dict(M=4, K=64, N=8, type=F16_F32), ["N = 8 must be aligned with 16"]),
    (dict(M=4, K=64, N=64, type=c.RKNN_INT4_MM_INT4_TO_INT16), []),
    (dict(M=4, K=64, N=32, type=c.RKNN_INT4_MM_INT4_TO_INT16), ["N = 32 must be aligned with 64"]),
    (dict(M=4, K=64, N=32, type=I8_I32, B_layout=3), ["invalid B_layout"]),
    (dict(M=4, K=64, N=32, type=I8_I32, AC_layout=2), ["invalid AC_layout"]),
    (dict(M=4, K=64, N=32, type=I8_I32, AC_quant_type=1), ["AC_quant_type"]),
    (dict(M=4, K=64, N=32, type=I8_I32, B_quant_type=6), ["invalid B_quant_type"]),
    (dict(M=4, K=64, N=32, type=F16_F32, B_quant_type=2), ["needs an integer B"]),
    (dict(M=4, K=64, N=32, type=I8_I32, B_quant_type=4, group_size=32), ["per-group quantization needs a float"]),
    (dict(M=4, K=64, N=32, type=c.RKNN_INT8_MM_INT8_TO_FLOAT32, B_quant_type=4, group_size=0), ["group_size"]),
    (dict(M=4, K=64, N=32, type=c.RKNN_INT8_MM_INT8_TO_FLOAT32, B_quant_type=4, group_size=48), ["group_size"]),
    (dict(M=4, K=64, N=32, type=I8_I32, iommu_domain_id=-1), ["iommu_domain_id"]),
])
def test_create_rejects_bad_info(capfd, fields, words):
    capfd.readouterr()
    ret, ctx, io = _create(**fields)
    if not words:
        assert ret == 0
        assert rknn_matmul_destroy(ctx) == 0
        return
    _expect_error(capfd, ret, PARAM, "rknn_matmul_create", *words)
    assert ctx.value == 0 and io.A.size == 0 and io.A.n_dims == 0        # nothing filled


def test_single_core_soc_limits(monkeypatch, capfd):
    monkeypatch.setenv("NPURT_SOC", "rk3566")
    ret, ctx, io = _create(M=2, K=32, N=16, type=I8_I32, B_layout=c.RKNN_MM_LAYOUT_TP_NORM)
    _expect_error(capfd, ret, PARAM, "RKNN_MM_LAYOUT_TP_NORM is not supported on rk3566")
    ret, ctx, io = _create(M=2, K=10240 + 32, N=16, type=I8_I32)
    _expect_error(capfd, ret, PARAM, "exceeds the limit 10240")
    ret, ctx, io = _create(M=2, K=32, N=16, type=c.RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT16)
    _expect_error(capfd, ret, PARAM, "not supported on rk3566")
    ret, ctx, io = _create(M=2, K=16, N=8, type=F16_F32)             # fp16 tile 8x16 on rk3566
    assert ret == 0
    try:
        _expect_error(capfd, rknn_matmul_set_core_mask(ctx, c.RKNN_NPU_CORE_0), FAIL,
                      "rknn_matmul_set_core_mask", "not supported on rk3566")
    finally:
        assert rknn_matmul_destroy(ctx) == 0


@pytest.mark.parametrize("soc", ["rv1106", "rv1103", "rv1106b", "rk2118"])
def test_unsupported_soc(monkeypatch, capfd, soc):
    monkeypatch.setenv("NPURT_SOC", soc)
    capfd.readouterr()
    ret, ctx, io = _create(M=2, K=32, N=32, type=I8_I32)
    _expect_error(capfd, ret, FAIL, "rknn_matmul_create", f"not supported on {soc}")
    assert ctx.value == 0
    shapes = (rknn_matmul_shape * 1)(rknn_matmul_shape(1, 32, 32))
    ret = rknn_matmul_create_dynamic_shape(ctx, rknn_matmul_info(type=I8_I32), 1, shapes,
                                           (rknn_matmul_io_attr * 1)())
    _expect_error(capfd, ret, FAIL, "not supported")
    ret = rknn_B_normal_layout_to_native_layout(np.zeros(32 * 32, np.int8), np.zeros(32 * 32, np.int8), 32, 32,
                                                rknn_matmul_info(type=I8_I32))
    _expect_error(capfd, ret, FAIL, "not supported")
    _expect_error(capfd, rknn_matmul_run(ctx), FAIL, "not supported")


def test_null_arguments(capfd):
    capfd.readouterr()
    _expect_error(capfd, rknn_matmul_create(None, rknn_matmul_info(), rknn_matmul_io_attr()), PARAM, "NULL")
    _expect_error(capfd, rknn_matmul_create(rknn_matmul_ctx(), None, rknn_matmul_io_attr()), PARAM, "NULL")
    _expect_error(capfd, rknn_matmul_create(rknn_matmul_ctx(), rknn_matmul_info(M=1, K=32, N=32, type=I8_I32),
                                            "io"), PARAM, "io_attr")


def test_destroyed_context_is_invalid_everywhere(capfd):
    ret, ctx, io = _create(M=2, K=32, N=32, type=I8_I32)
    assert ret == 0
    mem = rknn_create_mem(ctx, io.A.size)
    assert rknn_matmul_destroy(ctx) == 0
    capfd.readouterr()
    p, keep = quant_params("A", 1.0)
    calls = [
        lambda: rknn_matmul_run(ctx),
        lambda: rknn_matmul_set_io_mem(ctx, mem, io.A),
        lambda: rknn_matmul_set_core_mask(ctx, c.RKNN_NPU_CORE_0),
        lambda: rknn_matmul_set_quant_params(ctx, p),
        lambda: rknn_matmul_get_quant_params(ctx, rknn_quant_params(), ctypes.c_float()),
        lambda: rknn_matmul_set_dynamic_shape(ctx, rknn_matmul_shape(2, 32, 32)),
        lambda: rknn_matmul_destroy(ctx),
        lambda: rknn_matmul_run(0),
        lambda: rknn_matmul_run("ctx"),
    ]
    for call in calls:
        _expect_error(capfd, call(), CTX, "invalid matmul context")
    with pytest.raises(Exception):                          # the mem went with its context
        handles.mems.lookup(mem)


def test_set_io_mem_errors(capfd):
    ret, ctx, io = _create(M=2, K=32, N=32, type=I8_I32)
    try:
        A = rknn_create_mem(ctx, io.A.size)
        small = rknn_create_mem(ctx, io.B.size - 1)
        capfd.readouterr()
        _expect_error(capfd, rknn_matmul_set_io_mem(ctx, small, io.B), PARAM, "B memory size must be >= 1024")
        _expect_error(capfd, rknn_matmul_set_io_mem(ctx, A, io.B), PARAM, "size must be >= 1024, but is: 64")
        bad = rknn_matmul_io_attr()
        ctypes.pointer(bad.A)[0] = io.A
        bad.A.name = b"X"
        _expect_error(capfd, rknn_matmul_set_io_mem(ctx, A, bad.A), PARAM, "unknown tensor name 'X'")
        bad.A.name = b"A"
        bad.A.dims[0] = 3
        _expect_error(capfd, rknn_matmul_set_io_mem(ctx, A, bad.A), PARAM, "does not match")
        _expect_error(capfd, rknn_matmul_set_io_mem(ctx, None, io.A), PARAM, "NULL")
        from npurt.rknn.structs import rknn_tensor_mem
        _expect_error(capfd, rknn_matmul_set_io_mem(ctx, rknn_tensor_mem(), io.A), PARAM, "not created")
        # run without every operand bound: the vendor's "not attached" errors
        _expect_error(capfd, rknn_matmul_run(ctx), c.RKNN_ERR_INPUT_INVALID, "A tensor not attached to memory")
        assert rknn_matmul_set_io_mem(ctx, A, io.A) == 0
        B = rknn_create_mem(ctx, io.B.size)
        assert rknn_matmul_set_io_mem(ctx, B, io.B) == 0
        _expect_error(capfd, rknn_matmul_run(ctx), c.RKNN_ERR_OUTPUT_INVALID, "C tensor not attached")
        C = rknn_create_mem(ctx, io.C.size)
        assert rknn_matmul_set_io_mem(ctx, C, io.C) == 0
        assert rknn_matmul_run(ctx) == 0
        assert rknn_destroy_mem(ctx, B) == 0                  # destroyed after binding
        _expect_error(capfd, rknn_matmul_run(ctx), c.RKNN_ERR_INPUT_INVALID, "B memory is no longer valid")
    finally:
        assert rknn_matmul_destroy(ctx) == 0


def test_quant_param_errors(capfd):
    ret, ctx, io = _create(M=2, K=64, N=32, type=c.RKNN_INT8_MM_INT8_TO_INT8,
                           B_quant_type=c.RKNN_QUANT_TYPE_PER_CHANNEL_SYM)
    try:
        capfd.readouterr()
        cases = [
            (quant_params("D", 1.0), "unknown tensor name 'D'"),
            (quant_params("A", [1.0, 2.0]), "A per-layer scale_len must be 1, but is 2"),
            (quant_params("B", 1.0), "B per-channel scale_len must be 32, but is 1"),
            (quant_params("B", np.ones(32), np.ones(32)), "zero points must be 0"),
            (quant_params("B", np.ones(32), np.zeros(5)), "zp_len must be 32"),
            (quant_params("C", -1.0), "finite and > 0"),
            (quant_params("C", 1.0, 200), "int8 range"),
        ]
        for (p, keep), words in cases:
            _expect_error(capfd, rknn_matmul_set_quant_params(ctx, p), PARAM, "rknn_matmul_set_quant_params", words)
        _expect_error(capfd, rknn_matmul_set_quant_params(ctx, rknn_quant_params(name=b"A")), PARAM, "scale_len")
        _expect_error(capfd, rknn_matmul_set_quant_params(ctx, None), PARAM, "NULL")
        _expect_error(capfd, rknn_matmul_get_quant_params(ctx, rknn_quant_params(), ctypes.c_float()), PARAM,
                      "only RKNN_INT8_MM_INT8_TO_INT32")
    finally:
        assert rknn_matmul_destroy(ctx) == 0
    ret, ctx, io = _create(M=2, K=64, N=32, type=F16_F32)
    try:
        p, keep = quant_params("A", 1.0)
        _expect_error(capfd, rknn_matmul_set_quant_params(ctx, p), PARAM, "takes no quantization parameters")
    finally:
        assert rknn_matmul_destroy(ctx) == 0


def test_dynamic_shape_errors(capfd):
    info = rknn_matmul_info(type=I8_I32)
    shapes = (rknn_matmul_shape * 2)(rknn_matmul_shape(1, 32, 32), rknn_matmul_shape(4, 48, 32))
    ios = (rknn_matmul_io_attr * 2)()
    ctx = rknn_matmul_ctx()
    capfd.readouterr()
    _expect_error(capfd, rknn_matmul_create_dynamic_shape(ctx, info, 2, shapes, ios), PARAM, "K = 48")
    _expect_error(capfd, rknn_matmul_create_dynamic_shape(ctx, info, 0, shapes, ios), PARAM, "shape_num")
    _expect_error(capfd, rknn_matmul_create_dynamic_shape(ctx, info, 3, shapes, ios), PARAM, "shape_num = 3")
    assert ctx.value == 0
    ret, sctx, io = _create(M=2, K=32, N=32, type=I8_I32)
    try:
        _expect_error(capfd, rknn_matmul_set_dynamic_shape(sctx, rknn_matmul_shape(2, 32, 32)), PARAM,
                      "not created by rknn_matmul_create_dynamic_shape")
    finally:
        assert rknn_matmul_destroy(sctx) == 0


def test_b_layout_conversion_errors(capfd):
    info = rknn_matmul_info(type=I8_I32)
    src, dst = np.zeros(64 * 32, np.int8), np.zeros(64 * 32, np.int8)
    capfd.readouterr()
    _expect_error(capfd, rknn_B_normal_layout_to_native_layout(src, dst, 48, 32, info), PARAM, "K = 48")
    _expect_error(capfd, rknn_B_normal_layout_to_native_layout(src, dst[:100], 64, 32, info), PARAM,
                  "B_output holds 100 bytes")
    _expect_error(capfd, rknn_B_normal_layout_to_native_layout(src, 0x1000, 64, 32, info), PARAM,
                  "is not writable memory")
    _expect_error(capfd, rknn_B_normal_layout_to_native_layout(src, bytes(64 * 32), 64, 32, info), PARAM,
                  "read-only")
    _expect_error(capfd, rknn_B_normal_layout_to_native_layout(src, dst, 64, 32, rknn_matmul_info(type=0)),
                  PARAM, "invalid matmul type")
    _expect_error(capfd, rknn_B_normal_layout_to_native_layout(None, dst, 64, 32, info), PARAM, "NULL")


def test_log_level_zero_silences_errors(monkeypatch, capfd):
    monkeypatch.setenv("RKNN_LOG_LEVEL", "0")
    capfd.readouterr()
    ret, ctx, io = _create(M=4, K=64, N=32, type=0)
    assert ret == PARAM
    assert capfd.readouterr().err == ""


def test_live_context_is_gated_by_its_own_soc(monkeypatch):
    """A context keeps its SoC: changing $NPURT_SOC afterwards does not change what the context may do."""
    ret, ctx, io = _create(M=1, K=32, N=32, type=I8_I32)
    assert ret == 0
    try:
        monkeypatch.setenv("NPURT_SOC", "rv1106")
        mems = [rknn_create_mem(ctx, getattr(io, n).size) for n in "ABC"]
        for n, mem in zip("ABC", mems):
            assert rknn_matmul_set_io_mem(ctx, mem, getattr(io, n)) == 0
        assert rknn_matmul_run(ctx) == 0
        assert rknn_matmul_set_core_mask(ctx, c.RKNN_NPU_CORE_2) == 0
    finally:
        assert rknn_matmul_destroy(ctx) == 0


def test_get_quant_params_validates_scale_before_writing(capfd):
    ret, ctx, io = _create(M=2, K=32, N=32, type=I8_I32)
    try:
        out = rknn_quant_params(name=b"untouched")
        _expect_error(capfd, rknn_matmul_get_quant_params(ctx, out, "not a float*"), PARAM, "float*")
        assert out.name == b"untouched" and out.scale_len == 0
        arr = np.zeros(1, np.float32)
        assert rknn_matmul_get_quant_params(ctx, out, arr) == 0 and arr[0] == 1.0      # default scale 1.0
        first = out.scale
        assert rknn_matmul_get_quant_params(ctx, rknn_quant_params(), ctypes.c_float()) == 0
        assert first[0] == 1.0                                # earlier results stay valid
    finally:
        assert rknn_matmul_destroy(ctx) == 0
