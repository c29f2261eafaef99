"""`npurt convert MODEL -o m.npurt`: compile an ONNX model for one SoC and save the single-file compiled model.

The file holds the graph, the stored weights, the tensor attrs, the quantisation and the memory plan, and records
its target SoC (`rknn_init` / `npurt.load_compiled` on another SoC is a platform mismatch). `--quantize` selects
int8 with a calibration dataset.txt (or `random`); `--mean` / `--std` are fused into input packing. The same file
is a QNN HTP context binary (`contextCreateFromBinary`); `--qnn-io` chooses how its graph I/O appears to QNN:
FLOAT_32 (default), FLOAT_16, or quantized with scale/offset (int8 only).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from npurt.cli._models import (add_quantize_args, is_compiled, load_model, parse_floats, quantize_options,
                               resolve_model)
from npurt.cli._output import human_bytes, make_console, print_json
from npurt.errors import ErrorCode, NpuError
from npurt.files import regular_output
from npurt.soc import get_profile


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("convert", help="compile an ONNX model (or zoo name) to a .npurt file for one SoC")
    p.add_argument("model", help="an .onnx file or a zoo name")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="M.npurt", help="the compiled model file")
    p.add_argument("--soc", default="rk3588", help="target SoC (default rk3588)")
    add_quantize_args(p)
    p.add_argument("--mean", help="per-channel input mean, e.g. 127.5,127.5,127.5")
    p.add_argument("--std", help="per-channel input std, e.g. 127.5,127.5,127.5")
    p.add_argument("--qnn-io", default="float32",
                   help="QNN graph I/O tensors: float32 (default), float16, or quantized (int8 models)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a summary")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from npurt.qnn.graph import GRAPH_IO, set_graph_io
    if args.qnn_io not in GRAPH_IO:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"--qnn-io {args.qnn_io!r}: use one of {', '.join(GRAPH_IO)}")
    console = make_console(quiet=args.json)
    profile = get_profile(args.soc)
    path = resolve_model(args.model)
    regular_output(args.output, "--output", [path])
    if is_compiled(path):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{path} is already a compiled .npurt model")
    mean, std = parse_floats(args.mean, "--mean"), parse_floats(args.std, "--std")
    compiled = load_model(str(path), profile.name, quantize=args.quantize, mean=[mean] if mean else None,
                          std=[std] if std else None, progress=not args.json and console.is_terminal,
                          **quantize_options(args))
    if args.qnn_io != "float32":
        set_graph_io(compiled, args.qnn_io)
    if args.output.suffix not in (".npurt", ".bin"):        # .bin: the QNN context binary's usual name
        console.print(f"[yellow]note[/yellow]: {args.output} ends in neither .npurt nor .bin (the same file either "
                      f"way)")
    compiled.save(args.output)
    result = {"model": path.name, "output": str(args.output), "soc": compiled.soc, "precision": compiled.precision,
              "inputs": len(compiled.graph.inputs), "outputs": len(compiled.graph.outputs),
              "nodes": len(compiled.graph.nodes), "weight_size": int(compiled.weight_size),
              "internal_size": int(compiled.internal_size), "file_size": args.output.stat().st_size}
    if args.json:
        print_json(result)
        return 0
    console.print(f"{path.name} -> {args.output}: {compiled.soc}, {compiled.precision}, {result['nodes']} nodes, "
                  f"weights {human_bytes(result['weight_size'])}, internal arena "
                  f"{human_bytes(result['internal_size'])}, file {human_bytes(result['file_size'])}")
    return 0
