"""`npurt exec SCRIPT.py [ARGS...]`: run a script written for rknn-toolkit2 / rknn-toolkit-lite2 unchanged, with
`rknn.api.RKNN` and `rknnlite.api.RKNNLite` resolved to npurt's classes for this process only
(`npurt.toolkit.vendor_names`; nothing named rknn is installed). The script runs as `python SCRIPT.py ARGS...` runs
it: `__name__ == "__main__"`, `sys.argv` = [SCRIPT.py, ARGS...], its folder first on `sys.path` (sibling modules
import), its exit status is npurt's, and an exception it does not catch prints its traceback (status 1).
"""
from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("exec", help="run an rknn-toolkit2 / RKNNLite Python script unchanged",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("script", help="the Python script (e.g. convert.py)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script's own arguments")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import os
    import runpy
    import sys
    import traceback
    from npurt.files import regular_input
    from npurt.toolkit import vendor_names
    script = os.fspath(args.script)
    regular_input(script, "script")             # a directory or FIFO is named as such, not "no such file"
    vendor_names.install()
    sys.argv = [script, *args.args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit:
        raise
    except BaseException:                       # as `python script.py` reports it
        traceback.print_exc()
        return 1
    return 0
