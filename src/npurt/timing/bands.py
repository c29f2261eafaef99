"""The timing model's measured error, as `npurt perf` prints it beside a prediction.

`error_bands.json` (beside this module) is written by `python bench/npu_timing.py --write-bands`: per SoC (and per
model family of rknn_model_zoo's table) the number of validation rows (published, never fitted) and the median
|predicted / published - 1|. Reading it is one small JSON file, no model is built.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

BANDS = Path(__file__).with_name("error_bands.json")


@functools.lru_cache(maxsize=1)
def _bands() -> dict[str, Any]:
    try:
        return json.loads(BANDS.read_text())
    except (OSError, ValueError):
        return {}


def error_band(soc: str, model: str | None = None) -> dict[str, Any] | None:
    """{soc, rows, median_error_pct, sdk, family?, family_rows?, family_median_error_pct?} for `soc` (and the zoo
    family of `model`, a zoo or builder name or a file named after one), or None when no published row of `soc`
    was checked."""
    doc = _bands()
    entry = doc.get("socs", {}).get(soc)
    if not entry:
        return None
    out = {"soc": soc, "rows": entry["rows"], "median_error_pct": entry["median_error_pct"], "sdk": doc.get("sdk")}
    name = Path(model).name.split(".")[0] if model else None
    family = doc.get("families_of", {}).get(name) if name else None
    fam = entry["families"].get(family) if family else None
    if fam:
        out.update(family=family, family_rows=fam["rows"], family_median_error_pct=fam["median_error_pct"])
    return out


def describe(band: dict[str, Any] | None, soc: str) -> str:
    """One line: "validated on N published rows of this SoC: median error E %" (and the family's), or why not."""
    if band is None:
        return f"not validated on {soc}: no published row of this SoC is predicted (docs/npu-timing.md)"
    line = (f"validated on {band['rows']} published rows of this SoC (rknn_model_zoo {band['sdk']}, single core, "
            f"never fitted): median error {band['median_error_pct']:.0f} %")
    if "family" in band:
        line += (f"; {band['family_rows']} of the {band['family']} family: median error "
                 f"{band['family_median_error_pct']:.0f} %")
    return line
