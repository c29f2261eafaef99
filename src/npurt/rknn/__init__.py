"""npurt.rknn: the RKNN C-API mirror (constants and ctypes structs; the API functions build on them)."""
from npurt.rknn.constants import *  # noqa: F401,F403
from npurt.rknn.structs import *  # noqa: F401,F403
from npurt.rknn import constants as _constants, structs as _structs

__all__ = [*_constants.__all__, *_structs.__all__]
