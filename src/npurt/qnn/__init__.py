"""npurt.qnn: the QNN HTP mirror. For now its vendor constants and ctypes structs."""
from npurt.qnn.constants import *  # noqa: F401,F403
from npurt.qnn.constants import __all__ as _constants_all
from npurt.qnn.structs import *  # noqa: F401,F403
from npurt.qnn.structs import __all__ as _structs_all

__all__ = list(_constants_all) + list(_structs_all)
