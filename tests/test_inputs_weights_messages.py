"""BOOL inputs are converted (both I/O paths); with RKNN_FLAG_MEM_ALLOC_OUTSIDE every run reads the weight memory
the user bound; internal memory cannot double as the context's I/O; error messages say what is wrong in plain
terms (negative values, huge fds, a bad $NPURT_COHERENCE, an HTP SoC given to an RKNN command)."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from helpers.cli import fails
from npurt.errors import NpuError
from npurt.rknn import *  # noqa: F403
from npurt.rknn.api_memory import mem_view
from helpers.rknn import errline, init, query
from helpers.rknn import general_run
from helpers.models import X_SHAPE, convnet


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    for k in ("NPURT_SOC", "NPURT_COHERENCE", "RKNN_LOG_LEVEL"):
        monkeypatch.delenv(k, raising=False)


def _bool_image() -> np.ndarray:
    return (np.arange(np.prod(X_SHAPE)).reshape(X_SHAPE) % 3 == 0)


def test_bool_inputs_are_the_numbers_zero_and_one_on_both_paths():
    x = _bool_image()
    ctx = init()
    want = general_run(ctx, x.astype(np.float32))
    for fmt, arr in ((RKNN_TENSOR_NCHW, x), (RKNN_TENSOR_NHWC, np.ascontiguousarray(x.transpose(0, 2, 3, 1)))):
        inputs = (rknn_input * 1)()
        inputs[0].index, inputs[0].buf, inputs[0].size = 0, arr.ctypes.data, arr.nbytes
        inputs[0].type, inputs[0].fmt = RKNN_TENSOR_BOOL, fmt
        assert rknn_inputs_set(ctx, 1, inputs) == RKNN_SUCC and rknn_run(ctx, None) == RKNN_SUCC
        outputs = (rknn_output * 1)()
        outputs[0].index, outputs[0].want_float = 0, 1
        assert rknn_outputs_get(ctx, 1, outputs, None) == RKNN_SUCC
        got = np.ctypeslib.as_array((ctypes.c_float * want[0].size).from_address(outputs[0].buf)).copy()
        rknn_outputs_release(ctx, 1, outputs)
        np.testing.assert_array_equal(got, want[0].reshape(-1))
    rknn_destroy(ctx)
    # zero copy: a BOOL/NCHW attr is accepted at bind and converted at run
    ctx = init()
    ia = rknn_tensor_attr(index=0)
    query(ctx, RKNN_QUERY_INPUT_ATTR, ia)
    ia.type, ia.fmt = RKNN_TENSOR_BOOL, RKNN_TENSOR_NCHW
    oa = rknn_tensor_attr(index=0)
    query(ctx, RKNN_QUERY_OUTPUT_ATTR, oa)
    oa.type, oa.fmt = RKNN_TENSOR_FLOAT32, RKNN_TENSOR_NCHW
    imem, omem = rknn_create_mem(ctx, x.nbytes), rknn_create_mem(ctx, want[0].nbytes)
    assert rknn_set_io_mem(ctx, imem, ia) == RKNN_SUCC and rknn_set_io_mem(ctx, omem, oa) == RKNN_SUCC
    mem_view(imem)[:] = x.reshape(-1).view(np.uint8)
    assert rknn_run(ctx, None) == RKNN_SUCC
    np.testing.assert_array_equal(mem_view(omem, np.float32), want[0].reshape(-1))
    rknn_destroy_mem(ctx, imem), rknn_destroy_mem(ctx, omem), rknn_destroy(ctx)


def _outside_context():
    """A MEM_ALLOC_OUTSIDE context with weight, internal and float32 I/O memory bound; (ctx, mems, weight)."""
    ctx = init(flag=RKNN_FLAG_MEM_ALLOC_OUTSIDE)
    ms = rknn_mem_size()
    query(ctx, RKNN_QUERY_MEM_SIZE, ms)
    weight, internal = rknn_create_mem(ctx, ms.total_weight_size), rknn_create_mem(ctx, ms.total_internal_size)
    assert rknn_set_weight_mem(ctx, weight) == RKNN_SUCC and rknn_set_internal_mem(ctx, internal) == RKNN_SUCC
    ia, oa = rknn_tensor_attr(index=0), rknn_tensor_attr(index=0)
    query(ctx, RKNN_QUERY_INPUT_ATTR, ia)
    query(ctx, RKNN_QUERY_OUTPUT_ATTR, oa)
    ia.type, ia.fmt, oa.type, oa.fmt = RKNN_TENSOR_FLOAT32, RKNN_TENSOR_NCHW, RKNN_TENSOR_FLOAT32, RKNN_TENSOR_NCHW
    return ctx, weight, internal, ia, oa


def test_alloc_outside_runs_read_the_weight_memory_the_user_bound():
    ctx, weight, internal, ia, oa = _outside_context()
    imem, omem = rknn_create_mem(ctx, 4 * int(np.prod(X_SHAPE))), rknn_create_mem(ctx, 4 * oa.n_elems)
    assert rknn_set_io_mem(ctx, imem, ia) == RKNN_SUCC and rknn_set_io_mem(ctx, omem, oa) == RKNN_SUCC
    mem_view(imem, np.float32)[:] = 1.0
    assert rknn_run(ctx, None) == RKNN_SUCC
    first = mem_view(omem, np.float32).copy()
    saved = mem_view(weight).copy()
    mem_view(weight)[:] = 0                                   # the user zeroes the weights it owns
    assert rknn_run(ctx, None) == RKNN_SUCC
    assert not np.array_equal(mem_view(omem, np.float32), first)    # the kernels read the zeroed weights
    mem_view(weight)[:] = saved
    assert rknn_run(ctx, None) == RKNN_SUCC
    np.testing.assert_array_equal(mem_view(omem, np.float32), first)
    for m in (imem, omem, weight, internal):
        rknn_destroy_mem(ctx, m)
    rknn_destroy(ctx)


def test_internal_memory_cannot_also_be_the_contexts_input_or_output(capsys):
    ctx, weight, internal, ia, oa = _outside_context()
    ia.size = min(internal.size, 4 * int(np.prod(X_SHAPE)))        # size_with_stride is read-only (checked)
    assert rknn_set_io_mem(ctx, internal, ia) == RKNN_ERR_PARAM_INVALID
    errline(capsys, "internal memory")
    for m in (weight, internal):
        rknn_destroy_mem(ctx, m)
    rknn_destroy(ctx)


def test_messages_show_negative_values_and_huge_fds_plainly(capsys):
    assert rknn_query(-7, RKNN_QUERY_IN_OUT_NUM, rknn_input_output_num(), 8) == RKNN_ERR_CTX_INVALID
    err = errline(capsys, "-0x7")
    assert "0x-" not in err
    ctx = init()
    assert rknn_create_mem_from_fd(ctx, 2 ** 40, 0, 64, 0) is None
    err = errline(capsys, "invalid fd")
    assert "internal error" not in err
    rknn_destroy(ctx)


def test_bad_coherence_environment_is_named(monkeypatch):
    from npurt.memory import open_device
    monkeypatch.setenv("NPURT_COHERENCE", "psychic")
    with pytest.raises(NpuError, match="'psychic' \\(from \\$NPURT_COHERENCE\\)"):
        open_device("rk3566")


def test_an_htp_soc_given_to_an_rknn_command_is_named():
    fails("run", "small_convnet", "--soc", "sm8350", words=("sm8350 is an HTP SoC, not an RKNN target",))
