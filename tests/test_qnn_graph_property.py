"""Property test of QNN graph building through the Python mirror: random op configs (every op type the front end
builds, tensors of rank 0-6 with dims including 0, float / fixed-point / integer, APP_WRITE or STATIC inputs, params
of every scalar type and tensor params, NaN / inf / huge values). Every call answers success or a documented QNN
code, never 1100 (internal) and never an unexpected exception; backendValidateOpConfig accepts exactly what
graphAddNode accepts; and a node that is accepted finalizes and executes."""
from __future__ import annotations

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import npurt.qnn as q
from helpers.qnn import code
from helpers.qnn_build import Client
from npurt.model.qnn_ops import OPS
from npurt.qnn.boundary import internal_errors

W, R, S = q.QNN_TENSOR_TYPE_APP_WRITE, q.QNN_TENSOR_TYPE_APP_READ, q.QNN_TENSOR_TYPE_STATIC

VALIDATE = {q.QNN_SUCCESS, q.QNN_BACKEND_ERROR_INVALID_ARGUMENT, q.QNN_COMMON_ERROR_INVALID_ARGUMENT}
CREATE = {q.QNN_SUCCESS, q.QNN_TENSOR_ERROR_INVALID_TENSOR_PARAM, q.QNN_TENSOR_ERROR_UNSUPPORTED_TENSOR_PARAM}
ADD = {q.QNN_SUCCESS, q.QNN_GRAPH_ERROR_INVALID_OP_CONFIG, q.QNN_GRAPH_ERROR_INVALID_ARGUMENT,
       q.QNN_GRAPH_ERROR_INVALID_TENSOR, q.QNN_GRAPH_ERROR_UNSUPPORTED_FEATURE}

PARAMS = ["axis", "axes", "perm", "group", "stride", "pad_amount", "filter_size", "dilation", "operation",
          "transpose_in0", "transpose_in1", "keep_dims", "beta", "alpha", "epsilon", "split_index", "ranges",
          "begin_mask", "end_mask", "new_axes_mask", "align_corners", "half_pixel_centers", "min_value", "max_value",
          "scheme", "pad_constant_value", "output_padding", "rounding_mode", "count_pad_for_edges"]
INTS = [0, 1, 2, 3, -1, -2, 5, 255, 2 ** 31 - 1, -2 ** 31, 2 ** 32 - 1, 2 ** 63 - 1, -2 ** 63, 2 ** 64 - 1]
FLOATS = [0.0, 1.0, -1.0, 0.5, 6.0, 1e-5, 1e30, -1e30, 3e38, float("nan"), float("inf"), float("-inf")]
# Qnn_DataType_t of a scalar -> (Qnn_Scalar_t field, lowest, highest)
SCALARS = {q.QNN_DATATYPE_UINT_8: ("uint8Value", 0, 2 ** 8 - 1),
           q.QNN_DATATYPE_INT_8: ("int8Value", -2 ** 7, 2 ** 7 - 1),
           q.QNN_DATATYPE_UINT_32: ("uint32Value", 0, 2 ** 32 - 1),
           q.QNN_DATATYPE_INT_32: ("int32Value", -2 ** 31, 2 ** 31 - 1),
           q.QNN_DATATYPE_UINT_64: ("uint64Value", 0, 2 ** 64 - 1),
           q.QNN_DATATYPE_INT_64: ("int64Value", -2 ** 63, 2 ** 63 - 1),
           q.QNN_DATATYPE_FLOAT_32: ("floatValue", None, None), q.QNN_DATATYPE_FLOAT_64: ("doubleValue", None, None),
           q.QNN_DATATYPE_BOOL_8: ("bool8Value", 0, 1)}
TENSOR_PARAM_DTYPES = [np.uint32, np.int32, np.int64, np.float32]

dims_st = st.lists(st.sampled_from([1, 1, 2, 3, 4, 5, 0]), min_size=0, max_size=6).map(tuple)
quant_pairs = st.tuples(st.sampled_from([0.05, 1.0, 1e-3, 1e30, 1e-40]),
                        st.sampled_from([0, -128, -255, 7, 2 ** 20, -2 ** 31]))
quant_st = st.one_of(st.none(), quant_pairs)
small = st.integers(1, 4)
QX = (0.02, -128)                               # a sane uint8 scale / offset


def u32(v):
    return ("scalar", q.QNN_DATATYPE_UINT_32, v)


def f32(v):
    return ("scalar", q.QNN_DATATYPE_FLOAT_32, v)


def tu32(values):
    return ("tensor", np.uint32, np.array(values, np.uint32))


def t(dims, dtype=np.float32, qp=None, static=False, data=None) -> dict:
    return {"dims": tuple(int(d) for d in dims), "dtype": dtype, "qp": qp, "static": static, "data": data}


def weights(rng_seed: int, shape) -> np.ndarray:
    return np.random.default_rng(rng_seed).normal(size=shape).astype(np.float32)


@st.composite
def tensor_st(draw, like: tuple | None = None) -> dict:
    """A random tensor description: dims (the first input's, `like`, half of the time), dtype, quantization."""
    dims = like if like is not None and draw(st.booleans()) else draw(dims_st)
    kind = draw(st.sampled_from(["float", "float", "quant", "int"]))
    if kind == "quant":
        qp = draw(quant_st)
        return t(dims, np.uint8 if qp is not None else np.float32, qp)
    return t(dims, np.float32 if kind == "float" else np.int32)


@st.composite
def param_st(draw) -> tuple:
    """(kind, QNN data type or numpy dtype, value): a scalar of every type or a small tensor."""
    if draw(st.booleans()):
        dtype = draw(st.sampled_from(sorted(SCALARS)))
        field, lo, hi = SCALARS[dtype]
        if lo is None:
            return "scalar", dtype, draw(st.sampled_from(FLOATS))
        return "scalar", dtype, min(max(draw(st.sampled_from(INTS)), lo), hi)
    dtype = draw(st.sampled_from(TENSOR_PARAM_DTYPES))
    shape = tuple(draw(st.lists(st.sampled_from([1, 2, 3, 4, 0]), min_size=0, max_size=2)))
    pool = FLOATS if dtype == np.float32 else [v for v in INTS if np.iinfo(dtype).min <= v <= np.iinfo(dtype).max]
    values = draw(st.lists(st.sampled_from(pool), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    return "tensor", dtype, np.array(values, dtype).reshape(shape)


@st.composite
def random_config(draw) -> dict:
    """Any op type with random tensors and params (mostly invalid: exercises the refusals)."""
    op_type = draw(st.sampled_from(sorted(OPS)))
    first = draw(tensor_st())
    inputs = [first] + draw(st.lists(tensor_st(like=first["dims"]), max_size=2))
    for x in inputs[1:]:
        x["static"] = draw(st.booleans())
    outputs = draw(st.lists(tensor_st(like=first["dims"]), min_size=1, max_size=2))
    params = draw(st.dictionaries(st.sampled_from(PARAMS), param_st(), max_size=4))
    return {"type": op_type, "inputs": inputs, "outputs": outputs, "params": params}


UNARY = ["Relu", "Sigmoid", "Tanh", "Gelu", "HardSwish", "Relu1", "Relu6", "Elu", "ElementWiseRsqrt",
         *[k for k in OPS if k.startswith("ElementWise") and k[11:] in ("Abs", "Neg", "Exp", "Floor", "Ceil", "Sin",
                                                                         "Cos", "Round", "Sign", "SquareRoot", "Log",
                                                                         "Asin", "Atan")]]
BINARY = ["ElementWiseAdd", "ElementWiseSubtract", "ElementWiseMultiply", "ElementWiseDivide", "ElementWiseMaximum",
          "ElementWiseMinimum", "ElementWisePower"]


@st.composite
def valid_config(draw) -> dict:
    """A config the op definitions allow (random shapes and params of one op type), for the finalize / execute
    half of the property; `mutated` then breaks some of them."""
    family = draw(st.sampled_from(["unary", "neuron", "binary", "conv", "pool", "transpose", "reshape", "concat",
                                   "split", "slice", "gather", "pad", "resize", "reduce", "fc", "matmul", "softmax",
                                   "layernorm", "batchnorm", "quant", "prelu"]))
    n, h, w, c = 1, draw(small), draw(small), draw(small)
    rank = draw(st.integers(1, 5))
    dims = tuple(draw(st.lists(small, min_size=rank, max_size=rank)))
    quantized = draw(st.sampled_from([False, False, True]))
    qp = QX if quantized else None
    act = np.uint8 if quantized else np.float32
    x = t(dims, act, qp)
    params: dict = {}
    if family == "unary":
        op_type = draw(st.sampled_from(UNARY))
        ins, outs = [x], [t(dims, act, qp)]
    elif family == "neuron":
        op_type = draw(st.sampled_from(["ElementWiseNeuron", "ElementWiseUnary", "ReluMinMax"]))
        if op_type == "ElementWiseNeuron":
            params = {"operation": u32(draw(st.integers(0, 8))), "max_value": f32(6.0), "alpha": f32(0.5)}
        elif op_type == "ElementWiseUnary":
            params = {"operation": u32(draw(st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 13, 14, 15])))}
        else:
            params = {"min_value": f32(-1.0), "max_value": f32(draw(st.sampled_from([0.5, 6.0])))}
        ins, outs = [x], [t(dims, act, qp)]
    elif family == "binary":
        op_type = draw(st.sampled_from(BINARY + ["ElementWiseBinary"]))
        if op_type == "ElementWiseBinary":
            params = {"operation": u32(draw(st.sampled_from([0, 2, 10, 11, 13, 16, 18])))}
        other = t(dims[-1:], np.float32, static=True) if draw(st.booleans()) else t(dims, act, qp)
        ins, outs = [x, other], [t(dims, act, qp)]
    elif family in ("conv", "pool"):
        k, stride, pad = draw(st.integers(1, 3)), draw(st.integers(1, 2)), draw(st.integers(0, 1))
        h, w = h + k, w + k
        x = t((n, h, w, c), act, qp)
        oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
        params = {"stride": tu32([stride, stride]), "pad_amount": ("tensor", np.uint32, np.full((2, 2), pad,
                                                                                                  np.uint32))}
        if family == "pool":
            op_type = draw(st.sampled_from(["PoolMax2d", "PoolAvg2d"]))
            params["filter_size"] = tu32([k, k])
            ins, outs = [x], [t((n, oh, ow, c), act, qp)]
        else:
            op_type = draw(st.sampled_from(["Conv2d", "DepthWiseConv2d", "TransposeConv2d"]))
            cout = draw(small)
            if op_type == "DepthWiseConv2d":
                wt, cout = (k, k, 1, c), c
            elif op_type == "TransposeConv2d":
                wt, oh, ow = (k, k, c, cout), (h - 1) * stride - 2 * pad + k, (w - 1) * stride - 2 * pad + k
                if oh < 1 or ow < 1:
                    pad, oh, ow = 0, (h - 1) * stride + k, (w - 1) * stride + k
                    params["pad_amount"] = ("tensor", np.uint32, np.zeros((2, 2), np.uint32))
            else:
                wt = (k, k, c, cout)
            ins = [x, t(wt, static=True, data=weights(1, wt)), t((cout,), static=True, data=weights(2, (cout,)))]
            outs = [t((n, oh, ow, cout), act, qp)]
    elif family == "transpose":
        op_type = "Transpose"
        perm = draw(st.permutations(list(range(rank))))
        params = {"perm": tu32(perm)}
        ins, outs = [x], [t([dims[p] for p in perm], act, qp)]
    elif family == "reshape":
        op_type = "Reshape"
        ins, outs = [x], [t((1, int(np.prod(dims))), act, qp)]
    elif family == "concat":
        op_type, axis = "Concat", draw(st.integers(0, rank - 1))
        out = list(dims)
        out[axis] *= 2
        params = {"axis": u32(axis)}
        ins, outs = [x, t(dims, act, qp)], [t(out, act, qp)]
    elif family == "split":
        op_type, axis = "Split", draw(st.integers(0, rank - 1))
        big = list(dims)
        big[axis] += 1
        first, second = list(big), list(big)
        first[axis], second[axis] = 1, big[axis] - 1
        params = {"axis": u32(axis), "split_index": tu32([1])}
        ins, outs = [t(big, act, qp)], [t(first, act, qp), t(second, act, qp)]
    elif family == "slice":
        op_type = "StridedSlice"
        ranges = np.array([[0, d, 1] for d in dims], np.int32)
        params = {"ranges": ("tensor", np.int32, ranges)}
        ins, outs = [x], [t(dims, act, qp)]
    elif family == "gather":
        op_type = "Gather"
        idx = np.array(draw(st.lists(st.integers(-dims[0], dims[0] - 1), min_size=1, max_size=3)), np.int32)
        static = draw(st.booleans())
        ins = [x, t(idx.shape, np.int32, static=static, data=idx if static else None)]
        outs = [t(idx.shape + dims[1:], act, qp)]
    elif family == "pad":
        op_type = "Pad"
        amounts = np.array(draw(st.lists(st.lists(st.integers(0, 2), min_size=2, max_size=2), min_size=rank,
                                         max_size=rank)), np.uint32)
        params = {"pad_amount": ("tensor", np.uint32, amounts)}
        ins, outs = [x], [t(np.array(dims) + amounts.sum(1), act, qp)]
    elif family == "resize":
        op_type = draw(st.sampled_from(["ResizeBilinear", "ResizeNearestNeighbor"]))
        ins, outs = [t((n, h, w, c), act, qp)], [t((n, 2 * h, 2 * w, c), act, qp)]
    elif family == "reduce":
        op_type = draw(st.sampled_from(["ReduceMean", "ReduceMax", "ReduceMin", "ReduceSum"]))
        axes = sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1)))
        keep = draw(st.booleans())
        out = [1 if a in axes else d for a, d in enumerate(dims)] if keep else \
            [d for a, d in enumerate(dims) if a not in axes]
        params = {"axes": tu32(axes), "keep_dims": ("scalar", q.QNN_DATATYPE_BOOL_8, int(keep))}
        ins, outs = [x], [t(out, act, qp)]
    elif family == "fc":
        op_type, units = "FullyConnected", draw(small)
        ins = [t((h, c), act, qp), t((units, c), static=True, data=weights(3, (units, c))),
               t((units,), static=True, data=weights(4, (units,)))]
        outs = [t((h, units), act, qp)]
    elif family == "matmul":
        op_type = "MatMul"
        ta, tb = draw(st.booleans()), draw(st.booleans())
        params = {"transpose_in0": ("scalar", q.QNN_DATATYPE_BOOL_8, int(ta)),
                  "transpose_in1": ("scalar", q.QNN_DATATYPE_BOOL_8, int(tb))}
        ins = [t((c, h) if ta else (h, c)), t((w, c) if tb else (c, w))]
        outs = [t((h, w))]
    elif family == "softmax":
        op_type = "Softmax"
        params = {"axis": u32(draw(st.integers(0, rank - 1))), "beta": f32(draw(st.sampled_from([1.0, 0.5])))}
        ins, outs = [x], [t(dims, act, qp)]
    elif family in ("layernorm", "batchnorm", "prelu"):
        op_type = {"layernorm": "LayerNorm", "batchnorm": "Batchnorm", "prelu": "Prelu"}[family]
        ch = (dims[-1],)
        ins = [x, t(ch, static=True, data=np.abs(weights(5, ch)) + 0.1)]
        if family != "prelu":
            ins.append(t(ch, static=True, data=weights(6, ch)))
        if family == "layernorm":
            params = {"axes": tu32([rank - 1]), "epsilon": f32(1e-5)}
        outs = [t(dims, act, qp)]
    else:
        op_type = draw(st.sampled_from(["Quantize", "Dequantize", "Convert", "Cast"]))
        src, dst = {"Quantize": (t(dims), t(dims, np.uint8, QX)),
                    "Dequantize": (t(dims, np.uint8, QX), t(dims)),
                    "Convert": (t(dims, np.uint8, QX), t(dims, np.uint8, (0.05, -100))),
                    "Cast": (t(dims), t(dims, np.int32))}[op_type]
        ins, outs = [src], [dst]
    return {"type": op_type, "inputs": ins, "outputs": outs, "params": params}


@st.composite
def mutated(draw) -> dict:
    """A valid config with one thing broken: a param set to any value of any type, the first input made rank 0,
    an output dim changed (to 0 too), or the first input given extreme quantization."""
    spec = draw(valid_config())
    how = draw(st.sampled_from(["param", "param", "rank0", "dim", "quant"]))
    if how == "param":
        spec["params"][draw(st.sampled_from(sorted(set(PARAMS) | set(spec["params"]))))] = draw(param_st())
    elif how == "rank0":
        spec["inputs"][0] = t((), spec["inputs"][0]["dtype"], spec["inputs"][0]["qp"])
    elif how == "dim" and spec["outputs"][0]["dims"]:
        out = list(spec["outputs"][0]["dims"])
        k = draw(st.integers(0, len(out) - 1))
        out[k] = draw(st.sampled_from([0, out[k] + 1]))
        spec["outputs"][0]["dims"] = tuple(out)
    elif how == "quant":
        spec["inputs"][0] = t(spec["inputs"][0]["dims"], np.uint8, draw(quant_pairs))
    return spec


op_config_st = st.one_of(valid_config(), mutated(), random_config())


def _data(x: dict, rng: np.random.Generator) -> np.ndarray:
    """Values for a tensor: its own, small reals, uint8 codes, or zeros for integers (always valid indices)."""
    dims = x["dims"]
    if x.get("data") is not None:
        return np.asarray(x["data"], x["dtype"])
    if x["qp"] is not None:
        return rng.integers(0, 256, size=dims).astype(x["dtype"])
    if np.dtype(x["dtype"]).kind == "f":
        return rng.uniform(0.1, 2, size=dims).astype(np.float32) * rng.choice([-1, 1], size=dims).astype(np.float32)
    return np.zeros(dims, x["dtype"])


def _param(c: Client, op_name: str, name: str, spec: tuple) -> q.Qnn_Param_t:
    kind, dtype, value = spec
    p = q.Qnn_Param_t()
    p.name = name.encode()
    if kind == "tensor":
        p.paramType = q.QNN_PARAMTYPE_TENSOR
        p.tensorParam = c.describe(f"{op_name}_{name}", S, value.shape, value.dtype, data=value)
    else:
        p.paramType = q.QNN_PARAMTYPE_SCALAR
        p.scalarParam.dataType = dtype
        setattr(p.scalarParam, SCALARS[dtype][0], value)
    return p


def _op_config(c: Client, spec: dict, names: list[str], outs: list[str]) -> q.Qnn_OpConfig_t:
    plist = (q.Qnn_Param_t * max(len(spec["params"]), 1))(
        *[_param(c, "op", n, p) for n, p in spec["params"].items()])
    ins = (q.Qnn_Tensor_t * len(names))(*[c.tensors[n] for n in names])
    outputs = (q.Qnn_Tensor_t * len(outs))(*[c.tensors[n] for n in outs])
    cfg = q.Qnn_OpConfig_t()
    cfg.version = q.QNN_OPCONFIG_VERSION_1
    cfg.v1.name, cfg.v1.packageName, cfg.v1.typeName = b"op", b"qti.aisw", spec["type"].encode()
    cfg.v1.numOfParams, cfg.v1.params = len(spec["params"]), plist
    cfg.v1.numOfInputs, cfg.v1.inputTensors = len(names), ins
    cfg.v1.numOfOutputs, cfg.v1.outputTensors = len(outs), outputs
    c.keep += [plist, ins, outputs, cfg]
    return cfg


@pytest.fixture(scope="module")
def client():
    c = Client()
    yield c
    c.close()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(spec=op_config_st)
def test_op_configs_answer_a_documented_code(client, spec):
    """One op config in a fresh context: validate, create its tensors, add, finalize, execute (the examples are the
    same on every run: the suite's hypothesis profile is derandomized)."""
    c = client
    rng = np.random.default_rng(0)
    before = internal_errors()
    ctx, own = q.Qnn_ContextHandle_t(), c.context
    assert code(c.qi.contextCreate(c.backend, c.device, None, ctx)) == q.QNN_SUCCESS
    c.context, c.tensors = ctx, {}
    try:
        c.create_graph()
        tensors = {f"in{k}": x for k, x in enumerate(spec["inputs"])}
        tensors.update({f"out{k}": x for k, x in enumerate(spec["outputs"])})
        for name, x in tensors.items():
            kind = R if name.startswith("out") else S if x.get("static") else W
            data = _data(x, rng) if kind == S else None
            c.tensors[name] = c.describe(name, kind, x["dims"], x["dtype"], x["qp"], data)
        names = [n for n in tensors if n.startswith("in")]
        outs = [n for n in tensors if n.startswith("out")]
        cfg = _op_config(c, spec, names, outs)
        validated = code(c.qi.backendValidateOpConfig(c.backend, cfg))
        assert validated in VALIDATE
        created = [code(c.qi.tensorCreateGraphTensor(c.graph, c.tensors[n])) for n in tensors]
        assert set(created) <= CREATE
        if any(created):
            assert validated != q.QNN_SUCCESS          # validation decodes the same tensors
            return
        added = code(c.qi.graphAddNode(c.graph, _op_config(c, spec, names, outs)))
        assert added in ADD
        assert (added == q.QNN_SUCCESS) == (validated == q.QNN_SUCCESS), (validated, added)
        if added != q.QNN_SUCCESS:
            return
        finalized = code(c.qi.graphFinalize(c.graph, None, None))
        assert finalized == q.QNN_SUCCESS, q.error_string(finalized)
        feeds = {n: _data(tensors[n], rng) for n in names if not tensors[n].get("static")}
        got = c.execute(feeds, {n: (tensors[n]["dims"], tensors[n]["dtype"]) for n in outs})
        assert all(v.shape == tuple(tensors[n]["dims"]) for n, v in got.items())
    finally:
        c.context = own
        assert code(c.qi.contextFree(ctx, None)) == q.QNN_SUCCESS
        assert internal_errors() == before
