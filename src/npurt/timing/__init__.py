"""The timing model: predicted NPU time per layer of a compiled model on an RKNN SoC, from npurt's own plan.

`predict(compiled, soc, cores=1, sram=False) -> Prediction` is the one entry point (`npurt perf`, the runtime's
PERF_DETAIL / PERF_RUN in predicted mode, the toolkit face's eval_perf). See `npurt.timing.model` and
docs/npu-timing.md.
"""
from npurt.timing.model import LayerTime, Prediction, predict

__all__ = ["LayerTime", "Prediction", "predict"]
