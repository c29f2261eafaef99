"""The boundary skeleton both mirrors share: `Boundary` turns a failure inside a mirror call into what the vendor's
C library gives its caller — a log line and a status (or NULL / nothing for functions that return a pointer / void)
— and keeps the table of wrapped functions and the count of internal errors. Each vendor brings its own status
table and wording as `explain`; nothing vendor-specific lives here.

Internal-error policy (one for every face): a failure is npurt's own bug when it is `ErrorCode.INTERNAL` or an
exception that `explain` does not know; it is logged as `internal error: …`, returns the vendor's general failure,
and is counted in `internal_errors()` — whether it escaped a mirror function or a C adapter's own argument checks —
so tests can assert it never happens. It never reads as success.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Optional, Tuple

from npurt import forksafe
from npurt.errors import ErrorCode, NpuError

__all__ = ["Boundary", "Explain"]

Explain = Callable[[str, BaseException], Optional[Tuple[int, str]]]
"""(function name, error) -> (status, message) for a failure the vendor knows; None for an unexpected one."""


class Boundary:
    """One vendor's boundary: `explain` gives the status and message of a known failure, `log_line(name, status,
    message)` writes the vendor's log line, `internal_status` is what an internal error returns."""

    def __init__(self, explain: Explain, log_line: Callable[[str, int, str], None], internal_status: int) -> None:
        self.explain = explain
        self.log_line = log_line
        self.internal_status = internal_status
        self.wrapped: dict[str, Callable] = {}
        """C name -> the mirror function wearing this boundary (what the C face exports and the coverage test
        reads)."""
        self._internal = 0
        self._lock = forksafe.lock()

    def internal_errors(self) -> int:
        """How many calls ended in npurt's own bug (ErrorCode.INTERNAL or an unexpected exception) so far."""
        return self._internal

    def fail(self, name: str, error: BaseException, failure: Any = "status", explain: Explain | None = None) -> Any:
        """What call `name` returns for `error` after logging it: its status, or `failure` (e.g. None for functions
        that return a pointer). `explain` overrides the vendor's for one call site."""
        known = (explain or self.explain)(name, error)
        if known is None or (isinstance(error, NpuError) and error.code is ErrorCode.INTERNAL):
            with self._lock:
                self._internal += 1
        if known is None:
            known = self.internal_status, f"internal error: {type(error).__name__}: {error}"
        status, message = known
        self.log_line(name, status, message)
        return status if failure == "status" else failure

    def wrap(self, name: str, failure: Any = "status", *, export: bool = True, explain: Explain | None = None,
             prepare: Callable[[str, tuple, dict], tuple[tuple, dict]] | None = None) -> Callable:
        """Decorate the function of C name `name`: any exception -> `fail`. With `export` (a mirror's own
        function) it is entered in `wrapped` and a status function that returns no int is an internal error too;
        without (a C adapter's guard around its own pointer checks) neither. `prepare(name, args, kwargs)` runs
        first, inside the boundary, and gives the (args, kwargs) the function receives (a mirror resolves its handles there,
        by the function's own name)."""
        def wrap(fn: Callable) -> Callable:
            @functools.wraps(fn)
            def call(*args: Any, **kwargs: Any) -> Any:
                try:
                    if prepare is not None:
                        args, kwargs = prepare(name, args, kwargs)
                    result = fn(*args, **kwargs)
                except Exception as exc:  # noqa: BLE001 - a C function returns a status, never raises
                    return self.fail(name, exc, failure, explain)
                if export and failure == "status" and (isinstance(result, bool) or not isinstance(result, int)):
                    return self.fail(name, NpuError(ErrorCode.INTERNAL, f"returned {type(result).__name__}, not "
                                                                        f"a status"), failure)
                return result
            if export:
                call.c_name = name  # type: ignore[attr-defined]
                call.returns_status = failure == "status"  # type: ignore[attr-defined]
                self.wrapped[name] = call
            return call
        return wrap
