"""The mirror kit on its own: the handle table with retirement, the boundary factory, and `as_struct_list` (the one
reading of a C array argument). The mirrors' own tests cover them through the vendor APIs."""
from __future__ import annotations

import ctypes

import pytest

from npurt.errors import ErrorCode, NpuError
from npurt.memory.cargs import MAX_TERMINATED, as_struct_list
from npurt.mirror_kit.boundary import Boundary
from npurt.mirror_kit.handles import HandleTable, Retired


class Pair(ctypes.Structure):
    _fields_ = [("a", ctypes.c_uint32), ("b", ctypes.c_uint32)]


class Other(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint64)]


def test_handles_count_up_are_never_reused_and_check_their_kind():
    table = HandleTable(first=0x100, step=0x10)
    one, two = object(), Pair()
    h1, h2 = table.add(one, "a"), table.add(two, "b")
    assert (h1, h2) == (0x100, 0x110)
    assert table.get(h1) is one and table.get(ctypes.c_uint64(h1), "a") is one
    assert table.get(h1, "b") is None and table.get(h2, Pair) is two and table.get(h2, Other) is None
    assert table.get(True) is None and table.get("0x100") is None and table.get(None) is None
    assert table.remove(h1) is one and table.get(h1) is None and table.remove(h1) is None
    assert table.add(one) == 0x120                  # a freed handle is never handed out again
    assert len(table) == 2 and [h for h, _ in table.live("b")] == [h2]


def test_retired_handles_resolve_until_pushed_out_or_forgotten():
    table = HandleTable(keep_retired=2)
    handles = [table.add(object()) for _ in range(4)]
    for h in handles[:3]:
        table.retire(h)
    assert table.get(handles[0]) is None             # the oldest of three retired, with room for two
    assert table.get(handles[1]) is not None and table.get(handles[2]) is not None
    table.forget_retired()
    assert len(table) == 1 and table.get(handles[3]) is not None


def test_retired_keeps_the_last_items():
    kept = Retired(2)
    assert kept.add("a") == [] and kept.add("b") == [] and kept.add("c") == ["a"]
    assert kept.clear() == ["b", "c"] and kept.clear() == []


def _boundary(lines: list) -> Boundary:
    def explain(name, error):
        return (-int(error.code), error.message) if isinstance(error, NpuError) else None
    return Boundary(explain, lambda name, status, message: lines.append((name, status, message)), -99)


def test_boundary_statuses_log_lines_and_internal_errors():
    lines: list = []
    b = _boundary(lines)

    @b.wrap("f_status")
    def f(kind):
        if kind == "bad":
            raise NpuError(ErrorCode.INVALID_ARGUMENT, "bad x")
        if kind == "bug":
            raise KeyError("lost")
        if kind == "internal":
            raise NpuError(ErrorCode.INTERNAL, "broken")
        return None if kind == "none" else 0

    assert b.wrapped["f_status"] is f and f.c_name == "f_status" and f.returns_status
    assert f("ok") == 0 and b.internal_errors() == 0 and lines == []
    assert f("bad") == -int(ErrorCode.INVALID_ARGUMENT) and b.internal_errors() == 0
    assert lines[-1] == ("f_status", -int(ErrorCode.INVALID_ARGUMENT), "bad x")
    assert f("bug") == -99 and b.internal_errors() == 1 and "internal error: KeyError" in lines[-1][2]
    assert f("internal") == -int(ErrorCode.INTERNAL) and b.internal_errors() == 2
    assert f("none") == -int(ErrorCode.INTERNAL) and b.internal_errors() == 3      # no status is never success


def test_boundary_guard_pointer_failure_and_prepare():
    lines: list = []
    b = _boundary(lines)
    def own(name, error):                          # a C adapter's own code for a bad pointer
        return (7, "own") if isinstance(error, NpuError) else None

    @b.wrap("g", failure=None, export=False, explain=own)
    def guard():
        raise NpuError(ErrorCode.FAIL, "x")

    assert guard() is None and lines[-1] == ("g", 7, "own") and "g" not in b.wrapped and b.internal_errors() == 0
    resolved = b.wrap("h", failure=None, prepare=lambda name, args, kw: ((f"{name}:{args[0]}", *args[1:]), kw))(
        lambda x, y: (x, y))
    assert resolved(1, 2) == ("h:1", 2)             # prepare resolves the first argument by the function's name


def test_as_struct_list_reads_every_spelling_of_an_array():
    arr = (Pair * 3)(Pair(1, 2), Pair(3, 4), Pair(5, 6))
    assert [s.a for s in as_struct_list(arr, 2, Pair, "p")] == [1, 3]
    assert as_struct_list(arr, 2, Pair, "p")[0] is not None
    assert [s.b for s in as_struct_list(ctypes.cast(arr, ctypes.POINTER(Pair)), 3, Pair, "p")] == [2, 4, 6]
    assert [s.a for s in as_struct_list(list(arr), 1, Pair, "p")] == [1]
    one = Pair(9, 9)
    assert as_struct_list(one, 1, Pair, "p")[0] is one                   # in/out: the caller's own object
    copies = as_struct_list(ctypes.addressof(arr), 3, Pair, "p", address=True)
    assert [s.a for s in copies] == [1, 3, 5]
    assert as_struct_list([], 0, Pair, "p") == []


@pytest.mark.parametrize("items, count, words", [
    (None, 1, "p is NULL"),
    ((Pair * 1)(), 2, "n=2 but 1 structs given"),
    ([Other()], 1, "expected Pair, got Other"),
    (42, 1, "expected an array of Pair"),
    ((Pair * 1)(), -1, "invalid count"),
    (ctypes.POINTER(Pair)(), 1, "p is NULL"),
])
def test_as_struct_list_refuses_with_a_clear_message(items, count, words):
    with pytest.raises(NpuError) as err:
        as_struct_list(items, count, Pair, "p")
    assert err.value.code is ErrorCode.INVALID_ARGUMENT and words in err.value.message


def test_as_struct_list_null_terminated_lists():
    a, b = Pair(1, 0), Pair(2, 0)
    assert [s.a for s in as_struct_list([a, ctypes.pointer(b), None, Pair(3, 0)], None, Pair, "cfg")] == [1, 2]
    ptrs = (ctypes.c_void_p * 3)(ctypes.addressof(a), ctypes.addressof(b), None)
    aliased = as_struct_list(ctypes.addressof(ptrs), None, Pair, "cfg", address=True)
    assert [ctypes.addressof(s) for s in aliased] == [ctypes.addressof(a), ctypes.addressof(b)]
    with pytest.raises(NpuError, match=r"cfg\[0\]: expected Pair"):
        as_struct_list(["x", None], None, Pair, "cfg")
    endless = (ctypes.c_void_p * (MAX_TERMINATED + 1))(*([ctypes.addressof(a)] * (MAX_TERMINATED + 1)))
    with pytest.raises(NpuError, match="no NULL within"):
        as_struct_list(ctypes.addressof(endless), None, Pair, "cfg", address=True)


def test_a_mirror_function_takes_its_context_handle_by_position_or_keyword():
    from helpers.rknn import init
    from npurt.rknn import RKNN_ERR_CTX_INVALID, RKNN_NPU_CORE_AUTO, RKNN_SUCC, rknn_destroy, rknn_set_core_mask
    ctx = init()
    try:
        assert rknn_set_core_mask(ctx, RKNN_NPU_CORE_AUTO) == RKNN_SUCC
        assert rknn_set_core_mask(ctx=ctx, core_mask=RKNN_NPU_CORE_AUTO) == RKNN_SUCC
    finally:
        assert rknn_destroy(ctx=ctx) == RKNN_SUCC
    assert rknn_destroy(ctx) == RKNN_ERR_CTX_INVALID                 # a destroyed handle stays invalid
