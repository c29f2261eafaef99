"""npurt: an NPU runtime in Python with the memory model of RKNN and QNN HTP, running ONNX on the CPU.

Layers, lowest first; each imports only the layers below it (`tests/test_layers.py` enforces the order):
  soc      SoC profiles as data: cores, SRAM, alignment, the vendor API support tables, the HTP profile
  memory   device buffers (fd, mapping, device address), DDR heap, SRAM, coherence, accounting
  tensor   element types, layouts (NCHW / NHWC / NC1HWC2), strides, conversions, quantisation
  plan     pure memory planning: tensor lifetimes in, offsets and placements out; one validator
  model    ONNX import, passes, calibration, CompileOptions, CompiledModel and its .npurt file
  exec     the kernels, the one node evaluator, the executor over bound memory, `npurt.compile`
  runtime  the vendor-neutral Context: loading, binding, general and zero-copy I/O, perf, logging
  rknn, qnn  the RKNN C-API and QNN HTP mirrors (vendor names, structs, status codes)
  api      the Pythonic layer: Session, DeviceTensor, reports, accuracy analysis
  capi, cli  the C face (headers, shared libraries over the mirrors) and the `npurt` commands
Base modules, importable by every layer: `errors`, `_version`, `files`, `_kernels` (the compiled kernels).
"""
from __future__ import annotations

from typing import Any

from npurt._version import __version__
from npurt.errors import ErrorCode, NpuError

__all__ = ["ErrorCode", "NpuError", "__version__", "accuracy_analysis", "compile", "load_compiled", "supported_ops"]

# Heavy layers (onnx, the kernels) load only when these are first used: `import npurt` stays light.
_LAZY = {
    "compile": ("npurt.exec.compile", "compile_model"),
    "load_compiled": ("npurt.model.compiled", "read_compiled"),
    "supported_ops": ("npurt.exec.compile", "supported_ops"),
    "CompiledModel": ("npurt.model.compiled", "CompiledModel"),
    "Session": ("npurt.api.session", "Session"),
    "accuracy_analysis": ("npurt.api.accuracy", "accuracy_analysis"),
    "DeviceTensor": ("npurt.api.tensor", "DeviceTensor"),
}


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'npurt' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value
