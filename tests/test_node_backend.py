"""ONNX backend node tests, regenerated in memory from the installed onnx wheel.

Every case whose ops are all in `supported_ops()` runs through `run_reference` and is compared
with the outputs shipped by the generator. Cases we chose not to support are listed, with the
reason, in `EXPECTED_FAILURES`; they are strict xfails, so the list cannot go stale.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from npurt.exec.kernels import supported_ops
from npurt.exec.reference import is_float, run_reference

_ALIGN_CORNERS = (
    "the generator's expected data uses the fractional output width (scale * length) in "
    "align_corners; the Resize spec text (length_resized) and onnxruntime use the integer "
    "resized length, and so does npurt (onnxruntime is the runtime users compare against)"
)
EXPECTED_FAILURES: dict[str, str] = {
    "test_resize_downsample_scales_linear_align_corners": _ALIGN_CORNERS,
    "test_resize_downsample_scales_cubic_align_corners": _ALIGN_CORNERS,
}


def _collect():
    import onnx.backend.test.case.node as node_cases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node_cases.collect_testcases()
    ops = set(supported_ops()) | {"Constant"}
    keep = []
    for case in cases:
        graph = case.model.graph
        if any(n.domain not in ("", "ai.onnx") or n.op_type not in ops for n in graph.node):
            continue
        if any(n.op_type in ("Loop", "If", "Scan") for n in graph.node):
            continue
        inputs, outputs = case.data_sets[0]
        arrays = [_as_array(a) for a in list(inputs) + list(outputs)]
        if any(a is None for a in arrays):  # sequences, optionals: not tensors
            continue
        case.data_sets[0] = (arrays[: len(inputs)], arrays[len(inputs):])
        keep.append(case)
    return keep


def _as_array(value) -> np.ndarray | None:
    """A data-set entry as a numpy array: arrays, numpy scalars and TensorProtos (the generators
    store int4 / float8 data as TensorProto); None for sequences and optionals."""
    import onnx
    from onnx import numpy_helper

    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, np.generic):
        return np.asarray(value)
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    return None


CASES = _collect()


def ops_of(case) -> list[str]:
    return sorted({n.op_type for n in case.model.graph.node})


def check_case(case) -> None:
    """Run one node case through the reference interpreter and compare every output."""
    graph = case.model.graph
    inputs, expected = case.data_sets[0]
    feeds = {i.name: v for i, v in zip(graph.input, inputs)}
    got = run_reference(case.model, feeds)
    for out, want in zip(graph.output, expected):
        have = got[out.name]
        assert have.shape == want.shape, f"{out.name}: shape {have.shape} != {want.shape}"
        if is_float(want.dtype):
            rtol, atol = (1e-2, 1e-3) if want.dtype.itemsize < 4 else (1e-3, 1e-5)
            np.testing.assert_allclose(have.astype(np.float64), want.astype(np.float64),
                                       rtol=rtol, atol=atol, err_msg=out.name)
        else:
            np.testing.assert_array_equal(have, want, err_msg=out.name)


def _param(case):
    marks = []
    if case.name in EXPECTED_FAILURES:
        marks.append(pytest.mark.xfail(reason=EXPECTED_FAILURES[case.name], strict=True))
    return pytest.param(case, id=case.name, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_node(case) -> None:
    check_case(case)


def test_expected_failures_are_known_cases() -> None:
    names = {c.name for c in CASES}
    assert not set(EXPECTED_FAILURES) - names, "EXPECTED_FAILURES lists cases that are not collected"


if __name__ == "__main__":  # pass counts per op: python tests/test_node_backend.py
    from collections import Counter

    passed, total = Counter(), Counter()
    for c in CASES:
        try:
            check_case(c)
            ok = True
        except Exception:
            ok = False
        for op in ops_of(c):
            total[op] += 1
            passed[op] += ok
    for op in sorted(total):
        print(f"{op:28s} {passed[op]:4d} / {total[op]:4d}")
    print(f"cases: {sum(1 for _ in CASES)}")
