"""SoC profiles: the `soc` layer, plain data every other layer reads.

`PROFILES` holds the RKNN SoCs (seed tables 3-1 / 3-2 cover exactly these); `HTP_PROFILES` the Qualcomm HTP SoCs.
`get_profile` answers for both, `all_profiles()` lists both.
"""
from npurt.soc.htp import HTP_PROFILES
from npurt.soc.profiles import (API_FUNCTIONS, DEFAULT_SOC, PROFILES, QUERY_COMMANDS, SocProfile,
                                get_profile)


def all_profiles() -> dict[str, SocProfile]:
    """Every SoC profile npurt knows, RKNN then HTP (name -> `SocProfile`)."""
    return {**PROFILES, **{name: p.soc for name, p in HTP_PROFILES.items()}}


__all__ = ["API_FUNCTIONS", "DEFAULT_SOC", "HTP_PROFILES", "PROFILES", "QUERY_COMMANDS", "SocProfile",
           "all_profiles", "get_profile"]
