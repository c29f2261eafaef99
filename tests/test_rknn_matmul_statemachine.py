"""Random call sequences over the matmul mirror (hypothesis state machine): no Python exception escapes, statuses
are RKNN codes, results stay right, and after teardown no context, mem, device buffer or fd is left."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from npurt.memory import open_device
from npurt.rknn import constants as c
from npurt.rknn import boundary, handles
from npurt.rknn import matmul_math as mm
from npurt.rknn.matmul import (rknn_matmul_create, rknn_matmul_destroy, rknn_matmul_run, rknn_matmul_set_core_mask,
                               rknn_matmul_set_io_mem, rknn_matmul_set_quant_params)
from npurt.rknn.structs import rknn_matmul_ctx, rknn_matmul_info, rknn_matmul_io_attr
from helpers.matmul import quant_params, read, rknn_create_mem, rknn_destroy_mem, write

STATUSES = {0, c.RKNN_ERR_FAIL, c.RKNN_ERR_PARAM_INVALID, c.RKNN_ERR_CTX_INVALID, c.RKNN_ERR_INPUT_INVALID,
            c.RKNN_ERR_OUTPUT_INVALID, c.RKNN_ERR_MALLOC_FAIL}
TYPES = [c.RKNN_INT8_MM_INT8_TO_INT32, c.RKNN_FLOAT16_MM_FLOAT16_TO_FLOAT32, c.RKNN_INT4_MM_INT4_TO_INT16, 0, 99]


class MatmulMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.device = open_device("rk3588")
        self.base = self.device.stats()
        self.n_mems = len(handles.mems)
        self.internal = boundary.internal_errors()
        self.ctxs: list[tuple[rknn_matmul_ctx, rknn_matmul_io_attr, int]] = []
        self.dead: list[rknn_matmul_ctx] = []
        self.mems: list[tuple[rknn_matmul_ctx, object]] = []
        self.bound: dict[int, dict[str, object]] = {}
        self.normal: dict[int, bool] = {}       # B, A and C in the normal (row-major [K, N], [M, K], [M, N]) layout

    @rule(t=st.sampled_from(TYPES), m=st.integers(0, 3), k=st.sampled_from([0, 32, 48, 64]),
          n=st.sampled_from([16, 32, 64]), b_layout=st.integers(0, 3), ac_layout=st.integers(0, 2))
    def create(self, t, m, k, n, b_layout, ac_layout):
        ctx, io = rknn_matmul_ctx(), rknn_matmul_io_attr()
        ret = rknn_matmul_create(ctx, rknn_matmul_info(M=m, K=k, N=n, type=t, B_layout=b_layout,
                                                       AC_layout=ac_layout), io)
        assert ret in STATUSES
        if ret == 0:
            self.ctxs.append((ctx, io, t))
            self.bound[ctx.value] = {}
            self.normal[ctx.value] = b_layout == 0 and ac_layout == 0
        else:
            assert ctx.value == 0

    @precondition(lambda self: self.ctxs or self.dead)
    @rule(data=st.data(), which=st.sampled_from("ABC"), shrink=st.booleans())
    def create_and_bind(self, data, which, shrink):
        ctx, io, _ = data.draw(st.sampled_from(self.ctxs)) if self.ctxs else (self.dead[0], rknn_matmul_io_attr(), 0)
        need = getattr(io, which).size
        size = max(1, need - (1 if shrink else 0))
        mem = rknn_create_mem(ctx, size)
        if not self.ctxs:
            assert mem is None                          # a destroyed context is refused
            return
        assert mem is not None
        self.mems.append((ctx, mem))
        ret = rknn_matmul_set_io_mem(ctx, mem, getattr(io, which))
        assert ret == (c.RKNN_ERR_PARAM_INVALID if size < need else 0)
        if ret == 0:
            self.bound[ctx.value][which] = mem

    @precondition(lambda self: self.mems)
    @rule(data=st.data())
    def destroy_mem(self, data):
        i = data.draw(st.integers(0, len(self.mems) - 1))
        ctx, mem = self.mems.pop(i)
        assert rknn_destroy_mem(ctx, mem) == 0              # a live mem of a live context
        bound = self.bound[ctx.value]
        for which in [w for w, m in bound.items() if m is mem]:
            del bound[which]

    @precondition(lambda self: self.ctxs)
    @rule(data=st.data(), mask=st.sampled_from([0, 1, 2, 3, 4, 7, 8, 0xffff]))
    def core_mask(self, data, mask):
        ctx, _, _ = data.draw(st.sampled_from(self.ctxs))
        assert rknn_matmul_set_core_mask(ctx, mask) in STATUSES

    @precondition(lambda self: self.ctxs)
    @rule(data=st.data(), name=st.sampled_from(["A", "B", "C", "X"]), scale=st.sampled_from([0.5, -1.0, 2.0]))
    def quant(self, data, name, scale):
        ctx, _, _ = data.draw(st.sampled_from(self.ctxs))
        p, keep = quant_params(name, scale)
        assert rknn_matmul_set_quant_params(ctx, p) in STATUSES

    @precondition(lambda self: self.ctxs or self.dead)
    @rule(data=st.data())
    def run(self, data):
        ctx, io, t = data.draw(st.sampled_from(self.ctxs)) if self.ctxs else (self.dead[0], None, 0)
        bound = self.bound.get(ctx.value, {})
        exact = t == c.RKNN_INT8_MM_INT8_TO_INT32 and set(bound) == set("ABC") and self.normal[ctx.value]
        if exact:
            M, K, N = io.A.dims[0], io.A.dims[1], io.B.dims[1]
            rng = np.random.default_rng(M * K + N)
            a = rng.integers(-128, 128, (M, K), dtype=np.int8)
            b = rng.integers(-128, 128, (K, N), dtype=np.int8)
            write(bound["A"], a)
            write(bound["B"], b)
        ret = rknn_matmul_run(ctx)
        if not self.ctxs:
            assert ret == c.RKNN_ERR_CTX_INVALID
        elif set(bound) == set("ABC"):
            assert ret == 0                                 # every operand bound to live memory: it runs
        else:
            assert ret in STATUSES - {0}                    # an operand without memory is refused
        if exact:
            got = read(bound["C"], io.C.size, np.int32).reshape(M, N)
            np.testing.assert_array_equal(got, a.astype(np.int64) @ b.astype(np.int64))

    @precondition(lambda self: self.ctxs or self.dead)
    @rule(data=st.data())
    def destroy(self, data):
        if self.ctxs and data.draw(st.booleans()):
            i = data.draw(st.integers(0, len(self.ctxs) - 1))
            ctx, _, _ = self.ctxs.pop(i)
            assert rknn_matmul_destroy(ctx) == 0
            self.dead.append(ctx)
            self.mems = [(x, m) for x, m in self.mems if x.value != ctx.value]   # released with the context
        else:
            ctx = self.dead[0] if self.dead else rknn_matmul_ctx(0)
            assert rknn_matmul_destroy(ctx) == c.RKNN_ERR_CTX_INVALID

    @invariant()
    def no_internal_error(self):
        assert boundary.internal_errors() == self.internal

    @invariant()
    def handles_match(self):
        live = {h for h, _ in handles.contexts.live("matmul")}
        assert {x.value for x, _, _ in self.ctxs} <= live

    def teardown(self):
        for ctx, mem in self.mems:
            rknn_destroy_mem(ctx, mem)
        for ctx, _, _ in self.ctxs:
            assert rknn_matmul_destroy(ctx) == 0
        assert len(handles.mems) == self.n_mems
        stats = self.device.stats()
        assert stats.buffers == self.base.buffers and stats.open_fds == self.base.open_fds
        self.device.close()


MatmulMachine.TestCase.settings = settings(max_examples=30, stateful_step_count=25, deadline=None,
                                           suppress_health_check=[HealthCheck.too_slow])
TestMatmulMachine = MatmulMachine.TestCase
