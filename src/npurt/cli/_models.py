"""Model arguments of the CLI: an ONNX file, a compiled `.npurt` file, or a zoo name; calibration sets.

Zoo models are generated deterministically and cached (`npurt.model.zoo.cached`, a git-ignored folder, or
`$NPURT_CACHE`). `--quantize random` draws a few random samples per model input and caches them next to the
models as `.npy` files plus a vendor-style `dataset.txt`, so a second run calibrates on the same data.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from npurt.errors import ErrorCode, NpuError
from npurt.files import read_npy, regular_input

if TYPE_CHECKING:  # numpy loads only in the commands that read arrays: `npurt --help` stays light
    import numpy as np

ZOO = ("mobilenet_v1", "mobilenet_v2_like", "small_convnet", "yolo_head", "yolov8n_like", "transformer_block",
       "outlier_convnet")
RANDOM_SAMPLES = 4


def _bad(msg: str) -> NpuError:
    return NpuError(ErrorCode.INVALID_ARGUMENT, msg)


def resolve_model(arg: str) -> Path:
    """The file behind a MODEL argument: an existing `.onnx` / `.npurt` path, or a zoo name (generated once)."""
    path = Path(arg)
    if path.exists():
        return regular_input(path, "model")
    name = arg.removesuffix(".onnx")
    if name in ZOO:
        from npurt.model import zoo
        return zoo.cached(getattr(zoo, name))
    if path.suffix or os.sep in arg:
        raise _bad(f"model file not found: {arg}")
    raise _bad(f"unknown model {arg!r}: give an .onnx or .npurt file or one of the zoo names {', '.join(ZOO)}")


def is_compiled(path: Path) -> bool:
    """True for a compiled `.npurt` file (checked by its magic, whatever its name)."""
    from npurt.model.file_format import is_npurt
    try:
        return is_npurt(regular_input(path, "model"))
    except OSError as exc:
        raise _bad(f"cannot read model {path}: {exc.strerror}") from None


def input_specs(path: Path) -> list[tuple[str, tuple[int, ...], np.dtype]]:
    """(name, shape, dtype) of each graph input of an ONNX file (no initializers); dynamic dims are errors."""
    import numpy as np
    import onnx
    from onnx import helper
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:
        raise _bad(f"cannot read ONNX model {path}: {exc}") from None
    inits = {i.name for i in model.graph.initializer}
    specs = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        t = vi.type.tensor_type
        dims = tuple(d.dim_value if d.HasField("dim_value") else -1 for d in t.shape.dim)
        if any(d <= 0 for d in dims):
            raise _bad(f"input {vi.name!r} has a dynamic shape {dims}: give a calibration dataset.txt instead of "
                       f"'random'")
        specs.append((vi.name, dims, np.dtype(helper.tensor_dtype_to_np_dtype(t.elem_type))))
    return specs


def random_inputs(path: Path, seed: int = 0) -> list[np.ndarray]:
    """One random array per model input: floats uniform in [0, 1), integers in [0, 4)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    out = []
    for _, shape, dtype in input_specs(path):
        if dtype.kind == "f":
            out.append(rng.random(shape, dtype=np.float32).astype(dtype))
        else:
            out.append(rng.integers(0, 4, shape).astype(dtype))
    return out


def random_dataset(path: Path, n: int = RANDOM_SAMPLES) -> Path:
    """A cached dataset.txt of `n` random samples for the model at `path` (created once, then reused)."""
    import hashlib

    import numpy as np

    from npurt.model import zoo
    st = path.stat()
    key = hashlib.sha1(f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:12]
    folder = zoo.cache_dir() / "calib" / f"{path.stem[:60]}-{key}"
    dataset = folder / "dataset.txt"
    if dataset.is_file():
        return dataset
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for s in range(n):
        names = []
        for k, arr in enumerate(random_inputs(path, seed=1000 + s)):
            f = f"sample{s}_in{k}.npy"
            tmp = folder / f"{f}.tmp{os.getpid()}"          # atomic: other processes may read it meanwhile
            with open(tmp, "wb") as fh:
                np.save(fh, arr)
            os.replace(tmp, folder / f)
            names.append(f)
        lines.append(" ".join(names))
    tmp = folder / f"dataset.txt.tmp{os.getpid()}"
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, dataset)
    return dataset


def quantize_arg(value: str | None, path: Path) -> Any:
    """The dataset to calibrate with: None (fp16), 'random' (a cached random set) or a dataset.txt path."""
    if value is None:
        return None
    if value == "random":
        return str(random_dataset(path))
    if not Path(value).is_file():
        raise _bad(f"calibration dataset not found: {value} (a dataset.txt listing .npy files, or 'random')")
    return value


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
    return npurt.compile(path, soc=soc, quantize=quantize_arg(quantize, path), mean=mean, std=std,
                         progress=progress, **options)


def parse_floats(text: str | None, what: str) -> list[float] | None:
    """'127.5,127.5,127.5' -> [127.5, 127.5, 127.5] (one list: a single-input model's per-channel values)."""
    if text is None:
        return None
    try:
        return [float(v) for v in text.replace(" ", ",").split(",") if v]
    except ValueError:
        raise _bad(f"{what} must be comma-separated numbers, got {text!r}") from None


def read_inputs(paths: list[Path], compiled: Any) -> list[np.ndarray]:
    """One array per model input from `--input` .npy files, in order, each of the input's shape."""
    names = list(compiled.graph.inputs)
    if len(paths) != len(names):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"the model has {len(names)} input(s) {names}, got {len(paths)} "
                                                   f"--input file(s)")
    arrays = []
    for name, p in zip(names, paths):
        a = read_npy(p, "--input")
        want = tuple(compiled.storage[name].shape)
        if tuple(a.shape) != want:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{p}: shape {tuple(a.shape)} != input {name!r} shape {want}")
        arrays.append(a)
    return arrays
