"""Exact fit search for a capacity: a MiniMalloc-style branch and bound (after Moffitt, ASPLOS'24),
re-implemented in pure Python + numpy.

Only *canonical* plans are explored: buffers are placed in non-decreasing offset order, each at its
minimum offset (on top of the placed buffers it overlaps in time), ties broken by a static preorder.
Pruning, all evaluated for every child of a node at once with numpy:
- section inference: a section is a maximal time span with a constant live set; its floor is the
  lowest offset any unplaced buffer in it can still take (raised both by placements and by the
  minimum offsets of its unplaced buffers); floor + unplaced bytes must not exceed the capacity;
- dominance: no buffer is placed at or above the lowest possible top of an unplaced buffer
  (that would leave a gap only a later buffer could fill: a non-canonical duplicate);
- dynamic decomposition: when no unplaced buffer crosses a section boundary any more, the two
  sides are solved independently.
Several preorders are tried round-robin with a doubling node budget, as one usually succeeds fast.
"""
from __future__ import annotations

import sys
import time

import numpy as np

OK, NOT_FOUND, ABORTED, TIMEOUT = 0, 1, 2, 3
PREORDERS = ("WAT", "TAW", "TWA")
_BIG = np.iinfo(np.int64).max // 4


class _Search:
    def __init__(self, start, end, size, align, capacity: int, deadline: float) -> None:
        self.n = n = len(size)
        times = np.unique(np.concatenate([start, end]))
        self.lo = np.searchsorted(times, start).astype(np.int64)
        self.hi = np.searchsorted(times, end).astype(np.int64)        # sections [lo, hi)
        self.lo_l, self.hi_l = self.lo.tolist(), self.hi.tolist()
        self.size = np.asarray(size, np.int64)
        self.size_l = self.size.tolist()
        self.align = np.asarray(align, np.int64)
        self.area = (self.size * (np.asarray(end) - np.asarray(start))).tolist()
        self.capacity = int(capacity)
        self.deadline = deadline
        nsec = self.nsec = max(1, len(times) - 1)
        self.cover = np.zeros((n, nsec), bool)
        for i in range(n):
            self.cover[i, self.lo_l[i]:self.hi_l[i]] = True
        self.floor = np.zeros(nsec, np.int64)
        self.total = (self.cover * self.size[:, None]).sum(axis=0).astype(np.int64)
        # cuts[k]: unplaced buffers crossing the boundary between sections k and k+1
        self.cuts = (self.cover[:, :-1] & self.cover[:, 1:]).sum(axis=0).tolist() + [0]
        st, en = np.asarray(start), np.asarray(end)
        self.overlaps = [np.flatnonzero((st < en[i]) & (st[i] < en) & (np.arange(n) != i)) for i in range(n)]
        self.offset = np.full(n, -1, np.int64)
        self.min_off = np.zeros(n, np.int64)
        self.solution = np.zeros(n, np.int64)
        self.nodes_left = 0

    def preorder(self, buffers: np.ndarray, heuristic: str) -> np.ndarray:
        tot = self.total
        keys = []
        for c in heuristic:
            if c == "W":
                keys.append(-(self.hi[buffers] - self.lo[buffers]))
            elif c == "A":
                keys.append(-np.asarray(self.area, np.int64)[buffers])
            elif c == "T":
                keys.append(-np.array([int(tot[self.lo_l[b]:self.hi_l[b]].max()) for b in buffers.tolist()], np.int64))
        keys.append(buffers)
        return buffers[np.lexsort(keys[::-1])]

    def sub_solve(self, buffers: np.ndarray, sec_lo: int, sec_hi: int, heuristic: str) -> int:
        pre = self.preorder(buffers, heuristic)
        return self.search(pre, sec_lo, sec_hi, np.arange(len(pre)), 0, -1, heuristic)

    def search(self, pre: np.ndarray, sec_lo: int, sec_hi: int, cand: np.ndarray, min_offset: int,
               min_pre: int, heuristic: str) -> int:
        if self.nodes_left <= 0:
            return ABORTED
        self.nodes_left -= 1
        if time.perf_counter() > self.deadline:
            return TIMEOUT
        offset, min_off, size = self.offset, self.min_off, self.size
        cand = cand[offset[pre[cand]] < 0]
        if not len(cand):
            return OK
        bufs = pre[cand]
        mo = min_off[bufs]
        srt = np.lexsort((cand, mo))
        cand, bufs, mo = cand[srt], bufs[srt], mo[srt]
        min_height = int((mo + size[bufs]).min())
        kids = self.viable(cand, bufs, mo, sec_lo, sec_hi, min_offset, min_pre, min_height)
        floor, total, cover = self.floor, self.total, self.cover
        cap = self.capacity
        for o, p, b in kids:
            h = o + self.size_l[b]
            offset[b] = o
            self.solution[b] = o
            ov = self.overlaps[b]
            ov = ov[(offset[ov] < 0) & (min_off[ov] < h)]
            old_mo = min_off[ov]
            al = self.align[ov]
            min_off[ov] = -(-h // al) * al
            saved = floor[sec_lo:sec_hi].copy()
            lo, hi = self.lo_l[b], self.hi_l[b]
            floor[lo:hi] = h
            total[lo:hi] -= self.size_l[b]
            status = NOT_FOUND
            # floor inference: unplaced buffers of a section sit at or above their minimum offsets
            rest = pre[cand]
            rest = rest[offset[rest] < 0]
            if len(rest):
                sub = cover[rest, sec_lo:sec_hi]
                low = np.where(sub, min_off[rest][:, None], _BIG).min(axis=0)
                f = floor[sec_lo:sec_hi]
                np.maximum(f, np.where(low < _BIG, low, f), out=f)
                if int((np.maximum(f, o) + total[sec_lo:sec_hi]).max()) <= cap:
                    status = self.decompose(pre, sec_lo, sec_hi, cand, b, o, p, heuristic)
            else:
                status = OK
            floor[sec_lo:sec_hi] = saved
            total[lo:hi] += self.size_l[b]
            min_off[ov] = old_mo
            offset[b] = -1
            if status != NOT_FOUND:
                return status
        return NOT_FOUND

    def viable(self, cand, bufs, mo, sec_lo, sec_hi, min_offset, min_pre, min_height) -> list:
        """Children (offset, preorder index, buffer) that pass canonicity, dominance and section
        inference, evaluated before any state change: placing b at o makes b's own sections need
        o + total <= capacity and every other section max(floor, o) + total <= capacity."""
        keep = (mo < min_height) & ((mo > min_offset) | ((mo == min_offset) & (cand > min_pre)))
        keep &= mo + self.size[bufs] <= self.capacity
        if not keep.any():
            return []
        cand, bufs, offs = cand[keep], bufs[keep], mo[keep]
        cap = self.capacity
        floor = self.floor[sec_lo:sec_hi]
        total = self.total[sec_lo:sec_hi]
        lo = self.lo[bufs] - sec_lo
        hi = self.hi[bufs] - sec_lo
        distinct, which = np.unique(offs, return_inverse=True)
        g = np.maximum(floor[None, :], distinct[:, None]) + total[None, :]
        pad = np.full((len(distinct), 1), -1, np.int64)
        pref = np.maximum.accumulate(np.hstack([pad, g]), axis=1)                    # max g[:, :k]
        suf = np.maximum.accumulate(np.hstack([g, pad])[:, ::-1], axis=1)[:, ::-1]   # max g[:, k:]
        outside = np.maximum(pref[which, lo], suf[which, hi])
        inside = np.maximum.reduceat(np.append(total, 0), np.ravel(np.column_stack([lo, hi])))[::2]
        good = (outside <= cap) & (inside + offs <= cap)
        return list(zip(offs[good].tolist(), cand[good].tolist(), bufs[good].tolist()))

    def decompose(self, pre, sec_lo, sec_hi, cand, b, o, p, heuristic) -> int:
        cuts = self.cuts
        lo, hi = self.lo_l[b], self.hi_l[b]
        points = []
        for k in range(lo, hi - 1):
            cuts[k] -= 1
            if cuts[k] == 0 and sec_lo <= k < sec_hi - 1:
                points.append(k + 1)
        try:
            if not points:
                return self.search(pre, sec_lo, sec_hi, cand, o, p, heuristic)
            bounds = [sec_lo] + points + [sec_hi]
            unplaced = pre[cand]
            unplaced = unplaced[self.offset[unplaced] < 0]
            for a, z in zip(bounds, bounds[1:]):
                group = unplaced[(self.lo[unplaced] < z) & (a < self.hi[unplaced])]
                if len(group):
                    status = self.sub_solve(group, a, z, heuristic)
                    if status != OK:
                        return status
            return OK
        finally:
            for k in range(lo, hi - 1):
                cuts[k] += 1


def fit(start: np.ndarray, end: np.ndarray, size: np.ndarray, align: np.ndarray, capacity: int,
        deadline: float) -> tuple[int, np.ndarray | None]:
    """Search for offsets fitting every buffer under `capacity` until `deadline` (perf_counter time).
    Returns (OK, offsets), (NOT_FOUND, None) when proved infeasible, or (TIMEOUT, None)."""
    size = np.asarray(size, np.int64)
    if (size == 0).any():  # zero-size buffers occupy nothing: offset 0, left out of the search
        keep = np.flatnonzero(size > 0)
        status, sub = fit(np.asarray(start)[keep], np.asarray(end)[keep], size[keep], np.asarray(align)[keep],
                          capacity, deadline)
        if sub is None:
            return status, None
        offsets = np.zeros(len(size), np.int64)
        offsets[keep] = sub
        return status, offsets
    n = len(size)
    if n == 0:
        return OK, np.zeros(0, np.int64)
    s = _Search(start, end, size, align, capacity, deadline)
    bounds = [0] + [k + 1 for k in range(s.nsec - 1) if s.cuts[k] == 0] + [s.nsec]
    everyone = np.arange(n)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20 * n + 1000))
    try:
        for a, z in zip(bounds, bounds[1:]):
            group = everyone[(s.lo < z) & (a < s.hi)]
            if len(group) == 0:
                continue
            status = _round_robin(s, group, a, z)
            if status != OK:
                return status, None
        return OK, s.solution.copy()
    finally:
        sys.setrecursionlimit(old)


def _round_robin(s: _Search, group: np.ndarray, sec_lo: int, sec_hi: int) -> int:
    limit = max(len(group), 16)
    while True:
        limit *= 2
        for h in PREORDERS:
            s.nodes_left = limit
            status = s.sub_solve(group, sec_lo, sec_hi, h)
            if status != ABORTED:
                return status
