"""`npurt.memory.cargs.as_struct`: the one reading of a C `T*` argument, shared by both mirrors and the C face."""
from __future__ import annotations

import ctypes

from npurt.memory.cargs import as_struct
from npurt.rknn.structs import rknn_tensor_attr, rknn_tensor_mem
from npurt.qnn.structs import QnnHtpContext_CustomProperty_t


def test_the_three_spellings_name_the_callers_object():
    attr = rknn_tensor_attr(index=3)
    for spelling in (attr, ctypes.pointer(attr), ctypes.byref(attr)):
        got = as_struct(spelling, rknn_tensor_attr)
        assert got is not None and ctypes.addressof(got) == ctypes.addressof(attr)
    as_struct(ctypes.byref(attr), rknn_tensor_attr).index = 7          # filled in place, as in C
    assert attr.index == 7


def test_null_wrong_type_and_addresses():
    assert as_struct(None, rknn_tensor_attr) is None
    assert as_struct(ctypes.POINTER(rknn_tensor_attr)(), rknn_tensor_attr) is None       # NULL
    assert as_struct(rknn_tensor_mem(), rknn_tensor_attr) is None
    assert as_struct(ctypes.pointer(rknn_tensor_mem()), rknn_tensor_attr) is None
    attr = rknn_tensor_attr(index=5)
    assert as_struct(ctypes.addressof(attr), rknn_tensor_attr) is None                   # ints only on request


def test_a_zero_integer_cell_is_found():
    """ctypes integers are falsy at 0: the helper's answer is tested against None, never by truth."""
    cell = ctypes.c_void_p()
    assert as_struct(ctypes.byref(cell), ctypes.c_void_p) is cell
    count = ctypes.c_uint32(0)
    assert as_struct(ctypes.pointer(count), ctypes.c_uint32) is not None


def test_an_address_is_read_as_a_guarded_copy():
    prop = QnnHtpContext_CustomProperty_t()
    prop.option = 3
    copy = as_struct(ctypes.addressof(prop), QnnHtpContext_CustomProperty_t, address=True)
    assert copy is not None and copy.option == 3 and ctypes.addressof(copy) != ctypes.addressof(prop)
    assert as_struct(ctypes.c_void_p(ctypes.addressof(prop)), QnnHtpContext_CustomProperty_t, address=True).option == 3
    assert as_struct(8, QnnHtpContext_CustomProperty_t, address=True) is None          # unmapped: no crash
    assert as_struct(0, QnnHtpContext_CustomProperty_t, address=True) is None
