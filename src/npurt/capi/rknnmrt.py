"""librknnmrt.so, the mini runtime RV1106 / RV1103 programs link: the adapters of `npurt.capi.rknnrt`, with an
rv1106 board when $NPURT_SOC is not set (the mini runtime exists only on those SoCs)."""
from __future__ import annotations

import os

from npurt.capi import rknnrt
from npurt.capi.rknnrt import *  # noqa: F401,F403 - the same entry points
from npurt.capi.embed import sync_environ

LIBRARY_NAME = "librknnmrt.so"
DEFAULT_SOC = "rv1106"


def _board() -> None:
    sync_environ()
    os.environ.setdefault("NPURT_SOC", DEFAULT_SOC)


def rknn_init(context: int, model: int, size: int, flag: int, extend: int) -> int:
    _board()
    return rknnrt.rknn_init(context, model, size, flag, extend)


def rknn_create_mem2(ctx: int, size: int, alloc_flags: int) -> int:
    if not ctx:
        _board()
    return rknnrt.rknn_create_mem2(ctx, size, alloc_flags)
