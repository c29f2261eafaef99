"""onnxruntime's QNN EP over npurt's libraries: npurt context binaries of the small test models and the EPContext
models (one `com.microsoft` EPContext node) that point at them, as onnxruntime writes them."""
from __future__ import annotations

import functools
from pathlib import Path

import onnx

import npurt
from npurt.qnn.epcontext import epcontext_model
from npurt.qnn.graph import set_graph_io_layout

SOC = "sm8550"


@functools.lru_cache(maxsize=None)
def binary(model: bytes, layout: str = "nhwc") -> bytes:
    """The npurt context binary of ONNX `model` for SM8550 with 4-D graph I/O in `layout`."""
    compiled = npurt.compile(onnx.load_from_string(model), soc=SOC, progress=False)
    return set_graph_io_layout(compiled, layout).to_bytes()


def epcontext(folder: Path, model: bytes, layout: str = "nchw", embed: bool = False, name: str = "m") -> Path:
    """An EPContext model in `folder` over the npurt binary of `model` (embed_mode 1: the bytes in the node; 0: a
    file beside it): `npurt.qnn.epcontext.epcontext_model`, what `npurt convert --epcontext` writes."""
    data = binary(model, layout)
    if not embed:
        (folder / f"{name}_qnn.bin").write_bytes(data)
    m = epcontext_model(npurt.load_compiled(data), data if embed else f"{name}_qnn.bin", name)
    path = folder / f"{name}_ctx.onnx"
    onnx.save(m, path)
    return path
