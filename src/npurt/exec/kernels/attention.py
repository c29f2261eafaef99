"""Attention (opset 23+): scaled dot-product attention over 3-D (batch, seq, heads*size) or 4-D
(batch, heads, seq, size) Q/K/V, with KV cache (past_key/past_value), boolean or additive masks,
causal and sliding-window masking, grouped-query heads, softcap, nonpad_kv_seqlen and the
qk_matmul_output modes, following the ONNX reference semantics (fully masked rows give 0)."""
from __future__ import annotations

from typing import Any

import numpy as np

from npurt.exec.kernels import as_f32, kernel


def _heads(x: np.ndarray, n_heads: int) -> np.ndarray:
    """(batch, seq, heads * size) -> (batch, heads, seq, size)."""
    b, s, h = x.shape
    return x.reshape(b, s, n_heads, h // n_heads).transpose(0, 2, 1, 3)


def _allowed_window(q: int, kv: int, offset, left: int, right: int, causal: bool) -> np.ndarray:
    """Boolean (q, kv) or (batch, 1, q, kv) mask of keys a query may attend."""
    i = np.arange(q).reshape(q, 1)
    j = np.arange(kv).reshape(1, kv)
    off = np.asarray(offset)
    pos = i + (off.reshape(-1, 1, 1) if off.ndim else int(off))  # absolute query position
    ok = np.ones(np.broadcast_shapes(np.shape(pos), j.shape), bool)
    if causal:
        ok &= j <= pos
    if left >= 0:
        ok &= pos - j <= left
    if right >= 0:
        ok &= j - pos <= right
    return ok[:, None] if off.ndim else ok


@kernel("Attention")
def attention(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    q, k, v = (as_f32(a) for a in inputs[:3])
    mask, past_k, past_v, nonpad = (inputs[i] if len(inputs) > i else None for i in range(3, 7))
    rank3 = q.ndim == 3
    if rank3:
        q = _heads(q, int(attrs["q_num_heads"]))
        k = _heads(k, int(attrs["kv_num_heads"]))
        v = _heads(v, int(attrs["kv_num_heads"]))
    scale = attrs.get("scale")
    scale = np.float32(np.sqrt(1 / np.sqrt(q.shape[3]) if scale is None else scale))
    if past_k is not None:
        k = np.concatenate([as_f32(past_k), k], axis=2)
        v = np.concatenate([as_f32(past_v), v], axis=2)
    present_k, present_v = k, v
    nq, nkv = q.shape[2], k.shape[2]

    bias = np.zeros((nq, nkv), np.float32)
    if mask is not None:
        pad = nkv - mask.shape[-1]
        if pad > 0:
            mask = np.pad(mask, [(0, 0)] * (mask.ndim - 1) + [(0, pad)],
                          constant_values=False if mask.dtype == np.bool_ else -np.inf)
        bias = bias + (np.where(mask, np.float32(0), np.float32(-np.inf)) if mask.dtype == np.bool_ else as_f32(mask))
    causal = bool(attrs.get("is_causal", 0))
    left, right = int(attrs.get("left_window_size", -1)), int(attrs.get("right_window_size", -1))
    if causal or left >= 0 or right >= 0:
        if past_k is None and nonpad is not None:
            offset = nonpad.reshape(-1).astype(np.int64) - nq
        else:
            offset = past_k.shape[2] if past_k is not None else 0
        bias = bias + np.where(_allowed_window(nq, nkv, offset, left, right, causal), np.float32(0), np.float32(-np.inf))
    if nonpad is not None:
        keep = np.arange(nkv) < nonpad.reshape(-1, 1)
        bias = bias + np.where(keep, np.float32(0), np.float32(-np.inf)).reshape(q.shape[0], 1, 1, nkv)

    if q.shape[1] != k.shape[1] and q.shape[1] % k.shape[1] == 0:  # grouped-query attention
        reps = q.shape[1] // k.shape[1]
        k, v = np.repeat(k, reps, axis=1), np.repeat(v, reps, axis=1)

    qk = np.matmul(q * scale, (k * scale).transpose(0, 1, 3, 2))
    softcap = attrs.get("softcap")
    if softcap:
        qk = np.tanh(qk / np.float32(softcap)) * np.float32(softcap)
    scores = qk + bias
    mode = int(attrs.get("qk_matmul_output_mode", 0))
    qk_out = scores if mode == 2 else qk
    row_max = scores.max(axis=-1, keepdims=True)
    dead = np.isneginf(row_max)
    e = np.exp(scores - np.where(dead, np.float32(0), row_max))
    s = e.sum(axis=-1, keepdims=True)
    p = np.where(np.isneginf(bias.max(axis=-1, keepdims=True)) | dead, np.float32(0), e / np.where(s == 0, 1, s))
    if mode == 3:
        qk_out = p
    y = np.matmul(p.astype(np.float32), v)
    if rank3:
        y = y.transpose(0, 2, 1, 3).reshape(y.shape[0], y.shape[2], -1)
    return [y.astype(np.float32), present_k, present_v, np.asarray(qk_out, np.float32)]


@kernel("RotaryEmbedding")
def rotary_embedding(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Rotate the first `rotary_embedding_dim` features of each head by the cos/sin caches
    (indexed by position_ids when given); halves or interleaved pairs; 3-D or 4-D input."""
    x = as_f32(inputs[0])
    cos, sin = as_f32(inputs[1]), as_f32(inputs[2])
    pos = inputs[3] if len(inputs) > 3 else None
    shape = x.shape
    h = x.transpose(0, 2, 1, 3) if x.ndim == 4 else x.reshape(shape[0], shape[1], int(attrs["num_heads"]), -1)
    rot = int(attrs.get("rotary_embedding_dim", 0)) or h.shape[3]
    if pos is not None:
        cos, sin = cos[pos], sin[pos]
    cos, sin = cos[:, :, None], sin[:, :, None]
    xr = h[..., :rot]
    if attrs.get("interleaved", 0):
        x1, x2 = xr[..., 0::2], xr[..., 1::2]
    else:
        x1, x2 = xr[..., : rot // 2], xr[..., rot // 2:]
    real, imag = cos * x1 - sin * x2, sin * x1 + cos * x2
    if attrs.get("interleaved", 0):
        rotated = np.stack([real, imag], axis=-1).reshape(xr.shape)
    else:
        rotated = np.concatenate([real, imag], axis=-1)
    y = np.concatenate([rotated, h[..., rot:]], axis=-1)
    y = y.transpose(0, 2, 1, 3) if x.ndim == 4 else y.reshape(shape)
    return [np.ascontiguousarray(y, np.float32)]
