"""The seeds' flows as C programs (tests/c/*.c) against npurt's librknnrt.so: each compiled at test time, run as a
subprocess, its outputs compared with onnxruntime (and, for the general and zero-copy flows, bit for bit with the
Python mirror's general path on the same image)."""
from __future__ import annotations

import numpy as np
import pytest

from helpers.capi import compile_c, prefix, run_c
from helpers.flows import ATOL, classifier_model, frame, general_path, onnx_ref, uint8_model
from helpers.models import convnet

import npurt
from npurt.model import zoo


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict:
    """The demos' models (uint8 input, mean/std fused) as files, their ONNX, and a frame."""
    d = tmp_path_factory.mktemp("capi-models")
    out = {"dir": d}
    (d / "conv.npurt").write_bytes(uint8_model())
    out["conv_onnx"] = convnet()
    (d / "cls.npurt").write_bytes(classifier_model())
    out["cls_onnx"] = zoo.small_convnet(24).SerializeToString()
    return out


def _floats(path) -> np.ndarray:
    return np.fromfile(path, dtype=np.float32)


def test_general_flow_matches_onnxruntime(models, tmp_path):
    img = frame()
    img.tofile(tmp_path / "img.bin")
    proc = run_c(compile_c("general_flow", prefix()), models["dir"] / "conv.npurt", tmp_path / "img.bin",
                 tmp_path / "out.bin")
    assert "OK general_flow" in proc.stdout
    assert "fmt=NCHW" in proc.stdout or "fmt=NHWC" in proc.stdout
    want = onnx_ref(models["conv_onnx"], img).reshape(-1)
    got = _floats(tmp_path / "out.bin")
    np.testing.assert_allclose(got, want, atol=ATOL)
    np.testing.assert_array_equal(got, general_path(uint8_model(), img)[0].reshape(-1))   # the mirror, same calls


@pytest.mark.parametrize("size", [8, 24])
def test_zero_copy_flow_with_padded_rows_matches_onnxruntime(models, tmp_path, size):
    name, onnx_bytes = ("conv.npurt", models["conv_onnx"]) if size == 8 else ("cls.npurt", models["cls_onnx"])
    h, w = (8, 10) if size == 8 else (24, 24)
    img = frame(h, w, seed=size)
    img.tofile(tmp_path / "img.bin")
    proc = run_c(compile_c("zero_copy_flow", prefix()), models["dir"] / name, tmp_path / "img.bin", h, w, 3,
                 tmp_path / "out.bin")
    assert "OK zero_copy_flow" in proc.stdout
    want = onnx_ref(onnx_bytes, img).reshape(-1)
    np.testing.assert_allclose(_floats(tmp_path / "out.bin"), want, atol=ATOL)
    model = uint8_model() if size == 8 else classifier_model()
    np.testing.assert_array_equal(_floats(tmp_path / "out.bin"), general_path(model, img)[0].reshape(-1))


def _check_outputs(outdir, names, want):
    for name in names:
        np.testing.assert_allclose(_floats(outdir / f"{name}.bin"), want, atol=ATOL, err_msg=name)


@pytest.mark.parametrize("coherence", ["coherent", "strict"])
def test_tensor_memory_samples(models, tmp_path, coherence):
    """5.4: create_mem_from_fd on the program's own memfd at an offset, create_mem_from_phys, create_mem2 with
    every flag, mem_sync, destroy_mem — in strict coherence too, where a missed sync would show as stale data."""
    img = frame(24, 24, seed=3)
    img.tofile(tmp_path / "img.bin")
    proc = run_c(compile_c("memory_samples", prefix()), models["dir"] / "cls.npurt", tmp_path / "img.bin", 24, 24,
                 3, tmp_path, env={"NPURT_COHERENCE": coherence})
    assert "OK memory_samples" in proc.stdout
    _check_outputs(tmp_path, ["from_fd", "from_phys", "mem2_default", "mem2_cacheable", "mem2_non_cacheable",
                              "mem2_try_sram", "mem2_no_context"], onnx_ref(models["cls_onnx"], img).reshape(-1))


def test_internal_memory_shared_by_two_contexts(models, tmp_path):
    """4.5: MEM_ALLOC_OUTSIDE, one internal buffer (create_mem_from_fd of one create_mem) set into two contexts,
    weights from create_mem; model A, model B, model A again."""
    from helpers.models import convnet_other
    (tmp_path / "b.npurt").write_bytes(uint8_model(convnet_other()))
    img = frame(seed=5)
    img.tofile(tmp_path / "img.bin")
    proc = run_c(compile_c("internal_reuse", prefix()), models["dir"] / "conv.npurt", tmp_path / "b.npurt",
                 tmp_path / "img.bin", 8, 10, 3, tmp_path)
    assert "OK internal_reuse" in proc.stdout
    want_a = onnx_ref(models["conv_onnx"], img).reshape(-1)
    _check_outputs(tmp_path, ["model_a", "model_a_again"], want_a)
    _check_outputs(tmp_path, ["model_b"], onnx_ref(convnet_other(), img).reshape(-1))


def _mm_dumps(stdout: str) -> dict[str, str]:
    out, name, lines = {}, None, []
    for line in stdout.splitlines():
        if line.startswith("--- mm "):
            name, lines = line[7:], []
        elif line == "--- end":
            out[name] = "\n".join(lines)
            name = None
        elif name is not None:
            lines.append(line)
    return out


def test_sram_chapter_and_debugfs_bitmap(models, tmp_path):
    """ENABLE_SRAM on two contexts: MEM_SIZE total/free SRAM as they are created, TRY_ALLOC_SRAM memory, and the
    `rknpu/mm` bitmap kept current in $NPURT_DEBUGFS_DIR (its used pages = total - free at each moment)."""
    mobilenet = tmp_path / "mnet.onnx"
    mobilenet.write_bytes(zoo.mobilenet_v1(num_classes=10, size=64).SerializeToString())
    proc = run_c(compile_c("sram", prefix()), mobilenet, models["dir"] / "cls.npurt", tmp_path / "debugfs",
                 env={"NPURT_DEBUGFS_DIR": str(tmp_path / "debugfs")})
    values = {}
    for line in proc.stdout.splitlines():
        if "=" in line and not line.startswith(("---", "[", "SRAM")):
            head, *pairs = line.split()
            values[head] = {k: int(v) for k, v in (p.split("=") for p in pairs)}
    total = values["ctx1"]["total_sram"]
    assert total == 956 * 1024
    assert values["ctx1"]["free_sram"] < total                         # the first context took SRAM
    assert values["ctx2"]["free_sram"] <= values["ctx1"]["free_sram"]
    assert values["mem2"]["free_sram"] == values["ctx2"]["free_sram"] - 64 * 1024
    dumps = _mm_dumps(proc.stdout)
    assert dumps["ctx1"].startswith('SRAM bitmap: "*" - used, "." - free (1bit = 4KB)')
    for when, free in (("ctx1", values["ctx1"]["free_sram"]), ("ctx2", values["ctx2"]["free_sram"]),
                       ("mem2", values["mem2"]["free_sram"]), ("end", total)):
        used = sum(row.split("]", 1)[1].count("*") for row in dumps[when].splitlines() if row.startswith("["))
        assert used * 4096 == total - free, when


def test_dynamic_shapes_general_api(tmp_path):
    """rknn_dynshape_inference from C: every shape of INPUT_DYNAMIC_RANGE through set_input_shapes, and the last
    once more through the deprecated rknn_set_input_shape, against onnxruntime."""
    from helpers.models import DYNAMIC_SHAPES, dynamic_convnet, reference
    onnx_bytes = dynamic_convnet()
    (tmp_path / "dyn.onnx").write_bytes(onnx_bytes)
    rng = np.random.default_rng(7)
    inputs = {}
    for s, (shape,) in enumerate(DYNAMIC_SHAPES):
        inputs[s] = rng.standard_normal(shape).astype(np.float32)
        inputs[s].tofile(tmp_path / f"in_{s}.bin")
    proc = run_c(compile_c("dynamic_shapes", prefix()), tmp_path / "dyn.onnx", tmp_path, tmp_path)
    assert "OK dynamic_shapes" in proc.stdout
    for s, x in inputs.items():
        np.testing.assert_allclose(_floats(tmp_path / f"shapes_{s}.bin"), reference(onnx_bytes, x)[0].reshape(-1),
                                   atol=ATOL, err_msg=f"shape {s}")
    last = len(DYNAMIC_SHAPES) - 1
    np.testing.assert_array_equal(_floats(tmp_path / f"shape_{last}.bin"), _floats(tmp_path / f"shapes_{last}.bin"))


def test_matmul_float16_and_int8_against_a_c_reference():
    proc = run_c(compile_c("matmul", prefix()))
    assert "OK matmul" in proc.stdout and "int8 wrong=0" in proc.stdout
    assert "int8 A=INT8 B=INT8 C=INT32" in proc.stdout


def test_custom_op_init_returning_skip_keeps_the_builtin(tmp_path):
    """An op registered over the model's built-in Sigmoid whose init returns RKNN_WARNING_SKIP_CUSTOM_OP_COMPUTE:
    the built-in computes, the op's compute is never called."""
    from helpers.custom_op import SHAPE, model, reference
    (tmp_path / "sig.onnx").write_bytes(model("Sigmoid", domain=""))
    x = np.random.default_rng(12).standard_normal(SHAPE).astype(np.float32)
    x.tofile(tmp_path / "x.bin")
    proc = run_c(compile_c("custom_op", prefix(), flags=("-lm",)), tmp_path / "sig.onnx", tmp_path / "x.bin",
                 tmp_path / "y.bin", "skip")
    assert "skip init" in proc.stdout and "compute called" not in proc.stdout and "OK custom_op" in proc.stdout
    np.testing.assert_allclose(_floats(tmp_path / "y.bin"), reference(x).reshape(-1), atol=ATOL)


@pytest.mark.parametrize("source", ["register", "plugin"])
def test_custom_cpu_op_from_c_callbacks_and_from_a_plugin(tmp_path, source):
    """cstSigmoid computed by C: init reads the node's attrs with rknn_custom_op_get_op_attr, compute writes the
    output's device memory, destroy runs at rknn_destroy; from rknn_register_custom_ops or from librkcst_*.so."""
    import shutil
    from helpers.custom_op import SHAPE, model, reference
    (tmp_path / "cst.onnx").write_bytes(model())
    x = np.random.default_rng(11).standard_normal(SHAPE).astype(np.float32)
    x.tofile(tmp_path / "x.bin")
    env = {}
    if source == "plugin":
        plugins = tmp_path / "plugins"
        plugins.mkdir()
        shutil.copyfile(compile_c("custom_plugin", prefix(), shared=True, flags=("-lm",)),
                        plugins / "librkcst_sigmoid.so")
        env["NPURT_RKNN_OP_PLUGIN_DIR"] = str(plugins)
    proc = run_c(compile_c("custom_op", prefix(), flags=("-lm",)), tmp_path / "cst.onnx", tmp_path / "x.bin",
                 tmp_path / "y.bin", source, env=env)
    assert "OK custom_op" in proc.stdout
    assert "init inputs=1 outputs=1 alpha=2 mode=fast" in proc.stdout
    assert "destroy computes=2" in proc.stdout
    np.testing.assert_allclose(_floats(tmp_path / "y.bin"), reference(x).reshape(-1), atol=ATOL)


@pytest.mark.parametrize("precision", ["int8", "fp16"])
def test_custom_cpu_op_demo_callback_that_ignores_the_type(tmp_path, precision):
    """rknn_custom_cpu_op_demo's way from C: a compute that reads and writes float32 over the input's dims without
    looking at attr.type, on an int8 model (the demo's, built with do_quantization=True) and an fp16 one; the tensors
    are FLOAT32 of n_elems * 4 bytes, and the output is read as the demo reads it (int8 when quantised)."""
    from helpers.custom_op import SHAPE, compiled, reference
    cm = compiled(precision)
    (tmp_path / "cst.npurt").write_bytes(cm.to_bytes())
    x = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)   # calibration sample 0: in range
    x.tofile(tmp_path / "x.bin")
    proc = run_c(compile_c("custom_op", prefix(), flags=("-lm",)), tmp_path / "cst.npurt", tmp_path / "x.bin",
                 tmp_path / "y.bin", "demo")
    assert "OK custom_op" in proc.stdout
    for kind in ("in", "out"):
        assert f"demo {kind} type=FP32 qnt=0 n_elems=48 size=192 size_with_stride=192 fmt=NCHW mem.size=192" \
            in proc.stdout, proc.stdout
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("output want_float="))
    fields = dict(kv.split("=") for kv in line.split()[1:])
    want = reference(x).reshape(-1)
    if precision == "int8":
        assert fields["want_float"] == "0" and fields["qnt"] != "0"
        q = np.fromfile(tmp_path / "y.bin", dtype=np.int8)
        y = (q.astype(np.float32) - int(fields["zp"])) * np.float32(fields["scale"])
        assert np.abs(y - want).max() < 0.05 * np.abs(want).max()          # int8 accuracy
    else:
        assert fields["want_float"] == "1"
        np.testing.assert_allclose(_floats(tmp_path / "y.bin"), want, atol=ATOL)
