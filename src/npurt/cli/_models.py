"""Model arguments of the CLI: an ONNX file, a compiled `.npurt` file, or a zoo name; calibration sets.

Names and datasets (zoo names, `--quantize random`) are resolved by `npurt.model.sources`, the rule
`npurt.Session` uses too; this module adds the CLI's options and its loading of a model for one SoC.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npurt.errors import ErrorCode, NpuError
from npurt.files import read_npy, regular_input
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


def add_quantize_args(p: Any,
                      dataset_help: str = "int8: calibrate on a dataset.txt of .npy files, or 'random'") -> None:
    """The int8 options every compiling command shares: --quantize DATASET, --quantized-algorithm, --float-layers."""
    p.add_argument("--quantize", metavar="DATASET|random", help=dataset_help)
    p.add_argument("--quantized-algorithm", default=None, metavar="ALGORITHM",  # checked by npurt.compile
                   help="how int8 activation ranges are chosen: normal (the default: min/max), kl_divergence, mmse")
    p.add_argument("--float-layers", nargs="+", metavar="NAME", default=None,
                   help="keep these layers (by the tensor they produce) in fp16, the rest int8")


def quantize_options(args: Any) -> dict[str, Any]:
    """The compile keywords of `add_quantize_args`' options that were given (for `load_model`)."""
    options = {}
    if getattr(args, "quantized_algorithm", None) is not None:
        options["quantized_algorithm"] = args.quantized_algorithm
    if getattr(args, "float_layers", None):
        options["float_layers"] = list(args.float_layers)
    if options and getattr(args, "quantize", None) is None:
        raise _bad("--quantized-algorithm and --float-layers need --quantize (they shape the int8 model)")
    return options


def load_model(arg: str, soc: str | None, quantize: str | None = None, mean: Any = None, std: Any = None,
               progress: bool | None = None, **options: Any) -> Any:
    """A CompiledModel for `arg`: loaded from a `.npurt` (its SoC must match `soc` when given) or compiled
    (`options`: further `npurt.compile` keywords, e.g. quantized_algorithm)."""
    import npurt
    path = resolve_model(arg)
    if progress is None:
        progress = sys.stdout.isatty()
    if is_compiled(path):
        if quantize is not None or mean is not None or std is not None or options:
            raise _bad(f"{path.name} is already compiled: --quantize/--mean/--std and the other compile options "
                       f"apply to ONNX models")
        compiled = npurt.load_compiled(path)
        if soc and compiled.soc != soc.lower():
            raise NpuError(ErrorCode.PLATFORM_MISMATCH, f"{path.name} was compiled for {compiled.soc}, not {soc}")
        return compiled
    return npurt.compile(path, soc=soc, quantize=resolve_dataset(quantize, path), mean=mean, std=std,
                         progress=progress, **options)


def parse_floats(text: str | None, what: str) -> list[float] | None:
    """'127.5,127.5,127.5' -> [127.5, 127.5, 127.5] (one list: a single-input model's per-channel values)."""
    if text is None:
        return None
    try:
        return [float(v) for v in text.replace(" ", ",").split(",") if v]
    except ValueError:
        raise _bad(f"{what} must be comma-separated numbers, got {text!r}") from None


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
        want = tuple(compiled.storage[name].shape)
        if (a.ndim != len(want)) if dynamic else (tuple(a.shape) != want):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{p}: shape {tuple(a.shape)} != input {name!r} shape {want}")
        arrays.append(a)
    return arrays
