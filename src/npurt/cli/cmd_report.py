"""`npurt report MODEL`: the memory report librknnrt prints at RKNN_LOG_LEVEL=3, without running anything.

The model is compiled for `--soc` (or loaded from `.npurt`), and its memory plan is shown as the seed's table
(`tests/data/seed/memory_table.txt`): one row per tensor with its native shape, its `[Start, End)` in the internal
arena and its SramHit, then the five totals. SRAM is modelled as the runtime places it: the first `--sram` bytes of
the internal arena (default: all the SRAM the SoC gives the NPU). Addresses are relative to the internal arena;
model inputs and outputs live in their own buffers (SramHit `\\`). Formatting and totals are `npurt.plan.report`'s.
Under the table: how many ops the board's NPU runs and, for each op it runs on the CPU, why
(`npurt.timing.placement`, the RKNN compiler's support list; `--json`: `cpu_ops`, null for a SoC without one).
`--plot` draws the plan (time x offset, SRAM band shaded).
"""
from __future__ import annotations

import argparse
import logging
from pathlib import Path

from npurt.cli._models import add_compile_args, compile_options, load_model, resolve_model
from npurt.cli._output import make_console, print_json, print_text
from npurt.cli._target import SOC_HELP, target_soc
from npurt.errors import ErrorCode, NpuError
from npurt.files import regular_output
from npurt.soc import get_profile


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="show a model's memory plan (the RKNN_LOG_LEVEL=3 table)")
    p.add_argument("model", help="an .onnx or .npurt file, or a zoo name")
    p.add_argument("--soc", default=None, help=SOC_HELP)
    p.add_argument("--sram", type=int, default=None, metavar="BYTES",
                   help="SRAM available to the model (default: the SoC's NPU SRAM; 0 for none)")
    add_compile_args(p)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    p.add_argument("--plot", type=Path, metavar="PLAN.png", help="save a time x offset picture of the plan")
    p.add_argument("--qnn", action="store_true",
                   help="the QNN memory report of a QNN context binary (one or several graphs) loaded through "
                        "npurt's QNN HTP mirror: weights shared / unshared, spill-fill, VTCM, VTCM backup, "
                        "registered I/O")
    p.set_defaults(func=run)


def plan_problem(compiled):
    """The compiled plan as the planner's Problem and Solution (for `plot_plan`)."""
    from npurt.plan import PlanBuffer, Problem, Solution, lower_bound
    plan = compiled.plan
    bufs = [PlanBuffer(name, int(plan.lifetimes[name][0]), int(plan.lifetimes[name][1]), int(plan.sizes[name]))
            for name in plan.offsets]
    problem = Problem(bufs)
    solution = Solution(offsets=dict(plan.offsets), arena=int(plan.internal_size), lower_bound=lower_bound(problem),
                        seconds=0.0, method=plan.method, fits=None)
    return problem, solution


def sram_for(compiled, profile, sram: int | None) -> int:
    """SRAM bytes the internal arena gets: `sram` (or the SoC's), at most the page-rounded arena."""
    from npurt.memory import page_round
    size = profile.sram_size if sram is None else sram
    if size < 0:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"--sram must be >= 0, got {size}")
    if size > profile.sram_size:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"--sram {size}: {profile.name} has {profile.sram_size} bytes of "
                                                   f"NPU SRAM")
    return min(size, page_round(compiled.internal_size)) if compiled.internal_size else 0


class _Errors(logging.Handler):
    """The QNN mirror's error lines, kept (not printed) while `npurt report --qnn` loads a binary."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def run_qnn(args: argparse.Namespace) -> int:
    """`npurt report BINARY --qnn`: load the context binary on an HTP backend (its own SoC, or `--soc`) with
    contextCreateFromBinary, print `npurt.qnn.memory_report` of it (or its JSON), free everything."""
    import npurt.qnn as q
    from npurt.files import regular_input
    data = regular_input(resolve_model(args.model), "MODEL").read_bytes()
    qi = q.interface("fastrpc", soc=target_soc(args.soc, args.model) if args.soc else None)
    backend, ctx = q.Qnn_BackendHandle_t(), q.Qnn_ContextHandle_t()
    qlog, errors = logging.getLogger("npurt.qnn"), _Errors()
    qlog.addHandler(errors)                 # the mirror's <E> line becomes the command's one error line
    propagate, qlog.propagate = qlog.propagate, False
    try:
        qi.backendCreate(None, None, backend)
        ret = q.qnn_error_code(qi.contextCreateFromBinary(backend, None, None, data, len(data), ctx, None))
        if ret != q.QNN_SUCCESS:
            why = errors.lines[-1].removeprefix("<E> ") if errors.lines else "refused"
            raise NpuError(ErrorCode.INVALID_MODEL, f"{args.model}: {why} ({q.error_string(ret)})")
        report = q.memory_report(backend)
    finally:
        qi.backendFree(backend)
        qlog.removeHandler(errors)
        qlog.propagate = propagate
    if args.json:
        print_json({"contexts": [{"handle": h, **vars(c)} for h, c in report.contexts.items()],
                    "groups": [vars(g) for g in report.groups], "totals": report.totals(),
                    "pd": [{**vars(p), "headroom": p.headroom} for p in report.pds]})
        return 0
    console = make_console()
    print_text(console, "\n".join(report.lines()))
    return 0


def run(args: argparse.Namespace) -> int:
    from npurt.model.report import memory_rows, report_dict
    if args.qnn:
        return run_qnn(args)
    console = make_console(quiet=args.json)
    profile = get_profile(target_soc(args.soc, args.model))
    if args.plot:
        regular_output(args.plot, "--plot", [resolve_model(args.model)])
    compiled = load_model(args.model, profile.name, compile_options(args),
                          progress=not args.json and console.is_terminal)
    sram = sram_for(compiled, profile, args.sram)
    if args.plot:
        from npurt.plan.report import plot_plan
        problem, solution = plan_problem(compiled)
        plot_plan(problem, solution, args.plot, fast_size=sram or None,
                  title=f"{Path(args.model).name} on {profile.name} ({compiled.precision}): internal arena "
                        f"{solution.arena:,} B, lower bound {solution.lower_bound:,} B, SRAM {sram:,} B")
    from npurt.timing.placement import cpu_ops, describe
    on_cpu = cpu_ops(compiled, profile.name)
    if args.json:
        d = report_dict(compiled, sram)
        d["plot"] = str(args.plot) if args.plot else None
        d["cpu_ops"] = on_cpu
        print_json(d)
        return 0
    from npurt.plan.report import format_memory_table
    rows, totals = memory_rows(compiled, sram)
    console.print(f"{args.model} on {profile.name} ({compiled.precision}); User is the op that consumes the tensor "
                  f"(the vendor's column); [Start End) relative to the internal arena, whose first {sram:,} bytes "
                  f"are SRAM")
    print_text(console, format_memory_table(rows, totals, (sram, 0) if sram else None))
    for line in describe(on_cpu, profile.name, len(compiled.graph.nodes)):
        console.print(line, markup=False)
    if args.plot:
        console.print(f"plan picture saved to {args.plot}")
    return 0
