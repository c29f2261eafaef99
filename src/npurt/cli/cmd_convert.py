"""`npurt convert MODEL -o m.npurt`: compile an ONNX model for one SoC and save the single-file compiled model.

The file holds the graph, the stored weights, the tensor attrs, the quantisation and the memory plan, and records
its target SoC (`rknn_init` / `npurt.load_compiled` on another SoC is a platform mismatch). `--quantize` selects
int8 with a calibration dataset.txt (or `random`); `--mean` / `--std` are fused into input packing. The same file
is a QNN HTP context binary (`contextCreateFromBinary`); `--qnn-io` chooses how its graph I/O appears to QNN:
FLOAT_32 (default), FLOAT_16, or quantized with scale/offset (int8 only); `--qnn-io-layout nchw` makes its 4-D graph
I/O NCHW (the layout onnxruntime's EPContext models declare) instead of the HTP's NHWC. `--input-shape x=1,3,48,320`
fixes the dynamic dimensions of an input (a recognizer's width, a batch `N`). `--epcontext CTX.onnx` also writes
onnxruntime's EPContext model over the binary (`npurt.qnn.epcontext`), for onnxruntime's QNN execution provider.
Several models (HTP SoCs) make one QNN context binary with a graph each; `--share-weights` stores weights identical
across them once (`npurt.model.context_binary`).

`--dynamic-input` makes a dynamic-shape model (the toolkit's `dynamic_input`): several shapes per input, e.g.
`--dynamic-input "1,3,224,224;1,3,160,160"`, the option once per input (in order, each with as many shapes); shape
set k is the k-th shape of every input. The toolkit's own nested list is accepted too, as JSON
(`'[[[1,3,224,224]],[[1,3,160,160]]]'`). The file runs at each shape set after `rknn_set_input_shapes`.
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from npurt.cli._models import (add_compile_args, compile_options, is_compiled, load_model,
                               parse_floats, resolve_dataset, resolve_model)
from npurt.cli._output import human_bytes, make_console, print_json
from npurt.cli._target import target_soc
from npurt.errors import ErrorCode, NpuError
from npurt.files import regular_output
from npurt.model.options import CompileOptions
from npurt.soc import get_profile


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("convert", help="compile an ONNX model to a .npurt file for one SoC")
    p.add_argument("model", nargs="+", help="an .onnx file or a zoo name; several make one QNN context binary with "
                                            "a graph each (HTP SoCs)")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="M.npurt", help="the compiled model file")
    p.add_argument("--soc", default=None, help="target SoC (default $NPURT_SOC, else rk3588)")
    add_compile_args(p)
    p.add_argument("--mean", help="per-channel input mean, e.g. 127.5,127.5,127.5")
    p.add_argument("--std", help="per-channel input std, e.g. 127.5,127.5,127.5")
    p.add_argument("--qnn-io", default="float32",
                   help="QNN graph I/O tensors: float32 (default), float16, or quantized (int8 models)")
    p.add_argument("--qnn-io-layout", default="nhwc",
                   help="layout of 4-D QNN graph I/O tensors: nhwc (default, the HTP's) or nchw (what onnxruntime's "
                        "EPContext models declare)")
    p.add_argument("--epcontext", type=Path, default=None, metavar="CTX.onnx",
                   help="also write onnxruntime's EPContext model over the binary (HTP SoCs; it names the binary by "
                        "its path relative to CTX.onnx's folder)")
    p.add_argument("--dynamic-input", action="append", default=None, metavar="SHAPES",
                   help="a dynamic-shape model: the shapes of one input, ';'-separated (e.g. "
                        "\"1,3,224,224;1,3,160,160\"), once per input in order; or the toolkit's dynamic_input "
                        "as JSON")
    p.add_argument("--share-weights", action="store_true",
                   help="several models: store weights identical across them once (QNN weight sharing)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a summary")
    p.set_defaults(func=run)


def parse_dynamic_input(values: list[str]) -> list[list[list[int]]]:
    """`--dynamic-input` values (one per input, shapes ';'-separated; or one JSON value in the toolkit's form) as the
    toolkit's dynamic_input: a list of shape sets, each with one shape per input."""
    if len(values) == 1 and values[0].lstrip().startswith("["):
        try:
            return json.loads(values[0])
        except json.JSONDecodeError as exc:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"--dynamic-input is not valid JSON: {exc}") from None
    per_input = []
    for value in values:
        try:
            per_input.append([[int(d) for d in shape.split(",")] for shape in value.replace(" ", "").split(";")
                              if shape])
        except ValueError:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"--dynamic-input {value!r}: shapes are comma-separated "
                                                       f"integers, ';' between shapes") from None
    counts = {len(shapes) for shapes in per_input}
    if len(counts) != 1 or 0 in counts:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"--dynamic-input: every input needs the same number of shapes, "
                                                   f"got {[len(s) for s in per_input]}")
    return [list(shape_set) for shape_set in zip(*per_input)]


def _compile_dynamic(path: Path, soc: str, args: argparse.Namespace, options: CompileOptions):
    """compile_family with the CLI's options; `--quantize random` draws samples at every shape set."""
    from npurt.runtime.loader import compile_family, parse_shape_sets
    shape_sets = parse_shape_sets(parse_dynamic_input(args.dynamic_input))
    quantize = resolve_dataset(args.quantize, path, shape_sets)
    return compile_family(str(path), soc, shape_sets, options.replace(quantize=quantize))


def _write_epcontext(compiled, binary: Path, path: Path) -> None:
    """The EPContext model at `path`, naming `binary` relative to its folder (embed_mode 0, as onnxruntime writes)."""
    import onnx
    from npurt.qnn.epcontext import epcontext_model
    relative = os.path.relpath(binary.resolve(), path.resolve().parent)
    onnx.save(epcontext_model(compiled, relative, compiled.graph.name or "npurt"), path)


def _convert_many(args: argparse.Namespace, profile, options: CompileOptions, console) -> int:
    """Several models -> one QNN context binary with a graph each (`npurt.model.context_binary`); graphs whose
    names collide are named `<name>_<k>` by position."""
    from npurt.model import context_binary
    from npurt.qnn.graph import set_graph_io, set_graph_io_layout
    if not profile.vtcm_size:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"several models make a QNN HTP context binary: use an HTP --soc "
                                                   f"(sm8550, ...), not {profile.name}")
    if args.epcontext is not None or args.dynamic_input or args.input_shape:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "--epcontext, --dynamic-input and --input-shape take one model")
    paths = [resolve_model(m) for m in args.model]
    regular_output(args.output, "--output", paths)
    models = []
    for path in paths:
        if is_compiled(path):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{path} is already a compiled .npurt model")
        compiled = load_model(str(path), profile.name, options, progress=False)
        set_graph_io(compiled, args.qnn_io)
        set_graph_io_layout(compiled, args.qnn_io_layout)
        models.append(compiled)
    names = [m.graph.name for m in models]
    if len(set(names)) < len(names):
        for k, m in enumerate(models):
            m.graph.name = f"{m.graph.name}_{k}"
    data = context_binary.encode(models, share=args.share_weights)
    from npurt.model.file_format import write_atomic
    write_atomic(args.output, data)
    stored, unshared = context_binary.weight_bytes(models, args.share_weights)
    result = {"models": [p.name for p in paths], "output": str(args.output), "soc": profile.name,
              "graphs": [m.graph.name for m in models], "weight_size": stored, "weight_size_unshared": unshared,
              "file_size": len(data)}
    if args.json:
        print_json(result)
        return 0
    console.print(f"{', '.join(result['models'])} -> {args.output}: {profile.name}, {len(models)} graphs "
                  f"({', '.join(result['graphs'])}), weights {human_bytes(stored)}"
                  + (f" (shared; {human_bytes(unshared)} unshared)" if args.share_weights else "")
                  + f", file {human_bytes(len(data))}")
    return 0


def run(args: argparse.Namespace) -> int:
    from npurt.qnn.graph import GRAPH_IO, GRAPH_IO_LAYOUTS, set_graph_io, set_graph_io_layout
    if args.qnn_io not in GRAPH_IO:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"--qnn-io {args.qnn_io!r}: use one of {', '.join(GRAPH_IO)}")
    if args.qnn_io_layout not in GRAPH_IO_LAYOUTS:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"--qnn-io-layout {args.qnn_io_layout!r}: use one of "
                                                   f"{', '.join(GRAPH_IO_LAYOUTS)}")
    console = make_console(quiet=args.json)
    profile = get_profile(target_soc(args.soc, args.model[0]))
    if len(args.model) > 1:
        mean, std = parse_floats(args.mean, "--mean"), parse_floats(args.std, "--std")
        return _convert_many(args, profile, compile_options(args, [mean] if mean else None, [std] if std else None),
                             console)
    if args.share_weights:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "--share-weights shares weights across several models: give more "
                                                   "than one")
    args.model = args.model[0]
    path = resolve_model(args.model)
    regular_output(args.output, "--output", [path])
    if args.epcontext is not None:
        if not profile.vtcm_size:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"--epcontext wraps a QNN HTP context binary: use an HTP "
                                                       f"--soc (sm8550, ...), not {profile.name}")
        regular_output(args.epcontext, "--epcontext", [path, args.output])
        if args.epcontext.resolve() == args.output.resolve():
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"--epcontext {args.epcontext} is the --output binary: give "
                                                       f"the EPContext model its own path")
    if is_compiled(path):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{path} is already a compiled .npurt model")
    mean, std = parse_floats(args.mean, "--mean"), parse_floats(args.std, "--std")
    options = compile_options(args, [mean] if mean else None, [std] if std else None)
    if options.input_shapes and args.dynamic_input:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "--input-shape and --dynamic-input exclude each other (a dynamic-"
                                                   "shape model lists its shapes in --dynamic-input)")
    if args.dynamic_input:
        compiled = _compile_dynamic(path, profile.name, args, options)
    else:
        compiled = load_model(str(path), profile.name, options, progress=not args.json and console.is_terminal)
    if args.qnn_io != "float32":
        set_graph_io(compiled, args.qnn_io)
    if args.qnn_io_layout != "nhwc":
        set_graph_io_layout(compiled, args.qnn_io_layout)
    if args.output.suffix not in (".npurt", ".bin"):        # .bin: the QNN context binary's usual name
        console.print(f"[yellow]note[/yellow]: {args.output} ends in neither .npurt nor .bin (the same file either "
                      f"way)")
    compiled.save(args.output)
    if args.epcontext is not None:
        _write_epcontext(compiled, args.output, args.epcontext)
    result = {"model": path.name, "output": str(args.output), "soc": compiled.soc, "precision": compiled.precision,
              "inputs": len(compiled.graph.inputs), "outputs": len(compiled.graph.outputs),
              "nodes": len(compiled.graph.nodes), "weight_size": int(compiled.weight_size),
              "internal_size": int(compiled.internal_size), "file_size": args.output.stat().st_size,
              "dynamic_input": compiled.meta.get("dynamic_input"),
              "epcontext": None if args.epcontext is None else str(args.epcontext)}
    if args.json:
        print_json(result)
        return 0
    console.print(f"{path.name} -> {args.output}: {compiled.soc}, {compiled.precision}, {result['nodes']} nodes, "
                  f"weights {human_bytes(result['weight_size'])}, internal arena "
                  f"{human_bytes(result['internal_size'])}, file {human_bytes(result['file_size'])}")
    if result["epcontext"]:
        console.print(f"EPContext model for onnxruntime's QNN execution provider: {args.epcontext}")
    if result["dynamic_input"]:
        console.print(f"dynamic shapes (rknn_set_input_shapes): {result['dynamic_input']}; internal arena sized for "
                      f"the largest")
    return 0
