"""QnnMem registration: descriptors in, memory handles out, and every rule of the shared-buffer tutorial.

One `MemRegistry` per process holds every live handle (`MemRecord`). Registration is per context and
all-or-nothing: `register` validates every descriptor of the call (including duplicates inside the call) before
anything is recorded, so on failure no handle exists and the caller's handle array stays NULL. Deregistration
removes every valid handle it is given even when it reports an error.

Memory identity (`MemRecord.key`) is the file behind an fd (the buffer's `FileId`, read when it was allocated or
imported) or the DSP-side buffer behind a QuRT address, so "the same fd" also catches a dup()ed fd or another
import of the same dma-buf.

Error codes (the QNN SDK headers and the HTP shared-buffer tutorial; "npurt's choice" where the vendor does not
document the exact code):
- 8000 INVALID_ARGUMENT: NULL arrays, unreadable descriptors, sizes too small, offset + tensor past the buffer, an
  fd already used for WEIGHTS / SPILLFILL reused for another type (or the reverse), priorities that differ between
  contexts sharing a concurrent buffer, deregistering a context buffer after finalize.
- 8001 INVALID_HANDLE: unknown / freed context, NULL or unknown handle.
- 8002 ALREADY_REGISTERED: same fd (ION), same (fd, offset) (SHARED_BUFFER), a second WEIGHTS / SPILLFILL /
  VTCMBACKUP buffer in one context, a WEIGHTS buffer already used by another context.
- 8003 MAPPING: an fd / QuRT address npurt cannot map: closed, unknown to FastRPC (ION / SHARED_BUFFER need an
  rpcmem buffer), not a DSP address.
- 8004 INVALID_SHAPE: bad memShape / dataType, a start not aligned to BUFFER_START_ALIGNMENT.
- 8005 UNSUPPORTED_MEMTYPE: a memType / HTP type the use case does not support (the tutorial's table).
- 1000 NOT_SUPPORTED: WEIGHTS / SPILLFILL / VTCMBACKUP outside the DEFER_GRAPH_INIT window, or together with
  REGISTER_MULTI_CONTEXTS (and, in FastRPC, REGISTER_CONCURRENT_RESOURCE_SHARING).
"""
from __future__ import annotations

import itertools
import logging
import math
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Sequence

import numpy as np

import npurt.forksafe as forksafe
from npurt.errors import NpuError
from npurt.memory import Buffer
from npurt.qnn import constants as C

log = logging.getLogger("npurt.qnn")
from npurt.qnn import qurt, rpcmem
from npurt.memory.cargs import as_struct
from npurt.memory.raw import read_u32_array
from npurt.qnn.boundary import QnnError
from npurt.qnn.htp_plan import BUFFER_START_ALIGNMENT
from npurt.qnn.structs import Qnn_MemDescriptor_t, QnnMemHtp_Descriptor_t

if TYPE_CHECKING:
    from npurt.qnn.context import QnnContext

ION, SHARED, WEIGHTS, SPILLFILL, VTCMBACKUP = "ION", "SHARED_BUFFER", "WEIGHTS_BUFFER", "SPILLFILL", "VTCMBACKUP"
CONTEXT_BUFFERS = (WEIGHTS, SPILLFILL, VTCMBACKUP)
FASTRPC, NATIVE = "fastrpc", "native"

# The tutorial's support table: which kinds each use case accepts.
SUPPORTED = {FASTRPC: {ION, SHARED, WEIGHTS, SPILLFILL}, NATIVE: {SPILLFILL, VTCMBACKUP}}

_ELEMENT_BITS = {
    C.QNN_DATATYPE_INT_8: 8, C.QNN_DATATYPE_INT_16: 16, C.QNN_DATATYPE_INT_32: 32, C.QNN_DATATYPE_INT_64: 64,
    C.QNN_DATATYPE_UINT_8: 8, C.QNN_DATATYPE_UINT_16: 16, C.QNN_DATATYPE_UINT_32: 32, C.QNN_DATATYPE_UINT_64: 64,
    C.QNN_DATATYPE_FLOAT_16: 16, C.QNN_DATATYPE_BFLOAT_16: 16, C.QNN_DATATYPE_FLOAT_32: 32,
    C.QNN_DATATYPE_FLOAT_64: 64, C.QNN_DATATYPE_SFIXED_POINT_8: 8, C.QNN_DATATYPE_SFIXED_POINT_16: 16,
    C.QNN_DATATYPE_SFIXED_POINT_32: 32, C.QNN_DATATYPE_UFIXED_POINT_8: 8, C.QNN_DATATYPE_UFIXED_POINT_16: 16,
    C.QNN_DATATYPE_UFIXED_POINT_32: 32, C.QNN_DATATYPE_BOOL_8: 8, C.QNN_DATATYPE_SFIXED_POINT_4: 4,
    C.QNN_DATATYPE_UFIXED_POINT_4: 4,
}


def tensor_bytes(data_type: int, dims: Sequence[int]) -> int | None:
    """Bytes of a dense tensor of `data_type` with `dims`; None for unknown types."""
    bits = _ELEMENT_BITS.get(int(data_type))
    if bits is None:
        return None
    return (math.prod(int(d) for d in dims) * bits + 7) // 8


@dataclass
class MemRecord:
    """One registered memory handle: what it names, where that memory is, and who owns what."""

    handle: int
    context: "QnnContext"
    kind: str
    key: tuple                       # identity of the underlying memory (file or DSP buffer)
    offset: int                      # start inside that memory (fd offset / offset in the DSP buffer)
    nbytes: int                      # tensor bytes (ION / SHARED) or buffer size (context buffers)
    buffer: Buffer | None            # npurt buffer holding it (None: a 0-byte context buffer)
    buf_offset: int                  # start inside `buffer`
    fd_part: tuple[int, int, int]    # (fd, file offset, bytes) to map it again (spill-fill arena)
    data_type: int = C.QNN_DATATYPE_UNDEFINED
    dims: tuple[int, ...] = ()
    owned_import: Buffer | None = None   # an import made for this record (released with it)
    owned_fd: int = -1                   # a dup of a foreign fd (closed with it)
    in_use: bool = False                 # a finalized context holds it (context buffers)

    def alive(self) -> bool:
        """False once the memory under the handle was freed (e.g. rpcmem_free while registered)."""
        return self.buffer is None or self.buffer.alive

    def view(self) -> np.ndarray:
        """The registered bytes as a uint8 view of device memory (the executor binds this)."""
        if self.buffer is None:
            return np.zeros(0, np.uint8)
        return self.buffer.device_view(np.uint8, None, self.buf_offset, self.nbytes)


@dataclass
class _Parsed:
    """A validated descriptor, not yet recorded."""

    kind: str
    key: tuple
    offset: int
    nbytes: int
    buffer: Buffer | None
    buf_offset: int
    fd_part: tuple[int, int, int]
    data_type: int
    dims: tuple[int, ...]
    owned_import: Buffer | None = None
    owned_fd: int = -1
    extra: dict = field(default_factory=dict)


class MemRegistry:
    """Every live memory handle of the process, with the rules that tie them to contexts."""

    def __init__(self) -> None:
        self._lock = forksafe.rlock()
        self._records: dict[int, MemRecord] = {}
        self._by_memory: dict[tuple, dict[int, MemRecord]] = {}        # memory key -> its records
        self._by_context: dict[int, dict[int, MemRecord]] = {}         # id(context) -> its records
        self._empty_ids = itertools.count(1)                           # keys of 0-byte context buffers
        self._next = 0x5100

    # -- queries ---------------------------------------------------------------------------------------
    def get(self, handle: int) -> MemRecord | None:
        with self._lock:
            return self._records.get(int(handle)) if handle else None

    def of_context(self, ctx: "QnnContext") -> list[MemRecord]:
        with self._lock:
            return list(self._by_context.get(id(ctx), {}).values())

    def count(self) -> int:
        with self._lock:
            return len(self._records)

    def _by_key(self, key: tuple) -> list[MemRecord]:
        return list(self._by_memory.get(key, {}).values())

    # -- register --------------------------------------------------------------------------------------
    def register(self, ctx: "QnnContext", descriptors: Sequence[Qnn_MemDescriptor_t]) -> list[int]:
        """Validate all descriptors, then record them all; QnnError (nothing recorded) on the first bad one."""
        with self._lock:
            parsed: list[_Parsed] = []
            try:
                for i, desc in enumerate(descriptors):
                    p = self._parse(ctx, desc, i)
                    parsed.append(p)
                    self._check_rules(ctx, p, parsed[:-1], i)
            except BaseException:
                for p in parsed:
                    self._drop_owned(p.owned_import, p.owned_fd)
                raise
            handles = []
            for p in parsed:
                self._next += 1
                rec = MemRecord(self._next, ctx, p.kind, p.key, p.offset, p.nbytes, p.buffer, p.buf_offset,
                                p.fd_part, p.data_type, p.dims, p.owned_import, p.owned_fd)
                self._records[rec.handle] = rec
                self._by_memory.setdefault(rec.key, {})[rec.handle] = rec
                self._by_context.setdefault(id(ctx), {})[rec.handle] = rec
                handles.append(rec.handle)
                log.info("<I> memRegister: handle 0x%x = %s, fd %d offset %d, %d bytes, dims %s", rec.handle,
                         rec.kind, rec.fd_part[0], rec.offset, rec.nbytes, list(rec.dims))
            return handles

    def _parse(self, ctx: "QnnContext", desc: Qnn_MemDescriptor_t, i: int) -> _Parsed:
        use_case = ctx.backend.use_case
        mem_type = int(desc.memType)
        if mem_type == C.QNN_MEM_TYPE_ION:
            kind, htp = ION, None
        elif mem_type == C.QNN_MEM_TYPE_CUSTOM:
            htp = as_struct(desc.customInfo, QnnMemHtp_Descriptor_t, address=True)
            if htp is None:
                raise QnnError(C.QNN_MEM_ERROR_INVALID_ARGUMENT,
                               f"descriptor {i}: customInfo is NULL or unreadable (needs a QnnMemHtp_Descriptor_t)")
            kind = {C.QNN_HTP_MEM_SHARED_BUFFER: SHARED, C.QNN_HTP_MEM_WEIGHTS_BUFFER: WEIGHTS,
                    C.QNN_HTP_MEM_SHARED_SPILLFILL_BUFFER: SPILLFILL,
                    C.QNN_HTP_MEM_SHARED_VTCMBACKUP_BUFFER: VTCMBACKUP}.get(int(htp.type))
            if kind is None:
                raise QnnError(C.QNN_MEM_ERROR_UNSUPPORTED_MEMTYPE,
                               f"descriptor {i}: QnnMemHtp type {int(htp.type)} is not supported by the HTP mirror")
        else:
            raise QnnError(C.QNN_MEM_ERROR_UNSUPPORTED_MEMTYPE,
                           f"descriptor {i}: memType {mem_type} is not supported by the HTP backend")
        if kind not in SUPPORTED[use_case]:
            raise QnnError(C.QNN_MEM_ERROR_UNSUPPORTED_MEMTYPE,
                           f"descriptor {i}: {kind} is not supported in the {use_case} use case")
        if kind in (ION, SHARED):
            return self._parse_tensor(desc, htp, kind, i)
        return self._parse_context_buffer(ctx, htp, kind, i)

    def _shape(self, desc: Qnn_MemDescriptor_t, i: int) -> tuple[int, tuple[int, ...], int]:
        rank = int(desc.memShape.numDim)
        dims = read_u32_array(desc.memShape.dimSize, rank) if rank else None
        if not rank or dims is None or any(d == 0 for d in dims):
            raise QnnError(C.QNN_MEM_ERROR_INVALID_SHAPE,
                           f"descriptor {i}: memShape needs numDim > 0 and readable non-zero dimSize")
        nbytes = tensor_bytes(desc.dataType, dims)
        if nbytes is None:
            raise QnnError(C.QNN_MEM_ERROR_INVALID_SHAPE, f"descriptor {i}: unknown dataType {int(desc.dataType):#x}")
        return int(desc.dataType), tuple(dims), nbytes

    def _parse_tensor(self, desc: Qnn_MemDescriptor_t, htp: QnnMemHtp_Descriptor_t | None, kind: str,
                      i: int) -> _Parsed:
        data_type, dims, nbytes = self._shape(desc, i)
        if kind == ION:
            fd, offset, total = int(desc.ionInfo.fd), 0, None
        else:
            assert htp is not None
            fd, offset, total = int(htp.sharedBufferConfig.fd), int(htp.sharedBufferConfig.offset), int(htp.size)
        rec = rpcmem.lookup_fd(fd) if fd >= 0 else None
        if rec is None or not rec.buffer.alive:
            raise QnnError(C.QNN_MEM_ERROR_MAPPING,
                           f"descriptor {i}: fd {fd} is not an rpcmem buffer known to FastRPC")
        if kind == ION:
            total = rec.size
            if nbytes > rec.size:
                raise QnnError(C.QNN_MEM_ERROR_INVALID_SHAPE,
                               f"descriptor {i}: tensor of {nbytes} bytes does not fit the {rec.size}-byte buffer")
        else:
            if total <= 0 or total > rec.size:
                raise QnnError(C.QNN_MEM_ERROR_INVALID_ARGUMENT,
                               f"descriptor {i}: size {total} must be the whole buffer (1..{rec.size} bytes)")
            if offset + nbytes > total:
                raise QnnError(C.QNN_MEM_ERROR_INVALID_ARGUMENT,
                               f"descriptor {i}: offset {offset} + tensor {nbytes} bytes is past the buffer size "
                               f"{total}")
        return _Parsed(kind, ("file", *rec.file), offset, nbytes, rec.buffer, offset, (fd, offset, nbytes), data_type,
                       dims)

    def _parse_context_buffer(self, ctx: "QnnContext", htp: QnnMemHtp_Descriptor_t, kind: str, i: int) -> _Parsed:
        if not ctx.deferred or ctx.finalized:
            raise QnnError(C.QNN_MEM_ERROR_NOT_SUPPORTED,
                           f"descriptor {i}: {kind} can only be registered between a DEFER_GRAPH_INIT "
                           f"contextCreateFromBinary and contextFinalize")
        if not ctx.takes_context_buffers:
            raise QnnError(C.QNN_MEM_ERROR_NOT_SUPPORTED,
                           f"descriptor {i}: npurt takes external {kind} buffers for a context of one graph; this "
                           f"context has {len(ctx.models)}")
        if ctx.multi_contexts or (ctx.concurrent and ctx.backend.use_case == FASTRPC):
            raise QnnError(C.QNN_MEM_ERROR_NOT_SUPPORTED,
                           f"descriptor {i}: external {kind} buffers are not supported together with "
                           f"REGISTER_MULTI_CONTEXTS" + (" / REGISTER_CONCURRENT_RESOURCE_SHARING"
                                                         if ctx.backend.use_case == FASTRPC else ""))
        size = int(htp.size)
        required = ctx.required_size(kind)
        if size < required:
            raise QnnError(C.QNN_MEM_ERROR_INVALID_ARGUMENT,
                           f"descriptor {i}: {kind} size {size} is below the required {required} bytes")
        if size == 0:       # the tutorial registers unconditionally: a 0-byte buffer where 0 bytes are required
            return _Parsed(kind, ("empty", next(self._empty_ids)), 0, 0, None, 0, (-1, 0, 0),
                           C.QNN_DATATYPE_UINT_8, (0,))
        if ctx.backend.use_case == NATIVE:
            addr = int(htp.sharedSpillfillBufferQurtAddress if kind == SPILLFILL
                       else htp.sharedVTCMBackupBufferQurtAddress)
            if addr % BUFFER_START_ALIGNMENT:
                raise QnnError(C.QNN_MEM_ERROR_INVALID_SHAPE,
                               f"descriptor {i}: QuRT address {addr:#x} is not {BUFFER_START_ALIGNMENT}-aligned")
            hit = qurt.lookup(addr, size)
            try:
                buf, off = hit if hit is not None else ctx.backend.device.lookup_device(addr, size)
            except NpuError:
                raise QnnError(C.QNN_MEM_ERROR_MAPPING,
                               f"descriptor {i}: QuRT address {addr:#x} (+{size}) is not DSP memory") from None
            if buf.device is not ctx.backend.device:
                raise QnnError(C.QNN_MEM_ERROR_MAPPING,
                               f"descriptor {i}: QuRT address {addr:#x} is memory of another HTP device")
            fd, file_off, _ = buf.fd_parts[0] if len(buf.fd_parts) == 1 else (-1, 0, 0)
            if fd < 0 or buf.placement != "ddr" or buf.owner.startswith("qnn-"):
                raise QnnError(C.QNN_MEM_ERROR_MAPPING, f"descriptor {i}: {addr:#x} is not application DDR memory "
                                                        f"(VTCM and QNN's own buffers cannot be registered)")
            return _Parsed(kind, ("dsp", buf.device.soc, buf.handle), off, size, buf, off,
                           (fd, file_off + off, size), C.QNN_DATATYPE_UINT_8, (size,))
        cfg = htp.weightsBufferConfig if kind == WEIGHTS else htp.sharedSpillfillBufferConfig
        fd, offset = int(cfg.fd), int(cfg.offset)
        if offset % BUFFER_START_ALIGNMENT:
            raise QnnError(C.QNN_MEM_ERROR_INVALID_SHAPE,
                           f"descriptor {i}: start (fd {fd} + offset {offset}) is not {BUFFER_START_ALIGNMENT}-aligned")
        rec = rpcmem.lookup_fd(fd) if fd >= 0 else None
        if rec is not None and rec.buffer.alive:
            if offset + size > rec.size:
                raise QnnError(C.QNN_MEM_ERROR_INVALID_ARGUMENT,
                               f"descriptor {i}: offset {offset} + size {size} is past the {rec.size}-byte buffer")
            return _Parsed(kind, ("file", *rec.file), offset, size, rec.buffer, offset, (fd, offset, size),
                           C.QNN_DATATYPE_UINT_8, (size,))
        return self._import_dma(ctx, kind, fd, offset, size, i)

    def _import_dma(self, ctx: "QnnContext", kind: str, fd: int, offset: int, size: int, i: int) -> _Parsed:
        """A DMA buffer from another allocator: map it into the device (an import this record owns)."""
        try:
            if not os.path.exists(f"/proc/self/fd/{fd}"):
                raise OSError("closed fd")
            owned_fd = os.dup(fd)
        except (OSError, OverflowError, ValueError):
            raise QnnError(C.QNN_MEM_ERROR_MAPPING, f"descriptor {i}: fd {fd} is not an open DMA buffer") from None
        try:
            buf = ctx.backend.device.import_fd(owned_fd, size, offset, owner="qnn-import", name=kind)
        except NpuError as exc:
            os.close(owned_fd)
            raise QnnError(C.QNN_MEM_ERROR_MAPPING, f"descriptor {i}: fd {fd} cannot be mapped: {exc.message}") from None
        return _Parsed(kind, ("file", *buf.files[0]), offset, size, buf, 0, (owned_fd, offset, size),
                       C.QNN_DATATYPE_UINT_8, (size,), owned_import=buf, owned_fd=owned_fd)

    def _check_rules(self, ctx: "QnnContext", p: _Parsed, earlier: list[_Parsed], i: int) -> None:
        """Duplicate and sharing rules against live handles and the earlier descriptors of the same call."""
        same_mem = [(r.context, r.kind, r.offset) for r in self._by_key(p.key)] + \
                   [(ctx, q.kind, q.offset) for q in earlier if q.key == p.key]
        for other_ctx, other_kind, other_off in same_mem:
            exclusive = {WEIGHTS, SPILLFILL, VTCMBACKUP}
            if (other_kind in exclusive or p.kind in exclusive) and other_kind != p.kind:
                raise QnnError(C.QNN_MEM_ERROR_INVALID_ARGUMENT,
                               f"descriptor {i}: this fd is registered as {other_kind}; memory registered for "
                               f"WEIGHTS / SPILLFILL / VTCMBACKUP cannot be used for another buffer type")
            if p.kind == WEIGHTS:
                raise QnnError(C.QNN_MEM_ERROR_ALREADY_REGISTERED,
                               "descriptor %d: this weights buffer is already registered%s; each context needs its "
                               "own" % (i, "" if other_ctx is ctx else " with another context"))
            if other_ctx is not ctx:
                continue
            if p.kind == ION or other_kind == ION or (p.kind == SHARED and other_off == p.offset):
                raise QnnError(C.QNN_MEM_ERROR_ALREADY_REGISTERED,
                               f"descriptor {i}: fd already registered in this context"
                               + (f" at offset {p.offset}" if p.kind == SHARED else ""))
            if p.kind in (SPILLFILL, VTCMBACKUP):
                raise QnnError(C.QNN_MEM_ERROR_ALREADY_REGISTERED,
                               f"descriptor {i}: this {p.kind} buffer is already registered in this context")
        if p.kind in CONTEXT_BUFFERS:
            mine = [r for r in self.of_context(ctx) if r.kind == p.kind] + [q for q in earlier if q.kind == p.kind]
            if mine:
                raise QnnError(C.QNN_MEM_ERROR_ALREADY_REGISTERED,
                               f"descriptor {i}: the context already has a {p.kind} buffer (one per context)")
            if ctx.concurrent:
                for r in self._by_key(p.key):
                    if r.context is not ctx and r.context.concurrent and r.context.priority != ctx.priority:
                        raise QnnError(C.QNN_MEM_ERROR_INVALID_ARGUMENT,
                                       f"descriptor {i}: contexts sharing a concurrent {p.kind} buffer need the "
                                       f"same priority ({ctx.priority} here, {r.context.priority} there)")

    # -- deregister ------------------------------------------------------------------------------------
    def deregister(self, handles: Sequence[int]) -> int:
        """Remove every valid handle that may go; the first error met is returned (QNN_SUCCESS if none)."""
        status = C.QNN_SUCCESS
        with self._lock:
            for h in handles:
                rec = self._records.get(int(h)) if h else None
                if rec is None:
                    status = status or C.QNN_MEM_ERROR_INVALID_HANDLE
                    continue
                if rec.in_use:
                    status = status or C.QNN_MEM_ERROR_INVALID_ARGUMENT
                    continue
                self._remove(rec)
                log.info("<I> memDeRegister: handle 0x%x (%s)", rec.handle, rec.kind)
        return status

    def release_context(self, ctx: "QnnContext") -> None:
        """contextFree: deregister every handle of `ctx` (context buffers included: automatic deregistration)."""
        with self._lock:
            for rec in self.of_context(ctx):
                self._remove(rec)

    def _remove(self, rec: MemRecord) -> None:
        del self._records[rec.handle]
        for table, key in ((self._by_memory, rec.key), (self._by_context, id(rec.context))):
            group = table[key]
            del group[rec.handle]
            if not group:
                del table[key]
        self._drop_owned(rec.owned_import, rec.owned_fd)
        rec.owned_import, rec.owned_fd = None, -1

    @staticmethod
    def _drop_owned(buf: Buffer | None, fd: int) -> None:
        if buf is not None and buf.alive:
            buf.device.free(buf)
        if fd >= 0:
            os.close(fd)


REGISTRY = MemRegistry()
