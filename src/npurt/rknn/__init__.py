"""npurt.rknn: the RKNN C-API mirror — constants, ctypes structs, and the API functions of `rknn_api.h`
(`npurt.rknn.api`; matmul in `npurt.rknn.matmul`), plus the pointer helpers `mem_view` / `output_view`."""
from npurt.rknn.constants import *  # noqa: F401,F403
from npurt.rknn.structs import *  # noqa: F401,F403
from npurt.rknn import constants as _constants, structs as _structs
from npurt.rknn.api import *  # noqa: F401,F403
from npurt.rknn import api as _api

__all__ = [*_constants.__all__, *_structs.__all__, *_api.__all__]
