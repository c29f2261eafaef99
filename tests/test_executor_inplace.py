"""The in-place step path (ops computed on their NC1HWC2 slots) writes the same activations as the generic path
(unpack to float32, kernel, pack) — every intermediate slot, not only the outputs."""
from __future__ import annotations

import numpy as np
import pytest

import npurt
from npurt.runtime.user_io import pack_input
from npurt.exec.executor import Executor, allocate
from npurt.model.zoo import mobilenet_v2_like, yolov8n_like


def _run(cm, x, inplace: bool) -> tuple[Executor, list[np.ndarray]]:
    w, a, i, o = allocate(cm)
    ex = Executor(cm, inplace=inplace)
    ex.bind(w, a, i, o)
    pack_input(cm.native_input_attrs[0], x, i[0])
    ex.run()
    return ex, o


def _calibration(rng, shape, n=4):
    return [rng.standard_normal(shape).astype(np.float32) for _ in range(n)]


@pytest.mark.parametrize("build", [lambda: mobilenet_v2_like(size=64), lambda: yolov8n_like(size=64)],
                         ids=["mobilenet_v2_like", "yolov8n_like"])
@pytest.mark.parametrize("precision", ["fp16", "int8"])
def test_inplace_and_generic_paths_agree(build, precision):
    rng = np.random.default_rng(1)
    model = build()
    shape = tuple(d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim)
    cm = npurt.compile(model, soc="rk3588", quantize=_calibration(rng, shape) if precision == "int8" else None,
                       progress=False)
    x = rng.standard_normal(shape).astype(np.float32)
    inplace, out_n = _run(cm, x, inplace=True)
    generic, out_g = _run(cm, x, inplace=False)
    assert sum(1 for s in inplace._steps if not s[2] and not s[3]) > 0, "no step took the in-place path"
    for name in list(cm.plan.offsets) + list(cm.graph.outputs):
        a = inplace.tensor_view(name).astype(np.float32)
        b = generic.tensor_view(name).astype(np.float32)
        if precision == "fp16":                        # same math, other summation order
            assert np.abs(a - b).max() <= 5e-3 * max(np.abs(b).max(), 1.0), name
        else:                                          # int8 codes: folded scales move a value by a few steps (measured: at most 4)
            assert np.abs(a - b).max() <= 4, name
