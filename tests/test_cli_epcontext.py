"""`npurt convert --epcontext CTX.onnx`: onnxruntime's EPContext model over the context binary it writes
(`npurt.qnn.epcontext`), the one way docs/qnn-ort.md makes its model; refused, with nothing written, for an RKNN SoC
or when it would overwrite the binary. The EP running it: tests/test_qnn_ort_ep.py and docs/qnn-ort.md
(tests/test_guides.py)."""
from __future__ import annotations

import onnx
from onnx import helper

import npurt
from npurt.qnn import tensor_specs

from helpers.cli import fails, ok_json


def test_the_epcontext_model_names_the_binary_beside_it(tmp_path):
    (tmp_path / "ctx").mkdir()
    out = ok_json("convert", "small_convnet", "--soc", "sm8550", "--qnn-io-layout", "nchw", "-o", "m.bin",
                  "--epcontext", "ctx/m_ctx.onnx", cwd=tmp_path)
    assert out["epcontext"] == "ctx/m_ctx.onnx"
    model = onnx.load(tmp_path / "ctx" / "m_ctx.onnx")
    onnx.checker.check_model(model)
    (node,) = model.graph.node
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    assert (node.op_type, node.domain) == ("EPContext", "com.microsoft")
    assert attrs["ep_cache_context"] == b"../m.bin" and attrs["embed_mode"] == 0 and attrs["main_context"] == 1
    assert attrs["source"] == b"QNNExecutionProvider"
    ins, outs = tensor_specs(npurt.load_compiled(tmp_path / "m.bin"))
    declared = [[d.dim_value for d in v.type.tensor_type.shape.dim] for v in [*model.graph.input, *model.graph.output]]
    assert declared == [list(s.dims) for s in ins + outs] == [[1, 3, 32, 32], [1, 10]]


def test_an_rknn_soc_or_the_binary_s_own_path_is_refused(tmp_path):
    fails("convert", "small_convnet", "-o", tmp_path / "m.npurt", "--epcontext", tmp_path / "c.onnx",
          words=("--epcontext", "HTP", "rk3588"))
    fails("convert", "small_convnet", "--soc", "sm8550", "-o", tmp_path / "m.bin", "--epcontext", tmp_path / "m.bin",
          words=("--epcontext", "--output"))
    assert not list(tmp_path.iterdir())
