"""The zero-copy I/O path of a `Context`: device memory bound to inputs and outputs (`bind`), and what the runtime
does around a run for bound memory (cache maintenance of runtime-known memory, check-mode reports, conversions of
memory bound in a non-native format through runtime-owned staging buffers).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from npurt.errors import ErrorCode, Hinted, NpuError
from npurt.memory import SyncMode
from npurt.model.attrs import TensorAttr
from npurt.runtime import convert
from npurt.runtime.binding import IoBinding, MemRef
from npurt.runtime.io_path import IoPath


class ZeroCopyIo(IoPath):
    """The zero-copy path's state: one `IoBinding` (or None) per input and output (see the module doc)."""

    name = "zero_copy"

    def __init__(self, ctx: Any) -> None:
        super().__init__(ctx)
        self._inputs: list[IoBinding | None] = [None] * ctx.n_inputs
        self._outputs: list[IoBinding | None] = [None] * ctx.n_outputs

    def _resolve(self, attr: TensorAttr) -> tuple[bool, int]:
        names_in = list(self._ctx.compiled.graph.inputs)
        names_out = list(self._ctx.compiled.graph.outputs)
        if attr.name in names_in:
            return True, names_in.index(attr.name)
        if attr.name in names_out:
            return False, names_out.index(attr.name)
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"the attr names no input or output of the model: {attr.name!r} "
                                                   f"(inputs {names_in}, outputs {names_out})")

    def bind(self, ref: MemRef, attr: TensorAttr) -> IoBinding:
        """Bind `ref` to the input or output that `attr.name` names; returns the binding made. The native format
        binds the memory directly; another format gets a runtime-owned native staging buffer."""
        ctx = self._ctx
        is_input, index = self._resolve(attr)
        native = (ctx.compiled.native_input_attrs if is_input else ctx.compiled.native_output_attrs)[index]
        shape = ctx.input_shape(index) if is_input else ctx.output_shape(index)
        convert.check_format(attr, native, shape, is_input)
        need = convert.required_bytes(attr, native, shape, is_input)
        if ref.size < need:
            side = "input" if is_input else "output"
            raise NpuError(ErrorCode.INVALID_ARGUMENT,
                           f"{side}({native.name}) memory size must be: {need}, but is: {ref.size}")
        staging = None
        if not (attr.pass_through or convert.same_format(attr, native)):
            staging = ctx.device.alloc(max(native.size_with_stride, 1), owner=ctx.name,
                                       name=f"staging-{native.name}", cacheable=False)
        binding = IoBinding(index, is_input, ref, dataclasses.replace(attr, dims=list(attr.dims)), native, shape,
                            staging)
        table = self._inputs if is_input else self._outputs
        _drop(table[index])
        table[index] = binding
        self.generation += 1
        return binding

    def bindings(self) -> tuple[list[IoBinding | None], list[IoBinding | None]]:
        return list(self._inputs), list(self._outputs)

    def check_ready(self) -> None:
        names_in, names_out = self._ctx.compiled.graph.inputs, self._ctx.compiled.graph.outputs
        for i, b in enumerate(self._inputs):
            if b is None:
                raise NpuError(ErrorCode.INVALID_INPUT, f"input({names_in[i]}) tensor not attached to memory!")
            b.ref.require_alive(f"input({names_in[i]})")
        for i, b in enumerate(self._outputs):
            if b is None:
                raise NpuError(ErrorCode.INVALID_OUTPUT, f"output({names_out[i]}) tensor not attached to memory!")
            b.ref.require_alive(f"output({names_out[i]})")

    def executor_views(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        return [b.executor_view() for b in self._inputs], [b.executor_view() for b in self._outputs]

    def before_run(self) -> None:
        """The runtime's flush of runtime-known input memory (unless disabled), check-mode reports of external
        inputs the CPU changed without a sync, and conversion of inputs bound in another format."""
        ctx = self._ctx
        for b in self._inputs:
            buf = b.ref.buffer
            if b.ref.runtime_known and ctx.options.flush_inputs:
                buf.sync(SyncMode.TO_DEVICE)
            elif ctx.device.coherence == "check" and buf.cpu_written_since_sync():
                msg = Hinted(f"coherence: input({b.native.name}) buffer {buf.name or 'buffer'}#{buf.handle} "
                             f"(0x{buf.dev_addr:x}) was written by the CPU after its last sync to device: the run "
                             f"reads stale data on the board; sync it to the device first", hint="input_not_synced")
                ctx.coherence_violations.append(msg)
                ctx._log("warning", msg)
            if b.staging is not None:
                convert.pack_user_input(b.user, b.native, b.ref.device_u8(), b.staging.device_view(np.uint8),
                                        b.shape, *convert.normalisation(ctx.compiled, b.index))

    def after_run(self) -> None:
        """Conversion of outputs bound in another format, then the runtime's invalidate of runtime-known output
        memory (unless disabled); every output is marked as written by the device."""
        for b in self._outputs:
            if b.staging is not None:
                convert.write_user_output(b.user, b.native, b.staging.device_view(np.uint8), b.ref.device_u8(),
                                          b.shape)
            buf = b.ref.buffer
            buf.note_device_write()
            if b.ref.runtime_known and self._ctx.options.invalidate_outputs:
                buf.sync(SyncMode.FROM_DEVICE)

    def reset(self) -> None:
        """Forget every binding, freeing the staging buffers the runtime allocated for them."""
        for table in (self._inputs, self._outputs):
            for i, b in enumerate(table):
                _drop(b)
                table[i] = None
        self.generation += 1

    def owned_buffers(self) -> list[Any]:
        return [b.staging for b in self._inputs + self._outputs
                if b is not None and b.staging is not None and b.staging.alive]

    release = reset


def _drop(binding: IoBinding | None) -> None:
    """Free the staging buffer the runtime allocated for `binding`, if any."""
    if binding is not None and binding.staging is not None and binding.staging.alive:
        binding.staging.free()
