"""Checks of the tiny test models of `helpers.models` themselves."""
from __future__ import annotations

import numpy as np
import onnx

from helpers.models import Y_SHAPE, convnet, convnet_other, dynamic_convnet, image, reference, two_io


def test_models_are_valid_onnx():
    for m in (convnet(), convnet_other(), two_io(), dynamic_convnet()):
        onnx.checker.check_model(onnx.load_from_string(m))


def test_reference_shapes():
    y, = reference(convnet(), image())
    assert y.shape == Y_SHAPE
    y, v = reference(two_io(), image((1, 3, 6, 6)), np.ones((1, 5), np.float32))
    assert y.shape == (1, 8, 6, 6) and v.shape == (1, 4)
    y, = reference(dynamic_convnet(), image((1, 3, 12, 10)))
    assert y.shape == (1, 4, 12, 10)
