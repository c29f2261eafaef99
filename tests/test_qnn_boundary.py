"""The one boundary of the QNN mirror (`npurt.qnn.boundary`): runtime errors keep distinct QNN codes per API family,
every interface member wears `@qnn_call`, and no Python exception reads as success."""
from __future__ import annotations

import logging

import pytest

import npurt.qnn as q
from npurt.errors import ErrorCode, NpuError
from npurt.qnn import boundary
from npurt.qnn.interface import QnnInterfaceTable
from npurt.runtime import Context as RuntimeContext
from helpers.qnn import binary, code, htp, ok, raw_tensors, sample  # noqa: F401

DISTINCT = (ErrorCode.OUT_OF_MEMORY, ErrorCode.BUSY, ErrorCode.INVALID_ARGUMENT, ErrorCode.INVALID_HANDLE,
            ErrorCode.NOT_SUPPORTED)


@pytest.mark.parametrize("family", sorted(boundary.CODES))
def test_every_family_maps_every_code(family):
    table = boundary.CODES[family]
    assert set(table) == set(ErrorCode)
    # QnnCommon has no invalid-handle code: there it is the invalid argument
    distinct = [table[c] for c in DISTINCT if family != "common" or c is not ErrorCode.INVALID_HANDLE]
    assert len(set(distinct)) == len(distinct), dict(zip(DISTINCT, distinct))
    assert q.QNN_COMMON_ERROR_GENERAL not in distinct
    assert table[ErrorCode.INTERNAL] == q.QNN_COMMON_ERROR_GENERAL


def test_family_of_member_names():
    assert boundary.family_of("memRegister") == "mem"
    assert boundary.family_of("contextFinalize") == "context"
    assert boundary.family_of("graphExecute") == "graph"
    assert boundary.family_of("propertyHasCapability") == "common"


def test_every_table_member_wears_the_boundary():
    """Every member of the table, from each of its member mixins (`npurt.qnn.members`)."""
    members = {n for cls in QnnInterfaceTable.__mro__[:-1] for n in vars(cls) if not n.startswith("_")}
    assert {"backendCreate", "contextCreateFromBinary", "graphExecute", "graphAddNode", "memRegister"} <= members
    for name in members:
        assert boundary.WRAPPED.get(name) is getattr(QnnInterfaceTable, name), name


@pytest.mark.parametrize("err, expected", [
    (ErrorCode.OUT_OF_MEMORY, q.QNN_GRAPH_ERROR_MEM_ALLOC),
    (ErrorCode.BUSY, q.QNN_COMMON_ERROR_RESOURCE_UNAVAILABLE),
    (ErrorCode.INVALID_ARGUMENT, q.QNN_GRAPH_ERROR_INVALID_ARGUMENT),
    (ErrorCode.INVALID_HANDLE, q.QNN_GRAPH_ERROR_INVALID_HANDLE),
    (ErrorCode.NOT_SUPPORTED, q.QNN_GRAPH_ERROR_UNSUPPORTED_FEATURE),
    (ErrorCode.TIMEOUT, q.QNN_GRAPH_ERROR_TIMED_OUT),
    (ErrorCode.FAIL, q.QNN_GRAPH_ERROR_GENERAL),
])
def test_a_failed_run_keeps_its_code(htp, monkeypatch, caplog, err, expected):  # noqa: F811
    """A runtime failure during graphExecute was QNN_GRAPH_ERROR_GENERAL whatever it was."""
    ctx = htp.context()
    graph = htp.graph(ctx)
    x, _ = sample()
    ins, outs, _ = raw_tensors(binary(), x)

    def fail(self):
        raise NpuError(err, "injected")

    monkeypatch.setattr(RuntimeContext, "run", fail)
    with caplog.at_level(logging.ERROR, logger="npurt.qnn"):
        assert code(htp.qi.graphExecute(graph, ins, 1, outs, 1, None, None)) == expected
    assert "graphExecute: graph" in caplog.text and "failed: injected" in caplog.text
    monkeypatch.undo()
    ok(htp.qi.graphExecute(graph, ins, 1, outs, 1, None, None))      # nothing else changed
    ok(htp.qi.contextFree(ctx, None))


def test_unexpected_exception_is_an_internal_error(htp, monkeypatch, caplog):  # noqa: F811
    ctx = htp.context()
    graph = htp.graph(ctx)
    x, _ = sample()
    ins, outs, _ = raw_tensors(binary(), x)
    before = boundary.internal_errors()

    def boom(self):
        raise KeyError("lost")

    monkeypatch.setattr(RuntimeContext, "run", boom)
    with caplog.at_level(logging.ERROR, logger="npurt.qnn"):
        assert code(htp.qi.graphExecute(graph, ins, 1, outs, 1, None, None)) == q.QNN_COMMON_ERROR_GENERAL
    assert "graphExecute: internal error: KeyError" in caplog.text
    assert boundary.internal_errors() == before + 1
    monkeypatch.undo()
    ok(htp.qi.contextFree(ctx, None))


def test_a_member_returning_no_code_is_not_success(caplog):
    before = boundary.internal_errors()

    @boundary.qnn_call("npurtTestReturnsNone")
    def returns_none() -> int:
        return None  # type: ignore[return-value]

    try:
        with caplog.at_level(logging.ERROR, logger="npurt.qnn"):
            assert returns_none() == q.QNN_COMMON_ERROR_GENERAL
        assert "internal error: returned NoneType" in caplog.text
        assert boundary.internal_errors() == before + 1
    finally:
        boundary.WRAPPED.pop("npurtTestReturnsNone")


def test_from_npu_with_a_call_sites_general_code():
    load = q.QNN_CONTEXT_ERROR_CREATE_FROM_BINARY
    assert boundary.from_npu(NpuError(ErrorCode.INVALID_MODEL, "x"), "context", general=load).code == load
    assert boundary.from_npu(NpuError(ErrorCode.FAIL, "x"), "context", general=load).code == load
    assert boundary.from_npu(NpuError(ErrorCode.OUT_OF_MEMORY, "x"), "context", general=load).code == \
        q.QNN_CONTEXT_ERROR_MEM_ALLOC
    err = boundary.from_npu(NpuError(ErrorCode.BUSY, "in use"), "mem", "descriptor 0")
    assert err.code == q.QNN_COMMON_ERROR_RESOURCE_UNAVAILABLE and err.message == "descriptor 0: in use"
