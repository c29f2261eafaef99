"""The HTP memory model: activations in VTCM (the device's fast memory) with the overflow spilled to DDR, the
property sizes derived from that plan, and the executor reading and writing exactly the memory the plan says.
"""
from __future__ import annotations

import numpy as np
import pytest

import npurt.qnn as q
from npurt.qnn.backend import core_of, lookup
from npurt.qnn.context import QnnContext
from npurt.qnn.graph import QnnGraph
from npurt.qnn.htp_plan import PROPERTY_GRANULE, plan_htp, round_granule
from npurt.soc.htp import HTP_PROFILES
from helpers.qnn import (SMALL, SPILL, binary, custom_descriptor, defer_config, get_property, htp,  # noqa: F401
                              ok, raw_tensors, sample)


@pytest.mark.parametrize("soc", sorted(HTP_PROFILES))
@pytest.mark.parametrize("size", [SMALL, SPILL])
def test_plan_places_activations_in_vtcm_then_spill(soc, size):
    model = binary(size)
    vtcm = HTP_PROFILES[soc].vtcm_size
    h = plan_htp(model.plan, vtcm)
    assert h.plan.check() == []                               # no two live tensors overlap in the combined arena
    assert h.vtcm_used <= vtcm and h.vtcm_used % 4096 == 0
    for name, off in h.plan.offsets.items():
        end = off + h.plan.sizes[name]
        if name in h.in_vtcm:
            assert end <= h.vtcm_used
        else:
            assert off >= h.vtcm_used and end <= h.vtcm_used + h.spill_size
    assert (h.spill_size > 0) == (not h.in_vtcm.issuperset(h.plan.offsets))
    if model.plan.lower_bound > vtcm:                          # peak live bytes above the VTCM: must spill
        assert h.spill_size > 0
    assert h.spillfill_buffer_size == round_granule(h.spill_size)
    assert h.weights_buffer_size == round_granule(model.plan.weight_size) == PROPERTY_GRANULE


def test_round_granule():
    assert round_granule(0) == 0
    assert round_granule(1) == round_granule(2 << 20) == 2 << 20
    assert round_granule(5_767_168) == 6 << 20                 # the x86 observation: 5.5 MiB -> 6 MiB


def test_executor_uses_the_vtcm_and_the_registered_spillfill(htp):
    """VTCM-placed activations are in the device's VTCM region; spilled ones are in the user's spill buffer."""
    model = binary(SPILL)
    x, ref = sample(SPILL)
    ctx_h = htp.context(model, defer_config())
    spill_size = get_property(htp.qi, ctx_h, q.QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE)[1]
    spill_ptr = htp.alloc(spill_size)
    handle = q.Qnn_MemHandle_t()
    ok(htp.qi.memRegister(ctx_h, custom_descriptor(q.QNN_HTP_MEM_SHARED_SPILLFILL_BUFFER, spill_size,
                                                   fd=q.rpcmem_to_fd(spill_ptr)), 1, handle))
    ok(htp.qi.contextFinalize(ctx_h, None))
    ctx = lookup(ctx_h, QnnContext)
    core = core_of("sm8350")
    stats = core.device.stats()
    assert stats.sram_bytes == HTP_PROFILES["sm8350"].vtcm_size    # the VTCM is taken while a context uses it
    graph = htp.graph(ctx_h)
    ins, outs, yout = raw_tensors(model, x)
    ok(htp.qi.graphExecute(graph, ins, 1, outs, 1, None, None))
    assert np.abs(q.tensor_specs(model)[1][0].unpack(yout) - ref).max() < 1e-4
    g = lookup(graph, QnnGraph)
    vtcm = core.vtcm.device_view()                           # the VTCM memfd, through its own mapping
    spill = q.rpcmem_view(spill_ptr, spill_size)
    checked = {"vtcm": 0, "spill": 0}
    intact = 0
    for name, off in ctx.htp.plan.offsets.items():
        stored = g.executor.tensor_view(name).reshape(-1).view(np.uint8)
        n = stored.size
        if name in ctx.htp.in_vtcm:
            same = np.array_equal(vtcm[off:off + n], stored)
            checked["vtcm"] += 1
        else:
            same = np.array_equal(spill[off - ctx.htp.vtcm_used:off - ctx.htp.vtcm_used + n], stored)
            checked["spill"] += 1
        # a tensor's slot may have been reused by a later tensor: compare only slots whose bytes are still its own
        assert same or _overwritten(ctx, name)
        intact += same
    assert checked["vtcm"] and checked["spill"] and intact >= 2
    ok(htp.qi.contextFree(ctx_h, None))
    assert core.device.stats().sram_bytes == 0


def _overwritten(ctx, name: str) -> bool:
    """True when another tensor that lives later shares bytes with `name` (its slot was legitimately reused)."""
    plan = ctx.htp.plan
    s, e = plan.lifetimes[name]
    off, size = plan.offsets[name], plan.sizes[name]
    return any(plan.lifetimes[o][0] >= e and plan.offsets[o] < off + size and off < plan.offsets[o] + plan.sizes[o]
               for o in plan.offsets if o != name)


def test_internal_buffers_when_nothing_is_registered(htp):
    """Without external buffers QNN allocates weights and spill-fill itself: same results, freed with the context."""
    model = binary(SPILL)
    x, ref = sample(SPILL)
    before = core_of("sm8350").device.stats()
    ctx_h = htp.context(model)
    graph = htp.graph(ctx_h)
    ins, outs, yout = raw_tensors(model, x)
    ok(htp.qi.graphExecute(graph, ins, 1, outs, 1, None, None))
    assert np.abs(q.tensor_specs(model)[1][0].unpack(yout) - ref).max() < 1e-4
    owners = dict(core_of("sm8350").device.stats().by_owner)
    assert {"qnn-weights", "qnn-spillfill", "qnn-io", "qnn-vtcm"} <= set(owners)
    ok(htp.qi.contextFree(ctx_h, None))
    after = core_of("sm8350").device.stats()
    assert after.ddr_bytes == before.ddr_bytes and after.sram_bytes == before.sram_bytes
    assert not {"qnn-weights", "qnn-spillfill", "qnn-io", "qnn-vtcm"} & set(after.by_owner)
