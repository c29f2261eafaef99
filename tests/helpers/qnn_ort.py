"""onnxruntime's QNN EP over npurt's libraries: npurt context binaries of the small test models and the EPContext
models (one `com.microsoft` EPContext node) that point at them, as onnxruntime writes them."""
from __future__ import annotations

import functools
from pathlib import Path

import onnx
from onnx import TensorProto, helper

import npurt
from npurt.qnn.graph import set_graph_io_layout, tensor_specs

SOC = "sm8550"


@functools.lru_cache(maxsize=None)
def binary(model: bytes, layout: str = "nhwc") -> bytes:
    """The npurt context binary of ONNX `model` for SM8550 with 4-D graph I/O in `layout`."""
    compiled = npurt.compile(onnx.load_from_string(model), soc=SOC, progress=False)
    return set_graph_io_layout(compiled, layout).to_bytes()


def epcontext(folder: Path, model: bytes, layout: str = "nchw", embed: bool = False, name: str = "m") -> Path:
    """An EPContext model in `folder` over the npurt binary of `model` (embed_mode 1: the bytes in the node; 0: a
    file beside it), its I/O declared as the binary's graph I/O (the EP checks byte sizes only)."""
    data = binary(model, layout)
    ins, outs = tensor_specs(npurt.load_compiled(data))
    if not embed:
        (folder / f"{name}_qnn.bin").write_bytes(data)
    node = helper.make_node("EPContext", [s.name for s in ins], [s.name for s in outs], name=f"{name}_ctx",
                            domain="com.microsoft", main_context=1, embed_mode=int(embed),
                            source="QNNExecutionProvider", ep_cache_context=data if embed else f"{name}_qnn.bin",
                            partition_name=name, ep_sdk_version="2.40")
    info = [helper.make_tensor_value_info(s.name, TensorProto.FLOAT, list(s.dims)) for s in ins + outs]
    graph = helper.make_graph([node], f"{name}_ctx", info[:len(ins)], info[len(ins):])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    path = folder / f"{name}_ctx.onnx"
    onnx.save(m, path)
    return path
