"""The backend, property, error and log members: backendCreate / Free / GetBuildId / GetApiVersion,
propertyHasCapability, errorGetMessage / GetVerboseMessage / FreeVerboseMessage, logCreate / SetLogLevel / Free."""
from __future__ import annotations

import ctypes
from typing import Any

from npurt.memory.cargs import as_struct
from npurt.memory.raw import pointer_value
from npurt.qnn import constants as C
from npurt.qnn import services
from npurt.qnn.backend import Backend, lookup
from npurt.qnn.boundary import BACKEND_INVALID_HANDLE, QnnError, qnn_call
from npurt.qnn.members.args import set_handle
from npurt.qnn.structs import Qnn_ApiVersion_t, Qnn_Version_t

BUILD_ID = (f"npurt-qnn-htp-mirror v{C.QNN_API_VERSION_MAJOR}.{C.QNN_API_VERSION_MINOR} "
            f"(HTP API {C.QNN_HTP_API_VERSION_MAJOR}.{C.QNN_HTP_API_VERSION_MINOR})")


def api_version() -> Qnn_ApiVersion_t:
    return Qnn_ApiVersion_t(
        Qnn_Version_t(C.QNN_API_VERSION_MAJOR, C.QNN_API_VERSION_MINOR, C.QNN_API_VERSION_PATCH),
        Qnn_Version_t(C.QNN_HTP_API_VERSION_MAJOR, C.QNN_HTP_API_VERSION_MINOR, C.QNN_HTP_API_VERSION_PATCH))


class BackendMembers:
    """Backend, property, error and log members of `QnnInterfaceTable` (`use_case`, `soc`, `configured` are the
    table's)."""

    @qnn_call("backendCreate")
    def backendCreate(self, logger: Any, config: Any, backend: Any) -> int:
        """QnnBackend_create(logger, config, &backend): a backend of this table's use case and SoC."""
        if as_struct(backend, ctypes.c_void_p) is None:
            raise QnnError(C.QNN_COMMON_ERROR_INVALID_ARGUMENT, "backend out-parameter must be a Qnn_BackendHandle_t")
        b = Backend(self.use_case, self.soc, adopt=not self.configured)
        set_handle(backend, b.handle)
        return C.QNN_SUCCESS

    @qnn_call("backendFree")
    def backendFree(self, backend: Any) -> int:
        """QnnBackend_free(backend): frees its contexts too."""
        b = lookup(backend, Backend)
        if b is None or b.freed:
            raise QnnError(BACKEND_INVALID_HANDLE, "invalid backend handle (freed, or never created)")
        b.free()
        return C.QNN_SUCCESS

    @qnn_call("backendGetBuildId")
    def backendGetBuildId(self, id_out: Any) -> int:
        """QnnBackend_getBuildId(&id): the build id string (appended to a list, or its C string's address written
        into a c_void_p cell)."""
        if isinstance(id_out, list):
            id_out.append(BUILD_ID)
        elif not set_handle(id_out, services.c_text(BUILD_ID)):
            raise QnnError(C.QNN_COMMON_ERROR_INVALID_ARGUMENT, "id is NULL")
        return C.QNN_SUCCESS

    @qnn_call("backendGetApiVersion")
    def backendGetApiVersion(self, version: Any) -> int:
        """QnnBackend_getApiVersion(&version): core and HTP API versions into a Qnn_ApiVersion_t."""
        version = getattr(version, "_obj", version)
        if not isinstance(version, Qnn_ApiVersion_t):
            raise QnnError(C.QNN_COMMON_ERROR_INVALID_ARGUMENT, "pApiVersion is NULL")
        api = api_version()
        version.coreApiVersion, version.backendApiVersion = api.coreApiVersion, api.backendApiVersion
        return C.QNN_SUCCESS

    @qnn_call("propertyHasCapability")
    def propertyHasCapability(self, key: int) -> int:
        """QnnProperty_hasCapability(key): SUPPORTED / NOT_SUPPORTED for every key of `CAPABILITIES` (what the
        mirror does), UNKNOWN_KEY for any other."""
        supported = capability(int(key))
        if supported is None:
            return C.QNN_PROPERTY_ERROR_UNKNOWN_KEY
        return C.QNN_PROPERTY_SUPPORTED if supported else C.QNN_PROPERTY_NOT_SUPPORTED

    @qnn_call("errorGetVerboseMessage")
    def errorGetVerboseMessage(self, errorHandle: int, errorMessage: Any) -> int:
        """QnnError_getVerboseMessage(error, &message): the code's name and the last failure logged with that code
        (a list gets the text; a c_void_p cell the address of a C string to release with errorFreeVerboseMessage)."""
        if isinstance(errorMessage, list):
            addr = services.verbose_message(int(errorHandle))
            errorMessage.append(ctypes.string_at(addr).decode())
            services.free_verbose_message(addr)
        elif as_struct(errorMessage, ctypes.c_void_p) is None:
            raise QnnError(C.QNN_MIN_ERROR_ERROR + 1, "errorMessage is NULL")
        else:
            set_handle(errorMessage, services.verbose_message(int(errorHandle)))
        return C.QNN_SUCCESS

    @qnn_call("errorFreeVerboseMessage")
    def errorFreeVerboseMessage(self, errorMessage: Any) -> int:
        """QnnError_freeVerboseMessage(message): releases a message of errorGetVerboseMessage (a Python text needs
        no release)."""
        if isinstance(errorMessage, str):
            return C.QNN_SUCCESS
        if not services.free_verbose_message(pointer_value(errorMessage)):
            raise QnnError(C.QNN_MIN_ERROR_ERROR + 1, f"{pointer_value(errorMessage):#x} is not a message of "
                                                      f"errorGetVerboseMessage (or was freed)")
        return C.QNN_SUCCESS

    @qnn_call("errorGetMessage")
    def errorGetMessage(self, errorHandle: int, errorMessage: Any) -> int:
        """QnnError_getMessage(error, &message): the vendor name of the code (a list gets the text, a c_void_p
        cell the address of a C string)."""
        text = services.error_message(int(errorHandle))
        if isinstance(errorMessage, list):
            errorMessage.append(text)
        elif not set_handle(errorMessage, services.c_text(text)):
            raise QnnError(C.QNN_MIN_ERROR_ERROR + 1, "errorMessage is NULL")   # npurt's value (ERROR range)
        return C.QNN_SUCCESS

    @qnn_call("logCreate")
    def logCreate(self, callback: Any, maxLogLevel: int, logger: Any) -> int:
        """QnnLog_create(callback, maxLevel, &logger): `callback(message, level, timestamp_us)` gets the mirror's
        log lines at or below `maxLogLevel` (None: no callback)."""
        if as_struct(logger, ctypes.c_void_p) is None:
            raise QnnError(C.QNN_LOG_ERROR_INVALID_ARGUMENT, "logger out-parameter must be a Qnn_LogHandle_t")
        if not 1 <= int(maxLogLevel) <= C.QNN_LOG_LEVEL_MAX:
            raise QnnError(C.QNN_LOG_ERROR_INVALID_ARGUMENT, f"invalid log level {int(maxLogLevel)}")
        set_handle(logger, services.Log(callback if callable(callback) else None, int(maxLogLevel)).handle)
        return C.QNN_SUCCESS

    @qnn_call("logSetLogLevel")
    def logSetLogLevel(self, logger: Any, maxLogLevel: int) -> int:
        log_obj = services.lookup_log(logger)
        if log_obj is None:
            raise QnnError(C.QNN_LOG_ERROR_INVALID_HANDLE, "invalid log handle")
        if not 1 <= int(maxLogLevel) <= C.QNN_LOG_LEVEL_MAX:
            raise QnnError(C.QNN_LOG_ERROR_INVALID_ARGUMENT, f"invalid log level {int(maxLogLevel)}")
        log_obj.set_level(int(maxLogLevel))
        return C.QNN_SUCCESS

    @qnn_call("logFree")
    def logFree(self, logger: Any) -> int:
        log_obj = services.lookup_log(logger)
        if log_obj is None:
            raise QnnError(C.QNN_LOG_ERROR_INVALID_HANDLE, "invalid log handle")
        log_obj.free()
        return C.QNN_SUCCESS


# Capability keys npurt answers (QnnProperty.h), each True (supported) or False.
CAPABILITIES: dict[int, bool] = {
    C.QNN_PROPERTY_GROUP_DEVICE: True,                       # deviceCreate / deviceFree / platform info
    C.QNN_PROPERTY_DEVICE_SUPPORT_INFRASTRUCTURE: True,      # deviceGetInfrastructure: the HTP perf infrastructure
    C.QNN_PROPERTY_GROUP_PROFILE: True,
    C.QNN_PROPERTY_PROFILE_SUPPORTS_EXTENDED_EVENT: True,
    C.QNN_PROPERTY_PROFILE_SUPPORT_MAX_EVENTS_CONFIG: True,
    C.QNN_PROPERTY_PROFILE_SUPPORT_CUSTOM_CONFIG: False,
    C.QNN_PROPERTY_PROFILE_SUPPORT_OPTRACE_CONFIG: False,
    C.QNN_PROPERTY_GROUP_ERROR: True,
    C.QNN_PROPERTY_ERROR_GET_VERBOSE_MESSAGE: True,
    C.QNN_PROPERTY_GROUP_MEMORY: True,
    C.QNN_PROPERTY_MEMORY_SUPPORT_MEM_TYPE_ION: True,
    C.QNN_PROPERTY_MEMORY_SUPPORT_MEM_TYPE_CUSTOM: True,
    C.QNN_PROPERTY_MEMORY_SUPPORT_MEM_TYPE_DMA_BUF: False,
    C.QNN_PROPERTY_GROUP_LOG: True,
    C.QNN_PROPERTY_LOG_SUPPORTS_DEFAULT_STREAM: True,        # no callback: the lines go to stderr
    C.QNN_PROPERTY_GROUP_SIGNAL: False,
    C.QNN_PROPERTY_GROUP_OP_PACKAGE: False,
    C.QNN_PROPERTY_BACKEND_SUPPORT_OP_PACKAGE: False,
    C.QNN_PROPERTY_BACKEND_SUPPORT_PLATFORM_OPTIONS: False,
    C.QNN_PROPERTY_BACKEND_SUPPORT_CUSTOM_PROPERTY: False,
    C.QNN_PROPERTY_BACKEND_SUPPORT_COMPOSITION: True,
    C.QNN_PROPERTY_GRAPH_SUPPORT_ONLINE_PREPARE: True,
    C.QNN_PROPERTY_CONTEXT_SUPPORT_CACHING: True,            # contextCreateFromBinary
    C.QNN_PROPERTY_CONTEXT_SUPPORT_CONFIGURATION: True,
    C.QNN_PROPERTY_CONTEXT_SUPPORT_CUSTOM_PROPERTY: True,    # contextGetProperty's HTP properties
    C.QNN_PROPERTY_CONTEXT_SUPPORT_DEFERRED_GRAPH_INIT: True,
    C.QNN_PROPERTY_GRAPH_SUPPORT_CONFIG: False,
    C.QNN_PROPERTY_GRAPH_SUPPORT_SIGNALS: False,
    C.QNN_PROPERTY_GRAPH_SUPPORT_ASYNC_EXECUTION: False,
    C.QNN_PROPERTY_GRAPH_SUPPORT_EXECUTE: True,
    C.QNN_PROPERTY_TENSOR_SUPPORT_MEMHANDLE_TYPE: True,
    C.QNN_PROPERTY_TENSOR_SUPPORT_CONTEXT_TENSORS: True,
    C.QNN_PROPERTY_TENSOR_SUPPORT_DYNAMIC_DIMENSIONS: False,
    C.QNN_PROPERTY_TENSOR_SUPPORT_QUANTIZATION_ENCODING_SCALE_OFFSET: True,
    C.QNN_PROPERTY_TENSOR_SUPPORT_QUANTIZATION_ENCODING_AXIS_SCALE_OFFSET: True,
}


def capability(key: int) -> bool | None:
    """Whether npurt's HTP backend has capability `key` (None: a key npurt does not know)."""
    return CAPABILITIES.get(int(key))

