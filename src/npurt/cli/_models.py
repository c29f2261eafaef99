"""Model arguments of the CLI: an ONNX file, a compiled `.npurt` file, or a zoo name; calibration sets.

Names and datasets (zoo names, `--quantize random`) are resolved by `npurt.model.sources`, the rule
`npurt.Session` uses too; this module adds the CLI's options and its loading of a model for one SoC.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npurt.errors import ErrorCode, NpuError
from npurt.files import read_npy, regular_input
from npurt.model.options import CompileOptions
from npurt.model.sources import ZOO, resolve_dataset, resolve_model  # noqa: F401 (the commands use them from here)

if TYPE_CHECKING:  # numpy loads only in the commands that read arrays: `npurt --help` stays light
    import numpy as np


def _bad(msg: str) -> NpuError:
    return NpuError(ErrorCode.INVALID_ARGUMENT, msg)


def is_compiled(path: Path) -> bool:
    """True for a compiled `.npurt` file (checked by its magic, whatever its name)."""
    from npurt.model.file_format import is_npurt
    try:
        return is_npurt(regular_input(path, "model"))
    except OSError as exc:
        raise _bad(f"cannot read model {path}: {exc.strerror}") from None


def add_compile_args(p: Any,
                      dataset_help: str = "int8: calibrate on a dataset.txt of .npy files, or 'random'") -> None:
    """The compile options every compiling command shares: --quantize DATASET, --quantized-algorithm,
    --quantized-method, --float-layers, --optimize and --input-shape."""
    p.add_argument("--quantize", metavar="DATASET|random", help=dataset_help)
    p.add_argument("--quantized-algorithm", default=None, metavar="ALGORITHM",  # checked by npurt.compile
                   help="how int8 activation ranges are chosen: normal (the default: min/max), kl_divergence, mmse")
    p.add_argument("--float-layers", nargs="+", metavar="NAME", default=None,
                   help="keep these layers (by the tensor they produce) in fp16, the rest int8")
    p.add_argument("--quantized-method", default=None, metavar="channel|layer",
                   help="int8 weight scales: channel (the default: one per output channel) or layer (one per tensor)")
    p.add_argument("--optimize", default=None, metavar="TECHNIQUES",
                   help="int8: quantisation techniques on the float model before calibration, comma-separated: cle "
                        "(cross-layer equalisation), bias (bias correction), adaround (adaptive rounding)")
    add_input_shape_arg(p)


def add_input_shape_arg(p: Any) -> None:
    """`--input-shape [NAME=]SHAPE`, once per input: every command that compiles or edits a model takes it."""
    p.add_argument("--input-shape", action="append", default=None, metavar="[NAME=]SHAPE",
                   help="a static shape for an input with dynamic dimensions, e.g. x=1,3,48,320 (NAME= may be left "
                        "out for a single-input model); once per input")


def parse_input_shapes(values: list[str] | None) -> dict[str, list[int]] | None:
    """`--input-shape` values as {name: shape}; "" names the single input of a one-input model."""
    if not values:
        return None
    shapes: dict[str, list[int]] = {}
    for value in values:
        name, _, dims = value.rpartition("=")
        try:
            shape = [int(d) for d in dims.replace(" ", "").split(",")]
        except ValueError:
            raise _bad(f"--input-shape {value!r}: a shape is comma-separated integers, e.g. x=1,3,48,320") from None
        if name in shapes or any(d <= 0 for d in shape):
            raise _bad(f"--input-shape {value!r}: "
                       + ("that input is given twice" if name in shapes else "every dimension must be > 0"))
        shapes[name] = shape
    return shapes


def named_shapes(options: CompileOptions, path: Path) -> CompileOptions:
    """`options` with an unnamed `--input-shape` given the name of the model's only input."""
    shapes = options.input_shapes
    if not shapes or "" not in shapes:
        return options
    from npurt.model.sources import read_onnx
    graph = read_onnx(path).graph
    inits = {i.name for i in graph.initializer}
    names = [i.name for i in graph.input if i.name not in inits]
    if len(names) != 1 or len(shapes) != 1:
        raise _bad(f"--input-shape without a name needs a single-input model; {path.name} has inputs "
                   f"{', '.join(names)}: use NAME=SHAPE")
    return options.replace(input_shapes={names[0]: shapes[""]})


def compile_options(args: Any, mean: Any = None, std: Any = None) -> CompileOptions:
    """The compile options of a command's arguments: `add_compile_args`' options and `--input-shape` (those the
    command has) and the `mean` / `std` it parsed."""
    quantize = getattr(args, "quantize", None)
    algorithm = getattr(args, "quantized_algorithm", None)
    float_layers = getattr(args, "float_layers", None)
    optimize = getattr(args, "optimize", None)
    method = getattr(args, "quantized_method", None)
    if (algorithm is not None or float_layers or optimize is not None or method is not None) and quantize is None:
        raise _bad("--quantized-algorithm, --quantized-method, --float-layers and --optimize need --quantize (they "
                   "shape the int8 model)")
    from npurt.model.options import WEIGHT_METHODS
    if method is not None and method not in WEIGHT_METHODS:
        raise _bad(f"--quantized-method {method!r}: use {' or '.join(WEIGHT_METHODS)}")
    if optimize is not None:
        from npurt.model.options import parse_techniques
        parse_techniques(optimize)                 # a bad name is an error before anything is read
    return CompileOptions(quantize=quantize, mean=mean, std=std, quantized_algorithm=algorithm,
                          float_layers=list(float_layers or ()), optimize=optimize, weight_method=method,
                          input_shapes=parse_input_shapes(getattr(args, "input_shape", None)))


def load_model(arg: str, soc: str | None, options: CompileOptions = CompileOptions(),
               progress: bool | None = None) -> Any:
    """A CompiledModel for `arg`: loaded from a `.npurt` (its SoC must match `soc` when given; it takes no
    `options`) or compiled with `options`."""
    import npurt
    path = resolve_model(arg)
    if progress is None:
        progress = sys.stdout.isatty()
    if is_compiled(path):
        if options.given():
            raise _bad(f"{path.name} is already compiled: --quantize/--mean/--std and the other compile options "
                       f"apply to ONNX models")
        compiled = npurt.load_compiled(path)
        if soc and compiled.soc != soc.lower():
            raise NpuError(ErrorCode.PLATFORM_MISMATCH, f"{path.name} was compiled for {compiled.soc}, not {soc}")
        return compiled
    from npurt.exec.compile import compile_with       # only to compile: loading a .npurt needs no onnx
    return compile_with(path, named_shapes(options, path), soc, progress)   # which resolves --quantize ('random' too)


def parse_floats(text: str | None, what: str) -> list[float] | None:
    """'127.5,127.5,127.5' -> [127.5, 127.5, 127.5] (one list: a single-input model's per-channel values)."""
    if text is None:
        return None
    try:
        values = [float(v) for v in text.replace(" ", ",").split(",") if v]
    except ValueError:
        raise _bad(f"{what} must be comma-separated numbers, got {text!r}") from None
    if not values or not all(math.isfinite(v) for v in values):
        raise _bad(f"{what} must be comma-separated finite numbers, got {text!r}")
    return values


def _layout_hint(shape: tuple[int, ...], want: tuple[int, ...]) -> str:
    """A hint when an input array is the model's NCHW shape stored NHWC (an image as read, not transposed)."""
    if len(shape) == 4 and (shape[0], shape[3], shape[1], shape[2]) == want:
        return ": it looks like an NHWC array for this NCHW input; transpose it first (numpy: x.transpose(0, 3, 1, 2))"
    return ""


def read_inputs(paths: list[Path], compiled: Any, dynamic: bool = False) -> list[np.ndarray]:
    """One array per model input from `--input` .npy files, in order, each of the input's shape (`dynamic`: of
    the input's rank; the runtime checks the shapes against the model's shape sets)."""
    names = list(compiled.graph.inputs)
    if len(paths) != len(names):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"the model has {len(names)} input(s) {names}, got {len(paths)} "
                                                   f"--input file(s)")
    arrays = []
    for name, p in zip(names, paths):
        a = read_npy(p, "--input")
        if a.dtype.kind not in "biuf":
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{p}: dtype {a.dtype} is not a number type a model input "
                                                       f"takes (complex, text and object arrays are refused)")
        want = tuple(compiled.storage[name].shape)
        if (a.ndim != len(want)) if dynamic else (tuple(a.shape) != want):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{p}: shape {tuple(a.shape)} != input {name!r} shape {want}"
                                                       f"{_layout_hint(tuple(a.shape), want)}")
        arrays.append(a)
    return arrays
