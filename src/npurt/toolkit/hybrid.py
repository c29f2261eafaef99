"""The files of the toolkit's hybrid quantisation: `hybrid_quantization_step1` writes `<stem>.model`,
`<stem>.data` and `<stem>.quantization.cfg` in the current folder; the user lists layers to keep in float under
`custom_quantize_layers:` in the cfg; `hybrid_quantization_step2` reads the three back and builds the model.

The cfg is the toolkit's YAML: `custom_quantize_layers:` (`{}`, or one `    <tensor>: float16` line per layer) then
`quantize_parameters:` with one entry per tensor (qtype, qmethod, dtype, min, max, scale, zero_point, ori_min,
ori_max). Written and read here without a YAML library (only this layout is read; a name that is not a plain word
is written double-quoted). The scale and zero point of each tensor are what step2 builds with (a calibration is not
run again); min / max are written for reading.

npurt's `.model` is a JSON record of the model's configuration and input shapes, its `.data` the ONNX model as it
was loaded (sub-graph selection and fixed inputs applied): neither is the toolkit's own (unpublished) format.
"""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any, Mapping

from npurt.errors import ErrorCode, NpuError

FLOAT_TYPES = ("float16", "float32", "fp16")
FORMAT = "npurt-hybrid-1"
"""The `format` of the `.model` record step1 writes."""
_PLAIN = re.compile(r"^[A-Za-z0-9_./\-#]+$")


def _name(text: str) -> str:
    return text if _PLAIN.match(text) else json.dumps(text)


def _unname(text: str) -> str:
    text = text.strip()
    if text.startswith('"'):
        return json.loads(text)
    if text.startswith("'") and text.endswith("'"):
        return text[1:-1].replace("''", "'")
    return text


def file_names(model_path: "str | os.PathLike") -> tuple[Path, Path, Path]:
    """(`<stem>.model`, `<stem>.data`, `<stem>.quantization.cfg`) in the current folder, named after the model
    file's stem as the toolkit names them."""
    stem = Path(os.fspath(model_path)).stem or "model"
    return Path(f"{stem}.model"), Path(f"{stem}.data"), Path(f"{stem}.quantization.cfg")


def format_cfg(qparams: Mapping[str, tuple[float, int]], custom: Mapping[str, str] | None = None) -> str:
    """The cfg text for int8 parameters {tensor: (scale, zero_point)} and the layers kept in float."""
    lines = ["custom_quantize_layers:" + ("" if custom else " {}")]
    lines += [f"    {_name(name)}: {dtype}" for name, dtype in (custom or {}).items()]
    lines.append("quantize_parameters:")
    for name, (scale, zp) in qparams.items():
        lo, hi = (-128 - zp) * scale, (127 - zp) * scale
        lines += [f"    {_name(name)}:", "        qtype: asymmetric_quantized", "        qmethod: layer",
                  "        dtype: int8"]
        for key, value in (("min", lo), ("max", hi), ("scale", scale), ("zero_point", int(zp)),
                           ("ori_min", lo), ("ori_max", hi)):
            lines += [f"        {key}:", f"        - {value!r}"]
    return "\n".join(lines) + "\n"


def _value(text: str) -> Any:
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        return [_value(t) for t in text[1:-1].split(",") if t.strip()]
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return _unname(text)


def _entries(text: str) -> list[tuple[str, str]]:
    """`key: value` pairs of a flow mapping `{a: b, c: d}`."""
    body = text.strip()[1:-1].strip()
    out = []
    for part in body.split(",") if body else []:
        key, _, value = part.rpartition(":")
        out.append((_unname(key), value.strip()))
    return out


def parse_cfg(text: str) -> tuple[dict[str, str], dict[str, tuple[float, int]]]:
    """({tensor: dtype} of custom_quantize_layers, {tensor: (scale, zero_point)} of quantize_parameters);
    INVALID_ARGUMENT naming the line that does not fit the layout."""
    custom: dict[str, str] = {}
    params: dict[str, dict[str, Any]] = {}
    section, tensor, key = None, None, None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #")[0].rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip())
        body = line.strip()
        if indent == 0:
            head, _, rest = body.partition(":")
            section, tensor, key = head.strip(), None, None
            if section == "custom_quantize_layers" and rest.strip().startswith("{"):
                custom.update({k: v for k, v in _entries(rest)})
            continue
        if section == "custom_quantize_layers":
            name, _, dtype = body.rpartition(":")
            if not name:
                raise NpuError(ErrorCode.INVALID_ARGUMENT, f"quantization cfg line {lineno}: expected "
                                                           f"'<tensor>: float16', got {body!r}")
            custom[_unname(name)] = dtype.strip()
        elif section == "quantize_parameters":
            if body.startswith("- "):
                if tensor is None or key is None:
                    raise NpuError(ErrorCode.INVALID_ARGUMENT, f"quantization cfg line {lineno}: a list item "
                                                               f"outside a parameter")
                params[tensor].setdefault(key, []).append(_value(body[2:]))
            elif indent <= 4 and body.endswith(":"):
                tensor, key = _unname(body[:-1]), None
                params[tensor] = {}
            elif tensor is not None:
                key, _, value = body.partition(":")
                key = key.strip()
                if value.strip():
                    params[tensor][key] = _value(value)
        else:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"quantization cfg line {lineno}: {body!r} is outside "
                                                       f"custom_quantize_layers / quantize_parameters")
    qparams = {}
    for name, p in params.items():
        if p.get("scale") is None or p.get("zero_point") is None or str(p.get("dtype", "")).startswith("float"):
            continue                # not quantised: e.g. a float32 model input (`dtype: float32`, `scale: []`)
        scale, zp = _single(p["scale"], name, "scale"), _single(p["zero_point"], name, "zero_point")
        if not (math.isfinite(scale) and scale > 0):
            raise _bad_param(name, f"scale {scale!r} is not a positive finite number")
        if not (float(zp).is_integer() and -128 <= zp <= 127):
            raise _bad_param(name, f"zero_point {zp!r} is not an int8 value (-128..127)")
        qparams[name] = (float(scale), int(zp))
    for name in custom:
        if not name:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, "quantization cfg: custom_quantize_layers lists a layer with "
                                                       "no name")
    return custom, qparams


def _bad_param(tensor: str, why: str) -> NpuError:
    return NpuError(ErrorCode.INVALID_ARGUMENT, f"quantization cfg: quantize_parameters of {tensor!r}: {why}")


def _single(value: Any, tensor: str, key: str) -> float:
    """The one number of a per-layer parameter (`- 0.5` or `0.5`)."""
    if isinstance(value, list):
        if len(value) != 1:
            raise _bad_param(tensor, f"{key} must be one value (per-layer), got {value!r}")
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad_param(tensor, f"{key} {value!r} is not a number")
    return value


def write_files(model_path: Any, record: Mapping[str, Any], onnx_bytes: bytes,
                qparams: Mapping[str, tuple[float, int]], custom: Mapping[str, str] | None = None
                ) -> tuple[Path, Path, Path]:
    """Write step1's three files (see the module doc); their paths."""
    model_file, data_file, cfg_file = file_names(model_path)
    model_file.write_text(json.dumps(record, indent=1) + "\n")
    data_file.write_bytes(onnx_bytes)
    cfg_file.write_text(format_cfg(qparams, custom))
    return model_file, data_file, cfg_file


def read_files(model_input: Any, data_input: Any, cfg_input: Any
               ) -> tuple[dict[str, Any], bytes, dict[str, str], dict[str, tuple[float, int]]]:
    """(record, ONNX bytes, custom layers, qparams) from step1's files (as edited by the user)."""
    try:
        record = json.loads(Path(os.fspath(model_input)).read_text())
        onnx_bytes = Path(os.fspath(data_input)).read_bytes()
        cfg = Path(os.fspath(cfg_input)).read_text()
    except OSError as exc:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{exc.filename}: {exc.strerror}") from None
    except ValueError as exc:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{os.fspath(model_input)} is not a model file written by "
                                                   f"hybrid_quantization_step1 ({exc})") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT or \
            not isinstance(record.get("config", {}), dict) or not isinstance(record.get("model"), (str, type(None))):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{os.fspath(model_input)} is not a model file written by "
                                                   f"hybrid_quantization_step1 (a {FORMAT!r} record)")
    from npurt.model.sources import read_onnx
    read_onnx(onnx_bytes, name=data_input)  # INVALID_MODEL naming a .data that is not an ONNX model
    custom, qparams = parse_cfg(cfg)
    return record, onnx_bytes, custom, qparams
