"""`npurt demo`: the main job — MobileNet v1 int8 on an emulated RK3588 with NPU SRAM, through the RKNN C-API mirror.

What it does, in the order a board user would (the RKNN NPU SRAM guide):
1. builds the seed's MobileNet v1 (224x224, 1000 classes; deterministic weights, cached) and a calibration set
   (a few random images, cached), and compiles it int8 for the SoC;
2. prints the SRAM bitmap (`/sys/kernel/debug/rknpu/mm`) before, `rknn_init(..., RKNN_FLAG_ENABLE_SRAM)`,
   `RKNN_QUERY_MEM_SIZE`, the bitmap while the context holds SRAM, and the RKNN_LOG_LEVEL=3 memory table with
   SramHit and the five totals;
3. runs frames through the general API (`rknn_inputs_set` / `rknn_outputs_get`, on a `rknn_dup_context` copy)
   and through zero-copy buffers (`rknn_create_mem` + `rknn_set_io_mem` in the native formats), alternately in the
   same process, checks the two agree (and, with onnxruntime installed, the float model), and times both;
4. prints the DDR traffic SRAM saves per frame and the bitmap after `rknn_destroy`.

A short first part shows how the SoC asked for stores the table's native shapes (NC1HWC2 with its C2; on RK3568
the seed's example); `--profiles` prints the SoC profiles and that example only (the seed's, unless --soc).

Every SoC of `--profiles` runs the demo with only what its profile supports (`adapt`, decided from the profile's
data, never by trying a call): a second `rknn_init` where `rknn_dup_context` is absent, the other precision where
the SoC has no native layout for the one asked for, zero copy only where the general API is absent (librknnmrt).
One line says what was adapted.
"""
from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.table import Table

from npurt.cli._rknn_flow import (GENERAL_API, Rknn, ZeroCopy, board_soc, general_frame, has_general_api, mem_size,
                                  random_frames, rknn_profile)
from npurt.cli._target import SOC_HELP, target_soc
from npurt.cli._output import human_bytes, make_console, ms, print_json, print_text, progress
from npurt.errors import ErrorCode, NpuError
from npurt.soc import PROFILES, get_profile

if TYPE_CHECKING:  # numpy loads when the demo runs: `npurt --help` stays light
    import numpy as np

DEFAULT_MODEL = "mobilenet_v1"
FPS = 30


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="a guided tour: MobileNet v1 int8, NPU SRAM, zero copy")
    p.add_argument("--soc", default=None, help=f"{SOC_HELP}; see --profiles")
    p.add_argument("--model", default=DEFAULT_MODEL,
                   help=f"an .onnx or .npurt file or a zoo name (default {DEFAULT_MODEL}, the seed's MobileNet v1)")
    p.add_argument("--no-sram", action="store_true", help="rknn_init without RKNN_FLAG_ENABLE_SRAM")
    p.add_argument("--fp16", action="store_true", help="compile fp16 instead of int8 (no calibration)")
    p.add_argument("--runs", type=int, default=10, help="timed frames per path, after one warm-up frame (default 10)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    p.add_argument("--profiles", action="store_true", help="print the SoC profiles and the NC1HWC2 example only")
    p.set_defaults(func=run)


# --- the short part: SoC profiles and the seed's NC1HWC2 example ------------------------------------------------------
def _soc_table() -> Table:
    table = Table(title="npurt RKNN SoC profiles (the demo runs on each)")
    for col in ("SoC", "NPU cores", "C2 int8", "C2 fp16", "input align", "SRAM", "API calls", "queries"):
        table.add_column(col)
    for p in PROFILES.values():
        table.add_row(p.name, str(p.npu_cores), str(p.c2.get("int8", "-")), str(p.c2.get("float16", "-")),
                      str(p.input_align), f"{p.sram_size // 1024} KiB" if p.sram_size else "-",
                      f"{len(p.api)}/34", f"{len(p.queries)}/20")
    return table


def _htp_table() -> Table:
    """The QNN HTP SoCs (`--soc` of convert / report / the QNN mirror; the demo itself runs the RKNN API)."""
    from npurt.soc.htp import HTP_PROFILES
    table = Table(title="npurt QNN HTP profiles (convert / report --soc)")
    for col in ("SoC", "Hexagon", "VTCM", "socModel", "marketed as"):
        table.add_column(col)
    for p in HTP_PROFILES.values():
        table.add_row(p.name, f"V{p.arch}", f"{p.vtcm_size // (1 << 20)} MiB", str(p.soc_model), p.marketing)
    return table


def _nc1hwc2_example(console: Console, soc: str = "rk3568") -> None:
    """How `soc` stores C2 + 5 channels of its first native type: the seed's example on RK3568, int8 (1,13,4,4)
    stored as (1,2,4,4,8) with lanes 5..7 of block 1 padding; other SoCs with their own C2."""
    import numpy as np

    from npurt.tensor import c1_for, native_shape, nc1hwc2_to_nchw, nchw_to_nc1hwc2, size_with_stride
    profile = get_profile(soc)
    dtype = "int8" if "int8" in profile.c2 else next(iter(profile.c2))
    c2 = profile.c2_for(dtype)
    shape = (1, c2 + 5, 4, 4)
    n, c, h, w = shape
    k = (127 - 4 * (h - 1) - (w - 1)) // (c - 1)        # the largest value k*c + 4h + w still fits int8 (9 for 13)
    x = (k * np.arange(c)[:, None, None] + 4 * np.arange(h)[:, None] + np.arange(w)).astype(dtype)[None]
    native = nchw_to_nc1hwc2(x, c2)
    dims = native_shape(shape, c2)
    last = dims[1] - 1
    console.print(f"\n[bold]NC1HWC2[/bold]: {dtype} NCHW {shape} on {profile.name} (C2 = {c2}) -> native {dims}, "
                  f"C1 = ceil({c}/{c2}) = {c1_for(c, c2)}, "
                  f"{size_with_stride(dims, 'NC1HWC2', dtype)} bytes for {x.size} values; "
                  f"x[0,c,h,w] = {k}c + 4h + w")
    table = Table(title="stored bytes: first pixels of each C2 block", title_style="", box=box.SIMPLE_HEAD)
    for col in ("C1", "h,w", "offset", "channels"):
        table.add_column(col, justify="right")
    for lane in range(c2):
        table.add_column(f"L{lane}", justify="right")
    flat = native.reshape(-1)
    for c1 in range(dims[1]):
        for hh, ww in ((0, 0), (0, 1), (h - 1, w - 1)):
            offset = c1 * h * w * c2 + (hh * w + ww) * c2
            first, end = c1 * c2, min(c, (c1 + 1) * c2) - 1
            cells = [str(int(v)) if c1 * c2 + lane < c else f"[red]{int(v)}[/red]"
                     for lane, v in enumerate(flat[offset:offset + c2])]
            table.add_row(str(c1), f"{hh},{ww}", str(offset), f"{first}..{end}", *cells)
    console.print(table)
    back = nc1hwc2_to_nchw(native, c)
    ok = np.array_equal(back, x) and not native[0, last, :, :, c - c2 * last:].any()
    console.print(f"lanes {c - c2 * last}..{c2 - 1} of block C1={last} (red) are padding: zero in all "
                  f"{h * w} pixels\nback to NCHW: {'[green]equal[/green]' if ok else '[red]MISMATCH[/red]'}")


# --- what the SoC supports -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Adaptation:
    """How the demo runs on one SoC, decided from its profile: the precision compiled, whether the general path
    runs, and whether its context is a `rknn_dup_context` copy or a second `rknn_init`; `notes` say why."""

    precision: str                  # "int8" or "fp16"
    general: bool                   # the general API path runs beside zero copy
    dup: bool                       # the general path's context comes from rknn_dup_context
    notes: tuple[str, ...]


_C2_KEY = {"int8": "int8", "fp16": "float16"}


def adapt(profile: Any, precision: str) -> Adaptation:
    """The demo's plan on `profile` for the `precision` asked for ("int8" / "fp16"; a compiled file's own, e.g.
    "float32", is kept), from the profile's tables."""
    notes = []
    if precision in _C2_KEY and _C2_KEY[precision] not in profile.c2:
        other = "fp16" if precision == "int8" else "int8"
        notes.append(f"{other} (no native {precision} layout)")
        precision = other
    general = has_general_api(profile)
    if not general:
        missing = [f for f in GENERAL_API if not profile.supports(f)]
        notes.append(f"zero copy only (no {' / '.join(missing)})")
    dup = general and profile.supports("rknn_dup_context")
    if general and not dup:
        notes.append("a second rknn_init for the general path (no rknn_dup_context)")
    return Adaptation(precision, general, dup, tuple(notes))


# --- the main job --------------------------------------------------------------------------------------------------------
def _prepare(args: argparse.Namespace, console: Console, precision: str) -> tuple[Any, Path, dict]:
    """The compiled model, its source file, and what was cached (cold/warm)."""
    from npurt.cli import _models
    from npurt.model import zoo
    from npurt.model.options import CompileOptions
    t0 = time.perf_counter()
    key = args.model.removesuffix(".onnx")
    warm = key not in _models.ZOO or (zoo.cache_dir() / f"{zoo.cache_key(getattr(zoo, key))}.onnx").exists()
    path = _models.resolve_model(args.model)
    t1 = time.perf_counter()
    quantize = None
    if precision == "int8" and not _models.is_compiled(path):
        quantize = "random"
    compiled = _models.load_model(str(path), args.soc, CompileOptions(quantize=quantize),
                                  progress=not args.json and console.is_terminal)
    t2 = time.perf_counter()
    return compiled, path, {"model_cached": warm, "model_seconds": t1 - t0, "compile_seconds": t2 - t1,
                            "precompiled": _models.is_compiled(path), "zoo": key in _models.ZOO}


def _reference(path: Path, frame: list[np.ndarray]) -> list[np.ndarray] | None:
    """onnxruntime's float outputs for the frame (None without onnxruntime or for a compiled model)."""
    from npurt.cli._models import is_compiled
    if is_compiled(path):
        return None
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, dict(zip(names, frame)))


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    import numpy as np
    a, b = np.ravel(a).astype(np.float64), np.ravel(b).astype(np.float64)
    den = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b / den) if den else float(np.array_equal(a, b))


_PATHS = {"general": ("general", "rknn_inputs_set (float32 NCHW, runtime converts) + rknn_outputs_get (float) + copy"),
          "zero_copy": ("zero copy", "packs the frame into the bound native buffer, reads the output from it")}


def _timing_table(timing: dict) -> Table:
    title = ("general API vs zero copy (same process, frames alternated; median)" if "general" in timing
             else "zero copy (median)")
    table = Table(title=title, box=box.SIMPLE_HEAD)
    for col in ("path", "per frame", "of which rknn_run", "outside rknn_run", "what the app does per frame"):
        table.add_column(col, justify="left" if col in ("path", "what the app does per frame") else "right")
    for key, t in timing.items():
        label, what = _PATHS[key]
        table.add_row(label, ms(t["frame_s"]), ms(t["run_s"]), ms(t["frame_s"] - t["run_s"]), what)
    return table


def _main_job(args: argparse.Namespace) -> int:
    import numpy as np

    from npurt.memory import open_device
    from npurt.plan.report import format_memory_table, memory_table_dict
    from npurt.rknn.api import context_of
    from npurt.runtime.report import context_rows

    console = make_console(quiet=args.json)
    if args.runs < 1:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"--runs must be >= 1, got {args.runs}")
    profile = rknn_profile(args.soc)
    t_start = time.perf_counter()
    console.rule(f"[bold]npurt demo[/bold]: {args.model} on an emulated {profile.name}")
    plan = adapt(profile, "fp16" if args.fp16 else "int8")
    compiled, path, prep = _prepare(args, console, plan.precision)
    if prep["precompiled"]:                     # a compiled file's precision is its own
        plan = adapt(profile, compiled.precision)
    ops = compiled.meta.get("op_counts", {})
    how = "int8, calibrated on 4 cached random images" if compiled.precision == "int8" else compiled.precision
    if prep["precompiled"]:
        how = f"{compiled.precision} (a compiled file, loaded)"
    source = ("read from the cache" if prep["model_cached"] else "generated and cached") if prep["zoo"] else "a file"
    console.print(f"{path.name} ({source}, {prep['model_seconds']:.2f} s): {sum(ops.values())} ops "
                  + ", ".join(f"{n} x{k}" for n, k in ops.items())
                  + f"; compiled {how} for {profile.name} in {prep['compile_seconds']:.2f} s")
    if plan.notes:
        console.print(f"[bold]adapted to {profile.name}[/bold]: {'; '.join(plan.notes)}")
    rk = Rknn()
    r = rk.r
    device = open_device(profile.name)
    result: dict[str, Any] = {"soc": profile.name, "model": path.name, "precision": compiled.precision,
                              "sram_enabled": not args.no_sram and bool(profile.sram_size), "prepare": prep,
                              "adapted": list(plan.notes), "paths": ["general", "zero_copy"] if plan.general
                              else ["zero_copy"]}
    ctx = gctx = None
    zc = None
    try:
        dumps = {"before": device.sram_dump() if profile.sram_size else None}
        data = compiled.to_bytes()
        flag = 0 if args.no_sram else r.RKNN_FLAG_ENABLE_SRAM
        ctx = r.rknn_context()
        rk.check("rknn_init", r.rknn_init(ctx, data, len(data), flag, None))
        dumps["while"] = device.sram_dump() if profile.sram_size else None
        mem = mem_size(rk, ctx)
        context = context_of(ctx)
        internal = context._internal_buf
        sram_used = int(internal.sram_size) if internal is not None else 0
        zc = ZeroCopy(rk, ctx, compiled)
        if plan.general:
            gctx = r.rknn_context()
            if plan.dup:
                rk.check("rknn_dup_context", r.rknn_dup_context(ctx, gctx))
            else:
                rk.check("rknn_init(general)", r.rknn_init(gctx, data, len(data), 0, None))
        if profile.sram_size:
            console.print("\n[bold]SRAM before rknn_init[/bold]  (cat /sys/kernel/debug/rknpu/mm)")
            print_text(console, dumps["before"])
        console.print(f"\n[bold]rknn_init(&ctx, model, {len(data)}, "
                      f"{'0' if args.no_sram else 'RKNN_FLAG_ENABLE_SRAM'}, NULL)[/bold] -> RKNN_QUERY_MEM_SIZE")
        mt = Table(box=box.SIMPLE_HEAD)
        for k in mem:
            mt.add_column(k, justify="right")
        mt.add_row(*(f"{v:,}" for v in mem.values()))
        console.print(mt)
        if profile.sram_size:
            console.print("[bold]SRAM while the context is alive[/bold]")
            print_text(console, dumps["while"])

        # the seed's RKNN_LOG_LEVEL=3 table, at the device addresses of this run
        rows, totals, _ = context_rows(context)     # the context's arena (from its SRAM address), its bound I/O
        sram_hdr = (sram_used, device.sram_addr(internal)) if sram_used else None
        where = (f"its first {sram_used} bytes in SRAM at {sram_hdr[1]:#x}, the rest in DDR" if sram_hdr
                 else f"in DDR at {int(internal.dev_addr) if internal is not None else 0:#x}")
        console.print("\n[bold]memory table[/bold] (as librknnrt prints it at RKNN_LOG_LEVEL=3; internal arena: "
                      f"{where})")
        print_text(console, format_memory_table(rows, totals, sram_hdr))
        result["mem_size"] = mem
        result["memory_table"] = memory_table_dict(rows, totals, sram_hdr)
        result["sram_dump"] = dumps

        # frames: general API and zero copy, alternated
        n_out = compiled.n_outputs
        frames = random_frames(compiled, args.runs + 1)
        g_times, z_times = [], []
        agree = []
        with progress(console) as bar:
            task = bar.add_task("running frames", total=len(result["paths"]) * len(frames))
            for k, frame in enumerate(frames):
                if plan.general:
                    t = time.perf_counter()
                    g_out, g_run = general_frame(rk, gctx, [a.copy() for a in frame], n_out)
                    g_total = time.perf_counter() - t
                    bar.advance(task)
                t = time.perf_counter()
                z_out, z_run = zc.frame(frame)
                z_total = time.perf_counter() - t
                bar.advance(task)
                if plan.general:
                    agree.append(max(float(np.max(np.abs(np.ravel(a) - np.ravel(b)))) if a.size else 0.0
                                     for a, b in zip(g_out, z_out)))
                if k:                                        # the first frame warms up both paths
                    if plan.general:
                        g_times.append((g_total, g_run))
                    z_times.append((z_total, z_run))
        timing = {name: {"frame_s": statistics.median(t[0] for t in ts), "run_s": statistics.median(t[1] for t in ts),
                         "frames": len(ts)} for name, ts in (("general", g_times), ("zero_copy", z_times)) if ts}
        console.print()
        console.print(_timing_table(timing))
        ref = _reference(path, [a.copy() for a in frames[-1]])
        check = {"general_vs_zero_copy_max_abs_diff": max(agree)} if agree else {}
        if ref is not None:
            check["cosine_vs_onnxruntime"] = min(_cosine(a, b) for a, b in zip(z_out, ref))
            check["max_abs_diff_vs_onnxruntime"] = max(float(np.max(np.abs(np.ravel(a) - np.ravel(b))))
                                                       for a, b in zip(z_out, ref))
        if agree:
            same = "identical" if max(agree) == 0 else f"max |diff| {max(agree):.3g}"
            line = f"outputs: general and zero copy {same}"
        else:
            line = f"outputs: zero copy only ({profile.name} has no general API)"
        if "cosine_vs_onnxruntime" in check:
            line += (f"; vs onnxruntime's float model: cosine {check['cosine_vs_onnxruntime']:.5f}, "
                     f"max |diff| {check['max_abs_diff_vs_onnxruntime']:.3g}")
        console.print(line)
        result["timing"] = timing
        result["check"] = check

        # what SRAM saves
        saved = totals.sram_hit_rw
        share = saved / totals.internal_rw if totals.internal_rw else 0.0
        result["sram_savings"] = {"bytes_per_frame": saved, "share_of_internal_rw": share,
                                  "bytes_per_second_at_30fps": saved * FPS, **_time_saved(context, sram_used)}
        if result["sram_enabled"]:
            t = result["sram_savings"]
            console.print(f"\n[bold]DDR traffic SRAM saves[/bold] (predicted): {saved:,} bytes per frame = "
                          f"{share:.0%} of the internal tensors' {totals.internal_rw:,} bytes; "
                          f"{human_bytes(saved * FPS)}/s at {FPS} fps")
            console.print(f"[bold]NPU time SRAM saves[/bold] (predicted by npurt's timing model, docs/npu-timing.md): "
                          f"{t['predicted_ms_ddr']:.3f} ms -> {t['predicted_ms_sram']:.3f} ms per frame "
                          f"({t['predicted_ms_saved']:.3f} ms saved)")
        elif not profile.sram_size:
            console.print(f"\n{profile.name} has no NPU SRAM: no DDR traffic saved (rk3588 and rk3576 have SRAM)")
        else:
            console.print("\nSRAM not enabled: no DDR traffic saved (run without --no-sram to see the savings)")
    finally:
        if zc is not None:
            zc.destroy()
        for c in (gctx, ctx):
            if c is not None and c.value:
                r.rknn_destroy(c)
        device.close()
    after = open_device(profile.name)
    try:
        dumps["after"] = after.sram_dump() if profile.sram_size else None
    finally:
        after.close()
    if profile.sram_size:
        console.print("\n[bold]SRAM after rknn_destroy[/bold]")
        print_text(console, dumps["after"])
    result["seconds"] = time.perf_counter() - t_start
    console.print(f"\ndone in {result['seconds']:.1f} s")
    if args.json:
        print_json(result)
    return 0


def _time_saved(context: Any, sram_used: int) -> dict:
    """Predicted NPU ms per frame of the context's model and plan without and with the SRAM it holds."""
    from npurt.timing import predict
    ddr = predict(context.compiled, context.profile.name, plan=context.plan)
    sram = predict(context.compiled, context.profile.name, sram=sram_used, plan=context.plan)
    return {"predicted_ms_ddr": ddr.total_ms, "predicted_ms_sram": sram.total_ms,
            "predicted_ms_saved": ddr.total_ms - sram.total_ms}


def run(args: argparse.Namespace) -> int:
    if args.profiles:
        console = make_console()
        console.print(_soc_table())
        console.print(_htp_table())
        _nc1hwc2_example(console, rknn_profile(args.soc).name if args.soc else "rk3568")
        return 0
    args.soc = target_soc(args.soc, args.model)
    profile = rknn_profile(args.soc)
    if not args.json:                       # the short first part: how the SoC stores the table's native shapes
        _nc1hwc2_example(make_console(), profile.name)
    with board_soc(profile.name):
        return _main_job(args)
