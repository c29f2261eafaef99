"""A QNN context: a context binary (npurt's `CompiledModel`) loaded on an HTP backend, with its memory.

Lifecycle (QnnContext.h, the shared-buffer tutorial):
- created by `contextCreateFromBinary`; with DEFER_GRAPH_INIT only the handle and the HTP plan exist (properties
  answer, WEIGHTS / SPILLFILL / VTCMBACKUP buffers may be registered), otherwise it is finalized at once;
- `finalize` builds the memory: the weights region (the registered weights buffer, or an internal one) into which
  the weights are copied, and the internal arena = the VTCM part (the HTP core's VTCM) mapped contiguously with the
  spill-fill part (the registered spill-fill buffer, or an internal one). From then on its context buffers are in
  use and cannot be deregistered;
- `free` (contextFree) releases everything it owns in one place: graphs, handles (automatic deregistration),
  internal buffers, the arena mapping, its VTCM reference.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import numpy as np

from npurt.memory import Buffer
from npurt.memory.mapping import HostMapping, map_parts, ndarray_at
from npurt.model.compiled import CompiledModel
from npurt.qnn import constants as C
from npurt.qnn.backend import Backend, drop_handle, new_handle
from npurt.qnn.htp_plan import HtpMemoryPlan, plan_htp
from npurt.qnn.mem_registry import REGISTRY, SPILLFILL, VTCMBACKUP, WEIGHTS, MemRecord, QnnError

if TYPE_CHECKING:
    from npurt.qnn.graph import Graph


class Context:
    """One loaded context binary on one backend."""

    def __init__(self, backend: Backend, compiled: CompiledModel, *, deferred: bool, priority: int,
                 concurrent: bool, multi_contexts: bool) -> None:
        self.backend = backend
        self.compiled = compiled
        self.deferred = deferred
        self.priority = priority
        self.concurrent = concurrent
        self.multi_contexts = multi_contexts
        self.finalized = False
        self.freed = False
        self.lock = threading.RLock()
        self.htp: HtpMemoryPlan = plan_htp(compiled.plan, backend.profile.vtcm_size)
        self.graphs: dict[str, "Graph"] = {}
        # memory built at finalize (all released by `free`)
        self.weights: np.ndarray | None = None
        self.arena: np.ndarray | None = None
        self._owned: list[Buffer] = []
        self._mapping: HostMapping | None = None
        self._vtcm_taken = False
        self.external: dict[str, MemRecord] = {}
        self.handle = new_handle(self)
        backend.contexts.append(self)

    # -- properties ------------------------------------------------------------------------------------
    def required_size(self, kind: str) -> int:
        """The size property for a context buffer kind (what contextGetProperty reports)."""
        if kind == WEIGHTS:
            return self.htp.weights_buffer_size
        if kind == SPILLFILL:
            return self.htp.spillfill_buffer_size
        if kind == VTCMBACKUP:
            return self.htp.vtcm_backup_buffer_size
        return 0

    # -- finalize --------------------------------------------------------------------------------------
    def finalize(self) -> None:
        """Build the context's memory and its graphs; QnnError on failure (then nothing is kept)."""
        from npurt.qnn.graph import Graph
        ext = {r.kind: r for r in REGISTRY.of_context(self) if r.kind in (WEIGHTS, SPILLFILL, VTCMBACKUP)}
        if self.concurrent and (SPILLFILL in ext) != (VTCMBACKUP in ext):
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_CONFIG,
                           "REGISTER_CONCURRENT_RESOURCE_SHARING needs both an external spill-fill and an external "
                           "VTCM backup buffer registered for the context (or neither)")
        for rec in ext.values():
            if not rec.alive():
                raise QnnError(C.QNN_CONTEXT_ERROR_MEM_ALLOC,
                               f"the registered {rec.kind} buffer was freed before contextFinalize")
        try:
            self._build_memory(ext)
            graph = Graph(self)
        except QnnError:
            self._release_memory()
            raise
        except Exception as exc:
            self._release_memory()
            raise QnnError(C.QNN_CONTEXT_ERROR_MEM_ALLOC, f"cannot build the context memory: {exc}") from exc
        for rec in ext.values():
            rec.in_use = True
        self.external = ext
        self.graphs[graph.name] = graph
        self.finalized = True

    def _build_memory(self, ext: dict[str, MemRecord]) -> None:
        m, htp, device = self.compiled, self.htp, self.backend.device
        wsize = max(m.plan.weight_size, 1)
        if WEIGHTS in ext:
            weights = ext[WEIGHTS].view()
        else:
            buf = device.alloc(wsize, owner="qnn-weights", name="weights")
            self._owned.append(buf)
            weights = buf.device_view()
        weights[:m.weight_blob.size] = m.weight_blob       # "weights copied in at finalize"
        self.weights = weights
        parts = []
        if htp.vtcm_used:
            vtcm = self.backend.core.take_vtcm()
            self._vtcm_taken = True
            fd, off, _ = vtcm.fd_parts[0]
            parts.append((fd, off, htp.vtcm_used))
        if htp.spill_size:
            if SPILLFILL in ext:
                fd, off, _ = ext[SPILLFILL].fd_part
            else:
                buf = device.alloc(htp.spill_size, owner="qnn-spillfill", name="spillfill")
                self._owned.append(buf)
                fd, off, _ = buf.fd_parts[0]
            parts.append((fd, off, htp.spill_size))
        if parts:
            self._mapping = map_parts(parts)
            self.arena = ndarray_at(self._mapping, 0, htp.vtcm_used + htp.spill_size)
        else:
            self.arena = np.zeros(1, np.uint8)

    def spill_view(self) -> np.ndarray | None:
        """The spill-fill part of the arena (what the executor spills to), or None without spill."""
        if self.arena is None or not self.htp.spill_size:
            return None
        return self.arena[self.htp.vtcm_used:self.htp.vtcm_used + self.htp.spill_size]

    def vtcm_view(self) -> np.ndarray | None:
        """The VTCM part of the arena, or None when the graph uses no VTCM."""
        if self.arena is None or not self.htp.vtcm_used:
            return None
        return self.arena[:self.htp.vtcm_used]

    # -- release: the one place ------------------------------------------------------------------------
    def _release_memory(self) -> None:
        self.weights = None
        self.arena = None
        self._mapping = None       # unmapped once no view of it is left
        for buf in self._owned:
            if buf.alive:
                buf.device.free(buf)
        self._owned = []
        if self._vtcm_taken:
            self._vtcm_taken = False
            self.backend.core.give_vtcm(self)

    def free(self) -> None:
        """contextFree: graphs, registered handles, internal memory, VTCM reference, handle. Waits for a graph
        running on the HTP (whatever its context) to finish: the VTCM is shared."""
        with self.lock, self.backend.core.exec_lock:
            if self.freed:
                return
            self.freed = True
            for graph in self.graphs.values():
                graph.release()
            REGISTRY.release_context(self)
            self.external = {}
            self._release_memory()
            if self in self.backend.contexts:
                self.backend.contexts.remove(self)
            drop_handle(self.handle)
