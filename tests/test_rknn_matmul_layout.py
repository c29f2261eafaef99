"""matmul_math alone: int4 nibble orders, native B round trips against the documented index formula, perf A/C."""
from __future__ import annotations

import numpy as np
import pytest

from npurt.rknn import constants as c
from npurt.rknn import matmul_math as mm
from npurt.rknn.matmul import rknn_B_normal_layout_to_native_layout
from npurt.rknn.structs import rknn_matmul_info
from npurt.tensor.dtypes import DType, pack_int4
from helpers.matmul import native_b_reference, stored


def test_int4_nibble_orders():
    v = np.array([1, -2, 7, -8, 3], dtype=np.int8)
    low = mm.pack_int4(v)
    assert low.tolist() == [0xE1, 0x87, 0x03]                       # element 0 in the low nibble (vendor demo)
    np.testing.assert_array_equal(low, pack_int4(v))                 # same convention as npurt.tensor
    high = mm.pack_int4(v, high_first=True)
    assert high.tolist() == [0x1E, 0x78, 0x30]                       # native B: element 0 in the high nibble
    np.testing.assert_array_equal(mm.unpack_int4(low, 5), v)
    np.testing.assert_array_equal(mm.unpack_int4(high, 5, high_first=True), v)
    with pytest.raises(Exception):
        mm.pack_int4(np.array([8]))


def _native_cases():
    for soc in ("rk3588", "rk3576", "rk3562", "rk3566"):
        for t in sorted(mm.SOC_TYPES[soc]):
            yield pytest.param(soc, t, id=f"{soc}-{mm.MATMUL_TYPES[t].name[5:]}")


@pytest.mark.parametrize("soc,mtype", list(_native_cases()))
def test_native_b_round_trip_and_index_formula(monkeypatch, soc, mtype):
    monkeypatch.setenv("NPURT_SOC", soc)
    spec = mm.MATMUL_TYPES[mtype]
    tiles = mm.tiles_for(soc, spec)
    K, N = 3 * tiles.b_k, 2 * tiles.b_n
    rng = np.random.default_rng(mtype)
    if spec.b is DType.FLOAT16:
        b = rng.uniform(-4, 4, (K, N)).astype(np.float16)
    else:
        lo, hi = spec.b.range()
        b = rng.integers(lo, hi + 1, (K, N)).astype(np.int8)
    info = rknn_matmul_info(K=K, N=N, type=mtype, B_layout=c.RKNN_MM_LAYOUT_NATIVE)
    out = np.zeros(spec.b.nbytes(K * N), np.uint8)
    assert rknn_B_normal_layout_to_native_layout(stored(b, spec.b), out, K, N, info) == 0
    want = native_b_reference(b, tiles.b_n, tiles.b_k)
    if spec.b is DType.INT4:
        np.testing.assert_array_equal(mm.unpack_int4(out, K * N, high_first=True), want)
        flat = mm.unpack_int4(out, K * N, high_first=True)
    else:
        np.testing.assert_array_equal(out.view(b.dtype), want)
        flat = out.view(b.dtype)
    back = mm.b_native_to_normal(flat, K, N, spec.b, tiles, mm.k_segment(soc))
    np.testing.assert_array_equal(back, b)


def test_native_b_k_segments_on_rk3588():
    spec = mm.MATMUL_TYPES[c.RKNN_INT8_MM_INT8_TO_INT32]
    tiles = mm.tiles_for("rk3588", spec)
    K, N = 8192 + 2 * 32, 64
    b = np.random.default_rng(0).integers(-128, 128, (K, N)).astype(np.int8)
    native = mm.b_normal_to_native(b, K, N, tiles, mm.k_segment("rk3588"))
    np.testing.assert_array_equal(native, native_b_reference(b, 32, 32, seg=8192))
    np.testing.assert_array_equal(mm.b_native_to_normal(native, K, N, spec.b, tiles, 8192), b)
    first = native_b_reference(b[:8192], 32, 32)
    np.testing.assert_array_equal(native[: first.size], first)       # segment 0 is a complete native B of its own


def test_native_conversion_in_place_and_in_device_memory(monkeypatch):
    """B_input and B_output may be the same buffer, or raw addresses inside npurt device memory."""
    from npurt.memory.device import open_device
    monkeypatch.setenv("NPURT_SOC", "rk3588")
    K, N = 64, 64
    info = rknn_matmul_info(K=K, N=N, type=c.RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32)
    b = np.random.default_rng(1).uniform(-1, 1, (K, N)).astype(np.float16)
    buf = b.copy()
    assert rknn_B_normal_layout_to_native_layout(buf, buf, K, N, info) == 0
    np.testing.assert_array_equal(buf.reshape(-1), native_b_reference(b, 16, 32))
    with open_device("rk3588") as dev:
        src = dev.alloc(b.nbytes)
        dst = dev.alloc(b.nbytes)
        src.view(np.float16)[:] = b.reshape(-1)
        assert rknn_B_normal_layout_to_native_layout(src.virt_addr, dst.virt_addr, K, N, info) == 0
        np.testing.assert_array_equal(dst.view(np.float16), native_b_reference(b, 16, 32))
        src.free()
        dst.free()


@pytest.mark.parametrize("mtype", [c.RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32, c.RKNN_INT8_MM_INT8_TO_INT32,
                                   c.RKNN_FLOAT16_MM_INT4_TO_FLOAT32])
def test_native_conversion_from_malloc_pointers(monkeypatch, capfd, mtype):
    """C programs pass plain malloc'd host memory as B_input / B_output (integer addresses outside any npurt
    buffer): converted through the guarded raw-memory module, with the same bytes as for numpy arrays."""
    import ctypes
    monkeypatch.setenv("NPURT_SOC", "rk3588")
    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    spec = mm.MATMUL_TYPES[mtype]
    tiles = mm.tiles_for("rk3588", spec)
    K, N = 2 * tiles.b_k, 2 * tiles.b_n
    rng = np.random.default_rng(mtype)
    lo, hi = (-4, 4) if spec.b is DType.FLOAT16 else spec.b.range()
    b = rng.uniform(lo, hi, (K, N)).astype(np.float16) if spec.b is DType.FLOAT16 else \
        rng.integers(lo, hi + 1, (K, N)).astype(np.int8)
    src_bytes = np.ascontiguousarray(stored(b, spec.b)).reshape(-1).view(np.uint8)
    nbytes = spec.b.nbytes(K * N)
    info = rknn_matmul_info(K=K, N=N, type=mtype, B_layout=c.RKNN_MM_LAYOUT_NATIVE)
    want = np.zeros(nbytes, np.uint8)
    assert rknn_B_normal_layout_to_native_layout(src_bytes.copy(), want, K, N, info) == 0
    b_in, b_out = libc.malloc(nbytes), libc.malloc(nbytes)
    try:
        ctypes.memmove(b_in, src_bytes.ctypes.data, nbytes)
        ctypes.memset(b_out, 0xAB, nbytes)
        assert rknn_B_normal_layout_to_native_layout(b_in, b_out, K, N, info) == 0
        assert ctypes.string_at(b_out, nbytes) == want.tobytes()
        assert ctypes.string_at(b_in, nbytes) == src_bytes.tobytes()          # the input is left as it was
        assert rknn_B_normal_layout_to_native_layout(b_in, b_in, K, N, info) == 0   # in place, as C may do
        assert ctypes.string_at(b_in, nbytes) == want.tobytes()
        assert "E RKNN" not in capfd.readouterr().err
    finally:
        libc.free(b_in)
        libc.free(b_out)


def test_perf_layouts():
    a = np.arange(3 * 16, dtype=np.int8).reshape(3, 16)
    perf = mm.a_normal_to_perf(a, 8)
    # [K/8, M, 8]: the first row block holds columns 0..7 of every row, then columns 8..15
    assert perf.reshape(2, 3, 8)[1, 2].tolist() == a[2, 8:].tolist()
    spec = mm.MATMUL_TYPES[c.RKNN_INT8_MM_INT8_TO_INT32]
    tiles = mm.Tiles(8, 16, 32, 4)
    shape = mm.Shape(3, 16, 8)
    back = mm.read_a(perf.view(np.uint8), spec, tiles, shape, c.RKNN_MM_LAYOUT_NATIVE)
    np.testing.assert_array_equal(back, a)
    vals = np.arange(24, dtype=np.int32).reshape(3, 8)
    raw = np.zeros(vals.nbytes, np.uint8)
    mm.write_c(raw, vals, spec, tiles, shape, c.RKNN_MM_LAYOUT_NATIVE)
    assert raw.view(np.int32).reshape(2, 3, 4)[1, 0].tolist() == [4, 5, 6, 7]
    np.testing.assert_array_equal(mm.c_perf_to_normal(raw.view(np.int32), 3, 8, 4), vals)


@pytest.mark.parametrize("soc,expected", [
    ("rk3588", {1, 2, 3, 4, 9, 10}), ("rk3576", {1, 2, 4, 5, 6, 7, 8, 11, 12, 15}),
    ("rk3566", {1, 2}), ("rk3568", {1, 2}), ("rk3562", {1, 2}),
])
def test_type_table_per_soc(soc, expected):
    assert set(mm.SOC_TYPES[soc]) == expected


def test_every_type_is_on_some_soc():
    covered = set().union(*mm.SOC_TYPES.values())
    assert covered == set(mm.MATMUL_TYPES)


@pytest.mark.parametrize("mtype,K", [(c.RKNN_INT8_MM_INT8_TO_INT32, 8192 + 64), (c.RKNN_INT8_MM_INT4_TO_INT32, 4096),
                                     (c.RKNN_INT4_MM_INT4_TO_INT16, 512)])
def test_integer_accumulation_is_exact_at_the_extremes(mtype, K):
    """Worst-case operands (every product at its maximum) over long K: the float32 K-chunked sums stay exact."""
    spec = mm.MATMUL_TYPES[mtype]
    M, N = 2, 64
    lo_a, _ = spec.a.range()
    lo_b, hi_b = spec.b.range()
    a = np.full((M, K), lo_a, np.float32)
    b = np.full((K, N), lo_b, np.float32)
    b[:, 1::2] = hi_b
    a[1, ::3] = 1
    quant = {n: mm.Quant.default() for n in "ABC"}
    got = mm.compute(a, b, spec, mm.Shape(M, K, N), quant, c.RKNN_QUANT_TYPE_PER_LAYER_SYM, 0)
    want = a.astype(np.int64) @ b.astype(np.int64)
    lo, hi = spec.c.range()
    np.testing.assert_array_equal(got, np.clip(want, lo, hi))
    assert got.dtype == spec.c.numpy_dtype
