"""Reading QNN config lists (graph, device, context: NULL-terminated arrays of config pointers) as the members take
them: one rule for a list that is not one and for an HTP custom config that cannot be read."""
from __future__ import annotations

from typing import Any

from npurt.errors import NpuError
from npurt.memory.cargs import as_struct, as_struct_list
from npurt.qnn.boundary import QnnError


def config_entries(config: Any, struct: type, code: int) -> list:
    """The entries of the config list `config` as `struct`s (none for NULL); QnnError `code` when it is not one."""
    if config is None:
        return []
    try:
        return as_struct_list(config, None, struct, "config")
    except NpuError as exc:
        raise QnnError(code, f"config entries must be {struct.__name__}: {exc.message}") from None


def custom_config(cfg: Any, struct: type, code: int) -> Any:
    """The HTP custom config an entry's `customConfig` points at, as `struct`; QnnError `code` when unreadable."""
    custom = as_struct(cfg.customConfig, struct, address=True)
    if custom is None:
        raise QnnError(code, "customConfig is NULL or unreadable")
    return custom
