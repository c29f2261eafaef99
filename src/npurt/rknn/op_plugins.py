"""Custom-op plugins: shared libraries named `librkcst_*.so` exporting `rknn_custom_op* get_rknn_custom_op(void)`,
one op each, loaded from the folder `$NPURT_RKNN_OP_PLUGIN_DIR` names (on the board: /usr/lib/rknpu/op_plugins).

`register_plugins(ctx)` registers, on a fresh context, every plugin op whose type the model contains (the C face
calls it after each successful `rknn_init`; Python callers may call it themselves). Libraries stay loaded for the
life of the process, as the runtime keeps them; a library that cannot be loaded, lacks the entry point or returns
NULL is skipped with a `W RKNN:` line.
"""
from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import Any

from npurt.rknn import log
from npurt.rknn.api_common import get_ctx
from npurt.rknn.custom_op import _nodes_of, rknn_register_custom_ops
from npurt.rknn.structs import rknn_custom_op

__all__ = ["ENV", "ENTRY_POINT", "plugin_ops", "register_plugins"]

ENV = "NPURT_RKNN_OP_PLUGIN_DIR"
ENTRY_POINT = "get_rknn_custom_op"
_loaded: dict[Path, tuple[ctypes.CDLL, Any]] = {}


def plugin_ops(directory: str | os.PathLike | None = None) -> list[tuple[Path, Any]]:
    """(library path, its rknn_custom_op) for every loadable plugin in `directory` (default: $NPURT_RKNN_OP_PLUGIN_DIR)."""
    folder = directory if directory is not None else os.environ.get(ENV)
    if not folder or not os.path.isdir(folder):
        return []
    found = []
    for path in sorted(Path(folder).glob("librkcst_*.so")):
        if path not in _loaded:
            try:
                lib = ctypes.CDLL(str(path))
                entry = getattr(lib, ENTRY_POINT)
            except (OSError, AttributeError) as exc:
                log.warning(f"custom op plugin {path.name}: cannot load it ({exc})")
                continue
            entry.restype = ctypes.POINTER(rknn_custom_op)
            entry.argtypes = []
            op = entry()
            if not op:
                log.warning(f"custom op plugin {path.name}: {ENTRY_POINT}() returned NULL")
                continue
            _loaded[path] = (lib, op.contents)
        found.append((path, _loaded[path][1]))
    return found


def register_plugins(ctx: Any, directory: str | os.PathLike | None = None) -> int:
    """Register the plugin ops the model of `ctx` uses; the number registered (failures are logged)."""
    plugins = plugin_ops(directory)
    if not plugins:
        return 0
    context = get_ctx(ctx).context
    count = 0
    for path, op in plugins:
        op_type = op.op_type.decode("utf-8", "replace")
        if op_type in context.custom_ops or not _nodes_of(context, op_type):
            continue
        if rknn_register_custom_ops(ctx, (rknn_custom_op * 1).from_buffer_copy(op), 1) == 0:
            log.debug(f"custom op plugin {path.name}: {op_type} registered")
            count += 1
    return count
