"""Slot conversions between stored tensors (native layout and type, in device memory) and the float32 logical
arrays the kernels take, plus the runtime's user-format helpers `pack_input` / `unpack_output`.

The executor precomputes one `SlotReader` / `SlotWriter` per tensor access at bind time; their `read()` /
`write()` do the per-run work with `out=` into preallocated memory (no allocation for 4-D float tensors):

- NC1HWC2 read: one pass that transposes (N,C1,H,W,C2) into a (N,C1,C2,H,W) float32 scratch and casts (fp16)
  or dequantises (int8: a transposing int8 copy, then multiply and subtract); the logical tensor is a channel slice of it.
- NC1HWC2 write: quantise into a float32 scratch if int8, then one transposing cast-copy into the slot; padding
  channels are written as zeros.
- NHWC (inputs): rows of `w_stride` pixels, the first W valid.
- plain (UNDEFINED / NCHW): reshape, cast or dequantise.

`tensor` conversions (`nchw_to_nc1hwc2` ...) require equal in/out dtypes, so the fused cast-and-transpose copies
here are their own; `pack_input`/`unpack_output` use `npurt.tensor` where the types match.
"""
from __future__ import annotations

import math
import os
import threading
from typing import Sequence

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.model.attrs import QntType, TensorAttr, TensorStorage
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
    global _pool, _pool_size
    k = conversion_threads()
    if k == 1 or dst.size < _PARALLEL_MIN or dst.ndim < 2 or dst.shape[1] < 2:
        np.copyto(dst, src, casting=casting)
        return
    if _pool is None or _pool_size != k:
        from concurrent.futures import ThreadPoolExecutor
        _pool, _pool_size = ThreadPoolExecutor(k, thread_name_prefix="npurt-conv"), k
    k = min(k, dst.shape[1])
    bounds = [dst.shape[1] * i // k for i in range(k + 1)]
    futures = [_pool.submit(np.copyto, dst[:, a:b], src[:, a:b], casting=casting)
               for a, b in zip(bounds[1:-1], bounds[2:])]
    np.copyto(dst[:, :bounds[1]], src[:, :bounds[1]], casting=casting)
    for f in futures:
        f.result()


def typed_view(raw: np.ndarray, dtype: np.dtype, dims: Sequence[int], offset: int = 0) -> np.ndarray:
    """A typed, shaped view of bytes `raw[offset:]` (no copy)."""
    dt = np.dtype(dtype)
    n = math.prod(dims)
    return raw[offset:offset + n * dt.itemsize].view(dt).reshape(tuple(dims))


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
        self.stage = None
        if self.quantized and not self.src.flags.c_contiguous:
            if stage is None or stage.size < self.tmp.size:
                stage = np.empty(self.tmp.size, np.int8)
            self.stage = stage[:self.tmp.size].reshape(self.tmp.shape)

    def read(self) -> np.ndarray:
        if not self.direct:
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
                raise NpuError(ErrorCode.FAIL, f"tensor {self.st.name!r}: kernel produced shape {y.shape}, "
                                               f"the plan expects {self.shape}")
            y = y.reshape(self.shape)
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


# --- the runtime's user-format helpers -------------------------------------------------------------

def _per_channel(v: Sequence[float] | None, channels: int, ndim: int) -> np.ndarray | None:
    if v is None:
        return None
    a = np.asarray(v, np.float32).reshape(-1)
    if a.size == 1 or ndim < 2:
        return a.reshape(()) if a.size == 1 else a
    if a.size != channels:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{a.size} normalisation values for {channels} channels")
    shape = [1] * ndim
    shape[1] = -1
    return a.reshape(shape)


def attr_storage(attr: TensorAttr, shape: Sequence[int]) -> TensorStorage:
    """The TensorStorage a native attr describes, for a tensor of logical `shape`."""
    dims = tuple(attr.dims)
    if attr.fmt is Layout.NHWC:
        n, h, w, c = dims
        dims = (n, h, attr.w_stride or w, c)
    quantized = attr.qnt_type is QntType.AFFINE_ASYMMETRIC
    logical = "float32" if (attr.type.is_float or quantized) else attr.type.numpy_dtype.name
    return TensorStorage(attr.name, tuple(int(d) for d in shape), logical, attr.type, attr.fmt, dims,
                         attr.w_stride, attr.size_with_stride, attr.size_with_stride, attr.scale, attr.zp, quantized)


def _logical_shape(attr: TensorAttr, shape: Sequence[int] | None) -> tuple[int, ...]:
    if shape is not None:
        return tuple(int(d) for d in shape)
    if attr.fmt is Layout.NHWC:
        n, h, w, c = attr.dims
        return (n, c, h, w)
    if attr.fmt is Layout.NC1HWC2:
        raise NpuError(ErrorCode.INVALID_ARGUMENT,
                       f"tensor {attr.name!r}: an NC1HWC2 attr does not say the channel count; pass shape=")
    return tuple(attr.dims)


def _check_view(attr: TensorAttr, view: np.ndarray) -> np.ndarray:
    if not isinstance(view, np.ndarray) or view.dtype != np.uint8:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tensor {attr.name!r}: expected a uint8 buffer view")
    raw = view.reshape(-1)
    if raw.size < attr.size_with_stride:
        raise NpuError(ErrorCode.INVALID_ARGUMENT,
                       f"tensor {attr.name!r}: buffer has {raw.size} bytes, needs {attr.size_with_stride}")
    return raw


_tls = threading.local()


def _frame_scratch(shape: tuple[int, ...]) -> np.ndarray:
    """A float32 scratch of `shape`, kept per thread and reused while the shape stays the same (a fresh
    allocation per frame costs page faults: about as much as the conversion itself for a 640x640 frame)."""
    buf = getattr(_tls, "frame", None)
    if buf is None or buf.shape != shape:
        buf = _tls.frame = np.empty(shape, np.float32)
    return buf


def _pack_nhwc(st: TensorStorage, x: np.ndarray, raw: np.ndarray, m: np.ndarray | None, s: np.ndarray | None,
               nhwc: bool) -> None:
    """NHWC native input from a user array `x` (NHWC when `nhwc`, else NCHW): normalise into one reused float32
    scratch in the user's order (contiguous passes), quantise in place if int8, then one casting (and, for NCHW,
    transposing) copy into the padded rows. The same arithmetic, in the same order, as the generic path, without
    its temporaries and fresh allocations."""
    n, c, h, w = st.shape
    src = x if nhwc else x.transpose(0, 2, 3, 1)
    float_in = st.logical_dtype.startswith("float")
    dst = typed_view(raw, st.dtype.numpy_dtype, st.dims)
    exact = x.dtype in (np.float32, np.float16, np.uint8, np.int8, np.uint16, np.int16)  # cast via f32 == direct
    if not float_in or (m is None and s is None and not st.quantized and exact):
        np.copyto(dst[:, :, :w, :], src, casting="unsafe")
    else:
        # arithmetic in the user's order (contiguous passes), one transposing copy at the end if NCHW
        y = _frame_scratch(tuple(x.shape))
        chan = (lambda v: v.reshape(-1) if v.ndim else v) if nhwc else (lambda v: v)
        if m is not None:
            np.subtract(x, chan(m), out=y, dtype=np.float32)
        else:
            np.copyto(y, x, casting="unsafe")
        if s is not None:
            np.divide(y, chan(s), out=y)
        if st.quantized:
            np.multiply(y, np.float32(1.0 / st.scale), out=y)
            np.add(y, np.float32(st.zp), out=y)
            np.rint(y, out=y)
            np.clip(y, -128, 127, out=y)
        np.copyto(dst[:, :, :w, :], y if nhwc else y.transpose(0, 2, 3, 1), casting="unsafe")
    if st.dims[2] > w:
        dst[:, :, w:, :] = 0


def pack_input(attr: TensorAttr, user: np.ndarray, out_view: np.ndarray, mean: Sequence[float] | None = None,
               std: Sequence[float] | None = None, layout: str = "nchw", shape: Sequence[int] | None = None) -> None:
    """Write a user input (the ONNX model's layout, `layout="nhwc"` for NHWC images; any numeric dtype) into a
    bound input buffer described by its native attr: normalise with mean/std, cast or quantise, lay out, pad."""
    raw = _check_view(attr, out_view)
    x = np.asarray(user)
    nhwc = layout.lower() == "nhwc"
    if nhwc:
        if x.ndim != 4:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"input {attr.name!r}: layout nhwc needs a 4-D array")
    xs = x.transpose(0, 3, 1, 2) if nhwc else x
    logical = _logical_shape(attr, shape if shape is not None else (xs.shape if attr.fmt is Layout.NC1HWC2 else None))
    if tuple(xs.shape) != logical:
        raise NpuError(ErrorCode.INVALID_INPUT, f"input {attr.name!r}: shape {tuple(xs.shape)} != {logical}")
    st = attr_storage(attr, logical)
    is_float = st.logical_dtype.startswith("float")
    m = _per_channel(mean, logical[1] if len(logical) > 1 else 1, len(logical)) if is_float else None
    s = _per_channel(std, logical[1] if len(logical) > 1 else 1, len(logical)) if is_float else None
    if st.layout is Layout.NHWC and x.dtype.kind in "uif":
        _pack_nhwc(st, x, raw, m, s, nhwc)
        return
    x = xs
    if is_float:
        y = np.asarray(x, np.float32)
        if m is not None:
            y = y - m
        if s is not None:
            y = y / s
        if y is x:
            y = y.copy() if st.quantized else y
    else:
        y = x
    scratch = np.empty(SlotWriter.needs_scratch(st), np.float32)
    writer = SlotWriter(st, raw, 0, scratch)
    writer.write(np.asarray(y))


def unpack_output(attr: TensorAttr, view: np.ndarray, shape: Sequence[int] | None = None) -> np.ndarray:
    """A bound output buffer (native attr layout/type) as a float32 array in the logical (ONNX) layout;
    integer outputs keep their dtype. `shape` is the logical shape (required for NC1HWC2)."""
    raw = _check_view(attr, view)
    st = attr_storage(attr, _logical_shape(attr, shape))
    need = SlotReader.needs_scratch(st)
    reader = SlotReader(st, raw, 0, np.empty(need, np.float32) if need or st.quantized else None)
    out = reader.read()
    return np.array(out, dtype=np.float32 if st.logical_dtype.startswith("float") else out.dtype, copy=True)
