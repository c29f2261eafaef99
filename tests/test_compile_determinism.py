"""An int8 compile is a pure function of the ONNX model and the calibration set: byte-identical in a fresh process,
after other compiles, whatever the thread settings of the executor and of numpy's BLAS and the kernels' instruction
set (the calibration's float run must not depend on them)."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numpy as np

import npurt
from npurt.model.zoo import mobilenet_v2_like

# Compiles mobilenet_v2_like (BatchNormalization folded, a GlobalAveragePool head) to int8 and prints its digest;
# with "--after", other models are compiled first in the same process.
_SCRIPT = r"""
import hashlib, sys
import numpy as np
import npurt
from npurt.model.zoo import mobilenet_v2_like, small_convnet
model, calib = sys.argv[1], [np.load(p) for p in sys.argv[2:] if p != "--after"]
if "--after" in sys.argv:
    npurt.compile(small_convnet(), soc="rk3588", progress=False, precision="fp16")
    npurt.compile(small_convnet(), soc="rk3566", progress=False, quantize="random")
c = npurt.compile(model, soc="rk3588", progress=False, quantize=calib)
print(hashlib.sha1(c.to_bytes()).hexdigest())
"""


def _calibration(tmp_path) -> list[str]:
    rng = np.random.default_rng(7)
    paths = []
    for k in range(3):
        p = tmp_path / f"c{k}.npy"
        np.save(p, rng.normal(size=(1, 3, 64, 64)).astype(np.float32))
        paths.append(str(p))
    return paths


def test_int8_compile_is_byte_identical_whatever_the_process_state(tmp_path):
    model = tmp_path / "mbv2.onnx"
    model.write_bytes(mobilenet_v2_like(size=64, num_classes=16).SerializeToString())
    calib = _calibration(tmp_path)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("NPURT_", "OPENBLAS_", "OMP_"))}
    runs = [({}, []), ({"NPURT_EXEC_THREADS": "2"}, ["--after"]),
            ({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}, ["--after"]),
            ({"OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "2", "NPURT_NATIVE_LEVEL": "avx2"}, [])]
    procs = [subprocess.Popen([sys.executable, "-c", _SCRIPT, str(model), *calib, *extra], env={**base, **env},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for env, extra in runs]
    digests = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        digests.append(out.split()[-1])
    here = npurt.compile(str(model), soc="rk3588", progress=False, quantize=[np.load(p) for p in calib])
    digests.append(hashlib.sha1(here.to_bytes()).hexdigest())
    assert len(set(digests)) == 1, digests
