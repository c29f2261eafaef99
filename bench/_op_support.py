"""Regenerate src/npurt/timing/op_support.json from rknn-toolkit2's "RKNN Compiler Support Operator List" (PDF).

Reads the PDF's text (needs `pypdf`, at regeneration time only) and keeps the facts: per SoC section of chapter 3
("NPU OPs") the ops the NPU runs, each with its numeric attribute ranges ("kernel_h ∈ [1, 31]" as the closed range
[1, 31]; "axis ∈ {0, 1, 2, 3}" as {"in": [0, 1, 2, 3]}) and the Transpose permutations it does not support;
chapter 4 ("CPU OPs") lists the ops the runtime runs on the CPU, with the SoCs that have none or a part of them.
Run: `python bench/_op_support.py RKNN_Compiler_Support_Operator_List.pdf SOURCE [OUT.json]` (SOURCE: where the PDF
came from, e.g. the repository path and commit).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "src" / "npurt" / "timing" / "op_support.json"
SECTIONS = {"1": ("rk3566", "rk3568"), "2": ("rk3588",), "3": ("rk3562",), "4": ("rv1103", "rv1106"),
            "5": ("rk3576", "rv1126b"), "6": ("rk2118",), "7": ("rv1103b", "rv1106b")}
RANGE = re.compile(r"^[–*•·]\s*([a-z_]+)\s*∈\s*([\[(])\s*([-‑\d]+)\s*,\s*([-‑\d]+)\s*([\])])\s*$")
SET = re.compile(r"^[–*•·]\s*([a-z_]+)\s*∈\s*\{([-‑\d,\s]+)\}\s*$")
PERM = re.compile(r"^–\s*perm=\[([\d,\s]+)\]")


def _int(s: str) -> int:
    return int(s.replace("‑", "-"))


def parse(text: str) -> dict:
    lines = [line.strip() for line in text.splitlines()]
    socs: dict[str, dict] = {}
    cpu: list[str] = []
    soc = op = perm = None
    chapter = None
    for line in lines:
        if ". . ." in line:
            continue                        # the table of contents
        m = re.match(r"^(3)\.(\d)\.(\d+) (.+)$", line) or re.match(r"^(4)\.(\d+) (.+)$", line)
        if m and m.group(1) == "3":
            chapter, soc, op, perm = "npu", SECTIONS[m.group(2)], m.group(4).strip(), None
            for s in soc:
                socs.setdefault(s, {"npu": {}, "transpose_unsupported": []})["npu"].setdefault(op, {})
            continue
        if m and m.group(1) == "4":
            chapter, op = "cpu", m.group(3).strip()
            if op != "注:" and op not in cpu:
                cpu.append(op)
            continue
        if chapter != "npu":
            continue
        p = PERM.match(line)
        if p:
            perm = [int(v) for v in p.group(1).split(",")]
            continue
        if perm is not None and line.startswith("*"):
            if "不支持" in line:            # "not supported"
                for s in soc:
                    socs[s]["transpose_unsupported"].append(perm)
            perm = None
            continue
        r = RANGE.match(line)
        if r:
            name, lo, hi = r.group(1), _int(r.group(3)), _int(r.group(4))
            rng = [lo + (r.group(2) == "("), hi - (r.group(5) == ")")]     # closed integer range
            for s in soc:
                socs[s]["npu"][op].setdefault(name, rng)
            continue
        r = SET.match(line)
        if r:
            for s in soc:
                socs[s]["npu"][op].setdefault(r.group(1), {"in": sorted(_int(v) for v in r.group(2).split(","))})
    return {"npu": socs, "cpu": cpu, "cpu_none": ["rk2118"],
            "cpu_partial": {s: ["Concat", "DataConvert", "Div", "exLayerNorm", "Exp", "Gather", "ReduceL2", "ReduceMax",
                                "Reshape", "ScatterND", "Softmax"] for s in ("rv1103", "rv1106", "rv1103b", "rv1106b")}}


def main(argv: list[str]) -> None:
    from pypdf import PdfReader
    pdf, source = argv[0], argv[1]
    out = Path(argv[2]) if len(argv) > 2 else OUT
    text = "\n".join(page.extract_text() for page in PdfReader(pdf).pages)
    doc = {"source": source, "version": "2.3.2", **parse(text)}
    out.write_text(json.dumps(doc, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"{sum(len(v['npu']) for v in doc['npu'].values())} NPU op entries, {len(doc['cpu'])} CPU ops -> {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
