"""Data types and the data type functions: astype, can_cast, finfo, iinfo, isdtype,
result_type.

The dtype objects are tensorkit's own. Tensorkit has no uint16, uint32 or uint64, so the
namespace has none either.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _dtype
from .._backend import as_device
from .._dtype import (
    bool_,
    complex64,
    complex128,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    uint8,
)
from ..ops.conversion import clone
from ..tensor import Tensor
from ._promotion import result_dtype

bool = bool_  # noqa: A001

STANDARD_DTYPES = (bool_, int8, int16, int32, int64, uint8, float32, float64, complex64, complex128)

# The kinds ``isdtype`` and ``__array_namespace_info__().dtypes`` know, as tests on a dtype.
KINDS = {
    "bool": lambda d: d is bool_,
    "signed integer": lambda d: d.np.kind == "i",
    "unsigned integer": lambda d: d.np.kind == "u",
    "integral": lambda d: d.np.kind in "iu",
    "real floating": lambda d: d.np.kind == "f",
    "complex floating": lambda d: d.np.kind == "c",
    "numeric": lambda d: d.np.kind in "iufc",
}


def astype(x: Tensor, dtype: _dtype.dtype, /, *, copy: bool = True, device: Any = None) -> Tensor:
    """``x`` converted to ``dtype`` (and moved to ``device``); a new array unless
    ``copy=False`` and nothing needs to change."""
    out = x
    if device is not None and as_device(device) is not out.device:
        out = out.to(as_device(device))
    if dtype is not out.dtype:
        out = out.to(dtype)
    if copy and out is x:
        out = clone(x)
    return out


def can_cast(from_: _dtype.dtype | Tensor, to: _dtype.dtype, /) -> builtins.bool:
    """Whether the standard's promotion rules allow casting ``from_`` to ``to``.

    Only casts inside the standard's promotion lattice count: mixed kinds (integer to
    floating, bool to integer), which the standard leaves unspecified, are not allowed.
    """
    source = from_.dtype if isinstance(from_, Tensor) else from_
    if not isinstance(source, _dtype.dtype) or not isinstance(to, _dtype.dtype):
        raise TypeError(f"can_cast expects dtypes or arrays, got {from_!r} and {to!r}")
    if _lattice(source) != _lattice(to):
        return False
    return promote_types(source, to) is to


def _lattice(d: _dtype.dtype) -> str:
    """The part of the promotion lattice a dtype is in (floats and complexes share one)."""
    if d is bool_:
        return "bool"
    return "integral" if d.np.kind in "iu" else "inexact"


@dataclass(frozen=True)
class finfo_object:  # noqa: N801 - the standard's name
    """Machine limits of a floating-point dtype."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: _dtype.dtype


@dataclass(frozen=True)
class iinfo_object:  # noqa: N801 - the standard's name
    """Machine limits of an integer dtype."""

    bits: int
    max: int
    min: int
    dtype: _dtype.dtype


def finfo(type: _dtype.dtype | Tensor, /) -> finfo_object:
    """Limits of a floating dtype; for a complex dtype, those of its real components."""
    d = _dtype_of(type)
    if d.np.kind not in "fc":
        raise TypeError(f"finfo expects a floating-point dtype, got {d}")
    real = d.to_real()
    info = np.finfo(real.np)
    return finfo_object(
        bits=info.bits,
        eps=float(info.eps),
        max=float(info.max),
        min=float(info.min),
        smallest_normal=float(info.smallest_normal),
        dtype=real,
    )


def iinfo(type: _dtype.dtype | Tensor, /) -> iinfo_object:
    """Limits of an integer dtype."""
    d = _dtype_of(type)
    if d.np.kind not in "iu":
        raise TypeError(f"iinfo expects an integer dtype, got {d}")
    info = np.iinfo(d.np)
    return iinfo_object(bits=info.bits, max=int(info.max), min=int(info.min), dtype=d)


def _dtype_of(value: _dtype.dtype | Tensor) -> _dtype.dtype:
    if isinstance(value, Tensor):
        return value.dtype
    if isinstance(value, _dtype.dtype):
        return value
    raise TypeError(f"expected a dtype or an array, got {type(value).__name__}")


def isdtype(
    dtype: _dtype.dtype, kind: _dtype.dtype | str | tuple[_dtype.dtype | str, ...]
) -> builtins.bool:
    """Whether ``dtype`` is ``kind``: a dtype, a kind name such as "real floating", or a
    tuple of those."""
    if not isinstance(dtype, _dtype.dtype):
        raise TypeError(f"isdtype expects a dtype, got {dtype!r}")
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, _dtype.dtype):
        return dtype is kind
    if isinstance(kind, str):
        try:
            return KINDS[kind](dtype)
        except KeyError:
            raise ValueError(
                f"unknown dtype kind {kind!r}; expected one of {', '.join(map(repr, KINDS))}"
            ) from None
    raise TypeError(f"kind must be a dtype, a string or a tuple of those, got {kind!r}")


def result_type(*arrays_and_dtypes: Tensor | _dtype.dtype | complex) -> _dtype.dtype:
    """The dtype the standard's promotion rules give these arrays, dtypes and scalars."""
    return result_dtype(arrays_and_dtypes)
