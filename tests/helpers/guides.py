"""The code blocks of the guides (README.md, docs/*.md) as a reader meets them, and the rules for running them.

A fenced block is run when its language is `sh`, `bash` or `console` (a shell: the whole block for sh / bash, the
`$ ` lines for console) or `python` (a program of its own). A python block followed by the line "prints" and a
plain fenced block expects that output (`output_matches`). An HTML comment on the line before a block changes that:
`<!-- not run: REASON -->` (it cannot run here: a board, a vendor SDK checkout, ...) or `<!-- real-weights tier:
REASON -->` (it needs the real-weights wheels: run only with NPURT_OPTIONAL=1). Other languages (c, cmake, plain)
are shown, not run."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

RUN = ("sh", "bash", "console", "python")
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)
_MARKER = re.compile(r"<!--\s*(not run|real-weights tier):\s*(.*?)\s*-->\s*\n\Z", re.S)


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    line: int                          # 1-based line of the opening fence
    expected: str | None = None        # what a python block prints, when the guide shows it
    marker: str | None = None          # "not run" / "real-weights tier"
    reason: str = ""

    @property
    def runs(self) -> bool:
        return self.lang in RUN and self.marker != "not run"

    def script(self) -> str:
        """What the shell or Python runs: the block, or for console the `$ ` lines without the prompt."""
        if self.lang != "console":
            return self.code
        return "".join(line[2:] + "\n" for line in self.code.splitlines() if line.startswith("$ "))


def blocks(path: Path) -> list[Block]:
    """Every fenced block of the markdown file `path`, in order."""
    text = path.read_text(encoding="utf-8")
    found = list(_FENCE.finditer(text))
    out = []
    for i, m in enumerate(found):
        lang, code = m.group(1), m.group(2)
        nxt = found[i + 1] if i + 1 < len(found) else None
        expected = nxt.group(2) if (lang == "python" and nxt and nxt.group(1) == ""
                                    and text[m.end():nxt.start()].strip() == "prints") else None
        before = text[:m.start()]
        marker = _MARKER.search(before[before.rfind("\n\n") + 1:] if "\n\n" in before else before)
        out.append(Block(lang, code, text.count("\n", 0, m.start()) + 1, expected,
                         marker.group(1) if marker else None, marker.group(2) if marker else ""))
    return out


def output_matches(expected: str, actual: str) -> bool:
    """Line by line; a line "..." stands for any lines, "..." inside a line for any text on it."""
    lines = expected.rstrip("\n").split("\n")
    pattern = "\n".join(r"(?:.*\n)*?.*" if line == "..." else "[^\n]*".join(map(re.escape, line.split("...")))
                        for line in lines)
    return re.fullmatch(pattern, actual.rstrip("\n")) is not None
