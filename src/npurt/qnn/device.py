"""The HTP devices of this process: one `npurt.memory.Device` per HTP SoC, shared and reference-counted.

`npurt.memory.open_device` only knows the SoC profiles of `npurt.soc.PROFILES` (the RKNN SoCs), so the QNN mirror
keeps its own registry of devices built from `npurt.soc.htp` profiles: the VTCM is the device's fast-memory region.
Every user (a backend, the rpcmem allocator while it has live allocations, the QuRT heap) takes a reference with
`acquire` and gives it back with `release`; the last release closes the device (fds, VTCM memfd).
"""
from __future__ import annotations

import os
import threading

from npurt.memory import Device
from npurt.memory.address_space import DEFAULT_DOMAIN_SIZE
from npurt.soc.htp import DEFAULT_HTP_SOC, HtpProfile, get_htp_profile, is_htp_soc

_lock = threading.RLock()
_devices: dict[str, tuple[Device, int]] = {}


def default_soc() -> str:
    """`$NPURT_SOC` when it names an HTP SoC, else sm8350 (the SoC the x86 HTP emulator reports)."""
    env = os.environ.get("NPURT_SOC")
    return get_htp_profile(env).name if is_htp_soc(env) else DEFAULT_HTP_SOC


def acquire(soc: str | None = None) -> tuple[Device, HtpProfile]:
    """The device of HTP SoC `soc` (None: `default_soc()`), opened on first use; the caller must `release` it."""
    profile = get_htp_profile(soc or default_soc())
    with _lock:
        entry = _devices.get(profile.name)
        if entry is None or entry[0].closed:
            device = Device(profile.soc, "coherent", None, DEFAULT_DOMAIN_SIZE)
            _devices[profile.name] = (device, 1)
            return device, profile
        _devices[profile.name] = (entry[0], entry[1] + 1)
        return entry[0], profile


def release(device: Device) -> None:
    """Give back one reference; the last one closes the device."""
    with _lock:
        entry = _devices.get(device.soc)
        if entry is None or entry[0] is not device:
            return
        if entry[1] > 1:
            _devices[device.soc] = (device, entry[1] - 1)
            return
        del _devices[device.soc]
        device.close()


def open_soc_devices() -> dict[str, Device]:
    """The HTP devices currently open (SoC name -> device); for tests and reports."""
    with _lock:
        return {name: dev for name, (dev, _) in _devices.items()}
