"""RNN, GRU and LSTM (forward, reverse, bidirectional; layout 0 and 1; sequence_lens; clip).

Input projections for all time steps are one matmul per direction; the time loop does only the
recurrent (hidden x hidden) matmul and the gate math. Default activations: RNN Tanh; GRU
Sigmoid/Tanh; LSTM Sigmoid/Tanh/Tanh (custom activation lists supported for the common names).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.exec.kernels import as_f32, kernel


def _act(name: str, alpha: float | None, beta: float | None) -> Callable[[np.ndarray], np.ndarray]:
    name = name.lower()
    if name == "sigmoid":
        return lambda x: 1.0 / (1.0 + np.exp(-x))
    if name == "tanh":
        return np.tanh
    if name == "relu":
        return lambda x: np.maximum(x, 0)
    if name == "hardsigmoid":
        a, b = (0.2 if alpha is None else alpha), (0.5 if beta is None else beta)
        return lambda x: np.clip(a * x + b, 0, 1)
    if name == "leakyrelu":
        a = 0.01 if alpha is None else alpha
        return lambda x: np.where(x < 0, a * x, x)
    if name == "affine":
        return lambda x: (1.0 if alpha is None else alpha) * x + (0.0 if beta is None else beta)
    if name == "scaledtanh":
        return lambda x: (1.0 if alpha is None else alpha) * np.tanh((1.0 if beta is None else beta) * x)
    raise NpuError(ErrorCode.NOT_SUPPORTED, f"recurrent activation '{name}' is not supported")


def _activations(attrs: dict[str, Any], defaults: list[str], n_dir: int) -> list[list[Callable]]:
    names = attrs.get("activations") or defaults * n_dir
    alphas = list(attrs.get("activation_alpha") or [])
    betas = list(attrs.get("activation_beta") or [])
    fns = [_act(nm, alphas[i] if i < len(alphas) else None, betas[i] if i < len(betas) else None)
           for i, nm in enumerate(names)]
    k = len(defaults)
    return [fns[d * k:(d + 1) * k] for d in range(n_dir)]


DEFAULT_ACTIVATIONS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}


def check_recurrent(op_type: str, attrs: dict[str, Any]) -> None:
    """Refuse, before anything runs, what the kernels below cannot run: an unknown direction or activation, or an
    activation list of the wrong length (NOT_SUPPORTED / INVALID_MODEL; the compiler adds the node's name)."""
    direction = attrs.get("direction", "forward")
    if direction not in ("forward", "reverse", "bidirectional"):
        raise NpuError(ErrorCode.INVALID_MODEL, f"direction {direction!r} is not forward, reverse or bidirectional")
    n_dir = 2 if direction == "bidirectional" else 1
    names = attrs.get("activations")
    if names and len(names) != len(DEFAULT_ACTIVATIONS[op_type]) * n_dir:
        raise NpuError(ErrorCode.INVALID_MODEL, f"{len(names)} activations for {n_dir} direction(s); {op_type} "
                                                f"takes {len(DEFAULT_ACTIVATIONS[op_type])} per direction")
    _activations(attrs, DEFAULT_ACTIVATIONS[op_type], n_dir)


def _prepare(inputs: list, attrs: dict[str, Any]):
    """X as (seq, batch, input), the direction list, sequence lengths and the layout flag."""
    x = as_f32(inputs[0])
    layout = int(attrs.get("layout", 0))
    if layout:
        x = x.transpose(1, 0, 2)
    direction = attrs.get("direction", "forward")
    dirs = ["forward", "reverse"] if direction == "bidirectional" else [direction]
    seq_lens = inputs[4] if len(inputs) > 4 and inputs[4] is not None else None
    lens = np.full(x.shape[1], x.shape[0], np.int64) if seq_lens is None else seq_lens.astype(np.int64)
    return x, layout, dirs, lens


def _initial(inputs: list, i: int, n_dir: int, batch: int, hidden: int, layout: int) -> np.ndarray:
    v = inputs[i] if len(inputs) > i and inputs[i] is not None else None
    if v is None:
        return np.zeros((n_dir, batch, hidden), np.float32)
    v = as_f32(v)
    return v.transpose(1, 0, 2) if layout else v


def _run_loop(x, lens, reverse: bool, step: Callable, state: tuple) -> tuple[np.ndarray, tuple]:
    """Run `step(t, x_t, state) -> state` over time; padded steps keep the state and output 0."""
    seq, batch = x.shape[:2]
    ys = np.zeros((seq, batch, state[0].shape[-1]), np.float32)
    for k in range(seq):
        t = seq - 1 - k if reverse else k
        if reverse:  # each sequence runs backwards from its own last valid step
            tt = lens - 1 - k
            valid = tt >= 0
            xt = x[np.clip(tt, 0, seq - 1), np.arange(batch)]
        else:
            valid = t < lens
            xt = x[t]
        new = step(xt, state)
        state = tuple(np.where(valid[:, None], n, o) for n, o in zip(new, state))
        if reverse:
            rows = np.flatnonzero(valid)
            ys[tt[rows], rows] = state[0][rows]
        else:
            ys[t] = np.where(valid[:, None], state[0], 0)
    return ys, state


def _finish(ys: list[np.ndarray], finals: list[tuple], layout: int, n_state: int) -> list[np.ndarray]:
    y = np.stack(ys, axis=1)  # (seq, dirs, batch, hidden)
    outs = [y.transpose(2, 0, 1, 3) if layout else y]
    for i in range(n_state):
        s = np.stack([f[i] for f in finals])  # (dirs, batch, hidden)
        outs.append(s.transpose(1, 0, 2) if layout else s)
    return [np.ascontiguousarray(o, dtype=np.float32) for o in outs]


@kernel("RNN")
def rnn(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    x, layout, dirs, lens = _prepare(inputs, attrs)
    w, r = as_f32(inputs[1]), as_f32(inputs[2])
    hidden = r.shape[-1]
    b = as_f32(inputs[3]) if len(inputs) > 3 and inputs[3] is not None else np.zeros((len(dirs), 2 * hidden), np.float32)
    h0 = _initial(inputs, 5, len(dirs), x.shape[1], hidden, layout)
    acts = _activations(attrs, DEFAULT_ACTIVATIONS["RNN"], len(dirs))
    clip = attrs.get("clip")
    ys, finals = [], []
    for d, name in enumerate(dirs):
        xw = x @ w[d].T + b[d, :hidden] + b[d, hidden:]
        f = acts[d][0]

        def step(xt_proj, st, d=d, f=f):
            g = xt_proj + st[0] @ r[d].T
            return (f(np.clip(g, -clip, clip) if clip else g).astype(np.float32),)

        y, st = _run_loop(xw, lens, name == "reverse", step, (h0[d],))
        ys.append(y)
        finals.append(st)
    return _finish(ys, finals, layout, 1)


@kernel("GRU")
def gru(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Gates z, r, h (ONNX order); linear_before_reset selects where R_h's bias goes."""
    x, layout, dirs, lens = _prepare(inputs, attrs)
    w, r = as_f32(inputs[1]), as_f32(inputs[2])
    hidden = r.shape[-1]
    b = as_f32(inputs[3]) if len(inputs) > 3 and inputs[3] is not None else np.zeros((len(dirs), 6 * hidden), np.float32)
    h0 = _initial(inputs, 5, len(dirs), x.shape[1], hidden, layout)
    acts = _activations(attrs, DEFAULT_ACTIVATIONS["GRU"], len(dirs))
    lbr = int(attrs.get("linear_before_reset", 0))
    clip = attrs.get("clip")
    H = hidden

    def cl(v):
        return np.clip(v, -clip, clip) if clip else v

    ys, finals = [], []
    for d, name in enumerate(dirs):
        wb, rb = b[d, :3 * H], b[d, 3 * H:]
        xw = x @ w[d].T + wb
        rz, rh = r[d][:2 * H], r[d][2 * H:]
        f, g = acts[d]

        def step(xp, st, rz=rz, rh=rh, rb=rb, f=f, g=g):
            h = st[0]
            zr = f(cl(xp[:, :2 * H] + h @ rz.T + rb[:2 * H]))
            z, rr = zr[:, :H], zr[:, H:]
            if lbr:
                hh = g(cl(xp[:, 2 * H:] + rr * (h @ rh.T + rb[2 * H:])))
            else:
                hh = g(cl(xp[:, 2 * H:] + (rr * h) @ rh.T + rb[2 * H:]))
            return (((1 - z) * hh + z * h).astype(np.float32),)

        y, st = _run_loop(xw, lens, name == "reverse", step, (h0[d],))
        ys.append(y)
        finals.append(st)
    return _finish(ys, finals, layout, 1)


@kernel("LSTM")
def lstm(inputs: list, attrs: dict[str, Any]) -> list[np.ndarray]:
    """Gates i, o, f, c (ONNX order), optional peepholes P (i, o, f), input_forget coupling."""
    x, layout, dirs, lens = _prepare(inputs, attrs)
    w, r = as_f32(inputs[1]), as_f32(inputs[2])
    H = r.shape[-1]
    nd = len(dirs)
    b = as_f32(inputs[3]) if len(inputs) > 3 and inputs[3] is not None else np.zeros((nd, 8 * H), np.float32)
    h0 = _initial(inputs, 5, nd, x.shape[1], H, layout)
    c0 = _initial(inputs, 6, nd, x.shape[1], H, layout)
    p = as_f32(inputs[7]) if len(inputs) > 7 and inputs[7] is not None else np.zeros((nd, 3 * H), np.float32)
    acts = _activations(attrs, DEFAULT_ACTIVATIONS["LSTM"], nd)
    clip = attrs.get("clip")
    coupled = int(attrs.get("input_forget", 0))

    def cl(v):
        return np.clip(v, -clip, clip) if clip else v

    ys, finals = [], []
    for d, name in enumerate(dirs):
        xw = x @ w[d].T + b[d, :4 * H] + b[d, 4 * H:]
        pi, po, pf = p[d, :H], p[d, H:2 * H], p[d, 2 * H:]
        f, g, h_act = acts[d]

        def step(xp, st, d=d, pi=pi, po=po, pf=pf, f=f, g=g, h_act=h_act):
            h, c = st
            gates = xp + h @ r[d].T
            i = f(cl(gates[:, :H] + pi * c))
            fg = 1 - i if coupled else f(cl(gates[:, 2 * H:3 * H] + pf * c))
            cc = g(cl(gates[:, 3 * H:]))
            c_new = fg * c + i * cc
            o = f(cl(gates[:, H:2 * H] + po * c_new))
            return ((o * h_act(c_new)).astype(np.float32), c_new.astype(np.float32))

        y, st = _run_loop(xw, lens, name == "reverse", step, (h0[d], c0[d]))
        ys.append(y)
        finals.append(st)
    return _finish(ys, finals, layout, 2)
