"""The SoC a command targets, one rule for every command that takes a model and `--soc`: `--soc` when given,
else the SoC a compiled `.npurt` model records (as `npurt.Session` does), else `$NPURT_SOC`, else rk3588."""
from __future__ import annotations

from pathlib import Path

SOC_HELP = "SoC to emulate (default: the SoC a .npurt model was compiled for, else $NPURT_SOC, else rk3588)"


def target_soc(soc: str | None, *models: str) -> str:
    """`soc` if given, else the SoC recorded by the first of `models` that is a `.npurt` file, else the default
    SoC (`$NPURT_SOC`, else rk3588). Files that cannot be read are left for the command to report."""
    from npurt.soc import get_profile
    if soc is not None:                 # "" names no SoC: get_profile refuses it
        return soc
    from npurt.model.file_format import recorded_soc
    for model in models:
        path = Path(model)
        try:
            recorded = recorded_soc(path) if path.is_file() else None
        except OSError:
            recorded = None
        if recorded:
            return recorded
    return get_profile(None).name
