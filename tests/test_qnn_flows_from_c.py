"""The multi-graph flows called member by member from C (tests/c/qnn_multigraph_flows.c, dlopen of npurt's
libQnnHtp.so and libQnnSystem.so): two graphs in one WEIGHT_SHARING_ENABLED context written, freed and reloaded as
one binary, both retrieved by name and executed with their outputs listed out of order, systemContextGetBinaryInfo
reporting numGraphs = 2; a REGISTER_MULTI_CONTEXTS spill-fill group of two contexts, shown by the QNN memory report
the backend logs at the verbose level. The program checks its outputs itself and exits 1 on the first failure."""
from __future__ import annotations

import re

import pytest

from helpers.capi import compile_c, prefix, run_c


@pytest.mark.timeout(300)
def test_multigraph_flows_from_c():
    pfx = prefix()
    exe = compile_c("qnn_multigraph_flows", pfx, libs=(),
                    flags=("-I", str(pfx / "include" / "QNN"), "-ldl", "-lpthread"))
    proc = run_c(exe, env={"LD_LIBRARY_PATH": str(pfx / "lib")})
    out, err = proc.stdout, proc.stderr
    assert "qnn_multigraph_flows ok" in out, out + err
    plain, shared, weights = map(int, re.search(r"pair binary: (\d+) B without sharing, (\d+) B with "
                                                r"WEIGHT_SHARING_ENABLED \(weights (\d+) B\)", out).groups())
    assert plain - shared >= 0.8 * weights
    assert "numGraphs = 2: prompt token" in out
    # the memory report the second member's load logs to the C log callback at QNN_LOG_LEVEL_VERBOSE (4)
    second = [ln for ln in err.splitlines() if ln.startswith("[qnn log 4] <V> contextCreateFromBinary")]
    group = re.search(r"group (0x[0-9a-f]+): contexts (0x[0-9a-f]+), (0x[0-9a-f]+) share one spill-fill buffer of "
                      r"([\d,]+) B", "\n".join(second))
    assert group, err
    big, small = (int(v) for v in re.search(r"big \((\d+) B\) and small \((\d+) B\)", out).groups())
    buffer = int(group.group(4).replace(",", ""))
    assert group.group(1) == group.group(2) and buffer == -(-big // 4096) * 4096       # one buffer of the larger
    last_total = [ln for ln in second if "total:" in ln][-1]                       # the second load's report
    total = re.search(r"total: .*spill-fill ([\d,]+) B \(unshared ([\d,]+) B\)", last_total)
    assert int(total.group(1).replace(",", "")) == buffer                             # counted once
    assert int(total.group(2).replace(",", "")) == buffer + -(-small // 4096) * 4096
    assert re.search(rf"needs {big} bytes of spill-fill, more than the group's maxSpillFillBuffer {small} "
                     r"\(QNN_CONTEXT_ERROR_INVALID_CONFIG\)", err)
