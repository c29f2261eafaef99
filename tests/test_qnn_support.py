"""The QNN HTP mirror's support pieces: rpcmem, the QuRT heap, HTP profiles and the provider table."""
from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest

import npurt
import npurt.qnn as q
from npurt.qnn import device as htp_device
from npurt.qnn.mem_registry import REGISTRY

from conftest import open_fds
from helpers.qnn import SMALL, SPILL, Htp, binary, code, defer_config, get_property, htp, ok  # noqa: F401

def test_rpcmem_alloc_is_page_aligned_real_fd_and_view():
    p = q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, q.RPCMEM_DEFAULT_FLAGS, 10000)
    try:
        assert p and p % 4096 == 0
        fd = q.rpcmem_to_fd(p)
        assert fd >= 0 and os.fstat(fd).st_size >= 10000
        v = q.rpcmem_view(p, shape=(4,), dtype=np.float32)
        v[:] = [1, 2, 3, 4]
        assert os.pread(fd, 16, 0) == np.array([1, 2, 3, 4], np.float32).tobytes()   # the fd is the memory
        with pytest.raises(npurt.NpuError):
            q.rpcmem_view(p + 9990, 100)                    # past the end: refused, not read
    finally:
        q.rpcmem_free(p)
    assert q.rpcmem_to_fd(p) == -1


def test_rpcmem_interior_pointer_gives_minus_one_and_free_ignores_it_leaking():
    p = q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, q.RPCMEM_DEFAULT_FLAGS, 8192)
    assert q.rpcmem_to_fd(p + 64) == -1
    q.rpcmem_free(p + 64)                                    # ignored: the buffer leaks (ORT PR 23892)
    assert [leak["base"] for leak in q.rpcmem_leaks()] == [p]
    q.rpcmem_free(p)
    assert q.rpcmem_leaks() == []
    q.rpcmem_free(p)                                         # double free: ignored
    q.rpcmem_free(0)


def test_rpcmem_size_is_a_signed_int_and_alloc2_takes_size_t():
    assert q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, 1, 0) == 0
    assert q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, 1, -5) == 0
    assert q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, 1, 1 << 31) == 0     # wraps negative in C
    p = q.rpcmem_alloc2(q.RPCMEM_HEAP_ID_SYSTEM, 1, (1 << 31) + 4096)  # sparse memfd: costs nothing
    assert p and q.rpcmem_to_fd(p) >= 0
    q.rpcmem_free(p)


def test_rpcmem_heaps():
    assert q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SECURE, 1, 4096) == 0
    assert q.rpcmem_alloc(12345, 1, 4096) == 0
    assert q.rpcmem_alloc(q.RPCMEM_HEAP_ID_CONTIG, 1, 8 << 20) == 0
    p = q.rpcmem_alloc(q.RPCMEM_HEAP_ID_CONTIG, q.RPCMEM_FLAG_UNCACHED, 4096)
    assert p
    q.rpcmem_free(p)


def test_rpcmem_fds_and_devices_released():
    before = open_fds()
    ptrs = [q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, 1, 4096 * (i + 1)) for i in range(5)]
    assert open_fds() > before
    for p in ptrs:
        q.rpcmem_free(p)
    assert open_fds() == before
    assert htp_device.open_soc_devices() == {}


def test_qurt_heap():
    a = q.qurt_malloc(10000)
    assert a and a < 1 << 32 and a % 4096 == 0
    q.qurt_view(a, 8)[:] = 7
    assert q.qurt_view(a, 8).tolist() == [7] * 8
    q.qurt_free(a)
    with pytest.raises(npurt.NpuError):
        q.qurt_view(a, 8)
    q.qurt_free(a)                                           # ignored
    assert q.qurt_malloc(0) == 0


# ---------------------------------------------------------------------------------------------------------
# profiles and providers
# ---------------------------------------------------------------------------------------------------------
def test_htp_profiles():
    from npurt.soc.htp import HTP_PROFILES, get_htp_profile
    assert get_htp_profile().name == "sm8350" and get_htp_profile().vtcm_size == 4 << 20
    assert get_htp_profile("V73").name == "sm8550" and get_htp_profile("v73").vtcm_size == 8 << 20
    assert {p.arch for p in HTP_PROFILES.values()} >= {68, 69, 73, 75}
    with pytest.raises(npurt.NpuError):
        get_htp_profile("rk3588")


def test_get_providers_gives_the_function_table():
    providers: list = []
    n = ctypes.c_uint32()
    ok(q.QnnInterface_getProviders(providers, n))
    assert n.value == 1 and providers[0].backendId == q.QNN_BACKEND_ID_HTP
    assert providers[0].providerName == "HTP_QTI_AISW"
    table = getattr(providers[0], q.QNN_INTERFACE_VER_NAME)
    for name in ("backendCreate", "deviceCreate", "contextCreateFromBinary", "contextGetProperty",
                 "contextFinalize", "contextFree", "graphRetrieve", "graphExecute", "memRegister", "memDeRegister"):
        assert callable(getattr(table, name))
    assert table.use_case == "fastrpc"
    assert q.interface("native", soc="v75").use_case == "native"
    assert code(q.QnnInterface_getProviders(None, n)) == q.QNN_COMMON_ERROR_INVALID_ARGUMENT


def test_properties_from_the_htp_plan(htp):
    ctx = htp.context(binary(SPILL), defer_config())
    assert get_property(htp.qi, ctx, q.QNN_HTP_CONTEXT_GET_PROP_BUFFER_START_ALIGNMENT) == (0, 4096)
    rc, spill = get_property(htp.qi, ctx, q.QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE)
    assert rc == 0 and spill > 0 and spill % (2 << 20) == 0
    rc, weights = get_property(htp.qi, ctx, q.QNN_HTP_CONTEXT_GET_PROP_WEIGHTS_BUFFER_SIZE)
    assert rc == 0 and weights == 2 << 20                     # 97 KB of weights, rounded to 2 MiB
    # FastRPC has no VTCM backup buffer; reserved options are not supported; the value stays untouched
    assert get_property(htp.qi, ctx, q.QNN_HTP_CONTEXT_GET_PROP_MAX_VTCMBACKUP_BUFFER_SIZE) == (1000, 0xDEAD)
    assert get_property(htp.qi, ctx, q.QNN_HTP_CONTEXT_GET_PROP_RESERVED_4) == (1000, 0xDEAD)
    small = htp.context(binary(SMALL), defer_config())
    assert get_property(htp.qi, small, q.QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE) == (0, 0)  # fits VTCM
    plain = htp.context(binary(SMALL))                         # not deferred: the HTP library answers 1000
    assert get_property(htp.qi, plain, q.QNN_HTP_CONTEXT_GET_PROP_BUFFER_START_ALIGNMENT) == (1000, 0xDEAD)


def test_vtcm_and_spill_come_from_the_profile():
    """sm8350 has 4 MiB of VTCM: the 256x256 model spills; sm8550 has 8 MiB: it does not."""
    small_vtcm = Htp("fastrpc", "sm8350")
    big_vtcm = Htp("fastrpc", "sm8550")
    try:
        for h, spills in ((small_vtcm, True), (big_vtcm, False)):
            ctx = h.context(binary(SPILL), defer_config())
            rc, spill = get_property(h.qi, ctx, q.QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE)
            assert rc == 0 and (spill > 0) == spills
    finally:
        small_vtcm.close()
        big_vtcm.close()
    assert REGISTRY.count() == 0
