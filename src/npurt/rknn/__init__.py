"""npurt.rknn: the RKNN C-API mirror — constants, ctypes structs, and the functions of `rknn_api.h`
(`npurt.rknn.api`), `rknn_matmul_api.h` (`npurt.rknn.matmul`) and `rknn_custom_op.h` (`npurt.rknn.custom_op`), plus
the pointer helpers `mem_view` / `output_view` / `addr_view`. `from npurt.rknn import *` is the `#include`."""
from npurt.rknn.constants import *  # noqa: F401,F403
from npurt.rknn.structs import *  # noqa: F401,F403
from npurt.rknn import constants as _constants, structs as _structs
from npurt.rknn.api import *  # noqa: F401,F403
from npurt.rknn import api as _api
from npurt.rknn.matmul import *  # noqa: F401,F403
from npurt.rknn import matmul as _matmul
from npurt.rknn.custom_op import *  # noqa: F401,F403
from npurt.rknn import custom_op as _custom_op

__all__ = [*_constants.__all__, *_structs.__all__, *_api.__all__, *_matmul.__all__, *_custom_op.__all__]
