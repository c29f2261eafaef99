"""The QNN services around the memory model: log handles, profile handles, platform info, error messages and the
build id — what SampleApp-style programs call besides contexts, graphs and memory.

- `Log` (logCreate): a callback and a max level. While a log exists, every line the mirror writes on the
  `npurt.qnn` logger goes to each live log's callback whose level admits it (QNN levels: ERROR 1 ... DEBUG 5).
- `Profile` (profileCreate): the events (`Event`) of the last profiled call, with real times from npurt's executor.
- `POWER` (deviceGetInfrastructure): the HTP power-config ids and the settings applied to them, as recorded.
- `platform_info(soc)`: the `QnnDevice_PlatformInfo_t` tree the HTP device reports (one device, one core, the HTP
  extension with VTCM size, SoC model and arch), kept alive until `free_platform_info`.
- `c_text(text)`: a NUL-terminated copy with a stable address (what `const char**` out-parameters receive).
"""
from __future__ import annotations

import ctypes
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import npurt.forksafe as forksafe
from npurt.qnn import constants as C
from npurt.qnn.backend import HANDLES, lookup
from npurt.qnn.boundary import LAST_FAILURE
from npurt.qnn.structs import (QnnDevice_CoreInfo_t, QnnDevice_HardwareDeviceInfo_t, QnnDevice_PlatformInfo_t,
                               QnnHtpDevice_DeviceInfoExtension_t)
from npurt.soc.htp import get_htp_profile

VERBOSE = 15     # the Python level of QNN_LOG_LEVEL_VERBOSE lines: between INFO and DEBUG, so a VERBOSE handle gets them
logging.addLevelName(VERBOSE, "VERBOSE")
_LEVELS = {logging.ERROR: C.QNN_LOG_LEVEL_ERROR, logging.WARNING: C.QNN_LOG_LEVEL_WARN,
           logging.INFO: C.QNN_LOG_LEVEL_INFO, VERBOSE: C.QNN_LOG_LEVEL_VERBOSE, logging.DEBUG: C.QNN_LOG_LEVEL_DEBUG}
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
            _follow_levels()

    def set_level(self, level: int) -> None:
        """logSetLogLevel: the lines this handle gets from now on (the logger follows, as for logCreate)."""
        with _lock:
            self.level = int(level)
            _follow_levels()

    def free(self) -> None:
        with _lock:
            _logs.pop(self.handle, None)
            if not _logs:
                _logger.removeHandler(_FORWARD)
            _follow_levels()
        HANDLES.remove(self.handle)


_PY_LEVELS = {C.QNN_LOG_LEVEL_ERROR: logging.ERROR, C.QNN_LOG_LEVEL_WARN: logging.WARNING,
              C.QNN_LOG_LEVEL_INFO: logging.INFO, C.QNN_LOG_LEVEL_VERBOSE: VERBOSE,
              C.QNN_LOG_LEVEL_DEBUG: logging.DEBUG}
_NAMES = {"error": C.QNN_LOG_LEVEL_ERROR, "warn": C.QNN_LOG_LEVEL_WARN, "warning": C.QNN_LOG_LEVEL_WARN,
          "info": C.QNN_LOG_LEVEL_INFO, "verbose": C.QNN_LOG_LEVEL_VERBOSE, "debug": C.QNN_LOG_LEVEL_DEBUG}


def _env_level() -> int | None:
    """`$NPURT_QNN_LOG_LEVEL` (error / warn / info / verbose / debug, or 1-5): npurt's QNN lines at or below it go to
    stderr, as the HTP library's own log does with a default-stream logger."""
    import os
    text = os.environ.get("NPURT_QNN_LOG_LEVEL", "").strip().lower()
    if not text:
        return None
    return _NAMES.get(text) or (int(text) if text.isdigit() and 1 <= int(text) <= 5 else None)


def _follow_levels() -> None:
    """The `npurt.qnn` logger admits what the most verbose live log handle (or `$NPURT_QNN_LOG_LEVEL`) asks for, so
    info lines (rpcmem_alloc, memRegister, graphExecute on handles, memDeRegister) reach a client that wants them."""
    levels = [min(log.level, C.QNN_LOG_LEVEL_DEBUG) for log in _logs.values()]
    env = _env_level()
    if env is not None:
        levels.append(env)
    wanted = [_PY_LEVELS[lv] for lv in levels if lv in _PY_LEVELS]
    _logger.setLevel(min(min(wanted), logging.WARNING) if wanted else logging.NOTSET)   # only ever more verbose


class _Stderr(logging.StreamHandler):
    """npurt's QNN lines at or below `$NPURT_QNN_LOG_LEVEL` on stderr (attached only when it is set: otherwise
    Python's last-resort handler prints the WARNING and ERROR lines, as before)."""

    def emit(self, record: logging.LogRecord) -> None:
        env = _env_level()
        if env is not None and qnn_level(record.levelno) <= env:
            super().emit(record)


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
if _env_level() is not None:
    _logger.addHandler(_Stderr())
_follow_levels()


@dataclass
class Event:
    """One profiling event: QNN event type and unit, its value (µs for times), an identifier, the time it was taken
    (µs since the epoch) and its sub-events."""

    type: int
    value: int
    identifier: str
    unit: int = C.QNN_PROFILE_EVENTUNIT_MICROSEC
    timestamp: int = field(default_factory=lambda: time.time_ns() // 1000)
    sub: list["Event"] = field(default_factory=list)
    id: int = 0


_events: dict[int, Event] = {}
_next_event = [1]


class Profile:
    """A profileCreate handle: the events of the last profiled call it was given (contextCreateFromBinary: INIT;
    graphExecute: EXECUTE with EXECUTE_DEVICE and, at the DETAILED level, one NODE sub-event per op; contextFree:
    DEINIT), read back by event id. Each profiled call replaces the events of the one before."""

    def __init__(self, level: int) -> None:
        self.level = int(level)
        self.max_events: int | None = None
        self.events: list[Event] = []
        self.ids = (ctypes.c_uint64 * 0)()
        self.handle = HANDLES.add(self)

    @property
    def detailed(self) -> bool:
        return self.level >= C.QNN_PROFILE_LEVEL_DETAILED

    def record(self, events: list[Event]) -> None:
        """Replace the held events with `events` (and their sub-events), giving each an id."""
        with _lock:
            self._drop()
            if self.max_events is not None:
                events = events[:self.max_events]
            stack = list(events)
            while stack:
                ev = stack.pop()
                ev.id = _next_event[0]
                _next_event[0] += 1
                _events[ev.id] = ev
                stack.extend(ev.sub)
            self.events = events
            self.ids = (ctypes.c_uint64 * len(events))(*(e.id for e in events))

    def _drop(self) -> None:
        stack = list(self.events)
        while stack:
            ev = stack.pop()
            _events.pop(ev.id, None)
            stack.extend(ev.sub)
        self.events = []

    def free(self) -> None:
        with _lock:
            self._drop()
        HANDLES.remove(self.handle)


def event(event_id: int) -> Event | None:
    """The live event of id `event_id` (None once its profile recorded again or was freed)."""
    with _lock:
        return _events.get(int(event_id))


def sub_event_ids(ev: Event) -> ctypes.Array:
    """The ids of `ev`'s sub-events as a uint64 array kept alive with the event (what profileGetSubEvents hands
    out)."""
    arr = getattr(ev, "_sub_ids", None)
    if arr is None:
        arr = (ctypes.c_uint64 * len(ev.sub))(*(s.id for s in ev.sub))
        ev._sub_ids = arr      # type: ignore[attr-defined]
    return arr


def execute_events(profile: "Profile", graph: str, total_us: int, perf: Any) -> list[Event]:
    """The events of one graphExecute: EXECUTE (the whole call, µs) with EXECUTE_DEVICE (the executor's run) and,
    at the DETAILED level, one NODE per op (`perf.ops`, timed by the executor)."""
    top = Event(C.QNN_PROFILE_EVENTTYPE_EXECUTE, int(total_us), f"{graph}: graphExecute")
    top.sub.append(Event(C.QNN_PROFILE_EVENTTYPE_EXECUTE_DEVICE, int(perf.run_us), f"{graph}: executor run"))
    if profile.detailed:
        top.sub += [Event(C.QNN_PROFILE_EVENTTYPE_NODE, int(op.time_us), f"{op.name}:{op.op_type}")
                    for op in perf.ops]
    return [top]


class PowerConfigs:
    """The HTP performance infrastructure (deviceGetInfrastructure): power-config ids and the settings applied to
    them, recorded as given (the emulated HTP runs at one speed whatever they say)."""

    def __init__(self) -> None:
        self.ids: dict[int, dict[str, Any]] = {}
        self.memory: dict[tuple[int, int], dict[str, Any]] = {}
        self._next = 1

    def create(self, device_id: int, core_id: int) -> int:
        with _lock:
            cid = self._next
            self._next += 1
            self.ids[cid] = {"device": int(device_id), "core": int(core_id), "settings": {}}
            return cid

    def destroy(self, cid: int) -> bool:
        with _lock:
            return self.ids.pop(int(cid), None) is not None

    def apply(self, cid: int, settings: dict[str, Any]) -> bool:
        with _lock:
            rec = self.ids.get(int(cid))
            if rec is None:
                return False
            rec["settings"].update(settings)
            return True


POWER = PowerConfigs()


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


_verbose: dict[int, ctypes.Array] = {}


def verbose_message(code: int) -> int:
    """The address of a new C string for errorGetVerboseMessage: the code's name and the last failure npurt's QNN
    mirror logged with that code; released by `free_verbose_message`."""
    last = LAST_FAILURE.get(C.qnn_error_code(code))
    text = error_message(code) + (f"; last failure with this code: {last}" if last else "")
    buf = ctypes.create_string_buffer(text.encode())
    with _lock:
        _verbose[ctypes.addressof(buf)] = buf
    return ctypes.addressof(buf)


def free_verbose_message(addr: int) -> bool:
    """Release a message of `verbose_message`; False if `addr` is not a live one."""
    with _lock:
        return _verbose.pop(int(addr or 0), None) is not None


def lookup_log(handle: Any) -> Log | None:
    return lookup(handle, Log)
