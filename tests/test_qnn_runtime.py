"""One runtime under both mirrors: HTP SoCs in `npurt.soc` and `npurt.memory.open_device`, composite (stitched)
buffers in the memory layer, and the QNN mirror executing through `npurt.runtime.Context`."""
from __future__ import annotations

import numpy as np
import pytest

from npurt.errors import ErrorCode, NpuError
from npurt.memory import PAGE_SIZE, open_device
from npurt.tensor import DType, Layout
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


# --- runtime: an external plan, internal memory made of parts ----------------------------------------------

def test_runtime_context_runs_an_htp_plan_over_a_composite_arena():
    """`Context(plan=...)` on an HTP device with a [VTCM | DDR] composite internal memory: the numbers match the
    model's own plan, and the activations live where the HTP plan says."""
    from npurt.qnn.htp_plan import plan_htp
    from npurt.runtime import Context, ContextOptions, InputData, MemRef
    from helpers.qnn import SPILL, binary, sample
    model, (x, ref) = binary(SPILL), sample(SPILL)
    dev = open_device("sm8350")
    htp = plan_htp(model.plan, dev.profile.vtcm_size)
    assert htp.vtcm_used and htp.spill_size
    vtcm = dev.alloc(dev.profile.vtcm_size, placement="sram", owner="t")
    spill = dev.alloc(htp.spill_size, owner="t")
    arena = dev.compose([(vtcm, 0, htp.vtcm_used), (spill, 0, htp.spill_size)], owner="t")
    with pytest.raises(NpuError) as err:
        Context(model, device=dev)                                   # compiled for rk3588
    assert err.value.code is ErrorCode.PLATFORM_MISMATCH
    ctx = Context(model, device=dev, plan=htp.plan, any_soc=True, options=ContextOptions(internal_outside=True))
    try:
        assert ctx.plan is htp.plan and ctx.internal_capacity == htp.vtcm_used + htp.spill_size
        ctx.set_internal_memory(MemRef(arena))
        ctx.set_inputs([InputData(0, x, DType.FLOAT32, Layout.NCHW)])
        ctx.run()
        y, = ctx.get_outputs(want_float=True)
        assert np.abs(y.reshape(ref.shape) - ref).max() < 1e-4
        name = next(n for n in htp.plan.offsets if n not in htp.in_vtcm)
        view = ctx.executor.tensor_view(name).reshape(-1).view(np.uint8)
        off = htp.plan.offsets[name] - htp.vtcm_used
        assert view.ctypes.data == arena.device_view()[htp.vtcm_used + off:].ctypes.data
        in_ddr = spill.device_view()[off:off + view.size]                # a spilled activation is in the DDR part
        assert np.array_equal(in_ddr, view)
        in_ddr[:] = ~in_ddr
        assert np.array_equal(in_ddr, view)                                # the same memory, mapped twice
    finally:
        ctx.destroy()
        for b in (arena, spill, vtcm):
            b.free()
        dev.close()


def test_runtime_context_refuses_a_plan_that_does_not_fit_the_model():
    import dataclasses
    from npurt.runtime import Context
    from helpers.qnn import SMALL, binary
    model = binary(SMALL)
    bad = dataclasses.replace(model.plan, offsets={})
    with pytest.raises(NpuError) as err:
        Context(model, soc="rk3588", plan=bad)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT


# --- the QNN mirror runs on runtime.Context ---------------------------------------------------------------

def test_qnn_graph_execute_goes_through_runtime_context_run(monkeypatch):
    import npurt.qnn as q
    from npurt.qnn.backend import core_of, lookup
    from npurt.qnn.context import QnnContext
    from npurt.qnn.graph import QnnGraph
    from npurt.runtime import Context
    from helpers.qnn import SPILL, Htp, binary, ok, raw_tensors, sample
    calls = []
    real_run = Context.run

    def spy(self):
        calls.append(self)
        return real_run(self)

    monkeypatch.setattr(Context, "run", spy)
    h = Htp()
    try:
        model, (x, ref) = binary(SPILL), sample(SPILL)
        ctx_h = h.context(model)
        graph = h.graph(ctx_h)
        ctx, g = lookup(ctx_h, QnnContext), lookup(graph, QnnGraph)
        rt = ctx.runtime
        assert isinstance(rt, Context) and rt.plan is ctx.htp.plan and rt.device is core_of("sm8350").device
        ins, outs, yout = raw_tensors(model, x)
        ok(h.qi.graphExecute(graph, ins, 1, outs, 1, None, None))
        ok(h.qi.graphExecute(graph, ins, 1, outs, 1, None, None))
        assert calls == [rt, rt] and rt.perf.runs == g.runs == 2
        assert np.abs(q.tensor_specs(model)[1][0].unpack(yout) - ref).max() < 1e-4
        # the runtime's internal memory is the VTCM + spill-fill arena, its executor the graph's
        assert rt.internal_memory.buffer.device_view().ctypes.data == ctx.arena.ctypes.data
        assert ctx.vtcm_view().ctypes.data == rt.internal_memory.device_u8().ctypes.data
        assert g.executor is rt.executor
        ok(h.qi.contextFree(ctx_h, None))
        assert rt.destroyed and ctx.runtime is None
    finally:
        h.close()
