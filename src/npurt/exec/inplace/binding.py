"""What in-place steps need from the executor at bind: the tensors' storage, their slot views, constant values, and
scratch buffers shared by all steps."""
from __future__ import annotations

import math

import numpy as np

from npurt.memory.mapping import typed_view


class StepBinding:
    """Storage, slot views, constant values and shared scratch for `prepare`."""

    def __init__(self, storage: dict, views: dict, constants: dict) -> None:
        self.storage = storage
        self.views = views
        self.constants = constants          # name -> decoded float32 array (cached weights), else absent
        self._shared: dict[str, np.ndarray] = {}
        self.tables: dict[str, tuple[str, np.ndarray]] = {}   # unary LUT outputs: name -> (input name, table)

    def slot(self, name: str) -> np.ndarray:
        st = self.storage[name]
        raw, off = self.views[name]
        return typed_view(raw, st.dtype.numpy_dtype, st.dims, off)

    def _grow(self, key: str, nbytes: int) -> np.ndarray:
        """A flat byte buffer of at least `nbytes`, one per key, shared by all steps. It grows by at least 2x, so
        the buffers left to earlier (smaller) steps add up to less than the final one: native scratch stays
        within a few times the largest step's need, never a copy of all activations."""
        buf = self._shared.get(key)
        if buf is None or buf.size < nbytes:
            buf = self._shared[key] = np.empty(max(nbytes, 2 * (buf.size if buf is not None else 0), 64), np.uint8)
        return buf

    def padded(self, shape: tuple) -> np.ndarray:
        """A float32 buffer of `shape` for a padded conv input, shared by all steps: each step fills its own
        border on every run (the interior is rewritten anyway)."""
        n = math.prod(shape)
        return self._grow("padded", 4 * n)[:4 * n].view(np.float32).reshape(shape)

    def scratch(self, n: int) -> np.ndarray:
        """A float32 scratch shared by all steps, for per-step temporaries (conv results, accumulators)."""
        return self._grow("scratch", 4 * n)[:4 * n].view(np.float32)

    def scratch2(self, n: int) -> np.ndarray:
        """A second float32 scratch (im2col columns, depthwise tap products)."""
        return self._grow("scratch2", 4 * n)[:4 * n].view(np.float32)

    def typed_scratch(self, dtype: np.dtype, n: int) -> np.ndarray:
        """A scratch of `n` elements of `dtype` shared by all steps (stored-type staging of conv outputs)."""
        dt = np.dtype(dtype)
        return self._grow("typed", n * dt.itemsize)[:n * dt.itemsize].view(dt)
