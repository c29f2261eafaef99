"""`CompileOptions`: how an ONNX model is compiled, as one frozen object.

Built once where a user's choices come in (`npurt.compile`'s keywords, `Session`, the CLI's options, a dynamic-shape
model's saved arguments) and handed whole to the compiler (`compiler.compile_onnx`), the loader's model families and
the calibration of dynamic-shape models. The target SoC is not an option: the same options compile for any SoC.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from npurt.errors import ErrorCode, NpuError

PRECISIONS = ("fp16", "int8", "float32")
_PRECISION_ALIASES = {"float16": "fp16", "fp32": "float32", "i8": "int8"}

WEIGHT_METHODS = ("channel", "layer")
"""`weight_method`'s values: int8 weight scales per output channel or per weight tensor."""

TECHNIQUES = ("cle", "bias", "adaround")
"""The quantisation techniques `optimize` selects (`npurt.model.techniques`): cross-layer equalisation, bias
correction, adaptive rounding."""

# A custom op's compile-time implementation: fn(inputs, attrs) -> outputs, float32 numpy arrays in and out (attrs:
# the node's ONNX attributes), as the kernels take them.
CustomOpImpl = Callable[[list, dict], Sequence]


@dataclass(frozen=True)
class CompileOptions:
    """The compiler's options; every field defaults to "not given" (an fp16 model of the ONNX model's own shapes).
    The object is frozen; the values inside it (lists, arrays) are the caller's and are not copied."""

    precision: str | None = None
    """"fp16" (the default), "float32" (the reference mode) or "int8" (aliases: float16, fp32, i8); None: int8 when
    `quantize` or `qparams` is given, else fp16."""

    quantize: Any = None
    """The int8 calibration dataset: a dataset.txt path, "random", arrays, lists of arrays per input, or dicts by
    input name (`npurt.model.sources.resolve_dataset`, `npurt.model.calibrate.normalize_samples`); selects int8.
    Raw (pre-normalisation) values when `mean` / `std` are given."""

    mean: Sequence | None = None
    """Per-channel input mean the runtime fuses into input packing: one list per input, or one list for a
    single-input model."""

    std: Sequence | None = None
    """Per-channel input std (non-zero), as `mean`."""

    quantized_algorithm: str | None = None
    """How int8 activation ranges are chosen, as rknn-toolkit2's: "normal" (min/max, the default when None),
    "kl_divergence" or "mmse" (`npurt.tensor.ranges`)."""

    float_layers: Sequence[str] = ()
    """Layers of an int8 model kept in fp16, by node name or by the tensor they produce (`npurt.model.mixed`)."""

    qparams: Mapping[str, Sequence[float]] | None = None
    """A calibration made before ({tensor: (scale, zero_point)}, e.g. one shared by every shape set of a
    dynamic-shape model): selects int8 with it instead of calibrating on `quantize`."""

    input_shapes: Mapping[str, Sequence[int]] | None = None
    """Static shapes for the model's inputs by name (a dynamic dimension fixed, or one shape set of a
    dynamic-shape model)."""

    custom_ops: Mapping[str, CustomOpImpl] | None = None
    """Op type -> the float implementation of a custom op the model uses, registered with the compiler as the
    toolkit registers one: calibration computes the op with it, so a model with custom ops compiles to int8. At run
    time the op runs through the callbacks registered on the context."""

    weight_method: str | None = None
    """How int8 weights are scaled, as rknn-toolkit2's `quantized_method`: "channel" (one scale per output channel,
    the default when None) or "layer" (one scale per weight tensor)."""

    optimize: "str | Sequence[str] | None" = None
    """Quantisation techniques run on the float graph before calibration (`npurt.model.techniques`): names of
    TECHNIQUES, as a list or a comma-separated string ("cle,bias,adaround"); int8 with a calibration dataset only."""

    def __post_init__(self) -> None:
        if self.float_layers is None:
            object.__setattr__(self, "float_layers", ())

    def replace(self, **changes: Any) -> "CompileOptions":
        """A copy with `changes` (the object itself is frozen)."""
        return dataclasses.replace(self, **changes)

    def given(self) -> bool:
        """True when any option is set: Session and the CLI compile an ONNX model then, and refuse a compiled one."""
        return any(v is not None for v in (self.precision, self.quantize, self.mean, self.std, self.qparams,
                                           self.input_shapes, self.custom_ops)) \
            or bool(self.quantized_algorithm) or bool(self.float_layers) or bool(self.optimize) \
            or self.weight_method is not None

    def checked(self) -> "CompileOptions":
        """The options with their one-value rules applied: the precision resolved (aliases, the default), the
        algorithm resolved, `float_layers` a tuple; INVALID_ARGUMENT for a combination that cannot compile."""
        precision = self.precision
        if precision is None:
            precision = "int8" if self.quantize is not None or self.qparams is not None else "fp16"
        precision = _PRECISION_ALIASES.get(str(precision).lower(), str(precision).lower())
        if precision not in PRECISIONS:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"precision must be one of {PRECISIONS}, got {precision!r}")
        if precision == "int8" and self.quantize is None and self.qparams is None:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, "int8 precision needs a calibration dataset (quantize=...)")
        if precision != "int8" and self.quantize is not None:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"quantize= given but precision is {precision!r}")
        float_layers = (self.float_layers,) if isinstance(self.float_layers, str) else tuple(self.float_layers)
        if float_layers and precision != "int8":
            raise NpuError(ErrorCode.INVALID_ARGUMENT, "float_layers keep layers of an int8 model in fp16: give a "
                                                       "calibration dataset (quantize=...)")
        from npurt.tensor.ranges import check_algorithm     # numpy: not loaded to build options (the CLI's --help)
        algorithm = check_algorithm(self.algorithm)
        if self.weight_method not in (None,) + WEIGHT_METHODS:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"weight_method must be one of {WEIGHT_METHODS}, got "
                                                       f"{self.weight_method!r}")
        optimize = parse_techniques(self.optimize)
        if optimize and self.qparams is not None:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"optimize={','.join(optimize)} changes the float model that a "
                                                       f"calibration is made on: it cannot take a calibration made "
                                                       f"before (qparams, a dynamic-shape model's shared one)")
        if optimize and (precision != "int8" or self.quantize is None):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"optimize={','.join(optimize)} shapes an int8 model before "
                                                       f"its calibration: give a calibration dataset (quantize=...)")
        return self.replace(precision=precision, float_layers=float_layers, quantized_algorithm=algorithm,
                            optimize=optimize)

    @property
    def algorithm(self) -> str:
        """`quantized_algorithm`, "normal" when not given."""
        return self.quantized_algorithm or "normal"

    def to_json(self) -> dict[str, Any]:
        """The options a saved dynamic-shape model keeps (`compile_args` in its meta, also the loader's cache key):
        precision, mean, std, and float_layers / quantized_algorithm / qparams when given. A dataset, input shapes
        and custom ops are not kept (a dynamic-shape model is calibrated once, into `qparams`; each shape set brings
        its own shapes)."""
        out: dict[str, Any] = {"precision": self.precision, "mean": self.mean, "std": self.std}
        if self.float_layers:
            out["float_layers"] = list(self.float_layers)
        if self.quantized_algorithm:
            out["quantized_algorithm"] = self.quantized_algorithm
        if self.weight_method:
            out["weight_method"] = self.weight_method
        if self.qparams is not None:
            out["qparams"] = self.qparams
        return out

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> "CompileOptions":
        """The options `to_json` kept (a dynamic-shape `.npurt`'s `compile_args`)."""
        return cls(**{k: v for k, v in value.items() if k in _JSON_FIELDS})


def parse_techniques(value: "str | Sequence[str] | None") -> tuple[str, ...]:
    """`optimize` as a tuple of TECHNIQUES names in their running order (a comma-separated string or a list; None
    or empty: none); INVALID_ARGUMENT naming an unknown one."""
    if value is None:
        return ()
    if not isinstance(value, (str, list, tuple)):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"optimize must be a comma-separated string or a list of "
                                                   f"{', '.join(TECHNIQUES)}, got {type(value).__name__}")
    items = value.split(",") if isinstance(value, str) else list(value)
    names = []
    for item in items:
        name = str(item).strip().lower() if isinstance(item, str) else item
        if name == "":
            continue
        if name not in TECHNIQUES:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"unknown quantisation technique {item!r}: use "
                                                       f"{', '.join(TECHNIQUES)} (comma-separated)")
        names.append(name)
    return tuple(t for t in TECHNIQUES if t in names)


_JSON_FIELDS = ("precision", "mean", "std", "float_layers", "quantized_algorithm", "qparams", "weight_method")
