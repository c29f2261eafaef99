"""Slot conversions between stored tensors (native layout and type, in device memory) and the float32 logical
arrays the kernels take.

The executor precomputes one `SlotReader` / `SlotWriter` per tensor access at bind time; their `read()` /
`write()` do the per-run work with `out=` into preallocated memory (no allocation for 4-D float tensors):

- NC1HWC2 read: one pass that transposes (N,C1,H,W,C2) into a (N,C1,C2,H,W) float32 scratch and casts (fp16)
  or dequantises (int8: a transposing int8 copy, then multiply and subtract); the logical tensor is a channel slice of it.
- NC1HWC2 write: quantise into a float32 scratch if int8, then one transposing cast-copy into the slot; padding
  channels are written as zeros.
- NHWC (inputs): rows of `w_stride` pixels, the first W valid.
- plain (UNDEFINED / NCHW): reshape, cast or dequantise.

`tensor` conversions (`nchw_to_nc1hwc2` ...) require equal in/out dtypes, so the fused cast-and-transpose copies
here are their own. Outside the executor's own bind, a slot is read or written whole with `read_slot` /
`write_slot` (the executor's inspection and the runtime's user-format conversions, `npurt.runtime.user_io`).
"""
from __future__ import annotations

import math
import os

import numpy as np

import npurt._kernels as _kernels
from npurt.errors import ErrorCode, NpuError
from npurt.memory.mapping import typed_view
from npurt.model.attrs import TensorStorage
from npurt.tensor import DType, Layout


_PARALLEL_MIN = 1 << 17      # elements: below this a conversion runs on the calling thread
_pool = None
_pool_size = 0


def _forget_pool() -> None:
    global _pool, _pool_size
    _pool, _pool_size = None, 0     # a forked child must not use the parent's threads


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def conversion_threads() -> int:
    """Threads for large slot conversions: $NPURT_EXEC_THREADS (default 1). Splitting a 1.2 M-element fp16
    transpose over 2 threads measured 1.6x faster alone, but whole-model runs on a loaded 2-core machine were
    neutral, so it is opt-in."""
    try:
        n = int(os.environ.get("NPURT_EXEC_THREADS", "1"))
    except ValueError:
        n = 1
    return max(1, min(n, 16))


def pcopyto(dst: np.ndarray, src: np.ndarray, casting: str = "same_kind") -> None:
    """`np.copyto(dst, src)` split along axis 1 over a few threads when large (numpy releases the GIL): the
    layout conversions are memory-bound transposes, so two cores move nearly twice the bytes."""
    k = conversion_threads()
    if k == 1 or dst.size < _PARALLEL_MIN or dst.ndim < 2 or dst.shape[1] < 2:
        np.copyto(dst, src, casting=casting)
        return
    k = min(k, dst.shape[1])
    bounds = [dst.shape[1] * i // k for i in range(k + 1)]
    futures = [_thread_pool(k).submit(np.copyto, dst[:, a:b], src[:, a:b], casting=casting)
               for a, b in zip(bounds[1:-1], bounds[2:])]
    np.copyto(dst[:, :bounds[1]], src[:, :bounds[1]], casting=casting)
    for f in futures:
        f.result()


def _thread_pool(k: int):
    global _pool, _pool_size
    if _pool is None or _pool_size != k:
        from concurrent.futures import ThreadPoolExecutor
        _pool, _pool_size = ThreadPoolExecutor(k, thread_name_prefix="npurt-conv"), k
    return _pool


def pconvert(kernel, blocks: int, size: int) -> bool:
    """Run `kernel(blocks=(lo, hi))` (a compiled layout kernel: it releases the GIL) over C1 blocks [0, blocks),
    split over `conversion_threads()` threads when `size` elements are many; False when the kernel declined."""
    k = min(conversion_threads(), blocks)
    if k <= 1 or size < _PARALLEL_MIN:
        return kernel(blocks=None)
    bounds = [blocks * i // k for i in range(k + 1)]
    futures = [_thread_pool(k).submit(kernel, blocks=(a, b)) for a, b in zip(bounds[1:-1], bounds[2:])]
    done = kernel(blocks=(0, bounds[1]))
    return all([f.result() for f in futures]) and done


class SlotReader:
    """Reads one stored tensor as the float32 (or integer) logical array a kernel takes.

    int8 tensors are first copied (transposed) int8 -> int8 into `stage`, a shared staging buffer, then
    dequantised with one multiply and one subtract: about 3x faster than a table lookup or a casting transpose.
    """

    def __init__(self, st: TensorStorage, raw: np.ndarray, offset: int, scratch: np.ndarray | None,
                 stage: np.ndarray | None = None) -> None:
        self.st = st
        dt = st.dtype.numpy_dtype
        self.view = typed_view(raw, dt, st.dims, offset)
        self.quantized = st.quantized
        self.scale = np.float32(st.scale)
        self.bias = np.float32(st.zp * st.scale)
        self.direct = scratch is None
        shape = st.shape
        if st.layout is Layout.NC1HWC2:
            n, c1, h, w, c2 = st.dims
            self.src = self.view.transpose(0, 1, 4, 2, 3)
            self.tmp = scratch[:n * c1 * c2 * h * w].reshape(n, c1, c2, h, w)
            self.result = self.tmp.reshape(n, c1 * c2, h, w)[:, :shape[1]]
        elif st.layout is Layout.NHWC:
            n, c, h, w = shape
            self.src = self.view[:, :, :w, :].transpose(0, 3, 1, 2)
            self.tmp = scratch[:n * c * h * w].reshape(shape)
            self.result = self.tmp
        elif self.direct:
            self.result = self.view
        else:
            self.src = self.view
            self.tmp = scratch[:math.prod(shape)].reshape(shape)
            self.result = self.tmp
        self.compiled_convert = None
        if st.layout in (Layout.NC1HWC2, Layout.NHWC) and not self.direct:
            self.compiled_convert = self._compiled_convert(st)
        self.stage = None
        if self.quantized and not self.src.flags.c_contiguous:
            if stage is None or stage.size < self.tmp.size:
                stage = np.empty(self.tmp.size, np.int8)
            self.stage = stage[:self.tmp.size].reshape(self.tmp.shape)

    def _compiled_convert(self, st: TensorStorage):
        """The compiled transpose-and-convert for this read (NC1HWC2, or NHWC as one block of C lanes), or None."""
        lanes = self.view if st.layout is Layout.NC1HWC2 else self.view.reshape(st.dims[0], 1, *st.dims[1:])
        planes = self.tmp.reshape(lanes.shape[0], -1, *self.tmp.shape[-2:])
        quant = (self.scale, self.bias) if self.quantized else None

        def convert(blocks):
            return _kernels.lanes_to_planes(planes, lanes, quant, blocks)
        if not _kernels.enabled() or not convert(blocks=(0, 0)):        # an empty range: only the checks run
            return None
        return lambda: pconvert(convert, lanes.shape[1], planes.size)

    def read(self) -> np.ndarray:
        if self.compiled_convert is not None:
            self.compiled_convert()
        elif not self.direct:
            if self.quantized:
                q = self.src
                if self.stage is not None:
                    pcopyto(self.stage, q)
                    q = self.stage
                np.multiply(q, self.scale, out=self.tmp)
                np.subtract(self.tmp, self.bias, out=self.tmp)
            else:
                pcopyto(self.tmp, self.src, casting="unsafe")
        return self.result

    @staticmethod
    def needs_scratch(st: TensorStorage) -> int:
        """float32 elements of scratch this tensor's read needs (0: it is read in place)."""
        if not st.logical_dtype.startswith("float"):
            return 0
        if st.layout is Layout.NC1HWC2:
            return math.prod(st.dims)
        if st.dtype is DType.FLOAT32 and not st.quantized and st.layout is not Layout.NHWC:
            return 0
        return math.prod(st.shape)


class SlotWriter:
    """Writes a kernel's logical result into one stored tensor's slot (pack, cast or quantise)."""

    def __init__(self, st: TensorStorage, raw: np.ndarray, offset: int, scratch: np.ndarray | None,
                 half: np.ndarray | None = None) -> None:
        self.st = st
        self.view = typed_view(raw, st.dtype.numpy_dtype, st.dims, offset)
        self.half = half if st.dtype is DType.FLOAT16 else None   # float16 scratch for the two-step pack
        self.inv_scale = np.float32(1.0 / st.scale) if st.quantized else None
        self.zp = np.float32(st.zp)
        self.tmp = scratch[:math.prod(st.shape)].reshape(st.shape) if st.quantized else None
        self.shape = tuple(st.shape)
        if st.layout is Layout.NC1HWC2:
            n, c1, h, w, c2 = st.dims
            c = st.shape[1]
            self.full, self.rem = divmod(c, c2)
            used = self.full + (1 if self.rem else 0)
            self.dst_full = self.view[:, :self.full]
            self.dst_rem = self.view[:, self.full, :, :, :self.rem] if self.rem else None
            self.pad_views = []
            if self.rem:
                self.pad_views.append(self.view[:, self.full, :, :, self.rem:])
            if used < c1:
                self.pad_views.append(self.view[:, used:])
            self.nc = (n, c2, h, w)
        self.compiled_convert = None
        if st.layout is Layout.NC1HWC2 and _kernels.enabled():
            quant = (self.inv_scale, self.zp) if st.quantized else None
            self.compiled_convert = lambda y: pconvert(
                lambda blocks: _kernels.planes_to_lanes(self.view, y, quant, blocks), st.dims[1], self.view.size)

    @staticmethod
    def needs_scratch(st: TensorStorage) -> int:
        return math.prod(st.shape) if st.quantized else 0

    def _quantize(self, y: np.ndarray) -> np.ndarray:
        t = self.tmp
        np.multiply(y, self.inv_scale, out=t)
        np.add(t, self.zp, out=t)
        np.rint(t, out=t)
        return np.clip(t, -128, 127, out=t)

    def write(self, y: np.ndarray) -> None:
        if y.shape != self.shape:
            if y.size != math.prod(self.shape):
                raise NpuError(ErrorCode.INTERNAL, f"tensor {self.st.name!r}: kernel produced shape {y.shape}, "
                                                   f"the plan expects {self.shape}")
            y = y.reshape(self.shape)
        if self.compiled_convert is not None and y.dtype == np.float32 and self.compiled_convert(y):
            return
        if self.tmp is not None:
            y = self._quantize(y)
        if self.st.layout is not Layout.NC1HWC2:
            np.copyto(self.view, y, casting="unsafe")
            return
        n, c2, h, w = self.nc
        if self.full:
            head = y[:, :self.full * c2]
            if self.half is not None and head.flags.c_contiguous:
                # Cast first (contiguous, vectorised), then a same-type transposing copy: ~25% faster than a
                # casting transpose for float16.
                h16 = self.half[:head.size].reshape(head.shape)
                pcopyto(h16, head, casting="unsafe")
                head = h16
            src = head.reshape(n, self.full, c2, h, w).transpose(0, 1, 3, 4, 2)
            pcopyto(self.dst_full, src, casting="unsafe")
        if self.rem:
            np.copyto(self.dst_rem, y[:, self.full * c2:].transpose(0, 2, 3, 1), casting="unsafe")
        for pad in self.pad_views:
            pad.fill(0)


def read_slot(st: TensorStorage, raw: np.ndarray, offset: int = 0) -> np.ndarray:
    """A copy of the logical value stored in `raw[offset:]` as `st` describes it (float32, dequantised, ONNX
    layout; integer tensors keep their type)."""
    k = SlotReader.needs_scratch(st)
    return np.array(SlotReader(st, raw, offset, np.empty(k, np.float32) if k else None).read())


def write_slot(st: TensorStorage, raw: np.ndarray, value: np.ndarray, offset: int = 0) -> None:
    """Store a logical value into `raw[offset:]` as `st` describes it (packed, cast or quantised)."""
    n = math.prod(st.shape)
    SlotWriter(st, raw, offset, np.empty(n, np.float32) if st.quantized else None, np.empty(n, np.float16)).write(value)
