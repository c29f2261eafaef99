"""The graph-building members: contextCreate, backendValidateOpConfig, graphCreate, tensorCreateGraphTensor /
tensorCreateContextTensor, graphAddNode, graphFinalize, contextGetBinarySize / contextGetBinary. They decode the C
configs and hand them to the objects of `npurt.qnn.graph_build`, which collect the graph and call the compiler."""
from __future__ import annotations

import ctypes
from typing import Any

from npurt.errors import ErrorCode, NpuError
from npurt.memory.cargs import as_struct
from npurt.memory.raw import pointer_value, safe_write
from npurt.model import qnn_import as qi
from npurt.model.qnn_graph import BAD_VALUE
from npurt.qnn import constants as C
from npurt.qnn.backend import Backend, lookup
from npurt.qnn.boundary import QnnError, from_npu, qnn_call
from npurt.qnn.configs import config_entries, custom_config
from npurt.qnn.graph import QnnGraph
from npurt.qnn.graph_build import BuildContext, BuildGraph, create_tensor, decode_op, decode_tensor, finalize_graph
from npurt.qnn.members.args import live_context, out_handle
from npurt.qnn.members.context import backend_device
from npurt.qnn.structs import QnnContext_Config_t, QnnGraph_Config_t, QnnHtpContext_CustomConfig_t, QnnHtpGraph_CustomConfig_t


def _graph(handle: Any, code: int = C.QNN_GRAPH_ERROR_INVALID_HANDLE) -> BuildGraph:
    g = lookup(handle, BuildGraph)
    if g is None and lookup(handle, QnnGraph) is not None:
        raise QnnError(C.QNN_GRAPH_ERROR_GRAPH_FINALIZED, f"graph {pointer_value(handle):#x} is finalized")
    if g is None or g.context.freed:
        raise QnnError(code, f"graph handle {pointer_value(handle):#x} is not a graph being built")
    return g


def _build_context(handle: Any, code: int) -> BuildContext:
    ctx = live_context(handle, code)
    if not isinstance(ctx, BuildContext):
        raise QnnError(C.QNN_GRAPH_ERROR_UNSUPPORTED_FEATURE if code // 1000 == 6 else code,
                       "this context was created from a binary; graphs are built in a contextCreate context")
    return ctx


def _compile_ir(model: qi.QnnModel, soc: str) -> Any:
    from npurt.exec.compile import compile_ir
    return compile_ir(model.graph, soc, model.precision, model.qparams)


def _supported() -> Any:
    from npurt.exec.compile import supported_ops
    return frozenset(supported_ops())


def _infer(graph: Any) -> Any:
    from npurt.exec.compile import optimize
    return optimize(graph)


def _checked(op: qi.QnnOp, tensors: dict, code: int, unsupported: int, bad_value: int) -> None:
    """The op checked against its definition: `code` for a wrong config, `unsupported` for one npurt does not build,
    `bad_value` for a param value no definition takes (NaN, inf, a fractional integer)."""
    try:
        qi.check_op(op, tensors, _supported(), _infer)
    except NpuError as exc:
        raise QnnError(unsupported if exc.code is ErrorCode.NOT_SUPPORTED else
                       bad_value if exc.hint == BAD_VALUE else code, exc.message) from None


def _graph_settings(config: Any, profile: Any) -> dict:
    """graphCreate's HTP custom configs (`htp_plan.graph_settings`): VTCM_SIZE in MB (0 = the SoC's whole VTCM; more
    than the SoC has is refused), OPTIMIZATION's finalize level, PRECISION. Other options are accepted."""
    out: dict[str, int] = {}
    for cfg in config_entries(config, QnnGraph_Config_t, C.QNN_GRAPH_ERROR_INVALID_ARGUMENT):
        if int(cfg.option) != C.QNN_GRAPH_CONFIG_OPTION_CUSTOM:
            continue
        custom = custom_config(cfg, QnnHtpGraph_CustomConfig_t, C.QNN_GRAPH_ERROR_INVALID_ARGUMENT)
        option = int(custom.option)
        if option == C.QNN_HTP_GRAPH_CONFIG_OPTION_VTCM_SIZE:
            vtcm = int(custom.vtcmSizeInMB) << 20
            if vtcm > profile.vtcm_size:
                raise QnnError(C.QNN_GRAPH_ERROR_INVALID_ARGUMENT,
                               f"VTCM_SIZE {int(custom.vtcmSizeInMB)} MB is more than the "
                               f"{profile.vtcm_size >> 20} MB VTCM of {profile.name}")
            out["vtcm_size"] = vtcm
        elif option == C.QNN_HTP_GRAPH_CONFIG_OPTION_OPTIMIZATION:
            opt = custom.optimizationOption
            if int(opt.type) == C.QNN_HTP_GRAPH_OPTIMIZATION_TYPE_FINALIZE_OPTIMIZATION_FLAG:
                out["optimization"] = int(opt.floatValue)
        elif option == C.QNN_HTP_GRAPH_CONFIG_OPTION_PRECISION:
            out["precision"] = int(custom.precision)
    return out


class BuildingMembers:
    """The graph-building members of `QnnInterfaceTable`."""

    @qnn_call("contextCreate")
    def contextCreate(self, backend: Any, device: Any, config: Any, context: Any) -> int:
        """QnnContext_create(backend, device, config, &context): an empty context to build graphs in; with the HTP
        config WEIGHT_SHARING_ENABLED its binary stores weights identical across its graphs once."""
        b, d = backend_device(backend, device)
        if d is not None and not d.matches(b):
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_HANDLE, "invalid device handle")
        if as_struct(context, ctypes.c_void_p) is None:
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, "context out-parameter must be a "
                                                                 "Qnn_ContextHandle_t")
        sharing = False
        for cfg in config_entries(config, QnnContext_Config_t, C.QNN_CONTEXT_ERROR_INVALID_CONFIG):
            custom = as_struct(cfg.customConfig, QnnHtpContext_CustomConfig_t, address=True) \
                if int(cfg.option) == C.QNN_CONTEXT_CONFIG_OPTION_CUSTOM else None
            if custom is not None and int(custom.option) == C.QNN_HTP_CONTEXT_CONFIG_OPTION_WEIGHT_SHARING_ENABLED:
                sharing = bool(custom.weightSharingEnabled)
        out_handle(context, BuildContext(b, sharing).handle, C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, "context")
        return C.QNN_SUCCESS

    @qnn_call("backendValidateOpConfig")
    def backendValidateOpConfig(self, backend: Any, opConfig: Any) -> int:
        """QnnBackend_validateOpConfig(backend, opConfig): QNN_SUCCESS exactly when graphAddNode and graphFinalize
        can build the op (its tensors as described in the config)."""
        b = lookup(backend, Backend)
        if b is None or b.freed:
            raise QnnError(C.QNN_BACKEND_ERROR_INVALID_HANDLE, "invalid backend handle")
        tensors: dict[str, qi.QnnTensor] = {}

        def describe(t: Any, what: str) -> str:
            tensor, _, _ = decode_tensor(t, what)
            tensors[tensor.name] = tensor
            return tensor.name
        try:
            op = decode_op(opConfig, describe)
        except NpuError as exc:
            raise QnnError(C.QNN_BACKEND_ERROR_INVALID_ARGUMENT, exc.message) from None
        code = C.QNN_BACKEND_ERROR_OP_PACKAGE_NOT_FOUND if op.package != qi.PACKAGE else \
            C.QNN_BACKEND_ERROR_INVALID_ARGUMENT
        _checked(op, tensors, code, code, C.QNN_COMMON_ERROR_INVALID_ARGUMENT)
        return C.QNN_SUCCESS

    @qnn_call("graphCreate")
    def graphCreate(self, contextHandle: Any, graphName: Any, config: Any, graphHandle: Any) -> int:
        """QnnGraph_create(ctx, name, config, &graph): an empty graph; its HTP configs VTCM_SIZE (the VTCM its
        plan may use), OPTIMIZATION and PRECISION are kept with it and recorded in its binary."""
        ctx = _build_context(contextHandle, C.QNN_GRAPH_ERROR_INVALID_HANDLE)
        name = graphName.decode() if isinstance(graphName, (bytes, bytearray)) else graphName
        if not isinstance(name, str) or not name:
            raise QnnError(C.QNN_GRAPH_ERROR_INVALID_NAME, "graphName is NULL or empty")
        if as_struct(graphHandle, ctypes.c_void_p) is None:
            raise QnnError(C.QNN_GRAPH_ERROR_INVALID_ARGUMENT, "graph out-parameter must be a Qnn_GraphHandle_t")
        settings = _graph_settings(config, ctx.backend.profile)
        with ctx.lock:
            if name in ctx.building:
                raise QnnError(C.QNN_GRAPH_ERROR_INVALID_NAME, f"the context already has a graph {name!r}")
            graph = BuildGraph(ctx, name)
            graph.htp = settings
            ctx.building[name] = graph
        out_handle(graphHandle, graph.handle, C.QNN_GRAPH_ERROR_INVALID_ARGUMENT, "graph")
        return C.QNN_SUCCESS

    @qnn_call("tensorCreateGraphTensor")
    def tensorCreateGraphTensor(self, graph: Any, tensor: Any) -> int:
        """QnnTensor_createGraphTensor(graph, &tensor): declare a tensor (STATIC data copied now); writes its id."""
        g = _graph(graph, C.QNN_TENSOR_ERROR_INVALID_HANDLE)
        return create_tensor(g, g.context.lock, tensor)

    @qnn_call("tensorCreateContextTensor")
    def tensorCreateContextTensor(self, context: Any, tensor: Any) -> int:
        """QnnTensor_createContextTensor(ctx, &tensor): a STATIC tensor every graph of the context can use."""
        ctx = _build_context(context, C.QNN_TENSOR_ERROR_INVALID_HANDLE)
        return create_tensor(ctx, ctx.lock, tensor)

    @qnn_call("graphAddNode")
    def graphAddNode(self, graph: Any, opConfig: Any) -> int:
        """QnnGraph_addNode(graph, opConfig): an op on created tensors, checked as backendValidateOpConfig does."""
        g = _graph(graph)
        with g.context.lock:
            g.check_open()
            try:
                op = decode_op(opConfig, g.lookup)
            except NpuError as exc:
                code = C.QNN_GRAPH_ERROR_INVALID_TENSOR if exc.code is ErrorCode.INVALID_INPUT else \
                    C.QNN_GRAPH_ERROR_INVALID_OP_CONFIG
                raise QnnError(code, exc.message) from None
            if any(n in g.produced for n in op.outputs):
                raise QnnError(C.QNN_GRAPH_ERROR_INVALID_OP_CONFIG, f"op {op.name!r}: an output is already produced "
                                                                    f"by another node")
            _checked(op, g.known(), C.QNN_GRAPH_ERROR_INVALID_OP_CONFIG, C.QNN_GRAPH_ERROR_UNSUPPORTED_FEATURE,
                     C.QNN_GRAPH_ERROR_INVALID_ARGUMENT)
            g.ops.append(op)
            g.produced.update(op.outputs)
        return C.QNN_GRAPH_NO_ERROR

    @qnn_call("graphFinalize")
    def graphFinalize(self, graphHandle: Any, profileHandle: Any = None, signalHandle: Any = None) -> int:
        """QnnGraph_finalize(graph, profile, signal): compile the graph (npurt's compiler, HTP memory plan)."""
        g = _graph(graphHandle)
        with g.context.lock:                # one critical section: a second finalize / a late addNode sees it done
            g.check_open()
            finalize_graph(g, _compile_ir)
        return C.QNN_GRAPH_NO_ERROR

    @qnn_call("contextGetBinarySize")
    def contextGetBinarySize(self, context: Any, binaryBufferSize: Any) -> int:
        """QnnContext_getBinarySize(ctx, &size): the size of the context binary contextGetBinary writes."""
        size = as_struct(binaryBufferSize, ctypes.c_uint64)
        if size is None:
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, "binaryBufferSize is NULL")
        size.value = len(_binary_of(context))
        return C.QNN_SUCCESS

    @qnn_call("contextGetBinary")
    def contextGetBinary(self, context: Any, binaryBuffer: Any, binaryBufferSize: int,
                         writtenBufferSize: Any) -> int:
        """QnnContext_getBinary(ctx, buffer, size, &written): npurt's context binary (contextCreateFromBinary
        loads it back)."""
        data = _binary_of(context)
        written = as_struct(writtenBufferSize, ctypes.c_uint64)
        if written is None:
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, "writtenBufferSize is NULL")
        if int(binaryBufferSize) < len(data):
            raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT,
                           f"binaryBufferSize {int(binaryBufferSize)} is smaller than the {len(data)}-byte binary")
        if isinstance(binaryBuffer, (bytearray, memoryview)):
            memoryview(binaryBuffer)[:len(data)] = data
        else:
            src = ctypes.create_string_buffer(data, len(data))
            addr = pointer_value(binaryBuffer)
            if not addr or not safe_write(addr, ctypes.addressof(src), len(data)):
                raise QnnError(C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT, "binaryBuffer is NULL or not writable")
        written.value = len(data)
        return C.QNN_SUCCESS


def _binary_of(context: Any) -> bytes:
    ctx = live_context(context)
    try:
        return ctx.binary()
    except NpuError as exc:
        raise from_npu(exc, "context", "cannot write the context binary",
                       general=C.QNN_CONTEXT_ERROR_GET_BINARY_FAILED) from exc
