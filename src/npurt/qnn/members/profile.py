"""The profile members: profileCreate / SetConfig / GetEvents / GetSubEvents / GetEventData /
GetExtendedEventData / Free over `services.Profile` (events of the last profiled call)."""
from __future__ import annotations

import ctypes
from typing import Any

from npurt.memory.cargs import as_struct, as_struct_list
from npurt.memory.raw import pointer_value
from npurt.qnn import constants as C
from npurt.qnn import services
from npurt.qnn.backend import Backend, lookup
from npurt.qnn.boundary import QnnError, qnn_call
from npurt.qnn.members.args import ids_out, set_handle
from npurt.qnn.structs import QnnProfile_Config_t, QnnProfile_EventData_t, QnnProfile_ExtendedEventData_t


def _profile(handle: Any) -> services.Profile:
    p = lookup(handle, services.Profile)
    if p is None:
        raise QnnError(C.QNN_PROFILE_ERROR_INVALID_HANDLE, f"{pointer_value(handle):#x} is not a profile handle")
    return p


def _event(event_id: Any) -> services.Event:
    ev = services.event(int(event_id))
    if ev is None:
        raise QnnError(C.QNN_PROFILE_ERROR_INVALID_HANDLE, f"event {int(event_id)} does not exist (its profile "
                                                           f"recorded again or was freed)")
    return ev


class ProfileMembers:
    """The profile members of `QnnInterfaceTable`."""

    @qnn_call("profileCreate")
    def profileCreate(self, backend: Any, level: int, profile: Any) -> int:
        """QnnProfile_create(backend, level, &profile): a handle the profiled calls accept (no events)."""
        b = lookup(backend, Backend)
        if b is None or b.freed:
            raise QnnError(C.QNN_PROFILE_ERROR_INVALID_HANDLE, "invalid backend handle")
        if as_struct(profile, ctypes.c_void_p) is None:
            raise QnnError(C.QNN_PROFILE_ERROR_INVALID_ARGUMENT, "profile out-parameter must be a "
                                                                 "Qnn_ProfileHandle_t")
        set_handle(profile, services.Profile(int(level)).handle)
        return C.QNN_SUCCESS

    @qnn_call("profileSetConfig")
    def profileSetConfig(self, profileHandle: Any, config: Any) -> int:
        """QnnProfile_setConfig(profile, configs): MAX_EVENTS caps the events held; ENABLE_OPTRACE is accepted
        (npurt has no op trace: DETAILED NODE events are what it records); CUSTOM is refused (no custom configs)."""
        p = _profile(profileHandle)
        configs = [] if config is None else as_struct_list(config, None, QnnProfile_Config_t, "config")
        for cfg in configs:
            option = int(cfg.option)
            if option == C.QNN_PROFILE_CONFIG_OPTION_MAX_EVENTS:
                p.max_events = int(cfg.numMaxEvents)
            elif option != C.QNN_PROFILE_CONFIG_OPTION_ENABLE_OPTRACE:
                raise QnnError(C.QNN_PROFILE_ERROR_UNSUPPORTED, f"profile config option {option} is not supported")
        return C.QNN_SUCCESS

    @qnn_call("profileGetEvents")
    def profileGetEvents(self, profileHandle: Any, profileEventIds: Any, numEvents: Any) -> int:
        """QnnProfile_getEvents(profile, &ids, &n): the events of the last profiled call (a list gets the ids; a
        c_void_p cell the address of a uint64 array alive until the profile records again or is freed)."""
        p = _profile(profileHandle)
        count = as_struct(numEvents, ctypes.c_uint32)
        if count is None or (not isinstance(profileEventIds, list) and as_struct(profileEventIds, ctypes.c_void_p)
                             is None):
            raise QnnError(C.QNN_PROFILE_ERROR_INVALID_ARGUMENT, "profileEventIds or numEvents is NULL")
        ids_out(profileEventIds, p.ids)
        count.value = len(p.ids)
        return C.QNN_SUCCESS

    @qnn_call("profileGetSubEvents")
    def profileGetSubEvents(self, eventId: int, subEventIds: Any, numSubEvents: Any) -> int:
        """QnnProfile_getSubEvents(event, &ids, &n): an EXECUTE event's EXECUTE_DEVICE and NODE sub-events."""
        ev = _event(eventId)
        count = as_struct(numSubEvents, ctypes.c_uint32)
        if count is None or (not isinstance(subEventIds, list) and as_struct(subEventIds, ctypes.c_void_p) is None):
            raise QnnError(C.QNN_PROFILE_ERROR_INVALID_ARGUMENT, "subEventIds or numSubEvents is NULL")
        ids = services.sub_event_ids(ev)
        ids_out(subEventIds, ids)
        count.value = len(ids)
        return C.QNN_SUCCESS

    @qnn_call("profileGetEventData")
    def profileGetEventData(self, eventId: int, eventData: Any) -> int:
        """QnnProfile_getEventData(event, &data): type, unit, value and identifier into a QnnProfile_EventData_t."""
        ev = _event(eventId)
        data = as_struct(eventData, QnnProfile_EventData_t)
        if data is None:
            raise QnnError(C.QNN_PROFILE_ERROR_INVALID_ARGUMENT, "eventData is NULL")
        data.type, data.unit, data.value = ev.type, ev.unit, ev.value
        data.identifier = services.c_text(ev.identifier)
        return C.QNN_SUCCESS

    @qnn_call("profileGetExtendedEventData")
    def profileGetExtendedEventData(self, eventId: int, eventData: Any) -> int:
        """QnnProfile_getExtendedEventData(event, &data): version 1 with the value as a UINT_64 scalar and the
        event's timestamp (µs)."""
        ev = _event(eventId)
        data = as_struct(eventData, QnnProfile_ExtendedEventData_t)
        if data is None:
            raise QnnError(C.QNN_PROFILE_ERROR_INVALID_ARGUMENT, "eventData is NULL")
        data.version = C.QNN_PROFILE_DATA_VERSION_1
        v1 = data.v1
        v1.type, v1.unit, v1.timestamp = ev.type, ev.unit, ev.timestamp
        v1.value.dataType = C.QNN_DATATYPE_UINT_64
        v1.value.uint64Value = ev.value
        v1.identifier = services.c_text(ev.identifier)
        return C.QNN_SUCCESS

    @qnn_call("profileFree")
    def profileFree(self, profile: Any) -> int:
        p = lookup(profile, services.Profile)
        if p is None:
            raise QnnError(C.QNN_PROFILE_ERROR_INVALID_HANDLE, "invalid profile handle")
        p.free()
        return C.QNN_SUCCESS
