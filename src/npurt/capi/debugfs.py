"""The emulated debugfs of a C program: with $NPURT_DEBUGFS_DIR set, `$NPURT_DEBUGFS_DIR/rknpu/mm` holds the SRAM
bitmap of the open NPU device (as the driver's `/sys/kernel/debug/rknpu/mm`), rewritten after every call that can
change it, so `cat $NPURT_DEBUGFS_DIR/rknpu/mm` shows it while the program runs."""
from __future__ import annotations

import os
from pathlib import Path

from npurt.memory import open_devices

ENV = "NPURT_DEBUGFS_DIR"
_last: dict[Path, str] = {}


def refresh() -> None:
    """Rewrite `rknpu/mm` if the bitmap changed (atomically: readers never see half a file). Never raises."""
    root = os.environ.get(ENV)
    if not root:
        return
    try:
        devices = [d for d in open_devices() if d.profile.sram_size]
        if not devices:
            return
        text = devices[0].sram_dump()
        target = Path(root) / "rknpu" / "mm"
        if _last.get(target) == text:
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".mm.{os.getpid()}")
        tmp.write_text(text if text.endswith("\n") else text + "\n")
        tmp.replace(target)
        _last[target] = text
    except OSError:
        pass
