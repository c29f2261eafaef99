"""Handle registries of the RKNN mirror: context handles, and the `rknn_tensor_mem` structs the mirror issued.

C hands out pointers; the mirror hands out integers and ctypes structs, and never trusts either blindly:

- `contexts`: `rknn_context` values -> live context objects (the kit's `HandleTable`). Handles are never reused,
  so a destroyed context's handle stays invalid forever (RKNN_ERR_CTX_INVALID), however many contexts come later.
  Every kind of context (model contexts "rknn" of `npurt.rknn.api`, "matmul" contexts of the matmul mirror) lives
  in this one table, so
  `rknn_create_mem(ctx, size)` works with any of them. A registered object must have `.device`
  (an `npurt.memory.Device`) and should call `mems.release_owned_by(handle)` when it is destroyed.
- `mems`: every `rknn_tensor_mem` the mirror filled, keyed by the struct's ctypes address, with a generation
  number written to the struct's `priv_data`. A struct is valid only if its address is registered, its
  `priv_data` matches the generation and its `virt_addr` / `phys_addr` / `fd` / `offset` are those the mirror
  issued (`size` may be lowered, never raised). The record — not the struct — says which device buffer and which
  bytes of it the struct stands for. A double destroy, a stale struct or a forged one is an error, never a crash.
"""
from __future__ import annotations

import ctypes
import itertools
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from npurt import forksafe
from npurt.errors import ErrorCode, NpuError
from npurt.memory.cargs import as_struct
from npurt.mirror_kit.handles import HandleTable, Retired
from npurt.rknn.structs import rknn_tensor_mem

RETIRED = 4096

__all__ = ["TensorMemRecord", "TensorMemRegistry", "contexts", "mems"]


@dataclass
class TensorMemRecord:
    """What one issued `rknn_tensor_mem` stands for: `size` bytes at `data_offset` inside `buffer`.

    `owns_buffer`: destroying the struct frees `buffer` — true for runtime allocations (`rknn_create_mem*`) and for
    the device's import record of `rknn_create_mem_from_fd` (which frees only npurt's bookkeeping of the user's
    memory, never the memory); false for `rknn_create_mem_from_phys`, which wraps a buffer someone else owns.
    `release` (optional) runs after the buffer is freed (e.g. drop the device reference of an ALLOC_NO_CONTEXT
    allocation).
    """

    struct: rknn_tensor_mem
    generation: int
    buffer: Any                      # npurt.memory.Buffer
    data_offset: int
    size: int
    owns_buffer: bool
    kind: int                        # RKNN_TENSOR_MEMORY_FLAGS_* as written to struct.flags
    ctx: int                         # creating context handle; 0 for RKNN_MEM_FLAG_ALLOC_NO_CONTEXT
    virt_addr: int
    phys_addr: int
    fd: int
    offset: int
    release: Callable[[], None] | None = None
    label: str = ""

    @property
    def no_context(self) -> bool:
        return self.ctx == 0


class TensorMemRegistry:
    """The issued `rknn_tensor_mem` structs (see the module doc). Thread-safe."""

    def __init__(self) -> None:
        self._records: dict[int, TensorMemRecord] = {}
        self._generation = itertools.count(0x6E70_0001)
        # The last RETIRED destroyed structs stay alive, so their addresses are not reused at once: a C caller's
        # pointer to a struct it destroyed is then recognised as stale, not taken for a newer struct at that address.
        self._retired = Retired(RETIRED)
        self._lock = forksafe.rlock()
        forksafe.after_fork(self._forget_inherited)

    def _forget_inherited(self) -> None:
        """In a forked child: the parent's structs are no longer issued (refused; their memory is shared with it)."""
        forksafe.inherit(self._records)
        self._records = {}

    def issue(self, struct: rknn_tensor_mem, **fields: Any) -> TensorMemRecord:
        """Fill `struct` from `fields` (virt_addr, phys_addr, fd, offset, size, kind, …) and register it."""
        with self._lock:
            record = TensorMemRecord(struct=struct, generation=next(self._generation), **fields)
            struct.virt_addr = record.virt_addr or None
            struct.phys_addr = record.phys_addr
            struct.fd = record.fd
            struct.offset = record.offset
            struct.size = record.size
            struct.flags = record.kind
            struct.priv_data = record.generation
            self._records[ctypes.addressof(struct)] = record
            return record

    def lookup(self, mem: Any, what: str = "mem") -> TensorMemRecord:
        """The record of a live issued struct; NpuError(INVALID_HANDLE) naming the problem otherwise. `mem` is the
        struct (or a pointer / byref to it), or the record the C face found by its address (`record_at`): it is
        looked up once and checked here, whichever face it came through. Read the struct as `record.struct`."""
        if isinstance(mem, TensorMemRecord):
            record, struct = mem, mem.struct
        else:
            struct = as_struct(mem, rknn_tensor_mem)
            if struct is None:
                raise NpuError(ErrorCode.INVALID_ARGUMENT,
                               f"invalid {what}: not an rknn_tensor_mem ({type(mem).__name__})")
            with self._lock:
                record = self._records.get(ctypes.addressof(struct))
        if record is None or struct.priv_data != record.generation:
            raise NpuError(ErrorCode.INVALID_HANDLE,
                           f"invalid {what}: rknn_tensor_mem at {ctypes.addressof(struct):#x} was not created by "
                           f"rknn_create_mem* or has been destroyed")
        if ((struct.virt_addr or 0) != record.virt_addr or struct.phys_addr != record.phys_addr
                or struct.fd != record.fd or struct.offset != record.offset):
            raise NpuError(ErrorCode.INVALID_ARGUMENT,
                           f"invalid {what}: rknn_tensor_mem fields were modified (virt_addr/phys_addr/fd/offset "
                           f"must stay as rknn_create_mem* returned them)")
        if struct.size > record.size:
            raise NpuError(ErrorCode.INVALID_ARGUMENT,
                           f"invalid {what}: size {struct.size} is larger than the {record.size} bytes created")
        return record

    def record_at(self, addr: int) -> TensorMemRecord | None:
        """The record of the issued struct whose C address is `addr` (what a C caller's `rknn_tensor_mem*` points
        to), or None — found without reading the memory at `addr`, so a forged or freed pointer is never
        dereferenced. The mirror takes the record in place of the struct (`lookup`)."""
        with self._lock:
            return self._records.get(int(addr))

    def forget(self, record: TensorMemRecord) -> None:
        """Unregister `record` (its struct becomes stale: priv_data is cleared)."""
        with self._lock:
            key = ctypes.addressof(record.struct)
            if self._records.get(key) is record:
                del self._records[key]
            record.struct.priv_data = None
            self._retired.add(record.struct)

    def owned_by(self, ctx: int) -> list[TensorMemRecord]:
        """Live records created with context `ctx`, in creation order."""
        with self._lock:
            return sorted((r for r in self._records.values() if r.ctx == ctx), key=lambda r: r.generation)

    def __iter__(self) -> Iterator[TensorMemRecord]:
        with self._lock:
            return iter(list(self._records.values()))

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def release(self, record: TensorMemRecord) -> None:
        """Destroy `record`: unregister it, free its buffer if it owns it, run its release hook. The one place
        mirror memory is released."""
        self.forget(record)
        try:
            if record.owns_buffer and record.buffer.alive:
                record.buffer.free()
        finally:
            if record.release is not None:
                hook, record.release = record.release, None
                hook()

    def release_owned_by(self, ctx: int) -> list[TensorMemRecord]:
        """Destroy every record created with context `ctx` (called when that context is destroyed)."""
        records = self.owned_by(ctx)
        for record in records:
            self.release(record)
        return records


contexts = HandleTable(first=0x5A0000, step=0x10)
mems = TensorMemRegistry()
