"""Element types: names, numpy storage, bits, byte sizes, int4 packing (low nibble first)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from npurt.errors import ErrorCode, NpuError
from npurt.tensor import DType, pack_int4, unpack_int4


def test_names_bits_and_sizes():
    assert [t.value for t in DType] == ["float32", "float16", "bfloat16", "int8", "uint8", "int16", "uint16",
                                        "int32", "uint32", "int64", "bool", "int4"]
    expect_bits = dict(float32=32, float16=16, bfloat16=16, int8=8, uint8=8, int16=16, uint16=16, int32=32,
                       uint32=32, int64=64, bool=8, int4=4)
    for t in DType:
        assert t.bits == expect_bits[t.value]
        assert t.nbytes(10) == 10 * expect_bits[t.value] // 8
    assert DType.INT4.nbytes(5) == 3 and DType.INT4.nbytes(0) == 0
    assert DType.BFLOAT16.numpy_dtype == np.dtype(ml_dtypes.bfloat16)
    assert DType.INT4.numpy_dtype == np.uint8
    assert str(DType.INT8) == "int8" and DType("float16") is DType.FLOAT16
    with pytest.raises(NpuError):
        DType.INT8.nbytes(-1)


def test_from_numpy_and_parse():
    for t in DType:
        if t is not DType.INT4:
            assert DType.from_numpy(t.numpy_dtype) is t
    assert DType.from_numpy(np.uint8) is DType.UINT8
    assert DType.from_numpy(ml_dtypes.int4) is DType.INT4
    assert DType.parse("FP16") is DType.FLOAT16 and DType.parse(np.int8) is DType.INT8
    assert DType.parse(DType.BOOL) is DType.BOOL and DType.parse("bf16") is DType.BFLOAT16
    for bad in (np.complex64, np.float64, "U3", object, "nonsense"):
        with pytest.raises(NpuError) as e:
            DType.parse(bad)
        assert e.value.code == ErrorCode.INVALID_ARGUMENT


def test_ranges():
    assert DType.INT8.range() == (-128, 127) and DType.UINT8.range() == (0, 255) and DType.INT4.range() == (-8, 7)
    assert DType.INT16.range() == (-32768, 32767)
    with pytest.raises(NpuError):
        DType.FLOAT16.range()


def test_int4_low_nibble_first():
    packed = pack_int4(np.array([1, 2, -1, -8, 7]))
    assert packed.dtype == np.uint8
    assert packed.tolist() == [0x21, 0x8F, 0x07]
    assert unpack_int4(packed, 5).tolist() == [1, 2, -1, -8, 7]
    assert unpack_int4(packed).tolist() == [1, 2, -1, -8, 7, 0]
    with pytest.raises(NpuError):
        pack_int4(np.array([8]))
    with pytest.raises(NpuError):
        pack_int4(np.array([0.5]))
    with pytest.raises(NpuError):
        unpack_int4(packed, 7)
    with pytest.raises(NpuError):
        unpack_int4(np.zeros(2, np.float32))


def test_int4_one_packer_for_both_nibble_orders():
    """The matmul mirror's native B layout (high nibble first) and a packed prefix of a larger buffer use the same
    packer as int4 tensors."""
    v = np.array([1, -2, 7, -8, 3], dtype=np.int8)
    high = pack_int4(v, high_first=True)
    assert high.tolist() == [0x1E, 0x78, 0x30]
    assert unpack_int4(np.append(high, np.uint8(0xFF)), 5, high_first=True).tolist() == v.tolist()
    out = np.full(4, 0xAA, np.uint8)
    assert pack_int4(v, out=out) is out and out.tolist() == [0xE1, 0x87, 0x03, 0xAA]


@given(st.lists(st.integers(-8, 7), max_size=41))
def test_int4_round_trip(values):
    p = pack_int4(np.array(values, dtype=np.int64))
    assert p.size == DType.INT4.nbytes(len(values))
    assert unpack_int4(p, len(values)).tolist() == values
