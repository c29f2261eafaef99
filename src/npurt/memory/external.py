"""External memory: `dma_alloc` (a stand-in for the board's dma-buf / MMZ / RGA allocators, user-owned memory
the device knows), and passing buffers to other processes over a Unix socket (`send_buffer` / `recv_buffer`).
"""
from __future__ import annotations

import json
import os
import socket
import stat

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.memory.buffer import Buffer
from npurt.memory.device import MAX_SIZE, Device, _check_size, open_device, open_devices
from npurt.memory.mapping import (PAGE_SIZE, SEAL_HOW, map_parts, ndarray_at, new_memfd, page_round,
                                  seal_against_shrink, typed_view)


class DmaBuffer:
    """User-owned memory from the stand-in external allocator: `fd`, `virt_addr`, `phys_addr`, `size`, `view()`.

    The user owns it and must `close()` it (closes the fd, forgets the device address, drops the device
    reference `dma_alloc` took). The device knows it as an imported buffer (`.buffer`), so
    `Device.resolve(phys_addr, virt_addr, size)` — what `create_mem_from_phys` does — finds it, and importing `fd`
    again shares the same mapping.
    """

    def __init__(self, device: Device, fd: int, buffer: Buffer) -> None:
        self.device = device
        self.fd = fd
        self.buffer = buffer
        self.size = buffer.size
        self.cacheable = buffer.cacheable
        self.virt_addr = buffer.virt_addr
        self.phys_addr = buffer.dev_addr
        self.closed = False

    def view(self, dtype=np.uint8, shape=None, offset: int = 0) -> np.ndarray:
        """The CPU view of the memory (as `Buffer.cpu_view`)."""
        if self.closed:
            raise NpuError(ErrorCode.INVALID_HANDLE, "dma buffer is closed")
        return self.buffer.cpu_view(dtype, shape, offset)

    def sync(self, mode=3) -> None:
        """Cache maintenance on the memory (as `Buffer.sync`)."""
        if self.closed:
            raise NpuError(ErrorCode.INVALID_HANDLE, "dma buffer is closed")
        self.buffer.sync(mode)

    def close(self) -> None:
        """Release the memory: device address, fd, device reference. A second close is a no-op."""
        if self.closed:
            return
        self.closed = True
        if self.buffer.alive:
            self.device.free(self.buffer)
        os.close(self.fd)
        self.device.close()

    def __enter__(self) -> DmaBuffer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<DmaBuffer fd={self.fd} {self.size} B phys={self.phys_addr:#x} virt={self.virt_addr:#x}>"


def dma_alloc(size: int, cacheable: bool = True, *, device: Device | None = None) -> DmaBuffer:
    """Allocate user-owned DMA-able memory known to `device` (None: the one open device, else `open_device()`).

    Takes a reference on the device until `close()`, like a driver that stays loaded while its buffers exist.
    """
    size = _check_size(size)
    if device is None:
        devices = open_devices()
        device = open_device(devices[0].soc) if len(devices) == 1 else open_device()
    else:
        device = open_device(device.soc)
    try:
        try:
            fd = new_memfd("npurt-dma", page_round(size))
        except OSError as exc:
            raise NpuError(ErrorCode.OUT_OF_MEMORY, f"dma_alloc({size}): {exc}") from None
        try:
            buf = device.import_fd(fd, size, 0, cacheable=cacheable, owner="dma_alloc")
        except BaseException:
            os.close(fd)
            raise
    except BaseException:
        device.close()
        raise
    return DmaBuffer(device, fd, buf)


def send_buffer(sock: socket.socket, buf: Buffer) -> None:
    """Send a buffer's fds and layout over a Unix socket; the receiver maps the same memory (`recv_buffer`)."""
    if not buf.alive:
        raise NpuError(ErrorCode.INVALID_HANDLE, f"{buf!r} has been freed")
    header = json.dumps({"size": buf.size, "parts": [[off, length] for _, off, length in buf.fd_parts]})
    try:
        socket.send_fds(sock, [header.encode()], [fd for fd, _, _ in buf.fd_parts])
    except OSError as exc:                              # a peer that is gone: EPIPE, ECONNRESET, ...
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"send_buffer: cannot send over the socket: "
                                                   f"{exc.strerror or exc}") from None


def _header_layout(data: bytes, nfds: int) -> tuple[int, list[tuple[int, int]]]:
    """(size, [(offset, length)]) of a `send_buffer` header, checked: one part per fd, non-negative ints, pieces
    that can be mapped back to back (page-aligned offsets after the first, whole pages before the last) and a
    size they cover. INVALID_ARGUMENT naming what is wrong otherwise."""
    try:
        header = json.loads(data.decode())
        parts, size = header["parts"], header["size"]
    except (ValueError, KeyError, TypeError) as exc:       # also a peer that closed: no data at all
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"no send_buffer header received ({len(data)} bytes): "
                                                   f"{exc}") from None
    if not isinstance(parts, list) or not parts or len(parts) != nfds:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"fd count ({nfds}) does not match the buffer layout")
    layout = []
    for i, part in enumerate(parts):
        if not (isinstance(part, list) and len(part) == 2 and all(type(v) is int for v in part)
                and part[0] >= 0 and 0 < part[1] <= MAX_SIZE):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"send_buffer part {i} is not [offset >= 0, length > 0]: "
                                                       f"{part!r}")
        off, length = part
        if i and off % PAGE_SIZE:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"send_buffer part {i}: offset {off} is not page-aligned")
        if i < len(parts) - 1 and ((off % PAGE_SIZE if i == 0 else 0) + length) % PAGE_SIZE:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"send_buffer part {i}: length {length} does not end on "
                                                       f"a page")
        layout.append((off, length))
    if type(size) is not int or not 0 < size <= sum(n for _, n in layout):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"send_buffer size {size!r} is not within the "
                                                   f"{sum(n for _, n in layout)} bytes of its parts")
    return size, layout


def _check_received_fd(fd: int, off: int, length: int) -> None:
    """A received fd must be a memfd sealed against shrinking (sealed here if it allows) holding the part."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"received fd is not an mmap-able file (mode {st.st_mode:o})")
    if not seal_against_shrink(fd):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"received fd could shrink under the mapping: the sender must "
                                                   f"{SEAL_HOW}")
    size = os.fstat(fd).st_size
    if off + length > size:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"send_buffer part [{off}, +{length}) is past the end of its "
                                                   f"fd ({size} bytes)")


def recv_buffer(sock: socket.socket, dtype=np.uint8, shape=None) -> np.ndarray:
    """Receive a buffer sent by `send_buffer` and return a view of the shared memory (its own mapping).

    The received fds are closed once mapped; the view keeps the mapping alive. INVALID_ARGUMENT when what
    arrives is not a well-formed `send_buffer` message (or the peer closed the socket), or an fd could shrink
    under the mapping or is shorter than the header claims; the fds are closed then too.
    """
    try:
        data, fds, _, _ = socket.recv_fds(sock, 65536, 16)
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"recv_buffer: cannot receive from {sock!r}: {exc}") from None
    try:
        size, layout = _header_layout(data, len(fds))
        for fd, (off, length) in zip(fds, layout):
            _check_received_fd(fd, off, length)
        lead = layout[0][0] % PAGE_SIZE
        pieces = [(fd, off - (lead if i == 0 else 0), length + (lead if i == 0 else 0))
                  for i, (fd, (off, length)) in enumerate(zip(fds, layout))]
        try:
            mapping = map_parts(pieces)
        except OSError as exc:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"recv_buffer: cannot map the received fds: "
                                                       f"{exc.strerror}") from None
    finally:
        for fd in fds:
            os.close(fd)
    try:
        return typed_view(ndarray_at(mapping, lead, size), dtype, shape)
    except (ValueError, TypeError) as exc:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"recv_buffer: cannot view {size} bytes as {dtype!r} "
                                                   f"{shape!r}: {exc}") from None
