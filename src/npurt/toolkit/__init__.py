"""The toolkit face: rknn-toolkit2's Python API (`rknn.api.RKNN`) on npurt (guide: docs/toolkit.md).

`RKNN` is the toolkit's class (`npurt.toolkit.rknn`); `vendor_names` lets a script written for the toolkit import
it as `rknn.api` (and the Lite class as `rknnlite.api`) in one process, as `npurt exec script.py` runs it.
"""
from __future__ import annotations

from npurt.toolkit.rknn import RKNN

__all__ = ["RKNN"]
