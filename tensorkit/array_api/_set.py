"""Set functions: the unique values of an array, with first indices, inverse indices and counts.

Values come back sorted (complex ones by real, then imaginary part). As the standard asks,
NaNs never compare equal, so each NaN is its own unique value. The results are not
differentiable.
"""

from __future__ import annotations

from typing import NamedTuple

from .._dtype import bool_, int64
from ..ops import binary, indexing, reduction
from ..ops import complex as complex_ops
from ..ops import shape as shape_ops
from ..ops.creation import ones, tensor, zeros
from ..tensor import Tensor


class UniqueAllResult(NamedTuple):
    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCountsResult(NamedTuple):
    values: Tensor
    counts: Tensor


class UniqueInverseResult(NamedTuple):
    values: Tensor
    inverse_indices: Tensor


def unique_all(x: Tensor, /) -> UniqueAllResult:
    """The unique values of ``x``, the flat index of each one's first occurrence, each
    element's position among the values (shaped like ``x``) and how often each occurs."""
    return _unique(x)


def unique_counts(x: Tensor, /) -> UniqueCountsResult:
    """The unique values of ``x`` and how often each occurs."""
    found = _unique(x)
    return UniqueCountsResult(found.values, found.counts)


def unique_inverse(x: Tensor, /) -> UniqueInverseResult:
    """The unique values of ``x`` and each element's position among them (shaped like
    ``x``)."""
    found = _unique(x)
    return UniqueInverseResult(found.values, found.inverse_indices)


def unique_values(x: Tensor, /) -> Tensor:
    """The unique values of ``x``."""
    return _unique(x).values


def _sorting_order(flat: Tensor) -> Tensor:
    """The stable ascending order of a 1-D array: by real part, then imaginary part, for
    complex values (NaNs last)."""
    if not flat.is_complex():
        return indexing.argsort(flat, 0, stable=True)
    order = indexing.argsort(complex_ops.imag(flat), 0, stable=True)
    return order[indexing.argsort(complex_ops.real(flat)[order], 0, stable=True)]


def _unique(x: Tensor) -> UniqueAllResult:
    """Sort the flattened values stably; a new value starts wherever a sorted value differs
    from the one before it (``!=``, so NaNs always start one)."""
    flat = shape_ops.reshape(x.detach(), (-1,))
    n = flat.shape[0]
    order = _sorting_order(flat)
    ordered = flat[order]
    first = ones(min(n, 1), dtype=bool_, device=x.device)
    starts = shape_ops.cat([first, binary.ne(ordered[1:], ordered[:-1])], 0)
    group = reduction.cumsum(starts, 0) - 1
    inverse = indexing.scatter(zeros(n, dtype=int64, device=x.device), 0, order, group)
    start_positions = indexing.nonzero(starts, as_tuple=True)[0]
    ends = shape_ops.cat([start_positions[1:], tensor([n], device=x.device)], 0)
    return UniqueAllResult(
        values=ordered[starts],
        indices=order[starts],
        inverse_indices=shape_ops.reshape(inverse, tuple(x.shape)),
        counts=ends - start_positions,
    )
