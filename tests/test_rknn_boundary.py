"""The one boundary of the RKNN mirror (`npurt.rknn.boundary`): one status table for every function — model, matmul
and custom-op alike — and no Python exception ever reads as success."""
from __future__ import annotations

import pytest

import npurt.rknn as rknn
from npurt.errors import ErrorCode, NpuError
from npurt.rknn import boundary
from npurt.rknn import matmul as matmul_mod
from npurt.rknn.constants import (RKNN_ERR_CTX_INVALID, RKNN_ERR_FAIL, RKNN_ERR_MODEL_INVALID, RKNN_ERR_PARAM_INVALID,
                                  RKNN_ERR_TARGET_PLATFORM_UNMATCH, RKNN_ERR_TIMEOUT, RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32,
                                  RKNN_SUCC)
from npurt.rknn.structs import rknn_matmul_ctx, rknn_matmul_info, rknn_matmul_io_attr


def test_status_table_covers_every_neutral_code():
    assert set(boundary.STATUS) == set(ErrorCode)
    assert all(v < 0 for v in boundary.STATUS.values())
    assert boundary.status_of(ErrorCode.INTERNAL) == RKNN_ERR_FAIL


def test_every_exported_function_wears_the_boundary():
    functions = [n for n in rknn.__all__ if n.startswith("rknn_") and callable(getattr(rknn, n))
                 and not isinstance(getattr(rknn, n), type)]
    assert functions
    for name in functions:
        assert boundary.WRAPPED.get(name) is getattr(rknn, name), name


def _matmul_ctx():
    ctx = rknn_matmul_ctx()
    info = rknn_matmul_info(M=4, K=32, N=32, type=RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32)
    io = rknn_matmul_io_attr()
    assert rknn.rknn_matmul_create(ctx, info, io) == RKNN_SUCC
    return ctx


@pytest.mark.parametrize("code, status", [(ErrorCode.INVALID_MODEL, RKNN_ERR_MODEL_INVALID),
                                          (ErrorCode.PLATFORM_MISMATCH, RKNN_ERR_TARGET_PLATFORM_UNMATCH),
                                          (ErrorCode.TIMEOUT, RKNN_ERR_TIMEOUT),
                                          (ErrorCode.INVALID_CONTEXT, RKNN_ERR_CTX_INVALID)])
def test_matmul_uses_the_one_table(monkeypatch, capsys, code, status):
    """The matmul mirror's own subset table once sent these codes to RKNN_ERR_FAIL."""
    monkeypatch.delenv("NPURT_SOC", raising=False)
    ctx = _matmul_ctx()

    def raise_code(*a, **k):
        raise NpuError(code, "injected")

    monkeypatch.setattr(matmul_mod, "_run", raise_code)
    assert rknn.rknn_matmul_run(ctx) == status
    assert "rknn_matmul_run: injected" in capsys.readouterr().err
    monkeypatch.undo()
    assert rknn.rknn_matmul_destroy(ctx) == RKNN_SUCC


def test_unexpected_exception_is_an_internal_error(monkeypatch, capsys):
    monkeypatch.delenv("NPURT_SOC", raising=False)
    ctx = _matmul_ctx()
    before = boundary.internal_errors()

    def boom(*a, **k):
        raise KeyError("lost")

    monkeypatch.setattr(matmul_mod, "_run", boom)
    assert rknn.rknn_matmul_run(ctx) == RKNN_ERR_FAIL
    assert "rknn_matmul_run: internal error: KeyError" in capsys.readouterr().err
    assert boundary.internal_errors() == before + 1
    monkeypatch.undo()
    assert rknn.rknn_matmul_destroy(ctx) == RKNN_SUCC


def test_a_status_function_returning_no_int_is_not_success(capsys):
    before = boundary.internal_errors()

    @boundary.mirror("npurt_test_returns_none")
    def returns_none() -> int:
        return None  # type: ignore[return-value]

    try:
        assert returns_none() == RKNN_ERR_FAIL
        assert "npurt_test_returns_none: internal error: returned NoneType" in capsys.readouterr().err
        assert boundary.internal_errors() == before + 1
    finally:
        boundary.WRAPPED.pop("npurt_test_returns_none")


def test_pointer_functions_fail_with_null(capsys):
    assert rknn.rknn_create_mem(rknn.rknn_context(0xDEAD), 64) is None
    assert "rknn_create_mem: invalid context" in capsys.readouterr().err


def test_void_custom_op_function_logs_and_returns_nothing(capsys):
    assert rknn.rknn_custom_op_get_op_attr(object(), b"alpha", object()) is None
    err = capsys.readouterr().err
    assert "E RKNN:" in err and "rknn_custom_op_get_op_attr: invalid op_ctx" in err


def test_fail_for_the_c_face(capsys):
    """`fail` is what the C face returns for its own argument checks: the same line and status."""
    assert boundary.fail("rknn_query", NpuError(ErrorCode.INVALID_ARGUMENT, "info is NULL")) == RKNN_ERR_PARAM_INVALID
    assert boundary.fail("rknn_create_mem", NpuError(ErrorCode.OUT_OF_MEMORY, "x"), failure=None) is None
    err = capsys.readouterr().err
    assert "rknn_query: info is NULL" in err and "rknn_create_mem: x" in err
