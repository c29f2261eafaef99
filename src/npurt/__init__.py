"""npurt: an NPU runtime in Python with the memory model of RKNN and QNN HTP, running ONNX on the CPU."""
from __future__ import annotations

from npurt.errors import ErrorCode, NpuError

__version__ = "0.1.0"

__all__ = ["ErrorCode", "NpuError", "__version__"]
