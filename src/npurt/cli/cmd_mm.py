"""`npurt mm MODEL...`: the NPU SRAM bitmap of a device after loading the given models with RKNN_FLAG_ENABLE_SRAM.

The models are loaded one after the other through `rknn_init(..., RKNN_FLAG_ENABLE_SRAM, NULL)` and all stay
loaded, as several contexts in one application would: each takes as much of the SRAM that is still free as its
internal arena can use (the RKNN NPU SRAM guide: SRAM held by one context is not shared with the others). The
output is the driver's `/sys/kernel/debug/rknpu/mm` dump, plus which context holds which pages; `--plot` draws the
same bitmap with one colour per context.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from rich import box
from rich.table import Table

from npurt.cli._models import compile_options, load_model, resolve_model
from npurt.cli._output import make_console, print_json, print_text
from npurt.cli._rknn_flow import Rknn, board_soc, mem_size, rknn_profile
from npurt.cli._target import SOC_HELP, target_soc
from npurt.errors import ErrorCode, NpuError
from npurt.files import regular_output, save_figure

ROW_PAGES = 32          # pages per dump row, as the driver prints them


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mm", help="show the NPU SRAM bitmap (debugfs rknpu/mm) of loaded models")
    p.add_argument("models", nargs="+", metavar="MODEL", help=".onnx / .npurt files or zoo names, loaded in order")
    p.add_argument("--soc", default=None, help=f"{SOC_HELP}; needs NPU SRAM")
    p.add_argument("--quantize", metavar="DATASET|random", help="compile ONNX models int8 (default fp16)")
    p.add_argument("--plot", type=Path, metavar="MM.png", help="save a picture of the SRAM pages by context")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.set_defaults(func=run)


def plot_sram(pages: list[int | None], labels: list[str], path: Path, title: str) -> None:
    """SRAM pages as a grid of ROW_PAGES columns (one cell = 4 KiB), coloured by the context holding them."""
    from npurt.memory import PAGE_SIZE
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch, Rectangle
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise NpuError(ErrorCode.NOT_SUPPORTED, f"--plot needs matplotlib: {exc}") from None
    rows = -(-len(pages) // ROW_PAGES)
    colours = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.42 * rows))
    for i, owner in enumerate(pages):
        r, c = divmod(i, ROW_PAGES)
        face = "#eeeeee" if owner is None else colours(owner % 10)
        ax.add_patch(Rectangle((c, rows - 1 - r), 0.92, 0.85, facecolor=face, edgecolor="#999999", linewidth=0.5))
    ax.set_xlim(-0.2, ROW_PAGES)
    ax.set_ylim(-0.2, rows)
    ax.set_yticks([rows - 1 - r + 0.42 for r in range(rows)], [f"[{r:03d}]" for r in range(rows)])
    ax.set_xticks([c + 0.46 for c in (0, 8, 16, 24, 31)], ["0", "8", "16", "24", "31"])
    ax.set_xlabel(f"page in row (1 page = {PAGE_SIZE // 1024} KiB)")
    ax.set_aspect("equal")
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    handles = [Patch(facecolor=colours(k % 10), label=lab) for k, lab in enumerate(labels)]
    handles.append(Patch(facecolor="#eeeeee", edgecolor="#999999", label="free"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    try:
        save_figure(fig, path, dpi=110, bbox_inches="tight")
    finally:
        plt.close(fig)


def run(args: argparse.Namespace) -> int:
    from npurt.memory import PAGE_SIZE, open_device
    from npurt.rknn.api import context_of
    console = make_console(quiet=args.json)
    profile = rknn_profile(target_soc(args.soc, *args.models))
    if not profile.sram_size:
        raise NpuError(ErrorCode.NOT_SUPPORTED, f"{profile.name} has no NPU SRAM (SRAM SoCs: rk3588, rk3576)")
    if args.plot:
        regular_output(args.plot, "--plot", [resolve_model(m) for m in args.models])
    options = compile_options(args)
    compiled = [load_model(m, profile.name, options, progress=not args.json and console.is_terminal)
                for m in args.models]
    rk = Rknn()
    r = rk.r
    contexts, rows = [], []
    n_pages = profile.sram_size // PAGE_SIZE
    owners: list[int | None] = [None] * n_pages
    with board_soc(profile.name):
        device = open_device(profile.name)
        try:
            empty = device.sram_dump()
            for k, (name, cm) in enumerate(zip(args.models, compiled)):
                data = cm.to_bytes()
                ctx = r.rknn_context()
                rk.check(f"rknn_init({name})", r.rknn_init(ctx, data, len(data), r.RKNN_FLAG_ENABLE_SRAM, None))
                contexts.append(ctx)
                internal = context_of(ctx)._internal_buf
                held = int(internal.sram_size) if internal is not None else 0
                start = device.sram_addr(internal) if held else None
                if held:
                    first = internal.sram_offset // PAGE_SIZE
                    for p in range(first, first + held // PAGE_SIZE):
                        owners[p] = k
                ms = mem_size(rk, ctx)
                rows.append({"context": k, "model": Path(resolve_model(name)).name, "precision": cm.precision,
                             "internal_size": ms["total_internal_size"], "sram_held": held,
                             "sram_addr": start, "ddr_part": ms["total_internal_size"] - held if held else
                             ms["total_internal_size"], "free_sram_after": ms["free_sram_size"]})
            dump = device.sram_dump()
            stats = device.stats()
        finally:
            for ctx in contexts:
                r.rknn_destroy(ctx)
            device.close()
    labels = [f"ctx{row['context']}: {row['model']} ({row['sram_held'] // 1024} KiB)" for row in rows]
    if args.plot:
        plot_sram(owners, labels, args.plot, f"{profile.name} NPU SRAM after loading {len(rows)} model(s) with "
                                             f"ENABLE_SRAM: {profile.sram_size - stats.sram_free:,} of "
                                             f"{profile.sram_size:,} bytes used")
    result = {"soc": profile.name, "sram_total": profile.sram_size, "sram_free": int(stats.sram_free),
              "contexts": rows, "dump": dump, "empty_dump": empty,
              "pages": owners, "plot": str(args.plot) if args.plot else None}
    if args.json:
        print_json(result)
        return 0
    table = Table(title=f"contexts on {profile.name} (loaded in this order, all alive)", box=box.SIMPLE_HEAD)
    for col in ("ctx", "model", "precision", "internal arena", "SRAM held", "SRAM address", "in DDR"):
        table.add_column(col, justify="left" if col in ("model", "precision", "SRAM address") else "right")
    for row in rows:
        addr = "-" if row["sram_addr"] is None else f"[{row['sram_addr']:#x}, {row['sram_addr'] + row['sram_held']:#x})"
        table.add_row(str(row["context"]), row["model"], row["precision"], f"{row['internal_size']:,}",
                      f"{row['sram_held']:,}", addr, f"{row['ddr_part']:,}")
    console.print(table)
    console.print("# cat /sys/kernel/debug/rknpu/mm")
    print_text(console, dump)
    if args.plot:
        console.print(f"SRAM picture saved to {args.plot}")
    return 0
