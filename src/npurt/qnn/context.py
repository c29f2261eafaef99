"""A QNN context: a context binary (npurt's `CompiledModel`) loaded on an HTP backend, with its memory.

The context runs on the one vendor-neutral runtime: at finalize it creates a `npurt.runtime.Context` for the
binary on the HTP device, with the HTP memory plan (`htp_plan`: VTCM placement, spill-fill overflow) as its plan,
and hands it the memory QNN decides on. The runtime context then owns binding, weights, the run guard, perf counters
and teardown; this module only says which memory is which.

Lifecycle (QnnContext.h, the shared-buffer tutorial):
- created by `contextCreateFromBinary`; with DEFER_GRAPH_INIT only the handle and the HTP plan exist (properties
  answer, WEIGHTS / SPILLFILL / VTCMBACKUP buffers may be registered), otherwise it is finalized at once;
- `finalize` builds the memory: the weights region (the registered weights buffer, or an internal one) given to the
  runtime as its weight memory (the runtime copies the weights in), and the internal arena = the VTCM part (the HTP
  core's VTCM) followed by the spill-fill part (the registered spill-fill buffer, or an internal one), stitched into
  one device buffer (`Device.compose`) and given to the runtime as its internal memory. From then on its context
  buffers are in use and cannot be deregistered;
- `free` (contextFree) releases everything it owns in one place: graphs, handles (automatic deregistration), the
  runtime context, internal buffers, the arena, its VTCM reference.

A binary of several graphs is a `GraphsContext`: one child `QnnContext` per graph, over one shared weights buffer
when the binary's weights are shared (`npurt.model.context_binary`). Contexts loaded with REGISTER_MULTI_CONTEXTS
form a `SpillGroup`: one spill-fill buffer of the group's maxSpillFillBuffer under all their arenas.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

import npurt.forksafe as forksafe
from npurt.errors import ErrorCode, NpuError
from npurt.memory import Buffer
from npurt.memory.mapping import page_round
from npurt.memory.raw import pointer_value
from npurt.model import context_binary
from npurt.model.compiled import CompiledModel
from npurt.qnn import constants as C
from npurt.qnn.backend import HANDLES, Backend
from npurt.qnn.htp_plan import ContextMemory, HtpMemoryPlan, plan_graph, round_granule
from npurt.qnn.boundary import QnnError, from_npu
from npurt.qnn.mem_registry import REGISTRY, SPILLFILL, VTCMBACKUP, WEIGHTS, MemRecord
from npurt.runtime import Context as RuntimeContext
from npurt.runtime import ContextOptions, MemRef

# How the runtime runs a QNN context: QNN supplies the weight and internal memory; weights are read from the weights
# region on every execute; no runtime cache maintenance (HTP shared buffers are coherent in the mirror).
RUNTIME_OPTIONS = ContextOptions(weights_outside=True, internal_outside=True, cache_weights=False,
                                 flush_inputs=False, invalidate_outputs=False)

if TYPE_CHECKING:
    from npurt.qnn.graph import QnnGraph


class QnnContext:
    """One loaded context binary on one backend."""

    parent: "QnnContext | None" = None      # the context of several graphs this one is a graph of
    takes_context_buffers = True            # external WEIGHTS / SPILLFILL / VTCMBACKUP buffers may be registered

    def __init__(self, backend: Backend, compiled: CompiledModel | None, *, deferred: bool, priority: int,
                 concurrent: bool, multi_contexts: bool, weights: MemRef | None = None,
                 htp: HtpMemoryPlan | None = None) -> None:
        self.backend = backend
        self.shared_weights = weights           # a weight store of the parent's several graphs (weight sharing)
        self.shared_spill: Buffer | None = None  # the spill-fill buffer of the parent's graphs (they run one by one)
        self.group: SpillGroup | None = None    # REGISTER_MULTI_CONTEXTS: the group whose spill-fill buffer it uses
        self.compiled = compiled
        self.deferred = deferred
        self.priority = priority
        self.concurrent = concurrent
        self.multi_contexts = multi_contexts
        self.finalized = False
        self.freed = False
        self.lock = forksafe.rlock()
        self.htp: HtpMemoryPlan | None = htp if htp is not None or compiled is None else \
            plan_graph(compiled, backend.profile.vtcm_size)     # `htp`: the plan a parent already made
        self.graphs: dict[str, "QnnGraph"] = {}
        # built at finalize (all released by `free`)
        self.runtime: RuntimeContext | None = None
        self._owned: list[Buffer] = []          # QNN's own weights / spill-fill buffers (no registered one)
        self._arena: Buffer | None = None       # the VTCM + spill-fill composite buffer
        self._vtcm_taken = False
        self.external: dict[str, MemRecord] = {}
        self._weights_ref: MemRef | None = None     # where the runtime reads the weights (set at finalize)
        self.handle = HANDLES.add(self)
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
    def finalize(self, open_graph: Callable[["QnnContext"], "QnnGraph"]) -> None:
        """Build the context's memory and open its graph on it (`open_graph`: `QnnGraph`, a layer above, which reads
        this context); QnnError on failure (then nothing is kept)."""
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
            graph = open_graph(self)
        except QnnError:
            self._release_memory()
            raise
        except NpuError as exc:
            self._release_memory()
            raise from_npu(exc, "context", "cannot build the context memory",
                           general=C.QNN_CONTEXT_ERROR_MEM_ALLOC) from exc
        except BaseException:
            self._release_memory()
            raise
        for rec in ext.values():
            rec.in_use = True
        self.external = ext
        self.graphs[graph.name] = graph
        self.finalized = True

    def _build_memory(self, ext: dict[str, MemRecord]) -> None:
        m, htp, device = self.compiled, self.htp, self.backend.device
        try:
            rt = RuntimeContext(m, device=device, options=RUNTIME_OPTIONS, plan=htp.plan, any_soc=True,
                                name=f"qnn-context-{self.handle:x}")
        except NpuError as exc:
            raise from_npu(exc, "context", "cannot load the context binary",
                           general=C.QNN_CONTEXT_ERROR_CREATE_FROM_BINARY) from exc
        self.runtime = rt
        if WEIGHTS in ext and ext[WEIGHTS].nbytes:
            rec = ext[WEIGHTS]
            weights = MemRef(rec.buffer, rec.buf_offset, rec.nbytes, "weights")
        elif self.shared_weights is not None:
            weights = self.shared_weights
        else:
            weights = MemRef(self._own(max(m.plan.weight_size, 1), "qnn-weights", "weights"), label="weights")
        rt.set_weight_memory(weights)                       # "weights copied in at finalize"
        self._weights_ref = weights
        parts = []
        if htp.vtcm_used:
            vtcm = self.backend.core.take_vtcm()
            self._vtcm_taken = True
            parts.append((vtcm, 0, htp.vtcm_used))
        if htp.spill_size:
            if SPILLFILL in ext:
                rec = ext[SPILLFILL]
                parts.append((rec.buffer, rec.buf_offset, htp.spill_size))
            elif self.shared_spill is not None or self.group is not None:
                spill = self.shared_spill if self.shared_spill is not None else self.group.buffer
                parts.append((spill, 0, htp.spill_size))
            else:
                parts.append((self._own(htp.spill_size, "qnn-spillfill", "spillfill"), 0, htp.spill_size))
        if parts:
            self._arena = device.compose(parts, owner="qnn-arena", name="vtcm+spillfill")
            rt.set_internal_memory(MemRef(self._arena, 0, htp.vtcm_used + htp.spill_size, "internal"))

    def spill_need(self) -> int:
        """The spill-fill bytes the context's graphs need (one graph runs at a time: the largest)."""
        return self.htp.spill_size

    def _own(self, size: int, owner: str, name: str) -> Buffer:
        buf = self.backend.device.alloc(size, owner=owner, name=name)
        self._owned.append(buf)
        return buf

    def binary(self) -> bytes:
        """The context binary (contextGetBinary): the graph's compiled model."""
        return self.compiled.to_bytes()

    def memory(self) -> ContextMemory:
        """The context's memory (see `ContextMemory`)."""
        size, ref = self.compiled.plan.weight_size, self._weights_ref
        held = page_round(ref.size) if ref is not None and self.shared_weights is None else 0
        need = self.htp.spill_size
        return ContextMemory(1, False, size, size, held, spill_fill=self._spill_held(), spill_fill_need=need,
                             spill_fill_unshared=page_round(need) if need else 0, vtcm=self.htp.vtcm_used,
                             vtcm_backup=self.external[VTCMBACKUP].nbytes if VTCMBACKUP in self.external else 0,
                             registered_io=self._registered_io(), group=self.group and self.group.first)

    def _spill_held(self) -> int:
        """Spill-fill memory the context holds itself: its own buffers and a registered SPILLFILL buffer."""
        own = sum(page_round(b.size) for b in self._owned if b.owner == "qnn-spillfill" and b.alive)
        return own + (self.external[SPILLFILL].nbytes if SPILLFILL in self.external else 0)

    def _registered_io(self) -> int:
        """Bytes of graph I/O registered in the context (memRegister'd ION / shared buffers), each (memory, offset)
        once."""
        seen = {(r.key, r.offset): r.nbytes for r in REGISTRY.of_context(self)
                if r.kind not in (WEIGHTS, SPILLFILL, VTCMBACKUP)}
        return sum(seen.values())

    @property
    def arena(self) -> np.ndarray | None:
        """The internal arena as the HTP sees it ([VTCM | spill-fill]), or None before finalize / without one."""
        return self._arena.device_view() if self._arena is not None and self._arena.alive else None

    def spill_view(self) -> np.ndarray | None:
        """The spill-fill part of the arena (what the executor spills to), or None without spill."""
        arena = self.arena
        if arena is None or not self.htp.spill_size:
            return None
        return arena[self.htp.vtcm_used:self.htp.vtcm_used + self.htp.spill_size]

    def vtcm_view(self) -> np.ndarray | None:
        """The VTCM part of the arena, or None when the graph uses no VTCM."""
        arena = self.arena
        if arena is None or not self.htp.vtcm_used:
            return None
        return arena[:self.htp.vtcm_used]

    # -- release: the one place ------------------------------------------------------------------------
    def _release_memory(self) -> None:
        rt, self.runtime = self.runtime, None
        self._weights_ref = None
        if rt is not None and not rt.destroyed:
            rt.destroy()                                    # bindings, weight store, its device reference
        if self._arena is not None and self._arena.alive:
            self._arena.free()
        self._arena = None
        for buf in self._owned:
            if buf.alive:
                buf.device.free(buf)
        self._owned = []
        if self._vtcm_taken:
            self._vtcm_taken = False
            self.backend.core.give_vtcm(self)

    def unload(self) -> None:
        """Undo `finalize` (a load the PD cannot take): graphs and memory released, registered buffers free to
        deregister again, the handle kept (a DEFER_GRAPH_INIT context may be finalized again)."""
        for graph in self.graphs.values():
            graph.release()
        self.graphs = {}
        for rec in self.external.values():
            rec.in_use = False
        self.external = {}
        self._release_memory()
        self.finalized = False

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
            self._unlist()

    def _unlist(self) -> None:
        """The last step of `free`: out of its spill-fill group, its backend's contexts and the handle table."""
        if self.group is not None:
            self.group.leave(self)
        if self in self.backend.contexts:
            self.backend.contexts.remove(self)
        HANDLES.remove(self.handle)


class SpillGroup:
    """Contexts loaded with the HTP context config REGISTER_MULTI_CONTEXTS (or one contextCreateFromBinaryListAsync
    list with SHARE_RESOURCES, which also gives them one VTCM backup buffer): one spill-fill buffer of the group's
    `maxSpillFillBuffer` (given with its first context; later values are ignored, as the header says) under every
    member's arena. A context whose graphs need more spill-fill than that is refused 5010. The HTP runs one graph at
    a time (`HtpCore.exec_lock`), so the members' executes take turns on the buffer: concurrent graphExecutes on a
    group are serialised, never refused. The buffer is freed with the group's last member."""

    def __init__(self, backend: Backend, max_spill: int, vtcm_backup: int = 0, share_va: bool = True) -> None:
        self.backend = backend
        self.max_spill = int(max_spill)
        self.members: list[QnnContext] = []
        self.first = 0                          # the handle of its first context (its name in reports)
        self.share_va = share_va                # False: each member maps the shared buffers at its own address
        self.buffer: Buffer | None = backend.device.alloc(page_round(self.max_spill), owner="qnn-spillfill",
                                                          name="group spill-fill") if self.max_spill else None
        self.backup: Buffer | None = None       # SHARE_RESOURCES: the one VTCM backup buffer of the members
        if vtcm_backup:
            try:
                self.backup = backend.device.alloc(page_round(vtcm_backup), owner="qnn-vtcmbackup",
                                                   name="shared VTCM backup")
            except BaseException:
                self.free_buffers()
                raise

    def join(self, ctx: QnnContext) -> None:
        """Make `ctx` (not yet finalized) a member; QnnError 5010 if its graphs need more spill-fill than the group's
        buffer or it is on another backend."""
        if ctx.backend is not self.backend:
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_CONFIG, "REGISTER_MULTI_CONTEXTS: firstGroupHandle is a "
                                                               "context of another backend")
        need = ctx.spill_need()
        if need > self.max_spill:
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_CONFIG,
                           f"REGISTER_MULTI_CONTEXTS: the context needs {need} bytes of spill-fill, more than the "
                           f"group's maxSpillFillBuffer {self.max_spill}")
        ctx.group = self
        self.members.append(ctx)
        self.first = self.first or ctx.handle

    def leave(self, ctx: QnnContext) -> None:
        """`ctx` was freed; the last member frees the buffer."""
        ctx.group = None
        if ctx in self.members:
            self.members.remove(ctx)
        if not self.members:
            self.free_buffers()

    def free_buffers(self) -> None:
        """Free the group's buffers (with its last member, or when its list failed to load)."""
        for buf in (self.buffer, self.backup):
            if buf is not None and buf.alive:
                buf.device.free(buf)


def join_group(ctx: QnnContext, first: int, max_spill: int) -> None:
    """REGISTER_MULTI_CONTEXTS {firstGroupHandle, maxSpillFillBuffer} for `ctx` before it is finalized: NULL starts
    a group of `max_spill` bytes (0: a group of contexts that do not spill), else `ctx` joins the group of the
    context `first`. QnnError 5010 for a handle that is no grouped live context or a need above the group's size."""
    if not first:
        try:
            group = SpillGroup(ctx.backend, max(int(max_spill), 0))
        except NpuError as exc:
            raise from_npu(exc, "context", f"cannot allocate the group's {max_spill}-byte spill-fill buffer",
                           general=C.QNN_CONTEXT_ERROR_MEM_ALLOC) from exc
        try:
            group.join(ctx)
        except QnnError:
            group.leave(ctx)
            raise
        return
    head = HANDLES.get(first, QnnContext)
    if head is None or head.freed or head.group is None:
        raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_CONFIG, f"REGISTER_MULTI_CONTEXTS: firstGroupHandle {first:#x} "
                                                           f"is not a live context of a group")
    head.group.join(ctx)


def context_memory(context: Any) -> ContextMemory:
    """The weight memory of a live context handle (`ContextMemory`: stored vs unshared bytes, device memory);
    NpuError INVALID_HANDLE for anything else."""
    ctx = HANDLES.get(pointer_value(context), QnnContext)
    if ctx is None or ctx.freed:
        raise NpuError(ErrorCode.INVALID_HANDLE, f"context handle {pointer_value(context):#x} is not a live context")
    return ctx.memory()


class GraphsContext(QnnContext):
    """A context of several graphs (a multi-graph context binary; contextCreate's, `graph_build.BuildContext`): each
    graph runs in a child `QnnContext` of its own compiled model, finalized together. With a shared weight store
    (weight sharing) the parent owns one weights buffer every child reads, so shared weights are in memory once; a
    loaded binary's graphs also spill into one spill-fill buffer (the HTP runs one graph at a time).
    Graph I/O handles registered on the parent serve its children's graphs; external weights / spill-fill / VTCM
    backup buffers are taken by contexts of one graph only (`takes_context_buffers`)."""

    takes_context_buffers = False

    def __init__(self, backend: Backend, models: list[CompiledModel], *, shared: bool = False, deferred: bool = False,
                 priority: int = C.QNN_PRIORITY_DEFAULT, concurrent: bool = False,
                 multi_contexts: bool = False) -> None:
        self.models = list(models)              # no model of its own (`compiled` None): the children hold them
        self.shared = shared
        self.children: list[QnnContext] = []
        self._derived: dict[tuple, Any] = {}    # per list of models: their HTP plans and weight bytes (see _of)
        super().__init__(backend, None, deferred=deferred, priority=priority, concurrent=concurrent,
                         multi_contexts=multi_contexts)

    def _of(self) -> tuple[list[HtpMemoryPlan], tuple[int, int]]:
        """(each graph's HTP plan, (weight bytes stored, unshared)) of the current models, computed once per list
        of models (a built context gains one per finalized graph): hashing a shared store is not redone by every
        size property, memory report and address-space check."""
        key = tuple(map(id, self.models))
        if key not in self._derived:
            self._derived = {key: ([plan_graph(m, self.backend.profile.vtcm_size) for m in self.models],
                                   context_binary.weight_bytes(self.models, self.shared))}
        return self._derived[key]

    def required_size(self, kind: str) -> int:
        """The size properties of the context: the weights of all graphs (the store once when shared), the largest
        spill-fill / VTCM backup need of a graph (its graphs run one at a time)."""
        plans, (stored, _) = self._of()
        if kind == WEIGHTS:
            return round_granule(stored)
        if kind == SPILLFILL:
            return max((p.spillfill_buffer_size for p in plans), default=0)
        if kind == VTCMBACKUP:
            return max((p.vtcm_backup_buffer_size for p in plans), default=0)
        return 0

    def spill_need(self) -> int:
        return max((p.spill_size for p in self._of()[0]), default=0)

    def finalize(self, open_graph: Callable[[QnnContext], "QnnGraph"]) -> None:
        """Build every graph's child context: over the one shared weights buffer when the store is shared, and over
        one spill-fill buffer of the largest graph's need (the HTP runs one graph at a time); QnnError on failure,
        and then nothing is kept."""
        pending: list[QnnContext] = []
        try:
            weights = None
            if self.shared and self.models:
                size = max(self.models[0].plan.weight_size, 1)
                weights = MemRef(self._own(size, "qnn-weights", "shared weights"), 0, size, "weights")
            self._weights_ref = weights
            for m, plan in zip(self.models, self._of()[0]):
                pending.append(QnnContext(self.backend, m, deferred=False, priority=self.priority, concurrent=False,
                                          multi_contexts=False, weights=weights, htp=plan))
            spill = self.spill_need()
            if spill:
                shared_spill = self.group.buffer if self.group is not None else \
                    self._own(spill, "qnn-spillfill", "shared spill-fill")
                for child in pending:
                    child.shared_spill = shared_spill
            for child in pending:
                self.add_child(child, open_graph)
        except BaseException:
            for child in pending:
                child.free()
            self._release_memory()
            raise
        self.finalized = True

    def add_child(self, child: QnnContext, open_graph: Callable[[QnnContext], "QnnGraph"]) -> "QnnGraph":
        """Finalize `child` (freed on failure) as one of this context's graphs; its graph."""
        child.parent = self
        try:
            child.finalize(open_graph)
        except BaseException:
            child.free()
            raise
        self.children.append(child)
        graph = child.graphs[child.compiled.graph.name]
        self.graphs[graph.name] = graph
        return graph

    def binary(self) -> bytes:
        """The context binary of every graph (`npurt.model.context_binary`), weights shared when the store is."""
        return context_binary.encode(self.models, share=self.shared)

    def memory(self) -> ContextMemory:
        needs, (stored, unshared) = self._of()
        own = self._weights_ref
        kids = [c.memory() for c in self.children]
        held = (page_round(own.size) if own is not None else 0) + sum(k.weight_memory for k in kids)
        return ContextMemory(len(self.models), self.shared, stored, unshared, held,
                             spill_fill=self._spill_held() + sum(k.spill_fill for k in kids),
                             spill_fill_need=max((p.spill_size for p in needs), default=0),
                             spill_fill_unshared=sum(page_round(p.spill_size) for p in needs if p.spill_size),
                             vtcm=max((p.vtcm_used for p in needs), default=0),
                             registered_io=self._registered_io(), group=self.group and self.group.first)

    def _release_memory(self) -> None:
        for child in self.children:
            child.free()
        self.children = []
        self.graphs = {}
        super()._release_memory()

    def free(self) -> None:
        with self.lock:
            if self.freed:
                return
            self.freed = True
            self._release_memory()
            REGISTRY.release_context(self)
            self.external = {}
            self._unlist()
