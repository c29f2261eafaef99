"""QNN contexts with many graphs and weight sharing: N graphs built in one context give one context binary
(contextGetBinary), contextCreateFromBinary loads them all, graphRetrieve finds each by name,
systemContextGetBinaryInfo reports numGraphs = N; with WEIGHT_SHARING_ENABLED identical weights are stored once in
the binary and once in device memory (`npurt.qnn.context_memory`). Through the Python mirror and through
onnxruntime's QNN EP (a model split into two partitions; two models sharing a backbone with `ep.share_ep_contexts`)."""
from __future__ import annotations

import ctypes
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import npurt.qnn as q
from npurt.model import context_binary
from npurt.model.compiled import read_compiled
from npurt.qnn.backend import HANDLES
from npurt.qnn.context import GraphsContext
from npurt.qnn.system import QnnSystemContext_BinaryInfo_t, QnnHtpSystemContext_GraphBlob_t, QnnSystemInterfaceTable

from helpers.capi import prefix
from helpers.oracle import qnn_ep_session, run_ort
from helpers.qnn import code, ok
from helpers.qnn_build import Client

W, R = q.QNN_TENSOR_TYPE_APP_WRITE, q.QNN_TENSOR_TYPE_APP_READ
FP16 = 4e-3                      # float graphs compute at fp16: error / max |y|


def _sharing_config() -> list:
    """contextCreate's config list with the HTP config WEIGHT_SHARING_ENABLED = 1 (NULL-terminated)."""
    htp = q.QnnHtpContext_CustomConfig_t()
    htp.option = q.QNN_HTP_CONTEXT_CONFIG_OPTION_WEIGHT_SHARING_ENABLED
    htp.weightSharingEnabled = True
    cfg = q.QnnContext_Config_t()
    cfg.option = q.QNN_CONTEXT_CONFIG_OPTION_CUSTOM
    cfg.customConfig = ctypes.addressof(htp)
    cfg._keep = htp
    return [ctypes.pointer(cfg), None]


def _client(sharing: bool) -> Client:
    c = Client()
    if sharing:
        ok(c.qi.contextFree(c.context, None))
        c.context = q.Qnn_ContextHandle_t()
        ok(c.qi.contextCreate(c.backend, c.device, _sharing_config(), c.context))
    return c


def _fc_graphs(c: Client, weights: list[np.ndarray]) -> None:
    """One graph per weight: y_k = x_k @ w_k.T (FullyConnected), named g0, g1, ..."""
    for k, w in enumerate(weights):
        c.create_graph(f"g{k}")
        c.tensor(f"x{k}", W, (2, w.shape[1]))
        c.static(f"w{k}", w)
        c.tensor(f"y{k}", R, (2, w.shape[0]))
        c.node(f"fc{k}", "FullyConnected", [f"x{k}", f"w{k}"], [f"y{k}"])
        c.finalize()


def _binary(c: Client, context=None) -> bytes:
    context = c.context if context is None else context
    size, written = ctypes.c_uint64(), ctypes.c_uint64()
    ok(c.qi.contextGetBinarySize(context, size))
    buf = bytearray(size.value)
    ok(c.qi.contextGetBinary(context, buf, size.value, written))
    assert written.value == size.value
    return bytes(buf)


def _run(c: Client, ctx, name: str, x: np.ndarray, out_shape) -> np.ndarray:
    graph = q.Qnn_GraphHandle_t()
    ok(c.qi.graphRetrieve(ctx, name.encode(), graph))
    ins, outs = q.io_tensors(HANDLES.get(graph.value).context)
    y = np.zeros(out_shape, np.float32)
    x = np.ascontiguousarray(x, np.float32)
    ins[0].v1.clientBuf.data, ins[0].v1.clientBuf.dataSize = x.ctypes.data, x.nbytes
    outs[0].v1.clientBuf.data, outs[0].v1.clientBuf.dataSize = y.ctypes.data, y.nbytes
    ok(c.qi.graphExecute(graph, ins, 1, outs, 1, None, None))
    return y


def binary_info(data: bytes) -> tuple[int, list[tuple[str, int, QnnHtpSystemContext_GraphBlob_t]]]:
    """(numGraphs, [(graph name, graph info version, its HTP blob info)]) from systemContextGetBinaryInfo."""
    st, handle, info = QnnSystemInterfaceTable(), q.Qnn_ContextHandle_t(), ctypes.c_void_p()
    assert st.systemContextCreate(handle) == q.QNN_SUCCESS
    try:
        assert st.systemContextGetBinaryInfo(handle, data, len(data), info) == q.QNN_SUCCESS
        top = QnnSystemContext_BinaryInfo_t.from_address(info.value)
        assert top.version == q.QNN_SYSTEM_CONTEXT_BINARY_INFO_VERSION_3
        v = top.contextBinaryInfoV3
        graphs = []
        for i in range(v.numGraphs):
            g = v.graphs[i]
            blob = QnnHtpSystemContext_GraphBlob_t.from_buffer_copy(
                ctypes.string_at(g.graphInfoV3.graphBlobInfo, g.graphInfoV3.graphBlobInfoSize))
            assert blob.version1 == 1 and g.graphInfoV3.graphBlobInfoSize == 112
            graphs.append((g.graphInfoV3.graphName.decode(), g.version, blob))
        return v.numGraphs, graphs
    finally:
        st.systemContextFree(handle)


def test_a_context_of_two_graphs_writes_one_binary_and_loads_them_all():
    rng = np.random.default_rng(1)
    w = [rng.normal(size=(6, 5)).astype(np.float32), rng.normal(size=(3, 5)).astype(np.float32)]
    c = _client(sharing=False)
    try:
        _fc_graphs(c, w)
        data = _binary(c)
        assert context_binary.is_context_binary(data)
        n, graphs = binary_info(data)
        assert n == 2 and [(g, ver) for g, ver, _ in graphs] == [("g0", 3), ("g1", 3)]
        ctx = q.Qnn_ContextHandle_t()
        ok(c.qi.contextCreateFromBinary(c.backend, c.device, None, data, len(data), ctx, None))
        x = rng.normal(size=(2, 5)).astype(np.float32)
        for k in range(2):
            y = _run(c, ctx, f"g{k}", x, (2, w[k].shape[0]))
            ref = x @ w[k].T
            assert np.abs(y - ref).max() <= FP16 * max(1.0, float(np.abs(ref).max()))
        missing = q.Qnn_GraphHandle_t()
        assert code(c.qi.graphRetrieve(ctx, b"g2", missing)) == q.QNN_GRAPH_ERROR_GRAPH_DOES_NOT_EXIST
        assert _binary(c, ctx) == data                  # the loaded context writes the same binary back
        ok(c.qi.contextFree(ctx, None))
    finally:
        c.close()


def test_a_context_of_one_graph_still_writes_a_plain_npurt_binary():
    c = _client(sharing=True)
    try:
        _fc_graphs(c, [np.ones((4, 3), np.float32)])
        data = _binary(c)
        assert not context_binary.is_context_binary(data)
        assert read_compiled(data).graph.name == "g0"
        assert binary_info(data)[0] == 1
    finally:
        c.close()


def test_get_binary_refuses_a_graph_not_finalized_and_a_corrupt_binary_loads_nothing(caplog):
    c = _client(sharing=False)
    try:
        _fc_graphs(c, [np.ones((4, 3), np.float32), np.ones((2, 3), np.float32)])
        data = bytearray(_binary(c))
        c.create_graph("open")
        size = ctypes.c_uint64()
        with caplog.at_level("ERROR", logger="npurt.qnn"):
            assert code(c.qi.contextGetBinarySize(c.context, size)) == q.QNN_CONTEXT_ERROR_GET_BINARY_FAILED
        assert "'open'" in caplog.text
        data[-5] ^= 0xFF
        before = len(HANDLES)
        ctx = q.Qnn_ContextHandle_t()
        rc = c.qi.contextCreateFromBinary(c.backend, c.device, None, bytes(data), len(data), ctx, None)
        assert code(rc) == q.QNN_CONTEXT_ERROR_CREATE_FROM_BINARY and not ctx.value and len(HANDLES) == before
    finally:
        c.close()


def test_weight_sharing_stores_identical_weights_once_in_the_binary_and_in_memory():
    rng = np.random.default_rng(2)
    shared = rng.normal(size=(64, 32)).astype(np.float32)
    weights = [shared, shared]
    stored_bytes = shared.size * 2                     # float graphs store their weights at fp16
    sizes = {}
    for sharing in (False, True):
        c = _client(sharing)
        try:
            _fc_graphs(c, weights)
            sizes[sharing] = len(_binary(c))
            if sharing:
                data = _binary(c)
        finally:
            c.close()
    assert sizes[False] - sizes[True] >= 0.8 * stored_bytes
    _, graphs = binary_info(data)
    assert all(blob.sharedWeightsSize >= stored_bytes for _, _, blob in graphs)
    c = _client(sharing=False)
    try:
        ctx = q.Qnn_ContextHandle_t()
        ok(c.qi.contextCreateFromBinary(c.backend, c.device, None, data, len(data), ctx, None))
        mem = q.context_memory(ctx)
        assert mem.graphs == 2 and mem.shared and mem.saved >= stored_bytes
        assert mem.weight_memory == -(-mem.weight_bytes // 4096) * 4096   # one weights buffer for both graphs
        x = rng.normal(size=(2, 32)).astype(np.float32)
        ref = x @ shared.T
        for k in range(2):
            y = _run(c, ctx, f"g{k}", x, (2, 64))
            assert np.abs(y - ref).max() <= FP16 * max(1.0, float(np.abs(ref).max()))
        ok(c.qi.contextFree(ctx, None))
        with pytest.raises(Exception):
            q.context_memory(ctx)
    finally:
        c.close()


def test_a_multi_graph_context_takes_no_external_weights_buffer():
    """External weights / spill-fill buffers are registered for a context of one graph only: refused with
    QNN_MEM_ERROR_NOT_SUPPORTED, the DEFER_GRAPH_INIT context still finalizes with its own memory."""
    from helpers.qnn import defer_config, get_property
    c = _client(sharing=True)
    try:
        _fc_graphs(c, [np.ones((64, 32), np.float32), np.ones((64, 32), np.float32)])
        data = _binary(c)
        ctx = q.Qnn_ContextHandle_t()
        ok(c.qi.contextCreateFromBinary(c.backend, c.device, defer_config(), data, len(data), ctx, None))
        rc, size = get_property(c.qi, ctx, q.QNN_HTP_CONTEXT_GET_PROP_WEIGHTS_BUFFER_SIZE)
        assert rc == q.QNN_SUCCESS and size == 2 << 20
        fd = os.memfd_create("w")
        try:
            os.ftruncate(fd, size)
            desc = q.Qnn_MemDescriptor_t()
            desc.memType = q.QNN_MEM_TYPE_CUSTOM
            htp = q.QnnMemHtp_Descriptor_t()
            htp.type, htp.size = q.QNN_HTP_MEM_WEIGHTS_BUFFER, size
            htp.weightsBufferConfig.fd, htp.weightsBufferConfig.offset = fd, 0
            desc.customInfo = ctypes.addressof(htp)
            handles = (q.Qnn_MemHandle_t * 1)()
            assert code(c.qi.memRegister(ctx, [desc], 1, handles)) == q.QNN_MEM_ERROR_NOT_SUPPORTED
        finally:
            os.close(fd)
        ok(c.qi.contextFinalize(ctx, None))
        assert q.context_memory(ctx).weight_memory > 0
        ok(c.qi.contextFree(ctx, None))
    finally:
        c.close()


# ---------------------------------------------------------------------------------------------------------
# onnxruntime's QNN EP
# ---------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def lib():
    return prefix() / "lib"


def _model(nodes, x_shape, inits: dict, name: str = "m") -> onnx.ModelProto:
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _close(got: np.ndarray, ref: np.ndarray) -> bool:
    return got.shape == ref.shape and np.abs(got - ref).max() <= FP16 * max(1.0, float(np.abs(ref).max()))


def _ep_binary(ctx_model, folder) -> bytes:
    """The context binary an EPContext model's main node holds (embed 1) or names (embed 0)."""
    node = [nd for nd in onnx.load(ctx_model).graph.node if nd.op_type == "EPContext" and
            helper.get_attribute_value(next(a for a in nd.attribute if a.name == "main_context")) == 1][0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return attrs["ep_cache_context"] if attrs["embed_mode"] else (folder / attrs["ep_cache_context"].decode()
                                                                  ).read_bytes()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("embed", [0, 1])
def test_the_qnn_ep_generates_and_reloads_a_model_split_into_two_partitions(lib, tmp_path, embed):
    """LogSoftmax (not built by npurt) between two parts: the EP builds two graphs in one context and writes one
    2-graph binary; the reload loads it once and retrieves both."""
    rng = np.random.default_rng(3)
    n = helper.make_node
    model = _model([n("Conv", ["x", "W"], ["a"], pads=[1, 1, 1, 1]), n("LogSoftmax", ["a"], ["b"], axis=-1),
                    n("Sigmoid", ["b"], ["y"])], [1, 4, 6, 6],
                   {"W": (rng.normal(size=(8, 4, 3, 3)) * 0.3).astype(np.float32)})
    onnx.save(model, tmp_path / "split.onnx")
    x = rng.normal(size=(1, 4, 6, 6)).astype(np.float32)
    ref = run_ort(model, {"x": x})[0]
    ctx_model = tmp_path / "split_ctx.onnx"
    got = qnn_ep_session(tmp_path / "split.onnx", lib, fallback=True,
                         config={"ep.context_enable": 1, "ep.context_embed_mode": embed,
                                 "ep.context_file_path": ctx_model}).run(None, {"x": x})[0]
    assert _close(got, ref)
    assert sum(nd.op_type == "EPContext" for nd in onnx.load(ctx_model).graph.node) == 2
    n_graphs, graphs = binary_info(_ep_binary(ctx_model, tmp_path))
    assert n_graphs == 2 and all(ver == 3 for _, ver, _ in graphs)
    again = qnn_ep_session(ctx_model, lib, fallback=True).run(None, {"x": x})[0]
    assert np.array_equal(again, got)


def _backbone_pair(rng) -> tuple[list[onnx.ModelProto], int]:
    """Two models over one backbone (two 3x3 convs) with heads of their own, and the backbone's stored bytes
    (fp16, as float graphs store their weights)."""
    n = helper.make_node
    b1 = (rng.normal(size=(32, 8, 3, 3)) * 0.2).astype(np.float32)
    b2 = (rng.normal(size=(32, 32, 3, 3)) * 0.1).astype(np.float32)
    models = []
    for k in range(2):
        head = (rng.normal(size=(4 + k, 32, 1, 1)) * 0.3).astype(np.float32)
        models.append(_model([n("Conv", ["x", "B1"], ["a"], pads=[1, 1, 1, 1]), n("Relu", ["a"], ["r"]),
                              n("Conv", ["r", "B2"], ["c"], pads=[1, 1, 1, 1]), n("Relu", ["c"], ["r2"]),
                              n("Conv", ["r2", "H"], ["y"])], [1, 8, 6 + k, 6 + k],
                             {"B1": b1, "B2": b2, "H": head}, f"m{k}"))
    return models, 2 * (b1.size + b2.size)


def _live_multigraph_contexts() -> list:
    return [obj for _, obj in HANDLES.live() if isinstance(obj, GraphsContext) and not obj.freed]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["float", "qdq"])
def test_the_qnn_ep_shares_weights_across_two_models_and_two_sessions_run_on_one_context(lib, tmp_path, kind):
    """Float models store the backbone at fp16; QDQ models (onnxruntime's quantizer: int8 weights) at int8, and
    their outputs may differ from onnxruntime CPU's by one output quantum."""
    rng = np.random.default_rng(4)
    models, backbone = _backbone_pair(rng)
    tolerance = [None, None]
    if kind == "qdq":
        from test_qnn_ep_graphs import _qdq
        for k, m in enumerate(models):
            (tmp_path / f"q{k}").mkdir()
            models[k], tolerance[k] = _qdq(m, tmp_path / f"q{k}")
        backbone //= 2
    xs = [rng.normal(size=(1, 8, 6 + k, 6 + k)).astype(np.float32) for k in range(2)]
    refs = [run_ort(m, {"x": x})[0] for m, x in zip(models, xs)]
    for k, m in enumerate(models):
        onnx.save(m, tmp_path / f"m{k}.onnx")

    def close(got: np.ndarray, k: int) -> bool:
        return _close(got, refs[k]) if tolerance[k] is None else np.abs(got - refs[k]).max() <= 1.01 * tolerance[k]
    separate = 0
    for k in range(2):                                  # without sharing: one binary per model
        ctx_model = tmp_path / f"alone{k}_ctx.onnx"
        qnn_ep_session(tmp_path / f"m{k}.onnx", lib, config={"ep.context_enable": 1, "ep.context_file_path": ctx_model})
        separate += len(_ep_binary(ctx_model, tmp_path))
    sessions = []
    for k in range(2):                                  # with ep.share_ep_contexts: one context, one 2-graph binary
        config = {"ep.context_enable": 1, "ep.context_file_path": tmp_path / f"m{k}_ctx.onnx",
                  "ep.share_ep_contexts": 1}
        if k == 1:
            config["ep.stop_share_ep_contexts"] = 1
        sessions.append(qnn_ep_session(tmp_path / f"m{k}.onnx", lib, config=config))
        assert close(sessions[-1].run(None, {"x": xs[k]})[0], k)
    del sessions
    data = _ep_binary(tmp_path / "m1_ctx.onnx", tmp_path)
    assert _ep_binary(tmp_path / "m0_ctx.onnx", tmp_path) == data
    assert binary_info(data)[0] == 2
    assert separate - len(data) >= 0.8 * backbone

    before = len(_live_multigraph_contexts())
    a = qnn_ep_session(tmp_path / "m0_ctx.onnx", lib, config={"ep.share_ep_contexts": 1})
    b = qnn_ep_session(tmp_path / "m1_ctx.onnx", lib, config={"ep.share_ep_contexts": 1})
    live = _live_multigraph_contexts()
    assert len(live) == before + 1                     # session B runs on session A's context
    mem = live[-1].memory()
    assert mem.shared and mem.saved >= 0.8 * backbone and mem.weight_memory < mem.weight_bytes_unshared
    for k, s in enumerate((a, b)):
        assert close(s.run(None, {"x": xs[k]})[0], k)


def test_npurt_convert_writes_one_context_binary_of_several_models(tmp_path):
    """`npurt convert a.onnx a.onnx b.onnx --share-weights` (graph names made distinct by position): one binary,
    every graph loadable and retrievable; the backbone stored once; refusals exit 2 with one line."""
    from helpers.cli import fails, ok_json
    models, backbone = _backbone_pair(np.random.default_rng(5))
    for k, m in enumerate(models):
        onnx.save(m, tmp_path / f"m{k}.onnx")
    a, b = tmp_path / "m0.onnx", tmp_path / "m1.onnx"
    plain = ok_json("convert", a, a, b, "--soc", "sm8550", "-o", tmp_path / "plain.bin")
    shared = ok_json("convert", a, a, b, "--soc", "sm8550", "--share-weights", "-o", tmp_path / "shared.bin")
    assert plain["graphs"] == shared["graphs"] == ["m0_0", "m0_1", "m1_2"]
    assert plain["file_size"] - shared["file_size"] >= 0.8 * 2 * backbone       # the backbone twice less
    data = (tmp_path / "shared.bin").read_bytes()
    assert binary_info(data)[0] == 3
    c = _client(sharing=False)
    try:
        ctx = q.Qnn_ContextHandle_t()
        ok(c.qi.contextCreateFromBinary(c.backend, c.device, None, data, len(data), ctx, None))
        for name in shared["graphs"]:
            ok(c.qi.graphRetrieve(ctx, name.encode(), q.Qnn_GraphHandle_t()))
        ok(c.qi.contextFree(ctx, None))
    finally:
        c.close()
    fails("convert", a, b, "--soc", "rk3588", "-o", tmp_path / "x.bin", words=("HTP",))
    fails("convert", a, "--share-weights", "--soc", "sm8550", "-o", tmp_path / "x.bin", words=("--share-weights",))


def _live_objects() -> list:
    """Live contexts and graphs of live contexts (a freed graph's handle stays resolvable for a while: retired)."""
    from npurt.qnn.context import QnnContext
    from npurt.qnn.graph import QnnGraph
    return [h for h, o in HANDLES.live() if isinstance(o, QnnContext) and not o.freed or
            isinstance(o, QnnGraph) and o.context is not None]


def test_a_graph_that_cannot_load_leaves_nothing_of_the_others(monkeypatch):
    """The second graph's memory fails (1002): contextCreateFromBinary returns it, the first graph's context, the
    shared weights buffer and every handle are gone."""
    from npurt.qnn.boundary import QnnError
    from npurt.qnn.context import QnnContext
    c = _client(sharing=True)
    try:
        _fc_graphs(c, [np.ones((8, 4), np.float32), np.ones((8, 4), np.float32)])
        data = _binary(c)
        device = HANDLES.get(c.backend.value).device
        before_handles, before_buffers = _live_objects(), len(device.buffers())
        real, calls = QnnContext.finalize, []

        def flaky(self, open_graph):
            calls.append(self)
            if len(calls) == 2:
                raise QnnError(q.QNN_CONTEXT_ERROR_MEM_ALLOC, "no memory for the second graph")
            real(self, open_graph)
        monkeypatch.setattr(QnnContext, "finalize", flaky)
        ctx = q.Qnn_ContextHandle_t()
        rc = c.qi.contextCreateFromBinary(c.backend, c.device, None, data, len(data), ctx, None)
        assert code(rc) == q.QNN_CONTEXT_ERROR_MEM_ALLOC and not ctx.value and len(calls) == 2
        assert _live_objects() == before_handles and len(device.buffers()) == before_buffers
        assert all(child.freed for child in calls)
    finally:
        monkeypatch.undo()
        c.close()


def test_loaders_of_one_graph_say_what_a_binary_of_several_graphs_is(tmp_path):
    import npurt
    from helpers.cli import fails
    c = _client(sharing=False)
    try:
        _fc_graphs(c, [np.ones((4, 3), np.float32), np.ones((2, 3), np.float32)])
        path = tmp_path / "two.bin"
        path.write_bytes(_binary(c))
    finally:
        c.close()
    for load in (npurt.load_compiled, npurt.Session):
        with pytest.raises(npurt.NpuError, match="context binary of several graphs"):
            load(path)
    fails("report", path, words=("several graphs",))


def test_the_graphs_of_a_loaded_context_spill_into_one_spill_fill_buffer():
    """Two graphs whose activations overflow the 4 MiB VTCM of sm8350: their context has one spill-fill buffer of the
    larger need, both arenas spill into it, and the graphs run one after the other with correct outputs."""
    c = Client(soc="sm8350")
    try:
        shapes = [(1, 1536, 1024), (1, 1280, 1024)]
        for k, shape in enumerate(shapes):       # x -> Relu -> a -> Sigmoid -> b -> Neg -> y: a and b live at once
            c.create_graph(f"g{k}")
            c.tensor(f"x{k}", W, shape)
            for name in ("a", "b"):
                c.tensor(f"{name}{k}", q.QNN_TENSOR_TYPE_NATIVE, shape)
            c.tensor(f"y{k}", R, shape)
            c.node(f"relu{k}", "Relu", [f"x{k}"], [f"a{k}"])
            c.node(f"sig{k}", "Sigmoid", [f"a{k}"], [f"b{k}"])
            c.node(f"neg{k}", "ElementWiseNeg", [f"b{k}"], [f"y{k}"])
            c.finalize()
        data = _binary(c)
        ctx = q.Qnn_ContextHandle_t()
        ok(c.qi.contextCreateFromBinary(c.backend, c.device, None, data, len(data), ctx, None))
        parent = HANDLES.get(ctx.value)
        spills = [child.spill_view() for child in parent.children]
        assert all(s is not None for s in spills) and spills[0].size != spills[1].size
        small, big = sorted(spills, key=lambda s: s.size)
        big[:small.size] = 7
        assert (small == 7).all()                       # one buffer under both arenas
        rng = np.random.default_rng(6)
        for k in (0, 1, 0):
            x = rng.normal(size=shapes[k]).astype(np.float32)
            y = _run(c, ctx, f"g{k}", x, shapes[k])
            assert np.abs(y + 1 / (1 + np.exp(-np.maximum(x, 0)))).max() <= FP16
        ok(c.qi.contextFree(ctx, None))
    finally:
        c.close()


def test_a_hostile_container_header_is_refused_as_a_malformed_binary():
    """Header fields rewritten (checksum recomputed, so only the fields are wrong): every one is INVALID_MODEL from
    the model layer, 5005 from contextCreateFromBinary, and the system library's 30010, never an internal error."""
    import hashlib
    import struct
    import npurt
    c = _client(sharing=True)
    try:
        _fc_graphs(c, [np.ones((16, 8), np.float32), np.ones((16, 8), np.float32)])
        good = _binary(c)

        def forged(offset: int, fmt: str, value: int) -> bytes:
            data = bytearray(good)
            struct.pack_into(fmt, data, offset, value)
            data[32:64] = hashlib.sha256(bytes(data[64:])).digest()
            return bytes(data)
        cases = [forged(12, "<I", 0), forged(12, "<I", 1 << 30), forged(16, "<Q", 1 << 40), forged(16, "<Q", 0),
                 forged(64, "<Q", 1 << 40), forged(64, "<Q", 3), forged(72, "<Q", 0), forged(8, "<H", 9),
                 good[:-1], good + b"\0"]
        st, handle, info = QnnSystemInterfaceTable(), q.Qnn_ContextHandle_t(), ctypes.c_void_p()
        assert st.systemContextCreate(handle) == q.QNN_SUCCESS
        for data in cases:
            with pytest.raises(npurt.NpuError) as err:
                context_binary.decode(data)
            assert err.value.code is npurt.ErrorCode.INVALID_MODEL
            ctx = q.Qnn_ContextHandle_t()
            rc = c.qi.contextCreateFromBinary(c.backend, c.device, None, data, len(data), ctx, None)
            assert code(rc) == q.QNN_CONTEXT_ERROR_CREATE_FROM_BINARY and not ctx.value
            assert st.systemContextGetBinaryInfo(handle, data, len(data), info) == \
                q.QNN_SYSTEM_CONTEXT_ERROR_MALFORMED_BINARY
        st.systemContextFree(handle)
    finally:
        c.close()
