"""The QNN HTP C face: libcdsprpc.so, libQnnHtp.so and libQnnSystem.so from `npurt capi --prefix`, loaded with
dlopen by whole C programs (tests/c/qnn_*.c, compiled at test time), as applications load them on a phone.

- the tutorial's four examples (ION, multi-tensor SHARED_BUFFER, FastRPC external weights + spill-fill, Non-RPC
  concurrent spill-fill + VTCM backup), outputs compared with onnxruntime;
- every tutorial rule broken once from C, plus rpcmem misuse;
- the ABI: sizeof / offsetof of npurt's headers against the mirror's ctypes structs, the facts and the 71-member
  order of QnnInterface_t.
"""
from __future__ import annotations

import ctypes
import functools
import re
import sys

import numpy as np
import pytest

import npurt
import npurt.qnn as q
from npurt.capi.qnnhtp import MEMBERS
from npurt.model import zoo
from npurt.qnn import system
from helpers.capi import compile_c, prefix, run_c
from helpers.oracle import run_ort

SMALL, SPILL = 32, 256
TOL = 1e-3


@functools.lru_cache(maxsize=None)
def _onnx(size: int):
    return zoo.small_convnet(size=size)


@pytest.fixture(scope="module")
def pfx():
    return prefix()


def _program(name: str, pfx) -> object:
    return compile_c(name, pfx, libs=(), flags=("-I", str(pfx / "include" / "QNN"), "-ldl", "-lpthread"))


def _case(tmp_path, size: int, soc: str, precision: str = "float32"):
    """(model.bin, input.raw, reference): the small convnet as `npurt convert` writes it, a random input in the
    graph's own format (NHWC float32) and onnxruntime's output."""
    model = npurt.compile(_onnx(size), soc=soc, precision=precision, progress=False)
    path = tmp_path / "model.bin"
    model.save(path)
    x = np.random.default_rng(size).normal(size=(1, 3, size, size)).astype(np.float32)
    (tmp_path / "input.raw").write_bytes(x.transpose(0, 2, 3, 1).tobytes())
    ref = run_ort(_onnx(size), {"input": x})[0]
    return path, tmp_path / "input.raw", ref


def _run(name: str, pfx, tmp_path, *args, env: dict | None = None) -> str:
    env = {"LD_LIBRARY_PATH": str(pfx / "lib"), **(env or {})}
    proc = run_c(_program(name, pfx), *args, env=env)
    assert f"{name} ok" in proc.stdout, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.parametrize("name,size,soc,precision,env", [
    ("qnn_ion", SMALL, "sm8550", "fp16", {}),
    ("qnn_shared", SMALL, "sm8350", "float32", {}),
    ("qnn_fastrpc_external", SPILL, "sm8350", "float32", {}),
    ("qnn_native_concurrent", SPILL, "sm8350", "float32", {"NPURT_QNN_USE_CASE": "native"}),
])
def test_tutorial_examples_from_c(pfx, tmp_path, name, size, soc, precision, env):
    model, x, ref = _case(tmp_path, size, soc, precision)
    out = tmp_path / "output.raw"
    stdout = _run(name, pfx, tmp_path, model, x, out, env=env)
    y = np.fromfile(out, np.float32)
    assert y.size == ref.size
    assert np.abs(y - ref.reshape(-1)).max() < (3e-3 if precision == "fp16" else TOL)
    if name == "qnn_fastrpc_external":          # the 256x256 model overflows the 4 MiB VTCM: it spills
        assert "spillfill 2097152" in stdout
    if name == "qnn_native_concurrent":
        assert "vtcm backup" in stdout


def test_external_buffers_with_no_spill_needed(pfx, tmp_path):
    """The FastRPC example registers its spill-fill buffer unconditionally: 0 bytes where none is needed."""
    model, x, ref = _case(tmp_path, SMALL, "sm8350")
    stdout = _run("qnn_fastrpc_external", pfx, tmp_path, model, x, tmp_path / "o.raw")
    assert "spillfill 0 " in stdout
    assert np.abs(np.fromfile(tmp_path / "o.raw", np.float32) - ref.reshape(-1)).max() < TOL


def test_every_rule_broken_once_from_c(pfx, tmp_path):
    model, x, _ = _case(tmp_path, SPILL, "sm8350")
    stdout = _run("qnn_rules", pfx, tmp_path, model, x)
    for code in (q.QNN_MEM_ERROR_INVALID_SHAPE, q.QNN_MEM_ERROR_INVALID_ARGUMENT, q.QNN_MEM_ERROR_ALREADY_REGISTERED,
                 q.QNN_MEM_ERROR_UNSUPPORTED_MEMTYPE, q.QNN_MEM_ERROR_INVALID_HANDLE, q.QNN_COMMON_ERROR_NOT_SUPPORTED):
        assert f"-> {code}" in stdout
    assert "parallel graphs on one spill-fill" in stdout and "rpcmem misuse" in stdout
    assert re.search(rf"output buffer half mapped +-> {q.QNN_GRAPH_ERROR_INVALID_TENSOR}", stdout)


def _abi(pfx) -> dict[str, int]:
    proc = run_c(_program("qnn_abi", pfx))
    out = {}
    for line in proc.stdout.splitlines():
        kind, name, value = line.split()
        out[f"{kind} {name}"] = int(value)
    return out


def test_abi_matches_the_mirror_and_the_facts(pfx):
    abi = _abi(pfx)
    facts = {"QnnInterface_t": 40 + 8 * 76, "Qnn_MemDescriptor_t": 48, "QnnMemHtp_Descriptor_t": 32,
             "QnnHtpMem_SharedBufferConfig_t": 16, "Qnn_TensorV1_t": 112, "Qnn_Tensor_t": 144,
             "Qnn_QuantizeParams_t": 40, "QnnContext_Config_t": 16, "QnnContext_Property_t": 16}
    for name, size in facts.items():
        assert abi[f"sizeof {name}"] == size, name
    structs = {"Qnn_MemDescriptor_t": q.Qnn_MemDescriptor_t, "QnnMemHtp_Descriptor_t": q.QnnMemHtp_Descriptor_t,
               "QnnHtpMem_SharedBufferConfig_t": q.QnnHtpMem_SharedBufferConfig_t, "Qnn_TensorV1_t": q.Qnn_TensorV1_t,
               "Qnn_TensorV2_t": q.Qnn_TensorV2_t, "Qnn_Tensor_t": q.Qnn_Tensor_t,
               "Qnn_QuantizeParams_t": q.Qnn_QuantizeParams_t, "QnnContext_Config_t": q.QnnContext_Config_t,
               "QnnContext_Property_t": q.QnnContext_Property_t, "Qnn_ApiVersion_t": q.Qnn_ApiVersion_t,
               "QnnHtpContext_CustomConfig_t": q.QnnHtpContext_CustomConfig_t,
               "QnnHtpContext_CustomProperty_t": q.QnnHtpContext_CustomProperty_t,
               "QnnDevice_PlatformInfo_t": q.QnnDevice_PlatformInfo_t,
               "QnnSystemContext_BinaryInfo_t": system.QnnSystemContext_BinaryInfo_t,
               "QnnSystemContext_GraphInfo_t": system.QnnSystemContext_GraphInfo_t,
               "Qnn_Scalar_t": q.Qnn_Scalar_t, "QnnProfile_EventData_t": q.QnnProfile_EventData_t,
               "QnnProfile_ExtendedEventData_t": q.QnnProfile_ExtendedEventData_t,
               "QnnProfile_Config_t": q.QnnProfile_Config_t,
               "QnnHtpPerfInfrastructure_PowerConfig_t": q.QnnHtpPerfInfrastructure_PowerConfig_t,
               "QnnHtpPerfInfrastructure_MemoryConfig_t": q.QnnHtpPerfInfrastructure_MemoryConfig_t,
               "QnnSystemProfile_SerializationTarget_t": system.QnnSystemProfile_SerializationTarget_t,
               "QnnSystemProfile_SerializationTargetConfig_t": system.QnnSystemProfile_SerializationTargetConfig_t,
               "QnnSystemProfile_ProfileEventV1_t": system.QnnSystemProfile_ProfileEventV1_t,
               "QnnSystemProfile_ProfileData_t": system.QnnSystemProfile_ProfileData_t,
               "QnnSystemContext_BinaryInfoV1_t": system.QnnSystemContext_BinaryInfoV1_t,
               "QnnSystemContext_BinaryInfoV2_t": system.QnnSystemContext_BinaryInfoV2_t,
               "QnnSystemContext_BinaryInfoV3_t": system.QnnSystemContext_BinaryInfoV3_t,
               "QnnSystemContext_GraphInfoV1_t": system.QnnSystemContext_GraphInfoV1_t,
               "QnnSystemContext_GraphInfoV2_t": system.QnnSystemContext_GraphInfoV2_t}
    for name, cls in structs.items():
        assert abi[f"sizeof {name}"] == ctypes.sizeof(cls), name
    for key, value in abi.items():
        kind, name = key.split(" ", 1)
        if kind != "offsetof":
            continue
        struct, path = name.split(".", 1)
        if struct in structs:
            assert _offset(structs[struct], path) == value, key
    assert abi["offsetof QnnInterface_t.apiVersion"] == 16
    assert abi["offsetof QnnSystemInterface_t.QNN_SYSTEM_INTERFACE_VER_NAME"] == 32
    assert abi["offsetof QnnHtpDevice_DeviceInfoExtension_t.onChipDevice.arch"] == 24
    assert abi["sizeof QnnHtpDevice_Infrastructure_t"] == 40
    assert abi["offsetof QnnHtpDevice_Infrastructure_t.perfInfra.setPowerConfig"] == 24


def _offset(cls: type, path: str) -> int:
    """offsetof(cls, a.b.c) through ctypes (anonymous unions included)."""
    total = 0
    for part in path.split("."):
        total += getattr(cls, part).offset
        cls = dict(_all_fields(cls))[part]
    return total


def _all_fields(cls: type):
    for name, ftype, *_ in cls._fields_:
        if name in getattr(cls, "_anonymous_", ()):
            yield from _all_fields(ftype)
        else:
            yield name, ftype


def test_the_c_table_implements_exactly_what_the_mirror_emulates():
    from npurt.soc.api_coverage import NOT_EMULATED, QNN_INTERFACE_MEMBERS
    assert [m.name for m in MEMBERS] == list(QNN_INTERFACE_MEMBERS)
    assert {m.name for m in MEMBERS if m.implemented} == {n for n in QNN_INTERFACE_MEMBERS if n not in NOT_EMULATED}


def test_the_header_struct_is_the_one_made_from_the_member_list():
    """QnnInterface.h carries the table struct generated from the member list (one source of truth)."""
    from npurt.capi.qnn_common import QNN_HEADER_DIR
    from npurt.capi.qnnhtp import interface_struct
    assert interface_struct() in (QNN_HEADER_DIR / "QnnInterface.h").read_text()


def test_interface_table_has_the_2_40_slots_in_order(pfx):
    from npurt.soc.api_coverage import QNN_INTERFACE_RESERVED, QNN_INTERFACE_SLOTS
    abi = _abi(pfx)
    members = [(k.split()[1], v) for k, v in abi.items() if k.startswith("member ")]
    assert [name for name, _ in members] == [m.name for m in MEMBERS] + list(QNN_INTERFACE_RESERVED)
    assert len(members) == QNN_INTERFACE_SLOTS == 76
    assert [offset for _, offset in members] == [40 + 8 * i for i in range(76)]
    measured = {"logCreate": 25, "memRegister": 35, "memDeRegister": 36, "deviceCreate": 40, "errorGetMessage": 48,
                "contextGetProperty": 63, "contextFinalize": 66}      # indices seen on the real x86 library
    for name, index in measured.items():
        assert dict(members)[name] == 40 + 8 * index, name


def test_example_builds_and_runs_as_the_docs_say(pfx, tmp_path):
    """examples/c/qnn_shared_buffer.c: `make qnn_shared_buffer PREFIX=...` and a run on an `npurt convert` binary;
    its printed outputs match onnxruntime on the same input."""
    import shutil
    import subprocess
    from helpers.capi import REPO
    shutil.copytree(REPO / "examples" / "c", tmp_path / "c")
    subprocess.run(["make", "-C", str(tmp_path / "c"), f"PREFIX={pfx}", "qnn_shared_buffer"], check=True,
                   capture_output=True)
    model = tmp_path / "model.bin"
    proc = subprocess.run([sys.executable, "-m", "npurt.cli.main", "convert", "small_convnet", "--soc", "sm8550", "-o",
                           str(model)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    out = run_c(tmp_path / "c" / "qnn_shared_buffer", model, env={"LD_LIBRARY_PATH": str(pfx / "lib")}).stdout
    line = [x for x in out.splitlines() if ":" in x][-1]
    y = np.array([float(v) for v in line.split(":")[1].split()], np.float32)
    x = np.sin(0.01 * np.arange(SMALL * SMALL * 3)).astype(np.float32).reshape(1, SMALL, SMALL, 3)
    ref = run_ort(_onnx(SMALL), {"input": np.ascontiguousarray(x.transpose(0, 3, 1, 2))})[0]
    assert np.abs(y - ref.reshape(-1)).max() < 3e-3


def test_release_members_succeed_in_any_order_once_the_process_exits(pfx, tmp_path):
    """A program's own atexit handler (it runs after npurt's) frees the log, backend, context, a memory handle and
    the device in an odd order: each is QNN_SUCCESS and the program exits 0."""
    path, _, _ = _case(tmp_path, SMALL, "sm8350")
    out = _run("qnn_exit_teardown", pfx, tmp_path, path)
    assert "at exit: logFree 0 backendFree 0 contextFree 0 memDeRegister 0 deviceFree 0" in out
