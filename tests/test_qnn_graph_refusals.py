"""QNN graph building refuses what it cannot build exactly, with the documented QNN code, and never answers with an
internal error (1100) or a silent wrong result: fixed-point offsets beyond float32's exact range, rank-0 tensors and
non-whole integer params, a bias of the wrong length, a Gather index out of range at run time, out of memory at
finalize; and graphFinalize is one critical section (two finalizes: exactly one succeeds; a node added once a
finalize has started is refused). The same face from C: tests/c/qnn_graph_bad.c."""
from __future__ import annotations

import ctypes
import threading

import numpy as np
import pytest

import npurt.qnn as q
from helpers.qnn import code
from helpers.qnn_build import Client
from npurt.qnn import graph_build
from npurt.qnn.members import building
from npurt.qnn.backend import Backend, lookup
from npurt.qnn.boundary import internal_errors

W, R, N, S = q.QNN_TENSOR_TYPE_APP_WRITE, q.QNN_TENSOR_TYPE_APP_READ, q.QNN_TENSOR_TYPE_NATIVE, \
    q.QNN_TENSOR_TYPE_STATIC
U32 = np.uint32


@pytest.fixture
def client(qnn_graph_client):
    return qnn_graph_client


def _relu_u8(c: Client, qp: tuple, expect: int = q.QNN_SUCCESS) -> None:
    c.tensor("x", W, (1, 4, 4, 2), np.uint8, qp, expect=expect)
    c.tensor("y", R, (1, 4, 4, 2), np.uint8, qp, expect=expect)


@pytest.mark.parametrize("offset", [2147483647, -2147483648, 1 << 24, -(1 << 20)])
def test_fixed_point_offset_beyond_float32_is_refused(client, offset):
    """UFIXED_POINT_8 graph I/O whose (q + offset) * scale cannot stay exact in float32: 7004 at tensorCreate,
    4004 at backendValidateOpConfig (before, Relu answered 255 everywhere)."""
    _relu_u8(client, (0.05, offset), expect=q.QNN_TENSOR_ERROR_INVALID_TENSOR_PARAM)
    x = client.describe("x", W, (1, 4, 4, 2), np.uint8, (0.05, offset))
    y = client.describe("y", R, (1, 4, 4, 2), np.uint8, (0.05, offset))
    client.tensors.update(x=x, y=y)
    cfg = client.op("r", "Relu", ["x"], ["y"])
    assert code(client.qi.backendValidateOpConfig(client.backend, cfg)) == q.QNN_BACKEND_ERROR_INVALID_ARGUMENT


@pytest.mark.parametrize("scale", [1e38, 1e-44, float("inf")])
def test_fixed_point_scale_overflowing_float32_is_refused(client, scale):
    _relu_u8(client, (scale, -128), expect=q.QNN_TENSOR_ERROR_INVALID_TENSOR_PARAM)


@pytest.mark.parametrize("offset", [-983040, 983040, 1000, -1000, -128])
def test_large_offsets_within_the_bound_stay_exact(client, offset):
    """Relu on uint8 graph I/O gives the exact requantized values for offsets up to the bound."""
    scale = np.float32(0.05)
    _relu_u8(client, (float(scale), offset))
    client.node("r", "Relu", ["x"], ["y"])
    client.finalize()
    x = (np.arange(32, dtype=np.uint8) * 8).reshape(1, 4, 4, 2)
    got = client.execute({"x": x}, {"y": ((1, 4, 4, 2), np.uint8)})["y"]
    real = np.maximum((x.astype(np.float64) + offset) * float(scale), 0)
    ref = np.clip(np.rint(real / float(scale)) - offset, 0, 255)
    assert np.array_equal(got, ref)


def _small_graph(c: Client) -> None:
    c.tensor("x", W, (1, 4, 4, 2))
    c.tensor("y", R, (1, 4, 4, 2))
    c.tensor("n", N, (1, 4, 4, 2))
    c.node("relu", "Relu", ["x"], ["y"])


def test_two_finalizes_exactly_one_succeeds():
    """Two threads finalize one graph at once: every trial one gets 0, the other 6024 GRAPH_FINALIZED, and the
    context holds one compiled graph (contextGetBinarySize succeeds)."""
    for _ in range(6):
        c = Client()
        try:
            c.create_graph()
            _small_graph(c)
            barrier, codes = threading.Barrier(2), []

            def finalize() -> None:
                barrier.wait()
                codes.append(code(c.qi.graphFinalize(c.graph, None, None)))
            threads = [threading.Thread(target=finalize) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert sorted(codes) == [q.QNN_SUCCESS, q.QNN_GRAPH_ERROR_GRAPH_FINALIZED]
            size = ctypes.c_uint64()
            assert code(c.qi.contextGetBinarySize(c.context, ctypes.byref(size))) == q.QNN_SUCCESS
            assert len(lookup(c.context, graph_build.BuildContext).children) == 1
        finally:
            c.close()


def test_add_node_once_finalize_started_is_refused(client, monkeypatch):
    """graphAddNode and tensorCreateGraphTensor issued while graphFinalize compiles wait for it and are refused
    (6024); the compiled graph is the one finalize started with."""
    _small_graph(client)
    started, release = threading.Event(), threading.Event()
    compile_ir = building._compile_ir

    def slow_compile(model, soc):
        started.set()
        release.wait(10)
        return compile_ir(model, soc)
    monkeypatch.setattr(building, "_compile_ir", slow_compile)
    codes = {}
    finalizer = threading.Thread(target=lambda: codes.setdefault(
        "finalize", code(client.qi.graphFinalize(client.graph, None, None))))
    finalizer.start()
    assert started.wait(10)
    late = client.op("neg", "ElementWiseNeg", ["x"], ["n"])
    adder = threading.Thread(target=lambda: codes.setdefault("add", code(client.qi.graphAddNode(client.graph,
                                                                                                  late))))
    adder.start()
    adder.join(0.2)
    assert adder.is_alive()                 # waits for the finalize's critical section
    release.set()
    finalizer.join()
    adder.join()
    assert codes == {"finalize": q.QNN_SUCCESS, "add": q.QNN_GRAPH_ERROR_GRAPH_FINALIZED}
    t = client.describe("z", N, (1, 4, 4, 2))
    assert code(client.qi.tensorCreateGraphTensor(client.graph, t)) == q.QNN_GRAPH_ERROR_GRAPH_FINALIZED
    ctx = lookup(client.context, graph_build.BuildContext)
    assert [n.op_type for n in ctx.children[0].compiled.graph.nodes if "neg" in n.name] == []


def _rank0(op_type, ins, statics=(), **params):
    def build(c: Client) -> list[str]:
        for name in ins:
            c.tensor(name, W, ())
        for name, value in statics:
            c.static(name, value)
        c.tensor("y", R, ())
        return [*ins, *(n for n, _ in statics)]
    return op_type, build, params


ONE = np.ones(1, np.float32)
INVALID_CONFIGS = {
    "Batchnorm on rank 0": _rank0("Batchnorm", ["x"], [("s", ONE), ("b", ONE)]),
    "ReduceMean on rank 0": _rank0("ReduceMean", ["x"], axes=np.array([0], U32)),
    "LayerNorm on rank 0": _rank0("LayerNorm", ["x"], [("g", ONE)]),
    "MatMul transpose_in0 on rank 0": _rank0("MatMul", ["x", "x2"], transpose_in0=True),
}


def _single(op_type, x_dims, y_dims, statics=(), **params):
    def build(c: Client) -> list[str]:
        c.tensor("x", W, x_dims)
        for name, value in statics:
            c.static(name, value)
        c.tensor("y", R, y_dims)
        return ["x", *(n for n, _ in statics)]
    return op_type, build, params


W1 = np.ones((1, 1, 2, 2), np.float32)
INVALID_CONFIGS.update({
    "ResizeBilinear to a 2-D output": _single("ResizeBilinear", (1, 4, 4, 2), (8, 8)),
    "Softmax axis NaN": _single("Softmax", (2, 3), (2, 3), axis=float("nan")),
    "Softmax axis inf": _single("Softmax", (2, 3), (2, 3), axis=float("inf")),
    "Softmax axis 1.5": _single("Softmax", (2, 3), (2, 3), axis=1.5),
    "ReduceMean axis out of range": _single("ReduceMean", (2, 3), (2, 1), axes=np.array([5], U32), keep_dims=True),
    "Conv2d group NaN": _single("Conv2d", (1, 4, 4, 2), (1, 4, 4, 2), [("w", W1)], group=float("nan")),
    "Conv2d pad NaN": _single("Conv2d", (1, 4, 4, 2), (1, 4, 4, 2), [("w", W1)],
                              pad_amount=np.full((2, 2), np.nan, np.float32)),
    "Conv2d bias of 3 for 2 channels": _single("Conv2d", (1, 4, 4, 2), (1, 4, 4, 2),
                                               [("w", W1), ("b", np.ones(3, np.float32))]),
    "Conv2d bias of 1 for 2 channels": _single("Conv2d", (1, 4, 4, 2), (1, 4, 4, 2), [("w", W1), ("b", ONE)]),
    "FullyConnected bias of 1 for 2 units": _single("FullyConnected", (3, 2), (3, 2),
                                                    [("w", np.ones((2, 2), np.float32)), ("b", ONE)]),
    "ReluMinMax max NaN": _single("ReluMinMax", (2, 3), (2, 3), min_value=0.0, max_value=float("nan")),
    "Gather static index out of range": _single("Gather", (4, 3), (2, 3), [("i", np.array([0, 4], np.int32))]),
    "PoolAvg2d pad as large as the filter": _single("PoolAvg2d", (1, 4, 4, 2), (1, 3, 3, 2),
                                                    filter_size=np.array([1, 1], U32), stride=np.array([2, 2], U32),
                                                    pad_amount=np.ones((2, 2), U32)),
    "Reshape to another element count": _single("Reshape", (2, 3), (2, 2)),
    "FullyConnected output of another size": _single("FullyConnected", (1, 1), (2, 1),
                                                     [("w", np.ones((1, 1), np.float32))]),
    "StridedSlice output of another size": _single("StridedSlice", (4, 3), (4, 3),
                                                   ranges=np.array([[0, 2, 1], [0, 3, 1]], np.int32)),
})


# Param values no op definition takes (NaN, inf, a fraction where an integer is typed): the invalid-argument codes.
BAD_VALUES = {"Softmax axis NaN", "Softmax axis inf", "Softmax axis 1.5", "Conv2d group NaN", "Conv2d pad NaN",
              "ReluMinMax max NaN"}


@pytest.mark.parametrize("case", sorted(INVALID_CONFIGS))
def test_invalid_op_config_is_refused_at_validate_and_add(client, case):
    """4004 from backendValidateOpConfig, 6005 INVALID_OP_CONFIG from graphAddNode (a bad param value: 1004 and
    6000, the invalid-argument codes), never 1100; the graph is left as it was (it still has no node)."""
    op_type, build, params = INVALID_CONFIGS[case]
    before = internal_errors()
    ins = build(client)
    cfg = client.op("op", op_type, ins, ["y"], **params)
    want = (q.QNN_COMMON_ERROR_INVALID_ARGUMENT, q.QNN_GRAPH_ERROR_INVALID_ARGUMENT) if case in BAD_VALUES else \
        (q.QNN_BACKEND_ERROR_INVALID_ARGUMENT, q.QNN_GRAPH_ERROR_INVALID_OP_CONFIG)
    assert code(client.qi.backendValidateOpConfig(client.backend, cfg)) == want[0]
    assert code(client.qi.graphAddNode(client.graph, cfg)) == want[1]
    assert internal_errors() == before
    assert lookup(client.graph, graph_build.BuildGraph).ops == []


def test_reduce_sum_and_quantized_batchnorm_run(client):
    """Found by the property test: ReduceSum (axes are an input at the IR's opset) was refused at validate, and a
    rank-2 uint8 Batchnorm (its Mul + Add through an unquantized intermediate) failed at finalize. Both now build
    and give the right values."""
    rng = np.random.default_rng(4)
    qp = (0.02, -128)
    client.tensor("x", W, (2, 3))
    client.tensor("s", R, (2,))
    client.tensor("q", W, (2, 3), np.uint8, qp)
    scale, bias = np.array([0.5, -1.0, 2.0], np.float32), np.array([0.1, 0.2, -0.3], np.float32)
    client.static("g", scale)
    client.static("b", bias)
    client.tensor("y", R, (2, 3), np.uint8, qp)
    client.node("sum", "ReduceSum", ["x"], ["s"], axes=np.array([1], U32))
    client.node("bn", "Batchnorm", ["q", "g", "b"], ["y"])
    client.finalize()
    x = rng.uniform(-1, 1, size=(2, 3)).astype(np.float32)
    xq = rng.integers(100, 156, size=(2, 3)).astype(np.uint8)
    got = client.execute({"x": x, "q": xq}, {"s": ((2,), np.float32), "y": ((2, 3), np.uint8)})
    np.testing.assert_allclose(got["s"], x.sum(1), atol=1e-2)
    real = (xq.astype(np.float64) + qp[1]) * qp[0] * scale + bias
    ref = np.clip(np.rint(real / qp[0]) - qp[1], 0, 255)
    assert np.abs(got["y"].astype(np.int64) - ref).max() <= 1


def test_gather_index_out_of_range_at_run_time(client, caplog):
    """Gather with APP_WRITE indices: an index outside [-4, 3] is 6004 INVALID_TENSOR with a line naming it; a
    negative index in range counts from the end, and the graph keeps running after the refusal."""
    client.tensor("x", W, (4, 3))
    client.tensor("i", W, (2,), np.int32)
    client.tensor("y", R, (2, 3))
    client.node("g", "Gather", ["x", "i"], ["y"], axis=0)
    client.finalize()
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    for bad in (4, -5):
        ins = {"x": x, "i": np.array([1, bad], np.int32)}
        with caplog.at_level("ERROR", logger="npurt.qnn"), pytest.raises(AssertionError, match="INVALID_TENSOR"):
            client.execute(ins, {"y": ((2, 3), np.float32)})
        assert f"index {bad} is out of range" in caplog.text
    got = client.execute({"x": x, "i": np.array([1, -1], np.int32)}, {"y": ((2, 3), np.float32)})["y"]
    assert np.array_equal(got, x[[1, 3]])


def test_out_of_memory_at_finalize_is_mem_alloc(client):
    """A graph whose I/O does not fit the device's address space: graphFinalize returns 1002 MEM_ALLOC (not 6000
    from a half-built graph's cleanup), frees what it allocated and leaves the graph unfinalized."""
    dims = (1, 20000, 20000, 4)                 # 6.4 GB of float32 per tensor
    client.tensor("x", W, dims)
    client.tensor("y", R, dims)
    client.node("r", "Relu", ["x"], ["y"])
    device = lookup(client.backend, Backend).device
    live = len(device.buffers())
    assert code(client.qi.graphFinalize(client.graph, None, None)) == q.QNN_GRAPH_ERROR_MEM_ALLOC
    assert len(device.buffers()) == live
    assert not lookup(client.graph, graph_build.BuildGraph).finalized


def test_refusals_and_racing_finalizes_from_c():
    """tests/c/qnn_graph_bad.c through libQnnHtp.so: offset 2147483647 refused (7004 / 4004), two threads
    finalizing one graph get exactly one success per trial, then add is refused and the graph runs."""
    from helpers.capi import compile_c, prefix, run_c
    pfx = prefix()
    exe = compile_c("qnn_graph_bad", pfx, libs=(), flags=("-I", str(pfx / "include" / "QNN"), "-ldl", "-lpthread"))
    proc = run_c(exe, env={"LD_LIBRARY_PATH": str(pfx / "lib")})
    assert "qnn_graph_bad ok" in proc.stdout, proc.stdout + proc.stderr


def test_a_context_load_failure_at_finalize_is_a_graph_code(client, monkeypatch):
    """When the compiled graph cannot be loaded (a context-family failure inside graphFinalize), graphFinalize
    answers its own FINALIZE_FAILED (6022), not a contextCreateFromBinary code."""
    import npurt.qnn.context as context
    from npurt.errors import ErrorCode, NpuError

    def refuse(*args, **kwargs):
        raise NpuError(ErrorCode.INVALID_MODEL, "cannot load")
    _small_graph(client)
    with monkeypatch.context() as m:
        m.setattr(context, "RuntimeContext", refuse)
        assert code(client.qi.graphFinalize(client.graph, None, None)) == q.QNN_GRAPH_ERROR_FINALIZE_FAILED
    client.finalize()                           # nothing was kept: the graph finalizes once the load works
