"""Qualcomm HTP (Hexagon Tensor Processor) profiles: VTCM size, HTP arch, SoC model, use cases.

Sources:
- VTCM size and arch per SoC: ExecuTorch `backends/qualcomm/serialization/qc_schema.py`, `_soc_info_table`
  (SM8350 -> V68, 4 MB; SM8450 -> V69, 8 MB; SM8550 -> V73, 8 MB; SM8650 -> V75, 8 MB; SM8750 -> V79, 8 MB) and the
  `QcomChipset` values used as `socModel` (30, 36, 43, 57, 69).
- measured on the SDK's x86-64 HTP emulator: it reports vtcmSize 4 MB, socModel 30 (SM8350),
  arch 68, which is why "sm8350" is npurt's default HTP SoC.
- Use cases (FastRPC, Non-RPC / native): the QNN HTP shared-buffer tutorial, supported on every arch here.
- The process domain (PD) address space: the Hexagon processor has a 32-bit byte-addressable address space
  (Hexagon V79 Programmer's Reference Manual, "Memory": 4 GiB, `PD_ADDRESS_SPACE`), and one HTP session (a PD)
  can map "around 3.5GB" of buffers (llama.cpp's Hexagon backend developer notes, for V73-V81; larger models are
  split over several sessions): `HtpProfile.pd_budget`. Qualcomm publishes no figure per SoC; applying 3.5 GiB to
  V68 / V69 too is npurt's choice. What is counted against it: `npurt.qnn.pd`.

The VTCM is the HTP's fast on-chip memory. In npurt it is the device's fast-memory region (`SocProfile.sram_size`
and `vtcm_size` are both set to it), so `npurt.memory` gives every HTP device a VTCM memfd with a page bitmap.
Values marked "npurt's choice" are not public.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from npurt.errors import ErrorCode, NpuError
from npurt.soc.profiles import SocProfile

MIB = 1 << 20
DEFAULT_HTP_SOC = "sm8350"
USE_CASES = ("fastrpc", "native")

PD_ADDRESS_SPACE = 1 << 32     # public: the Hexagon's 32-bit virtual address space
PD_MAP_LIMIT = 3584 * MIB       # public ("around 3.5GB" mappable per HTP session); npurt's choice for V68 / V69

# npurt's choice: where the VTCM appears in the DSP address map (not public; only used for reports).
VTCM_BASE = 0xD8000000


@dataclass(frozen=True)
class HtpProfile:
    """One Snapdragon SoC's HTP: the generic `SocProfile` plus the HTP facts QNN reports."""

    soc: SocProfile
    arch: int            # Hexagon arch number (68 = V68, ...)
    soc_model: int       # QnnHtpDevice socModel (the QcomChipset value)
    marketing: str
    use_cases: tuple[str, ...] = USE_CASES
    pd_budget: int = PD_MAP_LIMIT   # bytes a process domain can map (weights, spill-fill, registered I/O, ...)

    @property
    def name(self) -> str:
        return self.soc.name

    @property
    def vtcm_size(self) -> int:
        """Bytes of VTCM (the fast memory the HTP planner places activations in)."""
        return self.soc.vtcm_size


def _profile(name: str, arch: int, soc_model: int, vtcm_mib: int, marketing: str) -> HtpProfile:
    vtcm = vtcm_mib * MIB
    soc = SocProfile(
        name=name, npu_cores=1,
        # npurt's choice: HTP has no NC1HWC2 layout of its own; the C2 values let the RKNN-style compiler
        # lay out native tensors for this profile too (same as rk3588).
        c2=MappingProxyType({"int8": 16, "uint8": 16, "float16": 8, "int16": 8}),
        input_align=16, api=frozenset(), queries=frozenset(),
        sram_size=vtcm, sram_base=VTCM_BASE, vtcm_size=vtcm,
        notes=(f"Hexagon V{arch} HTP, {vtcm_mib} MiB VTCM ({marketing})",
               "C2 and input alignment: npurt's choice"))
    return HtpProfile(soc, arch, soc_model, marketing)


HTP_PROFILES: Mapping[str, HtpProfile] = MappingProxyType({p.name: p for p in (
    _profile("sm8350", 68, 30, 4, "Snapdragon 888"),
    _profile("sm8450", 69, 36, 8, "Snapdragon 8 Gen 1"),
    _profile("sm8550", 73, 43, 8, "Snapdragon 8 Gen 2"),
    _profile("sm8650", 75, 57, 8, "Snapdragon 8 Gen 3"),
    _profile("sm8750", 79, 69, 8, "Snapdragon 8 Elite"),
)})

# Arch aliases: "v73" names the first SoC of that arch.
_ARCH_ALIASES = {f"v{p.arch}": p.name for p in reversed(tuple(HTP_PROFILES.values()))}


def get_htp_profile(name: str | None = None) -> HtpProfile:
    """The HTP profile for a SoC name ("sm8550") or arch ("v73"), case-insensitive; None gives sm8350."""
    key = (name or DEFAULT_HTP_SOC).strip().lower()
    key = _ARCH_ALIASES.get(key, key)
    try:
        return HTP_PROFILES[key]
    except KeyError:
        known = ", ".join(sorted(HTP_PROFILES) + sorted(_ARCH_ALIASES))
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"unknown HTP SoC {name!r}; known: {known}") from None


def is_htp_soc(name: str | None) -> bool:
    """Whether `name` names an HTP profile or arch."""
    if not name:
        return False
    key = name.strip().lower()
    return key in HTP_PROFILES or key in _ARCH_ALIASES


__all__ = ["DEFAULT_HTP_SOC", "HTP_PROFILES", "HtpProfile", "PD_ADDRESS_SPACE", "PD_MAP_LIMIT", "USE_CASES", "VTCM_BASE",
           "get_htp_profile", "is_htp_soc"]
