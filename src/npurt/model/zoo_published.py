"""Published architectures at their real input sizes, with random weights: the models of the timing model's
calibration and validation rows (rknn_model_zoo's benchmark table). Timing depends on structure, not weights.

- `resnet50_v2`: ResNet50-v2 as in the ONNX model zoo's resnet50-v2-7 (pre-activation bottlenecks [3, 4, 6, 3],
  BatchNormalization + Relu before each conv, 1x1 projection shortcuts, 224x224).
- `yolov5`: YOLOv5 v6+ (6x6 stem, C3 blocks, SPPF, PANet) with rknn_model_zoo's head: the three 1x1 detect convs
  are the outputs ([1, 255, 80, 80], ...), the decode moved to post-processing. `width`/`depth` give n/s/m.
- `yolov8`: YOLOv8 (C2f blocks, SPPF, PANet) with rknn_model_zoo's head: per level the box conv [1, 64, h, w],
  the class conv + Sigmoid [1, 80, h, w] and their ReduceSum + Clip [1, 1, h, w]; DFL moved to post-processing.
- `clip_text` / `clip_images`: OpenAI CLIP ViT-B/32's text encoder (20 tokens, width 512, 8 heads, 12 layers, causal
  mask, the EOT token's feature projected to 512) and image encoder (224x224, 32x32 patches, width 768, 12 heads,
  12 layers, the class token projected to 512): pre-LN blocks with LayerNormalization and QuickGELU
  (x * sigmoid(1.702 x)), as rknn_model_zoo's clip demo (fp16) runs them; 63 M and 88 M parameters.
MobileNetV2 (mobilenetv2-12) is `npurt.model.zoo.mobilenet_v2_like`.
"""
from __future__ import annotations

import math

import numpy as np
import onnx

from npurt.model.zoo import _Graph


def _ch(c: float, width: float, max_channels: int = 1024) -> int:
    return int(math.ceil(min(c, max_channels) * width / 8) * 8)


def _n(n: int, depth: float) -> int:
    return max(round(n * depth), 1) if n > 1 else n


def resnet50_v2(size: int = 224, num_classes: int = 1000, seed: int = 0) -> onnx.ModelProto:
    """ResNet50-v2 (pre-activation), as resnet50-v2-7 of the ONNX model zoo."""
    g = _Graph(seed)

    def bn_relu(x, c):
        return g.node("Relu", [g.bn(x, c)])

    x = g.bn("data", 3)
    x = g.conv(x, 3, 64, 7, 2, bias=False)
    x = g.node("MaxPool", [bn_relu(x, 64)], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, (blocks, width) in enumerate(((3, 64), (4, 128), (6, 256), (3, 512))):
        cout = width * 4
        for b in range(blocks):
            stride = 2 if (b == 0 and stage > 0) else 1
            pre = bn_relu(x, cin)
            short = g.conv(pre, cin, cout, 1, stride, bias=False, gain=1.0) if (cin != cout or stride > 1) else x
            y = g.conv(pre, cin, width, 1, bias=False)
            y = g.conv(bn_relu(y, width), width, width, 3, stride, bias=False)
            y = g.conv(bn_relu(y, width), width, cout, 1, bias=False, gain=1.0)
            x = g.node("Add", [y, short])
            cin = cout
    x = g.node("Flatten", [g.node("GlobalAveragePool", [bn_relu(x, cin)])], axis=1)
    w = g.const(g.rng.normal(0, np.sqrt(1 / cin), (num_classes, cin)).astype(np.float32))
    y = g.node("Gemm", [x, w, g.const(np.zeros(num_classes, np.float32), "b")], "resnetv24_dense0_fwd", transB=1)
    return g.model([("data", [1, 3, size, size])], [(y, [1, num_classes])], "resnet50_v2")


def _cv(g: _Graph, act: str):
    def cv(x, cin, cout, k=1, s=1):
        y = g.conv(x, cin, cout, k, s, gain=2.0, pad=(k - 1) // 2)
        return g.silu(y) if act == "silu" else g.node("Relu", [y])
    return cv


def _sppf(g: _Graph, cv, x, cin, cout):
    c = cin // 2
    ys = [cv(x, cin, c)]
    for _ in range(3):
        ys.append(g.node("MaxPool", [ys[-1]], kernel_shape=[5, 5], strides=[1, 1], pads=[2, 2, 2, 2]))
    return cv(g.node("Concat", ys, axis=1), 4 * c, cout)


def _up(g: _Graph, x):
    if not hasattr(g, "_scales"):
        g._scales = g.const(np.array([1, 1, 2, 2], np.float32), "scales")
    return g.node("Resize", [x, "", g._scales], mode="nearest")


def yolov5(size: int = 640, width: float = 0.5, depth: float = 0.33, num_classes: int = 80, act: str = "silu",
           seed: int = 0, seg: bool = False) -> onnx.ModelProto:
    """YOLOv5 (v6+) with rknn_model_zoo's head; width/depth 0.25/0.33 = n, 0.5/0.33 = s, 0.75/0.67 = m. `seg`: the
    YOLOv5-seg head as the zoo exports it (per level the detect conv and the 3 x 32 mask-coefficient conv, then the
    mask prototypes [1, 32, 160, 160])."""
    g = _Graph(seed)
    cv = _cv(g, act)

    def c3(x, cin, cout, n, shortcut=True):
        c = cout // 2
        a, b = cv(x, cin, c), cv(x, cin, c)
        for _ in range(n):
            y = cv(cv(a, c, c), c, c, 3)
            a = g.node("Add", [a, y]) if shortcut else y
        return cv(g.node("Concat", [a, b], axis=1), 2 * c, cout)

    c = [_ch(v, width) for v in (64, 128, 256, 512, 1024)]
    x = cv("images", 3, c[0], 6, 2)
    x = c3(cv(x, c[0], c[1], 3, 2), c[1], c[1], _n(3, depth))
    p3 = c3(cv(x, c[1], c[2], 3, 2), c[2], c[2], _n(6, depth))
    p4 = c3(cv(p3, c[2], c[3], 3, 2), c[3], c[3], _n(9, depth))
    x = c3(cv(p4, c[3], c[4], 3, 2), c[4], c[4], _n(3, depth))
    x = _sppf(g, cv, x, c[4], c[4])
    h10 = cv(x, c[4], c[3])
    x = c3(g.node("Concat", [_up(g, h10), p4], axis=1), 2 * c[3], c[3], _n(3, depth), False)
    h14 = cv(x, c[3], c[2])
    o3 = c3(g.node("Concat", [_up(g, h14), p3], axis=1), 2 * c[2], c[2], _n(3, depth), False)
    o4 = c3(g.node("Concat", [cv(o3, c[2], c[2], 3, 2), h14], axis=1), 2 * c[2], c[3], _n(3, depth), False)
    o5 = c3(g.node("Concat", [cv(o4, c[3], c[3], 3, 2), h10], axis=1), 2 * c[3], c[4], _n(3, depth), False)
    no, nm = 3 * (5 + num_classes), 32
    outs = []
    for i, (feat, ch, stride) in enumerate(((o3, c[2], 8), (o4, c[3], 16), (o5, c[4], 32))):
        h = size // stride
        outs.append((g.conv(feat, ch, no, 1, gain=1.0, out=f"output{i}"), [1, no, h, h]))
        if seg:
            outs.append((g.conv(feat, ch, 3 * nm, 1, gain=1.0, out=f"mask{i}"), [1, 3 * nm, h, h]))
    if seg:                                 # Proto: conv 3x3, nearest x2, conv 3x3, conv 1x1 to 32 prototypes
        npr = _ch(256, width)
        p = cv(_up(g, cv(o3, c[2], npr, 3)), npr, npr, 3)
        outs.append((cv(p, npr, nm), [1, nm, size // 4, size // 4]))
    return g.model([("images", [1, 3, size, size])], outs, "yolov5")


def yolov8(size: int = 640, width: float = 0.25, depth: float = 0.33, max_channels: int = 1024,
           num_classes: int = 80, seed: int = 0, seg: bool = False) -> onnx.ModelProto:
    """YOLOv8 with rknn_model_zoo's head; width/depth/max_channels 0.25/0.33/1024 = n, 0.5/0.33/1024 = s. `seg`: the
    YOLOv8-seg head as the zoo exports it (per level a fourth output, the 32 mask coefficients, then the mask
    prototypes [1, 32, 160, 160] from a 2x2 stride-2 ConvTranspose)."""
    g = _Graph(seed)
    cv = _cv(g, "silu")

    def c2f(x, cin, cout, n, shortcut):
        c = cout // 2
        ys = list(g.node("Split", [cv(x, cin, 2 * c), g.const(np.array([c, c], np.int64), "split")], n_out=2,
                         axis=1))
        for _ in range(n):
            b = cv(cv(ys[-1], c, c, 3), c, c, 3)
            ys.append(g.node("Add", [ys[-1], b]) if shortcut else b)
        return cv(g.node("Concat", ys, axis=1), (2 + n) * c, cout)

    c = [_ch(v, width, max_channels) for v in (64, 128, 256, 512, 1024)]
    x = cv(cv("images", 3, c[0], 3, 2), c[0], c[1], 3, 2)
    x = c2f(x, c[1], c[1], _n(3, depth), True)
    p3 = c2f(cv(x, c[1], c[2], 3, 2), c[2], c[2], _n(6, depth), True)
    p4 = c2f(cv(p3, c[2], c[3], 3, 2), c[3], c[3], _n(6, depth), True)
    x = c2f(cv(p4, c[3], c[4], 3, 2), c[4], c[4], _n(3, depth), True)
    p5 = _sppf(g, cv, x, c[4], c[4])
    h4 = c2f(g.node("Concat", [_up(g, p5), p4], axis=1), c[4] + c[3], c[3], _n(3, depth), False)
    o3 = c2f(g.node("Concat", [_up(g, h4), p3], axis=1), c[3] + c[2], c[2], _n(3, depth), False)
    o4 = c2f(g.node("Concat", [cv(o3, c[2], c[2], 3, 2), h4], axis=1), c[2] + c[3], c[3], _n(3, depth), False)
    o5 = c2f(g.node("Concat", [cv(o4, c[3], c[3], 3, 2), p5], axis=1), c[3] + c[4], c[4], _n(3, depth), False)
    reg, nc = 16, num_classes
    c2, c3 = max(16, c[2] // 4, reg * 4), max(c[2], min(nc, 100))
    zero, one = g.const(np.array(0.0, np.float32), "zero"), g.const(np.array(1.0, np.float32), "one")
    axes = g.const(np.array([1], np.int64), "axes")
    outs = []
    for i, (feat, ch, stride) in enumerate(((o3, c[2], 8), (o4, c[3], 16), (o5, c[4], 32))):
        h = size // stride
        box = g.conv(cv(cv(feat, ch, c2, 3), c2, c2, 3), c2, 4 * reg, 1, gain=1.0, out=f"box{i}")
        cls = g.node("Sigmoid", [g.conv(cv(cv(feat, ch, c3, 3), c3, c3, 3), c3, nc, 1, gain=1.0)], f"score{i}")
        total = g.node("Clip", [g.node("ReduceSum", [cls, axes], keepdims=1), zero, one], f"score_sum{i}")
        outs += [(box, [1, 4 * reg, h, h]), (cls, [1, nc, h, h]), (total, [1, 1, h, h])]
        if seg:
            nm = 32
            c4 = max(c[2] // 4, nm)
            outs.append((g.conv(cv(cv(feat, ch, c4, 3), c4, c4, 3), c4, nm, 1, gain=1.0, out=f"mask{i}"),
                         [1, nm, h, h]))
    if seg:                                 # Proto: conv 3x3, ConvTranspose 2x2 s2, conv 3x3, conv 1x1 to 32
        npr = _ch(256, width, max_channels)
        p = cv(o3, c[2], npr, 3)
        w = g.const(g.rng.normal(0, np.sqrt(1.0 / (npr * 4)), (npr, npr, 2, 2)).astype(np.float32))
        p = g.node("ConvTranspose", [p, w, g.const(np.zeros(npr, np.float32), "b")], kernel_shape=[2, 2],
                   strides=[2, 2])
        outs.append((cv(cv(p, npr, npr, 3), npr, 32), [1, 32, size // 4, size // 4]))
    return g.model([("images", [1, 3, size, size])], outs, "yolov8")


# The named variants of rknn_model_zoo's table (`npurt.model.sources.ZOO` names).
def yolov5s() -> onnx.ModelProto:
    return yolov5(width=0.5, depth=0.33)


def yolov5n() -> onnx.ModelProto:
    return yolov5(width=0.25, depth=0.33)


def yolov5s_relu() -> onnx.ModelProto:
    return yolov5(width=0.5, depth=0.33, act="relu")


def yolov8n() -> onnx.ModelProto:
    return yolov8(width=0.25, depth=0.33)


def yolov8s() -> onnx.ModelProto:
    return yolov8(width=0.5, depth=0.33)



def yolov5m() -> onnx.ModelProto:
    return yolov5(width=0.75, depth=0.67)


def yolov8m() -> onnx.ModelProto:
    return yolov8(width=0.75, depth=0.67, max_channels=768)


def yolov5n_seg() -> onnx.ModelProto:
    return yolov5(width=0.25, depth=0.33, seg=True)


def yolov5s_seg() -> onnx.ModelProto:
    return yolov5(width=0.5, depth=0.33, seg=True)


def yolov5m_seg() -> onnx.ModelProto:
    return yolov5(width=0.75, depth=0.67, seg=True)


def yolov8n_seg() -> onnx.ModelProto:
    return yolov8(width=0.25, depth=0.33, seg=True)


def yolov8s_seg() -> onnx.ModelProto:
    return yolov8(width=0.5, depth=0.33, seg=True)


def yolov8m_seg() -> onnx.ModelProto:
    return yolov8(width=0.75, depth=0.67, max_channels=768, seg=True)


def _clip_blocks(g: _Graph, x: str, seq: int, width: int, heads: int, layers: int, causal: bool) -> str:
    """CLIP's residual attention blocks: x + attn(ln_1(x)), x + mlp(ln_2(x)), QuickGELU in the MLP."""
    hd = width // heads

    def linear(y, din, dout, bias=True):
        w = g.const(g.rng.normal(0, np.sqrt(1 / din), (din, dout)).astype(np.float32))
        y = g.node("MatMul", [y, w])
        return g.node("Add", [y, g.const(np.zeros(dout, np.float32), "b")]) if bias else y

    def ln(y):
        return g.node("LayerNormalization", [y, g.const(np.ones(width, np.float32), "ln"),
                                             g.const(np.zeros(width, np.float32), "ln")], axis=-1, epsilon=1e-5)

    def heads_of(y, perm):
        r = g.node("Reshape", [y, g.const(np.array([1, seq, heads, hd], np.int64), "shape")])
        return g.node("Transpose", [r], perm=perm)

    mask = g.const(np.triu(np.full((seq, seq), -1e4, np.float32), 1)[None, None], "mask") if causal else None
    scale = g.const(np.array(1 / np.sqrt(hd), np.float32), "scale")
    for _ in range(layers):
        h = ln(x)
        q, k, v = (heads_of(linear(h, width, width), p) for p in ([0, 2, 1, 3], [0, 2, 3, 1], [0, 2, 1, 3]))
        att = g.node("Mul", [g.node("MatMul", [q, k]), scale])
        att = g.node("Softmax", [g.node("Add", [att, mask]) if causal else att], axis=-1)
        o = g.node("Transpose", [g.node("MatMul", [att, v])], perm=[0, 2, 1, 3])
        o = g.node("Reshape", [o, g.const(np.array([1, seq, width], np.int64), "shape")])
        x = g.node("Add", [x, linear(o, width, width)])
        m = linear(ln(x), width, 4 * width)
        m = g.node("Mul", [m, g.node("Sigmoid", [g.node("Mul", [m, g.const(np.array(1.702, np.float32), "qg")])])])
        x = g.node("Add", [x, linear(m, 4 * width, width)])
    return x


def _take(g: _Graph, x: str, index: int, width: int) -> str:
    """Token `index` of [1, seq, width] as [1, width] (the pooled feature)."""
    return g.node("Gather", [x, g.const(np.array(index, np.int64), "idx")], axis=1)


def clip_text(tokens: int = 20, width: int = 512, heads: int = 8, layers: int = 12, vocab: int = 49408,
              seed: int = 0) -> onnx.ModelProto:
    """CLIP ViT-B/32's text encoder: token and position embeddings, 12 causal blocks, ln_final, the last (EOT)
    token's feature projected to 512. Input: int64 token ids [1, tokens]."""
    g = _Graph(seed)
    table = g.const(g.rng.normal(0, 0.02, (vocab, width)).astype(np.float32), "token_embedding")
    x = g.node("Gather", [table, "input_ids"], axis=0)
    x = g.node("Add", [x, g.const(g.rng.normal(0, 0.01, (1, tokens, width)).astype(np.float32), "pos")])
    x = _clip_blocks(g, x, tokens, width, heads, layers, causal=True)
    x = g.node("LayerNormalization", [x, g.const(np.ones(width, np.float32), "ln"),
                                      g.const(np.zeros(width, np.float32), "ln")], axis=-1, epsilon=1e-5)
    w = g.const(g.rng.normal(0, np.sqrt(1 / width), (width, 512)).astype(np.float32), "proj")
    y = g.node("MatMul", [_take(g, x, tokens - 1, width), w], "text_embeds")
    m = g.model([("input_ids", [1, tokens])], [(y, [1, 512])], "clip_text")
    m.graph.input[0].type.tensor_type.elem_type = onnx.TensorProto.INT64
    onnx.checker.check_model(m)
    return m


def clip_images(size: int = 224, patch: int = 32, width: int = 768, heads: int = 12, layers: int = 12,
                seed: int = 0) -> onnx.ModelProto:
    """CLIP ViT-B/32's image encoder: the patch conv, class token and position embeddings, ln_pre, 12 blocks,
    the class token's feature (ln_post) projected to 512."""
    g = _Graph(seed)
    n = (size // patch) ** 2
    x = g.conv("pixel_values", 3, width, patch, patch, bias=False, pad=0)
    x = g.node("Transpose", [g.node("Reshape", [x, g.const(np.array([1, width, n], np.int64), "shape")])],
               perm=[0, 2, 1])
    cls = g.const(g.rng.normal(0, 0.02, (1, 1, width)).astype(np.float32), "class_embedding")
    x = g.node("Concat", [cls, x], axis=1)
    x = g.node("Add", [x, g.const(g.rng.normal(0, 0.01, (1, n + 1, width)).astype(np.float32), "pos")])
    ln_w = (g.const(np.ones(width, np.float32), "ln"), g.const(np.zeros(width, np.float32), "ln"))
    x = g.node("LayerNormalization", [x, *ln_w], axis=-1, epsilon=1e-5)
    x = _clip_blocks(g, x, n + 1, width, heads, layers, causal=False)
    x = g.node("LayerNormalization", [_take(g, x, 0, width), *ln_w], axis=-1, epsilon=1e-5)
    w = g.const(g.rng.normal(0, np.sqrt(1 / width), (width, 512)).astype(np.float32), "proj")
    y = g.node("MatMul", [x, w], "image_embeds")
    return g.model([("pixel_values", [1, 3, size, size])], [(y, [1, 512])], "clip_images")
