"""A QNN graph-building client in Python, as onnxruntime's QNN EP drives the graph API: `Client` makes
`Qnn_Tensor_t` (APP_WRITE / APP_READ / NATIVE / STATIC, float or fixed point with per-tensor / per-axis
scale/offset) and `Qnn_OpConfig_t` (scalar and tensor params), calls contextCreate / graphCreate /
tensorCreateGraphTensor / graphAddNode / graphFinalize / graphExecute, and keeps every ctypes object alive.

`quant(x)` gives the uint8 scale/offset of an array's range (as the EP's QDQ models carry them) so tests can compare
with onnxruntime running the matching QDQ ONNX model.
"""
from __future__ import annotations

import ctypes

import numpy as np

import npurt.qnn as q

from helpers.qnn import ok

_QNN_TYPES = {np.dtype(np.float32): q.QNN_DATATYPE_FLOAT_32, np.dtype(np.float16): q.QNN_DATATYPE_FLOAT_16,
              np.dtype(np.int32): q.QNN_DATATYPE_INT_32, np.dtype(np.uint32): q.QNN_DATATYPE_UINT_32,
              np.dtype(np.int64): q.QNN_DATATYPE_INT_64}
FIXED = {np.dtype(np.uint8): q.QNN_DATATYPE_UFIXED_POINT_8, np.dtype(np.int8): q.QNN_DATATYPE_SFIXED_POINT_8,
         np.dtype(np.uint16): q.QNN_DATATYPE_UFIXED_POINT_16, np.dtype(np.int32): q.QNN_DATATYPE_SFIXED_POINT_32}


def quant(lo: float, hi: float) -> tuple[float, int]:
    """uint8 (scale, QNN offset) covering [lo, hi] (and 0): float = (q + offset) * scale."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    scale = (hi - lo) / 255.0 or 1.0
    zp = int(round(-lo / scale))
    return float(np.float32(scale)), -zp


class Client:
    """One backend + device + context; graphs built in it; `close()` frees everything."""

    def __init__(self, soc: str = "sm8550") -> None:
        self.qi = q.interface("fastrpc", soc=soc)
        self.backend, self.device, self.context = q.Qnn_BackendHandle_t(), q.Qnn_DeviceHandle_t(), \
            q.Qnn_ContextHandle_t()
        ok(self.qi.backendCreate(None, None, self.backend))
        ok(self.qi.deviceCreate(None, None, self.device))
        ok(self.qi.contextCreate(self.backend, self.device, None, self.context))
        self.keep: list = []
        self.graph = None
        self.tensors: dict[str, q.Qnn_Tensor_t] = {}

    def close(self) -> None:
        self.qi.contextFree(self.context, None)
        self.qi.deviceFree(self.device)
        self.qi.backendFree(self.backend)

    # -- tensors ---------------------------------------------------------------------------------------
    def describe(self, name: str, kind: int, dims, dtype=np.float32, qp=None, data=None, axis=None,
                 qnn_type: int | None = None) -> q.Qnn_Tensor_t:
        """A Qnn_Tensor_t (version 2) as a client fills it; `qp`: (scale, offset) or lists for per-axis."""
        t = q.Qnn_Tensor_t()
        t.version = q.QNN_TENSOR_VERSION_2
        v = t.v2
        v.name = name.encode()
        v.type = kind
        v.dataFormat = q.QNN_TENSOR_DATA_FORMAT_DENSE
        dt = np.dtype(dtype)
        v.dataType = qnn_type if qnn_type is not None else (FIXED[dt] if qp is not None else _QNN_TYPES[dt])
        if qp is None:
            v.quantizeParams.encodingDefinition = q.QNN_DEFINITION_UNDEFINED
            v.quantizeParams.quantizationEncoding = q.QNN_QUANTIZATION_ENCODING_UNDEFINED
        elif axis is None:
            v.quantizeParams.encodingDefinition = q.QNN_DEFINITION_DEFINED
            v.quantizeParams.quantizationEncoding = q.QNN_QUANTIZATION_ENCODING_SCALE_OFFSET
            v.quantizeParams.scaleOffsetEncoding.scale, v.quantizeParams.scaleOffsetEncoding.offset = qp
        else:
            pairs = (q.Qnn_ScaleOffset_t * len(qp[0]))(*[q.Qnn_ScaleOffset_t(s, o) for s, o in zip(*qp)])
            self.keep.append(pairs)
            v.quantizeParams.encodingDefinition = q.QNN_DEFINITION_DEFINED
            v.quantizeParams.quantizationEncoding = q.QNN_QUANTIZATION_ENCODING_AXIS_SCALE_OFFSET
            enc = v.quantizeParams.axisScaleOffsetEncoding
            enc.axis, enc.numScaleOffsets = axis, len(qp[0])
            enc.scaleOffset = ctypes.cast(pairs, ctypes.POINTER(q.Qnn_ScaleOffset_t))
        dims_arr = (ctypes.c_uint32 * len(dims))(*dims)
        self.keep.append(dims_arr)
        v.rank = len(dims)
        v.dimensions = ctypes.cast(dims_arr, ctypes.POINTER(ctypes.c_uint32))
        v.memType = q.QNN_TENSORMEMTYPE_RAW
        if data is not None:
            arr = np.ascontiguousarray(data, dtype=dt)
            self.keep.append(arr)
            v.clientBuf.data = arr.ctypes.data
            v.clientBuf.dataSize = arr.nbytes
        return t

    def tensor(self, name: str, kind: int, dims, dtype=np.float32, qp=None, data=None, axis=None,
               expect: int = q.QNN_SUCCESS) -> q.Qnn_Tensor_t:
        """tensorCreateGraphTensor of a described tensor; checks the returned code is `expect`."""
        t = self.describe(name, kind, dims, dtype, qp, data, axis)
        assert q.qnn_error_code(self.qi.tensorCreateGraphTensor(self.graph, t)) == expect
        if expect == q.QNN_SUCCESS:
            self.tensors[name] = t
        return t

    def static(self, name: str, values: np.ndarray, dtype=None, qp=None, axis=None) -> q.Qnn_Tensor_t:
        arr = np.asarray(values)
        return self.tensor(name, q.QNN_TENSOR_TYPE_STATIC, arr.shape, dtype or arr.dtype, qp, arr, axis)

    # -- ops -------------------------------------------------------------------------------------------
    def op(self, name: str, op_type: str, inputs: list[str], outputs: list[str], **params) -> q.Qnn_OpConfig_t:
        """A Qnn_OpConfig_t over created tensors; params: int / float / bool scalars, numpy arrays as tensors."""
        plist = (q.Qnn_Param_t * max(len(params), 1))()
        for k, (pname, value) in enumerate(params.items()):
            p = plist[k]
            p.name = pname.encode()
            if isinstance(value, np.ndarray):
                p.paramType = q.QNN_PARAMTYPE_TENSOR
                p.tensorParam = self.describe(f"{name}_{pname}", q.QNN_TENSOR_TYPE_STATIC, value.shape,
                                              value.dtype, data=value)
            else:
                p.paramType = q.QNN_PARAMTYPE_SCALAR
                if isinstance(value, bool):
                    p.scalarParam.dataType, p.scalarParam.bool8Value = q.QNN_DATATYPE_BOOL_8, int(value)
                elif isinstance(value, int):
                    p.scalarParam.dataType, p.scalarParam.uint32Value = q.QNN_DATATYPE_UINT_32, value
                else:
                    p.scalarParam.dataType, p.scalarParam.floatValue = q.QNN_DATATYPE_FLOAT_32, value
        ins = (q.Qnn_Tensor_t * max(len(inputs), 1))(*[self.tensors[n] for n in inputs])
        outs = (q.Qnn_Tensor_t * len(outputs))(*[self.tensors[n] for n in outputs])
        cfg = q.Qnn_OpConfig_t()
        cfg.version = q.QNN_OPCONFIG_VERSION_1
        cfg.v1.name, cfg.v1.packageName, cfg.v1.typeName = name.encode(), b"qti.aisw", op_type.encode()
        cfg.v1.numOfParams, cfg.v1.params = len(params), plist
        cfg.v1.numOfInputs, cfg.v1.inputTensors = len(inputs), ins
        cfg.v1.numOfOutputs, cfg.v1.outputTensors = len(outputs), outs
        self.keep += [plist, ins, outs, cfg]
        return cfg

    def node(self, name: str, op_type: str, inputs: list[str], outputs: list[str],
             expect: int = q.QNN_SUCCESS, **params) -> None:
        cfg = self.op(name, op_type, inputs, outputs, **params)
        assert q.qnn_error_code(self.qi.graphAddNode(self.graph, cfg)) == expect

    # -- graph -----------------------------------------------------------------------------------------
    def create_graph(self, name: str = "graph") -> None:
        self.graph = q.Qnn_GraphHandle_t()
        ok(self.qi.graphCreate(self.context, name.encode(), None, self.graph))

    def finalize(self) -> None:
        ok(self.qi.graphFinalize(self.graph, None, None))

    def execute(self, inputs: dict[str, np.ndarray], outputs: dict[str, tuple]) -> dict[str, np.ndarray]:
        """graphExecute with client buffers: `inputs` by name, `outputs` name -> (dims, dtype)."""
        ins = []
        for name, arr in inputs.items():
            t = q.Qnn_Tensor_t()
            ctypes.memmove(ctypes.addressof(t), ctypes.addressof(self.tensors[name]), ctypes.sizeof(t))
            arr = np.ascontiguousarray(arr)
            self.keep.append(arr)
            t.v2.clientBuf.data, t.v2.clientBuf.dataSize = arr.ctypes.data, arr.nbytes
            ins.append(t)
        outs, results = [], {}
        for name, (dims, dtype) in outputs.items():
            t = q.Qnn_Tensor_t()
            ctypes.memmove(ctypes.addressof(t), ctypes.addressof(self.tensors[name]), ctypes.sizeof(t))
            arr = np.zeros(dims, dtype)
            t.v2.clientBuf.data, t.v2.clientBuf.dataSize = arr.ctypes.data, arr.nbytes
            outs.append(t)
            results[name] = arr
        ok(self.qi.graphExecute(self.graph, ins, len(ins), outs, len(outs), None, None))
        return results
