"""npurt.memory: device memory as on the board, backed by real host memory.

One `Device` per SoC per process (`open_device`): a DDR heap of memfd-backed buffers, the SoC's SRAM region with
its debugfs bitmap dump, npurt's own device address space (4 KiB pages, 4 GiB domain by default), imports of
user fds, `dma_alloc` (the board's external allocators), coherence modes and accounting.
"""
from npurt.memory.accounting import MemoryStats
from npurt.memory.address_space import DEFAULT_DOMAIN_SIZE
from npurt.memory.buffer import DDR, SRAM, SRAM_DDR, Buffer
from npurt.memory.coherence import CHECK, COHERENT, MODES, STRICT, SyncMode
from npurt.memory.device import PLACEMENTS, Device, open_device, open_devices
from npurt.memory.external import DmaBuffer, dma_alloc, recv_buffer, send_buffer
from npurt.memory.mapping import PAGE_SIZE, page_round
from npurt.memory.sram import format_sram_dump

__all__ = [
    "CHECK", "COHERENT", "DDR", "DEFAULT_DOMAIN_SIZE", "MODES", "PAGE_SIZE", "PLACEMENTS", "SRAM", "SRAM_DDR",
    "STRICT", "Buffer", "Device", "DmaBuffer", "MemoryStats", "SyncMode", "dma_alloc", "format_sram_dump",
    "open_device", "open_devices", "page_round", "recv_buffer", "send_buffer",
]
