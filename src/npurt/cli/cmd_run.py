"""`npurt run MODEL`: run a model once through the RKNN mirror and print (or save) its outputs.

Inputs come from `--input x.npy` (one per model input, in the ONNX model's own layout and dtype) or are random
(floats uniform in [0, 1), said so in the output). The general path (`rknn_inputs_set` / `rknn_outputs_get`) is
the default where the SoC's runtime has it; `--zero-copy` (and every SoC without the general API, e.g. rv1106's
librknnmrt) binds native-format buffers (`rknn_create_mem` + `rknn_set_io_mem`) and packs the inputs straight into
them. ONNX models are compiled for `--soc` on the fly (fp16, or int8 with `--quantize`); a `.npurt` file runs on the
SoC it records unless `--soc` says otherwise. A dynamic-shape model (`npurt convert --dynamic-input`) runs at the
shape of the `--input` arrays (`rknn_set_input_shapes` first), or at its largest shape set with random inputs.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from rich import box
from rich.table import Table

from npurt.cli._models import add_compile_args, compile_options, load_model, read_inputs, resolve_model
from npurt.cli._output import make_console, ms, print_json
from npurt.cli._rknn_flow import (Rknn, ZeroCopy, board_soc, general_frame, has_general_api, random_frames,
                                  rknn_profile)
from npurt.cli._target import SOC_HELP, target_soc
from npurt.errors import ErrorCode, NpuError
from npurt.files import regular_input, regular_output, write_exactly

if TYPE_CHECKING:  # numpy loads when the command runs: `npurt --help` stays light
    import numpy as np


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run a model on an emulated SoC and show its outputs")
    p.add_argument("model", help="an .onnx or .npurt file, or a zoo name (e.g. mobilenet_v1)")
    p.add_argument("--input", action="append", type=Path, default=[], metavar="X.npy",
                   help="one .npy per model input, in order (default: random inputs)")
    p.add_argument("--soc", default=None, help=SOC_HELP)
    p.add_argument("--zero-copy", action="store_true", help="bind native-format I/O buffers (rknn_set_io_mem); the "
                                                            "only path on SoCs without the general API (rv1106...)")
    add_compile_args(p)
    p.add_argument("--sram", action="store_true", help="rknn_init with RKNN_FLAG_ENABLE_SRAM")
    p.add_argument("--output", type=Path, metavar="OUT.npz", help="save the outputs, keyed by output name")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    p.set_defaults(func=run)


def _summary(name: str, y: np.ndarray) -> dict:
    import numpy as np
    flat = np.ravel(y).astype(np.float64)
    d = {"name": name, "shape": list(y.shape), "dtype": str(y.dtype), "min": float(flat.min()) if flat.size else 0.0,
         "max": float(flat.max()) if flat.size else 0.0, "mean": float(flat.mean()) if flat.size else 0.0}
    if 1 < flat.size <= 100000:
        top = np.argsort(-flat, kind="stable")[:5]
        d["top5"] = [[int(i), float(flat[i])] for i in top]
    return d


def _dynamic(compiled) -> bool:
    from npurt.runtime.loader import META_DYNAMIC
    return bool(compiled.meta.get(META_DYNAMIC))


def _set_shapes(rk: Rknn, ctx, compiled, frame: list[np.ndarray]) -> bool:
    """rknn_set_input_shapes to the frame's shapes when they differ from the model's current ones (a dynamic-shape
    model; the runtime refuses shapes it does not declare). True when shapes were set."""
    r = rk.r
    if [tuple(a.shape) for a in frame] == [tuple(compiled.storage[n].shape) for n in compiled.graph.inputs]:
        return False
    attrs = (r.rknn_tensor_attr * len(frame))()
    for i, a in enumerate(frame):
        attrs[i].index, attrs[i].n_dims = i, a.ndim
        attrs[i].fmt = r.RKNN_TENSOR_NCHW if a.ndim == 4 else r.RKNN_TENSOR_UNDEFINED
        attrs[i].dims[:a.ndim] = a.shape
    rk.check("rknn_set_input_shapes", r.rknn_set_input_shapes(ctx, len(frame), attrs))
    return True


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from npurt.rknn.api import context_of
    console = make_console(quiet=args.json)
    profile = rknn_profile(target_soc(args.soc, args.model))
    path = resolve_model(args.model)
    inputs = [regular_input(p, "--input") for p in args.input]
    if args.sram and not profile.sram_size:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"--sram: {profile.name} has no NPU SRAM")
    if args.output:
        regular_output(args.output, "--output", [path, *inputs])
    compiled = load_model(str(path), profile.name, compile_options(args),
                          progress=not args.json and console.is_terminal)
    random = not args.input
    frame = random_frames(compiled, 1)[0] if random else read_inputs(args.input, compiled, dynamic=_dynamic(compiled))
    zero_copy = args.zero_copy or not has_general_api(profile)
    rk = Rknn()
    r = rk.r
    with board_soc(profile.name):
        data = compiled.to_bytes()
        ctx = r.rknn_context()
        rk.check("rknn_init", r.rknn_init(ctx, data, len(data), r.RKNN_FLAG_ENABLE_SRAM if args.sram else 0, None))
        zc = None
        try:
            reshaped = _set_shapes(rk, ctx, compiled, frame)
            current = context_of(ctx).compiled          # the member of a dynamic-shape model for these shapes
            if zero_copy:
                zc = ZeroCopy(rk, ctx, current, current=reshaped)
                outs, run_s = zc.frame(frame)
            else:
                outs, run_s = general_frame(rk, ctx, [np.asarray(a) for a in frame], current.n_outputs)
                outs = [o.reshape(current.storage[n].shape) for o, n in zip(outs, current.graph.outputs)]
        finally:
            if zc is not None:
                zc.destroy()
            r.rknn_destroy(ctx)
    names = list(compiled.graph.outputs)
    if args.output:
        write_exactly(args.output, lambda f: np.savez(f, **dict(zip(names, outs))), "--output")
    result = {"model": path.name, "soc": profile.name, "precision": compiled.precision,
              "path": "zero_copy" if zero_copy else "general", "random_inputs": random,
              "input_shapes": [list(a.shape) for a in frame],
              "run_seconds": run_s, "outputs": [_summary(n, y) for n, y in zip(names, outs)],
              "saved": str(args.output) if args.output else None}
    if args.json:
        print_json(result)
        return 0
    why = f" ({profile.name} has no general API)" if zero_copy and not args.zero_copy else ""
    console.print(f"{path.name} on {profile.name} ({compiled.precision}), {result['path']} path{why}, "
                  f"{'random inputs' if random else 'inputs from ' + ', '.join(map(str, args.input))}: "
                  f"rknn_run {ms(run_s)}")
    table = Table(box=box.SIMPLE_HEAD)
    for col in ("output", "shape", "min", "max", "mean", "top-5 (index: value)"):
        table.add_column(col, justify="left" if col in ("output", "top-5 (index: value)") else "right")
    for d in result["outputs"]:
        top = ", ".join(f"{i}: {v:.4g}" for i, v in d.get("top5", []))
        table.add_row(d["name"], str(tuple(d["shape"])), f"{d['min']:.4g}", f"{d['max']:.4g}", f"{d['mean']:.4g}", top)
    console.print(table)
    if args.output:
        console.print(f"outputs saved to {args.output}")
    return 0
