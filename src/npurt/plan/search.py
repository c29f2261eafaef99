"""Exact fit search for a capacity: a MiniMalloc-style branch and bound (after Moffitt, ASPLOS'24),
re-implemented in pure Python + numpy.

Only *canonical* plans are explored: buffers are placed in non-decreasing offset order, each at its
minimum offset (on top of the placed buffers it overlaps in time), ties broken by a static preorder.
Pruning after every placement:
- section inference: a section is a maximal time span with a constant live set; its floor is the
  lowest offset any unplaced buffer in it can still take (raised by placements, by the minimum
  offsets of its unplaced buffers and, as placements go up monotonically, by the offset just used);
  floor + unplaced bytes of the section must not exceed the capacity;
- dominance: no buffer is placed at or above the lowest possible top of an unplaced buffer
  (that would leave a gap only a later buffer could fill: a non-canonical duplicate);
- dynamic decomposition: when no unplaced buffer crosses a section boundary any more, the two
  sides are solved independently.
The state is kept incrementally (Python lists for per-buffer data, numpy arrays over the sections
for floors and remaining demand; every change is undone on backtrack), so a node costs
O(unplaced + overlaps) Python steps plus a few numpy calls over the current partition's sections.
Six preorders run as interleaved resumable searches (generators), as one usually succeeds fast.
"""
from __future__ import annotations

import copy
import sys
import time

import numpy as np

OK, NOT_FOUND, ABORTED, TIMEOUT = 0, 1, 2, 3
# static preorders (descending keys; W = lifetime width, C = sections spanned, A = area, T = the
# largest section total the buffer crosses): the outcome is heavy-tailed in the order, so a
# portfolio of six beats any one of them
PREORDERS = ("WAT", "TAW", "TWA", "CAT", "TAC", "TCA")
SLICE = 64          # nodes a preorder's search runs before the next one gets a turn
_BIG = np.iinfo(np.int64).max // 4


class _Search:
    def __init__(self, start, end, size, align, capacity: int, deadline: float) -> None:
        self.n = n = len(size)
        start, end = np.asarray(start, np.int64), np.asarray(end, np.int64)
        times = np.unique(np.concatenate([start, end]))
        lo = np.searchsorted(times, start).astype(np.int64)
        hi = np.searchsorted(times, end).astype(np.int64)        # sections [lo, hi)
        self.lo, self.hi = lo, hi
        self.lo_l, self.hi_l = lo.tolist(), hi.tolist()
        size = np.asarray(size, np.int64)
        self.size = size
        self.size_l = size.tolist()
        self.align_l = np.asarray(align, np.int64).tolist()
        self.area_l = (size * (end - start)).tolist()
        self.width_l = (end - start).tolist()
        self.sections_l = (hi - lo).tolist()
        self.capacity = int(capacity)
        self.deadline = deadline
        nsec = self.nsec = max(1, len(times) - 1)
        diff = np.zeros(nsec + 1, np.int64)
        np.add.at(diff, lo, size)
        np.add.at(diff, hi, -size)
        self.total = np.cumsum(diff)[:nsec].astype(np.int64)   # unplaced bytes per section
        self.floor = np.zeros(nsec, np.int64)
        live = np.zeros(nsec + 1, np.int64)
        np.add.at(live, lo, 1)
        np.add.at(live, hi, -1)
        live = np.cumsum(live)[:nsec]
        # members[s, :]: buffers live in section s, padded with the dummy index n
        self.members = np.full((nsec, max(1, int(live.max()))), n, np.int64)
        fill = np.zeros(nsec, np.int64)
        for i in np.argsort(lo, kind="stable").tolist():
            a, z = self.lo_l[i], self.hi_l[i]
            self.members[np.arange(a, z), fill[a:z]] = i
            fill[a:z] += 1
        # cuts[k]: unplaced buffers crossing the boundary between sections k and k+1
        cross = np.zeros(nsec + 1, np.int64)
        np.add.at(cross, lo, 1)
        np.add.at(cross, np.maximum(hi - 1, lo), -1)
        self.cuts = np.cumsum(cross)[:nsec].tolist()
        self.cuts[-1] = 0
        order = np.argsort(start, kind="stable")
        ss = start[order]
        overlaps = []
        for i in range(n):
            # buffers starting before i ends, minus those ending before i starts
            cand = order[:np.searchsorted(ss, end[i], "left")]
            cand = cand[(end[cand] > start[i]) & (cand != i)]
            overlaps.append(cand.tolist())
        self.overlaps = overlaps
        self.n_overlaps = [len(o) for o in overlaps]
        self.offset = [-1] * n
        self.min_off = [0] * n
        self.mo_eff = np.zeros(n + 1, np.int64)   # min offset of unplaced buffers, _BIG when placed
        self.mo_eff[n] = _BIG
        self.solution = [0] * n
        self.nodes_left = 0
        self.nodes = 0

    def preorder(self, buffers: list[int], heuristic: str) -> list[int]:
        tot = self.total.tolist()
        lo_l, hi_l = self.lo_l, self.hi_l
        t = {b: max(tot[lo_l[b]:hi_l[b]]) for b in buffers}
        cols = {"W": self.width_l, "A": self.area_l, "C": self.sections_l, "Z": self.size_l,
                "O": self.n_overlaps}

        def key(b: int):
            return tuple(-(t[b] if c == "T" else cols[c][b]) for c in heuristic) + (b,)
        return sorted(buffers, key=key)

    def clone(self) -> "_Search":
        """A copy sharing the static data, with its own search state (one per preorder)."""
        c = copy.copy(self)
        c.total, c.floor, c.mo_eff = self.total.copy(), self.floor.copy(), self.mo_eff.copy()
        c.cuts, c.offset, c.min_off, c.solution = list(self.cuts), list(self.offset), list(self.min_off), list(self.solution)
        c.nodes = 0
        return c

    def run(self, partitions: list[tuple[list[int], int, int]], heuristic: str):
        """Generator: solve the partitions one after another with one preorder, pausing every
        `SLICE` nodes (a bare `yield`); returns OK or NOT_FOUND."""
        for group, a, z in partitions:
            status = yield from self.sub_solve(group, a, z, heuristic)
            if status != OK:
                return status
        return OK

    def sub_solve(self, buffers: list[int], sec_lo: int, sec_hi: int, heuristic: str):
        pre = self.preorder(buffers, heuristic)
        pre_arr = np.array(pre, np.int64)
        part = (pre, pre_arr, self.size[pre_arr], sec_lo, sec_hi, heuristic)
        return (yield from self.search(part, 0, -1))

    def search(self, part: tuple, min_offset: int, min_pre: int):
        self.nodes += 1
        if not self.nodes % SLICE:
            yield   # let the portfolio driver switch to another preorder (or stop at the deadline)
        pre, pre_arr, size_pre, sec_lo, sec_hi, _ = part
        cap = self.capacity
        floor, total, mo_eff, members = self.floor, self.total, self.mo_eff, self.members
        # candidates, with numpy over the partition in preorder: mo_eff is the minimum offset of
        # an unplaced buffer and _BIG for a placed one
        m = mo_eff[pre_arr]
        tops = m + size_pre
        min_height = int(tops.min())
        if min_height >= _BIG:
            return OK    # every buffer of the partition is placed
        # dominance (no offset at or above the lowest possible top of an unplaced buffer) and
        # canonical order (offsets non-decreasing, ties in preorder)
        ok = (m < min_height) & (m >= min_offset) & (tops <= cap)
        if min_pre >= 0:
            ok[:min_pre + 1] &= m[:min_pre + 1] > min_offset
        idx = np.flatnonzero(ok)
        if len(idx) == 0:
            return NOT_FOUND
        offs = m[idx]
        if len(idx) > 1:
            srt = np.argsort(offs, kind="stable")
            idx, offs = idx[srt], offs[srt]
            good = self.viable(offs, pre_arr[idx], sec_lo, sec_hi)
            idx, offs = idx[good], offs[good]
        offset, min_off, size_l = self.offset, self.min_off, self.size_l
        lo_l, hi_l, align_l, overlaps, solution = self.lo_l, self.hi_l, self.align_l, self.overlaps, self.solution
        for o, p in zip(offs.tolist(), idx.tolist()):
            b = pre[p]
            sz = size_l[b]
            h = o + sz
            offset[b] = o
            solution[b] = o
            mo_eff[b] = _BIG
            changes = []
            rlo, rhi = sec_hi, sec_lo
            for j in overlaps[b]:
                if offset[j] < 0:
                    mj = min_off[j]
                    if mj < h:
                        changes.append((j, mj))
                        al = align_l[j]
                        v = h if al == 1 else -(-h // al) * al
                        min_off[j] = v
                        mo_eff[j] = v
                        if lo_l[j] < rlo:
                            rlo = lo_l[j]
                        if hi_l[j] > rhi:
                            rhi = hi_l[j]
            lo, hi = lo_l[b], hi_l[b]
            saved = floor[sec_lo:sec_hi].copy()
            floor[lo:hi] = h
            total[lo:hi] -= sz
            if changes:
                rlo, rhi = max(rlo, sec_lo), min(rhi, sec_hi)
                if rlo < rhi:   # unallocated floor: a section's floor >= its unplaced buffers' min offsets
                    low = mo_eff[members[rlo:rhi]].min(axis=1)
                    np.minimum(low, cap, out=low)    # sections with no unplaced buffer left
                    f = floor[rlo:rhi]
                    np.maximum(f, low, out=f)
            f = floor[sec_lo:sec_hi]
            if int((np.maximum(f, o) + total[sec_lo:sec_hi]).max()) <= cap:
                status = yield from self.decompose(part, b, o, p)
            else:
                status = NOT_FOUND
            floor[sec_lo:sec_hi] = saved
            total[lo:hi] += sz
            for j, mj in changes:
                min_off[j] = mj
                mo_eff[j] = mj
            mo_eff[b] = min_off[b]
            offset[b] = -1
            if status != NOT_FOUND:
                return status   # the plan found lives in `solution` (written at each placement)
        return NOT_FOUND

    def viable(self, offs: np.ndarray, bufs: np.ndarray, sec_lo: int, sec_hi: int) -> np.ndarray:
        """Mask of the children (buffer bufs[k] at offs[k], offs non-decreasing) that pass section
        inference, all checked at once before any state change: placing b at o makes b's own
        sections need o + total <= capacity and every other section max(floor, o) + total <= capacity."""
        cap = self.capacity
        floor = self.floor[sec_lo:sec_hi]
        total = self.total[sec_lo:sec_hi]
        ns = sec_hi - sec_lo
        lo = self.lo[bufs] - sec_lo
        hi = self.hi[bufs] - sec_lo
        new = np.empty(len(offs), bool)
        new[0] = True
        np.not_equal(offs[1:], offs[:-1], out=new[1:])
        which = np.cumsum(new) - 1
        g = np.maximum(floor, offs[new][:, None]) + total
        pref = np.maximum.accumulate(g, axis=1)                       # pref[:, k] = max g[:, :k+1]
        suf = np.maximum.accumulate(g[:, ::-1], axis=1)[:, ::-1]      # suf[:, k] = max g[:, k:]
        left = np.where(lo > 0, pref[which, lo - 1], -1)
        right = np.where(hi < ns, suf[which, np.minimum(hi, ns - 1)], -1)
        bounds = np.empty(2 * len(lo), np.int64)
        bounds[0::2] = lo
        bounds[1::2] = hi
        inside = np.maximum.reduceat(np.append(total, 0), bounds)[::2]
        return (left <= cap) & (right <= cap) & (inside + offs <= cap)

    def decompose(self, part: tuple, b: int, o: int, p: int):
        pre, _, _, sec_lo, sec_hi, heuristic = part
        cuts = self.cuts
        lo, hi = self.lo_l[b], self.hi_l[b]
        points = []
        for k in range(lo, hi - 1):
            cuts[k] -= 1
            if cuts[k] == 0 and sec_lo <= k < sec_hi - 1:
                points.append(k + 1)
        try:
            if not points:
                return (yield from self.search(part, o, p))
            bounds = [sec_lo] + points + [sec_hi]
            offset, lo_l, hi_l = self.offset, self.lo_l, self.hi_l
            unplaced = [x for x in pre if offset[x] < 0]
            for a, z in zip(bounds, bounds[1:]):
                group = [x for x in unplaced if lo_l[x] < z and a < hi_l[x]]
                if group:
                    status = yield from self.sub_solve(group, a, z, heuristic)
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
    parts = []
    for a, z in zip(bounds, bounds[1:]):
        group = [i for i in range(n) if s.lo_l[i] < z and a < s.hi_l[i]]
        if group:
            parts.append((group, a, z))
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20 * n + 1000))
    runs = [(t, t.run(parts, h)) for t, h in zip([s] + [s.clone() for _ in PREORDERS[1:]], PREORDERS)]
    try:
        return _portfolio(runs, deadline, head=2 * n)
    finally:
        for _, g in runs:
            g.close()
        sys.setrecursionlimit(old)


def _portfolio(runs: list, deadline: float, head: int) -> tuple[int, np.ndarray | None]:
    """Interleave the preorders' searches slice by slice, each resumed where it paused (no restarts,
    so an order that needs N nodes costs about len(runs) * N in all). The first order runs alone
    for its first `head` nodes (enough for a backtrack-free dive: easy instances cost no more than
    one search). Any complete search that ends decides: OK with its plan, or NOT_FOUND (each
    search is exhaustive on its own)."""
    turns = [runs[0]] * max(1, head // SLICE)
    while True:
        for t, g in turns:
            if time.perf_counter() > deadline:
                return TIMEOUT, None
            try:
                next(g)
            except StopIteration as stop:
                if stop.value == OK:
                    return OK, np.array(t.solution, np.int64)
                return NOT_FOUND, None
        turns = runs
