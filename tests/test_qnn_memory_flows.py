"""QNN memory as the configs say: graphCreate's VTCM_SIZE / OPTIMIZATION and deviceCreate's SOC / ARCH select the HTP
plan and are recorded in the binary info (spillFillBufferSize, vtcmSize, optimizationLevel, socModel); contexts
loaded with REGISTER_MULTI_CONTEXTS share one spill-fill buffer of maxSpillFillBuffer; the QNN memory report. Through
the Python mirror and onnxruntime's QNN EP (its vtcm_mb, htp_graph_finalization_optimization_mode, soc_model,
htp_arch and enable_htp_spill_fill_buffer options)."""
from __future__ import annotations

import ctypes

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import npurt.qnn as q
from npurt.qnn.backend import HANDLES
from npurt.qnn.system import QnnSystemContext_BinaryInfo_t, QnnSystemInterfaceTable

from helpers.capi import prefix
from helpers.oracle import qnn_ep_session, run_ort
from helpers.qnn import code, config_list, ok
from helpers.qnn_build import Client

W, R, N = q.QNN_TENSOR_TYPE_APP_WRITE, q.QNN_TENSOR_TYPE_APP_READ, q.QNN_TENSOR_TYPE_NATIVE
MIB = 1 << 20
FP16 = 4e-3


# ---------------------------------------------------------------------------------------------------------
# config lists
# ---------------------------------------------------------------------------------------------------------
def graph_config(vtcm_mb: int | None = None, level: int | None = None) -> list:
    """graphCreate's config list: HTP VTCM_SIZE and / or OPTIMIZATION (FINALIZE_OPTIMIZATION_FLAG)."""
    out = []
    for option, fill in ((q.QNN_HTP_GRAPH_CONFIG_OPTION_VTCM_SIZE, vtcm_mb),
                         (q.QNN_HTP_GRAPH_CONFIG_OPTION_OPTIMIZATION, level)):
        if fill is None:
            continue
        htp = q.QnnHtpGraph_CustomConfig_t()
        htp.option = option
        if option == q.QNN_HTP_GRAPH_CONFIG_OPTION_VTCM_SIZE:
            htp.vtcmSizeInMB = fill
        else:
            htp.optimizationOption.type = q.QNN_HTP_GRAPH_OPTIMIZATION_TYPE_FINALIZE_OPTIMIZATION_FLAG
            htp.optimizationOption.floatValue = fill
        cfg = q.QnnGraph_Config_t()
        cfg.option, cfg.customConfig, cfg._keep = q.QNN_GRAPH_CONFIG_OPTION_CUSTOM, ctypes.addressof(htp), htp
        out.append(cfg)
    return config_list(out)


def device_config(soc_model: int | None = None, arch: int | None = None) -> list:
    """deviceCreate's config list: HTP SOC and / or ARCH."""
    out = []
    for option, value in ((q.QNN_HTP_DEVICE_CONFIG_OPTION_SOC, soc_model), (q.QNN_HTP_DEVICE_CONFIG_OPTION_ARCH, arch)):
        if value is None:
            continue
        htp = q.QnnHtpDevice_CustomConfig_t()
        htp.option = option
        if option == q.QNN_HTP_DEVICE_CONFIG_OPTION_SOC:
            htp.socModel = value
        else:
            htp.arch.deviceId, htp.arch.arch = 0, value
        cfg = q.QnnDevice_Config_t()
        cfg.option, cfg.customConfig, cfg._keep = q.QNN_DEVICE_CONFIG_OPTION_CUSTOM, ctypes.addressof(htp), htp
        out.append(cfg)
    return config_list(out)


def binary_info(data: bytes) -> tuple[int, list]:
    """(socModel, [(graph name, spillFillBufferSize, vtcmSize, optimizationLevel)]) from systemContextGetBinaryInfo."""
    from npurt.qnn.system import QnnHtpSystemContext_GraphBlob_t
    st, handle, info = QnnSystemInterfaceTable(), q.Qnn_ContextHandle_t(), ctypes.c_void_p()
    assert st.systemContextCreate(handle) == q.QNN_SUCCESS
    try:
        assert st.systemContextGetBinaryInfo(handle, data, len(data), info) == q.QNN_SUCCESS
        v = QnnSystemContext_BinaryInfo_t.from_address(info.value).contextBinaryInfoV3
        graphs = []
        for i in range(v.numGraphs):
            g = v.graphs[i].graphInfoV3
            blob = QnnHtpSystemContext_GraphBlob_t.from_buffer_copy(ctypes.string_at(g.graphBlobInfo,
                                                                                     g.graphBlobInfoSize))
            graphs.append((g.graphName.decode(), blob.spillFillBufferSize, blob.vtcmSize, blob.optimizationLevel))
        return v.socModel, graphs
    finally:
        st.systemContextFree(handle)


def _binary(c: Client) -> bytes:
    size, written = ctypes.c_uint64(), ctypes.c_uint64()
    ok(c.qi.contextGetBinarySize(c.context, size))
    buf = bytearray(size.value)
    ok(c.qi.contextGetBinary(c.context, buf, size.value, written))
    return bytes(buf)


def _client(soc: str = "sm8550", device_cfg: list | None = None) -> Client:
    """A graph-building client whose device was created with `device_cfg`."""
    c = Client(soc=soc)
    if device_cfg is not None:
        ok(c.qi.contextFree(c.context, None))
        ok(c.qi.deviceFree(c.device))
        c.device, c.context = q.Qnn_DeviceHandle_t(), q.Qnn_ContextHandle_t()
        ok(c.qi.deviceCreate(None, device_cfg, c.device))
        ok(c.qi.contextCreate(c.backend, c.device, None, c.context))
    return c


def chain_graph(c: Client, name: str, shape, config=None) -> None:
    """x -> Relu -> a -> Sigmoid -> b -> Neg -> y (a and b live at once: 2 x fp16 activations)."""
    c.graph = q.Qnn_GraphHandle_t()
    ok(c.qi.graphCreate(c.context, name.encode(), config, c.graph))
    c.tensor(f"x_{name}", W, shape)
    for t in ("a", "b"):
        c.tensor(f"{t}_{name}", N, shape)
    c.tensor(f"y_{name}", R, shape)
    c.node(f"relu_{name}", "Relu", [f"x_{name}"], [f"a_{name}"])
    c.node(f"sig_{name}", "Sigmoid", [f"a_{name}"], [f"b_{name}"])
    c.node(f"neg_{name}", "ElementWiseNeg", [f"b_{name}"], [f"y_{name}"])
    c.finalize()


def expected(x: np.ndarray) -> np.ndarray:
    return -1 / (1 + np.exp(-np.maximum(x, 0)))


# ---------------------------------------------------------------------------------------------------------
# 1. VTCM_SIZE / OPTIMIZATION / SOC / ARCH select the plan and reach the binary info
# ---------------------------------------------------------------------------------------------------------
def test_vtcm_size_selects_the_plan_and_round_trips_through_the_binary():
    """A graph of 2 MiB of live activations: on sm8550 (8 MiB VTCM) nothing spills; with VTCM_SIZE 1 MB the overflow
    spills, the binary info says so (vtcmSize in bytes, the optimisation level) and a reload plans the same."""
    shape = (1, 1024, 1024)                                     # 2 MiB fp16 per activation
    c = _client()
    try:
        chain_graph(c, "full", shape)
        chain_graph(c, "small", shape, graph_config(vtcm_mb=1, level=3))
        soc_model, graphs = binary_info(_binary(c))
        assert soc_model == 43                                   # sm8550
        info = {g[0]: g[1:] for g in graphs}
        assert info["full"] == (0, 8 * MIB, 0)
        spill, vtcm, level = info["small"]
        assert spill > 0 and vtcm == MIB and level == 3
        data = _binary(c)
        ctx = q.Qnn_ContextHandle_t()
        ok(c.qi.contextCreateFromBinary(c.backend, c.device, None, data, len(data), ctx, None))
        loaded = {child.compiled.graph.name: child.htp for child in HANDLES.get(ctx.value).children}
        assert loaded["small"].vtcm_size == MIB and loaded["small"].spill_size == spill
        assert loaded["full"].spill_size == 0
        x = np.random.default_rng(1).normal(size=shape).astype(np.float32)
        graph = q.Qnn_GraphHandle_t()
        ok(c.qi.graphRetrieve(ctx, b"small", graph))
        ins, outs = q.io_tensors(HANDLES.get(graph.value).context)
        y = np.zeros(shape, np.float32)
        ins[0].v1.clientBuf.data, ins[0].v1.clientBuf.dataSize = x.ctypes.data, x.nbytes
        outs[0].v1.clientBuf.data, outs[0].v1.clientBuf.dataSize = y.ctypes.data, y.nbytes
        ok(c.qi.graphExecute(graph, ins, 1, outs, 1, None, None))
        assert np.abs(y - expected(x)).max() <= FP16
        ok(c.qi.contextFree(ctx, None))
    finally:
        c.close()


def test_device_soc_and_arch_configs_choose_the_htp():
    """SOC 57 (sm8650) / ARCH 69 (sm8450) move the backend to that HTP: the binary records its socModel."""
    for cfg, model in ((device_config(soc_model=57), 57), (device_config(arch=69), 36),
                       (device_config(soc_model=43, arch=73), 43)):
        c = _client(soc="sm8350", device_cfg=cfg)
        try:
            assert HANDLES.get(c.backend.value).profile.soc_model == model
            chain_graph(c, "g", (1, 4, 8))
            assert binary_info(_binary(c))[0] == model
        finally:
            c.close()


def test_configs_npurt_cannot_honour_are_refused_in_one_line(caplog):
    qi = q.interface("fastrpc", soc="sm8350")
    for cfg, words in ((device_config(soc_model=999), "socModel 999"), (device_config(arch=99), "arch 99"),
                       (device_config(soc_model=43, arch=68), "V73")):
        dev = q.Qnn_DeviceHandle_t()
        caplog.clear()
        assert code(qi.deviceCreate(None, cfg, dev)) == q.QNN_DEVICE_ERROR_INVALID_ARGUMENT
        assert not dev.value and words in caplog.text
    c = _client(soc="sm8350")
    try:
        graph = q.Qnn_GraphHandle_t()
        caplog.clear()
        assert code(c.qi.graphCreate(c.context, b"g", graph_config(vtcm_mb=8), graph)) == \
            q.QNN_GRAPH_ERROR_INVALID_ARGUMENT
        assert not graph.value and "4 MB VTCM of sm8350" in caplog.text
    finally:
        c.close()


# ---------------------------------------------------------------------------------------------------------
# onnxruntime's QNN EP
# ---------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def lib():
    return prefix() / "lib"


def chain_model(shape) -> onnx.ModelProto:
    n = helper.make_node
    graph = helper.make_graph([n("Relu", ["x"], ["a"]), n("Sigmoid", ["a"], ["b"]), n("Tanh", ["b"], ["c"]),
                               n("Add", ["a", "c"], ["y"])], "chain",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def ep_context(ctx_model) -> tuple[dict, bytes]:
    """The main EPContext node's attributes and the binary it names (embed 0)."""
    node = [nd for nd in onnx.load(ctx_model).graph.node if nd.op_type == "EPContext"][0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return attrs, (ctx_model.parent / attrs["ep_cache_context"].decode()).read_bytes()


def generate(lib, folder, name: str, shape, **options) -> tuple[dict, bytes, np.ndarray, np.ndarray]:
    """EPContext generation of the chain model: (node attributes, binary, input, output of the generating run)."""
    model = chain_model(shape)
    onnx.save(model, folder / f"{name}.onnx")
    x = np.random.default_rng(len(name)).normal(size=shape).astype(np.float32)
    ctx_model = folder / f"{name}_ctx.onnx"
    y = qnn_ep_session(folder / f"{name}.onnx", lib, config={"ep.context_enable": 1, "ep.context_embed_mode": 0,
                                                             "ep.context_file_path": ctx_model},
                       **options).run(None, {"x": x})[0]
    assert np.abs(y - run_ort(model, {"x": x})[0]).max() <= FP16 * 2
    attrs, data = ep_context(ctx_model)
    return attrs, data, x, y


@pytest.mark.timeout(300)
def test_the_qnn_ep_options_reach_the_binary_and_max_size(lib, tmp_path):
    """vtcm_mb=1, optimisation mode 3, soc_model=43 / htp_arch=73 and enable_htp_spill_fill_buffer=1: the binary
    info says socModel 43, vtcmSize 1 MiB, optimizationLevel 3, and the node's max_size is its spillFillBufferSize
    (> 0: 2 MiB of activations do not fit 1 MiB). Reloaded with the same device options, the outputs agree."""
    options = dict(vtcm_mb=1, htp_graph_finalization_optimization_mode=3, soc_model=43, htp_arch=73,
                   enable_htp_spill_fill_buffer=1)
    attrs, data, x, y = generate(lib, tmp_path, "big", (1, 16, 128, 256), **options)
    soc_model, graphs = binary_info(data)
    assert soc_model == 43 and len(graphs) == 1
    _, spill, vtcm, level = graphs[0]
    assert (vtcm, level) == (MIB, 3) and spill > 0 and attrs["max_size"] == spill
    again = qnn_ep_session(tmp_path / "big_ctx.onnx", lib, soc_model=43, htp_arch=73).run(None, {"x": x})[0]
    assert np.array_equal(again, y)


# ---------------------------------------------------------------------------------------------------------
# 2. REGISTER_MULTI_CONTEXTS: one spill-fill buffer for the group
# ---------------------------------------------------------------------------------------------------------
def group_config(first: int, max_spill: int) -> list:
    """contextCreateFromBinary's config list with REGISTER_MULTI_CONTEXTS {firstGroupHandle, maxSpillFillBuffer}."""
    htp = q.QnnHtpContext_CustomConfig_t()
    htp.option = q.QNN_HTP_CONTEXT_CONFIG_OPTION_REGISTER_MULTI_CONTEXTS
    htp.groupRegistration.firstGroupHandle = first
    htp.groupRegistration.maxSpillFillBuffer = max_spill
    cfg = q.QnnContext_Config_t()
    cfg.option, cfg.customConfig, cfg._keep = q.QNN_CONTEXT_CONFIG_OPTION_CUSTOM, ctypes.addressof(htp), htp
    return config_list([cfg])


def spilling_binary(shape, name: str) -> tuple[bytes, int]:
    """A one-graph sm8550 binary of the chain graph planned for 1 MB of VTCM, and its spillFillBufferSize."""
    c = _client()
    try:
        chain_graph(c, name, shape, graph_config(vtcm_mb=1))
        data = _binary(c)
    finally:
        c.close()
    return data, binary_info(data)[1][0][1]


@pytest.fixture(scope="module")
def binaries() -> dict:
    """Three binaries whose graphs spill 2 MiB-ish, less, and more (name -> (bytes, spill, shape))."""
    out = {}
    for name, shape in (("big", (1, 1024, 1024)), ("small", (1, 768, 1024)), ("huge", (1, 1536, 1024))):
        data, spill = spilling_binary(shape, name)
        out[name] = (data, spill, shape)
    assert out["small"][1] < out["big"][1] < out["huge"][1]
    return out


def load(c: Client, data: bytes, config=None, expect: int = q.QNN_SUCCESS) -> q.Qnn_ContextHandle_t:
    ctx = q.Qnn_ContextHandle_t()
    assert code(c.qi.contextCreateFromBinary(c.backend, c.device, config, data, len(data), ctx, None)) == expect
    return ctx


def run_graph(c: Client, ctx, name: str, x: np.ndarray) -> np.ndarray:
    graph = q.Qnn_GraphHandle_t()
    ok(c.qi.graphRetrieve(ctx, name.encode(), graph))
    ins, outs = q.io_tensors(HANDLES.get(graph.value).context)
    y = np.zeros_like(x)
    ins[0].v1.clientBuf.data, ins[0].v1.clientBuf.dataSize = x.ctypes.data, x.nbytes
    outs[0].v1.clientBuf.data, outs[0].v1.clientBuf.dataSize = y.ctypes.data, y.nbytes
    ok(c.qi.graphExecute(graph, ins, 1, outs, 1, None, None))
    return y


def test_contexts_registered_as_a_group_share_one_spill_fill_buffer(binaries):
    """big starts a group of maxSpillFillBuffer = its need, small joins it: one buffer under both arenas, the report
    counts it once (and what two buffers would take), both graphs run; the last free releases the buffer."""
    (big, big_spill, big_shape), (small, _, small_shape) = binaries["big"], binaries["small"]
    c = _client()
    try:
        a = load(c, big, group_config(0, big_spill))
        b = load(c, small, group_config(a.value, 0))            # later maxSpillFillBuffer values are ignored
        ca, cb = HANDLES.get(a.value), HANDLES.get(b.value)
        assert ca.group is cb.group and ca.group.max_spill == big_spill
        sa, sb = ca.spill_view(), cb.spill_view()
        sa[:sb.size] = 5
        assert (sb == 5).all()                                  # one buffer under both arenas
        report = q.memory_report(c.backend)
        (group,) = report.groups
        assert set(group.contexts) == {a.value, b.value} and group.first == a.value
        rows = report.contexts
        assert rows[a.value].spill_fill == rows[b.value].spill_fill == 0       # counted in the group, once
        assert rows[a.value].group == rows[b.value].group == a.value
        t = report.totals()
        assert t["spill_fill"] == group.spill_fill == -(-big_spill // 4096) * 4096
        assert t["spill_fill_unshared"] == rows[a.value].spill_fill_unshared + rows[b.value].spill_fill_unshared
        assert t["spill_fill"] < t["spill_fill_unshared"]
        assert any("share one spill-fill buffer" in line for line in report.lines())
        rng = np.random.default_rng(2)
        for ctx, name, shape in ((a, "big", big_shape), (b, "small", small_shape), (a, "big", big_shape)):
            x = rng.normal(size=shape).astype(np.float32)
            assert np.abs(run_graph(c, ctx, name, x) - expected(x)).max() <= FP16
        buffer = ca.group.buffer
        ok(c.qi.contextFree(a, None))
        assert buffer.alive                                     # small still uses it
        ok(c.qi.contextFree(b, None))
        assert not buffer.alive
    finally:
        c.close()


def test_a_group_refuses_a_context_that_needs_more_than_its_buffer(binaries, caplog):
    (big, big_spill, _), (huge, huge_spill, _) = binaries["big"], binaries["huge"]
    c = _client()
    try:
        a = load(c, big, group_config(0, big_spill))
        backend = HANDLES.get(c.backend.value)
        before = (len(backend.contexts), backend.device.stats()) if hasattr(backend.device, "stats") else \
            (len(backend.contexts), None)
        caplog.clear()
        assert not load(c, huge, group_config(a.value, huge_spill), q.QNN_CONTEXT_ERROR_INVALID_CONFIG).value
        assert f"needs {huge_spill} bytes of spill-fill" in caplog.text and str(big_spill) in caplog.text
        assert not load(c, big, group_config(0, 0), q.QNN_CONTEXT_ERROR_INVALID_CONFIG).value
        alone = load(c, big)                                    # a context of no group cannot be joined
        caplog.clear()
        assert not load(c, big, group_config(alone.value, big_spill), q.QNN_CONTEXT_ERROR_INVALID_CONFIG).value
        assert "not a live context of a group" in caplog.text
        assert len(backend.contexts) == before[0] + 1 and len(q.memory_report(c.backend).groups) == 1
    finally:
        c.close()


def test_concurrent_executes_on_a_group_are_serialised(binaries):
    """The group's buffer is used by one graph at a time: an execute waits while another graph of the HTP runs (it
    is not refused), and two threads executing the group's graphs over and over all get correct outputs."""
    import threading
    from npurt.qnn.backend import core_of
    (big, big_spill, big_shape), (small, _, small_shape) = binaries["big"], binaries["small"]
    c = _client()
    try:
        a = load(c, big, group_config(0, big_spill))
        b = load(c, small, group_config(a.value, big_spill))
        rng = np.random.default_rng(3)
        xs = {"big": rng.normal(size=big_shape).astype(np.float32),
              "small": rng.normal(size=small_shape).astype(np.float32)}
        results: dict = {}
        core = core_of("sm8550")
        with core.exec_lock:                                    # another graph is running on the HTP
            t = threading.Thread(target=lambda: results.update(held=run_graph(c, b, "small", xs["small"])))
            t.start()
            t.join(0.3)
            assert t.is_alive() and "held" not in results       # waiting, not refused
        t.join(30)
        assert np.abs(results["held"] - expected(xs["small"])).max() <= FP16
        errors: list = []

        def loop(ctx, name):
            for _ in range(3):
                y = run_graph(c, ctx, name, xs[name])
                if np.abs(y - expected(xs[name])).max() > FP16:
                    errors.append(name)
        threads = [threading.Thread(target=loop, args=(ctx, name)) for ctx, name in ((a, "big"), (b, "small"))]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        assert not errors and not any(th.is_alive() for th in threads)
    finally:
        c.close()


# ---------------------------------------------------------------------------------------------------------
# 3. the QNN memory report: Python, the log at verbose, npurt report --qnn
# ---------------------------------------------------------------------------------------------------------
def test_the_memory_report_counts_shared_weights_once_and_logs_at_verbose(caplog):
    """Two graphs over one weight in a weight-sharing context: the report's stored weights are one copy, the
    unshared figure two; with the QNN log at verbose, contextCreateFromBinary logs the report."""
    import logging
    from test_qnn_multigraph import _client as sharing_client, _fc_graphs, _binary as multi_binary
    w = np.random.default_rng(7).normal(size=(64, 32)).astype(np.float32)
    c = sharing_client(sharing=True)
    try:
        _fc_graphs(c, [w, w])
        data = multi_binary(c)
        caplog.set_level(logging.DEBUG, logger="npurt.qnn")
        ctx = load(c, data)
        row = q.memory_report(c.backend).contexts[ctx.value]
        assert row.graphs == 2 and row.shared and row.weight_bytes_unshared == 2 * row.weight_bytes > 0
        assert row.spill_fill == row.spill_fill_need == 0 and row.vtcm > 0 and row.group is None
        lines = [r.getMessage() for r in caplog.records if "<V> contextCreateFromBinary" in r.getMessage()]
        assert any(f"context {ctx.value:#x}: 2 graph(s)" in line and "shared; unshared" in line for line in lines)
        assert any(line.split(": ", 1)[1].startswith("total: weights") for line in lines)
    finally:
        c.close()


def test_npurt_report_qnn_prints_the_memory_report_of_a_context_binary(binaries, tmp_path):
    from helpers.cli import fails, npurt, ok_json
    data, spill, _ = binaries["big"]
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    out = npurt("report", path, "--qnn")
    assert out.returncode == 0, out.stderr
    assert "QNN memory: 1 context(s), 0 spill-fill group(s) on sm8550" in out.stdout
    assert f"spill-fill {spill:,} B (need {spill:,} B) | VTCM 0 B" in out.stdout     # no 2 MiB activation fits 1 MB
    totals = ok_json("report", path, "--qnn")["totals"]
    assert totals["spill_fill"] == totals["spill_fill_unshared"] == -(-spill // 4096) * 4096
    (tmp_path / "junk.bin").write_bytes(b"\0" * 64)
    err = fails("report", tmp_path / "junk.bin", "--qnn", words=("contextCreateFromBinary",))
    assert len(err.strip().splitlines()) == 1


def test_a_group_buffer_larger_than_memory_is_refused_and_leaves_nothing(binaries):
    big = binaries["big"][0]
    c = _client()
    try:
        backend = HANDLES.get(c.backend.value)
        before = len(backend.contexts)
        ret = code(c.qi.contextCreateFromBinary(c.backend, c.device, group_config(0, 1 << 62), big, len(big),
                                                q.Qnn_ContextHandle_t(), None))
        assert ret == q.QNN_CONTEXT_ERROR_MEM_ALLOC
        assert len(backend.contexts) == before and not q.memory_report(c.backend).groups
    finally:
        c.close()


@pytest.mark.timeout(300)
def test_the_qnn_ep_loads_two_spilling_contexts_as_one_group(lib, tmp_path):
    """Two EPContext models generated with enable_htp_spill_fill_buffer=1 and vtcm_mb=1 (max_size > 0), joined into
    one model of two main contexts: the EP loads them with REGISTER_MULTI_CONTEXTS, and the memory report shows one
    group whose one spill-fill buffer replaces two."""
    shape = (1, 16, 128, 256)
    nodes, sizes = [], []
    for k, name in enumerate(("pa", "pb")):
        attrs, _, _, _ = generate(lib, tmp_path, name, shape, vtcm_mb=1, enable_htp_spill_fill_buffer=1)
        sizes.append(attrs["max_size"])
        node = [nd for nd in onnx.load(tmp_path / f"{name}_ctx.onnx").graph.node if nd.op_type == "EPContext"][0]
        node.input[0], node.output[0], node.name = ("x", "t")[k], ("t", "y")[k], f"ctx_{name}"
        nodes.append(node)
    assert min(sizes) > 0
    value = [helper.make_tensor_value_info(v, TensorProto.FLOAT, shape) for v in ("x", "t", "y")]
    joined = helper.make_model(helper.make_graph(nodes, "joined", value[:1], value[2:], value_info=value[1:2]),
                               opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    onnx.save(joined, tmp_path / "joined.onnx")
    before = {g.first for g in q.memory_report().groups}
    session = qnn_ep_session(tmp_path / "joined.onnx", lib)
    (group,) = [g for g in q.memory_report().groups if g.first not in before]
    assert len(group.contexts) == 2 and group.max_spill == max(sizes)
    assert group.spill_fill == -(-max(sizes) // 4096) * 4096 and group.spill_fill_unshared == 2 * group.spill_fill
    x = np.random.default_rng(5).normal(size=shape).astype(np.float32)
    model = chain_model(shape)
    ref = run_ort(model, {"x": run_ort(model, {"x": x})[0]})[0]
    assert np.abs(session.run(None, {"x": x})[0] - ref).max() <= 3 * FP16
