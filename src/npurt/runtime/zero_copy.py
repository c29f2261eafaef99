"""The zero-copy path of a `Context`: binding device memory to inputs and outputs (`bind`), and what the runtime
does around a run for bound memory (cache maintenance of runtime-known memory, check-mode reports, conversions of
memory bound in a non-native format through runtime-owned staging buffers).

A mixin of `npurt.runtime.context.Context`: it uses the context's compiled model, device, options, busy guard and
binding tables (`_in_bind`, `_out_bind`), and sets `io_mode` to "zero_copy".
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from npurt.errors import ErrorCode, Hinted, NpuError
from npurt.memory import SyncMode
from npurt.model.attrs import TensorAttr
from npurt.runtime import convert
from npurt.runtime.binding import IoBinding, MemRef, overlaps


class ZeroCopyPath:
    """`bind` / `bindings` and the zero-copy run hooks (see the module doc)."""

    _in_bind: list[IoBinding | None]
    _out_bind: list[IoBinding | None]
    compiled: Any
    device: Any
    options: Any

    def _resolve(self, attr: TensorAttr) -> tuple[bool, int]:
        names_in = list(self.compiled.graph.inputs)
        names_out = list(self.compiled.graph.outputs)
        if attr.name in names_in:
            return True, names_in.index(attr.name)
        if attr.name in names_out:
            return False, names_out.index(attr.name)
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"the attr names no input or output of the model: {attr.name!r} "
                                                   f"(inputs {names_in}, outputs {names_out})")

    def bind(self, ref: MemRef, attr: TensorAttr) -> tuple[bool, int]:
        """Bind `ref` to the input or output that `attr.name` names (zero-copy path). `attr` is a queried attr,
        possibly with `type` / `fmt` / `w_stride` / `pass_through` edited: the native format binds the memory
        directly; another format is converted by the runtime around each run. Returns (is_input, index)."""
        with self._busy("set_io_mem"):
            self._require_runnable("set_io_mem")
            self._require_io_mode_not("general")
            if self.options.internal_outside and self._internal_ref is None and self.internal_capacity:
                raise NpuError(ErrorCode.INVALID_ARGUMENT, "internal memory must be set before input / output memory "
                                                           "(the context was created with internal_outside)",
                               hint="internal_before_io")
            ref.require_alive(f"tensor {attr.name!r}")
            if self._internal_ref is not None and overlaps(ref.keys(), self._internal_ref.keys()):
                raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tensor {attr.name!r}: this memory is the context's "
                                                           f"internal memory; inputs and outputs need their own")
            is_input, index = self._resolve(attr)
            native = (self.compiled.native_input_attrs if is_input else self.compiled.native_output_attrs)[index]
            shape = self.input_shape(index) if is_input else self.output_shape(index)
            convert.check_format(attr, native, shape, is_input)
            need = convert.required_bytes(attr, native, shape, is_input)
            if ref.size < need:
                side = "input" if is_input else "output"
                raise NpuError(ErrorCode.INVALID_ARGUMENT,
                               f"{side}({native.name}) memory size must be: {need}, but is: {ref.size}")
            staging = None
            if not (attr.pass_through or convert.same_format(attr, native)):
                staging = self.device.alloc(max(native.size_with_stride, 1), owner=self.name,
                                            name=f"staging-{native.name}", cacheable=False)
            binding = IoBinding(index, is_input, ref, dataclasses.replace(attr, dims=list(attr.dims)), native, shape,
                                staging)
            table = self._in_bind if is_input else self._out_bind
            self._drop_binding(table[index])
            table[index] = binding
            self.io_mode = "zero_copy"
            self._dirty = True
            return is_input, index

    @staticmethod
    def _drop_binding(binding: IoBinding | None) -> None:
        if binding is not None and binding.staging is not None and binding.staging.alive:
            binding.staging.free()

    def _unbind_all(self) -> None:
        """Forget every binding, freeing the staging buffers the runtime allocated for them."""
        for table in (self._in_bind, self._out_bind):
            for i, b in enumerate(table):
                self._drop_binding(b)
                table[i] = None

    def bindings(self) -> tuple[list[IoBinding | None], list[IoBinding | None]]:
        """The current zero-copy bindings (inputs, outputs)."""
        return list(self._in_bind), list(self._out_bind)

    def _zero_copy_before_run(self) -> None:
        """Before a run: the runtime's flush of runtime-known input memory (unless disabled), check-mode reports
        of external inputs the CPU changed without a sync, and conversion of inputs bound in another format."""
        device = self.device
        for b in self._in_bind:
            buf = b.ref.buffer
            if b.ref.runtime_known and self.options.flush_inputs:
                buf.sync(SyncMode.TO_DEVICE)
            elif device.coherence == "check" and buf.cpu_written_since_sync():
                msg = Hinted(f"coherence: input({b.native.name}) buffer {buf.name or 'buffer'}#{buf.handle} "
                             f"(0x{buf.dev_addr:x}) was written by the CPU after its last sync to device: the run "
                             f"reads stale data on the board; sync it to the device first", hint="input_not_synced")
                self.coherence_violations.append(msg)
                self._log("warning", msg)
            if b.staging is not None:
                convert.pack_user_input(b.user, b.native, b.ref.device_u8(), b.staging.device_view(np.uint8),
                                        b.shape, *convert.normalisation(self.compiled, b.index))

    def _zero_copy_after_run(self) -> None:
        """After a run: conversion of outputs bound in another format, then the runtime's invalidate of
        runtime-known output memory (unless disabled); every output is marked as written by the device."""
        for b in self._out_bind:
            if b.staging is not None:
                convert.write_user_output(b.user, b.native, b.staging.device_view(np.uint8), b.ref.device_u8(),
                                          b.shape)
            buf = b.ref.buffer
            buf.note_device_write()
            if b.ref.runtime_known and self.options.invalidate_outputs:
                buf.sync(SyncMode.FROM_DEVICE)
