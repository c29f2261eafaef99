"""Where the board runs each op: on the NPU, or on the CPU and why, per rknn-toolkit2's operator support lists.

`op_support.json` (beside this module; `bench/_op_support.py` regenerates it from the "RKNN Compiler Support
Operator List" V2.3.2 of rknn-toolkit2) holds, per SoC, the ops its NPU runs with their attribute ranges (kernel,
stride, pad, dilation, Concat axis, ...) and the Transpose permutations it does not support, and the ops the
runtime runs on the CPU. `place(node, compiled, soc)` reads them: an op the SoC's NPU list names and whose
attributes are in range runs on the NPU; any other runs on the CPU, with the reason. The ONNX-name-to-list-name
mapping (`LIST_NAME`: Gemm as the 1x1 Convolution it is lowered to, MatMul as exMatMul, Flatten / Squeeze /
Unsqueeze / Identity as Reshape, ...) is npurt's reading of the list.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from npurt.model.compiled import CompiledModel
    from npurt.model.ir import Node

SUPPORT = Path(__file__).with_name("op_support.json")

LIST_NAME = {"Conv": "Convolution", "Gemm": "Convolution", "MatMul": "exMatMul", "Clip": "Clip/ReLU6",
             "LayerNormalization": "exNorm", "Flatten": "Reshape", "Squeeze": "Reshape", "Unsqueeze": "Reshape",
             "Identity": "Reshape", "Dropout": "Reshape", "Upsample": "Resize", "Swish": "exSwish", "Gelu": "exGelu",
             "Mish": "exMish"}


def tensor_shape(compiled: "CompiledModel", name: str) -> tuple[int, ...]:
    """The logical shape of tensor `name` (its storage, else the graph's inferred shape; () when unknown)."""
    st = compiled.storage.get(name)
    if st is not None:
        return tuple(int(d) for d in st.shape)
    info = compiled.graph.tensors.get(name)
    return tuple(int(d) for d in (info.shape or ())) if info is not None else ()


def weight_shape(node: "Node", compiled: "CompiledModel") -> tuple[int, ...]:
    """The shape of the node's weight operand (its second input; () when it has none)."""
    if len(node.inputs) < 2 or not node.inputs[1]:
        return ()
    w = compiled.graph.constants.get(node.inputs[1])
    if w is not None:
        return tuple(int(d) for d in w.shape)
    return tensor_shape(compiled, node.inputs[1])


def is_depthwise(node: "Node", compiled: "CompiledModel") -> bool:
    """A grouped convolution with one input channel per group."""
    if node.op_type not in ("Conv", "ConvTranspose"):
        return False
    ws = weight_shape(node, compiled)
    return int(node.attrs.get("group", 1)) > 1 and len(ws) >= 2 and ws[1] == 1


@functools.lru_cache(maxsize=1)
def support() -> dict[str, Any]:
    """The parsed support lists (`op_support.json`)."""
    return json.loads(SUPPORT.read_text())


def _list_name(node: "Node", compiled: "CompiledModel") -> str:
    if node.op_type == "Conv":
        return "Depthwise Convolution" if is_depthwise(node, compiled) else "Convolution"
    return LIST_NAME.get(node.op_type, node.op_type)


def _attributes(node: "Node", compiled: "CompiledModel", rank: int) -> dict[str, int]:
    """The node's attributes under the list's names (each list spells stride / pad its own way: both are given)."""
    a = node.attrs
    out: dict[str, int] = {}
    kernel = list(a.get("kernel_shape") or [])
    if not kernel and node.op_type in ("Conv", "ConvTranspose"):
        kernel = list(weight_shape(node, compiled)[2:])
    if len(kernel) == 2:
        out.update(kernel_h=int(kernel[0]), kernel_w=int(kernel[1]))
    strides = list(a.get("strides") or [])
    if len(strides) == 2:
        for k in ("stride", "strides"):
            out.update({f"{k}_h": int(strides[0]), f"{k}_w": int(strides[1])})
    pads = list(a.get("pads") or [])
    if len(pads) == 4:                                # ONNX: top, left, bottom, right
        for k in ("pad", "pads"):
            out.update({f"{k}_top": int(pads[0]), f"{k}_left": int(pads[1]), f"{k}_bottom": int(pads[2]),
                        f"{k}_right": int(pads[3])})
    dil = list(a.get("dilations") or [])
    if len(dil) == 2:
        out.update(dilations_h=int(dil[0]), dilations_w=int(dil[1]))
    if "axis" in a and node.op_type == "Concat":
        axis = int(a["axis"])
        out["axis"] = axis + rank if axis < 0 else axis
    return out


def place(node: "Node", compiled: "CompiledModel", soc: str) -> tuple[str, str]:
    """("NPU", "") or ("CPU", why) for `node` on `soc`'s board."""
    if node.domain:
        return "CPU", f"custom op ({node.domain}::{node.op_type}): runs on the CPU"
    lists = support()["npu"].get(soc)
    if lists is None:
        return "CPU", f"no operator support list for {soc}"
    name = _list_name(node, compiled)
    spec = lists["npu"].get(name)
    if spec is None:
        version = support()["version"]
        return "CPU", f"{node.op_type} is not in {soc}'s NPU op list (RKNN compiler support list {version})"
    in_shape = tensor_shape(compiled, node.inputs[0]) if node.inputs and node.inputs[0] else ()
    for key, value in _attributes(node, compiled, len(in_shape) or 4).items():
        allowed = spec.get(key)
        if allowed is not None and not _allowed(value, allowed):
            shown = "{" + ", ".join(map(str, allowed["in"])) + "}" if isinstance(allowed, dict) else str(allowed)
            return "CPU", f"{node.op_type} {key}={value} is outside {soc}'s NPU range {shown}"
    if node.op_type == "Transpose":
        perm = [int(p) for p in node.attrs.get("perm") or []]
        if perm in lists["transpose_unsupported"]:
            return "CPU", f"Transpose perm={perm} is not supported by {soc}'s NPU"
    return "NPU", ""


def _allowed(value: int, allowed: Any) -> bool:
    """A list range is [lo, hi] (closed); a set ({"in": [...]}, e.g. Concat's axis) lists its values."""
    if isinstance(allowed, dict):
        return value in allowed["in"]
    return allowed[0] <= value <= allowed[1]


def cpu_ops(compiled: "CompiledModel", soc: str) -> list[dict[str, str]] | None:
    """The ops of `compiled` the board of `soc` runs on the CPU: [{name, op, why}] (None: no support list for
    `soc`, e.g. a QNN SoC)."""
    if soc not in support()["npu"]:
        return None
    out = []
    for node in compiled.graph.nodes:
        target, why = place(node, compiled, soc)
        if target == "CPU":
            out.append({"name": node.name or (node.outputs[0] if node.outputs else ""), "op": node.op_type, "why": why})
    return out


def describe(ops: list[dict[str, str]] | None, soc: str, total: int) -> list[str]:
    """Lines for `npurt report`: where the board runs the ops."""
    if ops is None:
        return []
    head = (f"board placement on {soc} (RKNN compiler support list {support()['version']}): "
            f"{total - len(ops)} of {total} ops on the NPU")
    return [head + ("" if ops else ", none on the CPU")] + [f"  CPU: {o['name']} ({o['op']}): {o['why']}" for o in ops]
