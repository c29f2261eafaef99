"""onnxruntime's EPContext model over an npurt context binary: the ONNX file onnxruntime's QNN execution provider
loads instead of building the graph (one `com.microsoft` `EPContext` node, `main_context=1`,
`source="QNNExecutionProvider"`), as onnxruntime's own EPContext generation writes it. The node's inputs and outputs
are the binary's graph I/O (`tensor_specs`: the EP checks their byte sizes only, so convert with
`--qnn-io-layout nchw` for the NCHW data onnxruntime users feed). `npurt convert --epcontext` writes one."""
from __future__ import annotations

from typing import Any

import onnx
from onnx import TensorProto, helper

from npurt.errors import ErrorCode, NpuError
from npurt.qnn import constants as C
from npurt.qnn.graph import tensor_specs
from npurt.soc import get_profile

_ONNX_TYPE = {C.QNN_DATATYPE_FLOAT_32: TensorProto.FLOAT, C.QNN_DATATYPE_FLOAT_16: TensorProto.FLOAT16,
              C.QNN_DATATYPE_SFIXED_POINT_8: TensorProto.INT8, C.QNN_DATATYPE_UFIXED_POINT_8: TensorProto.UINT8}
"""The ONNX element type of a graph I/O tensor of each QNN data type `npurt convert --qnn-io` gives."""


def epcontext_model(compiled: Any, binary: bytes | str, name: str = "npurt") -> onnx.ModelProto:
    """The EPContext model of `compiled` (a `CompiledModel` for an HTP SoC): `binary` is the context binary's bytes
    (embed_mode 1, the bytes in the node) or its path relative to the EPContext model's folder (embed_mode 0)."""
    if not get_profile(compiled.soc).vtcm_size:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"an EPContext model wraps a QNN HTP context binary: compile for "
                                                   f"an HTP SoC (sm8550, ...), not {compiled.soc}")
    ins, outs = tensor_specs(compiled)
    embed = isinstance(binary, bytes)
    node = helper.make_node("EPContext", [s.name for s in ins], [s.name for s in outs], name=f"{name}_ctx",
                            domain="com.microsoft", main_context=1, embed_mode=int(embed),
                            source="QNNExecutionProvider", ep_cache_context=binary, partition_name=name,
                            ep_sdk_version="2.40")
    info = [helper.make_tensor_value_info(s.name, _ONNX_TYPE[s.data_type], list(s.dims)) for s in ins + outs]
    graph = helper.make_graph([node], f"{name}_ctx", info[:len(ins)], info[len(ins):])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                   helper.make_opsetid("com.microsoft", 1)])
