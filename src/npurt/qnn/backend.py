"""QNN backends and devices, the per-device HTP core (VTCM, execution lock), and the handle table.

- `HANDLES`: every backend / device / context / graph handle the mirror hands out is an int key of one table (the
  kit's `HandleTable`), so a handle of the wrong kind, a made-up value or a freed one is recognised (never
  dereferenced).
- `HtpCore`: one per HTP device. It owns the VTCM buffer (the device's whole fast-memory region, taken when the
  first context needs it and given back with the last), the execution lock (one graph at a time on one HTP: all
  graphs alias the same VTCM) and the table of external buffers currently used by an executing graph (to detect
  parallel execution where the tutorial allows only sequential execution).
- `Backend`: created by `backendCreate` for one use case ("fastrpc" or "native") and one HTP SoC; holds a device
  reference and its contexts. Freeing it frees its contexts.
- `QnnDevice`: what `deviceCreate` returns.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import npurt.forksafe as forksafe
from npurt.memory import Buffer, Device
from npurt.memory.raw import pointer_value
from npurt.mirror_kit.handles import HandleTable
from npurt.qnn import device as htp_device
from npurt.soc.htp import HtpProfile

if TYPE_CHECKING:
    from npurt.qnn.context import QnnContext

RETIRED_MAX = 64                        # freed graphs whose handles still give the precise error
HANDLES = HandleTable(first=1, step=1, keep_retired=RETIRED_MAX)


def lookup(handle: Any, kind: type) -> Any:
    """The live object of type `kind` behind `handle` (any pointer-ish value), or None (wrong kind, unknown, NULL).
    A freed graph's handle is retired (`HANDLES.retire`), so a late call gets "its context was freed" rather than
    "not a graph"; backendFree forgets the retired handles (the table does not grow with create/free cycles)."""
    return HANDLES.get(pointer_value(handle), kind)


class HtpCore:
    """One HTP: its VTCM, its execution lock and the external buffers busy in a running graph."""

    def __init__(self, device: Device, profile: HtpProfile) -> None:
        self.device = device
        self.profile = profile
        self.exec_lock = forksafe.rlock()      # one graph executes at a time (they share the VTCM)
        self.state_lock = forksafe.lock()
        self.busy: dict[tuple, Any] = {}         # memory key -> the graph executing with it
        self.vtcm: Buffer | None = None
        self.vtcm_users = 0
        self.vtcm_owner: "QnnContext | None" = None  # context whose activations the VTCM holds

    def take_vtcm(self) -> Buffer:
        """The VTCM buffer (allocated on first use); pair with `give_vtcm`."""
        with self.state_lock:
            if self.vtcm is None:
                self.vtcm = self.device.alloc(self.profile.vtcm_size, placement="sram", owner="qnn-vtcm",
                                              name="vtcm")
            self.vtcm_users += 1
            return self.vtcm

    def give_vtcm(self, ctx: "QnnContext") -> None:
        with self.state_lock:
            if self.vtcm_owner is ctx:
                self.vtcm_owner = None
            self.vtcm_users -= 1
            if self.vtcm_users == 0 and self.vtcm is not None:
                self.device.free(self.vtcm)
                self.vtcm = None


_cores: dict[str, tuple[HtpCore, int]] = {}
_cores_lock = forksafe.lock()


@forksafe.after_fork
def _forget_inherited() -> None:
    """In a forked child: the parent's HTP cores (their VTCM is shared with it) are not reused."""
    global _cores
    forksafe.inherit(_cores)
    _cores = {}


def _acquire_core(soc: str | None) -> HtpCore:
    device, profile = htp_device.acquire(soc)
    with _cores_lock:
        entry = _cores.get(profile.name)
        if entry is None or entry[0].device is not device:
            core = HtpCore(device, profile)
            _cores[profile.name] = (core, 1)
            return core
        _cores[profile.name] = (entry[0], entry[1] + 1)
        return entry[0]


def _release_core(core: HtpCore) -> None:
    with _cores_lock:
        entry = _cores.get(core.profile.name)
        if entry is not None and entry[0] is core:
            if entry[1] > 1:
                _cores[core.profile.name] = (core, entry[1] - 1)
            else:
                del _cores[core.profile.name]
    htp_device.release(core.device)


def core_of(soc: str) -> HtpCore | None:
    """The live HTP core of `soc` (tests use its `exec_lock` to hold an execution in place)."""
    with _cores_lock:
        entry = _cores.get(soc)
        return entry[0] if entry else None


class Backend:
    """An HTP backend for one use case on one SoC."""

    def __init__(self, use_case: str, soc: str | None, adopt: bool = False) -> None:
        self.use_case = use_case
        self.core = _acquire_core(soc)
        self.device = self.core.device
        self.profile = self.core.profile
        self.contexts: list["QnnContext"] = []
        self.freed = False
        self.may_adopt = adopt          # no SoC configured: the first HTP context binary decides it
        self.adopted = False
        self.handle = HANDLES.add(self)

    def adopt(self, soc: str) -> None:
        """Take the SoC of the first context binary this backend loads, when no SoC was configured (moves the
        backend to that SoC's HTP device); later binaries must match it."""
        may, self.may_adopt = self.may_adopt and not self.contexts, False
        if not may:
            return
        if soc != self.profile.name:
            self._move_to(soc)

    def _move_to(self, soc: str) -> None:
        """Move to HTP SoC `soc`'s device (the default SoC of rpcmem / QuRT allocations from then on)."""
        old, self.core = self.core, _acquire_core(soc)
        self.device, self.profile = self.core.device, self.core.profile
        if self.adopted:
            htp_device.note_adopted(old.profile.name, -1)
        _release_core(old)
        self.adopted = True
        htp_device.note_adopted(soc, 1)

    def select(self, soc: str) -> bool:
        """Move the backend to HTP SoC `soc` (asked by a device's SOC / ARCH configs) while it has no context;
        whether it is on `soc` now. Like `adopt`, the SoC is then the default of rpcmem / QuRT allocations."""
        if soc == self.profile.name:
            return True
        if self.contexts:
            return False
        self.may_adopt = False
        self._move_to(soc)
        return True

    def free(self) -> None:
        """Free every context of the backend, its device handles, and give back the device."""
        if self.freed:
            return
        for ctx in list(self.contexts):
            ctx.free()
        self.freed = True
        HANDLES.remove(self.handle)
        if self.adopted:
            htp_device.note_adopted(self.profile.name, -1)
        HANDLES.forget_retired()
        _release_core(self.core)


class QnnDevice:
    """What `deviceCreate` returns: the HTP device of one SoC (one core); contexts on a backend of another SoC
    are refused. A device created with no SoC configured takes the SoC of the first backend it is used with; one
    whose SOC / ARCH configs `chose` a SoC moves a backend without contexts to it (`Backend.select`)."""

    def __init__(self, soc: str, adopt: bool = False, chosen: bool = False) -> None:
        self.soc = soc
        self.may_adopt = adopt and not chosen
        self.chosen = chosen
        self.freed = False
        self.handle = HANDLES.add(self)

    def matches(self, backend: Backend) -> bool:
        """Whether a context of `backend` may use this device (adopting the backend's SoC on first use, or moving
        the backend to the SoC the device's configs chose)."""
        if self.chosen:
            return backend.select(self.soc)
        if self.may_adopt:
            self.may_adopt = False
            self.soc = backend.profile.name
        return self.soc == backend.profile.name

    def free(self) -> None:
        self.freed = True
        HANDLES.remove(self.handle)
