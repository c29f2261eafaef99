"""Node attributes of a `.npurt` read without onnx (`npurt.model.attr_wire`): the same values onnx gives for every
kind a compiled graph stores, packed and unpacked lists, corrupt bytes refused; loading a model and predicting its
time imports neither onnx nor ml_dtypes (what made `npurt perf` slow)."""
from __future__ import annotations

import base64
import json
import subprocess
import sys

import numpy as np
import pytest
from onnx import helper

import npurt
from npurt.errors import ErrorCode, NpuError
from npurt.model import file_format, zoo
from npurt.model.attr_wire import decode_attribute
from npurt.model.onnx_import import attribute_value


@pytest.mark.parametrize("value", [0.1, -3.5e-7, 7, -1, 2**40, -(2**62), "nearest", "", [1.5, -2.25, 1e30], [],
                                   [0, -1, 3, 2**35, -(2**40)], ["a", "bé"], np.arange(6, dtype=np.float32)])
def test_same_values_as_onnx(value):
    if isinstance(value, np.ndarray):
        from onnx import numpy_helper
        value = numpy_helper.from_array(value)
    a = helper.make_attribute("k", value) if value != [] else helper.make_attribute("k", value, attr_type=7)
    raw = a.SerializeToString()
    name, got = decode_attribute(raw)
    want = attribute_value(a)
    assert name == "k"
    if isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and np.array_equal(got, want)
    else:
        assert got == want and type(got) is type(want)
        if isinstance(want, list):
            assert [type(v) for v in got] == [type(v) for v in want]


def test_packed_lists_read_as_unpacked():
    """proto2 writers emit repeated scalars one field each; packed encodings (proto3 writers) read the same."""
    ints = [3, -1, 300]
    varints = b"".join(_varint(v & (2**64 - 1)) for v in ints)
    floats = np.array([1.5, -0.25], "<f4").tobytes()
    raw = (b"\x0a\x01k" + b"\x42" + _varint(len(varints)) + varints + b"\xa0\x01\x07")     # ints=8 packed, type=INTS
    assert decode_attribute(raw) == ("k", ints)
    raw = b"\x0a\x01k" + b"\x3a" + _varint(len(floats)) + floats + b"\xa0\x01\x06"         # floats=7 packed, FLOATS
    assert decode_attribute(raw) == ("k", [1.5, -0.25])


def _varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def test_corrupt_attribute_bytes_are_an_invalid_model(tmp_path):
    good = helper.make_attribute("pads", [1, 1, 1, 1]).SerializeToString()
    for bad in (good[:-1], b"\x0f", b"\x1a\xff"):
        with pytest.raises(ValueError):
            decode_attribute(bad)
    path = tmp_path / "m.npurt"
    npurt.compile(zoo.small_convnet(), soc="rk3588", progress=False).save(path)
    soc, manifest, blob = file_format.decode(file_format.read_bytes(path))
    node = next(n for n in manifest["graph"]["nodes"] if n["attrs"])
    node["attrs"][next(iter(node["attrs"]))] = base64.b64encode(b"\x1a\xff").decode()
    with pytest.raises(NpuError) as e:
        npurt.load_compiled(file_format.encode(soc, manifest, blob))
    assert e.value.code == ErrorCode.INVALID_MODEL


def test_loading_and_predicting_imports_no_onnx(tmp_path):
    path = tmp_path / "m.npurt"
    compiled = npurt.compile(zoo.small_convnet(), soc="rk3588", progress=False)
    compiled.save(path)
    code = ("import sys, json, npurt\n"
            "from npurt.timing import predict\n"
            f"c = npurt.load_compiled({str(path)!r})\n"
            "p = predict(c, 'rk3588')\n"
            "print(json.dumps({'ms': p.total_ms, 'nodes': [[n.op_type, {k: repr(v) for k, v in n.attrs.items()}]"
            " for n in c.graph.nodes], 'mods': sorted(m for m in sys.modules if m.split('.')[0] in "
            "('onnx', 'ml_dtypes', 'google'))}))\n")
    out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert out["mods"] == []
    from npurt.timing import predict
    again = npurt.load_compiled(path)            # this process has onnx loaded: the same attributes either way
    assert out["nodes"] == [[n.op_type, {k: repr(v) for k, v in n.attrs.items()}] for n in again.graph.nodes]
    assert out["ms"] == predict(compiled, "rk3588").total_ms
