"""The `.npurt` container: a fixed header, a JSON manifest, one weights blob. No pickle.

Layout (little endian):

    offset 0    8s   magic b"NPURTMDL"
            8   u16  format version (FORMAT_VERSION)
           10   u16  header size (HEADER_SIZE)
           12   16s  SoC name, ASCII, NUL padded
           28   u64  manifest length
           36   u64  blob length
           44   32s  SHA-256 of manifest bytes + blob bytes
           76   ...  zero padding up to HEADER_SIZE
    HEADER_SIZE      manifest (UTF-8 JSON)
    blob_offset      weights blob (blob_offset = manifest end rounded up to 64)

Reading checks magic, version, sizes against the file length and the checksum before parsing anything: a
corrupt, truncated or foreign file is INVALID_MODEL. Writing goes to a temporary file in the target folder that
is renamed into place, so a failed save leaves nothing half-written.

A model compiled by the vendor's toolkit (`.rknn`, magic b"RKNN") has no public format: `refuse_vendor_model` is
the one check that says so, made by every entry point (`rknn_init`, `Context`, `Session`, `RKNNLite`, the CLI).
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
from pathlib import Path

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.files import plain_file_mode, regular_output

MAGIC = b"NPURTMDL"
VENDOR_MAGIC = b"RKNN"          # the first bytes of a model compiled by the vendor's toolkit (format not public)
CONTEXT_MAGIC = b"NPURTCTX"     # a QNN context binary of several graphs (`npurt.model.context_binary`)
_SEVERAL_GRAPHS = ("is a QNN context binary of several graphs: it loads through QNN (contextCreateFromBinary, "
                   "onnxruntime's QNN EP); give one graph's .npurt or its ONNX model here")
FORMAT_VERSION = 1
HEADER_SIZE = 128
_HEADER = struct.Struct("<8sHH16sQQ32s")
_BLOB_ALIGN = 64


def _invalid(msg: str) -> NpuError:
    return NpuError(ErrorCode.INVALID_MODEL, msg)


def _blob_offset(manifest_len: int) -> int:
    """Where the blob starts: the manifest end rounded up to `_BLOB_ALIGN`."""
    return -(-(HEADER_SIZE + manifest_len) // _BLOB_ALIGN) * _BLOB_ALIGN


def declared_size(head: bytes | memoryview) -> int | None:
    """The file size an npurt header declares (header, manifest, padding, blob), or None when `head` does not
    start with an npurt header: lets a reader check a size before it reads (or allocates) the rest."""
    head = bytes(head[:HEADER_SIZE])
    if len(head) < _HEADER.size or head[:len(MAGIC)] != MAGIC:
        return None
    _, _, _, _, mlen, blen, _ = _HEADER.unpack_from(head, 0)
    return _blob_offset(mlen) + blen


def recorded_soc(path: "str | os.PathLike") -> str | None:
    """The target SoC a `.npurt` file's header records (read from the header alone, nothing verified), or None
    when the file is not an npurt model; OSError when it cannot be read."""
    with open(os.fspath(path), "rb") as f:
        head = f.read(_HEADER.size)
    if len(head) < _HEADER.size or head[:len(MAGIC)] != MAGIC:
        return None
    return _HEADER.unpack_from(head, 0)[3].rstrip(b"\0").decode("ascii", "replace")


def encode(soc: str, manifest: dict, blob: np.ndarray) -> bytes:
    """The file bytes for a manifest and a uint8 weights blob."""
    mbytes = json.dumps(manifest, separators=(",", ":")).encode()
    bbytes = np.ascontiguousarray(blob, dtype=np.uint8).tobytes()
    digest = hashlib.sha256(mbytes + bbytes).digest()
    header = _HEADER.pack(MAGIC, FORMAT_VERSION, HEADER_SIZE, soc.encode("ascii")[:16], len(mbytes), len(bbytes),
                          digest)
    blob_offset = _blob_offset(len(mbytes))
    pad = blob_offset - HEADER_SIZE - len(mbytes)
    return header.ljust(HEADER_SIZE, b"\0") + mbytes + b"\0" * pad + bbytes


def decode(data: bytes | bytearray | memoryview) -> tuple[str, dict, np.ndarray]:
    """(soc, manifest, blob) of file bytes, fully verified; INVALID_MODEL on any inconsistency."""
    data = memoryview(data).cast("B")
    if len(data) < HEADER_SIZE:
        raise _invalid(f"not an npurt model: {len(data)} bytes is shorter than the {HEADER_SIZE}-byte header")
    magic, version, hsize, soc_raw, mlen, blen, digest = _HEADER.unpack_from(data, 0)
    if magic[:len(CONTEXT_MAGIC)] == CONTEXT_MAGIC:
        raise _invalid(f"the model {_SEVERAL_GRAPHS}")
    if magic != MAGIC:
        raise _invalid("not an npurt model (bad magic)")
    if version != FORMAT_VERSION:
        raise _invalid(f"npurt model format version {version} is not supported (this build reads "
                       f"{FORMAT_VERSION})")
    if hsize != HEADER_SIZE:
        raise _invalid(f"bad header size {hsize}")
    blob_offset = _blob_offset(mlen)
    if blob_offset + blen != len(data):
        raise _invalid(f"npurt model is truncated or has trailing bytes: expected {blob_offset + blen} bytes, "
                       f"got {len(data)}")
    mbytes = bytes(data[HEADER_SIZE:HEADER_SIZE + mlen])
    h = hashlib.sha256(mbytes)
    h.update(data[blob_offset:])
    if h.digest() != digest:
        raise _invalid("npurt model checksum mismatch (file corrupt)")
    try:
        manifest = json.loads(mbytes)
        soc = soc_raw.rstrip(b"\0").decode("ascii")
    except (ValueError, UnicodeDecodeError) as exc:
        raise _invalid(f"npurt model manifest is unreadable: {exc}") from None
    blob = np.frombuffer(data, np.uint8, count=blen, offset=blob_offset)
    return soc, manifest, blob


def write_atomic(path: "str | os.PathLike", data: bytes) -> None:
    """Write `data` to `path` through a temporary file in the same folder and an atomic rename; the file gets the
    mode a plain write gives it (`plain_file_mode`: the umask applies, an existing file keeps its mode)."""
    target = regular_output(path, "model file")
    folder = target.parent if str(target.parent) else Path(".")
    mode = plain_file_mode(target)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:  # name what the user gave, not the temporary file
        raise OSError(exc.errno, exc.strerror, str(target)) from None
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read_bytes(path_or_bytes: "str | os.PathLike | bytes | bytearray | memoryview") -> bytes | memoryview:
    """The raw bytes of a compiled model given as a path or as bytes."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return path_or_bytes
    p = Path(os.fspath(path_or_bytes))
    if not p.is_file():
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"compiled model not found: {p}")
    return p.read_bytes()


def is_npurt(data: "bytes | bytearray | memoryview | str | os.PathLike") -> bool:
    """True when `data` — a model's bytes (at least its first 8), or the path of a model file — starts with the
    `.npurt` magic; the one check of "is this a compiled model". OSError when a path cannot be read."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        with open(os.fspath(data), "rb") as f:
            data = f.read(len(MAGIC))
    return bytes(memoryview(data).cast("B")[:len(MAGIC)]) == MAGIC


def is_vendor_model(data: "bytes | bytearray | memoryview | str | os.PathLike") -> bool:
    """True when `data` (a model's first bytes, or the path of a model file) is a vendor-compiled `.rknn` model.
    OSError when a path cannot be read."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        with open(os.fspath(data), "rb") as f:
            data = f.read(len(VENDOR_MAGIC))
    return bytes(memoryview(data).cast("B")[:len(VENDOR_MAGIC)]) == VENDOR_MAGIC


def not_a_model(what: str) -> NpuError:
    """INVALID_MODEL for a file (or bytes) that is no model npurt reads: a picture, a text file, a truncated model."""
    return _invalid(f"{what} is neither an npurt compiled model nor ONNX: give an .onnx model, or an .npurt file / "
                    f"QNN context binary written by npurt convert")


def refuse_vendor_model(data: "bytes | bytearray | memoryview | str | os.PathLike", what: str = "model") -> None:
    """INVALID_MODEL, in one line saying what to pass instead, when `data` (bytes or a path) is a vendor-compiled
    `.rknn` model or a QNN context binary of several graphs (which only QNN loads); nothing otherwise (an unreadable
    path is left to the caller's own read)."""
    try:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            with open(os.fspath(data), "rb") as f:
                data = f.read(len(CONTEXT_MAGIC))
    except OSError:
        return
    head = bytes(memoryview(data).cast("B")[:len(CONTEXT_MAGIC)])
    if head == CONTEXT_MAGIC:
        raise _invalid(f"{what} {_SEVERAL_GRAPHS}")
    if is_vendor_model(head):
        raise _invalid(f"{what} is a vendor-compiled .rknn model, which only runs on the board: pass the ONNX model "
                       f"it was built from, or an .npurt compiled from it (npurt convert model.onnx -o model.npurt)")
