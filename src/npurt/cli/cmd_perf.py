"""`npurt perf MODEL --soc SOC [--quantize random|DATASET] [--cores N] [--sram] [--json] [--plot perf.png]`: the
predicted NPU time of a model, per layer, from npurt's timing model (`npurt.timing.predict`; docs/npu-timing.md).

Nothing runs: the model is compiled for the SoC (or loaded from `.npurt`) and its graph and memory plan are read.
Each row: op, target (NPU, or CPU and why: `npurt.timing.placement`), output shape, element type, MACs, bytes
read and written in DDR and in SRAM (the planned sizes of the memory table), what bounds it (compute, memory, the
fixed per-op cost, or the CPU for fallback ops) and the predicted µs; then the total, the FPS, the naive MACs /
peak-TOPS estimate and the model's measured error on the published rows of the SoC (and of the model's zoo family,
for a zoo model: `npurt.timing.bands`). `--json` prints one document (`Prediction.to_json`, plus `validation`: that
error band, or null); `--plot` draws where the time goes (needs matplotlib, the `plot` extra).
"""
from __future__ import annotations

import argparse
from pathlib import Path

from npurt.cli._models import add_compile_args, compile_options, load_model, resolve_model
from npurt.cli._output import make_console, print_json
from npurt.cli._target import SOC_HELP, target_soc
from npurt.errors import ErrorCode, NpuError
from npurt.files import regular_output
from npurt.soc import get_profile


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("perf", help="predict a model's NPU time per layer (no board needed)")
    p.add_argument("model", help="an .onnx or .npurt file, or a zoo name")
    p.add_argument("--soc", default=None, help=SOC_HELP)
    p.add_argument("--cores", type=int, default=1, metavar="N",
                   help="NPU cores the model runs on, as rknn_set_core_mask (RK3588: 1-3, RK3576: 1-2)")
    p.add_argument("--sram", action="store_true",
                   help="the internal arena's first bytes in the NPU SRAM (RKNN_FLAG_ENABLE_SRAM; RK3588, RK3576)")
    add_compile_args(p)
    p.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    p.add_argument("--plot", type=Path, metavar="PERF.png", help="save a picture of where the time goes")
    p.set_defaults(func=run)


def _plot_module():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise NpuError(ErrorCode.NOT_SUPPORTED, "--plot needs matplotlib (pip install 'npurt[plot]')") from None
    return plt


def plot_prediction(prediction, path: Path, title: str) -> None:
    """Bars of predicted µs per layer in schedule order, coloured by what bounds each layer."""
    from npurt.files import save_figure
    plt = _plot_module()
    colours = {"compute": "tab:blue", "memory": "tab:orange", "overhead": "tab:gray", "cpu": "tab:red"}
    fig, ax = plt.subplots(figsize=(12, 4.5))
    layers = prediction.layers
    for bound, colour in colours.items():
        xs = [layer.index for layer in layers if layer.bound == bound]
        ys = [layer.us for layer in layers if layer.bound == bound]
        if xs:
            ax.bar(xs, ys, color=colour, width=0.9, label=f"{bound}-bound ({sum(ys) / 1000:.2f} ms)")
    ax.set_xlabel("layer (schedule order)")
    ax.set_ylabel("predicted µs")
    ax.set_title(title)
    ax.legend(loc="upper right")
    fig.tight_layout()
    try:
        save_figure(fig, path)
    finally:
        plt.close(fig)


def _shape(s) -> str:
    return "x".join(str(d) for d in s) if s else "-"


def _table(prediction):
    from rich import box
    from rich.table import Table
    from npurt.cli._output import human_bytes
    t = Table(box=box.SIMPLE, title_justify="left")
    for col in ("#", "layer", "op", "target", "shape", "dtype", "MACs", "DDR", "SRAM", "bound", "µs"):
        t.add_column(col, justify="right" if col in ("#", "MACs", "DDR", "SRAM", "µs") else "left",
                     overflow="fold")
    for layer in prediction.layers:
        target = f"CPU: {layer.why}" if layer.why else layer.target
        t.add_row(str(layer.index), layer.name[:40], layer.op, target, _shape(layer.shape), layer.dtype,
                  f"{layer.macs:,}" if layer.macs else "-", human_bytes(layer.ddr_bytes),
                  human_bytes(layer.sram_bytes) if layer.sram_bytes else "-", layer.bound, f"{layer.us:.1f}")
    return t


def run(args: argparse.Namespace) -> int:
    from npurt.cli.cmd_report import sram_for
    from npurt.timing import predict
    from npurt.timing.bands import describe, error_band
    console = make_console(quiet=args.json)
    profile = get_profile(target_soc(args.soc, args.model))
    if args.plot:
        regular_output(args.plot, "--plot", [resolve_model(args.model)])
        _plot_module()
    if args.sram and not profile.sram_size:
        raise NpuError(ErrorCode.NOT_SUPPORTED, f"{profile.name} has no NPU SRAM (rk3588 and rk3576 have)")
    compiled = load_model(args.model, profile.name, compile_options(args),
                          progress=not args.json and console.is_terminal)
    sram = sram_for(compiled, profile, None) if args.sram else 0
    prediction = predict(compiled, profile.name, cores=args.cores, sram=sram)
    title = (f"{Path(args.model).name} on {profile.name}, {args.cores} core(s), {compiled.precision}"
             f"{', SRAM' if sram else ''}: {prediction.total_ms:.2f} ms predicted ({prediction.fps:.1f} FPS)")
    if args.plot:
        plot_prediction(prediction, args.plot, title)
    band = error_band(profile.name, str(args.model))
    if args.json:
        d = prediction.to_json()
        d["model"] = str(args.model)
        d["validation"] = band
        d["plot"] = str(args.plot) if args.plot else None
        print_json(d)
        return 0
    console.print(_table(prediction))
    bounds: dict[str, float] = {}
    for layer in prediction.layers:
        bounds[layer.bound] = bounds.get(layer.bound, 0.0) + layer.us / 1000
    console.print(f"[bold]{title}[/bold]")
    console.print("time by what bounds it: " + ", ".join(f"{k} {v:.2f} ms" for k, v in sorted(bounds.items())))
    console.print(f"total {prediction.macs:,} MACs; naive MACs / peak-TOPS estimate {prediction.naive_ms:.2f} ms; "
                  f"SRAM {sram:,} B; predicted by npurt's timing model (docs/npu-timing.md), not measured")
    console.print(describe(band, profile.name))
    if args.plot:
        console.print(f"picture saved to {args.plot}")
    return 0
