"""The RKNN C-API mirror calls the CLI makes, each checked: the general path (inputs_set / outputs_get), the
zero-copy path (native-format buffers from rknn_create_mem bound with rknn_set_io_mem), MEM_SIZE, and the board SoC.

The mirror takes the board's SoC from `$NPURT_SOC` as librknnrt takes it from the hardware; `board_soc` sets it for
the duration of one command and restores it afterwards.
"""
from __future__ import annotations

import ctypes
import os
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

from npurt.errors import ErrorCode, NpuError

if TYPE_CHECKING:
    import numpy as np


def rknn_profile(soc: str | None):
    """The profile of `soc` for a command that drives the RKNN API; an HTP SoC is INVALID_ARGUMENT saying so."""
    from npurt.soc import get_profile
    from npurt.soc.htp import is_htp_soc
    if is_htp_soc(soc):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{soc} is an HTP SoC, not an RKNN target: this command runs the "
                                                   f"RKNN API; give an RKNN SoC (e.g. rk3588)")
    return get_profile(soc)


# The general (copying) path: what a SoC's API support table must list for it (librknnmrt lists none of them).
GENERAL_API = ("rknn_inputs_set", "rknn_outputs_get", "rknn_outputs_release")


def has_general_api(profile: Any) -> bool:
    """Whether the SoC's runtime has the general API (seed table 3-1); without it only zero copy runs."""
    return all(profile.supports(f) for f in GENERAL_API)


@contextmanager
def board_soc(soc: str) -> Iterator[None]:
    """Run the enclosed RKNN calls on `soc` (sets `$NPURT_SOC`, restores it on exit)."""
    saved = os.environ.get("NPURT_SOC")
    os.environ["NPURT_SOC"] = soc
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("NPURT_SOC", None)
        else:
            os.environ["NPURT_SOC"] = saved


class Rknn:
    """The handful of RKNN mirror calls the demo makes, each checked (a failing status becomes an NpuError)."""

    def __init__(self) -> None:
        import npurt.rknn as r
        self.r = r

    def check(self, what: str, status: int) -> None:
        if status != self.r.RKNN_SUCC:
            raise NpuError(ErrorCode.FAIL, f"{what} returned {status}")

    def query(self, ctx: Any, cmd: int, info: Any) -> Any:
        self.check(f"rknn_query({cmd})", self.r.rknn_query(ctx, cmd, info, ctypes.sizeof(info)))
        return info


def mem_size(rk: Rknn, ctx: Any) -> dict:
    ms_ = rk.query(ctx, rk.r.RKNN_QUERY_MEM_SIZE, rk.r.rknn_mem_size())
    return {f: int(getattr(ms_, f)) for f in ("total_weight_size", "total_internal_size", "total_dma_allocated_size",
                                               "total_sram_size", "free_sram_size")}


def random_frames(compiled: Any, n: int) -> list[list[np.ndarray]]:
    """`n` deterministic random frames (float inputs uniform in [0, 1), as the calibration set)."""
    import numpy as np
    rng = np.random.default_rng(42)
    frames = []
    for _ in range(n):
        frame = []
        for name in compiled.graph.inputs:
            st = compiled.storage[name]
            dt = np.dtype(st.logical_dtype)
            frame.append(rng.random(st.shape, dtype=np.float32).astype(dt) if dt.kind == "f"
                         else rng.integers(0, 4, st.shape).astype(dt))
        frames.append(frame)
    return frames


def general_frame(rk: Rknn, ctx: Any, frame: list[np.ndarray], n_out: int) -> tuple[list[np.ndarray], float]:
    """rknn_inputs_set -> rknn_run -> rknn_outputs_get (float) -> copy -> release; returns outputs, run seconds."""
    import numpy as np
    r = rk.r
    inputs = (r.rknn_input * len(frame))()
    for i, a in enumerate(frame):
        a = np.ascontiguousarray(a, dtype=np.float32)
        frame[i] = a
        inputs[i].index, inputs[i].buf, inputs[i].size = i, a.ctypes.data, a.nbytes
        inputs[i].type = r.RKNN_TENSOR_FLOAT32
        inputs[i].fmt = r.RKNN_TENSOR_NCHW if a.ndim == 4 else r.RKNN_TENSOR_UNDEFINED
    rk.check("rknn_inputs_set", r.rknn_inputs_set(ctx, len(frame), inputs))
    t = time.perf_counter()
    rk.check("rknn_run", r.rknn_run(ctx, None))
    run_s = time.perf_counter() - t
    outputs = (r.rknn_output * n_out)()
    for i in range(n_out):
        outputs[i].index, outputs[i].want_float = i, 1
    rk.check("rknn_outputs_get", r.rknn_outputs_get(ctx, n_out, outputs, None))
    res = [r.output_view(o).copy() for o in outputs]
    rk.check("rknn_outputs_release", r.rknn_outputs_release(ctx, n_out, outputs))
    return res, run_s


class ZeroCopy:
    """Native-format input and output buffers from rknn_create_mem, bound with rknn_set_io_mem: the app packs
    each frame straight into device memory and reads outputs from it; the executor uses the same bytes.
    `current`: bind the CURRENT native attrs (after rknn_set_input_shapes on a dynamic-shape model)."""

    def __init__(self, rk: Rknn, ctx: Any, compiled: Any, current: bool = False) -> None:
        r = rk.r
        self.rk, self.ctx, self.compiled = rk, ctx, compiled
        self.ins, self.outs = [], []
        q_in, q_out = ((r.RKNN_QUERY_CURRENT_NATIVE_INPUT_ATTR, r.RKNN_QUERY_CURRENT_NATIVE_OUTPUT_ATTR) if current
                       else (r.RKNN_QUERY_NATIVE_INPUT_ATTR, r.RKNN_QUERY_NATIVE_OUTPUT_ATTR))
        try:
            self._bind(q_in, q_out)
        except BaseException:
            self.destroy()                          # no buffer outlives a failed construction
            raise

    def _bind(self, q_in: int, q_out: int) -> None:
        from npurt.rknn.api_common import read_attr
        rk, r, ctx, compiled = self.rk, self.rk.r, self.ctx, self.compiled
        for i in range(compiled.n_inputs):
            a = rk.query(ctx, q_in, r.rknn_tensor_attr(index=i))
            mem = r.rknn_create_mem(ctx, a.size_with_stride)
            self.ins.append((mem, read_attr(a)))      # kept before the check: freed if binding fails
            rk.check("rknn_set_io_mem(input)", r.rknn_set_io_mem(ctx, mem, a))
        for i in range(compiled.n_outputs):
            a = rk.query(ctx, q_out, r.rknn_tensor_attr(index=i))
            mem = r.rknn_create_mem(ctx, a.size_with_stride)
            self.outs.append((mem, read_attr(a)))
            rk.check("rknn_set_io_mem(output)", r.rknn_set_io_mem(ctx, mem, a))

    def frame(self, frame: list[np.ndarray]) -> tuple[list[np.ndarray], float]:
        from npurt.runtime.user_io import pack_input, unpack_output
        r, c = self.rk.r, self.compiled
        for i, ((mem, attr), x) in enumerate(zip(self.ins, frame)):
            pack_input(attr, x, r.mem_view(mem), c.mean[i] if c.mean else None, c.std[i] if c.std else None,
                       shape=x.shape)
        t = time.perf_counter()
        self.rk.check("rknn_run", r.rknn_run(self.ctx, None))
        run_s = time.perf_counter() - t
        outs = [unpack_output(attr, r.mem_view(mem), shape=c.storage[c.graph.outputs[k]].shape)
                for k, (mem, attr) in enumerate(self.outs)]
        return outs, run_s

    def destroy(self) -> None:
        for mem, _ in self.ins + self.outs:
            self.rk.r.rknn_destroy_mem(self.ctx, mem)
