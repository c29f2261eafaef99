"""Turning what a user hands `rknn_init` / `Context` into a `CompiledModel` for the device's SoC.

Accepted: a `CompiledModel`; `.npurt` bytes or file (checked: compiled for another SoC is PLATFORM_MISMATCH);
ONNX bytes / file / `ModelProto` (compiled on the fly with the defaults, fp16, for the device's SoC; cached by
content so repeated inits of one model compile once).

Dynamic shapes: the compiler builds one static model per shape, so a dynamic-shape model is a *family*:
`ModelFamily` keeps the source ONNX and the declared shape sets, compiles each shape set on first use (cached)
and reports the largest one first, as the vendor's INPUT_ATTR does before the first `rknn_set_input_shapes`.
Shape sets are declared by `Context(dynamic_input=...)`, by ONNX metadata `npurt.dynamic_input` (JSON: a list
of shape sets, each a list with one shape per input), or by a `.npurt` compiled by `compile_dynamic` (which keeps
the ONNX and the shape sets in the manifest's `meta`). An int8 dynamic-shape model is calibrated once, over
samples of any of its shape sets (`compile_dynamic(quantize=...)`); that calibration is kept in its compile
arguments, so every shape set compiled later quantises with the same parameters.
"""
from __future__ import annotations

import base64
import hashlib
import json
import math
import os
from collections import OrderedDict
from typing import Any, Sequence

import npurt.forksafe as forksafe
from npurt.errors import ErrorCode, NpuError
from npurt.files import regular_input
from npurt.model.file_format import HEADER_SIZE, declared_size, is_npurt, not_a_model, refuse_vendor_model
from npurt.model.options import CompileOptions

META_DYNAMIC = "dynamic_input"
META_SOURCE = "source_onnx_b64"
ONNX_META_KEY = "npurt.dynamic_input"

_cache: "OrderedDict[tuple, Any]" = OrderedDict()
_cache_lock = forksafe.lock()
_CACHE_SIZE = 16

Shapes = list[tuple[int, ...]]


def _compile(onnx_bytes: bytes, soc: str, options: CompileOptions):
    """compile_with and a small content-keyed cache (compiled models are never mutated by the runtime); `options`
    never carry a dataset or custom ops here (a family is calibrated once, into `qparams`)."""
    from npurt.exec.compile import compile_with
    key = (hashlib.sha256(onnx_bytes).hexdigest(), soc, json.dumps(options.input_shapes, sort_keys=True),
           json.dumps(options.to_json(), sort_keys=True))
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    compiled = compile_with(onnx_bytes, options, soc, progress=False)
    with _cache_lock:
        _cache[key] = compiled
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return compiled


def _read(model: Any) -> tuple[bytes | memoryview | None, Any]:
    """(raw bytes, or None) and the object itself for non-byte inputs."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return (bytes(model) if isinstance(model, bytearray) else model), None
    if isinstance(model, (str, os.PathLike)):
        try:
            with open(regular_input(model, "model file"), "rb") as f:
                _check_model_size(f.read(HEADER_SIZE), os.fstat(f.fileno()).st_size, os.fspath(model))
                f.seek(0)
                return f.read(), None
        except OSError as exc:
            raise NpuError(ErrorCode.INVALID_MODEL, f"cannot read model file {os.fspath(model)!r}: "
                                                    f"{exc.strerror}") from None
        except NpuError as exc:
            raise NpuError(ErrorCode.INVALID_MODEL, exc.message) from None
    return None, model


MAX_ONNX = (1 << 31) - 1        # protobuf's limit for one serialized ONNX model


def _check_model_size(head: bytes, size: int, what: str) -> None:
    """Refuse a model by its first bytes and its size, before reading it: an npurt file must be exactly the size
    its header declares; anything else must be ONNX (under 2 GiB, starting with a valid protobuf field tag)."""
    if size == 0:
        raise NpuError(ErrorCode.INVALID_MODEL, f"{what} is empty (0 bytes)")
    declared = declared_size(head)
    if declared is not None:
        if declared != size:
            raise NpuError(ErrorCode.INVALID_MODEL, f"{what}: npurt model header declares {declared} bytes, the "
                                                    f"file has {size} (truncated or not a model)")
        return
    refuse_vendor_model(head, what)
    tag = head[0] if head else 0
    if size > MAX_ONNX or tag >> 3 == 0 or tag & 7 not in (0, 1, 2, 5):
        raise not_a_model(f"{what} ({size} bytes starting {head[:8].hex()})")


def _onnx_dynamic_input(onnx_bytes: bytes) -> list[Shapes] | None:
    import onnx
    try:
        proto = onnx.load_from_string(bytes(onnx_bytes))
    except Exception:
        return None
    for prop in proto.metadata_props:
        if prop.key == ONNX_META_KEY:
            return parse_shape_sets(json.loads(prop.value))
    return None


def dynamic_shape_sets(onnx_model: Any, dynamic_input: Any = None) -> list[Shapes] | None:
    """The shape sets of an ONNX model: `dynamic_input` if given, else its `npurt.dynamic_input` metadata, else
    None (a static model)."""
    if dynamic_input is not None:
        return parse_shape_sets(dynamic_input)
    raw, obj = _read(onnx_model)
    if raw is None:
        raw = obj.SerializeToString() if hasattr(obj, "SerializeToString") else b""
    return _onnx_dynamic_input(bytes(raw))


def parse_shape_sets(value: Any) -> list[Shapes]:
    """Validate a list of shape sets (each a list with one shape per input)."""
    try:
        sets = [[tuple(int(d) for d in shape) for shape in shape_set] for shape_set in value]
    except (TypeError, ValueError):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"dynamic_input must be a list of shape sets, got {value!r}") \
            from None
    if not sets or any(not s for s in sets) or len({len(s) for s in sets}) != 1:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"dynamic_input needs shape sets of one shape per input: {value!r}")
    if any(d <= 0 for s in sets for shape in s for d in shape):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"dynamic_input has a non-positive dimension: {value!r}")
    return sets


class ModelFamily:
    """The compiled model(s) behind a context: one static model, or one per declared shape set."""

    def __init__(self, compiled: Any, source_onnx: bytes | None = None, shape_sets: list[Shapes] | None = None,
                 options: CompileOptions = CompileOptions()) -> None:
        self.shape_sets = shape_sets
        self.source_onnx = source_onnx
        self.options = options          # how each shape set compiles (its input_shapes added)
        self._by_shapes: dict[tuple, Any] = {}
        self.current = compiled
        if shape_sets and compiled is not None:
            self._by_shapes[self.key(self.shapes_of(compiled))] = compiled

    @property
    def dynamic(self) -> bool:
        return bool(self.shape_sets)

    @staticmethod
    def key(shapes: Sequence[Sequence[int]]) -> tuple:
        return tuple(tuple(int(d) for d in s) for s in shapes)

    @staticmethod
    def shapes_of(compiled: Any) -> Shapes:
        return [tuple(compiled.storage[n].shape) for n in compiled.graph.inputs]

    def largest(self) -> Shapes:
        """The shape set with the most input elements (what INPUT_ATTR reports before any set_input_shapes)."""
        return max(self.shape_sets, key=lambda s: sum(math.prod(x) for x in s))

    def for_shapes(self, shapes: Sequence[Sequence[int]]) -> Any:
        """The compiled model for one declared shape set; INVALID_ARGUMENT for a shape set not declared."""
        key = self.key(shapes)
        if key not in {self.key(s) for s in self.shape_sets or []}:
            declared = [[list(x) for x in s] for s in self.shape_sets or []]
            raise NpuError(ErrorCode.INVALID_ARGUMENT,
                           f"input shapes {[list(x) for x in key]} are not among the model's dynamic shapes {declared}")
        hit = self._by_shapes.get(key)
        if hit is None:
            names = list(self.current.graph.inputs)
            hit = _compile(self.source_onnx, self.current.soc,
                           self.options.replace(input_shapes=dict(zip(names, map(list, key)))))
            self._by_shapes[key] = hit
        return hit

    def all(self) -> list[Any]:
        """Every member (compiling those not compiled yet)."""
        if not self.dynamic:
            return [self.current]
        return [self.for_shapes(s) for s in self.shape_sets]


def compile_dynamic(onnx_model: Any, soc: str, dynamic_input: Any, **options: Any) -> Any:
    """Compile a dynamic-shape model (`compile_family` with `options`: the fields of `CompileOptions`, e.g.
    quantize, precision, mean, std)."""
    return compile_family(onnx_model, soc, dynamic_input, CompileOptions(**options))


def compile_family(onnx_model: Any, soc: str, dynamic_input: Any, options: CompileOptions) -> Any:
    """Compile a dynamic-shape model: the largest shape set, with the ONNX source and the shape sets kept in
    `meta` so the `.npurt` it saves to can be loaded as a dynamic-shape model by `rknn_init`. A calibration set
    (`options.quantize`, whose samples each match one shape set) makes it int8 with one calibration shared by every
    shape set (kept in `meta` too, so each shape set compiled later uses it)."""
    raw, obj = _read(onnx_model)
    onnx_bytes = bytes(raw) if raw is not None else obj.SerializeToString()
    family = _family_from_onnx(onnx_bytes, soc, parse_shape_sets(dynamic_input), options)
    family.all()                # every shape set compiles: a bad one is an error now, not at rknn_init
    import dataclasses
    meta = dict(family.current.meta, **{META_DYNAMIC: [[list(s) for s in ss] for ss in family.shape_sets],
                                        META_SOURCE: base64.b64encode(family.source_onnx).decode("ascii"),
                                        "compile_args": family.options.to_json()})
    return dataclasses.replace(family.current, meta=meta)      # the cached model itself stays as it was


def _input_names(onnx_bytes: bytes) -> list[str]:
    import onnx
    proto = onnx.load_from_string(onnx_bytes)
    return [vi.name for vi in proto.graph.input if vi.name not in {i.name for i in proto.graph.initializer}]


def _free_varying_dims(onnx_bytes: bytes, shape_sets: list[Shapes]) -> bytes:
    """The ONNX model with every static input dimension that the shape sets vary made symbolic (as the toolkit's
    dynamic_input does to a static model), and its recorded output / intermediate shapes dropped so that shape
    inference derives them per shape set; unchanged when no static dimension varies."""
    import onnx
    proto = onnx.load_from_string(onnx_bytes)
    inits = {i.name for i in proto.graph.initializer}
    inputs = [vi for vi in proto.graph.input if vi.name not in inits]
    changed = False
    for k, vi in enumerate(inputs):
        dims = vi.type.tensor_type.shape.dim
        bad = next((s[k] for s in shape_sets if k < len(s) and len(s[k]) != len(dims)), None)
        if bad is not None and vi.type.tensor_type.HasField("shape"):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"dynamic_input shape {list(bad)} for input {vi.name!r} has "
                                                       f"rank {len(bad)}, the input has rank {len(dims)}")
        for axis, d in enumerate(dims):
            sizes = {s[k][axis] for s in shape_sets if k < len(s) and axis < len(s[k])}
            if d.HasField("dim_value") and len(sizes) > 1:
                d.dim_param = f"{vi.name}_dim{axis}"          # replaces dim_value (a oneof)
                changed = True
    if not changed:
        return onnx_bytes
    for vi in proto.graph.output:
        vi.type.tensor_type.ClearField("shape")
    del proto.graph.value_info[:]
    return proto.SerializeToString()


def _family_from_onnx(onnx_bytes: bytes, soc: str, shape_sets: list[Shapes] | None,
                      options: CompileOptions = CompileOptions()) -> ModelFamily:
    if shape_sets:
        onnx_bytes = _free_varying_dims(bytes(onnx_bytes), shape_sets)
    kept = CompileOptions(precision=options.precision, mean=options.mean, std=options.std,
                          float_layers=list(options.float_layers), weight_method=options.weight_method)
    if not shape_sets:
        if options.quantize is not None:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, "quantize= here is for dynamic-shape models: compile a "
                                                       "static model with npurt.compile")
        return ModelFamily(_compile(onnx_bytes, soc, kept))
    names = _input_names(onnx_bytes)
    bad = next((s for s in shape_sets if len(s) != len(names)), None)
    if bad is not None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT,
                       f"dynamic_input shape sets have {len(bad)} shapes, the model has {len(names)} inputs")
    if options.quantize is not None:
        from npurt.exec.compile import calibrate_dynamic
        qparams = calibrate_dynamic(onnx_bytes, [dict(zip(names, map(list, s))) for s in shape_sets], options,
                                    progress=False)
        kept = kept.replace(precision="int8",
                            qparams={k: [float(v[0]), int(v[1])] for k, v in sorted(qparams.items())})
    elif options.precision == "int8":
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "an int8 dynamic-shape model needs a calibration dataset "
                                                   "(quantize=...) covering its shape sets")
    tmp = ModelFamily(None, onnx_bytes, shape_sets, kept)
    biggest = tmp.largest()
    first = _compile(onnx_bytes, soc, kept.replace(input_shapes=dict(zip(names, map(list, biggest)))))
    return ModelFamily(first, onnx_bytes, shape_sets, kept)


def load_family(model: Any, soc: str, dynamic_input: Any = None, any_soc: bool = False) -> ModelFamily:
    """The model family for `model` on `soc` (see the module doc); errors as NpuError. `any_soc`: accept a compiled
    model made for another SoC (ONNX is still compiled for `soc`)."""
    from npurt.model.compiled import CompiledModel, read_compiled
    raw, obj = _read(model)
    shape_sets = parse_shape_sets(dynamic_input) if dynamic_input is not None else None
    if obj is not None:
        if isinstance(obj, CompiledModel):
            compiled = obj
            return _check_soc(_family_of_compiled(compiled), soc, any_soc)
        if hasattr(obj, "SerializeToString") and hasattr(obj, "graph"):
            onnx_bytes = obj.SerializeToString()
            return _family_from_onnx(onnx_bytes, soc, shape_sets or _onnx_dynamic_input(onnx_bytes))
        raise NpuError(ErrorCode.INVALID_MODEL, f"not a model: {type(obj).__name__}")
    if len(raw) == 0:
        raise NpuError(ErrorCode.INVALID_MODEL, "empty model")
    refuse_vendor_model(raw)
    if is_npurt(raw):
        return _check_soc(_family_of_compiled(read_compiled(raw)), soc, any_soc)
    onnx_bytes = bytes(raw)
    try:
        import onnx
        onnx.load_from_string(onnx_bytes)
    except Exception:
        raise not_a_model(f"model of {len(onnx_bytes)} bytes") from None
    return _family_from_onnx(onnx_bytes, soc, shape_sets or _onnx_dynamic_input(onnx_bytes))


def _family_of_compiled(compiled: Any) -> ModelFamily:
    meta = compiled.meta or {}
    if META_DYNAMIC in meta and META_SOURCE in meta:
        return ModelFamily(compiled, base64.b64decode(meta[META_SOURCE]), parse_shape_sets(meta[META_DYNAMIC]),
                           CompileOptions.from_json(meta.get("compile_args") or {}))
    return ModelFamily(compiled)


def _check_soc(family: ModelFamily, soc: str, any_soc: bool = False) -> ModelFamily:
    if family.current.soc != soc and not any_soc:
        raise NpuError(ErrorCode.PLATFORM_MISMATCH,
                       f"the model was compiled for {family.current.soc}, this device is {soc}")
    return family
