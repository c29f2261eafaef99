"""QNN graph → IR: the front end for graphs built op by op through the QNN graph API (beside the ONNX importer).

The QNN mirror collects what `tensorCreateGraphTensor` and `graphAddNode` are given as `QnnTensor` / `QnnOp` (plain
data, `model.qnn_graph`) and hands them here. `translate` runs each op's translation (`model.qnn_ops`, the QNN op
definitions' semantics onto ONNX ops) and returns the same IR the ONNX importer builds, plus how to quantise it the
way the graph says (`QnnModel`: precision, each quantized tensor's scale / zero point); the compiler then treats it
like any other model (`compiler.compile_graph`). `check_op` translates one op alone with the same code and runs the
compiler's shape rules on it, so what it accepts is exactly what `translate` can build (backendValidateOpConfig).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Collection, Mapping, Sequence

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.model.ir import Graph
from npurt.model.qnn_graph import (APP_READ, APP_WRITE, KINDS, NATIVE, OPSET, PACKAGE, STATIC, IrBuilder,
                                   QnnOp, QnnTensor, Quant, invalid, unsupported)
from npurt.model.qnn_ops import OPS

__all__ = ["APP_READ", "APP_WRITE", "KINDS", "NATIVE", "OPS", "PACKAGE", "STATIC", "QnnModel", "QnnOp", "QnnTensor",
           "Quant", "check_op", "translate"]


@dataclass
class QnnModel:
    """A translated QNN graph: the IR, the precision it compiles at and the int8 (scale, zero point) of its quantized
    tensors (the compiler runs the nodes on real values without one in fp16: `compiler.compile_graph`)."""

    graph: Graph
    precision: str
    qparams: dict[str, tuple[float, int]] = field(default_factory=dict)


# ---------------------------------------------------------------------------------------------------------
# checks, translation
# ---------------------------------------------------------------------------------------------------------
_CONVERTING = ("Quantize", "Dequantize", "Convert", "Cast")


def _check_types(op: QnnOp, tensors: Mapping[str, QnnTensor]) -> None:
    """The tensor-type rules npurt's storage can keep: activations of one op are all quantized or all not (only
    Quantize / Dequantize / Convert / Cast change that); a quantized activation has one scale/offset."""
    acts = [tensors[n] for n in list(op.inputs) + list(op.outputs) if n and tensors[n].kind != STATIC]
    for t in acts:
        if t.quant is not None and t.quant.axis is not None:
            raise unsupported(f"tensor {t.name!r}: per-axis quantization is supported for STATIC tensors only")
    if op.type in _CONVERTING:
        return
    reals = [t for t in acts if t.is_float]
    if any(t.q8 for t in reals) and not all(t.q8 for t in reals):
        mixed = ", ".join(f"{t.name} ({'quantized' if t.quantized else t.dtype})" for t in reals)
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"mixes 8-bit quantized and other tensors ({mixed}); put a "
                                                   f"Quantize / Dequantize / Convert between them")


def _check_known(op: QnnOp, tensors: Mapping[str, QnnTensor]) -> None:
    if op.package != PACKAGE:
        raise unsupported(f"package {op.package!r} is not supported (only {PACKAGE!r})")
    if op.type not in OPS:
        raise unsupported(f"op type {op.type!r} is not supported")
    for n in list(op.inputs) + list(op.outputs):
        if n and n not in tensors:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"tensor {n!r} was never created")
    for n in op.outputs:
        if tensors[n].kind in (STATIC, APP_WRITE):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"output {n!r} is a {tensors[n].kind.upper()} tensor")


def _run_op(b: IrBuilder, op: QnnOp) -> None:
    b.op = op
    try:
        OPS[op.type](b, op)
    except NpuError as exc:
        raise NpuError(exc.code, f"node {op.name!r} ({op.type}): {exc.message}", exc.hint, **exc.details) from None
    finally:
        b.op = None


_SAME_SHAPE = ("Convert", "Gelu")


def check_op(op: QnnOp, tensors: Mapping[str, QnnTensor], supported: Collection[str],
             infer: Callable[[Graph], Graph]) -> None:
    """Whether `op` (with its tensors) can be built: the same translation `translate` runs, its IR ops among the
    executor's `supported` ones, and the compiler's shape rules (`infer`) agreeing with the output dims the op
    declares. NpuError (NOT_SUPPORTED / INVALID_ARGUMENT) naming the node and the reason otherwise."""
    _check_known(op, tensors)
    _check_types(op, tensors)
    scoped = {n: tensors[n] for n in list(op.inputs) + list(op.outputs) if n}
    local = {n: (t if t.kind == STATIC or n not in op.inputs else
                 QnnTensor(t.name, APP_WRITE, t.dtype, t.dims, t.quant)) for n, t in scoped.items()}
    local.update({n: QnnTensor(t.name, APP_READ, t.dtype, t.dims, t.quant)
                  for n, t in scoped.items() if n in op.outputs})
    b = IrBuilder(local)
    _run_op(b, op)
    for node in b.nodes:
        if node.op_type not in supported:
            raise unsupported(f"node {op.name!r} ({op.type}): npurt has no {node.op_type} kernel")
    graph = _finish(b, op.name, [n for n in op.inputs if n and local[n].kind == APP_WRITE], list(op.outputs))
    for node in graph.nodes:                        # what the op gives is inferred, not taken from the declaration
        if node.op_type in _SAME_SHAPE:             # (no ONNX shape rule at the IR's opset: same shape as input)
            if graph.tensors[node.inputs[0]].shape != graph.tensors[node.outputs[0]].shape:
                raise invalid(f"node {op.name!r} ({op.type}): output {node.outputs[0]!r} must have its input's dims")
            continue
        for o in node.outputs:
            if o:
                graph.tensors[o].shape = None
    _shapes_agree(infer(graph), local, op.outputs, op)


def _finish(b: IrBuilder, name: str, inputs: list[str], outputs: list[str]) -> Graph:
    for out in outputs:
        b.value(out)                                # an output produced in NCHW gets its transpose back
    for n in inputs:
        b.value(n)
    graph = Graph(name, OPSET, b.nodes, dict(b.infos), list(inputs), list(outputs), dict(b.constants),
                  dict(b.steps))
    return graph.link()


def _shapes_agree(graph: Graph, tensors: Mapping[str, QnnTensor], names: Sequence[str], op: QnnOp | None) -> None:
    for n in names:
        got = graph.tensors[n].shape if n in graph.tensors else None
        want = tuple(tensors[n].dims)
        if got is not None and tuple(got) != want:
            where = f"node {op.name!r} ({op.type}): " if op is not None else ""
            raise invalid(f"{where}output {n!r} is declared with dims {list(want)}, the op gives {list(got)}")


def translate(name: str, tensors: Mapping[str, QnnTensor], ops: Sequence[QnnOp], inputs: Sequence[str],
              outputs: Sequence[str]) -> QnnModel:
    """The IR of a whole QNN graph (`inputs` / `outputs`: its APP_WRITE / APP_READ tensors in creation order) and
    how to quantise it: int8 with the graph's own scale/offset when it has 8-bit quantized activations (nodes on
    other real-valued tensors kept in float), else fp16 (the HTP's float precision)."""
    if not outputs:
        raise invalid("the graph has no APP_READ tensor")
    b = IrBuilder(tensors)
    for op in ops:
        _run_op(b, op)
    for out in outputs:
        if out not in b.have and out not in b.nchw:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"output tensor {out!r} is produced by no node")
    graph = _finish(b, name, list(inputs), list(outputs))
    quantized = {n: t for n, t in tensors.items() if t.kind != STATIC and t.q8}
    if not quantized:
        return QnnModel(graph, "fp16")
    return _quantized_model(graph, ops, quantized, b.derived)


def _int8(t: QnnTensor) -> tuple[float, int]:
    """npurt's int8 (scale, zero point) for an 8-bit QNN tensor: the same values (uint8 is shifted by 128)."""
    assert t.quant is not None
    zp = -int(t.quant.offset) - (128 if np.dtype(t.dtype).kind == "u" else 0)
    return float(t.quant.scale), zp


def _quantized_model(graph: Graph, ops: Sequence[QnnOp], quantized: Mapping[str, QnnTensor],
                     derived: Mapping[str, str]) -> QnnModel:
    """int8 with the graph's own scale/offset for its 8-bit tensors and the IR tensors derived from them."""
    qparams: dict[str, tuple[float, int]] = {n: _int8(t) for n, t in quantized.items()}
    # A float tensor read by a Quantize takes that Quantize's scale/offset (a graph input is then quantized on
    # entry, exactly); a float graph output written by a Dequantize takes its input's.
    for op in ops:
        if op.type == "Quantize" and op.outputs[0] in quantized and op.inputs[0] in graph.inputs:
            qparams.setdefault(op.inputs[0], qparams[op.outputs[0]])
        if op.type == "Dequantize" and op.inputs[0] in quantized:
            qparams.setdefault(op.outputs[0], qparams[op.inputs[0]])
    for name, qnn_name in derived.items():         # NCHW forms, reshaped / transposed pieces
        if qnn_name in qparams:
            qparams.setdefault(name, qparams[qnn_name])
    graph.keep = set(qparams)
    return QnnModel(graph, "int8", qparams)
