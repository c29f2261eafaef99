"""The boundary of the RKNN mirror: the one status table, and `@mirror`, which every RKNN function wears (`rknn_api.h`,
`rknn_matmul_api.h` and `rknn_custom_op.h` alike) and the C face calls through — the kit's `Boundary` with RKNN's
status table and wording.

At the boundary a runtime failure becomes what librknnrt gives a C caller: an `E RKNN: <function>: <message>` line
and a status (or NULL / nothing for functions that return a pointer / void). Nothing else leaves a mirror call: an
unexpected Python exception is npurt's own bug (`ErrorCode.INTERNAL`), logged as `internal error: ...` and counted
in `internal_errors()`, so tests can assert it never happens; it still reads as a failure, never as success.

The runtime speaks neutrally; where its error carries a hint key, the line says it the way librknnrt does
(`HINTS`, rendered by `vendor_message`), naming the RKNN call or flag the C caller has to use.

Status table (`STATUS`; complete over `ErrorCode`). Where the vendor has no status of its own, npurt's choice:
NOT_SUPPORTED (a call the platform lacks), BUSY ("failed to submit"-style conflicts), FAIL and INTERNAL map to
RKNN_ERR_FAIL.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Any, Callable, Mapping

from npurt.errors import ErrorCode, Hinted, NpuError
from npurt.mirror_kit.boundary import Boundary
from npurt.rknn import constants as c
from npurt.rknn.api_common import require_api
from npurt.rknn import log

__all__ = ["STATUS", "HINTS", "BOUNDARY", "WRAPPED", "mirror", "status_of", "vendor_message", "fail", "internal_errors"]

STATUS: Mapping[ErrorCode, int] = MappingProxyType({
    ErrorCode.FAIL: c.RKNN_ERR_FAIL,
    ErrorCode.TIMEOUT: c.RKNN_ERR_TIMEOUT,
    ErrorCode.DEVICE_UNAVAILABLE: c.RKNN_ERR_DEVICE_UNAVAILABLE,
    ErrorCode.OUT_OF_MEMORY: c.RKNN_ERR_MALLOC_FAIL,
    ErrorCode.INVALID_ARGUMENT: c.RKNN_ERR_PARAM_INVALID,
    ErrorCode.INVALID_MODEL: c.RKNN_ERR_MODEL_INVALID,
    ErrorCode.INVALID_CONTEXT: c.RKNN_ERR_CTX_INVALID,
    ErrorCode.INVALID_INPUT: c.RKNN_ERR_INPUT_INVALID,
    ErrorCode.INVALID_OUTPUT: c.RKNN_ERR_OUTPUT_INVALID,
    ErrorCode.DEVICE_MISMATCH: c.RKNN_ERR_DEVICE_UNMATCH,
    ErrorCode.PLATFORM_MISMATCH: c.RKNN_ERR_TARGET_PLATFORM_UNMATCH,
    ErrorCode.NOT_SUPPORTED: c.RKNN_ERR_FAIL,
    ErrorCode.BUSY: c.RKNN_ERR_FAIL,
    ErrorCode.INVALID_HANDLE: c.RKNN_ERR_PARAM_INVALID,
    ErrorCode.INTERNAL: c.RKNN_ERR_FAIL,
})

HINTS: Mapping[str, str] = MappingProxyType({
    "info_only": "{what}: the context was created with RKNN_FLAG_COLLECT_MODEL_INFO_ONLY (query only)",
    "weights_not_outside": "You must set RKNN_FLAG_MEM_ALLOC_OUTSIDE on rknn_init() if you want to call "
                           "rknn_set_weight_mem!",
    "internal_not_outside": "You must set RKNN_FLAG_MEM_ALLOC_OUTSIDE on rknn_init() if you want to call "
                            "rknn_set_internal_mem!",
    "internal_before_io": "You must call rknn_set_internal_mem before rknn_set_io_mem!",
    "weights_unset": "weight memory is not set: with RKNN_FLAG_MEM_ALLOC_OUTSIDE you must call rknn_set_weight_mem "
                     "before rknn_run",
    "internal_unset": "internal memory is not set: you must call rknn_set_internal_mem before rknn_run",
    "input_unset": "input({name}) is not set: call rknn_inputs_set before rknn_run",
    "outputs_before_run": "no outputs yet: call rknn_inputs_set and rknn_run before rknn_outputs_get",
    "no_flush_inputs": "RKNN_FLAG_DISABLE_FLUSH_INPUT_MEM_CACHE must not be combined with rknn_inputs_set",
    "no_invalidate_outputs": "RKNN_FLAG_DISABLE_FLUSH_OUTPUT_MEM_CACHE must not be combined with rknn_outputs_get",
    "custom_op_unregistered": "{message} (rknn_register_custom_ops)",
    "input_not_synced": "{message} (rknn_mem_sync(ctx, mem, RKNN_MEMORY_SYNC_TO_DEVICE) before rknn_run)",
})
"""Runtime hint key -> the RKNN wording of that error (format fields: `message` and the error's `details`)."""

def status_of(error: NpuError | ErrorCode) -> int:
    """The RKNN status of a neutral error (or error code)."""
    return STATUS[error.code if isinstance(error, NpuError) else ErrorCode(error)]


def vendor_message(error: NpuError | Hinted) -> str:
    """The message of a runtime error or log line in RKNN's terms: its hint's wording (`HINTS`), else its own."""
    wording = HINTS.get(getattr(error, "hint", None) or "")
    return error.message if wording is None else wording.format(message=error.message, **error.details)


def _explain(func_name: str, error: BaseException) -> tuple[int, str] | None:
    """The RKNN status and message of a runtime error (None for any other exception: an internal error)."""
    if not isinstance(error, NpuError):
        return None
    if error.code is ErrorCode.INTERNAL:
        return status_of(error), f"internal error: {error.message}"
    return status_of(error), vendor_message(error)


BOUNDARY = Boundary(_explain, lambda func_name, status, message: log.error(f"{func_name}: {message}"),
                    c.RKNN_ERR_FAIL)
WRAPPED: dict[str, Callable] = BOUNDARY.wrapped
"""C function name -> the mirror function wearing `@mirror` (what the C face exports and the coverage test reads)."""
fail = BOUNDARY.fail
"""`fail(func_name, error, failure="status")`: what a call returns for `error` after logging it — its status, or
`failure` (e.g. None for functions returning a pointer). For the C face's own argument checks as well as `@mirror`."""
internal_errors = BOUNDARY.internal_errors


def mirror(func_name: str, failure: Any = "status", *, ctx: Callable[[Any, str], Any] | None = None,
           api: bool = False) -> Callable:
    """Decorate the mirror function of C function `func_name`: NpuError -> `E RKNN: <func>: <message>` and its
    status, or `failure` (None) for functions that return a pointer or void; any other exception -> an internal
    error (RKNN_ERR_FAIL / `failure`). A status function that returns no int is an internal error too.

    `ctx` (e.g. `api_common.MODEL_CTX`): the first argument, a context handle, is resolved by `ctx(handle,
    func_name)` — the live context, on a SoC whose API table lists `func_name` — and the function receives that
    object in its place. `api`: the board's SoC must list `func_name` (functions without a context)."""
    def wrap(fn: Callable) -> Callable:
        first = fn.__code__.co_varnames[0] if fn.__code__.co_argcount else ""

        def prepare(name: str, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
            if ctx is None:
                require_api(name)
            elif args:
                args = (ctx(args[0], name), *args[1:])
            else:                                       # the handle passed by keyword
                kwargs = {**kwargs, first: ctx(kwargs.get(first), name)}
            return args, kwargs
        return BOUNDARY.wrap(func_name, failure, prepare=prepare if ctx is not None or api else None)(fn)
    return wrap
