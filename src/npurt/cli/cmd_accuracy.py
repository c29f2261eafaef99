"""`npurt accuracy MODEL --quantize DATASET`: per-tensor error of the int8 model against a float reference.

The ONNX model is compiled to int8 (with `--quantized-algorithm` and `--float-layers` as `convert` takes them) and
every tensor of the compiled graph is compared with onnxruntime on the original ONNX (`npurt.api.accuracy`):
entire error (the whole model quantised) and single error (each op alone on the reference's inputs), as cosine and
normalised euclidean distance. The inputs analysed are `--input` files (one sample) or the calibration samples.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from npurt.cli._models import (add_compile_args, compile_options, is_compiled, named_shapes, read_inputs,
                               resolve_dataset, resolve_model)
from npurt.cli._output import make_console, print_json, progress
from npurt.cli._target import SOC_HELP, target_soc
from npurt.errors import ErrorCode, NpuError
from npurt.soc import get_profile

WORST = 3       # rows highlighted at most: the lowest single-error cosines below ADVICE_COSINE


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("accuracy", help="compare an int8 model, tensor by tensor, with onnxruntime")
    p.add_argument("model", help="an .onnx file or a zoo name (the float model)")
    p.add_argument("--soc", default=None, help=SOC_HELP)
    add_compile_args(p, dataset_help="calibration dataset.txt (or 'random'); required")
    p.add_argument("--input", action="append", type=Path, default=[], metavar="X.npy",
                   help="analyse this one input (one .npy per model input, in order) instead of the calibration set")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--plot", type=Path, metavar="OUT.png", help="save both cosine curves over depth")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from npurt.api.accuracy import analyse, require_onnxruntime
    from npurt.exec.compile import compile_with
    from npurt.model.calibrate import normalize_samples
    console = make_console(quiet=args.json)
    require_onnxruntime()
    profile = get_profile(target_soc(args.soc, args.model))
    path = resolve_model(args.model)
    if is_compiled(path):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{path.name} is compiled: the analysis needs the float ONNX "
                                                   f"model as its reference")
    if args.quantize is None:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "accuracy needs --quantize DATASET (the int8 calibration set)")
    if args.plot is not None and not args.plot.parent.is_dir():
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"--plot folder does not exist: {args.plot.parent}")
    options = named_shapes(compile_options(args), path)
    dataset = resolve_dataset(args.quantize, path, input_shapes=options.input_shapes)
    compiled = compile_with(path, options.replace(quantize=dataset), profile.name,
                            progress=not args.json and console.is_terminal)
    samples = [read_inputs(args.input, compiled)] if args.input else normalize_samples(dataset, compiled.graph.inputs)
    with progress(console, len(samples) > 1) as bar:
        task = bar.add_task("analysing", total=len(samples))
        report = analyse(compiled, str(path), samples, on_sample=lambda k: bar.update(task, completed=k))
    if args.plot:
        report.plot(args.plot)
    if args.json:
        d = report.to_json()
        d.update(model=path.name, plot=str(args.plot) if args.plot else None)
        print_json(d)
        return 0
    _print_table(console, report, path.name)
    if args.plot:
        console.print(f"plot saved to {args.plot}")
    return 0


def _print_table(console, report, name: str) -> None:
    from rich.table import Table

    from npurt.api.accuracy import ADVICE_COSINE
    advised = report.worst(WORST)
    worst = {r.name for r in advised}
    floats = f", float layers {', '.join(report.float_layers)}" if report.float_layers else ""
    if report.optimize:
        floats += f", optimize {','.join(report.optimize)}"
    table = Table(title=f"{name} on {report.soc}: {report.precision} ({report.quantized_algorithm}{floats}) vs "
                        f"onnxruntime float32, {report.samples} input(s)")
    for col in ("#", "tensor", "produced by", "type", "entire cos", "entire euc", "single cos", "single euc"):
        table.add_column(col, justify="left" if col in ("tensor", "produced by", "type") else "right")
    for r in report.tensors:
        style = "bold red" if r.name in worst else None
        table.add_row(str(r.index), r.name, r.produced_by, r.dtype, _num(r.entire_cosine), _num(r.entire_euclidean),
                      _num(r.single_cosine), _num(r.single_euclidean), style=style)
    console.print(table)
    if advised:
        console.print(f"single cosine below {ADVICE_COSINE}: {', '.join(r.name for r in advised)} (keep them in fp16 "
                      f"with --float-layers, or try --quantized-algorithm); {report.seconds:.2f} s")
    else:
        console.print(f"every quantised layer keeps a single cosine >= {ADVICE_COSINE}: no layer needs fp16; "
                      f"{report.seconds:.2f} s")


def _num(v: float) -> str:
    import numpy as np
    return "-" if not np.isfinite(v) else f"{v:.5f}"
