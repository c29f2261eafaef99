"""The boundary of the QNN mirror: `QnnError` (the one QNN exception type), the one table that maps neutral runtime
errors to QNN error codes, and `@qnn_call`, which every QnnInterface member wears (and the C face calls through) —
the kit's `Boundary` with QNN's codes and wording.

Each QNN API family has its own codes for the same failure (an invalid handle is 5002 for a context call, 6001 for
a graph call, 8001 for a memory call), so the table is per family; the family of a member is the first word of its
name (`contextFinalize` -> "context"). Distinct failures stay distinct: out of memory -> `*_MEM_ALLOC`, busy ->
`QNN_COMMON_ERROR_RESOURCE_UNAVAILABLE`, invalid argument / handle -> the family's own code, not supported ->
`*_UNSUPPORTED_FEATURE` (1000); only a plain FAIL is `*_GENERAL`. (QnnCommon has no invalid-handle code: members
outside the handle families give QNN_COMMON_ERROR_INVALID_ARGUMENT for it.) An unexpected Python exception is npurt's own bug
(`ErrorCode.INTERNAL`): `QNN_COMMON_ERROR_GENERAL`, an `<E> ... internal error` line, counted in `internal_errors()`.
Arguments of the wrong Python type (what would not compile in C) are the family's INVALID_ARGUMENT.
"""
from __future__ import annotations

import ctypes
import logging
from types import MappingProxyType
from typing import Callable, Mapping

from npurt.errors import ErrorCode, NpuError
from npurt.mirror_kit.boundary import Boundary
from npurt.qnn import constants as C

__all__ = ["QnnError", "CODES", "DISTINCT", "BOUNDARY", "WRAPPED", "code_for", "family_of", "from_npu", "qnn_call", "internal_errors"]

log = logging.getLogger("npurt.qnn")

# The handle errors of backendFree / deviceFree (named codes: QnnBackend.h's value; constants' device value).
BACKEND_INVALID_HANDLE = C.QNN_BACKEND_ERROR_INVALID_HANDLE
DEVICE_INVALID_HANDLE = C.QNN_DEVICE_ERROR_INVALID_HANDLE

_COMMON = {
    ErrorCode.FAIL: C.QNN_COMMON_ERROR_GENERAL,
    ErrorCode.TIMEOUT: C.QNN_COMMON_ERROR_GENERAL,
    ErrorCode.DEVICE_UNAVAILABLE: C.QNN_COMMON_ERROR_RESOURCE_UNAVAILABLE,
    ErrorCode.OUT_OF_MEMORY: C.QNN_COMMON_ERROR_MEM_ALLOC,
    ErrorCode.INVALID_ARGUMENT: C.QNN_COMMON_ERROR_INVALID_ARGUMENT,
    ErrorCode.INVALID_MODEL: C.QNN_COMMON_ERROR_INVALID_ARGUMENT,
    ErrorCode.INVALID_CONTEXT: C.QNN_COMMON_ERROR_INVALID_ARGUMENT,
    ErrorCode.INVALID_INPUT: C.QNN_COMMON_ERROR_INVALID_ARGUMENT,
    ErrorCode.INVALID_OUTPUT: C.QNN_COMMON_ERROR_INVALID_ARGUMENT,
    ErrorCode.DEVICE_MISMATCH: C.QNN_COMMON_ERROR_INVALID_ARGUMENT,
    ErrorCode.PLATFORM_MISMATCH: C.QNN_COMMON_ERROR_PLATFORM_NOT_SUPPORTED,
    ErrorCode.NOT_SUPPORTED: C.QNN_COMMON_ERROR_NOT_SUPPORTED,
    ErrorCode.BUSY: C.QNN_COMMON_ERROR_RESOURCE_UNAVAILABLE,
    ErrorCode.INVALID_HANDLE: C.QNN_COMMON_ERROR_INVALID_ARGUMENT,
    ErrorCode.INTERNAL: C.QNN_COMMON_ERROR_GENERAL,
}
_FAMILY = {
    "backend": {ErrorCode.INVALID_HANDLE: BACKEND_INVALID_HANDLE},
    "device": {ErrorCode.INVALID_HANDLE: DEVICE_INVALID_HANDLE},
    "context": {
        ErrorCode.INVALID_ARGUMENT: C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT,
        ErrorCode.INVALID_INPUT: C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT,
        ErrorCode.INVALID_OUTPUT: C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT,
        ErrorCode.DEVICE_MISMATCH: C.QNN_CONTEXT_ERROR_INVALID_ARGUMENT,
        ErrorCode.INVALID_HANDLE: C.QNN_CONTEXT_ERROR_INVALID_HANDLE,
        ErrorCode.INVALID_CONTEXT: C.QNN_CONTEXT_ERROR_INVALID_HANDLE,
        ErrorCode.INVALID_MODEL: C.QNN_CONTEXT_ERROR_CREATE_FROM_BINARY,
        ErrorCode.PLATFORM_MISMATCH: C.QNN_CONTEXT_ERROR_BINARY_CONFIGURATION,
        ErrorCode.TIMEOUT: C.QNN_CONTEXT_ERROR_TIMED_OUT,
        ErrorCode.OUT_OF_MEMORY: C.QNN_CONTEXT_ERROR_MEM_ALLOC,
        ErrorCode.NOT_SUPPORTED: C.QNN_CONTEXT_ERROR_UNSUPPORTED_FEATURE,
    },
    "graph": {
        ErrorCode.INVALID_ARGUMENT: C.QNN_GRAPH_ERROR_INVALID_ARGUMENT,
        ErrorCode.DEVICE_MISMATCH: C.QNN_GRAPH_ERROR_INVALID_ARGUMENT,
        ErrorCode.INVALID_INPUT: C.QNN_GRAPH_ERROR_INVALID_TENSOR,
        ErrorCode.INVALID_OUTPUT: C.QNN_GRAPH_ERROR_INVALID_TENSOR,
        ErrorCode.INVALID_HANDLE: C.QNN_GRAPH_ERROR_INVALID_HANDLE,
        ErrorCode.INVALID_CONTEXT: C.QNN_GRAPH_ERROR_INVALID_CONTEXT,
        ErrorCode.TIMEOUT: C.QNN_GRAPH_ERROR_TIMED_OUT,
        ErrorCode.OUT_OF_MEMORY: C.QNN_GRAPH_ERROR_MEM_ALLOC,
        ErrorCode.NOT_SUPPORTED: C.QNN_GRAPH_ERROR_UNSUPPORTED_FEATURE,
        ErrorCode.FAIL: C.QNN_GRAPH_ERROR_GENERAL,
    },
    "tensor": {
        ErrorCode.INVALID_ARGUMENT: C.QNN_TENSOR_ERROR_INVALID_TENSOR_PARAM,
        ErrorCode.INVALID_HANDLE: C.QNN_TENSOR_ERROR_INVALID_HANDLE,
        ErrorCode.NOT_SUPPORTED: C.QNN_TENSOR_ERROR_UNSUPPORTED_FEATURE,
    },
    "mem": {
        ErrorCode.INVALID_ARGUMENT: C.QNN_MEM_ERROR_INVALID_ARGUMENT,
        ErrorCode.INVALID_INPUT: C.QNN_MEM_ERROR_INVALID_ARGUMENT,
        ErrorCode.INVALID_OUTPUT: C.QNN_MEM_ERROR_INVALID_ARGUMENT,
        ErrorCode.DEVICE_MISMATCH: C.QNN_MEM_ERROR_INVALID_ARGUMENT,
        ErrorCode.INVALID_HANDLE: C.QNN_MEM_ERROR_INVALID_HANDLE,
        ErrorCode.INVALID_CONTEXT: C.QNN_MEM_ERROR_INVALID_HANDLE,
        ErrorCode.NOT_SUPPORTED: C.QNN_MEM_ERROR_NOT_SUPPORTED,
    },
}
CODES: Mapping[str, Mapping[ErrorCode, int]] = MappingProxyType(
    {"common": MappingProxyType(dict(_COMMON)),
     **{f: MappingProxyType({**_COMMON, **table}) for f, table in _FAMILY.items()}})
"""API family -> neutral code -> QNN error code (every family complete over ErrorCode)."""

class QnnError(Exception):
    """A QNN failure inside the mirror: `code` is what the C function returns."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = int(code)
        self.message = message


def family_of(member: str) -> str:
    """The API family of an interface member (`memRegister` -> "mem"); "common" for unknown prefixes."""
    for family in CODES:
        if member.startswith(family):
            return family
    return "common"


def code_for(code: ErrorCode, family: str = "common") -> int:
    """The QNN error code of a neutral error code in API `family`."""
    return CODES.get(family, CODES["common"])[ErrorCode(code)]


DISTINCT = frozenset({ErrorCode.OUT_OF_MEMORY, ErrorCode.BUSY, ErrorCode.NOT_SUPPORTED, ErrorCode.INVALID_HANDLE,
                      ErrorCode.TIMEOUT, ErrorCode.DEVICE_UNAVAILABLE, ErrorCode.INTERNAL})
"""Failures that keep their own code even where a call site words every other failure as one code (`general`)."""


def from_npu(exc: NpuError, family: str, context: str = "", general: int | None = None) -> QnnError:
    """The QnnError of a runtime error in API `family`, its message prefixed with `context`. With `general`
    (e.g. QNN_CONTEXT_ERROR_CREATE_FROM_BINARY while loading a binary), every code outside `DISTINCT` becomes
    `general`."""
    message = f"{context}: {exc.message}" if context else exc.message
    if exc.code is ErrorCode.INTERNAL:
        message = f"internal error: {message}"
    if general is not None and exc.code not in DISTINCT:
        return QnnError(general, message)
    return QnnError(code_for(exc.code, family), message)


_BAD_ARGUMENT = (TypeError, ValueError, AttributeError, OverflowError, ctypes.ArgumentError)


def _explain(member: str, error: BaseException) -> tuple[int, str] | None:
    """The QNN error code and message of a failure in `member` (None for an unexpected exception)."""
    family = family_of(member)
    if isinstance(error, NpuError):
        error = from_npu(error, family)
    if isinstance(error, QnnError):
        return error.code, error.message
    if isinstance(error, _BAD_ARGUMENT):
        return code_for(ErrorCode.INVALID_ARGUMENT, family), f"bad argument: {error}"
    return None


LAST_FAILURE: dict[int, str] = {}
"""Error code -> the last failure logged with it (`member: message`), what errorGetVerboseMessage reports."""


def _log_line(member: str, code: int, message: str) -> None:
    LAST_FAILURE[C.qnn_error_code(code)] = f"{member}: {message}"
    log.error("<E> %s: %s (%s)", member, message, C.error_string(code))


BOUNDARY = Boundary(_explain, _log_line, C.QNN_COMMON_ERROR_GENERAL)
WRAPPED: dict[str, Callable] = BOUNDARY.wrapped
"""QnnInterface member name -> the function wearing `@qnn_call` (what the coverage test and the C face read)."""
fail = BOUNDARY.fail
"""`fail(member, error)`: what a QNN call returns for `error` after logging it (`<E> member: message (CODE)`)."""
internal_errors = BOUNDARY.internal_errors


def qnn_call(member: str) -> Callable:
    """Decorate interface member `member`: QnnError / NpuError / any exception -> its QNN error code and an `<E>`
    line; a result that is not an int error code is an internal error, never success."""
    return BOUNDARY.wrap(member)
