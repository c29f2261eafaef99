"""`RKNN`: rknn-toolkit2's Python class (`rknn.api.RKNN`, 2.3.2) on npurt, so the vendor's conversion and evaluation
scripts run unchanged on x86 (guide: docs/toolkit.md; `npurt exec script.py` runs one with the vendor's module names).

    from npurt.toolkit import RKNN          # or, under `npurt exec`: from rknn.api import RKNN
    rknn = RKNN()
    rknn.config(mean_values=[[0, 0, 0]], std_values=[[255, 255, 255]], target_platform="rk3588")
    rknn.load_onnx(model="model.onnx")
    rknn.build(do_quantization=True, dataset="dataset.txt")
    rknn.export_rknn("model.rknn")          # npurt's compiled model (see below)
    rknn.init_runtime()                     # emulates target_platform
    outputs = rknn.inference(inputs=[img])  # a list of float32 arrays
    rknn.release()

As the toolkit: the same method and argument names and defaults; 0 on success and -1 on failure with an
`E <method>: ...` line on stderr (and nothing else changed); `inference` returns a list of numpy arrays (None on
failure); a missing ONNX file raises. A thin translation: `config` fills a `CompileOptions`, `build` is
`npurt.compile`, `init_runtime` a runtime `Context`, `inference` the RKNNLite input rules, `accuracy_analysis` is
`npurt.api.accuracy`, `eval_memory` the context's real memory plan.

Where npurt differs (stated, never silent): `export_rknn` writes npurt's compiled model whatever the file name (npurt's
`librknnrt.so` and `RKNNLite` load it; a board's librknnrt cannot); `load_rknn` reads npurt's files (a vendor
`.rknn` gets one clear line) and such a model runs on the emulated SoC (the toolkit's simulator refuses it);
`init_runtime(target=...)` emulates that SoC instead of connecting to a board; `eval_perf` reports the NPU times
npurt's timing model predicts (labelled as predictions) and the CPU time measured on the host
(`npurt.toolkit.perf`); only w8a8 / float16 builds;
`rknn_batch_size` is at most 128; `codegen`, encrypted export and non-ONNX loaders return -1.
"""
from __future__ import annotations

import functools
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from npurt.errors import NpuError
from npurt.rknn.lite import VendorClass, fit_input, infer, log_line, runtime_sink, user_arrays

PLATFORMS = ("rv1103", "rv1103b", "rv1106", "rv1106b", "rv1126b", "rk2118", "rk3562", "rk3566", "rk3568", "rk3576",
             "rk3588")
"""The toolkit's target_platform names (2.3.2); npurt emulates each of them."""
QUANTIZED_DTYPES = ("w8a8", "asymmetric_quantized-8")
ALGORITHMS = ("normal", "kl_divergence", "mmse")
METHODS = ("layer", "channel")
NPURT_OPTIMIZE = "npurt_optimize"
"""config's npurt extra (not a toolkit argument): the quantisation techniques of an int8 build."""
MAX_BATCH = 128
"""The largest rknn_batch_size npurt builds (a bound so that a mistyped batch fails at once, not in the memory)."""

class ToolkitError(Exception):
    """A failure a method reports as the toolkit does (an `E <method>:` line and -1)."""


def _status(failed: Any = -1, name: str | None = None) -> Callable:
    """Turn an NpuError / ToolkitError / ValueError / OSError leaving a method into its `E <method>: ...` line and
    `failed` (the toolkit's -1, or None for inference)."""
    def wrap(fn: Callable) -> Callable:
        where = name or fn.__name__

        @functools.wraps(fn)
        def run(self: "RKNN", *args: Any, **kwargs: Any) -> Any:
            try:
                return fn(self, *args, **kwargs)
            except NpuError as exc:
                self._log("E", where, exc.message)
            except (ToolkitError, ValueError, TypeError) as exc:
                self._log("E", where, str(exc))
            except OSError as exc:
                self._log("E", where, f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc))
            return failed
        return run
    return wrap


def _number(x: Any, what: str, values: Any) -> float:
    """One mean / std value: a real number, finite in float32 (the runtime normalises in float32)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise ToolkitError(f"{what} must hold numbers, got {x!r} in {values!r}")
    try:
        value = float(x)
    except OverflowError:
        value = float("inf")
    with np.errstate(over="ignore"):
        finite = bool(np.isfinite(np.float32(value)))
    if not finite:
        raise ToolkitError(f"{what} must hold finite numbers, got {x!r} in {values!r}")
    return value


def _norm_lists(values: Any, what: str) -> list[list[float]] | None:
    """mean_values / std_values as one list per input (a flat list of numbers is one input's); ToolkitError naming
    the argument for anything that is not finite numbers (a std of 0, or so small that 1/std overflows float32)."""
    if values is None:
        return None
    if not isinstance(values, (list, tuple)) or not values:
        raise ToolkitError(f"{what} must be a list of lists (one per input), got {values!r}")
    if not any(isinstance(v, (list, tuple, np.ndarray)) for v in values):
        values = [values]
    out = []
    for v in values:
        if not isinstance(v, (list, tuple, np.ndarray)) or np.ndim(v) != 1 or not len(v):
            raise ToolkitError(f"{what} must be a list of lists (one per input), got {values!r}")
        out.append([_number(x, what, values) for x in v])
    if what == "std_values":
        with np.errstate(divide="ignore", over="ignore"):
            if any(x == 0 or not np.isfinite(np.float32(1) / np.float32(x)) for s in out for x in s):
                raise ToolkitError(f"std_values must not contain 0 (nor a value so small that 1/std overflows "
                                   f"float32), got {values!r}")
    return out


def _platform(value: Any, what: str) -> str:
    """A SoC name argument (target_platform, target) as one of PLATFORMS, lower case; ToolkitError naming it."""
    if not isinstance(value, str) or value.lower() not in PLATFORMS:
        raise ToolkitError(f"{what} {value!r} is not supported, the supported platforms are {list(PLATFORMS)}")
    return value.lower()


def _path(value: Any, what: str) -> str:
    """A file or folder path argument as a str; ToolkitError naming the argument for anything else (None, a
    number, an empty string)."""
    if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
        raise ToolkitError(f"{what} must be a file path, got {value!r}")
    return os.fsdecode(os.fspath(value))


def _whole(value: Any, what: str, most: int | None = None) -> int:
    """A count argument: a whole number from 1 (to `most`); ToolkitError naming the argument otherwise (2.5, 0,
    True, a string, NaN)."""
    if isinstance(value, (float, np.floating)) and np.isfinite(value) and float(value).is_integer():
        value = int(value)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1 or \
            most is not None and value > most:
        raise ToolkitError(f"{what} must be a whole number from 1{f' to {most}' if most else ''}, got {value!r}")
    return int(value)


def _batch_size(value: Any) -> int | None:
    """build's / hybrid_quantization_step1's rknn_batch_size: None or a whole number from 1 to MAX_BATCH."""
    return None if value is None else _whole(value, "rknn_batch_size", MAX_BATCH)


def _checked_config(given: dict[str, Any]) -> dict[str, Any]:
    """`config`'s arguments checked and normalised (mean / std lists, lower-case platform); ToolkitError naming
    the argument that is wrong. Also what hybrid_quantization_step2 applies to the configuration step1 recorded."""
    given = dict(given)
    means, stds = _norm_lists(given["mean_values"], "mean_values"), _norm_lists(given["std_values"], "std_values")
    if means is not None and stds is not None and len(means) != len(stds):
        raise ToolkitError(f"mean_values has {len(means)} entries and std_values {len(stds)}: give one list per "
                           f"input in both")
    if given["target_platform"] is not None:
        given["target_platform"] = _platform(given["target_platform"], "target_platform")
    for key, allowed in (("quantized_algorithm", ALGORITHMS), ("quantized_method", METHODS)):
        if not isinstance(given[key], str) or given[key] not in allowed:
            raise ToolkitError(f"{key} {given[key]!r} is not supported, use one of {list(allowed)}")
    if str(given["quantized_dtype"]).lower() not in QUANTIZED_DTYPES:
        raise ToolkitError(f"quantized_dtype {given['quantized_dtype']!r} is not supported by npurt: it builds "
                           f"{QUANTIZED_DTYPES[0]} (int8 weights and activations) or float16")
    if str(given["float_dtype"]).lower() != "float16":
        raise ToolkitError(f"float_dtype {given['float_dtype']!r} is not supported, only 'float16'")
    level = given["optimization_level"]
    if isinstance(level, bool) or not isinstance(level, (int, np.integer)) or level not in (0, 1, 2, 3):
        raise ToolkitError(f"optimization_level must be 0, 1, 2 or 3, got {level!r}")
    if given["dynamic_input"] is not None:
        from npurt.runtime.loader import parse_shape_sets
        parse_shape_sets(given["dynamic_input"])
    from npurt.model.options import parse_techniques
    try:
        techniques = parse_techniques(given.get(NPURT_OPTIMIZE))
    except NpuError as exc:
        raise ToolkitError(f"{NPURT_OPTIMIZE}: {exc.message}") from None
    given.update(mean_values=means, std_values=stds, **{NPURT_OPTIMIZE: ",".join(techniques) or None})
    return given


class RKNN(VendorClass):
    """rknn-toolkit2's `RKNN` class on npurt (see the module doc)."""

    def __init__(self, verbose: bool = False, verbose_file: str | None = None) -> None:
        self.verbose = verbose
        self.verbose_file = verbose_file
        self._config: dict[str, Any] = _config_defaults()
        self._onnx: bytes | None = None          # the loaded ONNX model (sub-graph selection applied)
        self._model_path: str | None = None
        self._compiled: Any = None               # the built (or load_rknn'd) CompiledModel
        self._from_file = False                  # True after load_rknn: no ONNX behind the model
        self._ctx: Any = None
        self._custom_ops: dict[str, Any] = {}    # op type -> the user's custom op object (reg_custom_op)
        self._built: Any = None                 # (CompileOptions, batch) of the last build: init_runtime's other SoCs
        self._eval_mem = False
        self._frame_id = 0

    # --- logging ----------------------------------------------------------------------------------------------------
    def _log(self, level: str, where: str, message: str) -> None:
        """`E` and `W` lines go to stderr; `I` lines only when verbose; every line to verbose_file when verbose."""
        line = log_line(level, where, message)
        if level in ("E", "W") or self.verbose:
            print(line, file=sys.stderr)
        if self.verbose and self.verbose_file and os.path.isdir(os.path.dirname(os.path.abspath(self.verbose_file))):
            with open(self.verbose_file, "a", encoding="utf-8") as f:
                f.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {line}\n")

    # --- config -----------------------------------------------------------------------------------------------------
    @_status()
    def config(self, mean_values: Any = None, std_values: Any = None, quantized_dtype: str = "w8a8",
               quantized_algorithm: str = "normal", quantized_method: str = "channel",
               quantized_hybrid_level: int = 0, target_platform: str | None = None, quant_img_RGB2BGR: Any = False,
               float_dtype: str = "float16", optimization_level: int = 3, custom_string: str | None = None,
               remove_weight: bool = False, compress_weight: bool = False, inputs_yuv_fmt: Any = None,
               single_core_mode: bool = False, dynamic_input: Any = None, model_pruning: bool = False,
               op_target: Any = None, quantize_weight: bool = False, remove_reshape: bool = False,
               sparse_infer: bool = False, enable_flash_attention: bool = False,
               auto_hybrid_cos_thresh: float = 0.98, auto_hybrid_euc_thresh: float | None = None,
               **kwargs: Any) -> int:
        """Set the build options (the toolkit's names and defaults); 0, or -1 with nothing changed. npurt's extra,
        `npurt_optimize` ("cle,bias,adaround" or a list; off by default), runs those quantisation techniques on the
        float model before an int8 build's calibration (`npurt.model.techniques`)."""
        given = dict(locals())
        for key in ("self", "kwargs", "__class__"):
            given.pop(key, None)
        given[NPURT_OPTIMIZE] = kwargs.pop(NPURT_OPTIMIZE, None)
        config = _checked_config(given)
        for key in kwargs:
            self._log("W", "config", f"unknown argument {key!r} ignored")
        self._config = config
        return 0

    # --- loading ----------------------------------------------------------------------------------------------------
    def load_onnx(self, model: str, inputs: Any = None, input_size_list: Any = None, input_initial_val: Any = None,
                  outputs: Any = None) -> int:
        """Load an ONNX model (`inputs` + `input_size_list` set input shapes or cut the graph at those tensors,
        `outputs` cuts it at those, `input_initial_val` fixes inputs to constants); 0 / -1. A missing file raises,
        as in the toolkit."""
        if not isinstance(model, (str, os.PathLike)) or not os.fspath(model):
            self._log("E", "load_onnx", f"model must be the path of an .onnx file, got {model!r}")
            return -1
        if not os.path.isfile(os.fspath(model)):
            self._log("E", "load_onnx", f"Model file {model} not exists!")
            raise ValueError(f"Model file {model} not exists!")
        return self._load_onnx(model, inputs, input_size_list, input_initial_val, outputs)

    @_status(name="load_onnx")
    def _load_onnx(self, model: str, inputs: Any, input_size_list: Any, input_initial_val: Any, outputs: Any) -> int:
        from npurt.toolkit.model_edit import edit_onnx
        onnx_bytes = edit_onnx(model, inputs, input_size_list, input_initial_val, outputs)
        self._check_normalization(onnx_bytes)
        self._onnx, self._model_path = onnx_bytes, os.fspath(model)
        self._compiled, self._from_file = None, False
        if self._config["mean_values"] is None and self._config["std_values"] is None:
            self._log("W", "load_onnx", "The config.mean_values is None, zeros will be set for input 0!")
            self._log("W", "load_onnx", "The config.std_values is None, ones will be set for input 0!")
        self._log("I", "load_onnx", f"Loading : {model} done")
        return 0

    def _input_specs(self, onnx_bytes: bytes | None = None) -> list[tuple[str, tuple[int, ...]]]:
        from npurt.model.sources import input_specs
        model = self._onnx if onnx_bytes is None else onnx_bytes
        return [(name, shape) for name, shape, _ in input_specs(model, dynamic_ok=True)]

    def _check_normalization(self, onnx_bytes: bytes) -> None:
        specs = self._input_specs(onnx_bytes)
        for what in ("mean_values", "std_values"):
            values = self._config[what]
            if values is None:
                continue
            if len(values) != len(specs):
                raise ToolkitError(f"config.{what} has {len(values)} entries, the model has {len(specs)} inputs "
                                   f"({[n for n, _ in specs]})")
            for (name, shape), v in zip(specs, values):
                channels = shape[1] if len(shape) >= 2 and shape[1] > 0 else 1
                if len(v) not in (1, channels):
                    raise ToolkitError(f"The length of config.{what} for input {name!r} is {len(v)}, the input has "
                                       f"{channels} channels (shape {list(shape)})")

    def _not_onnx(self, what: str) -> int:
        self._log("E", what, "npurt loads ONNX models only (load_onnx): export the model to ONNX first")
        return -1

    def load_tensorflow(self, tf_pb: str, inputs: Any = None, input_size_list: Any = None, outputs: Any = None,
                        input_is_nchw: bool = False) -> int:
        return self._not_onnx("load_tensorflow")

    def load_caffe(self, model: str, blobs: str | None = None, input_name: Any = None) -> int:
        return self._not_onnx("load_caffe")

    def load_tflite(self, model: str, input_is_nchw: bool = False) -> int:
        return self._not_onnx("load_tflite")

    def load_darknet(self, model: str, weight: str) -> int:
        return self._not_onnx("load_darknet")

    def load_pytorch(self, model: str, input_size_list: Any) -> int:
        return self._not_onnx("load_pytorch")

    @_status()
    def reg_custom_op(self, custom_op: Any) -> int:
        """Register a custom op (before load_onnx): an object with `op_type` (the ONNX node's op type, e.g.
        'cstSoftmax') and `compute(node, inputs) -> [outputs]` (float32 numpy arrays). The build's calibration and
        the runtime both run it; `rknn.api.custom_op.get_node_attr(node, name)` reads the node's attributes."""
        op_type = getattr(custom_op, "op_type", None)
        if not isinstance(op_type, str) or not op_type or not callable(getattr(custom_op, "compute", None)):
            raise ToolkitError("custom_op must have an op_type string and a compute(node, inputs) method")
        self._custom_ops[op_type] = custom_op
        return 0

    # --- build ------------------------------------------------------------------------------------------------------
    def _soc(self, target: Any = None) -> str:
        """The SoC name of `target` (one of PLATFORMS), else of config's target_platform (None: npurt's default)."""
        from npurt.soc import get_profile
        if target is None:
            return get_profile(self._config["target_platform"]).name
        return get_profile(_platform(target, "target")).name

    def _options(self, precision: str, samples: Any = None, **more: Any) -> Any:
        from npurt.model.options import CompileOptions
        custom = {t: _compile_time(op) for t, op in self._custom_ops.items()} or None
        if precision == "int8" and samples is not None:
            more.setdefault("optimize", self._config[NPURT_OPTIMIZE])
        if precision == "int8":
            more.setdefault("weight_method", self._config["quantized_method"])
        return CompileOptions(precision=precision, quantize=samples, mean=self._config["mean_values"],
                              std=self._config["std_values"], custom_ops=custom,
                              quantized_algorithm=self._config["quantized_algorithm"] if precision == "int8" else None,
                              **more)

    def _samples(self, dataset: Any, batch: int | None = None) -> list[list[np.ndarray]]:
        from npurt.toolkit.dataset import per_input_flags, read_dataset
        specs = self._input_specs()
        dyn = self._config["dynamic_input"]
        shapes = [list(s) for s in dyn[0]] if dyn else [list(s) for _, s in specs]
        bgr = per_input_flags(self._config["quant_img_RGB2BGR"], len(specs))
        return read_dataset(_path(dataset, "dataset"), shapes, bgr, batch)

    def _compile(self, options: Any, soc: str, batch: int | None = None) -> Any:
        """The loaded model compiled with `options` for `soc` (every shape set of a dynamic_input model; the batch
        axis `batch` for rknn_batch_size)."""
        onnx_bytes = self._onnx
        if batch and int(batch) != 1:
            from npurt.toolkit.model_edit import with_batch
            onnx_bytes = with_batch(onnx_bytes, int(batch))
        dyn = self._config["dynamic_input"]
        if dyn:
            from npurt.runtime.loader import compile_family
            return compile_family(onnx_bytes, soc, dyn, options)
        from npurt.exec.compile import compile_with
        return compile_with(onnx_bytes, options, soc, progress=False)

    def _require_loaded(self) -> None:
        if self._onnx is None:
            raise ToolkitError("The model has not been loaded, please load it first (load_onnx)!")

    @_status()
    def build(self, do_quantization: bool = True, dataset: str | None = None, rknn_batch_size: int | None = None,
              auto_hybrid: bool = False) -> int:
        """Compile the loaded model: int8 calibrated on `dataset` (the toolkit's dataset.txt), or float16; 0 / -1."""
        self._require_loaded()
        rknn_batch_size = _batch_size(rknn_batch_size)
        if auto_hybrid:
            self._log("W", "build", "auto_hybrid is not supported by npurt and is ignored; use "
                                    "hybrid_quantization_step1/2 to keep layers in float")
        if do_quantization:
            if dataset is None:
                raise ToolkitError("The dataset is None, please set dataset when do_quantization is True!")
            options = self._options("int8", self._samples(dataset, rknn_batch_size))
        else:
            if dataset is not None:
                self._log("W", "build", "The dataset is ignored when do_quantization is False")
            options = self._options("fp16")
        soc = self._soc()
        if self._config["target_platform"] is None:
            self._log("W", "build", f"config.target_platform is None: building for {soc} (npurt's default)")
        compiled = self._compile(options, soc, rknn_batch_size)
        self._compiled, self._from_file, self._built = compiled, False, (options, rknn_batch_size)
        self._log("I", "build", f"Build done: {compiled.precision} model for {compiled.soc}")
        return 0

    # --- files ------------------------------------------------------------------------------------------------------
    @_status()
    def export_rknn(self, export_path: str, **kwargs: Any) -> int:
        """Write the built model: npurt's compiled model file whatever the name (see the module doc); 0 / -1."""
        if self._compiled is None:
            raise ToolkitError("RKNN model does not exist, please load & build model first!")
        self._compiled.save(_path(export_path, "export_path"))
        self._log("I", "export_rknn", f"{export_path}: npurt's compiled model (npurt's librknnrt.so and RKNNLite "
                                      f"load it; a board's librknnrt does not)")
        return 0

    def export_encrypted_rknn_model(self, input_model: str, output_model: str | None = None,
                                    crypt_level: int = 1) -> int:
        self._log("E", "export_encrypted_rknn_model", "not supported by npurt (its model files are not encrypted)")
        return -1

    @_status()
    def load_rknn(self, path: str) -> int:
        """Load a compiled model written by export_rknn (npurt's format); a vendor `.rknn` is refused; 0 / -1."""
        from npurt.model.compiled import read_compiled
        from npurt.model.file_format import is_npurt, refuse_vendor_model
        path = _path(path, "path")
        if not os.path.isfile(path):
            raise ToolkitError(f"The model {path} does not exist!")
        data = Path(path).read_bytes()
        refuse_vendor_model(data, path)
        if not is_npurt(data):
            raise ToolkitError(f"{path} is not a model written by export_rknn (npurt's compiled model)")
        self._compiled, self._from_file, self._onnx = read_compiled(data), True, None
        return 0

    # --- runtime ----------------------------------------------------------------------------------------------------
    @_status()
    def init_runtime(self, target: str | None = None, device_id: str | None = None, perf_debug: bool = False,
                     eval_mem: bool = False, async_mode: bool = False, core_mask: int = VendorClass.NPU_CORE_AUTO,
                     fallback_prior_device: str = "cpu") -> int:
        """Load the model on an emulated NPU: `target` None emulates the model's target_platform, a SoC name that
        SoC (no board is connected); 0 / -1."""
        from npurt.runtime import Context, ContextOptions
        if self._compiled is None:
            raise ToolkitError("Model is not loaded yet, this interface should be called after load_rknn or build!")
        if isinstance(core_mask, bool) or not isinstance(core_mask, int) or core_mask not in self._CORE_MASKS:
            raise ToolkitError(f"Not support core mask: {core_mask!r}; use one of the RKNN.NPU_CORE_* values")
        compiled = self._compiled
        soc = self._soc(target) if target is not None else compiled.soc
        if soc != compiled.soc and not self._from_file:
            options, batch = self._built
            compiled = self._compile(options, soc, batch)        # the same build, for that SoC
        ctx = Context(compiled, soc=soc, options=ContextOptions(collect_perf=bool(perf_debug)),
                      log=runtime_sink(self), name="rknn-toolkit")
        for op_type, op in self._custom_ops.items():
            ctx.custom_ops[op_type] = _run_time(op)
        try:
            if core_mask != self.NPU_CORE_AUTO:
                if ctx.profile.npu_cores < 2:
                    self._log("W", "init_runtime", f"core_mask is only valid on RK3588/RK3576; {soc} ignores it")
                else:
                    ctx.set_core_mask(core_mask)
        except BaseException:
            ctx.destroy()
            raise
        if device_id is not None:
            self._log("I", "init_runtime", f"device_id {device_id!r} ignored: npurt emulates {soc} on the host")
        if async_mode:
            self._log("W", "init_runtime", "async_mode is not supported and is ignored")
        self._release_runtime()
        self._ctx, self._eval_mem, self._frame_id = ctx, bool(eval_mem), 0
        return 0

    def _require_runtime(self) -> None:
        if self._ctx is None:
            raise ToolkitError("Runtime environment is not inited, please call init_runtime to init it first!")

    @_status(failed=None)
    def inference(self, inputs: Any, data_format: Any = None, inputs_pass_through: Any = None,
                  get_frame_id: bool = False) -> Any:
        """Run the model: a list of float32 arrays in the model's (ONNX) output shapes, or None on failure.
        `inputs`: one array per input (uint8 / float, NHWC by default for 4-D inputs, 'nchw' per `data_format`;
        a 3-D HWC image gets its batch axis); `inputs_pass_through` 1 skips mean/std for that input."""
        self._require_runtime()
        if inputs_pass_through is not None:
            inputs = self._undo_normalization(inputs, data_format, inputs_pass_through)
        outputs = infer(self._ctx, inputs, None, data_format)
        self._frame_id += 1
        return (outputs, self._frame_id) if get_frame_id else outputs

    def _undo_normalization(self, inputs: Any, data_format: Any, through: Any) -> list[np.ndarray]:
        """The toolkit's pass-through (the input skips mean/std): npurt's runtime fuses them into input packing, so
        such an input is given as the raw values that mean/std map to it (x * std + mean, per channel)."""
        n = self._ctx.n_inputs
        arrays = user_arrays(inputs, n)
        through = [through] * n if isinstance(through, (int, bool, np.integer)) else through
        fmts = [data_format] * n if data_format is None or isinstance(data_format, str) else data_format
        if not isinstance(through, (list, tuple)) or not isinstance(fmts, (list, tuple)) or \
                len(through) != n or len(fmts) != n:
            raise ToolkitError(f"inputs_pass_through / data_format need one entry per input ({n}), got "
                               f"{through!r} / {data_format!r}")
        if any(not (isinstance(f, (bool, int, np.integer)) and f in (0, 1)) for f in through):
            raise ToolkitError(f"inputs_pass_through must be 0 or 1 per input, got {through!r}")
        compiled, out = self._ctx.compiled, []
        for i, (x, flag, fmt) in enumerate(zip(arrays, through, fmts)):
            mean = compiled.mean[i] if compiled.mean and i < len(compiled.mean) else None
            std = compiled.std[i] if compiled.std and i < len(compiled.std) else None
            if flag and (mean is not None or std is not None):
                x, layout, _ = fit_input(self._ctx, x, fmt, i)
                axis = -1 if layout == "nhwc" else min(1, x.ndim - 1)
                shape = [1] * x.ndim
                shape[axis] = -1
                m = np.asarray(mean if mean is not None else [0.0], np.float32)
                s = np.asarray(std if std is not None else [1.0], np.float32)
                x = x.astype(np.float32) * (s.reshape(shape) if s.size > 1 else s) + \
                    (m.reshape(shape) if m.size > 1 else m)
            out.append(x)
        return out

    @_status(failed=None)
    def eval_perf(self, is_print: bool = True, fix_freq: bool = True) -> Any:
        """Run the model once and return the performance table (printed when `is_print`): the NPU time npurt's
        timing model predicts, per layer with init_runtime(perf_debug=True), and the CPU time measured for the run,
        each labelled (`npurt.toolkit.perf`)."""
        from npurt.toolkit.perf import format_perf, layer_times
        self._require_runtime()
        self._feed_zeros_if_unset()
        table = format_perf(*layer_times(self._ctx))
        if is_print:
            print(table)
        return table

    def _feed_zeros_if_unset(self) -> None:
        """eval_perf on a runtime that has run nothing yet: zeros for every input (the times do not depend on them)."""
        if self._frame_id:
            return
        zeros = [np.zeros(self._ctx.input_shape(i), np.float32) for i in range(self._ctx.n_inputs)]
        infer(self._ctx, zeros, None, "nchw")

    @_status(failed=None)
    def eval_memory(self, is_print: bool = True) -> Any:
        """The model's memory on the emulated NPU, from npurt's real plan: {'weight_memory', 'internal_memory',
        'other_memory', 'total_memory'} in bytes (printed as the toolkit prints it when `is_print`)."""
        from npurt.toolkit.perf import format_memory, memory_figures
        self._require_runtime()
        if not self._eval_mem:
            self._log("W", "eval_memory", "init_runtime(eval_mem=True) was not set; npurt reports the plan anyway")
        figures = memory_figures(self._ctx)
        if is_print:
            print(format_memory(figures, len(self._compiled.to_bytes())))
        return figures

    def list_devices(self) -> tuple[list[str], list[str]]:
        """(adb_devices, ntb_devices): npurt's emulated devices, one per SoC it emulates (no board)."""
        devices = [f"npurt-{p}" for p in PLATFORMS]
        print("*" * 25)
        print("all device(s) with adb mode:")
        print("\n".join(f"{d}  (emulated on the host)" for d in devices))
        print("*" * 25)
        return devices, []

    # --- accuracy analysis ------------------------------------------------------------------------------------------
    @_status()
    def accuracy_analysis(self, inputs: Any, output_dir: str | None = "./snapshot", target: str | None = None,
                          device_id: str | None = None) -> int:
        """Per-layer error of the built model against its float reference for one input (image or .npy files,
        one per model input), written to `output_dir` in the toolkit's layout (`npurt.toolkit.snapshot`); 0 / -1.
        `output_dir=None`: only error_analysis.txt and map_name_to_file.txt, in ./snapshot."""
        from npurt.api.accuracy import analyse
        from npurt.toolkit import snapshot
        if self._compiled is None or self._onnx is None:
            raise ToolkitError("accuracy_analysis needs a model from build() or hybrid_quantization_step2() "
                               "(a model loaded by load_rknn has no float reference)")
        if target is not None:
            self._soc(target)                   # refused before any work
        sample = self._analysis_sample(inputs)
        kept: dict[str, dict] = {}
        report = analyse(self._compiled, self._onnx, [sample], reference="auto",
                         on_values=lambda ref, got: kept.update(golden=ref, quantised=got))
        runtime = None
        if target is not None:
            runtime = self._target_outputs(sample, target)
        out = Path(_path(output_dir, "output_dir") if output_dir is not None else "./snapshot")
        snapshot.write(out, report, kept.get("golden"), kept.get("quantised"), runtime, dumps=output_dir is not None)
        for row in report.outputs():
            self._log("I", "accuracy_analysis", f"{row.name}: entire cos {row.entire_cosine:.5f}, single cos "
                                                f"{row.single_cosine:.5f}")
        return 0

    def _analysis_sample(self, inputs: Any) -> list[np.ndarray]:
        from npurt.toolkit.dataset import find_entry, load_entry, per_input_flags
        if isinstance(inputs, (str, os.PathLike)):
            inputs = [inputs]
        names = list(self._compiled.graph.inputs)
        if not isinstance(inputs, (list, tuple)):
            raise ToolkitError(f"inputs must be a list of image or .npy paths (one per model input), got {inputs!r}")
        if len(inputs) != len(names):
            raise ToolkitError(f"accuracy_analysis got {len(inputs)} inputs, the model has {len(names)} ({names})")
        bgr = per_input_flags(self._config["quant_img_RGB2BGR"], len(names))
        shapes = [self._compiled.storage[n].shape for n in names]
        return [load_entry(find_entry(_path(p, "inputs"), None), shape, flip)
                for p, shape, flip in zip(inputs, shapes, bgr)]

    def _target_outputs(self, sample: list[np.ndarray], target: str) -> dict[str, np.ndarray]:
        """The model outputs of an inference on the runtime emulating `target` (the analysis' runtime column)."""
        from npurt.runtime import Context
        soc = self._soc(target)
        compiled = self._compiled if soc == self._compiled.soc else \
            self._compile(self._built[0], soc, self._built[1])
        ctx = Context(compiled, soc=soc, log=runtime_sink(self), name="rknn-accuracy")
        try:
            outs = infer(ctx, sample, None, "nchw")
        finally:
            ctx.destroy()
        return dict(zip(self._compiled.graph.outputs, outs))

    # --- hybrid quantisation ----------------------------------------------------------------------------------------
    @_status()
    def hybrid_quantization_step1(self, dataset: str = "dataset.txt", rknn_batch_size: int | None = None,
                                  proposal: bool = False, proposal_dataset_size: int = 1,
                                  custom_hybrid: Any = None) -> int:
        """Calibrate the loaded model and write `<stem>.model`, `<stem>.data` and `<stem>.quantization.cfg` in the
        current folder (`npurt.toolkit.hybrid`); `proposal` lists the layers that lose most in int8 under
        custom_quantize_layers, `custom_hybrid` ([[start, end], ...]) every layer between those tensors; 0 / -1."""
        from npurt.toolkit import hybrid
        from npurt.toolkit.model_edit import hybrid_pairs, layers_between
        self._require_loaded()
        rknn_batch_size = _batch_size(rknn_batch_size)
        pairs = hybrid_pairs(custom_hybrid) if custom_hybrid is not None else []
        count = _whole(proposal_dataset_size, "proposal_dataset_size") if proposal else 0
        samples = self._samples(dataset, rknn_batch_size)
        if self._config[NPURT_OPTIMIZE]:
            self._log("W", "hybrid_quantization_step1", f"{NPURT_OPTIMIZE} is not applied to hybrid quantisation "
                                                        f"(step2 builds the original float model)")
        options = self._options("int8", samples, optimize=None)
        compiled = self._compile(options, self._soc(), rknn_batch_size)
        qparams = {n: (s.scale, s.zp) for n, s in compiled.storage.items() if s.quantized}
        custom = {t: "float16" for t in layers_between(compiled.graph, pairs)}
        if proposal:
            from npurt.api.accuracy import analyse
            report = analyse(compiled, self._onnx, samples[:count], reference="auto")
            custom.update((row.name, "float16") for row in report.worst())
        record = {"format": hybrid.FORMAT, "model": self._model_path, "batch": rknn_batch_size,
                  "config": {k: v for k, v in self._config.items() if _jsonable(v)}}
        files = hybrid.write_files(self._model_path or "model", record, self._onnx, qparams, custom)
        self._log("I", "hybrid_quantization_step1", "wrote " + ", ".join(map(str, files)))
        return 0

    @_status()
    def hybrid_quantization_step2(self, model_input: str, data_input: str, model_quantization_cfg: str) -> int:
        """Build from step1's files as the user edited them: the layers listed under custom_quantize_layers
        compute in float16, every other in int8 with the cfg's scales and zero points; 0 / -1."""
        from npurt.toolkit import hybrid
        record, onnx_bytes, custom, qparams = hybrid.read_files(
            _path(model_input, "model_input"), _path(data_input, "data_input"),
            _path(model_quantization_cfg, "model_quantization_cfg"))
        floats = [name for name, dtype in custom.items() if str(dtype).lower() in hybrid.FLOAT_TYPES]
        for name, dtype in custom.items():
            if name not in floats:
                self._log("W", "hybrid_quantization_step2", f"{name}: {dtype} is not supported by npurt, the layer "
                                                            f"stays int8")
        recorded, defaults = record.get("config", {}), _config_defaults()
        unknown = sorted(set(recorded) - set(defaults))
        if unknown:
            raise ToolkitError(f"{model_input}: the recorded configuration has unknown arguments {unknown}")
        config = _checked_config(dict(defaults, **recorded))
        batch = _batch_size(record.get("batch"))
        saved = (self._config, self._onnx, self._model_path)
        self._config, self._onnx, self._model_path = config, onnx_bytes, record.get("model")
        try:
            options = self._options("int8", qparams=qparams, float_layers=floats)
            compiled = self._compile(options, self._soc(), batch)
        except BaseException:
            self._config, self._onnx, self._model_path = saved
            raise
        self._compiled, self._from_file, self._built = compiled, False, (options, batch)
        return 0

    # --- the rest ---------------------------------------------------------------------------------------------------
    def codegen(self, output_path: str, inputs: Any = None, overwrite: bool = False) -> int:
        self._log("E", "codegen", "not supported by npurt: build the C demo against npurt's librknnrt.so "
                                  "(npurt capi) instead")
        return -1

    def _release_runtime(self) -> None:
        ctx, self._ctx = self._ctx, None
        if ctx is not None and not ctx.destroyed:
            ctx.destroy(wait=True)

    def release(self) -> None:
        """Free the runtime and the model. Safe to call twice."""
        self._release_runtime()
        self._compiled = None

    def __del__(self) -> None:
        try:
            self._release_runtime()
        except Exception:
            pass


def _config_defaults() -> dict[str, Any]:
    """`config`'s keyword defaults (the toolkit's), read from its signature: the configuration of a new object."""
    import inspect
    return {**{k: p.default for k, p in inspect.signature(RKNN.config).parameters.items()
               if p.default is not inspect.Parameter.empty}, NPURT_OPTIMIZE: None}


class _NodeView:
    """What a custom op's `compute(node, inputs)` gets as `node`: its op type, name and attributes (read with
    `rknn.api.custom_op.get_node_attr`)."""

    def __init__(self, op_type: str, name: str, attrs: dict) -> None:
        self.op_type, self.name, self.attrs = op_type, name, dict(attrs)


def _compile_time(op: Any) -> Callable[[list, dict], list]:
    """The compiler's form of a toolkit custom op: fn(inputs, attrs) -> outputs."""
    return lambda inputs, attrs: list(op.compute(_NodeView(op.op_type, "", attrs), inputs))


def _run_time(op: Any) -> Callable[[Any, list, dict], list]:
    """The runtime's form (a context's custom op): fn(node, inputs, attrs) -> outputs."""
    return lambda node, inputs, attrs: [np.asarray(o, np.float32) for o in
                                        op.compute(_NodeView(node.op_type, node.name, attrs), inputs)]


def _jsonable(value: Any) -> bool:
    import json
    try:
        json.dumps(value)
        return True
    except (TypeError, ValueError):
        return False
