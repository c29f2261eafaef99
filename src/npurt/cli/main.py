"""`npurt` command line: one subcommand per `npurt.cli.cmd_*` module, each with `register(subparsers)`."""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

import npurt
from npurt.errors import NpuError


def _command_modules() -> list:
    package = importlib.import_module("npurt.cli")
    names = sorted(m.name for m in pkgutil.iter_modules(package.__path__) if m.name.startswith("cmd_"))
    return [importlib.import_module(f"npurt.cli.{name}") for name in names]


DESCRIPTION = """\
Run ONNX models on this computer the way a Rockchip RKNN or Qualcomm QNN HTP
NPU runs them: the same memory layouts, zero copy, SRAM and C API, so NPU code
can be written, tested and sized without the board.

Start with `npurt demo` or `npurt run MODEL.onnx`; `npurt COMMAND --help`
explains a command."""


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser, with every discovered subcommand; the description speaks to a user (the package
    docstring is for developers)."""
    parser = argparse.ArgumentParser(prog="npurt", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"npurt {npurt.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules():
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point: parse, dispatch, and turn `NpuError` / `ValueError` into a message and exit status 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 1
    try:
        return int(args.func(args) or 0)
    except (NpuError, ValueError, OSError) as exc:
        print(f"npurt {args.command}: error: {_message(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"npurt {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: still one line, never a traceback
        print(f"npurt {args.command}: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


def _message(exc: Exception) -> str:
    """An error as one line; an OSError names its file when it knows it."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return str(exc)


if __name__ == "__main__":
    sys.exit(main())
