"""A classifier's tail in place: an AveragePool whose one window is the whole map (MobileNet v1's 7 x 7 pool) and a
Softmax over the channels of a (1, C, 1, 1) NC1HWC2 tensor run on their slots and store the generic path's bytes,
padding lanes zero, at every instruction-set level."""
from __future__ import annotations

import numpy as np
import pytest

import npurt
from npurt.exec.executor import Executor, allocate
from npurt.model.zoo import _Graph


def _tail_model(channels: int, hw: tuple[int, int]):
    """input -> 1x1 Conv -> AveragePool (the whole map) -> 1x1 Conv -> Softmax(axis=1) on (1, 20, 1, 1)."""
    g = _Graph(3)
    x = g.node("AveragePool", [g.conv("input", 3, channels, 1)], kernel_shape=list(hw), strides=list(hw))
    y = g.node("Softmax", [g.conv(x, channels, 20, 1, gain=6.0)], axis=1)
    return g.model([("input", [1, 3, *hw])], [(y, [1, 20, 1, 1])], "tail")


@pytest.mark.parametrize("precision", ["fp16", "int8"])
@pytest.mark.parametrize("channels, hw", [(16, (7, 7)), (40, (3, 5))])
def test_average_pool_and_softmax_tail_store_the_generic_bytes(precision, channels, hw, level):
    rng = np.random.default_rng(channels)
    shape = (1, 3, *hw)
    calib = [rng.standard_normal(shape).astype(np.float32) for _ in range(3)] if precision == "int8" else None
    cm = npurt.compile(_tail_model(channels, hw), soc="rk3588", quantize=calib, progress=False,
                       **({} if calib else {"precision": "fp16"}))
    ops = [n.op_type for n in cm.graph.nodes]
    first = ops.index("AveragePool")
    runs = []
    for inplace in (True, False):
        w, a, i, o = allocate(cm)
        a[:] = 0xAB                                   # stale bytes: padding lanes must be written, not inherited
        ex = Executor(cm, inplace=inplace)
        ex.bind(w, a, i, o)
        runs.append(ex)
    src = cm.graph.nodes[first].inputs[0]
    value = rng.standard_normal(cm.storage[src].shape).astype(np.float32) * 2
    for ex in runs:
        ex.write_tensor(src, value)
    for k in range(first, len(ops)):
        for inplace, ex in zip((True, False), runs):
            step = ex._steps[k]
            assert (not step[2] and not step[3]) == inplace, f"{ops[k]} in place: {not inplace}"
            ex.run_step(k)
        for t in cm.graph.nodes[k].outputs:
            mine, theirs = (ex.tensor_view(t).view(np.uint8) for ex in runs)
            np.testing.assert_array_equal(mine, theirs, err_msg=f"{ops[k]} {t}")
            used = cm.storage[t].shape[1] * (2 if precision == "fp16" else 1)     # (1, C, 1, 1): C values first
            assert not mine.reshape(-1)[used:].any(), f"{ops[k]} {t}: padding lanes not zero"
