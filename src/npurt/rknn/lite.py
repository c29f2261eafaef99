"""`RKNNLite`: a drop-in for the vendor's `rknnlite.api.RKNNLite` (rknn-toolkit-lite2 2.3.2), so that
existing Lite programs run unchanged off the board — on `.npurt` files or plain `.onnx` models.

    from npurt.rknn.lite import RKNNLite          # instead of: from rknnlite.api import RKNNLite
    rknn = RKNNLite()
    rknn.load_rknn("model.npurt")                 # or "model.onnx" (compiled on the fly, fp16)
    rknn.init_runtime(core_mask=RKNNLite.NPU_CORE_0)
    outputs = rknn.inference(inputs=[img])        # img: uint8 NHWC (the Lite default); float32 outputs
    rknn.release()

Behaviour as the vendor's: every call returns 0 / -1 (`inference` the list of outputs or None) and logs an
`E <call>: ...` line on failure; outputs are dequantised float32 in the model's logical (ONNX) layout; 4-D
inputs are NHWC unless `data_format` says 'nchw' (a 3-D HWC image gets its batch axis, as the toolkit's
`inference` adds it), and an array of another shape is refused (`fit_input`); `data_type` defaults to the array's
own dtype (uint8 images, float32 tensors); a dynamic-shape model takes its shape from the input arrays (no
set-shape call); `core_mask` takes only the NPU_CORE_* values, and only on multi-core SoCs (others warn and ignore
it).

Built on the runtime `Context` general path (`set_inputs` / `run` / `get_outputs`), not a second runtime. Unlike the
vendor's (whose memory grows with every inference, a known complaint), `inference()` keeps no per-call state: memory
does not grow with the number of inferences, and `release()` (or garbage collection of the object) frees everything.

npurt's choices where the vendor is silent: `target=None` means the SoC a `.npurt` file was compiled for (an
ONNX model: `$NPURT_SOC`, else rk3588); `async_mode=True` is accepted and runs synchronously (a warning says so);
`get_frame_id=True` returns `(outputs, frame_id)` with frame ids counting inferences from 1.
"""
from __future__ import annotations

import os
import re
import sys
import time
import weakref
from typing import Any

import numpy as np

import npurt.forksafe as forksafe
from npurt.errors import ErrorCode, NpuError
from npurt.model.file_format import is_npurt, refuse_vendor_model

_DTYPES = {"int8": "int8", "uint8": "uint8", "int16": "int16", "float16": "float16", "float32": "float32"}


class VendorClass:
    """What the vendor's Python classes (RKNNLite and the toolkit's RKNN) share: the `core_mask` values and
    `get_sdk_version` (both keep their context in `_ctx` and log through `_log`)."""

    NPU_CORE_AUTO = 0x0
    NPU_CORE_0 = 0x1
    NPU_CORE_1 = 0x2
    NPU_CORE_2 = 0x4
    NPU_CORE_0_1 = 0x3
    NPU_CORE_0_1_2 = 0x7
    NPU_CORE_ALL = 0xFFFF
    _CORE_MASKS = (0x0, 0x1, 0x2, 0x4, 0x3, 0x7, 0xFFFF)

    def get_sdk_version(self) -> str | None:
        """The runtime and driver versions, in the vendor's text layout (None before init_runtime)."""
        if self._ctx is None:
            self._log("E", "get_sdk_version", "Runtime environment is not inited, please call init_runtime first!")
            return None
        return sdk_version_text(self._ctx)


class RKNNLite(VendorClass):
    """The vendor Lite class's API over an npurt runtime Context (see the module doc)."""

    def __init__(self, verbose: bool = False, verbose_file: str | None = None) -> None:
        self.verbose = bool(verbose)
        self.verbose_file = verbose_file
        self._model: bytes | None = None
        self._ctx: Any = None
        self._frame_id = 0
        self._calls = forksafe.lock()          # held by inference() and release()

    # --- logging ----------------------------------------------------------------------------------------------------
    def _log(self, level: str, where: str, message: str) -> None:
        line = log_line(level, where, message)
        if level in ("E", "W") or self.verbose:
            print(line, file=sys.stderr)
        if self.verbose_file:
            try:
                with open(self.verbose_file, "a", encoding="utf-8") as f:
                    f.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {line}\n")
            except OSError:
                pass


    # --- model and runtime ---------------------------------------------------------------------------------------
    def load_rknn(self, path: str) -> int:
        """Read the model file (`.npurt` or `.onnx`; a vendor `.rknn` is not readable off the board). 0 / -1."""
        if not isinstance(path, (str, bytes, os.PathLike)):     # open() would take an int as an fd and close it
            self._log("E", "load_rknn", f"Catch exception when loading RKNN model [{path!r}]: the path must be a "
                                        f"str or os.PathLike, got {type(path).__name__}")
            return -1
        try:
            with open(path, "rb") as f:
                data = f.read()
        except (OSError, TypeError) as exc:
            self._log("E", "load_rknn", f"Catch exception when loading RKNN model [{path}]: {exc}")
            return -1
        if not data:
            self._log("E", "load_rknn", f"The RKNN model [{path}] is empty")
            return -1
        try:
            refuse_vendor_model(data, os.fsdecode(path))
        except NpuError as exc:
            self._log("E", "load_rknn", exc.message)
            return -1
        self._model = data
        self._log("I", "load_rknn", f"Load RKNN model {path} done ({len(data)} bytes)")
        return 0

    def _target_soc(self, target: str | None) -> str | None:
        if target is not None:
            from npurt.soc import PROFILES
            if not isinstance(target, str) or target.lower() not in PROFILES:
                raise NpuError(ErrorCode.INVALID_ARGUMENT, f"target {target!r} is not supported, use one of "
                                                           f"{sorted(PROFILES)}")
            return PROFILES[target.lower()].name
        if self._model is not None and is_npurt(self._model):
            from npurt.model.compiled import read_compiled
            return read_compiled(self._model).soc
        return None

    def init_runtime(self, target: str | None = None, device_id: str | None = None, async_mode: bool = False,
                     core_mask: int = VendorClass.NPU_CORE_AUTO) -> int:
        """Create the runtime for the loaded model on `target` (default: see the module doc); 0 / -1."""
        if self._model is None:
            self._log("E", "init_runtime", "Model is not loaded yet, this interface should be called after "
                                           "load_rknn!")
            return -1
        if isinstance(core_mask, bool) or not isinstance(core_mask, int) or core_mask not in self._CORE_MASKS:
            self._log("E", "init_runtime", f"Not support core mask: {core_mask!r}; use one of the "
                                           f"RKNNLite.NPU_CORE_* values")
            return -1
        from npurt.runtime import Context
        try:
            soc = self._target_soc(target)
            ctx = Context(self._model, soc=soc, log=runtime_sink(self), name="rknnlite")
        except NpuError as exc:
            self._log("E", "init_runtime", f"RKNN Runtime init failed: {exc}")
            return -1
        if device_id is not None:
            self._log("I", "init_runtime", f"device_id {device_id!r} ignored: npurt runs on the host")
        try:
            if core_mask != self.NPU_CORE_AUTO:
                if ctx.profile.npu_cores < 2:
                    self._log("W", "init_runtime", f"core_mask is only valid on multi-core NPUs (RK3588/RK3576); "
                                                   f"{ctx.profile.name} ignores it")
                else:
                    ctx.set_core_mask(core_mask)
        except NpuError as exc:
            ctx.destroy()
            self._log("E", "init_runtime", f"set core mask failed: {exc}")
            return -1
        if async_mode:
            self._log("W", "init_runtime", "async_mode is accepted but npurt runs inference synchronously")
        self.release()                          # the runtime this one replaces (kept if this call fails)
        self._ctx, self._frame_id = ctx, 0
        self._log("I", "init_runtime", f"RKNN Runtime ready on {ctx.profile.name} (npurt)")
        return 0

    # --- inference ----------------------------------------------------------------------------------------------
    def inference(self, inputs: Any, data_type: Any = None, data_format: Any = None,
                  inputs_pass_through: Any = None, get_frame_id: bool = False) -> Any:
        """Run the model on `inputs` (a list of arrays, one per model input): the outputs as float32 arrays in
        the model's logical layout, or None on failure (an `E inference:` line says why)."""
        with self._calls:                       # one inference at a time; release() waits for it
            if self._ctx is None:
                self._log("E", "inference", "Runtime environment is not inited, please call init_runtime to init "
                                            "it first!")
                return None
            try:
                outputs = infer(self._ctx, inputs, data_type, data_format, inputs_pass_through)
            except (NpuError, ValueError, TypeError) as exc:
                self._log("E", "inference", str(exc))
                return None
            self._frame_id += 1
            if get_frame_id:
                return outputs, self._frame_id
            return outputs

    # --- information ------------------------------------------------------------------------------------------------
    def list_support_target_platform(self, rknn_model: str | None = None) -> dict[str, list[str]]:
        """The SoCs npurt emulates; with `rknn_model` (a `.npurt` file) also the one it was compiled for."""
        from npurt.soc import PROFILES
        result = {"support_target_platform": sorted(PROFILES)}
        if rknn_model is not None:
            try:
                with open(rknn_model, "rb") as f:
                    head = f.read()
                if is_npurt(head):
                    from npurt.model.compiled import read_compiled
                    result["filled_target_platform"] = [read_compiled(head).soc]
                else:
                    result["filled_target_platform"] = sorted(PROFILES)       # ONNX: compiled for any of them
            except (OSError, NpuError) as exc:
                self._log("E", "list_support_target_platform", f"cannot read {rknn_model!r}: {exc}")
        print("Target platforms supported by this model:" if rknn_model else "Supported target platforms:")
        for key, value in result.items():
            print(f"  {key}: {', '.join(value)}")
        return result

    def list_devices(self) -> list[str]:
        """Devices to run on: npurt's emulated device (the host), named after the default SoC."""
        from npurt.soc import get_profile
        devices = [f"npurt-{get_profile(None).name}"]
        print("*" * 25)
        print("all device(s):")
        for d in devices:
            print(f"{d}  (npurt, host CPU)")
        print("*" * 25)
        return devices

    # --- teardown ---------------------------------------------------------------------------------------------
    def release(self) -> None:
        """Free the runtime (context, weights, internal and I/O memory). Safe to call twice; never raises (as the
        vendor's): an inference running in another thread is waited for first."""
        with self._calls:
            ctx = self._ctx
            if ctx is None:
                return
            try:
                if not ctx.destroyed:
                    ctx.destroy(wait=True)
            except NpuError as exc:             # a call of the context's own run: keep everything
                self._log("E", "release", str(exc))
                return
            self._ctx = None

    def __del__(self) -> None:
        try:
            self.release()
        except Exception:
            pass


def log_line(level: str, where: str, message: str) -> str:
    """`<level> <where>: <message>` as one line (a message quoting a multi-line value, e.g. an array's repr, is
    joined), so that each failure is exactly one line, as the vendor's classes print it."""
    text = re.sub(r"[ \t]*[\r\n]+[ \t]*", " ", str(message).strip())
    return f"{level} {where}: {text}"


def runtime_sink(owner: Any) -> Any:
    """A runtime Context's log sink that writes its lines as `RKNN:` lines through `owner._log`, holding `owner`
    weakly: a context that held its owner would keep both (and their device memory) alive until the cycle
    collector runs."""
    ref = weakref.ref(owner)

    def sink(level: str, message: str) -> None:
        obj = ref()
        if obj is not None:
            obj._log({"error": "E", "warning": "W"}.get(level, "I"), "RKNN", message)
    return sink


def sdk_version_text(ctx: Any) -> str:
    """`get_sdk_version()`'s text (the vendor's layout) for a runtime Context: npurt's API and driver versions."""
    from npurt.rknn.api_query import API_VERSION, DRV_VERSION
    return (f"RKNN VERSION:\n  API: {API_VERSION}\n"
            f"  DRV: rknn_server: none (npurt runs on the host), rknnrt: {API_VERSION}, driver: {DRV_VERSION}\n"
            f"  TARGET: {ctx.profile.name}")


def _per_input(value: Any, n: int, what: str) -> list[Any]:
    if value is None or isinstance(value, (str, bool, int, np.integer)):
        return [value] * n
    if not isinstance(value, (list, tuple, np.ndarray)) or np.ndim(value) != 1:
        raise ValueError(f"{what} must be one value or a list with one per input, got {type(value).__name__}")
    values = list(value)
    if len(values) != n:
        raise ValueError(f"{what} has {len(values)} entries, the model has {n} inputs")
    return values


def user_arrays(inputs: Any, n: int) -> list[np.ndarray]:
    """`inputs` as the vendor Python APIs take them (a list or tuple of arrays, one per model input; a bare array
    for one input) as numeric numpy arrays; ValueError naming the input that is not one."""
    if isinstance(inputs, np.ndarray):
        inputs = [inputs]
    if not isinstance(inputs, (list, tuple)):
        raise ValueError(f"inputs must be a list of numpy arrays (one per model input), got "
                         f"{type(inputs).__name__}")
    if len(inputs) != n:
        raise ValueError(f"{len(inputs)} inputs given, the model has {n}")
    arrays = []
    for i, x in enumerate(inputs):
        try:
            arr = np.asarray(x)
        except (ValueError, TypeError):
            arr = None
        if arr is None or arr.dtype.kind not in "biuf":
            raise ValueError(f"inputs[{i}] must be a numeric numpy array, got "
                             f"{type(x).__name__ if arr is None else f'{type(x).__name__} of {arr.dtype}'}")
        arrays.append(arr)
    return arrays


def input_layout(ctx: Any, arr: np.ndarray, fmt: str | None, index: int) -> str:
    """'nhwc' / 'nchw' for 4-D inputs (the Lite default NHWC; an array that only fits NCHW is NCHW)."""
    if arr.ndim != 4:
        return "undefined"
    if fmt is not None:
        fmt = str(fmt).lower()
        if fmt not in ("nhwc", "nchw"):
            raise ValueError(f"data_format must be 'nhwc' or 'nchw', got {fmt!r}")
        return fmt
    c = ctx.input_shape(index)[1]
    if arr.shape[1] == c and arr.shape[3] != c:
        return "nchw"
    return "nhwc"


def fit_input(ctx: Any, arr: np.ndarray, fmt: str | None, index: int) -> tuple[np.ndarray, str, tuple[int, ...]]:
    """(array, layout, logical ONNX-order shape) of user input `index`: a 3-D HWC image for a 4-D input gets its
    batch axis (as the toolkit's `inference` adds it); the shape must be the model's (one of its shape sets for a
    dynamic-shape model) in the layout given, else ValueError naming the input, the shape given and the one
    expected: the runtime reads only the bytes it needs, so a wrong shape would silently give wrong outputs."""
    given, want = tuple(arr.shape), ctx.input_shape(index)
    name = ctx.compiled.graph.inputs[index]
    if arr.ndim == 3 and len(want) == 4:
        arr = arr[None]                       # an HWC (or CHW) image: the batch axis, as the toolkit adds it
    if arr.ndim != len(want):
        raise ValueError(f"inputs[{index}] is {len(given)}-D {given}, the model's input {index} is {len(want)}-D "
                         f"{want}")
    layout = input_layout(ctx, arr, fmt, index)
    shape = (arr.shape[0], arr.shape[3], arr.shape[1], arr.shape[2]) if layout == "nhwc" else tuple(arr.shape)
    sets = [tuple(s[index]) for s in ctx.family.shape_sets] if ctx.family.dynamic else [tuple(want)]
    if shape not in sets:
        def as_given(s: tuple[int, ...], lay: str) -> tuple[int, ...]:
            return (s[0], s[2], s[3], s[1]) if lay == "nhwc" else s
        expected = " or ".join(str(as_given(s, layout)) for s in sets)
        if layout != "undefined":
            expected += f" ({layout.upper()}"
            expected += f"; {' or '.join(str(s) for s in sets)} with data_format='nchw')" if fmt is None else ")"
        raise ValueError(f"inputs[{index}] ({name!r}) has shape {given}, the model expects {expected}")
    return arr, layout, shape


def infer(ctx: Any, inputs: Any, data_type: Any = None, data_format: Any = None,
          inputs_pass_through: Any = None) -> list[np.ndarray]:
    """One inference on a runtime Context through its general path, with the vendor Python APIs' input rules
    (shared by `RKNNLite` and the toolkit face `npurt.toolkit.RKNN`): one array per input (a bare array for one
    input), `data_type` per input (default: the array's own dtype), 4-D inputs NHWC unless `data_format` says
    'nchw', a 3-D HWC image for a 4-D input gets its batch axis (as the toolkit's `inference` does), a dynamic-shape
    model switches to the arrays' shapes; the shapes must be the model's (`fit_input`), a pass-through input the
    native input's bytes. Float32 outputs in the logical layout; ValueError / NpuError on bad input."""
    from npurt.runtime import InputData
    from npurt.tensor import DType, Layout
    n = ctx.n_inputs
    arrays = user_arrays(inputs, n)
    types = _per_input(data_type, n, "data_type")
    fmts = _per_input(data_format, n, "data_format")
    through = _per_input(inputs_pass_through, n, "inputs_pass_through")
    if any(not (pt is None or isinstance(pt, (bool, int, np.integer)) and pt in (0, 1)) for pt in through):
        raise ValueError(f"inputs_pass_through must be 0 or 1 per input, got {inputs_pass_through!r}")
    items, shapes = [], []
    for i, (arr, dt, fmt, pt) in enumerate(zip(arrays, types, fmts, through)):
        if pt:
            native = ctx.compiled.native_input_attrs[i]
            if arr.nbytes != native.size_with_stride:
                raise ValueError(f"inputs[{i}] ({native.name!r}) with inputs_pass_through holds {arr.nbytes} bytes "
                                 f"{tuple(arr.shape)}, the model's native input is {native.size_with_stride} bytes "
                                 f"({native.type.value.upper()} {native.fmt.value} {list(native.dims)})")
            layout, shape = "undefined", ctx.input_shape(i)
        else:
            arr, layout, shape = fit_input(ctx, arr, fmt, i)
        if dt is None:
            if arr.dtype == np.float64:
                arr = arr.astype(np.float32)
            dt = arr.dtype.name
        elif isinstance(dt, type) and issubclass(dt, np.generic) or isinstance(dt, np.dtype):
            dt = np.dtype(dt).name                # np.uint8 for 'uint8'
        try:
            dtype = DType.parse(_DTYPES.get(dt.lower(), dt.lower()))
        except (AttributeError, NpuError):
            raise ValueError(f"data_type must be one of {list(_DTYPES)} (per input), got {data_type!r}" if
                             types[i] is not None else f"inputs[{i}] is {arr.dtype}: give data_type, one of "
                                                       f"{list(_DTYPES)}") from None
        if not pt and dtype.value in _DTYPES and arr.dtype != np.dtype(dtype.value):
            arr = arr.astype(dtype.value)         # the values are given as data_type: convert, not reinterpret
        shapes.append(shape)
        lay = {"nhwc": Layout.NHWC, "nchw": Layout.NCHW}.get(layout, Layout.UNDEFINED)
        items.append(InputData(i, arr, dtype, lay, pass_through=bool(pt)))
    if ctx.family.dynamic and not any(it.pass_through for it in items):
        current = [tuple(ctx.input_shape(i)) for i in range(n)]
        if [tuple(map(int, s)) for s in shapes] != current:
            ctx.set_input_shapes(shapes)
    ctx.set_inputs(items)
    ctx.run()
    return ctx.get_outputs(want_float=True)
