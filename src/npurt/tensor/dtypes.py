"""Element types of NPU tensors: numpy storage type, bits per element and byte sizes.

int4 is packed two values per byte, **low nibble first** (element 2k in bits 0..3 of byte k, element 2k+1 in
bits 4..7), stored in numpy as uint8; `pack_int4` / `unpack_int4` convert. bfloat16 comes from ml_dtypes, imported
on first use (its import takes about a second: programs that never touch bfloat16 / int4 do not pay it).
"""
from __future__ import annotations

import enum

import numpy as np

from npurt.errors import ErrorCode, NpuError
from npurt.memory.cargs import as_int


class DType(str, enum.Enum):
    """An NPU element type; the value is its lowercase name (the RKNN mirror maps `RKNN_TENSOR_*` by name)."""

    FLOAT32 = "float32"
    FLOAT16 = "float16"
    BFLOAT16 = "bfloat16"
    INT8 = "int8"
    UINT8 = "uint8"
    INT16 = "int16"
    UINT16 = "uint16"
    INT32 = "int32"
    UINT32 = "uint32"
    INT64 = "int64"
    BOOL = "bool"
    INT4 = "int4"

    def __str__(self) -> str:
        return self.value

    @property
    def numpy_dtype(self) -> np.dtype:
        """The numpy dtype of the storage (uint8 for packed int4)."""
        return _numpy(self)

    @property
    def bits(self) -> int:
        """Bits per element (4 for int4)."""
        return 4 if self is DType.INT4 else _numpy(self).itemsize * 8

    @property
    def is_float(self) -> bool:
        """True for float32, float16 and bfloat16."""
        return self in (DType.FLOAT32, DType.FLOAT16, DType.BFLOAT16)

    @property
    def is_integer(self) -> bool:
        """True for the (signed or unsigned) integer types, including int4; False for bool and floats."""
        return not self.is_float and self is not DType.BOOL

    def nbytes(self, n_elems: int) -> int:
        """Bytes that `n_elems` elements occupy (int4: ceil(n/2), a trailing odd element takes a whole byte)."""
        n = int(n_elems)
        if n < 0:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"negative element count {n}")
        return (n * self.bits + 7) // 8

    def range(self) -> tuple[int, int]:
        """(min, max) representable value of an integer type; INVALID_ARGUMENT for floats and bool."""
        if self is DType.INT4:
            return -8, 7
        if not self.is_integer:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{self.value} is not an integer type")
        info = np.iinfo(_numpy(self))
        return int(info.min), int(info.max)

    @classmethod
    def from_numpy(cls, dtype: object) -> "DType":
        """The DType of a numpy dtype (or anything `np.dtype()` accepts); ml_dtypes.int4 maps to INT4.

        uint8 maps to UINT8 (packed int4 must be named explicitly). Unknown dtypes raise INVALID_ARGUMENT.
        """
        try:
            dt = np.dtype(dtype)
        except TypeError:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"not a numpy dtype: {dtype!r}") from None
        found = _FROM_NUMPY.get(dt)
        if found is None and dt.name in ("bfloat16", "int4"):       # an ml_dtypes type: ml_dtypes is loaded
            _numpy(DType.BFLOAT16)
            found = _FROM_NUMPY.get(dt)
        if found is None:
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"unsupported element type {dt}")
        return found

    @classmethod
    def parse(cls, value: "DType | str | np.dtype | type") -> "DType":
        """A DType from a DType, its name ("int8", case-insensitive, also "fp16"/"bf16"), or a numpy dtype."""
        if isinstance(value, DType):
            return value
        if isinstance(value, str):
            key = value.strip().lower()
            key = _ALIASES.get(key, key)
            try:
                return cls(key)
            except ValueError:
                pass
        return cls.from_numpy(value)


_NUMPY: dict[DType, np.dtype] = {
    DType.FLOAT32: np.dtype(np.float32), DType.FLOAT16: np.dtype(np.float16),
    DType.INT8: np.dtype(np.int8),
    DType.UINT8: np.dtype(np.uint8), DType.INT16: np.dtype(np.int16), DType.UINT16: np.dtype(np.uint16),
    DType.INT32: np.dtype(np.int32), DType.UINT32: np.dtype(np.uint32), DType.INT64: np.dtype(np.int64),
    DType.BOOL: np.dtype(np.bool_), DType.INT4: np.dtype(np.uint8),
}
_FROM_NUMPY: dict[np.dtype, DType] = {dt: t for t, dt in _NUMPY.items() if t is not DType.INT4}


def _numpy(t: DType) -> np.dtype:
    """The storage dtype of `t`; bfloat16's (and ml_dtypes.int4 as INT4) are added on first use."""
    dt = _NUMPY.get(t)
    if dt is None:
        import ml_dtypes
        dt = _NUMPY[DType.BFLOAT16] = np.dtype(ml_dtypes.bfloat16)
        _FROM_NUMPY[dt] = DType.BFLOAT16
        _FROM_NUMPY[np.dtype(ml_dtypes.int4)] = DType.INT4
        dt = _NUMPY[t]
    return dt
_ALIASES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "half": "float16", "float": "float32"}


def pack_int4(values: np.ndarray, high_first: bool = False, out: np.ndarray | None = None) -> np.ndarray:
    """Pack int4 values (any integer array, each in -8..7) two per byte into a flat uint8 array, or into the first
    bytes of `out` (returned). Low nibble first, as npurt stores int4 tensors; `high_first` for the RKNN matmul
    native B layout. An odd count leaves the last byte's other nibble zero. Out-of-range or non-integer values
    raise INVALID_ARGUMENT.
    """
    v = np.asarray(values)
    if v.dtype.name == "int4":                          # ml_dtypes.int4
        v = v.astype(np.int8)
    if v.dtype.kind not in "iu":
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"pack_int4 needs integers, got {v.dtype}")
    v = v.reshape(-1)
    if v.size and (v.min() < -8 or v.max() > 7):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, "pack_int4: values outside the int4 range -8..7")
    nib = (v.astype(np.int16) & 0xF).astype(np.uint8)
    if nib.size % 2:
        nib = np.append(nib, np.uint8(0))
    first, second = nib[0::2], nib[1::2]
    packed = (first << 4 | second) if high_first else (first | second << 4)
    if out is None:
        return packed.astype(np.uint8)
    np.copyto(out.reshape(-1).view(np.uint8)[: packed.size], packed, casting="unsafe")
    return out


def unpack_int4(packed: np.ndarray, n_elems: int | None = None, high_first: bool = False) -> np.ndarray:
    """The first `n_elems` (default 2 per byte) int4 values of packed bytes, as a flat int8 array; low nibble
    first unless `high_first`. INVALID_ARGUMENT when the bytes hold fewer than `n_elems` values."""
    p = np.asarray(packed)
    if p.dtype != np.uint8 and p.dtype != np.int8:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"unpack_int4 needs uint8 bytes, got {p.dtype}")
    p = p.reshape(-1).view(np.uint8)
    n = 2 * p.size if n_elems is None else as_int(n_elems, "unpack_int4: n_elems")
    if n < 0 or (n + 1) // 2 > p.size:
        raise NpuError(ErrorCode.INVALID_ARGUMENT,
                       f"unpack_int4: {n} elements do not fit {p.size} bytes (need ceil(n/2) bytes)")
    p = p[: (n + 1) // 2]
    lo = (p & 0xF).astype(np.int8)
    hi = (p >> 4).astype(np.int8)
    first, second = (hi, lo) if high_first else (lo, hi)
    out = np.empty(2 * p.size, dtype=np.int8)
    out[0::2] = np.where(first > 7, first - 16, first)
    out[1::2] = np.where(second > 7, second - 16, second)
    return out[:n]
