"""What in-place steps need from the executor at bind: the tensors' storage, their slot views, constant values, and
the executor's temp memory (`npurt.exec.temp`), shared by all steps."""
from __future__ import annotations

import math
from typing import Callable

import numpy as np

from npurt.exec.temp import TempMemory
from npurt.memory.mapping import typed_view


class StepBinding:
    """Storage, slot views, constant values and the executor's temp memory for `prepare`."""

    def __init__(self, storage: dict, views: dict, constants: dict, temp: TempMemory,
                 codes: Callable[[str], tuple | None] | None = None) -> None:
        self.storage = storage
        self.views = views
        self.constants = constants          # name -> decoded float32 array (cached weights), else absent
        self.temp = temp
        self.tables: dict[str, tuple[str, np.ndarray]] = {}   # unary LUT outputs: name -> (input name, table)
        self._codes = codes

    def weight_codes(self, name: str) -> tuple[np.ndarray, np.ndarray, int | None] | None:
        """(integer codes, scales, quantisation axis) of cached constant `name` when it is stored as quantised int8
        (value = codes * scale: the stored int8 codes, or int16 code - zero point for asymmetric weights), else
        None."""
        if self._codes is None or name not in self.constants:
            return None
        return self._codes(name)

    def slot(self, name: str) -> np.ndarray:
        st = self.storage[name]
        raw, off = self.views[name]
        return typed_view(raw, st.dtype.numpy_dtype, st.dims, off)

    def padded(self, shape: tuple) -> np.ndarray:
        """A float32 buffer of `shape` for a padded conv input, shared by all steps: each step fills its own
        border on every run (the interior is rewritten anyway)."""
        return self.temp.take("padded", np.float32, math.prod(shape)).reshape(shape)

    def scratch(self, n: int) -> np.ndarray:
        """A float32 scratch shared by all steps, for per-step temporaries (conv results, accumulators); the
        same region as the generic path's slot conversions."""
        return self.temp.take("float32", np.float32, n)

    def scratch2(self, n: int) -> np.ndarray:
        """A second float32 scratch (the numpy reference's tap products and partial sums)."""
        return self.temp.take("float32b", np.float32, n)

    def typed_scratch(self, dtype: np.dtype, n: int) -> np.ndarray:
        """A scratch of `n` elements of `dtype` shared by all steps (stored-type staging of conv outputs, int8
        pair-table indices)."""
        return self.temp.take("stored", dtype, n)
