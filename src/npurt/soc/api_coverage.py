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

# QnnInterface_t's function table (QNN API 2.x, x86-64): 71 members from byte 40, in this order.
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

_ONLINE = ("op packages, subgraphs and tensor updates are not emulated: graphs are built from the qti.aisw ops "
           "(docs/qnn-graphs.md lists them)")
_SERIALISE = ("binary sections and incremental binaries are not emulated: contextGetBinary writes the whole context "
              "binary")
_ASYNC = "asynchronous execution and signals are not emulated: graphExecute runs to completion before it returns"
_RECONFIGURE = "reconfiguring after creation is not emulated: npurt reads configs only where the object is created"
_PROFILE = ("profiling events are not emulated: profileCreate gives a handle the calls accept (the RKNN mirror's "
            "perf queries report npurt's timings)")
_INFO = ("device infrastructure / info queries are not emulated: deviceGetPlatformInfo reports the HTP (VTCM size, "
         "SoC model, arch)")
_ERROR = "verbose error messages are not emulated: errorGetMessage names any code"
_ENVIRONMENT = "execution environments are not emulated: memory is bound at contextFinalize and graphExecute"

NOT_EMULATED: Mapping[str, str] = MappingProxyType({
    "backendSetConfig": _RECONFIGURE,
    "backendRegisterOpPackage": _ONLINE,
    "backendGetSupportedOperations": _ONLINE,
    "contextSetConfig": _RECONFIGURE,
    "graphCreateSubgraph": _ONLINE,
    "graphSetConfig": _RECONFIGURE,
    "graphExecuteAsync": _ASYNC,
    "profileSetConfig": _PROFILE,
    "profileGetEvents": _PROFILE,
    "profileGetSubEvents": _PROFILE,
    "profileGetEventData": _PROFILE,
    "profileGetExtendedEventData": _PROFILE,
    "deviceGetInfrastructure": _INFO,
    "deviceSetConfig": _RECONFIGURE,
    "deviceGetInfo": _INFO,
    "signalCreate": _ASYNC,
    "signalSetConfig": _ASYNC,
    "signalTrigger": _ASYNC,
    "signalFree": _ASYNC,
    "errorGetVerboseMessage": _ERROR,
    "errorFreeVerboseMessage": _ERROR,
    "graphPrepareExecutionEnvironment": _ENVIRONMENT,
    "graphReleaseExecutionEnvironment": _ENVIRONMENT,
    "graphGetProperty": "graph properties are not emulated: a graph's I/O is read from the context binary",
    "contextValidateBinary": "validating a binary without loading it is not emulated: contextCreateFromBinary "
                             "refuses a bad one with the same codes",
    "contextCreateFromBinaryWithSignal": _ASYNC,
    "contextCreateFromBinaryListAsync": _ASYNC,
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
