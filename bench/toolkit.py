"""The toolkit face on one model: build time and inference time through `npurt.toolkit.RKNN` (what a script run by
`npurt exec` pays), against onnxruntime fp32 on the same model in the same run.

Row per precision (fp16, int8): mobilenet_v2_like 224x224 (npurt's zoo: the MobileNetV2 architecture), `build`
(int8: calibrated on 4 .npy samples of a dataset.txt) timed once; `inference` median of 5 calls on one NCHW float
input; onnxruntime 1 intra-op thread, default optimisations, median of 5. ratio = npurt inference / onnxruntime
(lower is better). --quick: 96x96, 3 calls.
Run: python bench/toolkit.py [--quick]
"""
from __future__ import annotations

import os
import platform
import statistics
import sys
import tempfile
import time

import numpy as np


def _median(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run(quick: bool = False) -> list[dict]:
    import onnxruntime as ort

    from npurt.model import zoo
    from npurt.toolkit import RKNN

    size, repeats = (96, 3) if quick else (224, 5)
    model = zoo.mobilenet_v2_like(size=size)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(1, 3, size, size)).astype(np.float32)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    t_ort = _median(lambda: sess.run(None, {name: x}), repeats)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.onnx")
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        lines = []
        for k in range(4):
            np.save(os.path.join(tmp, f"s{k}.npy"), rng.normal(size=(1, 3, size, size)).astype(np.float32))
            lines.append(os.path.join(tmp, f"s{k}.npy"))
        dataset = os.path.join(tmp, "dataset.txt")
        with open(dataset, "w") as f:
            f.write("\n".join(lines) + "\n")
        for precision in ("fp16", "int8"):
            rknn = RKNN()
            rknn.config(target_platform="rk3588")
            rknn.load_onnx(model=path)
            t0 = time.perf_counter()
            quantize = precision == "int8"
            assert rknn.build(do_quantization=quantize, dataset=dataset if quantize else None) == 0
            t_build = time.perf_counter() - t0
            assert rknn.init_runtime() == 0
            t_inf = _median(lambda: rknn.inference(inputs=[x], data_format="nchw"), repeats)
            rknn.release()
            rows.append({"name": f"mobilenet_v2_like {size} {precision}", "build_s": t_build,
                         "inference_ms": t_inf * 1e3, "ort_fp32_ms": t_ort * 1e3, "ratio": t_inf / t_ort,
                         "cpu": platform.processor() or platform.machine()})
    return rows


def main() -> None:
    for row in run(quick="--quick" in sys.argv):
        print(", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()))


if __name__ == "__main__":
    main()
