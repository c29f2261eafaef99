"""The services around the memory model that SampleApp-style programs call (log handles and callbacks, profile
handles, platform info, error messages, build id, API version, capabilities) and the system context's binary info."""
from __future__ import annotations

import ctypes
import logging

import npurt.qnn as q
from npurt.qnn import services, system
from helpers.qnn import SMALL, binary, code, htp, ok  # noqa: F401


def test_log_callback_gets_the_lines_at_or_below_its_level(htp, caplog):
    got = []
    logger = q.Qnn_LogHandle_t()
    ok(htp.qi.logCreate(lambda text, level, stamp: got.append((text, level)), q.QNN_LOG_LEVEL_ERROR, logger))
    assert code(htp.qi.memRegister(None, None, 0, None)) == q.QNN_MEM_ERROR_INVALID_ARGUMENT
    assert got and got[-1][1] == q.QNN_LOG_LEVEL_ERROR and "memRegister" in got[-1][0]
    ok(htp.qi.logSetLogLevel(logger, q.QNN_LOG_LEVEL_DEBUG))
    assert code(htp.qi.logSetLogLevel(logger, 0)) == q.QNN_LOG_ERROR_INVALID_ARGUMENT
    ok(htp.qi.logFree(logger))
    assert code(htp.qi.logFree(logger)) == q.QNN_LOG_ERROR_INVALID_HANDLE
    n = len(got)
    with caplog.at_level(logging.ERROR, logger="npurt.qnn"):        # without a log the lines still go out
        htp.qi.memRegister(None, None, 0, None)
    assert len(got) == n and "memRegister" in caplog.text


def test_platform_info_error_message_build_id_api_version(htp):
    cell = ctypes.c_void_p()
    ok(htp.qi.deviceGetPlatformInfo(None, cell))
    info = q.QnnDevice_PlatformInfo_t.from_address(cell.value)
    dev = info.v1.hwDevices[0]
    assert info.v1.numHwDevices == 1 and dev.v1.numCores == 1
    ext = q.QnnHtpDevice_DeviceInfoExtension_t.from_address(dev.v1.deviceInfoExtension)
    assert (ext.onChipDevice.vtcmSize, ext.onChipDevice.socModel, ext.onChipDevice.arch) == (4, 30, 68)  # sm8350
    ok(htp.qi.deviceFreePlatformInfo(None, cell.value))
    assert code(htp.qi.deviceFreePlatformInfo(None, cell.value)) == q.QNN_DEVICE_ERROR_INVALID_ARGUMENT
    assert services.live_platform_infos() == 0
    msg = ctypes.c_void_p()
    ok(htp.qi.errorGetMessage(8002, msg))
    assert ctypes.string_at(msg.value).startswith(b"QNN_MEM_ERROR_ALREADY_REGISTERED")
    build = ctypes.c_void_p()
    ok(htp.qi.backendGetBuildId(build))
    assert b"npurt" in ctypes.string_at(build.value)
    version = q.Qnn_ApiVersion_t()
    ok(htp.qi.backendGetApiVersion(version))
    assert (version.coreApiVersion.major, version.coreApiVersion.minor) == (2, q.QNN_API_VERSION_MINOR)
    assert htp.qi.propertyHasCapability(q.QNN_PROPERTY_TENSOR_SUPPORT_MEMHANDLE_TYPE) == q.QNN_PROPERTY_SUPPORTED
    assert htp.qi.propertyHasCapability(12345) == q.QNN_PROPERTY_ERROR_UNKNOWN_KEY
    profile = q.Qnn_ProfileHandle_t()
    ok(htp.qi.profileCreate(htp.backend, q.QNN_PROFILE_LEVEL_BASIC, profile))
    ok(htp.qi.profileFree(profile))
    assert code(htp.qi.profileFree(profile)) == q.QNN_PROFILE_ERROR_INVALID_HANDLE


def test_system_context_binary_info():
    providers, n = [], ctypes.c_uint32()
    ok(system.QnnSystemInterface_getProviders(providers, ctypes.byref(n)))
    table = getattr(providers[0], system.QNN_SYSTEM_INTERFACE_VER_NAME)
    handle, info = ctypes.c_void_p(), ctypes.c_void_p()
    ok(table.systemContextCreate(handle))
    blob = binary(SMALL).to_bytes()
    assert table.systemContextGetBinaryInfo(handle, b"junk" * 8, 32, info) == \
        q.QNN_SYSTEM_CONTEXT_ERROR_MALFORMED_BINARY
    assert table.systemContextGetBinaryInfo(None, blob, len(blob), info) == q.QNN_SYSTEM_CONTEXT_ERROR_INVALID_HANDLE
    ok(table.systemContextGetBinaryInfo(handle, blob, len(blob), info))
    bi = system.QnnSystemContext_BinaryInfo_t.from_address(info.value)
    assert bi.version == q.QNN_SYSTEM_CONTEXT_BINARY_INFO_VERSION_3
    v3 = bi.contextBinaryInfoV3
    g = v3.graphs[0].graphInfoV3
    assert v3.numGraphs == 1 and g.graphName == binary(SMALL).graph.name.encode()
    t = g.graphInputs[0].v1
    assert list(t.dimensions[:t.rank]) == [1, SMALL, SMALL, 3] and t.dataType == q.QNN_DATATYPE_FLOAT_32
    blob_info = system.QnnHtpSystemContext_GraphBlob_t.from_address(g.graphBlobInfo)
    assert g.graphBlobInfoSize == 112 and blob_info.version1 == 1 and blob_info.version2 == 2
    assert blob_info.ioTensorSize % system.IO_ALIGN == 0 and blob_info.spillFillBufferSize == 0
    ok(table.systemContextFree(handle))
    assert table.systemContextFree(handle) == q.QNN_SYSTEM_CONTEXT_ERROR_INVALID_HANDLE
