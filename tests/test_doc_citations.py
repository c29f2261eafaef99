"""Docs and docstrings cite only what a clone of the repository has: no notes from outside it (the design notes,
the vendor documents or their restatements), every repository path they name exists, and every relative link of
the markdown files resolves."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = [p for d in ("src", "docs", "examples", "bench", "tests") for p in sorted((ROOT / d).rglob("*"))
           if p.suffix in (".py", ".md", ".c", ".h") and p.name != "test_doc_citations.py"] + [ROOT / "README.md"]
OUTSIDE = re.compile(r"DESIGN\.md|\bseeds/|\.\./shared|\breference/|(?<!API )\breference §|-facts\b|observations §")
REPO_PATH = re.compile(r"(?<![\w./~-])((?:src|docs|examples|bench|tests|csrc)/[\w./*-]*\w)")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def glob_escape(path: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", path)


def _rel(p: Path) -> str:
    return str(p.relative_to(ROOT))


def test_the_scan_covers_the_sources_guides_and_tests():
    names = {_rel(p) for p in SCANNED}
    assert {"README.md", "docs/python.md", "src/npurt/api/session.py", "examples/sram.py", "bench/memory.py",
            "tests/test_layers.py", "tests/data/seed/README.md"} <= names


def test_nothing_cites_notes_outside_the_repository():
    bad = [f"{_rel(p)}:{n}: {line.strip()}" for p in SCANNED
           for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
           if OUTSIDE.search(line)]
    assert not bad, "\n".join(bad)


def test_every_repository_path_cited_exists():
    bad = []
    for p in SCANNED:
        for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for cited in REPO_PATH.findall(line):
                if re.search(r"/[A-Z]+\.", cited):          # a placeholder: bench/NAME.py
                    continue
                # a glob names existing files; a program's name is its source's without the extension
                ok = any(ROOT.glob(cited)) if "*" in cited else \
                    (ROOT / cited).exists() or any(ROOT.glob(glob_escape(cited) + ".*"))
                if not ok:
                    bad.append(f"{_rel(p)}:{n}: {cited}")
    assert not bad, "\n".join(bad)


def test_every_relative_markdown_link_resolves():
    bad = []
    for p in SCANNED:
        if p.suffix != ".md":
            continue
        for target in LINK.findall(p.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            if not (p.parent / target.split("#")[0]).exists():
                bad.append(f"{_rel(p)}: {target}")
    assert not bad, "\n".join(bad)
