"""`CompiledModel`: the graph, the stored weights, every tensor's storage, the vendor attrs, quantisation and the
`MemoryPlan` — everything a runtime needs, and its `.npurt` save/load (`read_compiled`, which is
`npurt.load_compiled`). JSON appears only here, in the manifest.
"""
from __future__ import annotations

import base64
import os
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.model import file_format
from npurt.model.attr_wire import decode_attribute
from npurt.model.attrs import TensorAttr, TensorStorage
from npurt.model.ir import Graph, Node, TensorInfo
from npurt.model.weights import WeightEntry, stored_view
from npurt.plan.model_plan import MemoryPlan


@dataclass
class CompiledModel:
    """A model compiled for one SoC and precision ("fp16", "int8" or "float32")."""

    soc: str
    precision: str
    graph: Graph
    storage: dict[str, TensorStorage]       # every activation, model inputs and outputs included
    weights: dict[str, WeightEntry]         # stored constants (and their scale entries)
    weight_blob: np.ndarray                 # uint8, plan.weight_size bytes, each entry at its planned offset
    plan: MemoryPlan                        # internal arena offsets and the weight layout
    input_attrs: list[TensorAttr]
    output_attrs: list[TensorAttr]
    native_input_attrs: list[TensorAttr]
    native_output_attrs: list[TensorAttr]
    native_nhwc_input_attrs: list[TensorAttr]
    native_nhwc_output_attrs: list[TensorAttr]
    mean: list[list[float] | None] = field(default_factory=list)   # per input, per channel (None: none)
    std: list[list[float] | None] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def n_inputs(self) -> int:
        return len(self.graph.inputs)

    @property
    def n_outputs(self) -> int:
        return len(self.graph.outputs)

    @property
    def internal_size(self) -> int:
        """Bytes of the internal (intermediate tensor) arena, excluding inputs and outputs."""
        return self.plan.internal_size

    @property
    def weight_size(self) -> int:
        return self.plan.weight_size

    # --- persistence ------------------------------------------------------------------------------

    def to_bytes(self, store_plan: MemoryPlan | None = None) -> bytes:
        """The `.npurt` file contents. With `store_plan` the weights live in a context binary's shared store
        (`npurt.model.context_binary`), laid out by that plan: the file carries no weights of its own."""
        return file_format.encode(self.soc, self._manifest(store_plan),
                                  self.weight_blob if store_plan is None else np.empty(0, np.uint8))

    def save(self, path: "str | os.PathLike") -> None:
        """Write the `.npurt` file atomically (temp file + rename: nothing half-written on failure)."""
        file_format.write_atomic(path, self.to_bytes())

    def _manifest(self, plan: MemoryPlan | None = None) -> dict[str, Any]:
        """The manifest, with `plan` (default: the model's own) as the stored memory plan."""
        g = self.graph
        return {
            "format": "npurt-compiled-model",
            "precision": self.precision,
            "graph": {
                "name": g.name, "opset": g.opset, "inputs": g.inputs, "outputs": g.outputs,
                "nodes": [_node_json(n) for n in g.nodes],
                "tensors": {k: {"shape": list(t.shape) if t.shape is not None else None, "dtype": t.dtype}
                            for k, t in g.tensors.items()},
                "constants": sorted(g.constants),
            },
            "storage": {k: s.to_json() for k, s in self.storage.items()},
            "weights": {k: w.to_json() for k, w in self.weights.items()},
            "plan": _plan_json(plan or self.plan),
            "attrs": {key: [a.to_json() for a in getattr(self, key)] for key in _ATTR_LISTS},
            "mean": self.mean, "std": self.std, "meta": self.meta,
        }


_ATTR_LISTS = ("input_attrs", "output_attrs", "native_input_attrs", "native_output_attrs",
               "native_nhwc_input_attrs", "native_nhwc_output_attrs")


def _plan_json(plan: MemoryPlan) -> dict[str, Any]:
    d = asdict(plan)
    d["lifetimes"] = {k: list(v) for k, v in plan.lifetimes.items()}
    return d


def _ints(m: dict[str, Any]) -> dict[str, int]:
    return {str(k): int(v) for k, v in m.items()}


def _plan_from_json(d: dict[str, Any]) -> MemoryPlan:
    return MemoryPlan(int(d["internal_size"]), _ints(d["offsets"]), _ints(d["sizes"]),
                      {str(k): (int(v[0]), int(v[1])) for k, v in d["lifetimes"].items()},
                      _ints(d["weight_offsets"]), _ints(d["weight_sizes"]), int(d["weight_size"]),
                      int(d["lower_bound"]), str(d["method"]), dict(d["extra"]))


def _node_json(n: Node) -> dict[str, Any]:
    from onnx import helper, numpy_helper      # saving only: loading reads the attributes without onnx (attr_wire)
    attrs = {}
    for k, v in n.attrs.items():
        if isinstance(v, np.ndarray):
            v = numpy_helper.from_array(v)
        attrs[k] = base64.b64encode(helper.make_attribute(k, v).SerializeToString()).decode()
    return {"name": n.name, "op_type": n.op_type, "inputs": n.inputs, "outputs": n.outputs, "attrs": attrs,
            "activation": n.activation,
            "activation_params": list(n.activation_params) if n.activation_params is not None else None,
            "domain": n.domain}


def _node_from_json(d: dict[str, Any]) -> Node:
    attrs = {}
    for k, b64 in d["attrs"].items():
        attrs[k] = decode_attribute(base64.b64decode(b64))[1]
    p = d["activation_params"]
    return Node(d["name"], d["op_type"], list(d["inputs"]), list(d["outputs"]), attrs, d["activation"],
                tuple(p) if p is not None else None, d.get("domain", ""))


def read_compiled(path_or_bytes: "str | os.PathLike | bytes | bytearray | memoryview",
                  store: np.ndarray | None = None) -> CompiledModel:
    """A CompiledModel read from a `.npurt` file or its bytes (`npurt.load_compiled`); INVALID_MODEL if corrupt,
    truncated, foreign, or its memory plan is inconsistent. `store`: the shared weight store of a context binary
    the file's weights live in (its own blob is then empty)."""
    soc, m, blob = file_format.decode(file_format.read_bytes(path_or_bytes))
    if store is not None:
        if blob.size:
            raise NpuError(ErrorCode.INVALID_MODEL, "a graph of a weight-shared context binary carries weights")
        blob = store
    try:
        if m.get("format") != "npurt-compiled-model":
            raise ValueError("manifest is not an npurt compiled model")
        gj = m["graph"]
        tensors = {k: TensorInfo(k, tuple(v["shape"]) if v["shape"] is not None else None, v["dtype"])
                   for k, v in gj["tensors"].items()}
        weights = {k: WeightEntry.from_json(v) for k, v in m["weights"].items()}
        plan = _plan_from_json(m["plan"])
        if plan.weight_size != blob.size:
            raise ValueError(f"weight blob has {blob.size} bytes, the plan says {plan.weight_size}")
        bad = plan.check()
        if bad:
            raise ValueError(f"memory plan: {'; '.join(bad[:3])}")
        graph = Graph(gj["name"], int(gj["opset"]), [_node_from_json(n) for n in gj["nodes"]], tensors,
                      list(gj["inputs"]), list(gj["outputs"]), {})
        for name in gj["constants"]:
            graph.constants[name] = stored_view(weights[name], blob, plan.weight_offsets[name])
        graph.link()
        attrs = {key: [TensorAttr.from_json(a) for a in m["attrs"][key]] for key in _ATTR_LISTS}
        return CompiledModel(soc, m["precision"], graph, {k: TensorStorage.from_json(v) for k, v in m["storage"].items()},
                             weights, blob, plan, mean=m["mean"], std=m["std"], meta=m.get("meta", {}), **attrs)
    except NpuError:
        raise
    except Exception as exc:
        raise NpuError(ErrorCode.INVALID_MODEL, f"npurt model manifest is inconsistent: {exc}") from None
