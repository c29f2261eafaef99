"""Signature-table coverage of the two mirrors: every function of seed table 3-1 and every member of the QNN
interface table is either wrapped by its mirror's boundary or listed in `npurt.soc.api_coverage.NOT_EMULATED`
with a reason — never both, never neither."""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import npurt.rknn  # noqa: F401 - registers every RKNN function in rknn.boundary.WRAPPED
from npurt.qnn import boundary as qnn_boundary
from npurt.qnn.interface import QnnInterfaceTable
from npurt.rknn import boundary as rknn_boundary
from npurt.soc import API_FUNCTIONS
from npurt.soc.api_coverage import NOT_EMULATED, QNN_HTP_PERF_INFRASTRUCTURE_MEMBERS, QNN_INTERFACE_MEMBERS


HEADERS = Path(__file__).resolve().parent.parent / "src" / "npurt" / "capi" / "include"


def _c_declarations() -> dict[str, tuple[str, int]]:
    """RKNN function name -> (return type, parameter count), from npurt's own headers."""
    text = "".join(p.read_text(encoding="utf-8") for p in sorted(HEADERS.glob("rknn*.h")))
    text = re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))
    found = {}
    for ret, name, params in re.findall(r"(?:^|[;}\n])\s*([A-Za-z_][\w\s*]*?)\b(rknn_\w+)\s*\(([^()]*)\)\s*;", text):
        found[name] = (" ".join(ret.split()), len([p for p in params.split(",") if p.strip() not in ("", "void")]))
    return found


def test_every_wrapped_rknn_function_has_its_c_signature():
    """The signature table: each mirror function takes the C declaration's parameters, in number, and returns
    a status exactly where C returns int (NULL / nothing where C returns a pointer / void)."""
    decls = _c_declarations()
    assert set(API_FUNCTIONS) <= set(decls), sorted(set(API_FUNCTIONS) - set(decls))
    for name, fn in rknn_boundary.WRAPPED.items():
        ret, n_params = decls[name]
        assert len(inspect.signature(fn).parameters) == n_params, name
        assert fn.returns_status == (ret == "int"), (name, ret)


def test_the_interface_table_has_71_members_at_the_measured_indices():
    assert len(QNN_INTERFACE_MEMBERS) == 71 == len(set(QNN_INTERFACE_MEMBERS))
    measured = {"logCreate": 25, "memRegister": 35, "memDeRegister": 36, "deviceCreate": 40, "errorGetMessage": 48,
                "contextGetProperty": 63, "contextFinalize": 66}
    assert {name: QNN_INTERFACE_MEMBERS.index(name) for name in measured} == measured


@pytest.mark.parametrize("name", API_FUNCTIONS)
def test_every_table_3_1_function(name):
    wrapped, listed = name in rknn_boundary.WRAPPED, name in NOT_EMULATED
    assert wrapped != listed, f"{name}: wrapped={wrapped}, listed as not emulated={listed}"
    if wrapped:
        assert getattr(npurt.rknn, name) is rknn_boundary.WRAPPED[name]


@pytest.mark.parametrize("member", QNN_INTERFACE_MEMBERS)
def test_every_qnn_interface_member(member):
    wrapped, listed = member in qnn_boundary.WRAPPED, member in NOT_EMULATED
    assert wrapped != listed, f"{member}: wrapped={wrapped}, listed as not emulated={listed}"
    assert hasattr(QnnInterfaceTable, member) == wrapped
    if wrapped:
        assert getattr(QnnInterfaceTable, member) is qnn_boundary.WRAPPED[member]
        assert inspect.signature(getattr(QnnInterfaceTable, member)).parameters   # callable with the C arguments


def test_not_emulated_lists_only_vendor_names_with_reasons():
    known = set(API_FUNCTIONS) | set(QNN_INTERFACE_MEMBERS)
    assert set(NOT_EMULATED) <= known, sorted(set(NOT_EMULATED) - known)
    assert all(isinstance(why, str) and len(why) > 20 for why in NOT_EMULATED.values())


def test_every_wrapped_name_is_a_vendor_name():
    """The boundary registers C names only: nothing wrapped under a name the vendor tables do not have (other than
    the interface provider entry point and functions declared in the vendor headers beside table 3-1)."""
    extra_rknn = set(rknn_boundary.WRAPPED) - set(API_FUNCTIONS)
    assert all(n.startswith("rknn_") for n in extra_rknn), sorted(extra_rknn)
    extra_qnn = set(qnn_boundary.WRAPPED) - set(QNN_INTERFACE_MEMBERS) - set(QNN_HTP_PERF_INFRASTRUCTURE_MEMBERS)
    assert all(n.startswith("Qnn") for n in extra_qnn), sorted(extra_qnn)
