"""What a user names as a model or a calibration set, resolved once for the CLI and `npurt.Session` alike.

A model is an existing `.onnx` / `.npurt` file or a zoo name (`mobilenet_v1`, ...: generated deterministically
once and cached by `npurt.model.zoo.cached`, a git-ignored folder or `$NPURT_CACHE`). A vendor-compiled `.rknn`
file is refused here, before any work, with the one message of `refuse_vendor_model`.

A calibration set is a vendor-style `dataset.txt` (one line per sample, `.npy` files), arrays (passed through),
or `"random"`: a few random samples per model input, cached next to the zoo models as `.npy` files plus a
`dataset.txt`, so a second run calibrates on the same data.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from npurt.errors import ErrorCode, NpuError
from npurt.files import regular_input

if TYPE_CHECKING:  # numpy and onnx load only when a model or dataset is resolved: `npurt --help` stays light
    import numpy as np

ZOO = ("mobilenet_v1", "mobilenet_v2_like", "small_convnet", "yolo_head", "yolov8n_like", "transformer_block",
       "outlier_convnet")
PUBLISHED = ("resnet50_v2", "yolov5n", "yolov5s", "yolov5m", "yolov5s_relu", "yolov8n", "yolov8s", "yolov8m",
             "yolov5n_seg", "yolov5s_seg", "yolov5m_seg", "yolov8n_seg", "yolov8s_seg", "yolov8m_seg")  # zoo_published
RANDOM_SAMPLES = 4


def resolve_model(arg: "str | os.PathLike") -> Path:
    """The file behind a model argument: an existing `.onnx` / `.npurt` path, or a zoo name (generated once).
    INVALID_MODEL for a missing file, an unknown name or a vendor `.rknn` file."""
    text = os.fspath(arg)
    path = Path(text)
    if path.exists():
        from npurt.model.file_format import refuse_vendor_model
        path = regular_input(path, "model")
        refuse_vendor_model(path, text)
        return path
    name = text.removesuffix(".onnx")
    if name in ZOO:
        from npurt.model import zoo
        return zoo.cached(getattr(zoo, name))
    if name in PUBLISHED:
        from npurt.model import zoo, zoo_published
        return zoo.cached(getattr(zoo_published, name))
    if path.suffix or os.sep in text:
        raise NpuError(ErrorCode.INVALID_MODEL, f"model file not found: {text}")
    raise NpuError(ErrorCode.INVALID_MODEL, f"unknown model {text!r}: give an .onnx or .npurt file or one of the zoo "
                                            f"names {', '.join(ZOO + PUBLISHED)}")


def read_onnx(model: Any, external_data: bool = False, name: "str | os.PathLike | None" = None) -> Any:
    """The ModelProto of an ONNX path, bytes or ModelProto; without external data unless `external_data` (the
    graph alone answers shape questions; running it needs the weights). INVALID_MODEL when it cannot be read, naming
    the path (or `name`: the file that bytes were read from)."""
    import onnx
    if isinstance(model, onnx.ModelProto):
        return model
    what = f" {os.fspath(name)}" if name is not None else \
        "" if isinstance(model, (bytes, bytearray, memoryview)) else f" {os.fspath(model)}"
    try:
        if isinstance(model, (bytes, bytearray, memoryview)):
            proto = onnx.load_from_string(bytes(model))
        else:
            proto = onnx.load(os.fspath(model), load_external_data=external_data)
    except Exception as exc:
        raise NpuError(ErrorCode.INVALID_MODEL, f"cannot read ONNX model{what}: {exc}") from None
    if not proto.HasField("graph"):         # an empty file parses as an empty ModelProto
        raise NpuError(ErrorCode.INVALID_MODEL, f"cannot read ONNX model{what}: it has no graph (an empty or "
                                                f"truncated file?)")
    return proto


def input_specs(model: Any, dynamic_ok: bool = False,
                input_shapes: Mapping[str, Sequence[int]] | None = None) -> list[tuple[str, tuple[int, ...], np.dtype]]:
    """(name, shape, dtype) of each graph input of an ONNX model (no initializers), with the shapes `input_shapes`
    fixes (the compile option) in place of the model's; dynamic dims are errors unless `dynamic_ok` (then -1)."""
    import numpy as np
    from onnx import helper
    proto = read_onnx(model)
    inits = {i.name for i in proto.graph.initializer}
    specs = []
    for vi in proto.graph.input:
        if vi.name in inits:
            continue
        t = vi.type.tensor_type
        dims = tuple(d.dim_value if d.HasField("dim_value") else -1 for d in t.shape.dim)
        dims = tuple(int(d) for d in (input_shapes or {}).get(vi.name, dims))
        if any(d <= 0 for d in dims) and not dynamic_ok:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"input {vi.name!r} has a dynamic shape {dims}: give a "
                                                       f"calibration dataset.txt instead of 'random', or fix the "
                                                       f"shape (input_shapes, --input-shape)")
        specs.append((vi.name, dims, np.dtype(helper.tensor_dtype_to_np_dtype(t.elem_type))))
    return specs


def random_inputs(model: Any, seed: int = 0, shapes: list | None = None,
                  input_shapes: Mapping[str, Sequence[int]] | None = None) -> list[np.ndarray]:
    """One random array per model input: floats uniform in [0, 1), integers in [0, 4); of the ONNX input shapes
    (those `input_shapes` fixes replaced), or of `shapes` (one per input: a shape set of a dynamic-shape model)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    specs = input_specs(model, dynamic_ok=shapes is not None, input_shapes=input_shapes)
    if shapes is not None:
        specs = [(name, tuple(shape), dtype) for (name, _, dtype), shape in zip(specs, shapes)]
    out = []
    for _, shape, dtype in specs:
        if dtype.kind == "f":
            out.append(rng.random(shape, dtype=np.float32).astype(dtype))
        else:
            out.append(rng.integers(0, 4, shape).astype(dtype))
    return out


def _cache_key(model: Any, salt: str = "") -> tuple[str, str]:
    """(a readable stem, a short key that changes when the model or `salt` does) for the random set's cache
    folder."""
    if isinstance(model, (str, os.PathLike)):
        path = Path(os.fspath(model))
        st = path.stat()
        text = f"{path.resolve()}:{st.st_size}:{st.st_mtime_ns}{salt}".encode()
        return path.stem[:60], hashlib.sha1(text).hexdigest()[:12]
    raw = model.SerializeToString() if hasattr(model, "SerializeToString") else bytes(model)
    return "model", hashlib.sha1(raw + salt.encode()).hexdigest()[:12]


def random_dataset(model: Any, n: int = RANDOM_SAMPLES,
                   input_shapes: Mapping[str, Sequence[int]] | None = None) -> Path:
    """A cached dataset.txt of `n` random samples for an ONNX model (path, bytes or ModelProto), of its input
    shapes with those `input_shapes` fixes replaced; created once per model and shapes."""
    import numpy as np
    from npurt.model import zoo
    fixed = {name: [int(d) for d in shape] for name, shape in (input_shapes or {}).items()}
    stem, key = _cache_key(model, f":{sorted(fixed.items())}" if fixed else "")
    folder = zoo.cache_dir() / "calib" / f"{stem}-{key}"
    dataset = folder / "dataset.txt"
    if dataset.is_file():
        return dataset
    folder.mkdir(parents=True, exist_ok=True)
    model = read_onnx(model)                                # parsed once for every sample
    lines = []
    for s in range(n):
        names = []
        for k, arr in enumerate(random_inputs(model, seed=1000 + s, input_shapes=fixed)):
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


def resolve_dataset(value: Any, model: Any, shape_sets: list | None = None,
                    input_shapes: Mapping[str, Sequence[int]] | None = None) -> Any:
    """The calibration set to compile `model` with: None (no int8), 'random' (a cached random set, as a dataset.txt
    path, of the input shapes with those `input_shapes` fixes replaced; for a dynamic-shape model, `shape_sets`,
    random arrays at every shape set), a dataset.txt path (checked), or arrays (passed through as given)."""
    if value is None:
        return None
    if isinstance(value, str) and value == "random":
        if shape_sets:
            per_set = max(1, RANDOM_SAMPLES // len(shape_sets))
            model = read_onnx(model)
            return [random_inputs(model, seed=1000 + k, shapes=shapes) for shapes in shape_sets for k in range(per_set)]
        return str(random_dataset(model, input_shapes=input_shapes))
    if isinstance(value, (str, os.PathLike)):
        if not Path(os.fspath(value)).is_file():
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"calibration dataset not found: {os.fspath(value)} (a "
                                                       f"dataset.txt listing .npy files, or 'random')")
        return os.fspath(value)
    return value
