"""The QNN services around the memory model: log handles, profile handles, platform info, error messages and the
build id — what SampleApp-style programs call besides contexts, graphs and memory.

- `Log` (logCreate): a callback and a max level. While a log exists, every line the mirror writes on the
  `npurt.qnn` logger goes to each live log's callback whose level admits it (QNN levels: ERROR 1 ... DEBUG 5).
- `Profile` (profileCreate): a handle accepted by the calls that take one; it records no events.
- `platform_info(soc)`: the `QnnDevice_PlatformInfo_t` tree the HTP device reports (one device, one core, the HTP
  extension with VTCM size, SoC model and arch), kept alive until `free_platform_info`.
- `c_text(text)`: a NUL-terminated copy with a stable address (what `const char**` out-parameters receive).
"""
from __future__ import annotations

import ctypes
import logging
import time
from typing import Any, Callable

import npurt.forksafe as forksafe
from npurt.qnn import constants as C
from npurt.qnn.backend import HANDLES
from npurt.qnn.structs import (QnnDevice_CoreInfo_t, QnnDevice_HardwareDeviceInfo_t, QnnDevice_PlatformInfo_t,
                               QnnHtpDevice_DeviceInfoExtension_t)
from npurt.soc.htp import get_htp_profile

_LEVELS = {logging.ERROR: C.QNN_LOG_LEVEL_ERROR, logging.WARNING: C.QNN_LOG_LEVEL_WARN,
           logging.INFO: C.QNN_LOG_LEVEL_INFO, logging.DEBUG: C.QNN_LOG_LEVEL_DEBUG}
_lock = forksafe.lock()
_logs: dict[int, "Log"] = {}


def qnn_level(levelno: int) -> int:
    """The QNN log level of a Python logging level."""
    for py, qnn in sorted(_LEVELS.items(), reverse=True):
        if levelno >= py:
            return qnn
    return C.QNN_LOG_LEVEL_DEBUG


class Log:
    """A logCreate handle: `callback(message, qnn_level, timestamp_us)` for lines at or below `level`."""

    def __init__(self, callback: Callable[[str, int, int], None] | None, level: int) -> None:
        self.callback = callback
        self.level = int(level)
        self.handle = HANDLES.add(self)
        with _lock:
            if not _logs:
                _logger.addHandler(_FORWARD)
            _logs[self.handle] = self

    def free(self) -> None:
        with _lock:
            _logs.pop(self.handle, None)
            if not _logs:
                _logger.removeHandler(_FORWARD)
        HANDLES.remove(self.handle)


class _Forward(logging.Handler):
    """Sends `npurt.qnn` records to every live log callback (a callback's failure is dropped, as C would). No lock
    is held while a callback runs (not even the handler's own, which `logging.Handler.handle` would take): a slow
    callback or one waiting for a lock of the application never holds up another thread's call."""

    def handle(self, record: logging.LogRecord) -> bool:
        passed = bool(self.filter(record))
        if passed:
            self.emit(record)
        return passed

    def emit(self, record: logging.LogRecord) -> None:
        with _lock:
            targets = list(_logs.values())
        if not targets:
            return
        level, stamp, text = qnn_level(record.levelno), int(time.monotonic() * 1e6), record.getMessage()
        for log in targets:
            if log.callback is not None and level <= log.level:
                try:
                    log.callback(text, level, stamp)
                except Exception:       # noqa: BLE001 - a broken client callback must not break the call
                    pass


# attached only while a log handle exists, so that otherwise the lines still reach stderr as before
_logger = logging.getLogger("npurt.qnn")
_FORWARD = _Forward()


class Profile:
    """A profileCreate handle (npurt records no profiling events)."""

    def __init__(self, level: int) -> None:
        self.level = int(level)
        self.handle = HANDLES.add(self)

    def free(self) -> None:
        HANDLES.remove(self.handle)


_texts: dict[str, ctypes.Array] = {}


def c_text(text: str) -> int:
    """The address of a NUL-terminated copy of `text`, alive for the process (one per distinct text)."""
    with _lock:
        buf = _texts.get(text)
        if buf is None:
            buf = _texts[text] = ctypes.create_string_buffer(text.encode())
        return ctypes.addressof(buf)


_platform: dict[int, tuple] = {}


def platform_info(soc: str) -> int:
    """The address of a new platform-info tree for HTP SoC `soc` (freed by `free_platform_info`)."""
    profile = get_htp_profile(soc)
    ext = QnnHtpDevice_DeviceInfoExtension_t()
    ext.devType = C.QNN_HTP_DEVICE_TYPE_ON_CHIP
    ext.onChipDevice.vtcmSize = profile.vtcm_size >> 20
    ext.onChipDevice.socModel = profile.soc_model
    ext.onChipDevice.arch = profile.arch
    core = QnnDevice_CoreInfo_t()
    core.version = C.QNN_DEVICE_CORE_INFO_VERSION_1
    core.v1.coreId, core.v1.coreType = 0, 0
    dev = QnnDevice_HardwareDeviceInfo_t()
    dev.version = C.QNN_DEVICE_HARDWARE_DEVICE_INFO_VERSION_1
    dev.v1.deviceId, dev.v1.deviceType, dev.v1.numCores = 0, 0, 1
    dev.v1.cores = ctypes.pointer(core)
    dev.v1.deviceInfoExtension = ctypes.addressof(ext)
    info = QnnDevice_PlatformInfo_t()
    info.version = C.QNN_DEVICE_PLATFORM_INFO_VERSION_1
    info.v1.numHwDevices = 1
    info.v1.hwDevices = ctypes.pointer(dev)
    with _lock:
        _platform[ctypes.addressof(info)] = (info, dev, core, ext)
    return ctypes.addressof(info)


def free_platform_info(addr: int) -> bool:
    """Release a tree from `platform_info`; False if `addr` is not one."""
    with _lock:
        return _platform.pop(int(addr or 0), None) is not None


def live_platform_infos() -> int:
    """How many platform-info trees are not yet freed (for leak checks)."""
    with _lock:
        return len(_platform)


def error_message(code: int) -> str:
    """The text errorGetMessage gives for an error handle."""
    return f"{C.error_string(code)} ({C.qnn_error_code(code)})"


def lookup_log(handle: Any) -> Log | None:
    from npurt.qnn.backend import lookup
    return lookup(handle, Log)
