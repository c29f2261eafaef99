"""npurt.model layer: ONNX → `CompiledModel`.

Modules, in pipeline order:
- `onnx_import`: load (path / bytes / ModelProto, external data), fix input shapes, shape inference, build the IR.
- `ir`: the plain-dataclass graph IR (`Graph`, `Node`, `TensorInfo`).
- `passes`: constant folding (with a node evaluator the caller passes: the kernels), shape completion,
  Identity/Dropout removal, BatchNorm folding, activation fusion (`ConvRelu`, `ConvClip`, ...), dead-code removal.
- `calibrate`: int8 calibration (dataset.txt or arrays, min/max, per-tensor asymmetric affine).
- `weights`: stored (compute-ready) weights: fp16, or per-channel int8 + int32 bias; the weight blob layout.
- `attrs`: `TensorAttr` (vendor attr fields) and `TensorStorage` (native layout, type, sizes) per tensor.
- `options`: `CompileOptions`, the compiler's options as one frozen object (one docstring per option).
- `compiler`: `compile_onnx`, given the node evaluator and the supported ops from above
  (`npurt.exec.compile.compile_model`, exported as `npurt.compile`, passes them); it plans memory with the plan
  layer below.
- `compiled`, `file_format`: `CompiledModel` (with its `MemoryPlan`) and its `.npurt` file (`read_compiled`,
  exported as `npurt.load_compiled`).
- `report`: the rows of the RKNN_LOG_LEVEL=3 memory table for a compiled model and its plan (formatted by
  `npurt.plan.report`).
- `zoo`: deterministic test models.

Nothing is imported here so that `import npurt.model.attrs` stays light.
"""
