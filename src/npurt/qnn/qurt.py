"""DSP-side memory for the Non-RPC (native) use case: npurt's stand-in for `malloc` on the DSP.

In the tutorial's Non-RPC flow the application runs on the DSP and allocates the spill-fill and VTCM backup
buffers with `malloc`, passing their 32-bit QuRT virtual addresses (`QnnHtpMem_QurtAddress_t`). In npurt the DSP
address space is a window of this process below 4 GiB: `qurt_malloc(size)` allocates HTP device memory (a real
memfd) and maps it a second time at a free address of the window, which is its QuRT address — it fits in 32 bits,
and a C program (through libQnnHtp.so's `qurt_malloc`) reads and writes it directly. `qurt_free(addr)` frees it
(unknown addresses are ignored, as `free` would crash instead — here they are reported on the `npurt.qnn` logger).
`qurt_view` is a validated numpy view of DSP memory; `lookup` resolves a QuRT address range to its buffer.
"""
from __future__ import annotations

import logging

import numpy as np

from npurt import forksafe
from npurt.errors import ErrorCode, NpuError
from npurt.memory import Buffer, Device
from npurt.memory.address_space import RangeMap
from npurt.memory.mapping import HostMapping, map_fd_at, page_round, typed_view
from npurt.qnn import device as htp_device

log = logging.getLogger("npurt.qnn")

_lock = forksafe.lock()
_blocks: dict[int, tuple[Buffer, Device, HostMapping]] = {}
_ranges = RangeMap()                    # [addr, addr + size) -> buffer, for qurt_view and lookup


@forksafe.after_fork
def _forget_inherited() -> None:
    """In a forked child: the parent's blocks are not the child's (their memory is shared with the parent)."""
    global _blocks, _ranges
    forksafe.inherit((_blocks, _ranges))
    _blocks, _ranges = {}, RangeMap()
WINDOW = (0x10000000, 0xF0000000)       # npurt's choice: where QuRT addresses live in this process
_STEP = 16 << 20                        # how far to move on when an address of the window is taken


def _map_low(buf: Buffer) -> HostMapping | None:
    """A second mapping of `buf` at a free address of the window (first fit after the live blocks)."""
    fd, offset, _ = buf.fd_parts[0]
    length = page_round(buf.size)
    addr = WINDOW[0]
    while addr + length <= WINDOW[1]:
        taken = _ranges.find(addr, 1) or next(((s, e, p) for s, e, p in _ranges.items() if addr < e and
                                              s < addr + length), None)
        if taken is not None:
            addr = page_round(taken[1])
            continue
        try:
            return map_fd_at(fd, length, offset, addr)
        except OSError:
            addr += _STEP
    return None


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
    with _lock:
        mapping = _map_low(buf) if len(buf.fd_parts) == 1 else None
        if mapping is None:
            device.free(buf)
            htp_device.release(device)
            log.error("<E> qurt_malloc(%d): no room below 4 GiB in the DSP address space", size)
            return 0
        _blocks[mapping.addr] = (buf, device, mapping)
        _ranges.insert(mapping.addr, mapping.addr + buf.size, buf)
    return mapping.addr


def qurt_free(addr: int) -> None:
    """Free a `qurt_malloc` buffer by its address; anything else is ignored (and logged)."""
    with _lock:
        entry = _blocks.pop(int(addr or 0), None)
        if entry is not None:
            _ranges.remove(int(addr))
    if entry is None:
        log.error("<E> qurt_free(0x%x): not a qurt_malloc address, ignored", int(addr or 0))
        return
    buf, device, _ = entry
    if buf.alive:
        device.free(buf)
    htp_device.release(device)


def lookup(addr: int, nbytes: int) -> tuple[Buffer, int] | None:
    """(buffer, offset) of the live `qurt_malloc` block holding [addr, addr + nbytes), or None."""
    with _lock:
        hit = _ranges.find(int(addr), max(int(nbytes), 1))
    return None if hit is None else (hit[2], int(addr) - hit[0])


def qurt_view(addr: int, nbytes: int | None = None, dtype=np.uint8, shape=None) -> np.ndarray:
    """A numpy view of DSP memory at `addr` (inside one live `qurt_malloc` buffer; INVALID_HANDLE otherwise)."""
    with _lock:
        hit = _ranges.find(int(addr), 1)
    if hit is None:
        raise NpuError(ErrorCode.INVALID_HANDLE, f"{int(addr):#x} is not inside a qurt_malloc buffer")
    start, _, buf = hit
    try:
        return typed_view(buf.device_view(), dtype, shape, int(addr) - start, nbytes)
    except (ValueError, NpuError) as exc:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"qurt_view: {exc}") from None
