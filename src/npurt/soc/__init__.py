"""SoC profiles: the `soc` layer, plain data every other layer reads."""
from npurt.soc.profiles import (API_FUNCTIONS, DEFAULT_SOC, PROFILES, QUERY_COMMANDS, SocProfile,
                                get_profile)

__all__ = ["API_FUNCTIONS", "DEFAULT_SOC", "PROFILES", "QUERY_COMMANDS", "SocProfile", "get_profile"]
