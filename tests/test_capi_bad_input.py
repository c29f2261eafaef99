"""Bad input from C (tests/c/bad_input.c): every wrong call returns the vendor's status or NULL with an
`E RKNN:` line, nothing crashes, the structs given stay untouched and the context still runs afterwards."""
from __future__ import annotations

import numpy as np

from helpers.capi import compile_c, prefix, run_c
from helpers.models import convnet

PARAM, MODEL, CTX, FAIL = -5, -6, -7, -1
EXPECTED = {
    "init_null_ctx": PARAM, "init_missing_file": MODEL, "init_vendor_rknn": MODEL, "init_wild_model": PARAM,
    "init_wild_path": PARAM, "init_garbage": MODEL, "init_wild_extend": PARAM,
    "query_bad_ctx": CTX, "query_null_info": PARAM, "query_wild_info": PARAM, "query_short": PARAM,
    "query_bad_cmd": PARAM, "query_bad_index": PARAM,
    "destroy_mem_forged": PARAM, "destroy_mem_null": PARAM, "destroy_mem_wild": PARAM, "destroy_mem_twice": PARAM,
    "create_mem_zero": "NULL", "create_mem_bad_ctx": "NULL", "create_mem2_bad_flags": "NULL",
    "from_fd_bad_fd": "NULL", "from_phys_unknown": "NULL",
    "mem_sync_bad_mode": PARAM, "mem_sync_forged": PARAM,
    "set_io_mem_null_attr": PARAM, "set_io_mem_wild_attr": PARAM, "set_io_mem_small_mem": PARAM,
    "set_weight_mem_no_flag": PARAM,
    "inputs_set_null": PARAM, "inputs_set_wild_array": PARAM, "inputs_set_wild_buf": PARAM,
    "inputs_set_overrun": PARAM, "outputs_release_foreign": PARAM,
    "run_bad_ctx": CTX, "run_wild_extend": PARAM, "wait": FAIL, "core_mask_bad": PARAM,
    "dup_null": CTX, "dup_wild_out": PARAM, "set_input_shapes_static": MODEL,
    "register_custom_null": PARAM, "register_custom_wild": PARAM, "get_op_attr_untouched": 1,
    "matmul_null_info": PARAM, "matmul_run_bad_ctx": CTX, "destroy_bad_ctx": CTX,
}


def test_every_documented_error_from_c(tmp_path):
    (tmp_path / "conv.onnx").write_bytes(convnet())
    (tmp_path / "vendor.rknn").write_bytes(b"RKNN" + bytes(252))        # the vendor toolkit's file magic
    np.zeros((1, 3, 8, 10), np.float32).tofile(tmp_path / "x.bin")
    proc = run_c(compile_c("bad_input", prefix()), tmp_path / "conv.onnx", tmp_path / "vendor.rknn",
                 tmp_path / "x.bin")
    assert "OK bad_input" in proc.stdout
    got = {}
    for line in proc.stdout.splitlines()[:-1]:
        name, value = line.split()
        got[name] = value if value in ("NULL", "not-NULL") else int(value)
    assert got == EXPECTED
    errors = [line for line in proc.stderr.splitlines() if line.startswith("E RKNN:")]
    assert len(errors) >= len(EXPECTED) - 1                      # one line per failed call, at least
    assert "internal error" not in proc.stderr
    assert any("vendor-compiled .rknn" in line and "npurt convert" in line for line in errors)
    assert any("attr 0x10 (+376) is not readable memory" in line for line in errors)


def test_errors_are_silent_at_log_level_0(tmp_path):
    (tmp_path / "conv.onnx").write_bytes(convnet())
    (tmp_path / "vendor.rknn").write_bytes(b"RKNN" + bytes(252))
    np.zeros((1, 3, 8, 10), np.float32).tofile(tmp_path / "x.bin")
    proc = run_c(compile_c("bad_input", prefix()), tmp_path / "conv.onnx", tmp_path / "vendor.rknn",
                 tmp_path / "x.bin", env={"RKNN_LOG_LEVEL": "0"})
    assert "OK bad_input" in proc.stdout and "E RKNN" not in proc.stderr
