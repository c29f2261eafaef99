"""The DSP's process domain (PD) as a budget, and contextCreateFromBinaryListAsync.

- Every context loaded on an HTP maps its weights, spill-fill, VTCM backup and registered I/O into the PD's address
  space; the load that does not fit fails 1002 with one line naming the budget, what is mapped and what the context
  needed, leaves nothing behind, and the QNN memory report shows the headroom. `$NPURT_QNN_PD_BUDGET` sets a small
  budget so small models show the fourth context failing — from Python, through a DEFER_GRAPH_INIT finalize, and
  through onnxruntime's QNN EP.
- contextCreateFromBinaryListAsync (slot 56): synchronous with a NULL signal, notifyFunc once per context before it
  returns, list configs (PRIORITY, SHARE_RESOURCES, SHARE_RESOURCES_OPTIMIZATION_TYPE, WEIGHT_SHARING_ENABLED) with
  per-binary configs over them, all or nothing; from Python and from C (tests/c/qnn_list_async.c) and the EP's
  htp_share_resource_optimization=1.
"""
from __future__ import annotations

import ctypes
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import npurt.qnn as q
from npurt.qnn.backend import HANDLES
from npurt.soc.htp import HTP_PROFILES, PD_MAP_LIMIT

from helpers.qnn import code, config_list, ok
from helpers.qnn_build import Client

W, R = q.QNN_TENSOR_TYPE_APP_WRITE, q.QNN_TENSOR_TYPE_APP_READ
PAGE = 4096


def fc_binary(seed: int, n: int = 256) -> tuple[bytes, np.ndarray]:
    """A one-graph sm8550 binary: y = x @ w.T (FullyConnected, an n x n float32 weight), and its weight."""
    w = np.random.default_rng(seed).normal(size=(n, n)).astype(np.float32)
    c = Client()
    try:
        c.create_graph("fc")
        c.tensor("x", W, (2, n))
        c.static("w", w)
        c.tensor("y", R, (2, n))
        c.node("fc0", "FullyConnected", ["x", "w"], ["y"])
        c.finalize()
        size, written = ctypes.c_uint64(), ctypes.c_uint64()
        ok(c.qi.contextGetBinarySize(c.context, size))
        buf = bytearray(size.value)
        ok(c.qi.contextGetBinary(c.context, buf, size.value, written))
    finally:
        c.close()
    return bytes(buf), w


@pytest.fixture(scope="module")
def binaries() -> list[tuple[bytes, np.ndarray]]:
    return [fc_binary(seed) for seed in range(4)]


def run_fc(c: Client, ctx, w: np.ndarray) -> None:
    """Run graph "fc" of `ctx` and check it against numpy."""
    graph = q.Qnn_GraphHandle_t()
    ok(c.qi.graphRetrieve(ctx, b"fc", graph))
    ins, outs = q.io_tensors(HANDLES.get(graph.value).context)
    x = np.random.default_rng(9).normal(size=(2, w.shape[1])).astype(np.float32)
    y = np.zeros((2, w.shape[0]), np.float32)
    ins[0].v1.clientBuf.data, ins[0].v1.clientBuf.dataSize = x.ctypes.data, x.nbytes
    outs[0].v1.clientBuf.data, outs[0].v1.clientBuf.dataSize = y.ctypes.data, y.nbytes
    ok(c.qi.graphExecute(graph, ins, 1, outs, 1, None, None))
    ref = x @ w.T
    assert np.abs(y - ref).max() <= 2e-3 * np.abs(ref).max()          # fp16 on the HTP


def load(c: Client, data: bytes, config=None, expect: int = q.QNN_SUCCESS) -> q.Qnn_ContextHandle_t:
    ctx = q.Qnn_ContextHandle_t()
    assert code(c.qi.contextCreateFromBinary(c.backend, c.device, config, data, len(data), ctx, None)) == expect
    return ctx


def pd_of(backend) -> q.memory_report.__class__:
    (pd,) = q.memory_report(backend).pds
    return pd


def state(c: Client) -> tuple:
    """What a failed load must leave unchanged: the backend's contexts, live handles, device buffers, the PD."""
    backend = HANDLES.get(c.backend.value)
    from npurt.qnn.context import QnnContext
    live = [o for _, o in HANDLES.live() if isinstance(o, QnnContext) and not o.freed]
    return (len(backend.contexts), len(live), len(backend.device.buffers()),
            pd_of(c.backend).mapped)


# ---------------------------------------------------------------------------------------------------------
# 1. the PD budget
# ---------------------------------------------------------------------------------------------------------
def test_every_soc_has_the_public_pd_budget_and_the_report_shows_the_headroom(binaries, monkeypatch):
    monkeypatch.delenv("NPURT_QNN_PD_BUDGET", raising=False)
    assert PD_MAP_LIMIT == 3584 << 20 and all(p.pd_budget == PD_MAP_LIMIT for p in HTP_PROFILES.values())
    c = Client()
    try:
        load(c, binaries[0][0])
        report = q.memory_report(c.backend)
        (pd,) = report.pds
        t = report.totals()
        assert pd.soc == "sm8550" and pd.budget == PD_MAP_LIMIT
        assert pd.mapped == t["weight_memory"] + t["spill_fill"] + t["vtcm_backup"] + t["registered_io"]
        assert pd.mapped >= 256 * 256 * 2 and pd.headroom == pd.budget - pd.mapped
        assert f"PD of sm8550: {pd.mapped:,} B mapped of a {PD_MAP_LIMIT:,} B address-space budget, headroom " \
               f"{pd.headroom:,} B" in report.lines()
    finally:
        c.close()


def test_the_fourth_context_does_not_fit_and_the_failed_load_leaves_nothing(binaries, monkeypatch, caplog):
    """A budget of 3.5 contexts (as 3.5 GiB holds three 1 GiB LLM parts): three load and run, the fourth fails 1002
    with one line naming the budget, what is mapped and what it needs; freeing one makes room again."""
    c = Client()
    try:
        first = load(c, binaries[0][0])
        need = pd_of(c.backend).mapped
        ok(c.qi.contextFree(first, None))
        budget = 3 * need + need // 2
        monkeypatch.setenv("NPURT_QNN_PD_BUDGET", str(budget))
        ctxs = [load(c, data) for data, _ in binaries[:3]]
        for ctx, (_, w) in zip(ctxs, binaries):
            run_fc(c, ctx, w)
        assert pd_of(c.backend).mapped == 3 * need and pd_of(c.backend).headroom == budget - 3 * need
        before = state(c)
        caplog.clear()
        assert not load(c, binaries[3][0], expect=q.QNN_CONTEXT_ERROR_MEM_ALLOC).value
        (line,) = [r.getMessage() for r in caplog.records if "Failed to find available PD" in r.getMessage()]
        assert f"maps at most {budget:,} B, {3 * need:,} B are mapped, this context needs {need:,} B" in line
        assert line.startswith("<E> contextCreateFromBinary: Failed to find available PD: the sm8550 PD")
        assert state(c) == before
        ok(c.qi.contextFree(ctxs[0], None))
        run_fc(c, load(c, binaries[3][0]), binaries[3][1])
        monkeypatch.setenv("NPURT_QNN_PD_BUDGET", f"{budget // 1024}K")      # the K suffix
        assert pd_of(c.backend).budget == budget // 1024 * 1024
    finally:
        c.close()


def test_a_deferred_context_fails_at_finalize_and_may_finalize_once_there_is_room(binaries, monkeypatch):
    """With DEFER_GRAPH_INIT the PD failure moves from create to contextFinalize (as observed on devices); the handle
    stays, nothing of the failed finalize stays mapped, and it finalizes once another context is freed."""
    defer = q.QnnContext_Config_t()
    defer.option, defer.isGraphInitDeferred = q.QNN_CONTEXT_CONFIG_OPTION_DEFER_GRAPH_INIT, 1
    c = Client()
    try:
        a = load(c, binaries[0][0])
        need = pd_of(c.backend).mapped
        monkeypatch.setenv("NPURT_QNN_PD_BUDGET", str(need + need // 2))
        d = load(c, binaries[1][0], config_list([defer]))               # a handle only: nothing mapped yet
        before = state(c)
        assert code(c.qi.contextFinalize(d, None)) == q.QNN_CONTEXT_ERROR_MEM_ALLOC
        assert state(c) == before and not HANDLES.get(d.value).finalized
        ok(c.qi.contextFree(a, None))
        ok(c.qi.contextFinalize(d, None))
        run_fc(c, d, binaries[1][1])
    finally:
        c.close()


@pytest.mark.parametrize("value", ["lots", "0", "-5M"])
def test_a_budget_that_is_no_size_is_refused_in_one_line(binaries, monkeypatch, caplog, value):
    monkeypatch.setenv("NPURT_QNN_PD_BUDGET", value)
    c = Client()
    try:
        before = len(HANDLES.get(c.backend.value).contexts)
        caplog.clear()
        load(c, binaries[0][0], expect=q.QNN_CONTEXT_ERROR_INVALID_CONFIG)
        assert f"NPURT_QNN_PD_BUDGET={value!r} is no size" in caplog.text
        assert len(HANDLES.get(c.backend.value).contexts) == before
    finally:
        c.close()


# ---------------------------------------------------------------------------------------------------------
# 2. contextCreateFromBinaryListAsync
# ---------------------------------------------------------------------------------------------------------
def htp_config(option: int, field: str, value) -> q.QnnContext_Config_t:
    htp = q.QnnHtpContext_CustomConfig_t()
    htp.option = option
    setattr(htp, field, value)
    cfg = q.QnnContext_Config_t()
    cfg.option, cfg.customConfig, cfg._keep = q.QNN_CONTEXT_CONFIG_OPTION_CUSTOM, ctypes.addressof(htp), htp
    return cfg


def priority(value: int) -> q.QnnContext_Config_t:
    cfg = q.QnnContext_Config_t()
    cfg.option, cfg.priority = q.QNN_CONTEXT_CONFIG_OPTION_PRIORITY, value
    return cfg


def ep_list_config(share: bool = True, opt: int = q.SEQUENTIAL_WITHOUT_VA_OPTIMIZATION) -> list:
    """The list configs onnxruntime's QNN EP sends with htp_share_resource_optimization=1."""
    return config_list([priority(q.QNN_PRIORITY_DEFAULT),
                  htp_config(q.QNN_HTP_CONTEXT_CONFIG_OPTION_SHARE_RESOURCES, "shareResources", share),
                  htp_config(q.QNN_HTP_CONTEXT_CONFIG_OPTION_SHARE_RESOURCES_OPTIMIZATION_TYPE, "shareResOptType", opt),
                  htp_config(q.QNN_HTP_CONTEXT_CONFIG_OPTION_WEIGHT_SHARING_ENABLED, "weightSharingEnabled", True)])


class Notes:
    """notifyFunc: records every call (context, graph, name, type, param, status)."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.fn = q.QnnContext_createFromBinaryNotifyFn_t(
            lambda ctx, graph, name, kind, param, status: self.calls.append((ctx, graph, name, kind, param, status)))

    def params(self, blobs: list[bytes], configs: list | None = None) -> list:
        """One QnnContext_Params_t V1 per binary, notifyParam = its index + 1 (keeps the config arrays alive)."""
        out = []
        for k, data in enumerate(blobs):
            p = q.QnnContext_Params_t()
            p.version = q.QNN_CONTEXT_PARAMS_VERSION_1
            p.v1.binaryBuffer, p.v1.binaryBufferSize = ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p), len(data)
            p.v1.notifyFunc = ctypes.cast(self.fn, ctypes.c_void_p)
            p.v1.notifyParam = k + 1
            if configs and configs[k] is not None:
                arr = (ctypes.c_void_p * len(configs[k]))(*[ctypes.addressof(c.contents) if c else None
                                                           for c in configs[k]])
                p.v1.config, p._keep = ctypes.addressof(arr), (arr, configs[k], data)
            else:
                p._keep = data
            out.append(p)
        return out + [None]


def test_list_async_loads_every_binary_notifies_once_each_and_shares_resources(binaries):
    """SHARE_RESOURCES with SEQUENTIAL_WITHOUT_VA and the EP's other list configs: synchronous, one CONTEXT_INIT
    notification per context (its handle, its notifyParam, status 0) before returning; the contexts form one group
    sharing a VTCM backup buffer, mapped once per context (without VA optimisation); a binary's own PRIORITY
    overrides the list's; both graphs run."""
    notes = Notes()
    c = Client()
    try:
        own = [None, config_list([priority(q.QNN_PRIORITY_HIGH)])]
        params = notes.params([b for b, _ in binaries[:2]], own)
        ok(c.qi.contextCreateFromBinaryListAsync(c.backend, c.device, params, ep_list_config(), None))
        assert [(n[3], n[4], n[5]) for n in notes.calls] == [(q.QNN_CONTEXT_NOTIFY_TYPE_CONTEXT_INIT, k + 1, 0)
                                                             for k in range(2)]
        handles = [n[0] for n in notes.calls]
        ctxs = [HANDLES.get(h) for h in handles]
        assert all(x is not None and x.finalized for x in ctxs) and len(set(handles)) == 2
        assert [x.priority for x in ctxs] == [q.QNN_PRIORITY_DEFAULT, q.QNN_PRIORITY_HIGH]
        (group,) = q.memory_report(c.backend).groups
        assert set(group.contexts) == set(handles) and group.vtcm_backup > 0 and group.mappings == 2
        assert ctxs[0].group is ctxs[1].group and ctxs[0].group.backup.alive
        assert any("one VTCM backup buffer" in line for line in q.memory_report(c.backend).lines())
        for h, (_, w) in zip(handles, binaries):
            run_fc(c, q.Qnn_ContextHandle_t(h), w)
        run_fc(c, q.Qnn_ContextHandle_t(handles[0]), binaries[0][1])   # the VTCM passes back: backed up, reruns
        backup = ctxs[0].group.backup
        for h in handles:
            ok(c.qi.contextFree(q.Qnn_ContextHandle_t(h), None))
        assert not backup.alive
    finally:
        c.close()


def test_list_async_with_va_optimisation_maps_the_shared_buffers_once(binaries):
    notes = Notes()
    c = Client()
    try:
        params = notes.params([b for b, _ in binaries[:3]])
        ok(c.qi.contextCreateFromBinaryListAsync(c.backend, c.device, params,
                                                 ep_list_config(opt=q.SEQUENTIAL_WITH_VA_OPTIMIZATION), None))
        (group,) = q.memory_report(c.backend).groups
        assert len(group.contexts) == 3 and group.mappings == 1 and len(notes.calls) == 3
    finally:
        c.close()


def test_list_async_without_share_resources_loads_independent_contexts(binaries):
    notes = Notes()
    c = Client()
    try:
        ok(c.qi.contextCreateFromBinaryListAsync(c.backend, c.device, notes.params([binaries[0][0]]), None, None))
        assert len(notes.calls) == 1 and not q.memory_report(c.backend).groups
        run_fc(c, q.Qnn_ContextHandle_t(notes.calls[0][0]), binaries[0][1])
    finally:
        c.close()


def test_list_async_refusals_leave_nothing_and_notify_nobody(binaries, monkeypatch, caplog):
    """A signal (not emulated) 1000; a NULL notifyFunc or a bad version 5000; CONCURRENT_OPTIMIZATION 5010; a list
    whose last binary does not fit the PD 1002 — all or nothing: no context, group or notification stays."""
    notes = Notes()
    c = Client()
    try:
        blobs = [b for b, _ in binaries[:3]]
        before = state(c)
        signal = ctypes.c_void_p(0x1234)
        assert code(c.qi.contextCreateFromBinaryListAsync(c.backend, c.device, notes.params(blobs), None, signal)) \
            == q.QNN_CONTEXT_ERROR_UNSUPPORTED_FEATURE
        params = notes.params(blobs)
        params[1].v1.notifyFunc = None
        assert code(c.qi.contextCreateFromBinaryListAsync(c.backend, c.device, params, None, None)) \
            == q.QNN_CONTEXT_ERROR_INVALID_ARGUMENT
        params = notes.params(blobs)
        params[0].version = 2
        assert code(c.qi.contextCreateFromBinaryListAsync(c.backend, c.device, params, None, None)) \
            == q.QNN_CONTEXT_ERROR_INVALID_ARGUMENT
        assert code(c.qi.contextCreateFromBinaryListAsync(c.backend, c.device, notes.params(blobs),
                                                          ep_list_config(opt=q.CONCURRENT_OPTIMIZATION), None)) \
            == q.QNN_CONTEXT_ERROR_INVALID_CONFIG
        one = load(c, blobs[0])
        need = pd_of(c.backend).mapped
        ok(c.qi.contextFree(one, None))
        monkeypatch.setenv("NPURT_QNN_PD_BUDGET", str(2 * need + need // 2))
        caplog.clear()
        assert code(c.qi.contextCreateFromBinaryListAsync(c.backend, c.device, notes.params(blobs), None, None)) \
            == q.QNN_CONTEXT_ERROR_MEM_ALLOC
        assert "contextCreateFromBinaryListAsync: Failed to find available PD" in caplog.text
        assert state(c) == before and not notes.calls and not q.memory_report(c.backend).groups
    finally:
        c.close()


# ---------------------------------------------------------------------------------------------------------
# 3. from C, and through onnxruntime's QNN EP
# ---------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def lib():
    from helpers.capi import prefix
    return prefix() / "lib"


def test_list_async_and_the_pd_budget_from_c(binaries, lib, tmp_path):
    """tests/c/qnn_list_async.c: slot 56 with the EP's list configs (one notification per context, both graphs run,
    a signal 1000, a NULL notifyFunc 5000), then with a budget of 3.5 contexts the fourth contextCreateFromBinary
    fails 1002 and the three others still run."""
    from helpers.capi import compile_c, run_c
    pfx = lib.parent
    exe = compile_c("qnn_list_async", pfx, libs=(), flags=("-I", str(pfx / "include" / "QNN"), "-ldl", "-lpthread"))
    paths = []
    for k, (data, w) in enumerate(binaries):
        (tmp_path / f"fc{k}.bin").write_bytes(data)
        w.tofile(tmp_path / f"fc{k}.w")
        paths.append(tmp_path / f"fc{k}")
    c = Client()
    try:
        load(c, binaries[0][0])
        need = pd_of(c.backend).mapped
    finally:
        c.close()
    out = run_c(exe, 3 * need + need // 2, *paths, env={"LD_LIBRARY_PATH": str(lib)})
    assert "list: 2 notifications" in out.stdout and "fourth: 1002" in out.stdout
    assert "qnn_list_async ok" in out.stdout and "Failed to find available PD" in out.stderr


def fc_model(w: np.ndarray) -> onnx.ModelProto:
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "fc",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, (2, w.shape[0]))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (2, w.shape[1]))],
                              [onnx.numpy_helper.from_array(w, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def ep_models(lib, folder) -> tuple[list[np.ndarray], list]:
    """Four 256x256 MatMul models, EPContext-generated on the EP (embed 0): (weights, EPContext model paths)."""
    from helpers.oracle import qnn_ep_session
    rng = np.random.default_rng(11)
    ws = [rng.normal(size=(256, 256)).astype(np.float32) for _ in range(4)]
    ctx_models = []
    for k, w in enumerate(ws):
        onnx.save(fc_model(w), folder / f"m{k}.onnx")
        ctx_models.append(folder / f"m{k}_ctx.onnx")
        qnn_ep_session(folder / f"m{k}.onnx", lib, config={"ep.context_enable": 1, "ep.context_embed_mode": 0,
                                                            "ep.context_file_path": ctx_models[-1]})
    return ws, ctx_models


_SHARED_SESSION = """
import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import npurt.qnn as q
from helpers.oracle import qnn_ep_session
session = qnn_ep_session(sys.argv[2], sys.argv[3], htp_share_resource_optimization=1)
np.save(sys.argv[5], session.run(None, {"x": np.load(sys.argv[4])})[0])
(g,) = q.memory_report().groups
print(json.dumps({"contexts": len(g.contexts), "mappings": g.mappings, "vtcm_backup": g.vtcm_backup}))
"""


@pytest.mark.timeout(300)
def test_the_qnn_ep_share_resource_option_loads_a_list(lib, tmp_path):
    """A model of two main EPContext nodes loaded with htp_share_resource_optimization=1 goes through
    contextCreateFromBinaryListAsync: one group of both contexts sharing a VTCM backup buffer (mapped once per
    context: SEQUENTIAL_WITHOUT_VA), output as onnxruntime CPU. In a child process: the EP keeps the backend of that
    option for the whole process."""
    import json
    import os
    import sys
    from pathlib import Path
    from helpers.oracle import run_ort
    ws, ctx_models = ep_models(lib, tmp_path)
    joined = join_contexts(ctx_models[:2], tmp_path / "joined.onnx")
    x = np.random.default_rng(12).normal(size=(2, 256)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NPURT_")}
    out = subprocess.run([sys.executable, "-c", _SHARED_SESSION, str(Path(__file__).parent), joined, str(lib),
                          str(tmp_path / "x.npy"), str(tmp_path / "y.npy")], capture_output=True, text=True,
                         timeout=240, env=env)
    assert out.returncode == 0, out.stderr
    group = json.loads(out.stdout.strip().splitlines()[-1])
    assert group["contexts"] == 2 and group["mappings"] == 2 and group["vtcm_backup"] > 0
    t = run_ort(fc_model(ws[0]), {"x": x})[0]
    close(np.load(tmp_path / "y.npy"), run_ort(fc_model(ws[1]), {"x": t})[0])


@pytest.mark.timeout(300)
def test_the_qnn_ep_fourth_session_does_not_fit_the_pd(lib, tmp_path, monkeypatch):
    """With a budget of what is mapped plus 3.5 contexts, three EPContext sessions load and run, the fourth fails
    1002 (the EP reports QNN_COMMON_ERROR_MEM_ALLOC (1002) from contextCreateFromBinary)."""
    import gc
    from helpers.oracle import qnn_ep_session, run_ort
    ws, ctx_models = ep_models(lib, tmp_path)
    x = np.random.default_rng(13).normal(size=(2, 256)).astype(np.float32)
    gc.collect()
    base = sum(p.mapped for p in q.memory_report().pds)
    one = qnn_ep_session(ctx_models[0], lib)
    need = sum(p.mapped for p in q.memory_report().pds) - base
    del one
    gc.collect()
    assert need > 0 and sum(p.mapped for p in q.memory_report().pds) == base
    monkeypatch.setenv("NPURT_QNN_PD_BUDGET", str(base + 3 * need + need // 2))
    sessions = [qnn_ep_session(m, lib) for m in ctx_models[:3]]
    with pytest.raises(Exception) as err:
        qnn_ep_session(ctx_models[3], lib)
    assert "QNN_COMMON_ERROR_MEM_ALLOC (1002)" in str(err.value), str(err.value)
    assert sum(p.mapped for p in q.memory_report().pds) == base + 3 * need
    for s, w in zip(sessions, ws):
        close(s.run(None, {"x": x})[0], run_ort(fc_model(w), {"x": x})[0])
    del sessions, s, err                    # the sessions release their contexts: the PD is as it was
    gc.collect()
    assert sum(p.mapped for p in q.memory_report().pds) == base


def join_contexts(ctx_models: list, path) -> str:
    """One model of the two EPContext models' nodes in a chain (x -> t -> y): two main contexts."""
    nodes = []
    for k, m in enumerate(ctx_models):
        node = [nd for nd in onnx.load(m).graph.node if nd.op_type == "EPContext"][0]
        node.input[0], node.output[0], node.name = ("x", "t")[k], ("t", "y")[k], f"ctx_{k}"
        nodes.append(node)
    value = [helper.make_tensor_value_info(v, TensorProto.FLOAT, (2, 256)) for v in ("x", "t", "y")]
    model = helper.make_model(helper.make_graph(nodes, "joined", value[:1], value[2:], value_info=value[1:2]),
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    onnx.save(model, path)
    return str(path)


def close(y: np.ndarray, ref: np.ndarray) -> None:
    assert np.abs(y - ref).max() <= 2e-3 * np.abs(ref).max()          # fp16 on the HTP


def test_npurt_report_qnn_shows_the_pd_headroom(binaries, tmp_path):
    from helpers.cli import npurt, ok_json
    path = tmp_path / "fc.bin"
    path.write_bytes(binaries[0][0])
    out = npurt("report", path, "--qnn")
    assert out.returncode == 0, out.stderr
    assert f"of a {PD_MAP_LIMIT:,} B address-space budget" in out.stdout
    (pd,) = ok_json("report", path, "--qnn")["pd"]
    assert pd["soc"] == "sm8550" and pd["budget"] == PD_MAP_LIMIT and pd["headroom"] == PD_MAP_LIMIT - pd["mapped"]
    assert pd["mapped"] >= 256 * 256 * 2
