"""npurt.qnn: the QNN HTP mirror — constants, ctypes structs, rpcmem, the QnnInterface function table, shared
buffers (ION, multi-tensor SHARED_BUFFER, external WEIGHTS / SPILLFILL / VTCMBACKUP buffers) over npurt device
memory, and graph execution on the CPU.

Start with `QnnInterface_getProviders(providers, n)` or the shortcut `interface("fastrpc" | "native", soc=...)`.
"""
from npurt.qnn.constants import *  # noqa: F401,F403
from npurt.qnn.constants import __all__ as _constants_all
from npurt.qnn.structs import *  # noqa: F401,F403
from npurt.qnn.structs import __all__ as _structs_all
from npurt.qnn._ptr import field_ref
from npurt.qnn.context import context_memory
from npurt.qnn.graph import (GRAPH_IO, GRAPH_IO_LAYOUTS, TensorSpec, io_tensors, set_graph_io, set_graph_io_layout,
                             tensor_specs)
from npurt.qnn.interface import QnnInterface_getProviders, QnnInterface_t, QnnInterfaceTable, interface
from npurt.qnn.memory_report import QnnMemoryReport, memory_report
from npurt.qnn.qurt import qurt_free, qurt_malloc, qurt_view
from npurt.qnn.rpcmem import (rpcmem_alloc, rpcmem_alloc2, rpcmem_alloc_def, rpcmem_free, rpcmem_leaks,
                              rpcmem_to_fd, rpcmem_view)

# `__all__` stays the vendor ABI (constants + structs: tests/test_qnn_abi.py pins it); the API below is importable
# by name (`npurt.qnn.interface`, `npurt.qnn.rpcmem_alloc`, ...) and listed in `API`.
__all__ = list(_constants_all) + list(_structs_all)
API = ("context_memory", "field_ref", "GRAPH_IO", "GRAPH_IO_LAYOUTS", "set_graph_io", "set_graph_io_layout",
       "QnnInterface_getProviders", "QnnInterface_t", "QnnInterfaceTable", "TensorSpec", "interface", "io_tensors",
       "memory_report", "QnnMemoryReport", "qurt_free", "qurt_malloc", "qurt_view", "rpcmem_alloc", "rpcmem_alloc2",
       "rpcmem_alloc_def", "rpcmem_free", "rpcmem_leaks", "rpcmem_to_fd", "rpcmem_view", "tensor_specs")
