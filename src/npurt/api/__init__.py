"""npurt.api: the Pythonic layer — `Session` (one model on one device, a copying `run(x)` and a zero-copy path)
and `DeviceTensor` (an input or output in device memory, native layout and type). See `npurt.api.session`."""
from npurt.api.session import Session
from npurt.api.tensor import DeviceTensor

__all__ = ["DeviceTensor", "Session"]
