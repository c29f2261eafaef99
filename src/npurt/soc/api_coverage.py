"""What of the vendors' C APIs the mirrors emulate, as data: the QNN interface table's members in ABI order, and the
one table of functions / members npurt does not emulate, each with the reason.

Every name of seed table 3-1 (`API_FUNCTIONS`) and every member of `QNN_INTERFACE_MEMBERS` is either wrapped by its
mirror's boundary (`npurt.rknn.boundary.WRAPPED`, `npurt.qnn.boundary.WRAPPED`) or listed in `NOT_EMULATED`; the
test suite checks that no name is both or neither. In the C face (libQnnHtp.so) a member that is not emulated
returns QNN_COMMON_ERROR_NOT_SUPPORTED.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Mapping

# QnnInterface_t's function table (QNN core API 2.40, x86-64): the named members from byte 40, in this order — the
# one list the Python mirror's coverage checks, the C face's table and npurt's QnnInterface.h are made from.
QNN_INTERFACE_MEMBERS: tuple[str, ...] = (
    "propertyHasCapability",
    "backendCreate", "backendSetConfig", "backendGetApiVersion", "backendGetBuildId", "backendRegisterOpPackage",
    "backendGetSupportedOperations", "backendValidateOpConfig", "backendFree",
    "contextCreate", "contextSetConfig", "contextGetBinarySize", "contextGetBinary", "contextCreateFromBinary",
    "contextFree",
    "graphCreate", "graphCreateSubgraph", "graphSetConfig", "graphAddNode", "graphFinalize", "graphRetrieve",
    "graphExecute", "graphExecuteAsync",
    "tensorCreateContextTensor", "tensorCreateGraphTensor",
    "logCreate", "logSetLogLevel", "logFree",
    "profileCreate", "profileSetConfig", "profileGetEvents", "profileGetSubEvents", "profileGetEventData",
    "profileGetExtendedEventData", "profileFree",
    "memRegister", "memDeRegister",
    "deviceGetPlatformInfo", "deviceFreePlatformInfo", "deviceGetInfrastructure", "deviceCreate", "deviceSetConfig",
    "deviceGetInfo", "deviceFree",
    "signalCreate", "signalSetConfig", "signalTrigger", "signalFree",
    "errorGetMessage", "errorGetVerboseMessage", "errorFreeVerboseMessage",
    "graphPrepareExecutionEnvironment", "graphReleaseExecutionEnvironment", "graphGetProperty",
    "contextValidateBinary", "contextCreateFromBinaryWithSignal", "contextCreateFromBinaryListAsync",
    "tensorUpdateGraphTensors", "tensorUpdateContextTensors",
    "contextGetBinarySectionSize", "contextGetBinarySection", "contextApplyBinarySection", "backendGetProperty",
    "contextGetProperty",
    "contextGetIncrementalBinary", "contextReleaseIncrementalBinary", "contextFinalize", "globalConfigSet",
    "contextCreateFromBinaryWithCallback", "contextGetBinarySectionUpdate", "contextFreeBinarySectionUpdate",
)
# Slots of the 2.40 table: Qualcomm's provider fills 0-74 and leaves 75 NULL. The members of slots 71-75 were added
# after the newest public header (2.32, 71 members) and no public header names them: npurt's table has the slots
# (as `reserved71`...) and leaves them NULL, as a provider may.
QNN_INTERFACE_SLOTS = 76
# QnnHtpDevice_PerfInfrastructure_t (what deviceGetInfrastructure hands out), in its order.
QNN_HTP_PERF_INFRASTRUCTURE_MEMBERS: tuple[str, ...] = ("createPowerConfigId", "destroyPowerConfigId",
                                                        "setPowerConfig", "setMemoryConfig")
QNN_INTERFACE_RESERVED: tuple[str, ...] = tuple(f"reserved{i}" for i in range(len(QNN_INTERFACE_MEMBERS),
                                                                              QNN_INTERFACE_SLOTS))

_ONLINE = ("op packages, subgraphs and tensor updates are not emulated: graphs are built from the qti.aisw ops "
           "(docs/qnn-graphs.md lists them)")
_SERIALISE = ("binary sections and incremental binaries are not emulated: contextGetBinary writes the whole context "
              "binary")
_ASYNC = "asynchronous execution and signals are not emulated: graphExecute runs to completion before it returns"
_RECONFIGURE = "reconfiguring after creation is not emulated: npurt reads configs only where the object is created"
_INFO = ("device info / backend property queries are not emulated: deviceGetPlatformInfo reports the HTP (VTCM size, "
         "SoC model, arch)")
_ENVIRONMENT = "execution environments are not emulated: memory is bound at contextFinalize and graphExecute"

NOT_EMULATED: Mapping[str, str] = MappingProxyType({
    "backendSetConfig": _RECONFIGURE,
    "backendRegisterOpPackage": _ONLINE,
    "backendGetSupportedOperations": _ONLINE,
    "contextSetConfig": _RECONFIGURE,
    "graphCreateSubgraph": _ONLINE,
    "graphSetConfig": _RECONFIGURE,
    "graphExecuteAsync": _ASYNC,
    "deviceSetConfig": _RECONFIGURE,
    "deviceGetInfo": _INFO,
    "signalCreate": _ASYNC,
    "signalSetConfig": _ASYNC,
    "signalTrigger": _ASYNC,
    "signalFree": _ASYNC,
    "graphPrepareExecutionEnvironment": _ENVIRONMENT,
    "graphReleaseExecutionEnvironment": _ENVIRONMENT,
    "graphGetProperty": "graph properties are not emulated: a graph's I/O is read from the context binary",
    "contextValidateBinary": "validating a binary without loading it is not emulated: contextCreateFromBinary "
                             "refuses a bad one with the same codes",
    "contextCreateFromBinaryWithSignal": _ASYNC,
    "tensorUpdateGraphTensors": _ONLINE,
    "tensorUpdateContextTensors": _ONLINE,
    "contextGetBinarySectionSize": _SERIALISE,
    "contextGetBinarySection": _SERIALISE,
    "contextApplyBinarySection": _SERIALISE,
    "backendGetProperty": _INFO,
    "contextGetIncrementalBinary": _SERIALISE,
    "contextReleaseIncrementalBinary": _SERIALISE,
    "globalConfigSet": _RECONFIGURE,
    "contextCreateFromBinaryWithCallback": _ASYNC,
    "contextGetBinarySectionUpdate": _SERIALISE,
    "contextFreeBinarySectionUpdate": _SERIALISE,
})
"""Vendor function / interface member -> why npurt does not emulate it (every table 3-1 function is emulated)."""
