"""A context binary of several compiled graphs (a QNN context with N graphs), optionally over one shared weight store.

One graph is written as its plain `.npurt` file, exactly as before, so every existing reader
keeps working. Several graphs are a container (little endian):

    offset 0    8s   magic b"NPURTCTX"
            8   u16  format version (FORMAT_VERSION)
           10   u16  header size (HEADER_SIZE)
           12   u32  number of graphs N
           16   u64  shared weight store length S (0: each graph carries its own weights)
           24   u64  total length (header, table, store, records)
           32   32s  SHA-256 of everything after the header
    HEADER_SIZE      u64[N] record lengths
    64-aligned       the shared weight store (S bytes)
    64-aligned       N records, each a `.npurt` file; with a store, a record's own blob is empty and its plan lays its
                     weights out in the store

Weight sharing (`share_weights`) is content-addressed: every stored weight entry of every graph (its quantised,
stored bytes, scales included as entries of their own) is keyed by its bytes, and identical bytes are stored once.
Each graph keeps its own record of how to read its entries (type, shape, scale entry), so sharing bytes never changes
what a graph computes.
"""
from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, replace

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.model import file_format
from npurt.model.compiled import CompiledModel, read_compiled
from npurt.model.weights import WEIGHT_ALIGN, WEIGHT_TOTAL_ALIGN, build_blob, layout_blob

MAGIC = file_format.CONTEXT_MAGIC
FORMAT_VERSION = 1
HEADER_SIZE = 64
MAX_GRAPHS = 4096
_HEADER = struct.Struct("<8sHHIQQ32s")
_ALIGN = 64


def _up(n: int, a: int = _ALIGN) -> int:
    return -(-int(n) // a) * a


def _invalid(msg: str) -> NpuError:
    return NpuError(ErrorCode.INVALID_MODEL, msg)


@dataclass(frozen=True)
class ContextBinary:
    """The graphs of a context binary; `shared`: they read one weight store (each model's `weight_blob` is the same
    array)."""

    models: list[CompiledModel]
    shared: bool


def is_context_binary(data: "bytes | bytearray | memoryview") -> bool:
    """True when `data` starts with the multi-graph container's magic."""
    return bytes(memoryview(data).cast("B")[:len(MAGIC)]) == MAGIC


def declared_size(head: "bytes | memoryview") -> int | None:
    """The size a container header (or an `.npurt` header) declares, or None for neither: lets a reader check a
    size before it reads the rest."""
    head = bytes(head[:HEADER_SIZE])
    if len(head) >= _HEADER.size and head[:len(MAGIC)] == MAGIC:
        return int(_HEADER.unpack_from(head, 0)[5])
    return file_format.declared_size(head)


def own_weight_bytes(model: CompiledModel) -> int:
    """The weight bytes `model` takes on its own (each entry 64-aligned, the region a 1 KiB multiple): what it would
    store without sharing."""
    return _up(sum(_up(s, WEIGHT_ALIGN) for s in model.plan.weight_sizes.values()), WEIGHT_TOTAL_ALIGN)


def weight_bytes(models: list[CompiledModel], share: bool) -> tuple[int, int]:
    """(weight bytes stored, weight bytes without sharing) of a context's graphs: with `share`, the content-addressed
    store (as `encode` writes it); models read from a weight-shared binary already hold that store."""
    in_store = len(models) > 1 and all(m.weight_blob is models[0].weight_blob for m in models)
    unshared = sum(own_weight_bytes(m) if in_store else m.plan.weight_size for m in models)
    if not share or not models:
        return unshared, unshared
    return (models[0].plan.weight_size if in_store else int(share_weights(models)[0].size)), unshared


def share_weights(models: list[CompiledModel]) -> tuple[np.ndarray, list[dict[str, int]]]:
    """(store, per model {entry: offset in the store}): every distinct stored weight once (content-addressed)."""
    unique: dict[str, np.ndarray] = {}
    keys: list[dict[str, str]] = []
    for m in models:
        blob = m.weight_blob.reshape(-1).view(np.uint8)
        mine = {}
        for name, off in m.plan.weight_offsets.items():
            raw = blob[off:off + m.plan.weight_sizes[name]]
            key = hashlib.sha256(raw).hexdigest()
            unique.setdefault(key, raw)
            mine[name] = key
        keys.append(mine)
    placed, total = layout_blob(unique)
    store = build_blob(unique, placed, total)
    return store, [{name: placed[key][0] for name, key in mine.items()} for mine in keys]


def encode(models: list[CompiledModel], share: bool = False) -> bytes:
    """The context binary of `models` (in graph order); `share`: one content-addressed weight store."""
    if not models:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "a context binary needs at least one graph")
    if len(models) == 1:                                    # nothing to share: the plain .npurt
        return models[0].to_bytes()
    _check_names(models)
    if share:
        store, offsets = share_weights(models)
        records = [m.to_bytes(store_plan=replace(m.plan, weight_offsets=offs, weight_size=int(store.size)))
                   for m, offs in zip(models, offsets)]
        store_bytes = store.tobytes()
    else:
        records, store_bytes = [m.to_bytes() for m in models], b""
    table = struct.pack(f"<{len(records)}Q", *(len(r) for r in records))
    body = bytearray(table)
    for chunk in ([store_bytes] if store_bytes else []) + records:
        body += b"\0" * (_up(HEADER_SIZE + len(body)) - HEADER_SIZE - len(body))
        body += chunk
    header = _HEADER.pack(MAGIC, FORMAT_VERSION, HEADER_SIZE, len(records), len(store_bytes),
                          HEADER_SIZE + len(body), hashlib.sha256(body).digest())
    return header + bytes(body)


def decode(data: "bytes | bytearray | memoryview") -> ContextBinary:
    """The graphs of a context binary (a container or a plain `.npurt`), fully verified; INVALID_MODEL otherwise."""
    data = memoryview(data).cast("B")
    if not is_context_binary(data):
        return ContextBinary([read_compiled(data)], False)
    if len(data) < HEADER_SIZE:
        raise _invalid(f"context binary of {len(data)} bytes is shorter than its {HEADER_SIZE}-byte header")
    _, version, hsize, n, store_len, total, digest = _HEADER.unpack_from(data, 0)
    if version != FORMAT_VERSION or hsize != HEADER_SIZE:
        raise _invalid(f"context binary format version {version} / header {hsize} is not supported (this build "
                       f"reads {FORMAT_VERSION})")
    if total != len(data):
        raise _invalid(f"context binary is truncated or has trailing bytes: expected {total} bytes, got {len(data)}")
    if not 1 <= n <= MAX_GRAPHS or HEADER_SIZE + 8 * n > total:
        raise _invalid(f"context binary declares {n} graphs")
    if hashlib.sha256(data[HEADER_SIZE:]).digest() != digest:
        raise _invalid("context binary checksum mismatch (file corrupt)")
    lengths = struct.unpack_from(f"<{n}Q", data, HEADER_SIZE)
    pos = HEADER_SIZE + 8 * n
    store = None
    if store_len:
        pos = _up(pos)
        if pos + store_len > total:
            raise _invalid("context binary: the weight store runs past the end")
        store = np.frombuffer(data, np.uint8, count=store_len, offset=pos)
        pos += store_len
    models = []
    for length in lengths:
        pos = _up(pos)
        if pos + length > total:
            raise _invalid("context binary: a graph record runs past the end")
        models.append(read_compiled(data[pos:pos + length], store=store))
        pos += length
    if pos != total:
        raise _invalid(f"context binary: {total - pos} bytes after the last graph")
    _check_names(models)
    return ContextBinary(models, store is not None)


def _check_names(models: list[CompiledModel]) -> None:
    """INVALID_MODEL unless every graph has its own name (graphRetrieve finds graphs by name)."""
    names = [m.graph.name for m in models]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise _invalid(f"a context binary's graphs need distinct names; {twice} appear more than once")
