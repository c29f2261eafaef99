"""The emulated debugfs of a C program: with $NPURT_DEBUGFS_DIR set, `$NPURT_DEBUGFS_DIR/rknpu/mm` holds the SRAM
bitmap of the open NPU device (as the driver's `/sys/kernel/debug/rknpu/mm`), rewritten after every call that can
change it, so `cat $NPURT_DEBUGFS_DIR/rknpu/mm` shows it while the program runs."""
from __future__ import annotations

import os
import threading
from pathlib import Path

from npurt.memory import PAGE_SIZE, open_devices
from npurt.memory.sram import format_sram_dump

ENV = "NPURT_DEBUGFS_DIR"
_last: dict[Path, str] = {}
_sram_size = {"bytes": 0}         # of the last device seen: once it is closed, its SRAM is all free


def refresh() -> None:
    """Rewrite `rknpu/mm` if the bitmap changed (atomically: readers never see half a file). Never raises."""
    root = os.environ.get(ENV)
    if not root:
        return
    try:
        devices = [d for d in open_devices() if d.profile.sram_size]
        if devices:
            text = devices[0].sram_dump()
            _sram_size["bytes"] = devices[0].profile.sram_size
        elif _sram_size["bytes"]:
            text = format_sram_dump(bytes(_sram_size["bytes"] // PAGE_SIZE), _sram_size["bytes"])
        else:
            return
        target = Path(root) / "rknpu" / "mm"
        if _last.get(target) == text:
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".mm.{os.getpid()}.{threading.get_ident()}")
        tmp.write_text(text if text.endswith("\n") else text + "\n")
        tmp.replace(target)
        _last[target] = text
    except OSError:
        pass
