"""The context members: contextCreateFromBinary, contextCreateFromBinaryListAsync, contextGetProperty,
contextFinalize, contextFree — reading a binary (from bytes, a model or a raw address), the context configs, and
creating `QnnContext` / `GraphsContext` objects whose graphs are `QnnGraph`s, within the PD budget."""
from __future__ import annotations

import ctypes
import logging
import time
from typing import Any

from npurt.errors import ErrorCode, NpuError
from npurt.memory.cargs import as_struct, as_struct_list
from npurt.memory.raw import pointer_value, safe_read, safe_write
from npurt.model import context_binary
from npurt.model.compiled import CompiledModel
from npurt.model.context_binary import ContextBinary
from npurt.model.file_format import HEADER_SIZE, is_npurt
from npurt.qnn import constants as C
from npurt.qnn import services
from npurt.qnn.backend import Backend, QnnDevice, lookup
from npurt.qnn.boundary import QnnError, from_npu, qnn_call
from npurt.qnn.configs import config_entries, custom_config
from npurt.qnn.context import GraphsContext, QnnContext, SpillGroup, join_group
from npurt.qnn.graph import QnnGraph
from npurt.qnn.htp_plan import BUFFER_START_ALIGNMENT, plan_graph
from npurt.qnn.mem_registry import NATIVE, SPILLFILL, VTCMBACKUP, WEIGHTS
from npurt.qnn.members.args import live_context, profile_arg, set_handle
from npurt.qnn.memory_report import check_pd_fits, memory_report
from npurt.qnn.structs import (QnnContext_Config_t, QnnContext_createFromBinaryNotifyFn_t, QnnContext_Params_t,
                               QnnContext_Property_t, QnnHtpContext_CustomConfig_t, QnnHtpContext_CustomProperty_t)
from npurt.runtime.loader import MAX_ONNX, load_family
from npurt.soc.htp import get_htp_profile, is_htp_soc

log = logging.getLogger("npurt.qnn")


class ContextMembers:
    """The context members of `QnnInterfaceTable`."""

    @qnn_call("contextCreateFromBinary")
    def contextCreateFromBinary(self, backend: Any, device: Any, config: Any, binaryBuffer: Any,
                                binaryBufferSize: int, context: Any, profile: Any = None) -> int:
        """QnnContext_createFromBinary: load a context binary (a `CompiledModel`, `.npurt` bytes, a binary of several
        graphs, or a pointer to them) with all its graphs; with DEFER_GRAPH_INIT only a handle is created and
        `contextFinalize` completes it."""
        b, d = backend_device(backend, device)
        if as_struct(context, ctypes.c_void_p) is None:
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, "context out-parameter must be a "
                                                                 "Qnn_ContextHandle_t")
        if d is not None and d.chosen and not d.matches(b):
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_HANDLE, f"the device is {d.soc}, the backend "
                                                               f"{b.profile.name} (it has contexts)")
        loaded = _load_binary(binaryBuffer, binaryBufferSize, b)
        if d is not None and not d.matches(b):
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_HANDLE, f"the device is {d.soc}, the backend "
                                                               f"{b.profile.name}")
        opts = _context_options(config, b)
        prof = profile_arg(profile, C.QNN_CONTEXT_ERROR_SET_PROFILE)
        t0 = time.perf_counter_ns()
        ctx = _create_context(b, loaded, opts)
        if prof is not None:
            prof.record([services.Event(C.QNN_PROFILE_EVENTTYPE_INIT, (time.perf_counter_ns() - t0) // 1000,
                                        f"contextCreateFromBinary {sorted(ctx.graphs)}")])
        set_handle(context, ctx.handle)
        if log.isEnabledFor(services.VERBOSE):              # QNN_LOG_LEVEL_VERBOSE: the backend's memory report
            for line in memory_report(b).lines():
                log.log(services.VERBOSE, "<V> contextCreateFromBinary %#x: %s", ctx.handle, line)
        return C.QNN_SUCCESS

    @qnn_call("contextCreateFromBinaryListAsync")
    def contextCreateFromBinaryListAsync(self, backend: Any, device: Any, contextParams: Any, listConfig: Any,
                                         signal: Any = None) -> int:
        """QnnContext_createFromBinaryListAsync(backend, device, params, listConfig, signal): load every binary of
        the NULL-terminated `QnnContext_Params_t` list. Synchronous (signal must be NULL: signals are not
        emulated); all or nothing: on success each params' notifyFunc was called once, with
        QNN_CONTEXT_NOTIFY_TYPE_CONTEXT_INIT, its new context handle and its notifyParam, before the call returns.
        listConfig applies to every binary and a binary's own configs override it; SHARE_RESOURCES=1 loads the list
        as one group sharing one spill-fill buffer and one VTCM backup buffer (their contexts run one at a time),
        mapped once in the PD (SEQUENTIAL_WITH_VA_OPTIMIZATION) or once per context (SEQUENTIAL_WITHOUT_VA_...)."""
        b, d = backend_device(backend, device)
        if signal is not None and pointer_value(signal):
            raise QnnError(C.QNN_CONTEXT_ERROR_UNSUPPORTED_FEATURE, "signals are not emulated: pass a NULL signal "
                                                                    "(the list is then loaded synchronously)")
        try:
            params = as_struct_list(contextParams, None, QnnContext_Params_t, "contextParams")
        except NpuError as exc:
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, exc.message) from None
        if not params:
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, "contextParams holds no binary")
        base = _context_options(listConfig, b)
        entries = []
        for k, p in enumerate(params):
            if int(p.version) != C.QNN_CONTEXT_PARAMS_VERSION_1:
                raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, f"contextParams[{k}]: version {int(p.version)}"
                                                                     f" (only QNN_CONTEXT_PARAMS_VERSION_1)")
            if not pointer_value(p.v1.notifyFunc):
                raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, f"contextParams[{k}]: notifyFunc is NULL")
            configs = _config_list(p.v1.config, f"contextParams[{k}].config")
            opts = _context_options(configs, b, base) if configs is not None else dict(base)
            entries.append((p, _load_binary(p.v1.binaryBuffer, int(p.v1.binaryBufferSize), b), opts))
            profile_arg(p.v1.profile, C.QNN_CONTEXT_ERROR_SET_PROFILE)
        if d is not None and not d.matches(b):
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_HANDLE, f"the device is {d.soc}, the backend {b.profile.name}")
        group = None
        if base.get("share"):
            if base.get("share_opt") == C.CONCURRENT_OPTIMIZATION:
                raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_CONFIG, "SHARE_RESOURCES with CONCURRENT_OPTIMIZATION "
                                                                   "is not emulated: the list's contexts run one at "
                                                                   "a time (SEQUENTIAL_*)")
            group = _list_group(b, entries)
        created: list[QnnContext] = []
        try:
            for _, loaded, opts in entries:
                created.append(_create_context(b, loaded, opts, group))
        except BaseException:
            for ctx in reversed(created):
                ctx.free()
            if group is not None and not group.members:
                group.free_buffers()
            raise
        for (p, _, _), ctx in zip(entries, created):
            notify = QnnContext_createFromBinaryNotifyFn_t(pointer_value(p.v1.notifyFunc))
            notify(ctx.handle, None, None, C.QNN_CONTEXT_NOTIFY_TYPE_CONTEXT_INIT, p.v1.notifyParam, C.QNN_SUCCESS)
        return C.QNN_SUCCESS

    @qnn_call("contextGetProperty")
    def contextGetProperty(self, contextHandle: Any, properties: Any) -> int:
        """QnnContext_getProperty(ctx, properties): HTP custom properties (alignment, spill-fill, weights and —
        Non-RPC only — VTCM backup sizes), written into each QnnHtpContext_CustomProperty_t. Only contexts
        created with DEFER_GRAPH_INIT answer (as the HTP library does)."""
        ctx = live_context(contextHandle)
        if properties is None:
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, "properties is NULL")
        answers = []
        for prop in as_struct_list(properties, None, QnnContext_Property_t, "properties"):
            if int(prop.option) != C.QNN_CONTEXT_PROPERTY_OPTION_CUSTOM:
                raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, "only QNN_CONTEXT_PROPERTY_OPTION_CUSTOM is "
                                                                     "supported")
            addr = pointer_value(prop.customProperty)
            custom = as_struct(addr, QnnHtpContext_CustomProperty_t, address=True)
            if custom is None:
                raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, "customProperty is NULL or unreadable")
            answers.append((addr, _property_value(ctx, int(custom.option))))
        for addr, value in answers:
            cell = ctypes.c_uint64(value)
            off = QnnHtpContext_CustomProperty_t.bufferStartAlignment.offset
            if not safe_write(addr + off, ctypes.addressof(cell), 8):
                raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, "customProperty is not writable")
        return C.QNN_SUCCESS

    @qnn_call("contextFinalize")
    def contextFinalize(self, context: Any, profile: Any = None) -> int:
        """QnnContext_finalize(ctx, profile): deserialise a DEFER_GRAPH_INIT context (weights copied into the
        registered weights buffer, graphs bound to the registered spill-fill buffer)."""
        ctx = live_context(context)
        with ctx.lock:
            if not ctx.deferred or ctx.finalized:
                raise QnnError(C.QNN_CONTEXT_ERROR_UNSUPPORTED_FEATURE,
                               "No features indicate a need for context finalization (not deferred, or finalized)")
            ctx.finalize(QnnGraph)
            try:
                check_pd_fits(ctx)
            except QnnError:
                ctx.unload()
                raise
        return C.QNN_SUCCESS

    @qnn_call("contextFree")
    def contextFree(self, context: Any, profile: Any = None) -> int:
        """QnnContext_free(ctx, profile): frees graphs, deregisters every handle of the context, frees memory."""
        ctx = live_context(context)
        prof = profile_arg(profile, C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT)
        t0 = time.perf_counter_ns()
        ctx.free()
        if prof is not None:
            prof.record([services.Event(C.QNN_PROFILE_EVENTTYPE_DEINIT, (time.perf_counter_ns() - t0) // 1000,
                                        "contextFree")])
        return C.QNN_CONTEXT_NO_ERROR


def _load_binary(binary: Any, size: Any, backend: Backend) -> ContextBinary:
    """The context binary's graphs: a CompiledModel, `.npurt` bytes, a context binary of several graphs, ONNX bytes /
    ModelProto (compiled on the fly with the defaults), or a pointer to such bytes — read here, loaded by the
    runtime's one loader (`runtime.loader`) or, several graphs, by `model.context_binary`."""
    import onnx
    if not isinstance(binary, (CompiledModel, onnx.ModelProto)):
        if binary is None or not size or int(size) <= 0:
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, "binaryBuffer is NULL or binaryBufferSize is 0")
        if isinstance(binary, (bytes, bytearray, memoryview)):
            if int(size) > len(binary):
                raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT,
                               f"binaryBufferSize {size} is larger than the buffer ({len(binary)} bytes)")
            binary = bytes(memoryview(binary)[:int(size)])
        else:
            binary = _read_binary(pointer_value(binary), int(size))
    if isinstance(binary, bytes) and context_binary.is_context_binary(binary):
        try:
            loaded = context_binary.decode(binary)
        except NpuError as exc:
            raise from_npu(exc, "context", "not a context binary",
                           general=C.QNN_CONTEXT_ERROR_CREATE_FROM_BINARY) from None
    else:
        loaded = ContextBinary([_load_model(binary, backend)], False)
    for compiled in loaded.models:
        if is_htp_soc(compiled.soc):
            backend.adopt(get_htp_profile(compiled.soc).name)
        if is_htp_soc(compiled.soc) and get_htp_profile(compiled.soc).name != backend.profile.name:
            raise QnnError(C.QNN_CONTEXT_ERROR_BINARY_CONFIGURATION,
                           f"context binary was prepared for {compiled.soc}, the backend is {backend.profile.name}")
    return loaded


def _read_binary(addr: int, size: int) -> bytes:
    """The `size` bytes of a context binary at a raw address, read only after its header agrees with `size` (an
    absurd size is refused before anything of that size is allocated)."""
    head = safe_read(addr, min(size, HEADER_SIZE))
    if head is None:
        raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, "binaryBuffer is not readable")
    declared = context_binary.declared_size(head)
    if declared is not None and declared != size:
        raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, f"binaryBufferSize {size} does not match the "
                                                             f"{declared}-byte context binary")
    if declared is None and size > MAX_ONNX:
        raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, f"binaryBufferSize {size} is larger than any model "
                                                             f"(ONNX is at most {MAX_ONNX} bytes)")
    data = safe_read(addr, size)
    if data is None:
        raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, f"binaryBuffer is not readable for {size} bytes")
    return data


def _load_model(model: Any, backend: Backend) -> CompiledModel:
    """`model` through the runtime's loader: a compiled binary as it is (its SoC is checked by the caller), an ONNX
    model compiled with the defaults (fp16) for the backend's own HTP SoC (`npurt.soc.htp`: its C2 and input
    alignment are npurt's choice, as HTP has no NC1HWC2 layout of its own), so the binary records that SoC as a
    context binary prepared for this backend does; the HTP context then plans it into the VTCM. Any failure is
    QNN_CONTEXT_ERROR_CREATE_FROM_BINARY (out of memory and the like keep their own codes)."""
    try:
        return load_family(model, backend.profile.name, any_soc=True).current
    except NpuError as exc:
        if exc.code is ErrorCode.INVALID_MODEL and isinstance(model, (bytes, bytearray)) and not is_npurt(model):
            raise QnnError(C.QNN_CONTEXT_ERROR_CREATE_FROM_BINARY, foreign_binary(len(model))) from None
        raise from_npu(exc, "context", "not a context binary", general=C.QNN_CONTEXT_ERROR_CREATE_FROM_BINARY) \
            from None


def foreign_binary(size: int) -> str:
    """The one line for a binary that is neither npurt's nor ONNX (e.g. a QNN SDK context binary)."""
    return (f"not an npurt context binary ({size} bytes): a QNN SDK context binary (e.g. one onnxruntime's EPContext "
            f"generation made with Qualcomm's libQnnHtp) is a format npurt does not read; make one with `npurt "
            f"convert MODEL.onnx --soc sm8550 --qnn-io-layout nchw -o MODEL.bin` and point the EPContext node at it")


def backend_device(backend: Any, device: Any) -> tuple[Backend, QnnDevice | None]:
    """The live backend and device (None for a NULL device) of a context-creating call; QnnError 5002 otherwise."""
    b = lookup(backend, Backend)
    if b is None or b.freed:
        raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_HANDLE, "invalid backend handle")
    d = lookup(device, QnnDevice) if device is not None and pointer_value(device) else None
    if d is not None and d.freed or d is None and device is not None and pointer_value(device):
        raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_HANDLE, "invalid device handle")
    return b, d


def _create_context(b: Backend, loaded: ContextBinary, opts: dict, group: SpillGroup | None = None) -> QnnContext:
    """A context of the loaded binary on backend `b` with `opts` (from `_context_options`), in the spill-fill group
    its REGISTER_MULTI_CONTEXTS config names (or `group`), finalized unless deferred and within the PD budget;
    QnnError with nothing kept on failure."""
    opts = {k: v for k, v in opts.items() if k not in ("share", "share_opt")}
    spec = opts.pop("group", None)
    ctx = QnnContext(b, loaded.models[0], **opts) if len(loaded.models) == 1 else \
        GraphsContext(b, loaded.models, shared=loaded.shared, **opts)
    try:
        if group is not None:
            group.join(ctx)
        elif spec is not None and not ctx.deferred:    # DEFER_GRAPH_INIT: the external-buffer flow instead
            join_group(ctx, *spec)
        if not ctx.deferred:
            ctx.finalize(QnnGraph)
            check_pd_fits(ctx)
    except BaseException:
        ctx.free()
        raise
    return ctx


def _list_group(b: Backend, entries: list) -> SpillGroup:
    """SHARE_RESOURCES: one group for the list, its spill-fill and VTCM backup buffers sized for its largest need."""
    soc_vtcm = b.profile.vtcm_size
    plans = [plan_graph(m, soc_vtcm) for _, loaded, _ in entries for m in loaded.models]
    spill = max((p.spill_size for p in plans), default=0)
    backup = max((p.vtcm_backup_buffer_size for p in plans), default=0)
    share_va = entries[0][2].get("share_opt", C.SEQUENTIAL_WITH_VA_OPTIMIZATION) == C.SEQUENTIAL_WITH_VA_OPTIMIZATION
    try:
        return SpillGroup(b, spill, backup, share_va)
    except NpuError as exc:
        raise from_npu(exc, "context", f"cannot allocate the list's shared buffers ({spill} B spill-fill, "
                                       f"{backup} B VTCM backup)", general=C.QNN_CONTEXT_ERROR_MEM_ALLOC) from exc


def _config_list(address: Any, what: str) -> list | None:
    """The QnnContext_Config_t of a NULL-terminated `const QnnContext_Config_t**` at `address` (None for NULL)."""
    if not pointer_value(address):
        return None
    try:
        return as_struct_list(pointer_value(address), None, QnnContext_Config_t, what, address=True)
    except NpuError as exc:
        raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_CONFIG, exc.message) from None


def _context_options(config: Any, backend: Backend, base: dict | None = None) -> dict:
    """The context options `config` asks for, over `base` (the defaults when None)."""
    opts = dict(base) if base is not None else {"deferred": False, "priority": C.QNN_PRIORITY_DEFAULT,
                                                 "concurrent": False, "multi_contexts": False}
    for cfg in config_entries(config, QnnContext_Config_t, C.QNN_CONTEXT_ERROR_INVALID_CONFIG):
        option = int(cfg.option)
        if option == C.QNN_CONTEXT_CONFIG_OPTION_DEFER_GRAPH_INIT:
            opts["deferred"] = bool(cfg.isGraphInitDeferred)
        elif option == C.QNN_CONTEXT_CONFIG_OPTION_PRIORITY:
            if int(cfg.priority) not in (C.QNN_PRIORITY_LOW, C.QNN_PRIORITY_NORMAL, C.QNN_PRIORITY_NORMAL_HIGH,
                                         C.QNN_PRIORITY_HIGH):
                raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_CONFIG, f"unknown priority {int(cfg.priority)}")
            opts["priority"] = int(cfg.priority)
        elif option == C.QNN_CONTEXT_CONFIG_OPTION_CUSTOM:
            _htp_option(custom_config(cfg, QnnHtpContext_CustomConfig_t, C.QNN_CONTEXT_ERROR_INVALID_CONFIG), opts)
        elif option in (C.QNN_CONTEXT_CONFIG_OPTION_ERROR_REPORTING, C.QNN_CONTEXT_CONFIG_OPTION_OEM_STRING,
                        C.QNN_CONTEXT_CONFIG_ASYNC_EXECUTION_QUEUE_DEPTH, C.QNN_CONTEXT_CONFIG_ENABLE_GRAPHS,
                        C.QNN_CONTEXT_CONFIG_MEMORY_LIMIT_HINT, C.QNN_CONTEXT_CONFIG_PERSISTENT_BINARY,
                        C.QNN_CONTEXT_CONFIG_BINARY_COMPATIBILITY, C.QNN_CONTEXT_CONFIG_GRAPH_RETENTION_ORDER):
            continue        # accepted; no effect on the memory model
        else:
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_CONFIG, f"unknown context config option {option}")
    if opts["concurrent"] and backend.use_case != NATIVE:
        log.warning("<W> REGISTER_CONCURRENT_RESOURCE_SHARING has an effect only in the Non-RPC use case")
    return opts


def _htp_option(custom: QnnHtpContext_CustomConfig_t, opts: dict) -> None:
    option = int(custom.option)
    if option == C.QNN_HTP_CONTEXT_CONFIG_OPTION_REGISTER_MULTI_CONTEXTS:
        _check_group(custom.groupRegistration, opts)
        opts["multi_contexts"] = True
        opts["group"] = (pointer_value(custom.groupRegistration.firstGroupHandle),
                         int(custom.groupRegistration.maxSpillFillBuffer))
    elif option == C.QNN_HTP_CONTEXT_CONFIG_OPTION_REGISTER_CONCURRENT_RESOURCE_SHARING:
        _check_group(custom.concurrentGroupRegistration, opts)
        opts["concurrent"] = True
    elif option == C.QNN_HTP_CONTEXT_CONFIG_OPTION_SHARE_RESOURCES:
        opts["share"] = bool(custom.shareResources)         # used by contextCreateFromBinaryListAsync only
    elif option == C.QNN_HTP_CONTEXT_CONFIG_OPTION_SHARE_RESOURCES_OPTIMIZATION_TYPE:
        kind = int(custom.shareResOptType)
        if kind not in (C.SEQUENTIAL_WITH_VA_OPTIMIZATION, C.SEQUENTIAL_WITHOUT_VA_OPTIMIZATION,
                        C.CONCURRENT_OPTIMIZATION):
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_CONFIG, f"unknown SHARE_RESOURCES_OPTIMIZATION_TYPE {kind}")
        opts["share_opt"] = kind
    elif not (1 <= option <= C.QNN_HTP_CONTEXT_CONFIG_OPTION_LORA_WEIGHT_SHARING_ENABLED):
        raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_CONFIG, f"unknown HTP context config option {option}")


def _check_group(group: Any, opts: dict) -> None:
    """firstGroupHandle must be NULL (a new group) or a live context; with DEFER_GRAPH_INIT it is not used."""
    first = pointer_value(group.firstGroupHandle)
    if first and lookup(first, QnnContext) is None:
        raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_CONFIG, f"firstGroupHandle {first:#x} is not a live context")


def _property_value(ctx: QnnContext, option: int) -> int:
    if not ctx.deferred:
        raise QnnError(C.QNN_CONTEXT_ERROR_UNSUPPORTED_FEATURE,
                       "Failed get property: HTP custom properties need a DEFER_GRAPH_INIT context")
    if option == C.QNN_HTP_CONTEXT_GET_PROP_BUFFER_START_ALIGNMENT:
        return BUFFER_START_ALIGNMENT
    if option == C.QNN_HTP_CONTEXT_GET_PROP_MAX_SPILLFILL_BUFFER_SIZE:
        return ctx.required_size(SPILLFILL)
    if option == C.QNN_HTP_CONTEXT_GET_PROP_WEIGHTS_BUFFER_SIZE:
        return ctx.required_size(WEIGHTS)
    if option == C.QNN_HTP_CONTEXT_GET_PROP_MAX_VTCMBACKUP_BUFFER_SIZE and ctx.backend.use_case == NATIVE:
        return ctx.required_size(VTCMBACKUP)
    raise QnnError(C.QNN_CONTEXT_ERROR_UNSUPPORTED_FEATURE, f"Failed get property {option}")
