"""Random register / deregister / execute / finalize / free sequences against the QNN mirror (hypothesis).

Whatever the order — registering freed memory, executing with stale handles, freeing rpcmem under a live handle,
freeing contexts with handles registered — the interpreter must not crash, every call must return a QNN code,
the live handles must be exactly the ones the model expects, and after teardown no fd, device or handle is left.
"""
from __future__ import annotations

import gc

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule

import npurt.qnn as q
from npurt.qnn import boundary
from npurt.qnn import device as htp_device
from npurt.qnn.mem_registry import REGISTRY
from conftest import open_fds
from helpers.qnn import (SMALL, binary, code, custom_descriptor, defer_config,
                              ion_descriptor, raw_tensors, sample)

WSIZE_DEFAULT = 2 << 20     # the small model's WEIGHTS_BUFFER_SIZE
KNOWN = {0, 1000, 1002, 1100, 5000, 5002, 5003, 5010, 6000, 6001, 6004, 6023, 6039,
         8000, 8001, 8002, 8003, 8004, 8005}


class QnnMachine(RuleBasedStateMachine):
    """Model: which handles are live, per context; which rpcmem pointers are live."""

    contexts = Bundle("contexts")
    pointers = Bundle("pointers")

    def __init__(self) -> None:
        super().__init__()
        self.live_ctx: dict[int, dict] = {}        # context handle -> {"handles": set, "deferred", "finalized"}
        self.live_ptr: set[int] = set()
        self.ptr_size: dict[int, int] = {}
        self.model = binary(SMALL)
        self.specs = q.tensor_specs(self.model)
        self.x, _ = sample(SMALL)
        gc.collect()                             # earlier tests' garbage must not close its fds during this one
        self.fds = open_fds()                    # after the (cached) model and onnxruntime reference exist
        self.internal = boundary.internal_errors()
        self.qi = q.interface("fastrpc", soc="sm8350")
        self.backend = q.Qnn_BackendHandle_t()
        assert self.qi.backendCreate(None, None, self.backend) == 0

    def check(self, ret: int) -> int:
        c = code(ret)
        assert c in KNOWN, q.error_string(c)
        return c

    @rule(target=contexts, deferred=st.booleans())
    def create(self, deferred):
        ctx = q.Qnn_ContextHandle_t()
        cfg = defer_config() if deferred else None
        assert self.check(self.qi.contextCreateFromBinary(self.backend, None, cfg, self.model, 0, ctx, None)) == 0
        self.live_ctx[ctx.value] = {"handles": set(), "ion": set(), "deferred": deferred, "finalized": not deferred}
        return ctx.value

    @rule(target=pointers, which=st.sampled_from(["input", "output", "weights"]))
    def alloc(self, which):
        size = WSIZE_DEFAULT if which == "weights" else self.specs[which == "output"][0].nbytes
        p = q.rpcmem_alloc(q.RPCMEM_HEAP_ID_SYSTEM, q.RPCMEM_DEFAULT_FLAGS, size)
        assert p
        self.live_ptr.add(p)
        self.ptr_size[p] = size
        return p

    @rule(ctx=contexts, p=pointers, output=st.booleans())
    def register_ion(self, ctx, p, output):
        ins, outs = q.io_tensors(self.model)
        t = outs[0] if output else ins[0]
        h = q.Qnn_MemHandle_t()
        c = self.check(self.qi.memRegister(ctx, ion_descriptor(t, q.rpcmem_to_fd(p)), 1, h))
        fresh = ctx in self.live_ctx and p in self.live_ptr and p not in self.live_ctx[ctx]["ion"] \
            and self.ptr_size[p] >= self.specs[output][0].nbytes
        if fresh:
            assert c == 0, "a live context must register a live, large enough, not yet registered buffer"
        if c == 0:
            assert ctx in self.live_ctx and p in self.live_ptr          # a freed context or buffer is refused
            self.live_ctx[ctx]["ion"].add(p)
            self.live_ctx[ctx]["handles"].add(h.value)
        else:
            assert h.value is None

    @rule(ctx=contexts, p=pointers)
    def register_weights(self, ctx, p):
        h = q.Qnn_MemHandle_t()
        c = self.check(self.qi.memRegister(ctx, custom_descriptor(q.QNN_HTP_MEM_WEIGHTS_BUFFER, WSIZE_DEFAULT,
                                                                  fd=q.rpcmem_to_fd(p)), 1, h))
        if c == 0:
            state = self.live_ctx[ctx]
            assert state["deferred"] and not state["finalized"]
            state["handles"].add(h.value)

    @rule(ctx=contexts)
    def finalize(self, ctx):
        c = self.check(self.qi.contextFinalize(ctx, None))
        if ctx not in self.live_ctx:
            assert c != 0                                   # a freed context is refused
        if c == 0:
            self.live_ctx[ctx]["finalized"] = True

    @rule(ctx=contexts, handle_of=contexts, use_handles=st.booleans())
    def execute(self, ctx, handle_of, use_handles):
        g = q.Qnn_GraphHandle_t()
        c = self.check(self.qi.graphRetrieve(ctx, self.model.graph.name, g))
        assert (c == 0) == (ctx in self.live_ctx and self.live_ctx[ctx]["finalized"])
        if c != 0:
            return
        ins, outs, _ = raw_tensors(self.model, self.x)
        with_handle = use_handles and handle_of in self.live_ctx and self.live_ctx[handle_of]["handles"]
        if with_handle:
            h = sorted(self.live_ctx[handle_of]["handles"])[0]
            ins[0].v1.memType = q.QNN_TENSORMEMTYPE_MEMHANDLE
            ins[0].v1.memHandle = h
        c = self.check(self.qi.graphExecute(g, ins, 1, outs, 1, None, None))
        if not with_handle:
            assert c == 0                                   # raw buffers on a finalized live context: it runs

    @rule(ctx=contexts, pick=st.integers(0, 3), bogus=st.booleans())
    def deregister(self, ctx, pick, bogus):
        handles = sorted(self.live_ctx.get(ctx, {"handles": set()})["handles"])
        chosen = handles[pick % len(handles):][:1] if handles else []
        arg = chosen + ([0xBAD] if bogus or not chosen else [])
        c = self.check(self.qi.memDeRegister(arg, len(arg)))
        for h in chosen:
            rec = REGISTRY.get(h)
            if rec is None:                                   # removed, even if the call reported an error
                self.live_ctx[ctx]["handles"].discard(h)
            else:
                assert rec.in_use and c == q.QNN_MEM_ERROR_INVALID_ARGUMENT

    @rule(ctx=consumes(contexts))
    def free_context(self, ctx):
        c = self.check(self.qi.contextFree(ctx, None))
        assert (c == 0) == (ctx in self.live_ctx)
        self.live_ctx.pop(ctx, None)

    @rule(p=consumes(pointers), interior=st.booleans())
    def free_pointer(self, p, interior):
        q.rpcmem_free(p + 64 if interior else p)              # interior: ignored (a leak until teardown)
        if not interior:
            self.live_ptr.discard(p)
        else:
            self.leaked = getattr(self, "leaked", set()) | {p}

    @invariant()
    def no_internal_error(self):
        assert boundary.internal_errors() == self.internal

    @invariant()
    def handles_match_the_model(self):
        expected = set().union(*(s["handles"] for s in self.live_ctx.values())) if self.live_ctx else set()
        live = {r.handle for r in (REGISTRY.get(h) for h in expected) if r is not None}
        assert live == expected
        assert REGISTRY.count() == len(expected)

    def teardown(self):
        assert self.qi.backendFree(self.backend) == 0
        assert REGISTRY.count() == 0
        for p in self.live_ptr | getattr(self, "leaked", set()):
            q.rpcmem_free(p)
        assert q.rpcmem_leaks() == []
        assert htp_device.open_soc_devices() == {}
        gc.collect()                             # views the machine's steps left in cycles hold no fds then
        assert open_fds() == self.fds


QnnMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=25, deadline=None,
                                        suppress_health_check=[HealthCheck.too_slow])
TestQnnStateMachine = QnnMachine.TestCase
