"""SoC profiles against the seeds: API table 3-1, query table 3-2, the C2 table, SRAM, input alignment, lookup."""

import pytest

import npurt.rknn.constants as rkc
from npurt.errors import ErrorCode, NpuError
from npurt.soc import API_FUNCTIONS, DEFAULT_SOC, PROFILES, QUERY_COMMANDS, get_profile

from helpers.data import support_table

# Seed rknn-memory-ownership-and-zero-copy.txt, Tables 3-1 (C API) and 3-2 (rknn_query), transcribed cell by cell
# into tests/data/seed.
API_COLUMNS, API_ROWS = support_table("api")
QUERY_COLUMNS, QUERY_ROWS = support_table("query")

# Seed rknn-runtime-lifecycle-layouts-memory.txt, "C2 values for different hardware platforms"
# (None = "/": no native layout for that type). The seed's header row is shifted one column right of its
# data; read with the data, RK2118 is the first platform column.
C2_TABLE = {
    "RK2118": (None, 4),
    "RK3566/RK3568": (8, 4),
    "RK3588/RK3576/RV1126B": (16, 8),
    "RV1103B/RV1106B": (8, None),
    "RV1103/RV1106": (16, 8),
    "RK3562": (16, 8),
}

# Reference §5, zero-copy input width alignment (UG V2.3.0 Table 5-2).
INPUT_ALIGN = {"RV1103B/RV1106B/RK3566/RK3568": 8, "RV1103/RV1106/RK3562/RK3576/RK3588": 16}

# Seed rknn-npu-sram.txt: the device-tree examples (base, size) assigned to RKNPU.
SRAM = {"rk3588": (0xFF001000, 0xEF000), "rk3576": (0x3FF88000, 0x78000)}


def socs(header: str) -> list[str]:
    """A column header naming several SoCs ("RK3576/RK3588") as profile names."""
    return [name.strip().lower() for name in header.split("/")]


API_CELLS = [(name, soc, marked) for _, name, cells in API_ROWS
             for header, marked in zip(API_COLUMNS, cells) for soc in socs(header)]
QUERY_CELLS = [(name, soc, marked) for _, name, cells in QUERY_ROWS
               for header, marked in zip(QUERY_COLUMNS, cells) for soc in socs(header)]


def test_transcription_shape():
    assert [number for number, _, _ in API_ROWS] == list(range(1, 35))
    assert [number for number, _, _ in QUERY_ROWS] == list(range(1, 21))
    assert len(API_CELLS) == 34 * 11 and len(QUERY_CELLS) == 20 * 11


def test_table_columns_cover_every_profile():
    api_socs = {soc for header in API_COLUMNS for soc in socs(header)}
    query_socs = {soc for header in QUERY_COLUMNS for soc in socs(header)}
    assert api_socs == query_socs == set(PROFILES)


def test_profile_row_order_is_the_seed_order():
    assert API_FUNCTIONS == tuple(name for _, name, _ in API_ROWS)
    assert QUERY_COMMANDS == tuple(name for _, name, _ in QUERY_ROWS)


@pytest.mark.parametrize("function,soc,supported", API_CELLS)
def test_api_support_cell(function, soc, supported):
    profile = get_profile(soc)
    assert profile.supports(function) is supported
    assert (function in profile.api) is supported


@pytest.mark.parametrize("command,soc,supported", QUERY_CELLS)
def test_query_support_cell(command, soc, supported):
    profile = get_profile(soc)
    assert profile.supports_query(command) is supported
    assert (command in profile.queries) is supported


def test_profiles_know_no_other_functions_or_queries():
    for profile in PROFILES.values():
        assert profile.api <= set(API_FUNCTIONS)
        assert profile.queries <= set(QUERY_COMMANDS)


def test_query_names_are_rknn_constants():
    for command in QUERY_COMMANDS:
        assert 0 <= getattr(rkc, command) < rkc.RKNN_QUERY_CMD_MAX


@pytest.mark.parametrize("header,c2", sorted(C2_TABLE.items()))
def test_c2(header, c2):
    int8, float16 = c2
    for soc in socs(header):
        profile = get_profile(soc)
        for dtype, expected in (("int8", int8), ("float16", float16)):
            if expected is None:
                with pytest.raises(NpuError) as err:
                    profile.c2_for(dtype)
                assert err.value.code is ErrorCode.NOT_SUPPORTED
            else:
                assert profile.c2_for(dtype) == expected


def test_c2_table_covers_every_profile():
    assert {soc for header in C2_TABLE for soc in socs(header)} == set(PROFILES)


def test_c2_seed_examples():
    # RK3568, int8 (1, 13, 4, 4) -> NC1HWC2 (1, 2, 4, 4, 8)
    c2 = get_profile("rk3568").c2_for("int8")
    assert (c2, -(-13 // c2)) == (8, 2)


@pytest.mark.parametrize("header,align", sorted(INPUT_ALIGN.items()))
def test_input_alignment(header, align):
    for soc in socs(header):
        assert get_profile(soc).input_align == align


def test_alignment_outside_the_public_table_is_marked_as_npurts_choice():
    listed = {soc for header in INPUT_ALIGN for soc in socs(header)}
    for name, profile in PROFILES.items():
        if name not in listed:
            assert any("npurt's choice" in note for note in profile.notes), name


@pytest.mark.parametrize("soc", sorted(PROFILES))
def test_sram(soc):
    profile = get_profile(soc)
    base, size = SRAM.get(soc, (0, 0))
    assert (profile.sram_base, profile.sram_size) == (base, size)
    assert profile.sram_size % 4096 == 0 and profile.sram_base % 4096 == 0


def test_sram_seed_numbers():
    rk3588 = get_profile("rk3588")
    assert rk3588.sram_size == 956 * 1024 == 978944               # "SRAM total size: 978944"
    assert rk3588.sram_size // 4096 == 7 * 32 + 15                 # bitmap rows in /sys/kernel/debug/rknpu/mm
    assert rk3588.sram_base + rk3588.sram_size == 0xFF0F0000       # dmesg "sram region: [0xff001000, 0xff0f0000)"
    assert get_profile("rk3576").sram_size == 480 * 1024


def test_cores_and_runtime_kind():
    assert get_profile("rk3588").npu_cores == 3
    assert get_profile("rk3576").npu_cores == 2
    multi = {name for name, p in PROFILES.items() if p.npu_cores > 1}
    assert multi == {"rk3576", "rk3588"}
    mini = {name for name, p in PROFILES.items() if p.mini_runtime}
    assert mini == {"rv1103", "rv1106", "rv1103b", "rv1106b", "rk2118"}


# --- lookup ---------------------------------------------------------------------------------------------

def test_lookup_is_case_and_space_insensitive():
    assert get_profile(" RK3566 ").name == "rk3566"


@pytest.mark.parametrize("bad", ["rk9999", "rk3588s", "x86", "qcs6490"])
def test_unknown_soc_is_an_error(bad):
    with pytest.raises(NpuError) as err:
        get_profile(bad)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    assert bad in str(err.value) and "rk3588" in str(err.value)   # names the culprit and the choices


def test_default_soc(monkeypatch):
    monkeypatch.delenv("NPURT_SOC", raising=False)
    assert get_profile().name == DEFAULT_SOC == "rk3588"


def test_npurt_soc_environment_variable(monkeypatch):
    monkeypatch.setenv("NPURT_SOC", "RV1106")
    assert get_profile().name == "rv1106"
    assert get_profile(None).name == "rv1106"
    assert get_profile("rk3568").name == "rk3568"                  # an explicit name wins


def test_empty_npurt_soc_means_default(monkeypatch):
    monkeypatch.setenv("NPURT_SOC", "")
    assert get_profile().name == DEFAULT_SOC


def test_unknown_npurt_soc_is_an_error(monkeypatch):
    monkeypatch.setenv("NPURT_SOC", "rk1234")
    with pytest.raises(NpuError) as err:
        get_profile()
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    assert "rk1234" in str(err.value) and "NPURT_SOC" in str(err.value)


def test_profiles_are_read_only():
    profile = get_profile("rk3588")
    with pytest.raises(AttributeError):
        profile.sram_size = 0
    with pytest.raises(TypeError):
        profile.c2["int8"] = 1
    with pytest.raises(TypeError):
        PROFILES["rk3588"] = profile
