"""The HTP devices of the QNN mirror: `npurt.memory.open_device` of an HTP SoC (its VTCM is the device's
fast-memory region), shared and reference-counted by the memory layer.

Every user (a backend, the rpcmem allocator while it has live allocations, the QuRT heap) takes a reference with
`acquire` and gives it back with `release`; the last release closes the device (fds, VTCM memfd). HTP devices are
coherent (the mirror models no CPU-cache maintenance of shared buffers).
"""
from __future__ import annotations

import os

from npurt.memory import Device, open_device, open_devices
from npurt.soc.htp import DEFAULT_HTP_SOC, HTP_PROFILES, HtpProfile, get_htp_profile, is_htp_soc


def default_soc() -> str:
    """`$NPURT_SOC` when it names an HTP SoC, else sm8350 (the SoC the x86 HTP emulator reports)."""
    env = os.environ.get("NPURT_SOC")
    return get_htp_profile(env).name if is_htp_soc(env) else DEFAULT_HTP_SOC


def acquire(soc: str | None = None) -> tuple[Device, HtpProfile]:
    """The device of HTP SoC `soc` (None: `default_soc()`), opened on first use; the caller must `release` it."""
    profile = get_htp_profile(soc or default_soc())
    return open_device(profile.name, "coherent"), profile


def release(device: Device) -> None:
    """Give back one reference; the last one closes the device."""
    device.close()


def open_soc_devices() -> dict[str, Device]:
    """The HTP devices currently open (SoC name -> device); for tests and reports."""
    return {d.soc: d for d in open_devices() if d.soc in HTP_PROFILES}
