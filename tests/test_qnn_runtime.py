"""One runtime under both mirrors: HTP SoCs in `npurt.soc` and `npurt.memory.open_device`, composite (stitched)
buffers in the memory layer, and the QNN mirror executing through `npurt.runtime.Context`."""
from __future__ import annotations

import numpy as np
import pytest

from npurt.errors import ErrorCode, NpuError
from npurt.memory import PAGE_SIZE, open_device
from npurt.soc import API_FUNCTIONS, HTP_PROFILES, PROFILES, QUERY_COMMANDS, all_profiles, get_profile


# --- soc --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,vtcm_mib", [("sm8350", 4), ("sm8450", 8), ("sm8550", 8), ("sm8650", 8),
                                           ("sm8750", 8)])
def test_htp_profiles_are_known_to_get_profile(name, vtcm_mib):
    p = get_profile(name.upper())
    assert p is HTP_PROFILES[name].soc
    assert p.vtcm_size == p.sram_size == vtcm_mib << 20
    assert name not in PROFILES and name in all_profiles()
    assert not any(p.supports(f) for f in API_FUNCTIONS)            # no RKNN API row applies to an HTP SoC
    assert not any(p.supports_query(c) for c in QUERY_COMMANDS)


def test_htp_arch_alias_and_rknn_profiles_have_no_vtcm():
    assert get_profile("v73").name == "sm8550"
    assert all(p.vtcm_size == 0 for p in PROFILES.values())


def test_unknown_soc_lists_htp_socs_too():
    with pytest.raises(NpuError) as err:
        get_profile("sm1234")
    assert err.value.code is ErrorCode.INVALID_ARGUMENT and "sm8350" in str(err.value)


# --- memory -----------------------------------------------------------------------------------------------

def test_open_device_of_an_htp_soc_has_the_vtcm_as_fast_memory():
    dev = open_device("sm8350")
    try:
        assert dev.profile.vtcm_size == dev.stats().sram_total == 4 << 20
        vtcm = dev.alloc(dev.profile.vtcm_size, placement="sram", owner="t")
        assert vtcm.sram_size == 4 << 20
        vtcm.free()
        assert open_device("sm8350") is dev
        dev.close()
    finally:
        dev.close()
    assert dev.closed


def test_compose_stitches_parts_contiguously():
    dev = open_device("sm8350")
    try:
        fast = dev.alloc(2 * PAGE_SIZE, placement="sram", owner="t", name="fast")
        slow = dev.alloc(3 * PAGE_SIZE, owner="t", name="slow")
        before = dev.stats()
        comp = dev.compose([(fast, 0, 2 * PAGE_SIZE), (slow, PAGE_SIZE, 2 * PAGE_SIZE)], owner="t", name="arena")
        assert comp.size == 4 * PAGE_SIZE and comp.placement == "sram+ddr"
        assert dev.stats().sram_bytes == before.sram_bytes and dev.stats().ddr_bytes == before.ddr_bytes
        view = comp.device_view()
        view[:] = np.arange(view.size, dtype=np.uint64).astype(np.uint8)
        assert np.array_equal(fast.device_view(), view[:2 * PAGE_SIZE])
        assert np.array_equal(slow.device_view()[PAGE_SIZE:], view[2 * PAGE_SIZE:])
        assert dev.lookup_device(comp.dev_addr + 3 * PAGE_SIZE)[0] is comp
        with pytest.raises(NpuError):
            dev.compose([(fast, 0, 100), (slow, 0, PAGE_SIZE)])           # only the last part may end mid-page
        with pytest.raises(NpuError):
            dev.compose([(slow, 100, PAGE_SIZE)])                          # not page-aligned
        comp.free()
        assert fast.alive and slow.alive
        assert dev.stats().buffers == before.buffers
        fast.free()
        slow.free()
    finally:
        dev.close()
