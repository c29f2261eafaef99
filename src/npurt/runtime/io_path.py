"""The I/O path of a `Context`: the object that owns the memory the executor reads its inputs from and writes its
outputs to, and what happens to that memory around each run. `npurt.runtime.general.GeneralIo` (copying: user
arrays in and out of runtime buffers) and `npurt.runtime.zero_copy.ZeroCopyIo` (memory the user binds) are the two;
a context holds at most one, for its whole life, and drives it only through this interface.
"""
from __future__ import annotations

from typing import Any

import numpy as np


class IoPath:
    """What a context asks of its I/O path. `generation` changes whenever the memory behind `executor_views`
    changes (the context then binds the executor again)."""

    name = ""                    # shown in the context's repr

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx          # the owning context: its current model, device, options and log
        self.generation = 0

    def check_ready(self) -> None:
        """Fail (NpuError) unless every input and output has live memory for the next run."""
        raise NotImplementedError

    def executor_views(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """(inputs, outputs): the native uint8 views the executor binds."""
        raise NotImplementedError

    def before_run(self) -> None:
        """Cache maintenance and conversions of the inputs, just before the executor runs."""

    def after_run(self) -> None:
        """Conversions and cache maintenance of the outputs, just after the executor ran."""

    def bindings(self) -> tuple[list[Any], list[Any]]:
        """The zero-copy bindings (inputs, outputs); None where nothing is bound."""
        return [None] * self._ctx.n_inputs, [None] * self._ctx.n_outputs

    def reset(self) -> None:
        """The model switched to another shape set: forget what was set or bound for the old one."""

    def owned_buffers(self) -> list[Any]:
        """The live device buffers this path allocated (counted in the context's DMA total)."""
        raise NotImplementedError

    def release(self) -> None:
        """Free every buffer this path allocated (idempotent); memory the user gave stays the user's."""
        raise NotImplementedError
