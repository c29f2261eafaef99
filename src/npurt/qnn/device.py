"""The HTP devices of the QNN mirror: `npurt.memory.open_device` of an HTP SoC (its VTCM is the device's
fast-memory region), shared and reference-counted by the memory layer.

Every user (a backend, the rpcmem allocator while it has live allocations, the QuRT heap) takes a reference with
`acquire` and gives it back with `release`; the last release closes the device (fds, VTCM memfd). HTP devices are
coherent (the mirror models no CPU-cache maintenance of shared buffers).

With no SoC configured (no `$NPURT_SOC`, no `soc=`), a backend takes the SoC of the first HTP context binary it
loads (`Backend.adopt`), and while it lives that SoC is the default here too, so rpcmem / QuRT buffers allocated
after the context load sit on the same emulated device.
"""
from __future__ import annotations

import os
from collections import Counter

from npurt import forksafe
from npurt.memory import Device, open_device, open_devices
from npurt.soc.htp import DEFAULT_HTP_SOC, HTP_PROFILES, HtpProfile, get_htp_profile, is_htp_soc


_adopted: Counter[str] = Counter()        # SoC -> live backends that adopted it from a context binary
_adopted_order: list[str] = []
_adopted_lock = forksafe.lock()


def configured_soc() -> str | None:
    """`$NPURT_SOC` when it names an HTP SoC (the SoC the user configured), else None."""
    env = os.environ.get("NPURT_SOC")
    return get_htp_profile(env).name if is_htp_soc(env) else None


def default_soc() -> str:
    """The configured SoC, else the SoC the latest live backend adopted, else sm8350 (what the x86 HTP emulator
    reports)."""
    with _adopted_lock:
        adopted = _adopted_order[-1] if _adopted_order else None
    return configured_soc() or adopted or DEFAULT_HTP_SOC


def note_adopted(soc: str, delta: int) -> None:
    """A backend adopted `soc` (delta 1) or an adopting backend was freed (delta -1)."""
    with _adopted_lock:
        _adopted[soc] += delta
        if soc in _adopted_order:
            _adopted_order.remove(soc)
        if _adopted[soc] > 0:
            _adopted_order.append(soc)
        else:
            del _adopted[soc]


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
