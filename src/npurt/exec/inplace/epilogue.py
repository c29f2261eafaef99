"""The store epilogue every in-place step ends with: float32 results to the output's stored codes (the fused
activation, int8 requantisation and saturation, rounding) and zeros in the padding lanes."""
from __future__ import annotations

from typing import Callable

import numpy as np

import npurt._kernels as _kernels
from npurt.exec.kernels import apply_activation
from npurt.exec.inplace.slots import bits, dequantize, quantize


def padding_lanes(st, view: np.ndarray) -> list[np.ndarray]:
    """Views of the padding lanes of an NC1HWC2 slot (channels >= C, including whole extra C1 blocks)."""
    return _lanes_beyond(view, st.shape[1])


def _lanes_beyond(view: np.ndarray, channels: int) -> list[np.ndarray]:
    """Views of the lanes of NC1HWC2 `view` past its first `channels` channels."""
    c1, c2 = view.shape[1], view.shape[4]
    full, rem = divmod(channels, c2)
    out = []
    if rem:
        out.append(view[:, full, :, :, rem:])
    used = full + (1 if rem else 0)
    if used < c1:
        out.append(view[:, used:])
    return out


def nothing() -> None:
    """A step part with nothing to do (an empty `filler`, no input copy)."""


def sequence(*parts: Callable[[], None]) -> Callable[[], None]:
    """The parts run in order as one step, `nothing` dropped and a single part returned as it is (one Python call
    less per run in the executor's loop)."""
    parts = tuple(p for p in parts if p is not nothing)
    if not parts:
        return nothing
    if len(parts) == 1:
        return parts[0]

    def run() -> None:
        for part in parts:
            part()
    return run


def filler(views: list[np.ndarray], value: float = 0) -> Callable[[], None]:
    """`view.fill(value)` for every view, prepared at bind: one compiled fill per view where the kernels take it
    (numpy fills a padding-lane view (1, 56, 56, 8) of int8 lanes 8 bytes at a time, some 40 us), else numpy's."""
    views = [v for v in views if v.size]
    if not views:
        return nothing
    calls = [_kernels.fill_fn(v, value) for v in views]
    if any(c is None for c in calls):
        def fill_numpy() -> None:
            for v in views:
                v.fill(value)
        return fill_numpy
    return sequence(*calls)


def cast_copy(dst: np.ndarray, src: np.ndarray) -> None:
    """np.copyto(dst, src, casting="unsafe") through the compiled kernels where they handle the pair: float32 results
    (for int8 outputs: codes already rounded and saturated) into a stored float16 / int8 array, or a stored input into
    a float32 work buffer."""
    if dst.dtype == np.int8 and src.dtype == np.float32:
        done = _kernels.quantize(dst, src, 1.0, 0.0)     # exact for integral values in [-128, 127]
    else:
        done = _kernels.cast(dst, src)
    if not done:
        np.copyto(dst, src, casting="unsafe")


def copier(dst: np.ndarray, src: np.ndarray):
    """`cast_copy(dst, src)` prepared at bind: the compiled copy with its arguments decided once where the kernels
    take the pair, else a function calling `cast_copy`."""
    return _kernels.cast_fn(dst, src) or (lambda: cast_copy(dst, src))


def widen(wide: np.ndarray, x: np.ndarray, st, kind: str) -> Callable[[], None]:
    """Copy slot `x` into float32 `wide` as the slot reader reads it (float16 cast, or int8 dequantised), prepared at
    bind."""
    if kind == "fp16":
        return copier(wide, x)
    return _kernels.dequantize_fn(wide, x, st.scale, st.zp * st.scale) or \
        (lambda: np.copyto(wide, dequantize(x, st)))


def narrow(dst: np.ndarray, y: np.ndarray, st, kind: str) -> Callable[[], None]:
    """Store float32 buffer `y` into slot `dst` as the slot writer stores it, prepared at bind: `store` for a buffer
    known now."""
    if kind == "fp16":
        return copier(dst, y)
    return _kernels.quantize_fn(dst, y, 1.0 / st.scale, st.zp) or (lambda: np.copyto(dst, quantize(y, st)))


def store(dst: np.ndarray, y: np.ndarray, st, kind: str) -> None:
    """Store a fresh float32 result `y` into slot `dst` as the slot writer stores it: a float16 cast (compiled:
    numpy's own takes some 70 ns a value on values that underflow float16), or quantised."""
    if kind == "fp16":
        cast_copy(dst, y)
    elif not _kernels.quantize(dst, y, 1.0 / st.scale, st.zp):
        np.copyto(dst, quantize(y, st))


def table_gather(dst: np.ndarray, table: np.ndarray, src: np.ndarray, channels: int) -> Callable[[], None]:
    """A step storing table[src] (stored bit patterns) into NC1HWC2 view `dst` for its first `channels` channels,
    padding lanes zero: the compiled lookup per contiguous run of full C1 blocks and, for a partly used block, only
    its used lanes (a (1, 3, 85, N) tensor uses 3 of 16 int8 lanes); else np.take over everything, then the zeros."""
    d, s = bits(dst), bits(src)
    c2 = dst.shape[4]
    full, rem = divmod(channels, c2)
    calls: list | None = []
    for n in range(dst.shape[0]):
        runs = [(d[n, :full], s[n, :full], None)] if full else []
        if full and not (runs[0][0].flags.c_contiguous and runs[0][1].flags.c_contiguous):
            runs = [(d[n, k], s[n, k], None) for k in range(full)]
        if rem:
            runs.append((d[n, full], s[n, full], (c2, rem)))
        for dn, sn, lanes in runs:
            call = _kernels.lookup_fn(dn, table, sn, lanes=lanes)
            if call is None:
                calls = None
                break
            calls.append(call)
        if calls is None:
            break
    extra = dst[:, full + (1 if rem else 0):]
    if calls is None:
        pads = filler(_lanes_beyond(dst, channels))

        def run_numpy() -> None:
            np.take(table, s, out=d, mode="clip")
            pads()
        return run_numpy

    def run() -> None:
        for call in calls:
            call()
        if extra.size:
            extra.fill(0)
    return run


def stored_table(kind: str, y: np.ndarray, st) -> np.ndarray:
    """float32 results as the stored bit patterns (uint16 for fp16, uint8 for int8): the entries of a lookup table."""
    if kind == "fp16":
        return np.asarray(y, np.float32).astype(np.float16).view(np.uint16)
    return quantize(y, st).view(np.uint8)


def folded_bounds(attrs: dict, inv_scale: float, zp: float) -> tuple[float, float] | None:
    """Bounds (lo, hi) in the quantised domain that apply the fused activation and int8 saturation at once;
    None when the activation is not a clamp."""
    act = attrs.get("activation")
    lo, hi = -128.0, 127.0
    if act is None:
        return lo, hi
    if act == "Relu":
        return max(lo, zp), hi
    if act == "Clip":
        p = attrs.get("activation_params") or (None, None)
        a, z = p[0], p[1]
        if a is not None:
            lo = max(lo, a * inv_scale + zp)
        if z is not None:
            hi = min(hi, z * inv_scale + zp)
        return lo, hi
    return None


# Cephes expf, in float32: range [-87, 87], ln 2 in two parts, the polynomial of e^r on [-ln 2 / 2, ln 2 / 2]
_EXP = tuple(np.float32(v) for v in (87.0, 1.44269504088896341, 0.693359375, -2.12194440e-4))
_EXP_POLY = tuple(np.float32(v) for v in (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
                                          1.6666665459e-1, 5.0000001201e-1))


def silu(y: np.ndarray, alpha: np.float32) -> None:
    """In place, y / (1 + e^(-alpha y)) with e^z in basic float32 operations only (Cephes expf), the sequence the
    compiled convs run (`npurt_silu.h`), so both store the same bytes at every instruction set (numpy's own tanh /
    exp differ between builds and CPUs)."""
    hi, log2e, c1, c2 = _EXP
    one = np.float32(1.0)
    z = np.multiply(y, alpha)
    np.negative(z, out=z)
    np.clip(z, -hi, hi, out=z)
    n = np.rint(z * log2e)
    z -= n * c1
    z -= n * c2                                   # z is now r, the reduced argument
    e = np.full_like(z, _EXP_POLY[0])
    for coef in _EXP_POLY[1:]:
        e *= z
        e += coef
    e *= z * z
    e += z
    e += one
    with np.errstate(invalid="ignore"):           # NaN inputs: their n is no integer (the result stays NaN)
        e *= ((n.astype(np.int32) + 127) << 23).view(np.float32)      # 2^n, n in [-126, 126]
    e += one
    np.divide(one, e, out=e)
    y *= e


def swish_codes(y: np.ndarray, alpha: np.float32, inv_scale: np.float32, zp: np.float32) -> None:
    """In place, a conv's float32 result to the int8 codes (as float32) of its fused SiLU (`silu`), scaled by
    `inv_scale`, shifted by `zp`, saturated and rounded: what the compiled int8 conv stores
    (`npurt._kernels.int8_conv(swish=...)`), byte for byte."""
    silu(y, alpha)
    y *= inv_scale
    y += zp
    np.clip(y, np.float32(-128), np.float32(127), out=y)
    np.rint(y, out=y)


class ConvEpilogue:
    """In place, a conv's float32 result (bias added) to what its output stores: fp16 applies the fused activation
    (a SiLU by `silu`, as the compiled convs do); int8 either clamps to `folded_bounds` (weights and bias were scaled
    to the quantised domain at bind) or applies the activation, scale and zero point and saturates (a SiLU by
    `swish_codes`, `swish` its parameters); then rounds."""

    def __init__(self, attrs: dict, out_storage) -> None:
        self.attrs = attrs
        self.int8 = out_storage.quantized
        self.bounds = None
        self.swish = None
        self.alpha = None               # a fused SiLU's alpha
        if attrs.get("activation") == "Swish":
            p = attrs.get("activation_params")
            p = (p,) if p is not None and not isinstance(p, (list, tuple, np.ndarray)) else p
            self.alpha = np.float32(p[0] if p is not None else 1.0)
        if self.int8:
            self.inv_scale, self.zp = np.float32(1.0 / out_storage.scale), np.float32(out_storage.zp)
            self.bounds = folded_bounds(attrs, 1.0 / out_storage.scale, float(out_storage.zp))
            if self.alpha is not None:
                self.swish = (self.alpha, self.inv_scale, self.zp)

    @property
    def folds_output_scale(self) -> bool:
        """True when the output quantisation must be folded into the weights and bias at bind."""
        return self.bounds is not None

    def fold(self, weights: np.ndarray, bias: np.ndarray) -> np.ndarray:
        """Scale `weights` in place into the quantised output domain and return the bias to use (a no-op unless
        `folds_output_scale`)."""
        if not self.folds_output_scale:
            return bias
        weights *= self.inv_scale
        return bias * self.inv_scale + self.zp

    def __call__(self, y: np.ndarray) -> None:
        if not self.int8:
            if self.alpha is not None:
                silu(y, self.alpha)
            else:
                apply_activation(y, self.attrs)
            return
        if self.bounds is not None:
            np.clip(y, self.bounds[0], self.bounds[1], out=y)
        elif self.swish is not None:
            swish_codes(y, *self.swish)
            return
        else:
            apply_activation(y, self.attrs)
            np.multiply(y, self.inv_scale, out=y)
            np.add(y, self.zp, out=y)
            np.clip(y, -128, 127, out=y)
        np.rint(y, out=y)
