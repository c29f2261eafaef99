"""The memory members: memRegister / memDeRegister over the registry of registered memory (`mem_registry`)."""
from __future__ import annotations

from typing import Any

from npurt.qnn import constants as C
from npurt.qnn.boundary import QnnError, qnn_call
from npurt.qnn.mem_registry import REGISTRY
from npurt.qnn.members.args import handles_in, live_context, set_handles
from npurt.qnn.structs import Qnn_MemDescriptor_t
from npurt.memory.cargs import as_struct_list


class MemMembers:
    """memRegister and memDeRegister of `QnnInterfaceTable`."""

    @qnn_call("memRegister")
    def memRegister(self, context: Any, memDescriptors: Any, numDescriptors: int, memHandles: Any) -> int:
        """QnnMem_register(ctx, descriptors, n, handles): all-or-nothing; handles stay NULL on failure."""
        n = int(numDescriptors)
        if memHandles is None or n <= 0:
            raise QnnError(C.QNN_MEM_ERROR_INVALID_ARGUMENT, "memHandles is NULL or numDescriptors is 0")
        if not set_handles(memHandles, [], n):
            raise QnnError(C.QNN_MEM_ERROR_INVALID_ARGUMENT, f"memHandles cannot hold {n} handles")
        ctx = live_context(context, C.QNN_MEM_ERROR_INVALID_HANDLE)
        descs = as_struct_list(memDescriptors, n, Qnn_MemDescriptor_t, "memDescriptors", address=True)
        with ctx.lock:
            if ctx.freed:
                raise QnnError(C.QNN_MEM_ERROR_INVALID_HANDLE, "context was freed")
            handles = REGISTRY.register(ctx, descs)
        set_handles(memHandles, handles, n)
        return C.QNN_SUCCESS

    @qnn_call("memDeRegister")
    def memDeRegister(self, memHandles: Any, numHandles: int) -> int:
        """QnnMem_deRegister(handles, n): removes every valid handle, even when it reports an error. Context
        buffers of a finalized context are in use and stay (8000); contextFree deregisters them."""
        handles = handles_in(memHandles, int(numHandles))
        if handles is None or int(numHandles) <= 0:
            raise QnnError(C.QNN_MEM_ERROR_INVALID_ARGUMENT, "memHandles is NULL or numHandles is 0")
        code = REGISTRY.deregister(handles)
        if code:
            raise QnnError(code, "some handles were invalid or in use (every valid free handle was deregistered)")
        return C.QNN_SUCCESS
