"""The small graph IR the compiler works on: plain dataclasses, nodes kept in a topological schedule.

A `Graph` owns `Node`s (in execution order) and `TensorInfo`s (by name). Constant values — ONNX initializers,
`Constant` outputs and everything folded from them — live in `Graph.constants` as logical numpy arrays; their
`TensorInfo.is_weight` is True. Attributes are kept as plain Python values (`onnx_import.attribute_value`: tensors as
numpy arrays, strings as str); the kernels take them as they are.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator

import numpy as np

from npurt.errors import ErrorCode, NpuError


@dataclass
class TensorInfo:
    """One named tensor of the graph: its logical shape/dtype and where it comes from and goes to."""

    name: str
    shape: tuple[int, ...] | None = None
    dtype: str = "float32"              # numpy dtype name of the logical (ONNX) tensor
    producer: int | None = None         # index of the producing node in the schedule
    consumers: list[int] = field(default_factory=list)
    is_weight: bool = False
    is_input: bool = False
    is_output: bool = False

    @property
    def is_float(self) -> bool:
        return np.dtype(self.dtype).kind == "f"


@dataclass
class Node:
    """One op. `op_type` is the ONNX op; `activation` names a fused activation (Conv + Relu -> `ConvRelu`)."""

    name: str
    op_type: str
    inputs: list[str]                   # "" marks a missing optional input
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    activation: str | None = None
    activation_params: tuple | None = None
    domain: str = ""                    # non-empty: a custom op (run by rknn_register_custom_ops callbacks)

    @property
    def display_type(self) -> str:
        """The op type as the vendor's reports show it: the ONNX type plus the fused activation."""
        return self.op_type + (self.activation or "")


def node_error(code: ErrorCode, node: Node, reason: str) -> NpuError:
    """The compiler's error about one node: names the node and its op type, then the reason."""
    op = f"{node.domain}::{node.op_type}" if node.domain else node.op_type
    return NpuError(code, f"node {node.name!r} ({op}): {reason}")


@contextlib.contextmanager
def node_guard(node: Node, doing: str) -> Iterator[None]:
    """Work on one node inside the compiler: an NpuError gains the node's name, and any other exception (numpy,
    onnx, a kernel meeting a malformed model) becomes INVALID_MODEL naming the node, what was being done and why;
    the compiler never fails with another exception type."""
    try:
        yield
    except NpuError as exc:
        if repr(node.name) in exc.message:
            raise
        raise node_error(exc.code, node, f"{doing}: {exc.message}") from None
    except Exception as exc:
        text = str(exc).strip()
        reason = text.splitlines()[0] if text else "no detail"
        raise node_error(ErrorCode.INVALID_MODEL, node, f"{doing}: {type(exc).__name__}: {reason}") from None


@dataclass
class Graph:
    """A model: schedule of nodes, tensors by name, model inputs/outputs in order, constant values."""

    name: str
    opset: int
    nodes: list[Node]
    tensors: dict[str, TensorInfo]
    inputs: list[str]
    outputs: list[str]
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    weight_steps: dict[str, np.ndarray] = field(default_factory=dict)
    """Per output channel, the quantization step a constant weight already lies on (a front end whose graph carries
    its own weight quantization, `model.qnn_import`): int8 compilation keeps it where it fits."""
    keep: set[str] = field(default_factory=set)
    """Tensors the graph itself rounds to its own scale/offset (`model.qnn_import`): no pass folds them away (a
    BatchNormalization into the Conv before it, an activation into its producer), so each rounding happens."""

    def link(self) -> "Graph":
        """Recompute producer/consumer indices and the weight/input/output flags from nodes and lists."""
        for t in self.tensors.values():
            t.producer, t.consumers = None, []
            t.is_weight = t.name in self.constants
            t.is_input = False
            t.is_output = False
        for name in self.inputs:
            self.tensors[name].is_input = True
        for name in self.outputs:
            self.tensors[name].is_output = True
        for i, node in enumerate(self.nodes):
            for name in node.inputs:
                if name:
                    self.tensor(name).consumers.append(i)
            for name in node.outputs:
                if name:
                    self.tensor(name).producer = i
        return self

    def tensor(self, name: str) -> TensorInfo:
        """The TensorInfo of `name`, created (shape unknown) if the graph has not seen it yet."""
        info = self.tensors.get(name)
        if info is None:
            info = self.tensors[name] = TensorInfo(name)
        return info

    def activations(self) -> list[str]:
        """Names of the non-constant tensors that some node produces, in schedule order."""
        out = []
        for node in self.nodes:
            out.extend(n for n in node.outputs if n and n not in self.constants)
        return out

    def op_counts(self) -> dict[str, int]:
        """How many nodes of each display type the schedule has."""
        counts: dict[str, int] = {}
        for node in self.nodes:
            counts[node.display_type] = counts.get(node.display_type, 0) + 1
        return counts
