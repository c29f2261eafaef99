"""A zoo of deterministic test models built with `onnx.helper`.

Every generator returns an `onnx.ModelProto` (opset 17 unless noted) that passes `onnx.checker`
and runs in onnxruntime. Weights come from `np.random.default_rng(seed)` with scales chosen so
activations neither vanish nor saturate: conv std sqrt(k/fan_in), BatchNorm scale 0.3-0.6, small
biases. `save_cached` / `cached` keep serialised models under `.cache/models/` (or `$NPURT_CACHE`).

- `mobilenet_v1`: the MobileNet v1 of the RKNN SRAM seed's memory table (27 ConvRelu, a 7x7
  AveragePool, a 1x1 Conv classifier and Softmax on (1, 1000, 1, 1); tensor names follow the
  table: input0, output1 ... output57).
- `mobilenet_v2_like`, `resnet_small`, `small_convnet`, `yolo_head`, `yolov8n_like`, `transformer_block`.
- `outlier_convnet`: three convolutions whose first layer has one outlier channel (rare, huge activations that the
  next layer weighs down): the int8 accuracy case of `docs/quantization.md`.
- `light_model(name)`: the 9 "light" real architectures shipped in the onnx wheel, with their
  ConstantOfShape weights replaced by random initializers.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
LIGHT_MODELS = (
    "bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
    "shufflenet", "squeezenet", "vgg19", "zfnet512",
)


class _Graph:
    """A tiny graph builder: nodes, initializers and unique names, with a seeded rng."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.n = 0

    def name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}_{self.n}"

    def const(self, arr: np.ndarray, prefix: str = "w") -> str:
        name = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(self, op: str, inputs: list[str], out: str | None = None, n_out: int = 1, **attrs) -> Any:
        outs = [out] if out else [self.name(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=self.name(op), **attrs))
        return outs[0] if n_out == 1 else outs

    # --- layers -----------------------------------------------------------------------------
    def conv(self, x: str, cin: int, cout: int, k: int = 3, stride: int = 1, group: int = 1,
             gain: float = 2.0, bias: bool = True, out: str | None = None, pad: int | None = None) -> str:
        fan_in = cin // group * k * k
        w = self.rng.normal(0, np.sqrt(gain / fan_in), (cout, cin // group, k, k)).astype(np.float32)
        inputs = [x, self.const(w)]
        if bias:
            inputs.append(self.const(self.rng.normal(0, 0.02, cout).astype(np.float32), "b"))
        p = k // 2 if pad is None else pad
        return self.node("Conv", inputs, out, kernel_shape=[k, k], strides=[stride, stride],
                         pads=[p] * 4, group=group)

    def bn(self, x: str, c: int) -> str:
        r = self.rng
        params = [r.uniform(0.3, 0.6, c), r.normal(0, 0.05, c), r.normal(0, 0.05, c), r.uniform(0.5, 1.5, c)]
        names = [self.const(p.astype(np.float32), "bn") for p in params]
        return self.node("BatchNormalization", [x] + names, epsilon=1e-5)

    def clip6(self, x: str) -> str:
        if not hasattr(self, "_c6"):
            self._c6 = (self.const(np.array(0.0, np.float32), "zero"), self.const(np.array(6.0, np.float32), "six"))
        return self.node("Clip", [x, *self._c6])

    def silu(self, x: str) -> str:
        return self.node("Mul", [x, self.node("Sigmoid", [x])])

    def model(self, inputs: list[tuple[str, list[int]]], outputs: list[tuple[str, list[int] | None]],
              name: str, opset: int = OPSET) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
            self.inits,
        )
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="npurt.zoo")
        m.ir_version = 8
        onnx.checker.check_model(m)
        return m


# --- MobileNet v1 (the SRAM seed's table) -------------------------------------------------------

_MBV1 = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]


def mobilenet_v1(num_classes: int = 1000, size: int = 224, seed: int = 0) -> onnx.ModelProto:
    """MobileNet v1 with BN folded into the convs, as in the seed's RKNN memory table:
    input0 (1,3,S,S) -> 27 x (Conv -> Relu) -> AveragePool (S/32 window) -> 1x1 Conv -> Softmax."""
    g = _Graph(seed)
    t = 0

    def conv_relu(x, cin, cout, k, stride, group=1):
        nonlocal t
        c = g.conv(x, cin, cout, k, stride, group, out=f"output{t + 1}")
        t += 2
        return g.node("Relu", [c], f"output{t}")

    x = conv_relu("input0", 3, 32, 3, 2)
    cin = 32
    for cout, stride in _MBV1:
        x = conv_relu(x, cin, cin, 3, stride, group=cin)   # depthwise
        x = conv_relu(x, cin, cout, 1, 1)                   # pointwise
        cin = cout
    k = size // 32
    x = g.node("AveragePool", [x], f"output{t + 1}", kernel_shape=[k, k], strides=[k, k])
    x = g.conv(x, 1024, num_classes, 1, gain=1.0, out=f"output{t + 2}")
    y = g.node("Softmax", [x], f"output{t + 3}", axis=1)
    return g.model([("input0", [1, 3, size, size])], [(y, [1, num_classes, 1, 1])], "mobilenet_v1")


# --- MobileNet v2 -----------------------------------------------------------------------------

_MBV2 = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]


def mobilenet_v2_like(size: int = 224, seed: int = 0, num_classes: int = 1000) -> onnx.ModelProto:
    """MobileNet v2: inverted residuals (1x1 expand, 3x3 depthwise, 1x1 project) with unfolded
    BatchNormalization, Clip(0, 6) and residual Add; GlobalAveragePool, Flatten, Gemm."""
    g = _Graph(seed)

    def cbr(x, cin, cout, k, stride=1, group=1, act=True):
        y = g.bn(g.conv(x, cin, cout, k, stride, group, bias=False, gain=2.0 if act else 1.0), cout)
        return g.clip6(y) if act else y

    x = cbr("input", 3, 32, 3, 2)
    cin = 32
    for t, c, n, s in _MBV2:
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            y = cbr(x, cin, hidden, 1) if t != 1 else x
            y = cbr(y, hidden, hidden, 3, stride, group=hidden)
            y = cbr(y, hidden, c, 1, act=False)
            x = g.node("Add", [x, y]) if stride == 1 and cin == c else y
            cin = c
    x = cbr(x, cin, 1280, 1)
    x = g.node("Flatten", [g.node("GlobalAveragePool", [x])], axis=1)
    w = g.const(g.rng.normal(0, np.sqrt(1 / 1280), (num_classes, 1280)).astype(np.float32))
    b = g.const(np.zeros(num_classes, np.float32), "b")
    y = g.node("Gemm", [x, w, b], "logits", transB=1)
    return g.model([("input", [1, 3, size, size])], [(y, [1, num_classes])], "mobilenet_v2_like")


# --- MobileNet with uneven channel ranges ------------------------------------------------------

def mobilenet_uneven(size: int = 32, num_classes: int = 10, spread: float = 1.5, seed: int = 0) -> onnx.ModelProto:
    """A small MobileNet v1 (stem, four depthwise-separable blocks of Conv -> BatchNormalization -> Relu,
    GlobalAveragePool, Flatten, Gemm) whose depthwise output channels are scaled by 10**U(-spread, spread) in their
    BatchNormalization and the pointwise conv after them by the inverse, as BN folding leaves trained MobileNets
    (Nagel et al. 2019): the float function is that of the evenly scaled network, but one per-tensor int8 range
    per depthwise output serves channels whose ranges differ by up to 10**(2 * spread)."""
    g = _Graph(seed)
    r = g.rng

    def bn(x, c, gain):
        var = r.uniform(0.5, 1.5, c)
        gamma = gain * np.sqrt(var + 1e-5) * r.uniform(0.8, 1.2, c)
        params = [gamma, gain * r.normal(0, 0.1, c), r.normal(0, 0.05, c), var]
        names = [g.const(p.astype(np.float32), "bn") for p in params]
        return g.node("BatchNormalization", [x] + names, epsilon=1e-5)

    def conv(x, cin, cout, k, stride=1, group=1, in_gain=None):
        w = r.normal(0, np.sqrt(2.0 / (cin // group * k * k)), (cout, cin // group, k, k))
        if in_gain is not None:
            w = w / in_gain.reshape(1, -1, 1, 1)
        return g.node("Conv", [x, g.const(w.astype(np.float32))], kernel_shape=[k, k], strides=[stride, stride],
                      pads=[k // 2] * 4, group=group)

    x = g.node("Relu", [bn(conv("input", 3, 16, 3, 2), 16, np.ones(16))])
    cin = 16
    for cout, stride in ((32, 2), (32, 1), (64, 2), (64, 1)):
        gain = 10.0 ** r.uniform(-spread, spread, cin)
        x = g.node("Relu", [bn(conv(x, cin, cin, 3, stride, group=cin), cin, gain)])
        x = g.node("Relu", [bn(conv(x, cin, cout, 1, in_gain=gain), cout, np.ones(cout))])
        cin = cout
    x = g.node("Flatten", [g.node("GlobalAveragePool", [x])], axis=1)
    w = g.const(r.normal(0, np.sqrt(1.0 / cin), (num_classes, cin)).astype(np.float32))
    y = g.node("Gemm", [x, w, g.const(np.zeros(num_classes, np.float32), "b")], "logits", transB=1)
    return g.model([("input", [1, 3, size, size])], [(y, [1, num_classes])], "mobilenet_uneven")


# --- small convnet ----------------------------------------------------------------------------

def small_convnet(size: int = 32, num_classes: int = 10, seed: int = 0) -> onnx.ModelProto:
    """Three Conv+Relu+MaxPool stages, GlobalAveragePool, Flatten, Gemm, Softmax."""
    g = _Graph(seed)
    x, cin = "input", 3
    for cout in (16, 32, 64):
        x = g.node("Relu", [g.conv(x, cin, cout, 3)])
        x = g.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
        cin = cout
    x = g.node("Flatten", [g.node("GlobalAveragePool", [x])])
    w = g.const(g.rng.normal(0, 0.5 / np.sqrt(cin), (cin, num_classes)).astype(np.float32))
    x = g.node("Gemm", [x, w, g.const(np.zeros(num_classes, np.float32), "b")])
    y = g.node("Softmax", [x], "probs", axis=-1)
    return g.model([("input", [1, 3, size, size])], [(y, [1, num_classes])], "small_convnet")


def outlier_convnet(size: int = 16, gain: float = 200.0, seed: int = 0) -> onnx.ModelProto:
    """input (1,3,size,size) -> Conv+Relu "conv1" (8 ch) -> Conv+Relu "conv2" (8 ch) -> Conv 1x1 "output" (4 ch).

    conv1's channel 0 has its weights scaled by `gain` and a bias of -2 * gain, so it is zero almost everywhere
    and huge where it fires; conv2 divides its weights from that channel by `gain`. Min/max int8 calibration then
    spends conv1's 256 codes on the outlier and leaves a few for the other seven channels."""
    g = _Graph(seed)
    w1 = g.rng.normal(0, 0.3, (8, 3, 3, 3)).astype(np.float32)
    b1 = np.zeros(8, np.float32)
    w1[0] *= gain
    b1[0] = -2.0 * gain
    w2 = g.rng.normal(0, 0.3, (8, 8, 3, 3)).astype(np.float32)
    w2[:, 0] /= gain
    w3 = g.rng.normal(0, 0.3, (4, 8, 1, 1)).astype(np.float32)
    pads = [1, 1, 1, 1]
    x = g.node("Relu", [g.node("Conv", ["input", g.const(w1), g.const(b1, "b")], pads=pads)], "conv1")
    x = g.node("Relu", [g.node("Conv", [x, g.const(w2)], pads=pads)], "conv2")
    y = g.node("Conv", [x, g.const(w3)], "output")
    return g.model([("input", [1, 3, size, size])], [(y, [1, 4, size, size])], "outlier_convnet")


# --- ResNet-small -----------------------------------------------------------------------------

def resnet_small(size: int = 224, num_classes: int = 1000, seed: int = 0) -> onnx.ModelProto:
    """A ResNet-18-style classifier at half width: 7x7/2 stem + MaxPool, four stages of two basic blocks (3x3
    Conv+BN+Relu twice, identity or 1x1/2 projection shortcut, Add, Relu) of 32/64/128/256 channels,
    GlobalAveragePool, Flatten and Gemm: dense 3x3 convs with residual Adds (no depthwise)."""
    g = _Graph(seed)
    x = g.node("Relu", [g.bn(g.conv("input", 3, 32, 7, 2, gain=1.0, bias=False), 32)])
    x = g.node("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 32
    for stage, cout in enumerate((32, 64, 128, 256)):
        for block in range(2):
            stride = 2 if stage and not block else 1
            y = g.node("Relu", [g.bn(g.conv(x, cin, cout, 3, stride, gain=1.0, bias=False), cout)])
            y = g.bn(g.conv(y, cout, cout, 3, 1, gain=1.0, bias=False), cout)
            short = x if stride == 1 and cin == cout else g.bn(g.conv(x, cin, cout, 1, stride, gain=1.0,
                                                                        bias=False), cout)
            x = g.node("Relu", [g.node("Add", [y, short])])
            cin = cout
    x = g.node("Flatten", [g.node("GlobalAveragePool", [x])], axis=1)
    w = g.const(g.rng.normal(0, np.sqrt(1.0 / cin), (num_classes, cin)).astype(np.float32))
    y = g.node("Gemm", [x, w, g.const(np.zeros(num_classes, np.float32), "b")], "logits", transB=1)
    return g.model([("input", [1, 3, size, size])], [(y, [1, num_classes])], "resnet_small")


# --- YOLO-style head --------------------------------------------------------------------------

def yolo_head(size: int = 320, num_classes: int = 80, seed: int = 0) -> onnx.ModelProto:
    """A small YOLOv5-style detector: stride-8/16/32 features, an FPN step (Resize nearest x2,
    Concat), per-level 1x1 predictions decoded with Sigmoid, Split, Mul, Add and Concat."""
    g = _Graph(seed)
    na, no = 3, 5 + num_classes
    x = "images"
    chans = [(3, 16), (16, 32), (32, 64), (64, 128), (128, 256)]
    feats = []
    for cin, cout in chans:
        x = g.silu(g.conv(x, cin, cout, 3, 2))
        feats.append(x)
    p3, p4, p5 = feats[2], feats[3], feats[4]
    scales = g.const(np.array([1, 1, 2, 2], np.float32), "scales")
    up = g.node("Resize", [p5, "", scales], mode="nearest")
    p4 = g.silu(g.conv(g.node("Concat", [up, p4], axis=1), 384, 128, 1))
    up = g.node("Resize", [p4, "", scales], mode="nearest")
    p3 = g.silu(g.conv(g.node("Concat", [up, p3], axis=1), 192, 64, 1))
    outs = []
    for feat, c, stride in ((p3, 64, 8), (p4, 128, 16), (p5, 256, 32)):
        h = size // stride
        y = g.conv(feat, c, na * no, 1, gain=1.0)
        y = g.node("Reshape", [y, g.const(np.array([1, na, no, h * h], np.int64), "shape")])
        y = g.node("Sigmoid", [y])
        xy, wh, rest = g.node("Split", [y, g.const(np.array([2, 2, no - 4], np.int64), "split")], n_out=3, axis=2)
        grid = np.stack(np.meshgrid(np.arange(h), np.arange(h), indexing="xy"), 0).reshape(1, 1, 2, h * h)
        xy = g.node("Mul", [g.node("Add", [g.node("Mul", [xy, g.const(np.array(2.0, np.float32))]),
                                          g.const((grid - 0.5).astype(np.float32), "grid")]),
                            g.const(np.array(float(stride), np.float32))])
        wh = g.node("Mul", [g.node("Mul", [wh, wh]), g.const(np.full((1, na, 2, 1), 4.0 * stride * 2, np.float32))])
        outs.append(g.node("Reshape", [g.node("Concat", [xy, wh, rest], axis=2),
                                       g.const(np.array([1, na * h * h, no], np.int64), "shape")]))
    n = sum(na * (size // s) ** 2 for s in (8, 16, 32))
    y = g.node("Concat", outs, "detections", axis=1)
    return g.model([("images", [1, 3, size, size])], [(y, [1, n, no])], "yolo_head")


# --- YOLOv8n-like -----------------------------------------------------------------------------

def yolov8n_like(size: int = 320, num_classes: int = 80, seed: int = 0) -> onnx.ModelProto:
    """The YOLOv8n graph (about 3.2 M parameters): Conv+SiLU (BN folded), C2f blocks with
    Split/Concat, SPPF with three 5x5 MaxPools, Resize upsampling, and the anchor-free detect
    head with DFL (Softmax over 16 bins) and box decoding; output (1, 4 + classes, anchors)."""
    g = _Graph(seed)

    def cv(x, cin, cout, k=1, s=1):
        return g.silu(g.conv(x, cin, cout, k, s, gain=2.0))

    def c2f(x, cin, cout, n, shortcut):
        c = cout // 2
        y = cv(x, cin, 2 * c)
        ys = list(g.node("Split", [y, g.const(np.array([c, c], np.int64), "split")], n_out=2, axis=1))
        for _ in range(n):
            b = cv(cv(ys[-1], c, c, 3), c, c, 3)
            ys.append(g.node("Add", [ys[-1], b]) if shortcut else b)
        return cv(g.node("Concat", ys, axis=1), (2 + n) * c, cout)

    def sppf(x, cin, cout):
        c = cin // 2
        y = [cv(x, cin, c)]
        for _ in range(3):
            y.append(g.node("MaxPool", [y[-1]], kernel_shape=[5, 5], strides=[1, 1], pads=[2, 2, 2, 2]))
        return cv(g.node("Concat", y, axis=1), 4 * c, cout)

    scales = g.const(np.array([1, 1, 2, 2], np.float32), "scales")

    def up(x):
        return g.node("Resize", [x, "", scales], mode="nearest")

    x = cv("images", 3, 16, 3, 2)
    x = cv(x, 16, 32, 3, 2)
    x = c2f(x, 32, 32, 1, True)
    x = cv(x, 32, 64, 3, 2)
    p3 = c2f(x, 64, 64, 2, True)
    x = cv(p3, 64, 128, 3, 2)
    p4 = c2f(x, 128, 128, 2, True)
    x = cv(p4, 128, 256, 3, 2)
    x = c2f(x, 256, 256, 1, True)
    p5 = sppf(x, 256, 256)
    h4 = c2f(g.node("Concat", [up(p5), p4], axis=1), 384, 128, 1, False)
    o3 = c2f(g.node("Concat", [up(h4), p3], axis=1), 192, 64, 1, False)
    o4 = c2f(g.node("Concat", [cv(o3, 64, 64, 3, 2), h4], axis=1), 192, 128, 1, False)
    o5 = c2f(g.node("Concat", [cv(o4, 128, 128, 3, 2), p5], axis=1), 384, 256, 1, False)

    reg, nc = 16, num_classes
    c2, c3 = max(16, 64 // 4, reg * 4), max(64, min(nc, 100))
    levels, anchors, strides = [], [], []
    for feat, ch, stride in ((o3, 64, 8), (o4, 128, 16), (o5, 256, 32)):
        box = g.conv(cv(cv(feat, ch, c2, 3), c2, c2, 3), c2, 4 * reg, 1, gain=1.0)
        cls = g.conv(cv(cv(feat, ch, c3, 3), c3, c3, 3), c3, nc, 1, gain=1.0)
        h = size // stride
        y = g.node("Concat", [box, cls], axis=1)
        levels.append(g.node("Reshape", [y, g.const(np.array([1, 4 * reg + nc, h * h], np.int64), "shape")]))
        ys, xs = np.meshgrid(np.arange(h) + 0.5, np.arange(h) + 0.5, indexing="ij")
        anchors.append(np.stack([xs.reshape(-1), ys.reshape(-1)], 0))
        strides.append(np.full((1, h * h), stride, np.float32))
    n = sum((size // s) ** 2 for s in (8, 16, 32))
    y = g.node("Concat", levels, axis=2)
    box, cls = g.node("Split", [y, g.const(np.array([4 * reg, nc], np.int64), "split")], n_out=2, axis=1)
    # DFL: softmax over the 16 bins of each side, expectation via a 1x1 conv with weights 0..15
    b = g.node("Reshape", [box, g.const(np.array([1, 4, reg, n], np.int64), "shape")])
    b = g.node("Softmax", [g.node("Transpose", [b], perm=[0, 2, 1, 3])], axis=1)
    b = g.node("Conv", [b, g.const(np.arange(reg, dtype=np.float32).reshape(1, reg, 1, 1), "dfl")])
    dist = g.node("Reshape", [b, g.const(np.array([1, 4, n], np.int64), "shape")])
    lt, rb = g.node("Split", [dist, g.const(np.array([2, 2], np.int64), "split")], n_out=2, axis=1)
    anc = g.const(np.concatenate(anchors, 1)[None].astype(np.float32), "anchors")
    x1y1 = g.node("Sub", [anc, lt])
    x2y2 = g.node("Add", [anc, rb])
    cxy = g.node("Div", [g.node("Add", [x1y1, x2y2]), g.const(np.array(2.0, np.float32))])
    wh = g.node("Sub", [x2y2, x1y1])
    boxes = g.node("Mul", [g.node("Concat", [cxy, wh], axis=1), g.const(np.concatenate(strides, 1)[None], "strides")])
    out = g.node("Concat", [boxes, g.node("Sigmoid", [cls])], "output0", axis=1)
    return g.model([("images", [1, 3, size, size])], [(out, [1, 4 + nc, n])], "yolov8n_like")


# --- transformer block ------------------------------------------------------------------------

def transformer_block(seq: int = 64, dim: int = 128, heads: int = 4, seed: int = 0) -> onnx.ModelProto:
    """A pre-LN transformer encoder block: LayerNormalization, multi-head attention (MatMul,
    Reshape/Transpose, scaled Softmax), residual Adds, and an MLP with Erf-based exact GELU."""
    g = _Graph(seed)
    hd = dim // heads

    def linear(x, din, dout):
        w = g.const(g.rng.normal(0, np.sqrt(1 / din), (din, dout)).astype(np.float32))
        return g.node("Add", [g.node("MatMul", [x, w]), g.const(g.rng.normal(0, 0.02, dout).astype(np.float32), "b")])

    def ln(x):
        s = g.const(g.rng.uniform(0.8, 1.2, dim).astype(np.float32), "ln")
        b = g.const(g.rng.normal(0, 0.02, dim).astype(np.float32), "ln")
        return g.node("LayerNormalization", [x, s, b], axis=-1, epsilon=1e-5)

    def split_heads(x, perm):
        r = g.node("Reshape", [x, g.const(np.array([1, seq, heads, hd], np.int64), "shape")])
        return g.node("Transpose", [r], perm=perm)

    h = ln("x")
    q = split_heads(linear(h, dim, dim), [0, 2, 1, 3])
    k = split_heads(linear(h, dim, dim), [0, 2, 3, 1])
    v = split_heads(linear(h, dim, dim), [0, 2, 1, 3])
    att = g.node("Mul", [g.node("MatMul", [q, k]), g.const(np.array(1 / np.sqrt(hd), np.float32), "scale")])
    att = g.node("Softmax", [att], axis=-1)
    o = g.node("Transpose", [g.node("MatMul", [att, v])], perm=[0, 2, 1, 3])
    o = g.node("Reshape", [o, g.const(np.array([1, seq, dim], np.int64), "shape")])
    x = g.node("Add", ["x", linear(o, dim, dim)])
    m = linear(ln(x), dim, 4 * dim)
    gelu = g.node("Mul", [g.node("Mul", [m, g.const(np.array(0.5, np.float32), "half")]),
                          g.node("Add", [g.node("Erf", [g.node("Div", [m, g.const(np.array(np.sqrt(2.0), np.float32), "sqrt2")])]),
                                         g.const(np.array(1.0, np.float32), "one")])])
    y = g.node("Add", [x, linear(gelu, 4 * dim, dim)], "y")
    return g.model([("x", [1, seq, dim])], [(y, [1, seq, dim])], "transformer_block")


# --- light models from the onnx wheel ---------------------------------------------------------

def light_model_path(name: str) -> Path:
    """The shipped `light_<name>.onnx` inside the installed onnx package."""
    if name not in LIGHT_MODELS:
        raise ValueError(f"unknown light model {name!r}; known: {', '.join(LIGHT_MODELS)}")
    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"light_{name}.onnx"


def light_model(name: str, seed: int = 0) -> onnx.ModelProto:
    """A light model with every ConstantOfShape weight replaced by a random initializer.

    Scales by role: conv / gemm weights N(0, sqrt(g/fan_in)) (g = 1 before a BatchNorm, else 2),
    biases N(0, 0.01), BN scale U(0.3, 0.6), BN bias and mean N(0, 0.05), BN var U(0.5, 1.5);
    BN params that go through Unsqueeze to a Mul / Add are scale / bias. IR is raised to 8 so
    initializers need not be graph inputs.
    """
    m = onnx.load(str(light_model_path(name)))
    g = m.graph
    rng = np.random.default_rng(seed)
    inits = {i.name: i for i in g.initializer}
    consumers: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
    for n in g.node:
        for k, i in enumerate(n.input):
            consumers.setdefault(i, []).append((n, k))

    def role(tensor: str) -> tuple[str, int]:
        node, k = consumers[tensor][0]
        if node.op_type == "Unsqueeze":
            return role(node.output[0])
        return node.op_type, k

    def followed_by_bn(node: onnx.NodeProto) -> bool:
        return any(c.op_type == "BatchNormalization" for c, _ in consumers.get(node.output[0], []))

    new_nodes, new_inits = [], {}
    for n in g.node:
        if n.op_type != "ConstantOfShape" or n.input[0] not in inits:
            new_nodes.append(n)
            continue
        shape = tuple(int(d) for d in numpy_helper.to_array(inits[n.input[0]]))
        op, k = role(n.output[0])
        cnode = consumers[n.output[0]][0][0]
        if op in ("Conv", "Gemm", "Reshape") and k in (0, 1) and len(shape) >= 2:
            fan_in = int(np.prod(shape[1:]))
            if op == "Gemm" and not any(a.name == "transB" and a.i for a in cnode.attribute):
                fan_in = shape[0]
            gain = 1.0 if op != "Conv" or followed_by_bn(cnode) else 2.0
            arr = rng.standard_normal(shape, dtype=np.float32) * np.float32(np.sqrt(gain / fan_in))
        elif op == "BatchNormalization":
            arr = {1: rng.uniform(0.3, 0.6, shape), 2: rng.normal(0, 0.05, shape),
                   3: rng.normal(0, 0.05, shape), 4: rng.uniform(0.5, 1.5, shape)}[k]
        elif op == "Mul":
            arr = rng.uniform(0.3, 0.6, shape)
        else:
            arr = rng.normal(0, 0.01, shape)
        new_inits[n.output[0]] = numpy_helper.from_array(arr.astype(np.float32), n.output[0])
    used = {i for n in new_nodes for i in n.input}
    kept = [i for i in g.initializer if i.name in used and i.name not in new_inits]
    del g.initializer[:]
    g.initializer.extend(kept + list(new_inits.values()))
    del g.node[:]
    g.node.extend(new_nodes)
    init_names = {i.name for i in g.initializer}
    real_inputs = [i for i in g.input if i.name not in init_names and i.name in used]
    del g.input[:]
    g.input.extend(real_inputs)
    m.ir_version = max(m.ir_version, 8)
    onnx.checker.check_model(m)
    return m


# --- cache ------------------------------------------------------------------------------------

def cache_dir() -> Path:
    """`$NPURT_CACHE` or `<repo>/.cache/models` (git-ignored)."""
    env = os.environ.get("NPURT_CACHE")
    d = Path(env) if env else Path(__file__).resolve().parents[3] / ".cache" / "models"
    d.mkdir(parents=True, exist_ok=True)
    return d


def save_cached(model: onnx.ModelProto, name: str) -> Path:
    """Write `model` as `<cache>/<name>.onnx` unless already there; return the path.

    `name` is the cache key: include the generator's arguments (see `cache_key`)."""
    path = cache_dir() / f"{name}.onnx"
    if not path.exists():
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(model.SerializeToString())
        os.replace(tmp, path)
    return path


def cache_key(fn: Callable | str, **kwargs: Any) -> str:
    """`<generator>-<args>`, e.g. `mobilenet_v1-num_classes=1000,seed=0,size=224`."""
    name = fn if isinstance(fn, str) else fn.__name__
    args = ",".join(f"{k}={kwargs[k]}" for k in sorted(kwargs))
    key = f"{name}-{args}" if args else name
    return key if len(key) < 120 else f"{name}-{hashlib.sha1(json.dumps(kwargs, sort_keys=True, default=str).encode()).hexdigest()[:16]}"


def cached(fn: Callable[..., onnx.ModelProto], **kwargs: Any) -> Path:
    """Path of `fn(**kwargs)` in the cache, generating and saving it only when missing."""
    key = cache_key(fn, **kwargs)
    path = cache_dir() / f"{key}.onnx"
    return path if path.exists() else save_cached(fn(**kwargs), key)
