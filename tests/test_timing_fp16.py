"""The fp16 rows of rknn_model_zoo's table the timing model is checked on: CLIP ViT-B/32's text and image encoders
(`npurt.model.zoo_published.clip_text` / `clip_images`, the clip and yolo_world demos) are in the validation split,
have the published structure, and are compiled and predicted in fp16."""
from __future__ import annotations

import numpy as np

import npurt
from npurt.model import zoo_published
from npurt.timing import predict, rows


def _params(model) -> int:
    """Learned parameters: the initializers less the graph's constants (shapes, indices, scales, the causal mask)."""
    consts = ("shape", "idx", "scale", "qg", "mask")
    return sum(int(np.prod(i.dims)) for i in model.graph.initializer if not i.name.startswith(consts))


def _block(width: int) -> int:
    """One CLIP block's parameters: q, k, v, out projections and the 4x MLP with biases, two LayerNorms."""
    return 4 * (width * width + width) + (width * 4 * width + 4 * width) + (4 * width * width + width) + 4 * width


def test_fp16_rows_are_validation_rows_of_both_clip_demos():
    _, val, _ = rows.split()
    fp16 = [p for p in val if p.dtype == "fp16"]
    assert {p.model for p in fp16} == {"clip_text", "clip_images"}
    assert {p.demo for p in fp16 if p.model == "clip_text"} == {"clip", "yolo_world"}
    assert {p.soc for p in fp16} == {"rk3562", "rk3568", "rk3576", "rk3588"}
    assert all(p.row().dtype == "fp16" for p in fp16)


def test_clip_builders_have_the_published_structure():
    """Small variants built here (seconds); the full sizes' parameter counts follow from the same formula:
    63.4 M (text, with its 49408 x 512 token table) and 87.8 M (images)."""
    text = zoo_published.clip_text(layers=2, vocab=1000)
    assert [d.dim_value for d in text.graph.input[0].type.tensor_type.shape.dim] == [1, 20]
    assert text.graph.input[0].type.tensor_type.elem_type == 7                     # int64 token ids
    assert _params(text) == 1000 * 512 + 20 * 512 + 2 * _block(512) + 2 * 512 + 512 * 512
    images = zoo_published.clip_images(layers=2)
    assert _params(images) == 3 * 32 * 32 * 768 + 768 + 50 * 768 + 2 * 768 + 2 * _block(768) + 768 * 512
    full_text = 49408 * 512 + 20 * 512 + 12 * _block(512) + 2 * 512 + 512 * 512
    full_images = 3 * 32 * 32 * 768 + 768 + 50 * 768 + 2 * 768 + 12 * _block(768) + 768 * 512
    assert abs(full_text - 63.4e6) < 0.1e6 and abs(full_images - 87.8e6) < 0.1e6
    for model in (text, images):
        assert {n.op_type for n in model.graph.node} >= {"LayerNormalization", "MatMul", "Softmax", "Sigmoid"}


def test_clip_is_compiled_and_predicted_in_fp16():
    compiled = npurt.compile(zoo_published.clip_text(layers=1, vocab=1000), soc="rk3588", progress=False)
    p = predict(compiled, "rk3588")
    assert p.precision == "fp16" and p.macs > 0
    mm = [layer for layer in p.layers if layer.op == "MatMul" and layer.macs]
    assert mm and all(layer.dtype == "float16" and layer.target == "NPU" for layer in mm)
