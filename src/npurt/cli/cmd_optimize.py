"""`npurt optimize MODEL.onnx -o MODEL.eq.onnx`: write the quantisation techniques into the float ONNX model, for
the vendors' own quantisers (rknn-toolkit2's `build(do_quantization=True)`, onnxruntime's QDQ quantisation).

`--techniques` (default: cle, plus bias with `--dataset`) chooses cross-layer equalisation (float-equivalent),
bias correction and adaptive rounding (`npurt.model.techniques`; the last two calibrate on `--dataset`, a dataset.txt
or `random`, normalised by `--mean` / `--std` as the vendor's config will normalise it). The graph is edited in place:
only weight values change (initializers or Constant nodes, `npurt.model.technique_onnx`). `--for rknn|qnn`
names the quantiser the model is meant for; both quantise weights per channel, symmetric int8 (the toolkit's
default `quantized_method='channel'`; onnxruntime's `per_channel=True` with int8 weights), which is the grid
adaptive rounding aligns the weights to. It is recorded in the model's metadata (`npurt.optimize`).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from npurt.cli._models import add_input_shape_arg, named_shapes, parse_floats, parse_input_shapes, resolve_model
from npurt.cli._output import make_console, print_json
from npurt.errors import ErrorCode, NpuError
from npurt.files import regular_output

TARGETS = ("rknn", "qnn")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("optimize", help="equalise / bias-correct an ONNX model for the vendor's int8")
    p.add_argument("model", help="the float .onnx model (or a zoo name)")
    p.add_argument("-o", "--output", type=Path, required=True, metavar="OUT.onnx", help="the edited float model")
    p.add_argument("--dataset", metavar="DATASET|random", default=None,
                   help="calibration dataset.txt of .npy files, or 'random' (bias correction, adaptive rounding)")
    p.add_argument("--techniques", default=None, metavar="LIST",
                   help="comma-separated: cle, bias, adaround (default: cle, and bias with --dataset)")
    p.add_argument("--for", dest="target", default="rknn", metavar="rknn|qnn",
                   help="the vendor quantiser the model is for (recorded in its metadata; default rknn)")
    p.add_argument("--mean", help="per-channel input mean the vendor's config applies, e.g. 127.5,127.5,127.5")
    p.add_argument("--std", help="per-channel input std the vendor's config applies")
    add_input_shape_arg(p)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a summary")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from npurt.model.options import CompileOptions, parse_techniques
    if args.target not in TARGETS:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"--for {args.target!r}: use one of {', '.join(TARGETS)}")
    techniques = parse_techniques(args.techniques if args.techniques is not None
                                  else "cle,bias" if args.dataset is not None else "cle")
    if not techniques:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "--techniques names none: use cle, bias and / or adaround")
    needs_data = [t for t in techniques if t != "cle"]
    if needs_data and args.dataset is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"--techniques {','.join(needs_data)}: give --dataset (a "
                                                   f"dataset.txt or 'random') to calibrate on")
    path = resolve_model(args.model)
    from npurt.cli._models import is_compiled
    if is_compiled(path):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{path.name} is compiled: optimize edits a float ONNX model")
    output = regular_output(args.output, "--output", [path])
    mean, std = parse_floats(args.mean, "--mean"), parse_floats(args.std, "--std")
    shapes = named_shapes(CompileOptions(input_shapes=parse_input_shapes(args.input_shape)), path).input_shapes
    console = make_console(quiet=args.json)
    from npurt.exec.compile import optimize_onnx
    proto, report = optimize_onnx(path, techniques, args.dataset, [mean] if mean else None,
                                  [std] if std else None, input_shapes=shapes, target=args.target)
    from npurt.model.file_format import write_atomic
    write_atomic(output, proto.SerializeToString())
    result = {"model": path.name, "output": str(args.output), "for": args.target, "techniques": list(techniques),
              **report}
    if args.json:
        print_json(result)
        return 0
    did = {"cle": lambda r: f"{r['pairs']} conv pairs equalised", "bias": lambda r: f"{r['layers']} biases corrected",
           "adaround": lambda r: f"{r['layers']} layers rounded"}
    console.print(f"{path.name} -> {args.output} (for {args.target}): "
                  + "; ".join(f"{t}: {did[t](report[t])}" for t in techniques))
    return 0
