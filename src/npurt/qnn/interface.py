"""The QnnInterface function table of the HTP mirror and `QnnInterface_getProviders`.

C code reaches every QNN function through a provider's table: `providers[i]->QNN_INTERFACE_VER_NAME.memRegister`.
Here `QnnInterface_getProviders(providerList, numProviders)` fills a Python list with one `QnnInterface_t` whose
attribute named `QNN_INTERFACE_VER_NAME` ("v2_40") is a `QnnInterfaceTable`; `interface(use_case, soc)` returns that
table directly. A table is bound to one use case — "fastrpc" (QNN called on the host CPU, executed on the DSP) or
"native" (Non-RPC: QNN called on the DSP) — and one HTP SoC; every backend it creates has that use case.
`QnnInterface_getProviders` reads them from `$NPURT_QNN_USE_CASE` (default fastrpc) and `$NPURT_SOC`.

Every function has the C name (the interface field name) and argument order and returns a `Qnn_ErrorHandle_t`
int. Out-parameters are ctypes objects filled in place: a `Qnn_*Handle_t()` (c_void_p), `ctypes.byref` /
`ctypes.pointer` of one, a ctypes array, or a Python list. Failures log an `<E>` line on the `npurt.qnn` logger and
change nothing else. The members live in `npurt.qnn.members`, one module per API family; the table mixes them.

The package's layers, each importing only those before it (`tests/test_layers.py` checks it):
1. the vendor's data and the C boundary — `constants`, `structs`, `_ptr`, `boundary` (QnnError, logging of
   failures), `configs` (config lists);
2. handles — `device` (HTP cores, VTCM), `backend` (the handle table, backends, devices), `rpcmem`, `qurt`,
   `services` (logs, profiles, power configs);
3. memory — `htp_plan` (the HTP memory plan), `mem_registry` (memRegister'd memory), `pd` (the PD budget);
4. contexts — `context` (QnnContext, GraphsContext, SpillGroup), `memory_report` (and the PD check of a load);
5. graphs — `graph` (QnnGraph: I/O and execute), `graph_build` (graphs built op by op), `epcontext`;
6. members — `members/*`, this table, `system` (libQnnSystem's table).
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

from npurt.errors import ErrorCode, NpuError
from npurt.memory.cargs import as_struct
from npurt.qnn import constants as C
from npurt.qnn.boundary import qnn_call
from npurt.qnn.device import configured_soc, default_soc
from npurt.qnn.mem_registry import FASTRPC, NATIVE
from npurt.qnn.members.backend import BackendMembers, api_version
from npurt.qnn.members.building import BuildingMembers
from npurt.qnn.members.context import ContextMembers
from npurt.qnn.members.device import DeviceMembers
from npurt.qnn.members.graph import GraphMembers
from npurt.qnn.members.mem import MemMembers
from npurt.qnn.members.profile import ProfileMembers
from npurt.soc.htp import get_htp_profile

USE_CASES = (FASTRPC, NATIVE)
_USE_CASE_ALIASES = {"fastrpc": FASTRPC, "rpc": FASTRPC, "native": NATIVE, "non-rpc": NATIVE, "nonrpc": NATIVE}


class QnnInterfaceTable(BackendMembers, ProfileMembers, DeviceMembers, ContextMembers, GraphMembers, BuildingMembers,
                        MemMembers):
    """`QnnInterface_ImplementationV2_40_t`: the functions of the HTP mirror for one use case and SoC."""

    def __init__(self, use_case: str, soc: str, configured: bool = True) -> None:
        self.use_case = use_case
        self.soc = soc
        self.configured = configured    # False: backends take the SoC of their first context binary

    def __repr__(self) -> str:
        return f"<QnnInterface {C.QNN_INTERFACE_VER_NAME} HTP {self.use_case} {self.soc}>"


class QnnInterface_t:
    """A provider: backend id, provider name, API versions, and the table under `QNN_INTERFACE_VER_NAME`."""

    def __init__(self, table: QnnInterfaceTable) -> None:
        self.backendId = C.QNN_BACKEND_ID_HTP
        self.providerName = C.QNN_HTP_INTERFACE_PROVIDER_NAME
        self.apiVersion = api_version()
        setattr(self, C.QNN_INTERFACE_VER_NAME, table)

    def __repr__(self) -> str:
        return f"<QnnInterface_t {self.providerName} backendId={self.backendId}>"


def _use_case(name: str | None) -> str:
    key = (name or os.environ.get("NPURT_QNN_USE_CASE") or FASTRPC).strip().lower()
    try:
        return _USE_CASE_ALIASES[key]
    except KeyError:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"unknown QNN HTP use case {name!r}; use 'fastrpc' or 'native'") from None


def interface(use_case: str = FASTRPC, soc: str | None = None) -> QnnInterfaceTable:
    """The HTP function table for `use_case` ("fastrpc" or "native") on HTP SoC `soc` (default: `$NPURT_SOC` if it
    is an HTP SoC, else sm8350)."""
    configured = soc is not None or configured_soc() is not None
    return QnnInterfaceTable(_use_case(use_case), get_htp_profile(soc or default_soc()).name, configured)


@qnn_call("QnnInterface_getProviders")
def QnnInterface_getProviders(providerList: Any, numProviders: Any) -> int:
    """`QnnInterface_getProviders(&providerList, &numProviders)`: fills the list with the one HTP provider."""
    count = as_struct(numProviders, ctypes.c_uint32)
    if not isinstance(providerList, list) or count is None:
        return C.QNN_COMMON_ERROR_INVALID_ARGUMENT
    table = QnnInterfaceTable(_use_case(None), default_soc(), configured_soc() is not None)
    providerList[:] = [QnnInterface_t(table)]
    count.value = 1
    return C.QNN_SUCCESS
