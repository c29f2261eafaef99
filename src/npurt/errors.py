"""The one exception type of npurt and its vendor-neutral error codes.

Every layer raises `NpuError`; the vendor mirrors (`npurt.rknn`, `npurt.qnn`) translate `.code` into
their own status values and log lines.
"""
from __future__ import annotations

import enum


class ErrorCode(enum.IntEnum):
    """Neutral error codes; each mirror maps them to its vendor's status values."""

    FAIL = 1                # the operation failed (generic)
    TIMEOUT = 2
    DEVICE_UNAVAILABLE = 3
    OUT_OF_MEMORY = 4       # heap, SRAM or device-address space exhausted
    INVALID_ARGUMENT = 5    # bad size, index, flag, pointer or struct
    INVALID_MODEL = 6       # malformed, truncated or unsupported model
    INVALID_CONTEXT = 7     # destroyed or unknown context
    INVALID_INPUT = 8
    INVALID_OUTPUT = 9
    DEVICE_MISMATCH = 10
    PLATFORM_MISMATCH = 11  # model compiled for another SoC
    NOT_SUPPORTED = 12      # the SoC or mode does not offer this call
    BUSY = 13               # resource in use (concurrent run, shared buffer in use)
    INVALID_HANDLE = 14     # unknown / freed buffer, handle or address
    INTERNAL = 15           # npurt's own invariant broke (a bug in npurt, never the caller's doing)


class Hinted(str):
    """A neutral log message with the hint key and details a mirror words it by (as `NpuError.hint`); it is a
    plain `str` to every other log sink."""

    hint: str | None
    details: dict

    def __new__(cls, text: str, hint: str | None = None, **details: object) -> "Hinted":
        obj = super().__new__(cls, text)
        obj.hint = hint
        obj.details = details
        return obj

    @property
    def message(self) -> str:
        return str(self)


class NpuError(Exception):
    """An npurt failure carrying a neutral `ErrorCode` in `.code`, a neutral `.message` and, where a mirror words
    the remedy in its vendor's terms, a stable `.hint` key and the `.details` its wording needs (see
    `npurt.rknn.boundary.HINTS`). The runtime's messages never name a vendor's functions or flags."""

    def __init__(self, code: ErrorCode, message: str, hint: str | None = None, **details: object) -> None:
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message
        self.hint = hint
        self.details = details

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"


_ARGUMENT_ERRORS = (TypeError, ValueError, AttributeError, ZeroDivisionError, IndexError, OverflowError, MemoryError)


def bad_arguments_raise_npu_error(fn, what: str | None = None):
    """`fn`, with the Python / numpy exceptions a bad argument provokes inside it (TypeError, ValueError, ...) raised
    as NpuError(INVALID_ARGUMENT) naming `what` (default: `fn`): the one rule of the public Python API (NpuError
    for every bad argument). NpuError passes through unchanged."""
    import functools
    label = what or fn.__qualname__

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except NpuError:
            raise
        except _ARGUMENT_ERRORS as exc:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{label}: bad argument ({type(exc).__name__}: "
                                                       f"{exc})") from None
    return call
