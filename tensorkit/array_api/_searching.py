"""Searching functions: argmax, argmin, count_nonzero, nonzero, searchsorted, where."""

from __future__ import annotations

from typing import Literal

from ..ops import binary, indexing, reduction
from ..ops import shape as shape_ops
from ..tensor import Tensor
from ._axes import Axes, reduction_args
from ._promotion import common

Operand = Tensor | bool | int | float | complex


def argmax(x: Tensor, /, *, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index of the first largest value along ``axis`` (of the flattened array if None)."""
    return _keep_all_dims(reduction.argmax(x, axis, keepdims), x, axis, keepdims)


def argmin(x: Tensor, /, *, axis: int | None = None, keepdims: bool = False) -> Tensor:
    """Index of the first smallest value along ``axis`` (of the flattened array if None)."""
    return _keep_all_dims(reduction.argmin(x, axis, keepdims), x, axis, keepdims)


def _keep_all_dims(out: Tensor, x: Tensor, axis: int | None, keepdims: bool) -> Tensor:
    """With ``axis=None, keepdims=True`` the result keeps ``x``'s rank (all sizes 1)."""
    if axis is None and keepdims:
        return shape_ops.reshape(out, (1,) * x.ndim)
    return out


def count_nonzero(x: Tensor, /, *, axis: Axes | None = None, keepdims: bool = False) -> Tensor:
    """How many elements along ``axis`` are nonzero (an int64 array)."""
    return reduction.sum(*reduction_args(binary.ne(x, 0), axis, keepdims))


def nonzero(x: Tensor, /) -> tuple[Tensor, ...]:
    """The indices of the nonzero elements, one int64 array per axis."""
    if x.ndim == 0:
        raise ValueError("nonzero needs an array of at least one dimension")
    return indexing.nonzero(x, as_tuple=True)


def searchsorted(
    x1: Tensor,
    x2: Tensor,
    /,
    *,
    side: Literal["left", "right"] = "left",
    sorter: Tensor | None = None,
) -> Tensor:
    """Where to insert ``x2`` into the sorted 1-D ``x1`` (sorted by ``sorter`` if given) to
    keep it sorted; ``side`` picks the end of a run of equal values."""
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted needs a 1-D x1, got shape {tuple(x1.shape)}")
    if sorter is not None:
        x1 = indexing.index_select(x1, 0, sorter)
    return indexing.searchsorted(x1, x2, side=side)


def where(condition: Tensor, x1: Operand, x2: Operand, /) -> Tensor:
    """``x1`` where ``condition`` is true, else ``x2`` (either may be a scalar)."""
    return binary.where(condition, *common(x1, x2))
