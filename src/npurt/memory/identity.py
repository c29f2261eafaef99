"""Memory identity: which bytes of which file a piece of memory is, so "is this the same memory?" has one answer
whatever address, fd number or wrapper each holder uses.

A file is named by its `FileId` (st_dev, st_ino), read with fstat once, when a buffer is created or imported: an
fd number can be closed and reused for another file, the inode it named cannot. A `FileRange` is
(st_dev, st_ino, start, end) of one file; a buffer's bytes [offset, offset + size) are a tuple of them
(`Buffer.file_ranges`), and two pieces of memory are the same bytes when their ranges are equal, share a byte
when they `overlaps`.
"""
from __future__ import annotations

import os
from typing import Iterable, Sequence

FileId = tuple[int, int]                    # (st_dev, st_ino)
FileRange = tuple[int, int, int, int]       # (st_dev, st_ino, start, end) byte range of one file


def file_id(fd: int | os.stat_result) -> FileId:
    """The file `fd` names now (or that an fstat result already read describes); OSError (or OverflowError for a
    number that is no C int) if it names none."""
    st = fd if isinstance(fd, os.stat_result) else os.fstat(fd)
    return st.st_dev, st.st_ino


def close_if_ours(fd: int, files: Sequence[FileId]) -> bool:
    """Close `fd` only while it still names one of `files` (the identity npurt read when it took the fd): a caller
    may have closed it and the number been reused for its own file, which must not be closed. True if closed."""
    try:
        if file_id(fd) not in files:
            return False
    except (OSError, OverflowError, TypeError):
        return False
    os.close(fd)
    return True


def merged(ranges: Iterable[FileRange]) -> tuple[FileRange, ...]:
    """`ranges` in address order with each range that continues the one before in the same file joined to it, so
    that equal memory has equal ranges however it was pieced together."""
    out: list[FileRange] = []
    for r in ranges:
        if out and out[-1][:2] == r[:2] and out[-1][3] == r[2]:
            out[-1] = (*r[:2], out[-1][2], r[3])
        else:
            out.append(r)
    return tuple(out)


def overlaps(a: Sequence[FileRange], b: Sequence[FileRange]) -> bool:
    """True when two sets of file ranges share a byte."""
    return any(x[:2] == y[:2] and x[2] < y[3] and y[2] < x[3] for x in a for y in b)
