"""`WeightStore`: the weight memory of one network, shared (refcounted) by every context that runs it.

Three sources: runtime-allocated (the default: the blob is copied in at init), user-provided (`weights_outside`:
the runtime copies the blob into the user's memory when it is set), or the model buffer itself (model-buffer zero
copy: the weights are read where they lie in the user's model buffer, never copied). `rknn_dup_context` copies and
SHARE_WEIGHT_MEM contexts hold the same store; the store's own buffer is freed when the last holder releases it.
"""
from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from npurt import forksafe
from npurt.errors import ErrorCode, NpuError
from npurt.memory.coherence import snapshot
from npurt.runtime.binding import MemRef

WEIGHTS_UNSET = "weight memory is not set: the context was created with weights_outside; set it before running"


def weight_digest(compiled: Any) -> str:
    """The SHA-256 of a compiled model's weight blob: two models can share weight memory only if these match."""
    return hashlib.sha256(np.ascontiguousarray(compiled.weight_blob).view(np.uint8)).hexdigest()


class WeightStore:
    """See the module doc. `view()` is what the executor binds."""

    def __init__(self, compiled: Any, device: Any, owner: str, outside: bool,
                 model_view: np.ndarray | None = None) -> None:
        self.size = int(compiled.plan.weight_size)
        self.blob = compiled.weight_blob
        self.digest = weight_digest(compiled)
        self.device = device
        self.buffer = None              # runtime-owned weight buffer
        self.ref: MemRef | None = None  # user-provided weight memory
        self.model_view = model_view    # zero-copy: the weights inside the model buffer
        self.holders = 1
        self._lock = forksafe.lock()
        if model_view is None and not outside and self.size:
            self.buffer = device.alloc(self.size, owner=owner, name="weight", cacheable=False)
            np.copyto(self.buffer.device_view(np.uint8, nbytes=self.size), self.blob.reshape(-1).view(np.uint8))

    @property
    def dma_bytes(self) -> int:
        """Device memory this store allocated itself (page-rounded)."""
        return self.buffer.capacity if self.buffer is not None and self.buffer.alive else 0

    @property
    def ready(self) -> bool:
        return self.size == 0 or self.model_view is not None or self.buffer is not None or (
            self.ref is not None and self.ref.alive)

    def set_user_memory(self, ref: MemRef) -> None:
        """Use the user's memory for the weights: the blob is copied into it now."""
        if ref.size < self.size:
            raise NpuError(ErrorCode.INVALID_ARGUMENT,
                           f"weight memory size must be >= {self.size}, but is: {ref.size}")
        ref.require_alive("weight memory")
        if self.size:
            blob = self.blob.reshape(-1).view(np.uint8)
            np.copyto(ref.device_u8()[:self.size], blob)
            # The runtime writes the weights as the CPU would: the CPU's side holds them too (strict mode keeps a
            # separate CPU view), so a user's cache flush of the weight memory (demo §4.6) does not clobber them.
            cpu = ref.buffer.cpu_view(np.uint8, offset=ref.offset, nbytes=self.size)
            if not np.shares_memory(cpu, ref.device_u8()):
                np.copyto(cpu, blob)
        self.ref = ref

    def view(self) -> np.ndarray:
        """The weight bytes as the device sees them; INVALID_ARGUMENT if user memory was never set / destroyed."""
        if self.size == 0:
            return np.empty(0, np.uint8)
        if self.model_view is not None:
            return self.model_view
        if self.buffer is not None:
            return self.buffer.device_view(np.uint8, nbytes=self.size)
        if self.ref is None:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, WEIGHTS_UNSET, hint="weights_unset")
        self.ref.require_alive("weight memory")
        return self.ref.device_u8()[:self.size]

    def fingerprint(self) -> int:
        """The weight bytes' snapshot (the one check mode takes): a run compares it with the one its decoded
        weights came from, so user-owned weight memory changed behind the runtime's back is decoded again."""
        return snapshot(self.view())

    def acquire(self) -> "WeightStore":
        with self._lock:
            self.holders += 1
            return self

    def release(self) -> None:
        """Drop one holder; the last one frees the runtime-owned buffer."""
        with self._lock:
            self.holders -= 1
            last = self.holders == 0
        if last and self.buffer is not None:
            buf, self.buffer = self.buffer, None
            if buf.alive:
                buf.free()
