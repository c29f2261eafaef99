"""The layer order (`LAYERS` below, lowest first): every module under `src/npurt/` imports only its own
layer, the base modules (`npurt.errors`, `npurt._version`, `npurt._kernels`, the compiled kernels, `npurt.files`,
`npurt.forksafe`) and the layers below it. Imports inside functions count; imports under `if TYPE_CHECKING:` do not
(they never run).
`npurt/cli/` may import every layer and the top-level `npurt/__init__.py` (the lazy exports) is exempt.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

LAYERS = ("soc", "memory", "tensor", "plan", "model", "timing", "exec", "runtime", "mirror_kit", "rknn", "qnn", "api",
          "toolkit", "capi", "cli")
RANK = {name: i for i, name in enumerate(LAYERS)}
BASE = ("errors", "_version", "_kernels", "files", "forksafe")  # importable by every layer; they import no npurt module but
COMPILED = "_c"                        # npurt.errors, and a base module its compiled extension (`_kernels_c`)
TOP = "cli"                            # may import everything
SRC = Path(__file__).resolve().parent.parent / "src" / "npurt"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, module: str, is_package: bool) -> list[str]:
    """Every absolute module name imported anywhere in `tree` (relative imports resolved), skipping the bodies of
    `if TYPE_CHECKING:` (their `else:` branches run and are kept)."""
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                base = package[:len(package) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
                found.extend([prefix] if node.module else [f"{prefix}.{a.name}" for a in node.names])
            elif node.module:                   # `from npurt import forksafe` imports npurt.forksafe
                found.extend(_from_import(node.module, [a.name for a in node.names]))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _from_import(package: str, names: list[str]) -> list[str]:
    """What `from package import names` imports: each name that is a module of an npurt package is that module
    (`from npurt.qnn import constants` -> npurt.qnn.constants), anything else the package itself."""
    if package == "npurt":
        return [f"npurt.{n}" for n in names]
    folder = SRC.parent.joinpath(*package.split("."))
    if package.split(".")[0] != "npurt" or not (folder / "__init__.py").exists():
        return [package]
    subs = [n for n in names if (folder / f"{n}.py").exists() or (folder / n / "__init__.py").exists()]
    return [f"{package}.{n}" for n in subs] + ([package] if len(subs) < len(names) else [])


def _layer_of(module: str) -> str | None:
    """`npurt.X...` -> "X" (the bare package `npurt` -> ""); None for modules outside npurt."""
    parts = module.split(".")
    if parts[0] != "npurt":
        return None
    return parts[1] if len(parts) > 1 else ""


def _module_imports(folder: Path) -> list[tuple[str, list[str]]]:
    """(module, what it imports) for every module under `folder`."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        module = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        found.append((module, _imports(tree, module, path.name == "__init__.py")))
    return found


def layer_violations() -> list[tuple[str, str]]:
    """(module, imported layer) for every import that breaks the order, sorted and without repeats."""
    bad: set[tuple[str, str]] = set()
    for module, names in _module_imports(SRC):
        own = _layer_of(module)
        if module == "npurt" or own == TOP:
            continue
        for name in names:
            target = _layer_of(name)
            if target is None:
                continue
            if own in BASE:                      # the base modules import no npurt module but npurt.errors
                if target not in (own, own + COMPILED, "errors"):
                    bad.add((module, target or "npurt"))
                continue
            if target in BASE:
                continue
            if target not in RANK or own not in RANK or RANK[target] > RANK[own]:
                bad.add((module, target or "npurt"))
    return sorted(bad)


def test_every_package_is_a_known_layer():
    folders = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    modules = {p.stem for p in SRC.glob("*.py")} - {"__init__"}
    assert folders <= set(LAYERS), f"packages not in the layer order: {sorted(folders - set(LAYERS))}"
    assert modules <= set(BASE), f"top-level modules not in the layer order: {sorted(modules - set(BASE))}"


def test_imports_follow_the_layer_order():
    bad = layer_violations()
    assert not bad, "imports against the layer order (module -> imported layer):\n" + \
        "\n".join(f"  {m} -> {t}" for m, t in bad)


@pytest.mark.parametrize("source, module, expected", [
    ("import npurt.exec.kernels", "npurt.model.passes", ["npurt.exec.kernels"]),
    ("def f():\n    from npurt.plan import x", "npurt.model.compiled", ["npurt.plan"]),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from npurt.plan import MemoryPlan\n",
     "npurt.model.compiled", ["typing"]),
    ("from . import constants", "npurt.rknn.api", ["npurt.rknn.constants"]),
    ("from ..plan import greedy", "npurt.qnn.htp_plan", ["npurt.plan"]),
    ("from npurt import __version__", "npurt.rknn.api_query", ["npurt.__version__"]),   # not a layer: refused
    ("from npurt import forksafe", "npurt.runtime.loader", ["npurt.forksafe"]),
    ("from npurt.qnn import constants as C, interface", "npurt.qnn.pd", ["npurt.qnn.constants", "npurt.qnn.interface"]),
    ("from npurt.qnn import API", "npurt.qnn.pd", ["npurt.qnn"]),
])
def test_import_collection(source, module, expected):
    """The collector itself: function bodies are seen, TYPE_CHECKING blocks are not, relative imports resolve."""
    assert _imports(ast.parse(source), module, False) == expected


# The QNN mirror's own layers (lowest first; `npurt.qnn.interface` documents them): the vendor's data and the C
# boundary, handles, memory, contexts, graphs, members. A module imports its own level and those before it.
QNN_LEVELS = (("constants", "structs", "_ptr", "boundary", "configs"),
              ("device", "backend", "rpcmem", "qurt", "services"),
              ("htp_plan", "mem_registry", "pd"),
              ("context", "memory_report"),
              ("graph", "graph_build", "epcontext"),
              ("members", "interface", "system"))
QNN_RANK = {name: i for i, level in enumerate(QNN_LEVELS) for name in level}


def _qnn_part(module: str) -> str | None:
    """`npurt.qnn.X...` -> "X" (the package itself -> ""); None outside the QNN mirror."""
    parts = module.split(".")
    return (parts[2] if len(parts) > 2 else "") if parts[:2] == ["npurt", "qnn"] else None


def qnn_violations() -> list[tuple[str, str]]:
    """(module, imported module) for every import inside `npurt.qnn` that goes up its levels."""
    bad = set()
    for module, names in _module_imports(SRC / "qnn"):
        own = _qnn_part(module)
        if not own:                                  # the package's __init__ re-exports the API: exempt
            continue
        for name in names:
            target = _qnn_part(name)
            if target is None:
                continue
            if target not in QNN_RANK or own not in QNN_RANK or QNN_RANK[target] > QNN_RANK[own]:
                bad.add((module, name))
    return sorted(bad)


def test_every_qnn_module_has_a_level():
    names = {p.stem for p in (SRC / "qnn").glob("*.py")} - {"__init__"}
    names |= {p.name for p in (SRC / "qnn").iterdir() if (p / "__init__.py").exists()}
    assert names == set(QNN_RANK), f"modules without a level: {sorted(names - set(QNN_RANK))}; " \
                                   f"levels without a module: {sorted(set(QNN_RANK) - names)}"


def test_the_qnn_mirror_imports_downwards():
    """handles -> memory -> context -> graph -> members: no module of the mirror imports one of a later level (a
    context opens its graphs through the `QnnGraph` its caller passes, it does not import it)."""
    bad = qnn_violations()
    assert not bad, "QNN imports against its levels (module -> imported):\n" + "\n".join(f"  {m} -> {t}" for m, t in bad)
