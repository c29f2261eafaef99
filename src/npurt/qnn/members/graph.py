"""The graph members of a loaded context: graphRetrieve and graphExecute (RAW or MEMHANDLE tensors, profiled)."""
from __future__ import annotations

import ctypes
import time
from typing import Any

from npurt.memory.cargs import as_struct, as_struct_list
from npurt.memory.raw import pointer_value
from npurt.qnn import constants as C
from npurt.qnn import services
from npurt.qnn.backend import lookup
from npurt.qnn.boundary import QnnError, qnn_call
from npurt.qnn.graph import QnnGraph
from npurt.qnn.graph_build import BuildGraph
from npurt.qnn.members.args import live_context, profile_arg, set_handle
from npurt.qnn.structs import Qnn_Tensor_t


def _tensors(tensors: Any, count: Any, what: str) -> list[Any]:
    """The `count` Qnn_Tensor_t of graphExecute's `inputs` / `outputs` (none needed when `count` is 0); an entry
    that is no tensor is an invalid tensor (as the HTP library says), every other problem an invalid argument."""
    if isinstance(tensors, (list, tuple)) and not all(isinstance(t, Qnn_Tensor_t) for t in tensors[:int(count)]):
        raise QnnError(C.QNN_GRAPH_ERROR_INVALID_TENSOR, f"{what}: an entry is not a Qnn_Tensor_t")
    return [] if int(count) == 0 else as_struct_list(tensors, int(count), Qnn_Tensor_t, what)


class GraphMembers:
    """graphRetrieve and graphExecute of `QnnInterfaceTable`."""

    @qnn_call("graphRetrieve")
    def graphRetrieve(self, contextHandle: Any, graphName: Any, graphHandle: Any) -> int:
        """QnnGraph_retrieve(ctx, name, &graph)."""
        ctx = live_context(contextHandle, C.QNN_GRAPH_ERROR_INVALID_CONTEXT)
        if as_struct(graphHandle, ctypes.c_void_p) is None:
            raise QnnError(C.QNN_GRAPH_ERROR_INVALID_ARGUMENT, "graph out-parameter must be a Qnn_GraphHandle_t")
        if not ctx.finalized:
            raise QnnError(C.QNN_GRAPH_ERROR_GRAPH_NOT_FINALIZED, f"Context {ctx.handle:#x} needs finalization.")
        name = graphName.decode() if isinstance(graphName, (bytes, bytearray)) else str(graphName)
        graph = ctx.graphs.get(name)
        if graph is None:
            raise QnnError(C.QNN_GRAPH_ERROR_GRAPH_DOES_NOT_EXIST, f"no graph {name!r} in the context "
                                                                   f"(have {sorted(ctx.graphs)})")
        set_handle(graphHandle, graph.handle)
        return C.QNN_SUCCESS

    @qnn_call("graphExecute")
    def graphExecute(self, graphHandle: Any, inputs: Any, numInputs: int, outputs: Any, numOutputs: int,
                     profileHandle: Any = None, signalHandle: Any = None) -> int:
        """QnnGraph_execute(graph, inputs, n, outputs, n, profile, signal): run with RAW or MEMHANDLE tensors."""
        graph = lookup(graphHandle, QnnGraph)
        if graph is None and lookup(graphHandle, BuildGraph) is not None:
            raise QnnError(C.QNN_GRAPH_ERROR_GRAPH_NOT_FINALIZED, "the graph is not finalized (graphFinalize)")
        if graph is None:
            raise QnnError(C.QNN_GRAPH_ERROR_INVALID_HANDLE, f"graph handle {pointer_value(graphHandle):#x} is "
                                                             f"not a graph")
        prof = profile_arg(profileHandle, C.QNN_GRAPH_ERROR_SET_PROFILE)
        t0 = time.perf_counter_ns()
        graph.execute(_tensors(inputs, numInputs, "inputs"), _tensors(outputs, numOutputs, "outputs"),
                      collect_perf=prof is not None and prof.detailed)
        if prof is not None:
            rt = graph.runtime
            prof.record(services.execute_events(prof, graph.name, (time.perf_counter_ns() - t0) // 1000, rt.perf))
        return C.QNN_GRAPH_NO_ERROR
