"""The vendor's module names for one process: `rknn.api` (with `RKNN`), `rknn.api.custom_op` and `rknnlite.api`
(with `RKNNLite`) resolve to npurt's classes once `install()` has run, through an import hook on `sys.meta_path`.
Nothing is installed into the environment (no package named `rknn` or `rknnlite`), so the real toolkit can live
beside npurt; the hook lasts as long as the process (or until `uninstall()`).
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any

_MODULES = ("rknn", "rknn.api", "rknn.api.custom_op", "rknnlite", "rknnlite.api")


def get_node_attr(node: Any, name: str) -> Any:
    """The value of attribute `name` of an ONNX node (the toolkit's `rknn.api.custom_op.get_node_attr`)."""
    from onnx import helper
    for attr in getattr(node, "attribute", ()):
        if attr.name == name:
            return helper.get_attribute_value(attr)
    attrs = getattr(node, "attrs", None)
    if isinstance(attrs, dict):
        return attrs.get(name)
    return None


def _fill(module: types.ModuleType) -> None:
    name = module.__name__
    if name == "rknn.api":
        from npurt.toolkit.rknn import RKNN
        module.RKNN = RKNN
    elif name == "rknn.api.custom_op":
        module.get_node_attr = get_node_attr
    elif name == "rknnlite.api":
        from npurt.rknn.lite import RKNNLite
        module.RKNNLite = RKNNLite
    module.__doc__ = f"npurt's stand-in for the vendor's `{name}` (npurt.toolkit.vendor_names)"


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the vendor's module names (and only them) and makes them from npurt's classes."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname not in _MODULES:
            return None
        is_package = fullname in ("rknn", "rknnlite", "rknn.api")
        return importlib.machinery.ModuleSpec(fullname, self, is_package=is_package)

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        if module.__spec__.submodule_search_locations is not None:
            module.__path__ = []
        _fill(module)


_finder = _Finder()


def install() -> None:
    """Resolve the vendor's module names to npurt's classes in this process (first on `sys.meta_path`, so a real
    toolkit installed beside npurt is not imported)."""
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


def uninstall() -> None:
    """Undo `install()` (and forget the modules it made)."""
    if _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    for name in _MODULES:
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__spec__", None) is not None and module.__spec__.loader is _finder:
            del sys.modules[name]
