"""Random sequences of RKNN mirror calls — right and wrong ones (destroyed contexts, stale mems, wrong sizes,
double destroys, mixed I/O paths, raw pointers that are wild, freed or too short, fds that can shrink) — must never
raise or crash, must return the documented status, must not leak an fd, and must bring the device's accounting
back to where it was once everything is destroyed."""
from __future__ import annotations

import ctypes
import gc
import os
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, rule

from npurt.errors import NpuError
from npurt.memory import open_device
from npurt.rknn import *  # noqa: F403
from npurt.rknn import boundary, handles
from conftest import open_fds
from helpers.models import convnet, image

MODEL = convnet()
X = image(seed=99)
FLAGS = [0, RKNN_FLAG_COLLECT_PERF_MASK, RKNN_FLAG_MEM_ALLOC_OUTSIDE, RKNN_FLAG_INTERNAL_ALLOC_OUTSIDE,
         RKNN_FLAG_ENABLE_SRAM, RKNN_FLAG_DISABLE_FLUSH_OUTPUT_MEM_CACHE]
STATUSES = {RKNN_SUCC, RKNN_ERR_FAIL, RKNN_ERR_PARAM_INVALID, RKNN_ERR_CTX_INVALID, RKNN_ERR_INPUT_INVALID,
            RKNN_ERR_OUTPUT_INVALID, RKNN_ERR_MODEL_INVALID}


def _unmapped_address() -> int:
    """An address that was mapped a moment ago and is not any more (what a freed C buffer looks like)."""
    import mmap
    m = mmap.mmap(-1, 4 * 4096)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    gc.collect()
    m.close()
    return addr


@dataclass
class Ctx:
    handle: rknn_context
    flag: int
    live: bool = True
    io_mode: str | None = None       # "general" after a good rknn_inputs_set, "zero_copy" after rknn_set_io_mem
    internal: "Mem | None" = None    # the memory a good rknn_set_internal_mem gave it
    bound: dict = field(default_factory=dict)    # {False: input Mem, True: output Mem} of good rknn_set_io_mem
    ran: bool = False                # a rknn_run succeeded

    def ready(self) -> bool:
        """rknn_run must succeed: weights in place (no MEM_ALLOC_OUTSIDE: this machine never sets weight memory),
        internal memory alive where it is the user's, the inputs set (general) or every tensor bound (zero-copy)."""
        if self.flag & RKNN_FLAG_MEM_ALLOC_OUTSIDE:
            return False
        if self.internal_outside and not (self.internal is not None and self.internal.memory_alive):
            return False
        if self.io_mode == "general":
            return True
        return all(k in self.bound and self.bound[k].memory_alive for k in (False, True))

    @property
    def internal_outside(self) -> bool:
        return bool(self.flag & (RKNN_FLAG_MEM_ALLOC_OUTSIDE | RKNN_FLAG_INTERNAL_ALLOC_OUTSIDE))


@dataclass
class Mem:
    struct: rknn_tensor_mem
    owner: Ctx | None          # None: RKNN_MEM_FLAG_ALLOC_NO_CONTEXT
    live: bool = True
    parent: "Mem | None" = None  # the memory a from_phys wrapper wraps

    @property
    def memory_alive(self) -> bool:
        return self.live and (self.parent is None or self.parent.memory_alive)

    @property
    def root(self) -> "Mem":
        """The memory a chain of from_phys wrappers wraps."""
        return self if self.parent is None else self.parent.root

    def overlaps(self, other: "Mem") -> bool:
        """The two structs name device memory that shares a byte."""
        a, b = self.struct, other.struct
        return a.phys_addr < b.phys_addr + b.size and b.phys_addr < a.phys_addr + a.size


def _internal_size(c: Ctx) -> int:
    size = rknn_mem_size()
    assert rknn_query(c.handle, RKNN_QUERY_MEM_SIZE, size, ctypes.sizeof(size)) == RKNN_SUCC
    return size.total_internal_size


class MirrorMachine(RuleBasedStateMachine):
    ctxs = Bundle("ctxs")
    mems = Bundle("mems")

    @initialize()
    def setup(self):
        os.environ.pop("NPURT_SOC", None)
        self.dev = open_device()
        self.base = (self.dev.stats().buffers, self.dev.stats().sram_bytes, len(handles.contexts), len(handles.mems))
        self.internal = boundary.internal_errors()
        gc.collect()                        # garbage of earlier tests must not close its fds during this one
        self.fds = open_fds()
        self.all_ctx: list[Ctx] = []
        self.all_mem: list[Mem] = []
        self.user_fds: list[int] = []

    # --- contexts ---------------------------------------------------------------------------------------------
    @rule(target=ctxs, flag=st.sampled_from(FLAGS))
    def init(self, flag):
        h = rknn_context()
        assert rknn_init(h, MODEL, len(MODEL), flag, None) == RKNN_SUCC
        c = Ctx(h, flag)
        self.all_ctx.append(c)
        return c

    @rule(target=ctxs, src=ctxs)
    def dup(self, src):
        h = rknn_context()
        ret = rknn_dup_context(src.handle, h)
        assert ret == (RKNN_SUCC if src.live else RKNN_ERR_CTX_INVALID)
        c = Ctx(h, src.flag, live=ret == RKNN_SUCC)
        self.all_ctx.append(c)
        return c

    @rule(c=ctxs)
    def destroy(self, c):
        assert rknn_destroy(c.handle) == (RKNN_SUCC if c.live else RKNN_ERR_CTX_INVALID)
        if c.live:
            c.live = False
            for m in self.all_mem:
                if m.owner is c:
                    m.live = False          # released with its context

    # --- memory -------------------------------------------------------------------------------------------------
    @rule(target=mems, c=ctxs, size=st.one_of(st.integers(-2, 3000), st.sampled_from([768, 1280, 4096, 1 << 33])))
    def create(self, c, size):
        mem = rknn_create_mem(c.handle, size)
        ok = c.live and 0 < size <= 0xFFFFFFFF
        assert (mem is not None) == ok
        m = Mem(mem if mem is not None else rknn_tensor_mem(), c, live=ok)
        self.all_mem.append(m)
        return m

    @rule(target=mems, size=st.integers(1, 9000), sram=st.booleans())
    def create_no_context(self, size, sram):
        flags = RKNN_MEM_FLAG_ALLOC_NO_CONTEXT | (RKNN_FLAG_MEMORY_TRY_ALLOC_SRAM if sram else 0)
        mem = rknn_create_mem2(0, size, flags)
        assert mem is not None
        m = Mem(mem, None)
        self.all_mem.append(m)
        return m

    @rule(target=mems, c=ctxs, src=mems)
    def wrap_phys(self, c, src):
        mem = rknn_create_mem_from_phys(c.handle, src.struct.phys_addr or 4096, src.struct.virt_addr, 16)
        if c.live and not src.memory_alive and mem is not None:
            # a freed device address may since belong to another live buffer (one this machine cannot name):
            # that wrapper is destroyed at once and joins the bundle as a stale struct
            assert rknn_destroy_mem(c.handle, mem) == RKNN_SUCC
            m = Mem(mem, c, live=False)
            self.all_mem.append(m)
            return m
        ok = c.live and src.memory_alive and src.root.struct.size >= 16    # the 16 bytes lie in the memory
        assert (mem is not None) == ok
        m = Mem(mem if mem is not None else rknn_tensor_mem(), c, live=ok, parent=src if ok else None)
        self.all_mem.append(m)
        return m

    @rule(c=ctxs, m=mems)
    def destroy_mem(self, c, m):
        ret = rknn_destroy_mem(c.handle, m.struct)
        if m.live and m.owner is None:
            expect = RKNN_SUCC
        elif not c.live:
            expect = RKNN_ERR_CTX_INVALID
        else:
            expect = RKNN_SUCC if m.live else RKNN_ERR_PARAM_INVALID
        assert ret == expect
        if ret == RKNN_SUCC:
            m.live = False

    @rule(m=mems, mode=st.sampled_from([1, 2, 3, 0, 9]))
    def sync(self, m, mode):
        ret = rknn_mem_sync(0, m.struct, mode)
        assert ret == (RKNN_SUCC if mode in (1, 2, 3) and m.memory_alive else RKNN_ERR_PARAM_INVALID)

    @rule(m=mems)
    def view(self, m):
        if m.memory_alive:
            v = mem_view(m.struct)
            v[:1] = 1
            assert mem_view(m.struct)[0] == 1
        else:
            with pytest.raises(NpuError):   # a stale struct, or one whose memory is gone, is refused
                mem_view(m.struct)

    @rule(target=mems, c=ctxs, kind=st.sampled_from(["sealable", "sealed", "unsealable", "regular"]),
          pages=st.integers(1, 3), short=st.booleans())
    def wrap_fd(self, c, kind, pages, short):
        """A user fd of every kind: the ones that could shrink under the mapping are refused or sealed."""
        if kind == "regular":
            import tempfile
            fd = os.open(tempfile.gettempdir(), os.O_TMPFILE | os.O_RDWR)
        else:
            fd = os.memfd_create("user", 0 if kind == "unsealable" else os.MFD_ALLOW_SEALING)
        self.user_fds.append(fd)
        os.ftruncate(fd, pages * 4096)
        if kind == "sealed":
            import fcntl
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)
        size = pages * 4096 + (4096 if short else 0)
        mem = rknn_create_mem_from_fd(c.handle, fd, 0, size, 0)
        ok = c.live and kind in ("sealable", "sealed") and not short
        assert (mem is not None) == ok
        if ok:
            try:
                os.ftruncate(fd, 0)
                raise AssertionError("an imported fd could be shrunk under its mapping")
            except PermissionError:
                pass
        m = Mem(mem if mem is not None else rknn_tensor_mem(), c, live=ok)
        self.all_mem.append(m)
        return m

    @rule(c=ctxs, m=mems, kind=st.sampled_from(["wild", "unmapped", "mem", "past_end"]))
    def inputs_set_raw(self, c, m, kind):
        """rknn_inputs_set with a raw buf: wild, unmapped, a mem's virt_addr (live or freed), or a range that runs
        past the end of the runtime buffer it starts in."""
        addr = {"wild": 0x10, "unmapped": _unmapped_address(), "mem": m.struct.virt_addr,
                "past_end": m.struct.virt_addr}[kind]
        size = m.struct.size + 49152 if kind == "past_end" else X.nbytes
        inp = rknn_input(index=0, buf=addr, size=size, type=RKNN_TENSOR_FLOAT32, fmt=RKNN_TENSOR_NCHW)
        ret = rknn_inputs_set(c.handle, 1, [inp])
        if not c.live:
            assert ret == RKNN_ERR_CTX_INVALID
        elif kind in ("wild", "unmapped") or (kind == "past_end" and m.memory_alive):
            assert ret in (RKNN_ERR_PARAM_INVALID, RKNN_ERR_INPUT_INVALID)
        else:
            assert ret in (RKNN_SUCC, RKNN_ERR_PARAM_INVALID, RKNN_ERR_INPUT_INVALID)
            if ret == RKNN_SUCC:
                assert c.io_mode != "zero_copy"
                c.io_mode = "general"

    @rule(c=ctxs, m=mems, kind=st.sampled_from(["wild", "unmapped", "mem"]))
    def outputs_prealloc_raw(self, c, m, kind):
        addr = {"wild": 0x10, "unmapped": _unmapped_address(), "mem": m.struct.virt_addr}[kind]
        out = (rknn_output * 1)()
        out[0].want_float, out[0].is_prealloc, out[0].buf, out[0].size = 1, 1, addr, 1280
        ret = rknn_outputs_get(c.handle, 1, out, None)
        if not c.live:
            assert ret == RKNN_ERR_CTX_INVALID
        elif kind != "mem":
            assert ret in (RKNN_ERR_PARAM_INVALID, RKNN_ERR_OUTPUT_INVALID)
        else:
            assert ret in (RKNN_SUCC, RKNN_ERR_PARAM_INVALID, RKNN_ERR_OUTPUT_INVALID)

    # --- binding and running ------------------------------------------------------------------------------------------
    @rule(c=ctxs, cmd=st.sampled_from([RKNN_QUERY_INPUT_ATTR, RKNN_QUERY_NATIVE_OUTPUT_ATTR, RKNN_QUERY_MEM_SIZE]),
          index=st.integers(0, 2), short=st.booleans())
    def query(self, c, cmd, index, short):
        info = rknn_mem_size() if cmd == RKNN_QUERY_MEM_SIZE else rknn_tensor_attr(index=index)
        size = ctypes.sizeof(info) - (1 if short else 0)
        ret = rknn_query(c.handle, cmd, info, size)
        if not c.live:
            assert ret == RKNN_ERR_CTX_INVALID
        elif short or (cmd != RKNN_QUERY_MEM_SIZE and index > 0):
            assert ret == RKNN_ERR_PARAM_INVALID
        else:
            assert ret == RKNN_SUCC

    @rule(c=ctxs, m=mems, output=st.booleans())
    def set_io(self, c, m, output):
        attr = rknn_tensor_attr(index=0)
        cmd = RKNN_QUERY_NATIVE_OUTPUT_ATTR if output else RKNN_QUERY_NATIVE_INPUT_ATTR
        if c.live:
            assert rknn_query(c.handle, cmd, attr, ctypes.sizeof(attr)) == RKNN_SUCC
        ret = rknn_set_io_mem(c.handle, m.struct, attr)
        if not c.live:
            assert ret == RKNN_ERR_CTX_INVALID
            return
        ok = (m.memory_alive and c.io_mode != "general" and m.struct.size >= attr.size_with_stride
              and not (c.internal_outside and c.internal is None and _internal_size(c))
              and not (c.internal is not None and m.overlaps(c.internal)))
        assert ret == (RKNN_SUCC if ok else RKNN_ERR_PARAM_INVALID)
        if ok:
            c.io_mode = "zero_copy"
            c.bound[output] = m

    @rule(c=ctxs, m=mems)
    def set_internal(self, c, m):
        ret = rknn_set_internal_mem(c.handle, m.struct)
        if not c.live:
            assert ret == RKNN_ERR_CTX_INVALID
            return
        ok = m.memory_alive and c.internal_outside and m.struct.size >= _internal_size(c)
        assert ret == (RKNN_SUCC if ok else RKNN_ERR_PARAM_INVALID)
        if ok:
            c.internal = m

    @rule(c=ctxs, short=st.booleans())
    def inputs_set(self, c, short):
        inp = rknn_input(index=0, buf=X.ctypes.data, size=X.nbytes // (2 if short else 1), type=RKNN_TENSOR_FLOAT32,
                         fmt=RKNN_TENSOR_NCHW)
        ret = rknn_inputs_set(c.handle, 1, [inp])
        if not c.live:
            assert ret == RKNN_ERR_CTX_INVALID
        elif c.io_mode == "zero_copy":
            assert ret == RKNN_ERR_PARAM_INVALID          # the general and zero-copy paths do not mix
        else:
            assert ret == (RKNN_ERR_INPUT_INVALID if short else RKNN_SUCC)
            if not short:
                c.io_mode = "general"

    @rule(c=ctxs)
    def run(self, c):
        ret = rknn_run(c.handle, None)
        if not c.live:
            assert ret == RKNN_ERR_CTX_INVALID
        elif c.ready():
            assert ret == RKNN_SUCC
            c.ran = True
        else:
            assert ret in STATUSES - {RKNN_SUCC, RKNN_ERR_CTX_INVALID}

    @rule(c=ctxs)
    def outputs(self, c):
        out = (rknn_output * 1)()
        out[0].want_float = 1
        ret = rknn_outputs_get(c.handle, 1, out, None)
        if not c.live:
            assert ret == RKNN_ERR_CTX_INVALID
            return
        if c.io_mode == "zero_copy" or c.flag & RKNN_FLAG_DISABLE_FLUSH_OUTPUT_MEM_CACHE:
            assert ret == RKNN_ERR_PARAM_INVALID      # zero-copy outputs, or outputs the runtime does not invalidate
        else:
            assert ret == (RKNN_SUCC if c.ran and c.io_mode == "general" else RKNN_ERR_OUTPUT_INVALID)
        if ret == RKNN_SUCC:
            assert output_view(out[0]).size == 320 and np.isfinite(output_view(out[0])).all()
            assert rknn_outputs_release(c.handle, 1, out) == RKNN_SUCC
            assert rknn_outputs_release(c.handle, 1, out) == RKNN_SUCC       # harmless twice

    @invariant()
    def no_internal_error(self):
        """Whatever the calls, no mirror call ended in npurt's own bug (ErrorCode.INTERNAL)."""
        if hasattr(self, "internal"):
            assert boundary.internal_errors() == self.internal

    @invariant()
    def registries_match(self):
        if not hasattr(self, "all_ctx"):
            return
        live = sum(1 for c in self.all_ctx if c.live)
        assert len(handles.contexts) == self.base[2] + live
        assert len(handles.mems) == self.base[3] + sum(1 for m in self.all_mem if m.live)

    def teardown(self):
        if not hasattr(self, "all_ctx"):
            return
        for m in self.all_mem:
            if m.live and m.owner is None:
                assert rknn_destroy_mem(0, m.struct) == RKNN_SUCC
        for c in self.all_ctx:
            if c.live:
                assert rknn_destroy(c.handle) == RKNN_SUCC
        for fd in self.user_fds:
            os.close(fd)
        gc.collect()                        # views the machine's steps left in cycles hold no fds then
        stats = self.dev.stats()
        assert (stats.buffers, stats.sram_bytes, len(handles.contexts), len(handles.mems)) == self.base
        # fewer is fine: the machine of an earlier example, still held by hypothesis at setup, may let go of its fds
        assert open_fds() <= self.fds, f"fd leak: {open_fds()} open, {self.fds} at setup"
        self.dev.close()


MirrorMachine.TestCase.settings = settings(max_examples=25, stateful_step_count=30, deadline=None,
                                           suppress_health_check=list(HealthCheck))
TestMirrorMachine = MirrorMachine.TestCase
