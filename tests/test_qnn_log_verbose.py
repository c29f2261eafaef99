"""A QNN log handle at QNN_LOG_LEVEL_VERBOSE gets the verbose lines (contextCreateFromBinary's memory report) with
level 4, one at INFO does not, and logSetLogLevel moves a handle between them as logCreate's level would (the C
face: tests/test_qnn_flows_from_c.py)."""
from __future__ import annotations

import npurt.qnn as q
from helpers.qnn import htp, ok  # noqa: F401


def _report_lines(got: list) -> list:
    return [(text, level) for text, level in got if text.startswith("<V> contextCreateFromBinary")]


def test_a_verbose_log_handle_gets_the_memory_report_and_log_set_log_level_follows(htp):
    got = []
    logger = q.Qnn_LogHandle_t()
    ok(htp.qi.logCreate(lambda text, level, stamp: got.append((text, level)), q.QNN_LOG_LEVEL_INFO, logger))
    try:
        ok(htp.qi.contextFree(htp.context(), None))
        assert _report_lines(got) == []                              # INFO: no verbose lines
        ok(htp.qi.logSetLogLevel(logger, q.QNN_LOG_LEVEL_VERBOSE))
        ok(htp.qi.contextFree(htp.context(), None))
        lines = _report_lines(got)
        assert lines and all(level == q.QNN_LOG_LEVEL_VERBOSE for _, level in lines)
        assert any("1 graph(s)" in text for text, _ in lines) and any("total: weights" in t for t, _ in lines)
        ok(htp.qi.logSetLogLevel(logger, q.QNN_LOG_LEVEL_ERROR))
        n = len(got)
        ok(htp.qi.contextFree(htp.context(), None))
        assert len(got) == n
    finally:
        ok(htp.qi.logFree(logger))
