"""`Session`: the Pythonic layer (guide: docs/python.md) — one model on one device, with a copying path
that takes what onnxruntime takes and a zero-copy path over device tensors.

    import npurt
    with npurt.Session("model.onnx", soc="rk3588", sram=True) as s:   # or .npurt / CompiledModel / ModelProto
        y = s.run(x)                       # copying: ONNX layout and dtype in (NCHW float32), float32 out (a list)
        xin = s.input(0)                   # zero-copy: a DeviceTensor in native layout and type
        xin.write(frame, layout="nhwc")    # converts / pads once, straight into device memory
        s.run()                            # no copies
        out = s.output(0).numpy()          # a view of device memory (native layout); .read() gives float32
        print(s.memory_report())           # the RKNN_LOG_LEVEL=3-style table and totals

How it is built: a `npurt.runtime.Context` whose inputs and outputs are bound, once, to device buffers in the
native format (the vendor's zero-copy API with NATIVE attrs), so the executor reads and writes exactly the
memory the `DeviceTensor`s view. The copying path converts user arrays into those buffers and decodes the
outputs out of them — the same conversions as the general API, without a second set of buffers. Dynamic-shape
models: buffers are sized for the largest shape set; `run(x)` switches shape from the arrays' shapes
(`set_input_shapes` for the zero-copy path). Everything the session allocated is released by `close()`
(also on `with` exit); errors are `npurt.NpuError`.
"""
from __future__ import annotations

import itertools
import os
from typing import Any, Mapping, Sequence

import numpy as np

from npurt.api.tensor import DeviceTensor
from npurt.errors import ErrorCode, NpuError, bad_arguments_raise_npu_error
from npurt.memory import open_device
from npurt.model.options import CompileOptions
from npurt.model.sources import resolve_dataset, resolve_model
from npurt.runtime import Context, ContextOptions, MemRef

_ids = itertools.count(1)


def _prepare(model: Any, soc: str | None, options: CompileOptions,
             dynamic_input: Any = None) -> tuple[Any, str | None]:
    """(what `Context` loads, the SoC to open): compiles ONNX when compile options are given, loads `.npurt`
    files so that their own SoC is used when `soc` is None."""
    from npurt.model.compiled import CompiledModel, read_compiled
    from npurt.model.file_format import is_npurt
    if isinstance(model, (str, os.PathLike)):
        model = resolve_model(model)            # a file, or a zoo name as the CLI takes it
        try:
            compiled = is_npurt(model)
        except OSError as exc:
            raise NpuError(ErrorCode.INVALID_MODEL, f"cannot read model file {os.fspath(model)!r}: "
                                                    f"{exc.strerror}") from None
        if compiled:
            model = read_compiled(model)
    elif isinstance(model, (bytes, bytearray, memoryview)) and is_npurt(model):
        model = read_compiled(bytes(model))
    if isinstance(model, CompiledModel):
        if options.given():
            raise NpuError(ErrorCode.INVALID_ARGUMENT, "quantize/precision/mean/std and the int8 options apply to "
                                                       "ONNX models; this model is already compiled")
        return model, soc or model.soc
    if options.given():
        from npurt.exec.compile import compile_with
        quantize = resolve_dataset(options.quantize, model, input_shapes=options.input_shapes)  # "random": the CLI's
        options = options.replace(quantize=quantize)
        from npurt.runtime.loader import compile_family, dynamic_shape_sets
        shape_sets = dynamic_shape_sets(model, dynamic_input)
        if shape_sets:              # one compile per shape set; int8 with one calibration shared by all of them
            from npurt.soc import get_profile
            soc = get_profile(soc).name
            return compile_family(model, soc, shape_sets, options), soc
        return compile_with(model, options, soc, progress=False), soc
    return model, soc


_checked_prepare = bad_arguments_raise_npu_error(_prepare, "Session")


class Session:
    """A model loaded on an NPU device, ready to run (see the module doc for an example, docs/python.md for a guide).

    model: an ONNX path / bytes / `onnx.ModelProto`, a `.npurt` path / bytes, a `CompiledModel`, or a zoo name
    (`mobilenet_v1`, ...), resolved as the CLI resolves it (`npurt.model.sources`).
    soc: the SoC to emulate (None: a compiled model's own SoC, else `$NPURT_SOC`, else rk3588).
    sram: put the internal arena in the NPU SRAM first (rest in DDR), as RKNN_FLAG_ENABLE_SRAM.
    quantize, precision, mean, std, quantized_algorithm, float_layers: how an ONNX model is compiled, the fields of
    `npurt.model.options.CompileOptions` (documented there); a compiled model takes none of them.
    coherence: "coherent" (default), "strict" or "check" (see docs/coherence.md); dynamic_input: shape sets of a
    dynamic-shape ONNX model.
    """

    def __init__(self, model: Any, soc: str | None = None, *, sram: bool = False, quantize: Any = None,
                 precision: str | None = None, mean: Any = None, std: Any = None, coherence: str | None = None,
                 dynamic_input: Any = None, name: str = "", quantized_algorithm: str | None = None,
                 float_layers: Any = None) -> None:
        self.name = str(name) if name else f"session{next(_ids)}"
        self._closed = True
        self._in_bufs: list[Any] = []
        self._out_bufs: list[Any] = []
        self._device = None
        if model is None:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, "model is None: give an ONNX / .npurt path or bytes, a "
                                                       "ModelProto or a CompiledModel")
        if soc is not None and not isinstance(soc, str):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"soc must be a SoC name, got {soc!r}")
        options = CompileOptions(precision=precision, quantize=quantize, mean=mean, std=std,
                                 quantized_algorithm=quantized_algorithm, float_layers=float_layers)
        source, soc = _checked_prepare(model, soc, options, dynamic_input)
        self._ctx = Context(source, soc=soc, coherence=coherence, options=ContextOptions(sram=bool(sram)),
                            dynamic_input=dynamic_input, name=self.name)
        self._device = open_device(self._ctx.device.soc)      # the I/O buffers' own device reference
        self._closed = False
        try:
            self._allocate()
            self._bind_all()
        except BaseException:
            self.close()
            raise

    # --- memory and bindings ------------------------------------------------------------------------------------------
    def _allocate(self) -> None:
        ctx = self._ctx
        members = ctx.family.all()
        for is_input, count, bufs in ((True, ctx.n_inputs, self._in_bufs), (False, ctx.n_outputs, self._out_bufs)):
            side = "input" if is_input else "output"
            for i in range(count):
                size = max(getattr(m, f"native_{side}_attrs")[i].size_with_stride for m in members)
                bufs.append(ctx.device.alloc(max(int(size), 1), owner=self.name, name=f"{side}{i}"))

    def _bind_all(self) -> None:
        """Bind every input and output buffer in the current native format and wrap it in a DeviceTensor."""
        ctx, compiled = self._ctx, self._ctx.compiled
        self._inputs, self._outputs = [], []
        for i, buf in enumerate(self._in_bufs):
            attr = ctx.input_attr(i, "current_native")
            ctx.bind(MemRef(buf), attr)
            mean = compiled.mean[i] if compiled.mean else None
            std = compiled.std[i] if compiled.std else None
            self._inputs.append(DeviceTensor(buf, attr, ctx.input_shape(i), i, True, mean, std))
        for i, buf in enumerate(self._out_bufs):
            attr = ctx.output_attr(i, "current_native")
            ctx.bind(MemRef(buf), attr)
            self._outputs.append(DeviceTensor(buf, attr, ctx.output_shape(i), i, False))

    def _require_open(self) -> None:
        if self._closed:
            raise NpuError(ErrorCode.INVALID_CONTEXT, f"session {self.name} is closed")

    # --- introspection --------------------------------------------------------------------------------------------
    @property
    def context(self) -> Context:
        """The runtime `Context` underneath (for what the Pythonic layer does not cover)."""
        self._require_open()
        return self._ctx

    @property
    def soc(self) -> str:
        return self._ctx.device.soc

    @property
    def input_names(self) -> list[str]:
        return list(self._ctx.compiled.graph.inputs)

    @property
    def output_names(self) -> list[str]:
        return list(self._ctx.compiled.graph.outputs)

    @property
    def inputs(self) -> list[DeviceTensor]:
        self._require_open()
        return list(self._inputs)

    @property
    def outputs(self) -> list[DeviceTensor]:
        self._require_open()
        return list(self._outputs)

    def _pick(self, tensors: list[DeviceTensor], key: int | str, side: str) -> DeviceTensor:
        self._require_open()
        if isinstance(key, str):
            for t in tensors:
                if t.name == key:
                    return t
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"no {side} named {key!r} (have {[t.name for t in tensors]})")
        if isinstance(key, bool) or not isinstance(key, (int, np.integer)) or not 0 <= key < len(tensors):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{side} index {key!r} out of range (model has {len(tensors)})")
        return tensors[int(key)]

    def input(self, key: int | str = 0) -> DeviceTensor:
        """Input `key` (index or name) as a device tensor (zero-copy path)."""
        return self._pick(self._inputs, key, "input")

    def output(self, key: int | str = 0) -> DeviceTensor:
        """Output `key` (index or name) as a device tensor (a view of what the last run wrote)."""
        return self._pick(self._outputs, key, "output")

    # --- running ----------------------------------------------------------------------------------------------------
    def _as_list(self, inputs: Any) -> list[np.ndarray]:
        names = self.input_names
        if isinstance(inputs, Mapping):
            missing = [n for n in names if n not in inputs]
            extra = [k for k in inputs if k not in names]
            if missing or extra:
                raise NpuError(ErrorCode.INVALID_INPUT, f"inputs by name: missing {missing}, unknown {extra}")
            arrays = [inputs[n] for n in names]
        elif isinstance(inputs, (list, tuple)):
            arrays = list(inputs)
        else:
            arrays = [inputs]
        if len(arrays) != len(names):
            raise NpuError(ErrorCode.INVALID_INPUT, f"{len(arrays)} inputs given, the model has {len(names)} "
                                                    f"({names})")
        return [np.asarray(a) for a in arrays]

    def set_input_shapes(self, shapes: Sequence[Sequence[int]]) -> None:
        """Dynamic-shape models: switch to one declared shape set (logical ONNX-order shapes, one per input).
        The device tensors are re-made over the same memory; take `input()` / `output()` again."""
        self._require_open()
        shapes = [tuple(int(d) for d in s) for s in shapes]
        if shapes == [tuple(s) for s in (self._ctx.input_shape(i) for i in range(self._ctx.n_inputs))]:
            return
        self._ctx.set_input_shapes(shapes)
        self._bind_all()

    def run(self, inputs: Any = None) -> Any:
        """Run once.

        `run(x)` — the copying path: `x` is one array, a list in input order, or a dict by name, each in the ONNX
        model's layout (NCHW) and any numeric dtype; returns the outputs as float32 arrays in the ONNX layout (a
        list). `run()` — the zero-copy path: runs over what the input tensors hold, no copies; returns the output
        `DeviceTensor`s.
        """
        self._require_open()
        if inputs is None:
            self._ctx.run()
            return list(self._outputs)
        arrays = self._as_list(inputs)
        if self._ctx.family.dynamic:
            self.set_input_shapes([a.shape for a in arrays])
        for tensor, arr in zip(self._inputs, arrays):
            tensor.write(arr, layout="nchw")
        self._ctx.run()
        return [t.read() for t in self._outputs]

    def run_dict(self, inputs: Any) -> dict[str, np.ndarray]:
        """`run(inputs)` with the outputs as a dict by output name."""
        return dict(zip(self.output_names, self.run(inputs)))

    __call__ = run

    # --- reporting ----------------------------------------------------------------------------------------------------
    def memory_report(self) -> str:
        """The RKNN_LOG_LEVEL=3-style memory table (every tensor with its device address range, SRAM hits) and
        the totals: weight, internal, I/O, device memory allocated, SRAM, predicted RW amounts."""
        self._require_open()
        from npurt.api.report import format_memory_report
        return format_memory_report(self._ctx, self._in_bufs, self._out_bufs)

    def mem_size(self) -> Any:
        """The context's memory figures (what RKNN_QUERY_MEM_SIZE reports) as `npurt.runtime.MemSize`."""
        self._require_open()
        return self._ctx.mem_size()

    # --- teardown ---------------------------------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Release the context (weights, internal arena, device reference) and the I/O memory. Idempotent. A run
        in another thread is waited for first, so nothing is freed under it; close() from inside the session's
        own run is BUSY with nothing released."""
        ctx = getattr(self, "_ctx", None)
        if ctx is not None and not ctx.destroyed:
            ctx.destroy(wait=True)                # unbinds the I/O memory, which is then free to go
        self._closed = True
        for buf in self._in_bufs + self._out_bufs:
            if buf.alive:
                buf.free()
        self._in_bufs, self._out_bufs = [], []
        device, self._device = getattr(self, "_device", None), None
        if device is not None:
            device.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{self.soc}"
        graph = getattr(getattr(self, "_ctx", None), "compiled", None)
        return f"<Session {self.name} {graph.graph.name if graph is not None else '?'} {state}>"
