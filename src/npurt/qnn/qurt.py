"""DSP-side memory for the Non-RPC (native) use case: npurt's stand-in for `malloc` on the DSP.

In the tutorial's Non-RPC flow the application runs on the DSP and allocates the spill-fill and VTCM backup
buffers with `malloc`, passing their 32-bit QuRT virtual addresses (`QnnHtpMem_QurtAddress_t`). In npurt the DSP
address space is the HTP device's address space: `qurt_malloc(size)` allocates device memory (a real memfd) and
returns its device address, which fits in 32 bits; `qurt_free(addr)` frees it (unknown addresses are ignored, as
`free` would crash instead — here they are reported on the `npurt.qnn` logger). `qurt_view` is a validated numpy
view of DSP memory.
"""
from __future__ import annotations

import logging
import threading

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.memory import Buffer, Device
from npurt.memory.address_space import RangeMap
from npurt.memory.mapping import typed_view
from npurt.qnn import device as htp_device

log = logging.getLogger("npurt.qnn")

_lock = threading.Lock()
_blocks: dict[int, tuple[Buffer, Device]] = {}
_ranges = RangeMap()                    # [addr, addr + size) -> buffer, for qurt_view


def qurt_malloc(size: int, *, soc: str | None = None) -> int:
    """A DSP-side buffer of `size` bytes (page aligned); its QuRT address, or 0 on failure."""
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        return 0
    device, _ = htp_device.acquire(soc)
    try:
        buf = device.alloc(size, owner="qurt", name="qurt")
    except NpuError as exc:
        htp_device.release(device)
        log.error("<E> qurt_malloc(%d): %s", size, exc)
        return 0
    if buf.dev_addr >= 1 << 32:
        device.free(buf)
        htp_device.release(device)
        log.error("<E> qurt_malloc(%d): no room below 4 GiB in the DSP address space", size)
        return 0
    with _lock:
        _blocks[buf.dev_addr] = (buf, device)
        _ranges.insert(buf.dev_addr, buf.dev_addr + buf.size, buf)
    return buf.dev_addr


def qurt_free(addr: int) -> None:
    """Free a `qurt_malloc` buffer by its address; anything else is ignored (and logged)."""
    with _lock:
        entry = _blocks.pop(int(addr or 0), None)
        if entry is not None:
            _ranges.remove(int(addr))
    if entry is None:
        log.error("<E> qurt_free(0x%x): not a qurt_malloc address, ignored", int(addr or 0))
        return
    buf, device = entry
    if buf.alive:
        device.free(buf)
    htp_device.release(device)


def qurt_view(addr: int, nbytes: int | None = None, dtype=np.uint8, shape=None) -> np.ndarray:
    """A numpy view of DSP memory at `addr` (inside one live `qurt_malloc` buffer; INVALID_HANDLE otherwise)."""
    with _lock:
        hit = _ranges.find(int(addr), 1)
    if hit is None:
        raise NpuError(ErrorCode.INVALID_HANDLE, f"0x{int(addr):x} is not inside a qurt_malloc buffer")
    start, _, buf = hit
    try:
        return typed_view(buf.device_view(), dtype, shape, int(addr) - start, nbytes)
    except (ValueError, NpuError) as exc:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"qurt_view: {exc}") from None
