"""NonMaxSuppression: greedy per (batch, class), as ONNX specifies.

Candidates are boxes scoring above `score_threshold` (when given), taken in descending score
order (ties: lower index first); a candidate is kept unless its IoU with an already kept box is
above `iou_threshold`, until `max_output_boxes_per_class` are kept. The IoU of one candidate
against all kept boxes is vectorised; the loop runs over kept boxes only.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from npurt.exec.kernels import kernel


def _corners(boxes: np.ndarray, center_point_box: int) -> np.ndarray:
    """(N, 4) boxes as (y_min, x_min, y_max, x_max) in float64."""
    b = boxes.astype(np.float64)
    if center_point_box:
        xc, yc, w, h = b.T
        return np.stack([yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2], axis=1)
    y1, x1, y2, x2 = b.T
    return np.stack([np.minimum(y1, y2), np.minimum(x1, x2), np.maximum(y1, y2), np.maximum(x1, x2)], axis=1)


def _iou(box: np.ndarray, others: np.ndarray) -> np.ndarray:
    ih = np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0])
    iw = np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1])
    inter = np.where((ih > 0) & (iw > 0), ih * iw, 0.0)
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    union = area + areas - inter
    ok = (inter > 0) & (area > 0) & (areas > 0) & (union > 0)
    return np.where(ok, inter / np.where(union > 0, union, 1.0), 0.0)


def _scalar(inputs: list, i: int, default):
    v = inputs[i] if len(inputs) > i else None
    return default if v is None or v.size == 0 else v.reshape(-1)[0]


@kernel("NonMaxSuppression")
def non_max_suppression(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    boxes, scores = inputs[0], inputs[1]
    max_out = max(int(_scalar(inputs, 2, 0)), 0)
    iou_thr = float(_scalar(inputs, 3, 0.0))
    score_thr = _scalar(inputs, 4, None)
    cpb = int(attrs.get("center_point_box", 0))
    selected = []
    for b in range(boxes.shape[0]):
        corners = _corners(boxes[b], cpb)
        for c in range(scores.shape[1]):
            s = scores[b, c]
            cand = np.arange(s.shape[0]) if score_thr is None else np.flatnonzero(s > score_thr)
            cand = cand[np.argsort(-s[cand].astype(np.float64), kind="stable")]
            kept: list[int] = []
            for i in cand:
                if len(kept) >= max_out:
                    break
                if not kept or not (_iou(corners[i], corners[kept]) > iou_thr).any():
                    kept.append(int(i))
            selected.extend((b, c, i) for i in kept)
    return [np.array(selected, np.int64).reshape(-1, 3)]
