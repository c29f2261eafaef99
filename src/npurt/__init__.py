"""npurt: an NPU runtime in Python with the memory model of RKNN and QNN HTP, running ONNX on the CPU."""
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
