"""Copy kernels behind `convert`: 4-D lane transposes and whole-group moves, tiled to stay in L2.

numpy copies one item per loop step, so a byte-wise transpose runs at ~1 byte per cycle. The kernels here move
wider items instead: a transpose of 1-byte lanes is done as a transpose of 4-byte units (4 lanes each) into
a scratch tile, followed by narrowing casts (uint32 -> uint8, SIMD in numpy) of the scratch read at byte
offsets 0..3, which pick lane p of every unit (little-endian): 1.2-1.4x numpy's plain byte transpose.
Packing has no such trick (see `pack_lanes`). Whole C2 groups move as single 4/8/16+-byte items.
"""
from __future__ import annotations

import sys

import numpy as np

TILE_BYTES = 384 * 1024          # scratch tile of the lane kernels: fits L2 with its source and destination
PLAIN_TILE_BYTES = 64 * 1024     # tile of a plain many-lane unpack (1.5x over one pass for K = 255)
PACK_LANES = 16                  # lanes (planes) gathered per pass by pack_lanes
GROUP_TILE_BYTES = 128 * 1024    # slice of the group moves: source lines stay in L1/L2 while dst fills
_LITTLE = sys.byteorder == "little"
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _as_uint(a: np.ndarray) -> np.ndarray:
    """The same memory as an unsigned integer array of the same item size (bit-exact copies and casts)."""
    return a.view(_UINT[a.dtype.itemsize]) if a.dtype.itemsize in _UINT else a


def _lanes_per_unit(src: np.ndarray, k: int) -> int:
    """4 when the unit trick applies (1-byte lanes, K % 4 == 0, 4-byte aligned rows), else 1.

    For 2-byte lanes numpy's plain uint16 transpose measured faster than the trick (0.41 against 0.34 of
    np.copyto at 1.5 MiB), so they take the plain path.
    """
    if not _LITTLE or src.dtype.itemsize != 1 or k % 4 or src.strides[-1] != 1:
        return 1
    if any(s % 4 for s in src.strides[:-1]) or src.ctypes.data % 4:
        return 1
    return 4


def _tiles(b: int, m1: int, row_bytes: int, tile_bytes: int):
    """(b0, b1, i0, i1) tiles of a (B, M1, row) array of about `tile_bytes` each; several b per tile if small."""
    rows = max(1, tile_bytes // max(1, row_bytes))
    if rows >= m1:
        per_b = max(1, rows // max(1, m1))
        for b0 in range(0, b, per_b):
            yield b0, min(b, b0 + per_b), 0, m1
    else:
        for b0 in range(b):
            for i0 in range(0, m1, rows):
                yield b0, b0 + 1, i0, min(m1, i0 + rows)


def unpack_lanes(dst: np.ndarray, src: np.ndarray) -> None:
    """dst[b, k, i, j] = src[b, i, j, k] for 4-D arrays (lanes k of each pixel spread to planes)."""
    bn, m1, m2, k = src.shape
    if src.size == 0:
        return
    g = _lanes_per_unit(src, k)
    d, s = _as_uint(dst), _as_uint(src)
    if g == 1 and k < 16:
        np.copyto(d, s.transpose(0, 3, 1, 2))
        return
    if g == 1:                                               # many lanes: K passes over an L2-sized tile
        for b0, b1, i0, i1 in _tiles(bn, m1, m2 * k * src.itemsize, PLAIN_TILE_BYTES):
            np.copyto(d[b0:b1, :, i0:i1], s[b0:b1, i0:i1].transpose(0, 3, 1, 2))
        return
    e = src.dtype.itemsize
    units = s.view(np.uint32)                                # (B, M1, M2, K/g)
    ku = k // g
    scratch = np.empty(0, np.uint32)
    for b0, b1, i0, i1 in _tiles(bn, m1, m2 * k * e, TILE_BYTES):
        shape = (b1 - b0, ku, i1 - i0, m2)
        n = shape[0] * shape[1] * shape[2] * shape[3]
        if n + 1 > scratch.size:
            scratch = np.empty(n + 1, np.uint32)
        tile = scratch[:n].reshape(shape)
        np.copyto(tile, units[b0:b1, i0:i1].transpose(0, 3, 1, 2))
        for p in range(g):
            lane = np.ndarray(shape, np.uint32, buffer=scratch, offset=p * e, strides=tile.strides)
            np.copyto(d[b0:b1, p::g, i0:i1], lane, casting="unsafe")


def pack_lanes(dst: np.ndarray, src: np.ndarray) -> None:
    """dst[b, i, j, k] = src[b, k, i, j] for 4-D arrays (planes gathered into the lanes of each pixel).

    A strided copy, PACK_LANES lanes at a time: one pass over all K planes at once reads K streams a plane
    apart and measured 5x slower for K = 256. No wide-unit trick: merging bytes into wider units with
    shift-and-or (or unaligned views) measured slower than numpy's byte loop.
    """
    d, s = _as_uint(dst), _as_uint(src)
    k = dst.shape[3]
    for k0 in range(0, k, PACK_LANES):
        np.copyto(d[..., k0:k0 + PACK_LANES], s[:, k0:k0 + PACK_LANES].transpose(0, 2, 3, 1))


def _group_dtype(nbytes: int) -> np.dtype | None:
    if nbytes in (4, 8):
        return np.dtype(_UINT[nbytes])
    if nbytes >= 16 and nbytes % 8 == 0:
        return np.dtype(f"V{nbytes}")
    return None


def move_groups(dst: np.ndarray, src: np.ndarray, axes: tuple[int, ...], tile_axis: int) -> None:
    """np.copyto(dst, src.transpose(axes)) for 5-D arrays whose last axis (a C2 group) stays last.

    Each group moves as one item (uint32/uint64/void) when sizes and strides allow; the copy walks batch by
    batch and along dst axis `tile_axis` (H) in slices of about GROUP_TILE_BYTES.
    """
    if dst.size == 0:
        return
    e = src.dtype.itemsize
    unit = _group_dtype(dst.shape[-1] * e)
    ok = unit is not None and src.strides[-1] == e and dst.strides[-1] == e \
        and all(st % min(8, unit.itemsize) == 0 for st in src.strides[:-1] + dst.strides[:-1]) \
        and src.ctypes.data % min(8, unit.itemsize) == 0 and dst.ctypes.data % min(8, unit.itemsize) == 0
    if ok:
        d, s = dst.view(unit)[..., 0], src.view(unit)[..., 0].transpose(axes[:4])
    else:
        d, s = _as_uint(dst), _as_uint(src).transpose(axes)
    slice_bytes = dst[0].nbytes // max(1, dst.shape[tile_axis])
    step = max(1, GROUP_TILE_BYTES // max(1, slice_bytes))
    for n in range(dst.shape[0]):
        for i0 in range(0, dst.shape[tile_axis], step):
            sl = (n,) + (slice(None),) * (tile_axis - 1) + (slice(i0, i0 + step),)
            np.copyto(d[sl], s[sl])
