"""Greedy-by-size best-fit placement (the TFLite arena planner rule) with an efficient overlap query.

The overlap query splits "placed buffers whose lifetime meets [s, e)" into two disjoint sets:
buffers that contain the time point s (a stabbing query on a static segment tree over the compressed
timeline, each buffer stored at O(log T) nodes) and buffers that start inside (s, e) (a slice of the
start-sorted order). Both are filtered by "already placed", so one placement costs O(log T + k) numpy
work for k candidates instead of a scan over all placed buffers: O(n log n + Σk) per pass.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from npurt.plan.problem import Arrays, Problem, Solution, peak_live


@dataclass(frozen=True)
class OverlapIndex:
    """Static index of a buffer set answering "which buffers overlap buffer i in time"."""

    by_start: np.ndarray      # buffer indices sorted by start
    after_lo: np.ndarray      # per buffer: slice of by_start holding buffers starting inside (s, e)
    after_hi: np.ndarray
    leaf: np.ndarray          # per buffer: segment-tree leaf node of its start
    node_ptr: np.ndarray      # CSR over segment-tree nodes → buffers stored at that node
    node_items: np.ndarray

    @staticmethod
    def build(start: np.ndarray, end: np.ndarray) -> "OverlapIndex":
        n = len(start)
        times = np.unique(np.concatenate([start, end]))
        s = np.searchsorted(times, start).astype(np.int64)
        e = np.searchsorted(times, end).astype(np.int64)
        by_start = np.argsort(s, kind="stable")
        ss = s[by_start]
        after_lo = np.searchsorted(ss, s, "right")
        after_hi = np.searchsorted(ss, e, "left")
        width = 1
        while width < max(1, len(times)):
            width *= 2
        lo, hi, who = s + width, e + width, np.arange(n, dtype=np.int64)
        nodes, items = [], []
        while len(who):
            take = (lo & 1).astype(bool) & (lo < hi)
            nodes.append(lo[take]); items.append(who[take]); lo = lo + take
            take = (hi & 1).astype(bool) & (lo < hi)
            hi = hi - take
            nodes.append(hi[take]); items.append(who[take])
            lo, hi = lo >> 1, hi >> 1
            live = lo < hi
            lo, hi, who = lo[live], hi[live], who[live]
        node_arr = np.concatenate(nodes) if nodes else np.zeros(0, np.int64)
        item_arr = np.concatenate(items) if items else np.zeros(0, np.int64)
        order = np.argsort(node_arr, kind="stable")
        node_ptr = np.searchsorted(node_arr[order], np.arange(2 * width + 1))
        return OverlapIndex(by_start, after_lo, after_hi, s + width, node_ptr, item_arr[order])

    def candidates(self, i: int) -> np.ndarray:
        """Every buffer overlapping buffer i in time, possibly including i itself."""
        ptr, items = self.node_ptr, self.node_items
        parts = [self.by_start[self.after_lo[i]:self.after_hi[i]]]
        node = int(self.leaf[i])
        while node:
            a, b = ptr[node], ptr[node + 1]
            if a != b:
                parts.append(items[a:b])
            node >>= 1
        return np.concatenate(parts)


def place_in_order(a: Arrays, order: np.ndarray, index: OverlapIndex | None = None,
                   first_fit: bool = False) -> np.ndarray:
    """Place buffers one by one in `order`, each at the best-fitting (smallest slack; or lowest, with
    `first_fit`) aligned gap between already placed buffers that overlap it in time, else on top of
    them. Returns int64 offsets (zero-size buffers get 0)."""
    n = len(a.size)
    offsets = np.zeros(n, np.int64)
    tops = np.zeros(n, np.int64)
    placed = np.zeros(n, bool)
    if index is None:
        index = OverlapIndex.build(a.start, a.end)
    size, align = a.size, a.align
    for i in order.tolist():
        sz = int(size[i])
        al = int(align[i])
        if sz == 0:
            continue
        cand = index.candidates(i)
        cand = cand[placed[cand]]
        off = 0
        if len(cand):
            cand = cand[size[cand] > 0]
        if len(cand):
            lows = offsets[cand]
            srt = np.argsort(lows, kind="stable")
            lows = lows[srt]
            highs = np.maximum.accumulate(tops[cand][srt])
            prev = np.empty_like(highs)
            prev[0] = 0
            prev[1:] = highs[:-1]
            if al > 1:
                prev = -(-prev // al) * al
            slack = lows - prev - sz
            ok = np.flatnonzero(slack >= 0)
            if len(ok):
                j = ok[0] if first_fit else ok[np.argmin(slack[ok])]
                off = int(prev[j])
            else:
                top = int(highs[-1])
                off = -(-top // al) * al
        offsets[i] = off
        tops[i] = off + sz
        placed[i] = True
    return offsets


def size_order(a: Arrays) -> np.ndarray:
    """TFLite order: decreasing size, ties by earlier start, then index."""
    return np.lexsort((np.arange(len(a.size)), a.start, -a.size))


def to_solution(problem: Problem, offsets: np.ndarray, lb: int, t0: float, method: str) -> Solution:
    """Wrap index-based offsets as a `Solution` keyed by buffer id."""
    ids = [b.id for b in problem.buffers]
    sizes = np.fromiter((b.size for b in problem.buffers), np.int64, len(ids))
    arena = int((offsets + sizes).max()) if len(ids) else 0
    fits = None if problem.capacity is None else arena <= problem.capacity
    return Solution(dict(zip(ids, offsets.tolist())), arena, lb, time.perf_counter() - t0, method, fits)


def greedy_by_size(problem: Problem) -> Solution:
    """TFLite-arena-style baseline: decreasing size, best-fit gap between time-overlapping buffers."""
    t0 = time.perf_counter()
    a = problem.arrays()
    offsets = place_in_order(a, size_order(a))
    return to_solution(problem, offsets, peak_live(a.start, a.end, a.size), t0, "greedy")
