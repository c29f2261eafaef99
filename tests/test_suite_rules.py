"""The suite's own determinism rule: every test draws its random inputs from a generator it seeds itself (inside the
test, a fixture or a helper function), never from module state, so any test passes alone, in any order, under
xdist. Scans every Python file under tests/ for a generator bound at module or class level, numpy's global-state
API (`np.random.seed`, `np.random.rand`, ...) and the stdlib `random` module. Hypothesis strategies are fine
(hypothesis seeds them). Also the suite's layout: onnxruntime sessions are built only by `helpers.oracle` (the same
options in every test), and shared helpers live in `tests/helpers/`, not beside the test modules."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
# numpy.random names that hold no global state: a generator is made from them with an explicit seed.
SEEDED_API = {"default_rng", "Generator", "SeedSequence", "BitGenerator", "PCG64", "PCG64DXSM", "Philox", "SFC64",
              "MT19937"}
GENERATOR_FACTORIES = {"default_rng", "Generator", "RandomState", "Random"}


def _dotted(node: ast.AST) -> str:
    """`np.random.default_rng` for an Attribute / Name chain, '' for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""


def _module_level_nodes(tree: ast.Module):
    """(node, parent) for every node run at import time: module and class bodies, not function or lambda bodies."""
    stack = [(tree, None)]
    while stack:
        node, parent = stack.pop()
        yield node, parent
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            # its defaults (and a def's decorators) run at import time, its body does not
            run_now = [*node.args.defaults, *node.args.kw_defaults, *getattr(node, "decorator_list", [])]
            stack.extend((child, node) for child in run_now if child is not None)
            continue
        stack.extend((child, node) for child in ast.iter_child_nodes(node))


def violations(source: str, name: str = "<test>") -> list[str]:
    """Every breach of the rule in one file's source, as 'name:line: what'."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "random" for a in node.names):
            found.append(f"{name}:{node.lineno}: imports the stdlib random module (global state)")
        elif isinstance(node, ast.ImportFrom) and node.module == "random":
            found.append(f"{name}:{node.lineno}: imports from the stdlib random module (global state)")
        elif isinstance(node, ast.ImportFrom) and node.module == "numpy.random":
            bad = [a.name for a in node.names if a.name not in SEEDED_API]
            if bad:
                found.append(f"{name}:{node.lineno}: imports numpy's global-state random API {bad}")
        elif isinstance(node, ast.Attribute):
            dotted = _dotted(node)
            for prefix in ("np.random.", "numpy.random."):
                if dotted.startswith(prefix) and dotted[len(prefix):].split(".")[0] not in SEEDED_API:
                    found.append(f"{name}:{node.lineno}: {dotted} uses numpy's global random state")
    for node, _ in _module_level_nodes(tree):
        if isinstance(node, ast.Call) and _dotted(node.func).split(".")[-1] in GENERATOR_FACTORIES:
            found.append(f"{name}:{node.lineno}: a random generator used at module level (inputs drawn at import "
                         "time are shared by every test; seed one inside the test or use the `rng` fixture)")
    return found


def _sources() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "data" not in p.relative_to(TESTS).parts[:1])


def test_no_test_draws_from_module_level_or_global_random_state():
    found = [v for p in _sources() for v in violations(p.read_text(), str(p.relative_to(TESTS)))]
    assert not found, "\n".join(found)


def test_the_scan_covers_the_helpers():
    names = {str(p.relative_to(TESTS)) for p in _sources()}
    assert {"conftest.py", "helpers/models.py", "helpers/cli.py", "test_kernels_misc.py"} <= names


def test_onnxruntime_sessions_are_built_only_by_the_oracle_helper():
    builders = sorted(f"{p.relative_to(TESTS)}:{node.lineno}" for p in _sources() for node in ast.walk(ast.parse(
        p.read_text())) if isinstance(node, ast.Call) and _dotted(node.func).split(".")[-1] == "InferenceSession")
    assert {b.split(":")[0] for b in builders} == {"helpers/oracle.py"}, builders


def test_the_top_level_holds_only_test_modules_and_conftest():
    others = sorted(p.name for p in TESTS.glob("*.py") if p.name != "conftest.py" and not p.name.startswith("test_"))
    assert not others, f"shared helpers belong in tests/helpers/: {others}"


@pytest.mark.parametrize("source, what", [
    ("import numpy as np\nrng = np.random.default_rng(0)\n", "module level"),
    ("import numpy as np\nclass T:\n    rng = np.random.default_rng(0)\n", "module level"),
    ("from numpy.random import default_rng\nRNG = default_rng(1)\n", "module level"),
    ("import numpy as np\ndef f(r=np.random.default_rng(0)):\n    pass\n", "module level"),
    ("import numpy as np\nX = np.random.default_rng(0).standard_normal(3)\n", "module level"),
    ("import numpy as np\ndef test():\n    np.random.seed(0)\n", "global random state"),
    ("import numpy\ndef test():\n    numpy.random.rand(3)\n", "global random state"),
    ("from numpy.random import randn\n", "global-state random API"),
    ("import random\n", "stdlib random"),
    ("from random import randint\n", "stdlib random"),
])
def test_the_scan_finds_each_breach(source, what):
    found = violations(source)
    assert len(found) == 1 and what in found[0], found


@pytest.mark.parametrize("source", [
    "import numpy as np\ndef test():\n    rng = np.random.default_rng(0)\n",
    "import numpy as np\nf = lambda: np.random.default_rng(0)\n",
    "import numpy as np\ndef g(rng: np.random.Generator) -> None:\n    pass\n",
])
def test_the_scan_allows_seeded_generators_inside_tests(source):
    assert violations(source) == []
