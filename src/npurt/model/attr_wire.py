"""ONNX `AttributeProto` bytes decoded without onnx: how a `.npurt` manifest's node attributes are read.

The manifest stores each attribute as the serialised ONNX AttributeProto (base64), which any protobuf / onnx reader
understands. Loading a model only needs the scalar and list kinds (FLOAT, INT, STRING, FLOATS, INTS, STRINGS), so
they are read straight from the protobuf wire format here: importing onnx (and ml_dtypes) costs about a second,
ten times what `npurt perf` does with the loaded model. Tensor and graph attributes fall back to onnx.
Field numbers and attribute types: onnx.proto (AttributeProto).
"""
from __future__ import annotations

import struct
from typing import Any

# AttributeProto fields (onnx.proto) and AttributeType values
_NAME, _F, _I, _S, _FLOATS, _INTS, _STRINGS, _TYPE = 1, 2, 3, 4, 7, 8, 9, 20
_FLOAT, _INT, _STRING, _FLOATS_T, _INTS_T, _STRINGS_T = 1, 2, 3, 6, 7, 8
_PLAIN = {_FLOAT, _INT, _STRING, _FLOATS_T, _INTS_T, _STRINGS_T}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated or overlong varint in an attribute")
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7


def _int64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _fields(data: bytes):
    """(field number, wire type, value) of each field: an int for varints, bytes otherwise."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        num, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, pos = data[pos:pos + size], pos + size
        elif wire == 2:
            size, pos = _varint(data, pos)
            value, pos = data[pos:pos + size], pos + size
        else:
            raise ValueError(f"unsupported protobuf wire type {wire} in an attribute")
        if pos > len(data):
            raise ValueError("truncated attribute")
        yield num, wire, value


def decode_attribute(data: bytes) -> tuple[str, Any]:
    """(name, value) of a serialised AttributeProto, the value as `npurt.model.onnx_import.attribute_value` gives
    it: floats and ints as Python numbers, strings decoded, lists as lists, tensors as numpy arrays."""
    name, kind = "", 0
    f, i, s = 0.0, 0, b""
    floats: list[float] = []
    ints: list[int] = []
    strings: list[bytes] = []
    for num, wire, value in _fields(data):
        if num == _NAME and wire == 2:
            name = value.decode("utf-8", "replace")
        elif num == _TYPE and wire == 0:
            kind = value
        elif num == _F and wire == 5:
            f = struct.unpack("<f", value)[0]
        elif num == _I and wire == 0:
            i = _int64(value)
        elif num == _S and wire == 2:
            s = value
        elif num == _FLOATS:
            floats += struct.unpack(f"<{len(value) // 4}f", value) if wire == 2 else struct.unpack("<f", value)
        elif num == _INTS:
            if wire == 2:
                pos = 0
                while pos < len(value):
                    v, pos = _varint(value, pos)
                    ints.append(_int64(v))
            else:
                ints.append(_int64(value))
        elif num == _STRINGS and wire == 2:
            strings.append(value)
    if kind not in _PLAIN:
        return name, _with_onnx(data)
    return name, {_FLOAT: f, _INT: i, _STRING: s.decode("utf-8", "replace"), _FLOATS_T: floats, _INTS_T: ints,
                  _STRINGS_T: [v.decode("utf-8", "replace") for v in strings]}[kind]


def _with_onnx(data: bytes) -> Any:
    """Tensor, graph and other attribute kinds: onnx reads them (imported only here)."""
    import onnx
    from npurt.model.onnx_import import attribute_value
    a = onnx.AttributeProto()
    a.ParseFromString(data)
    return attribute_value(a)
