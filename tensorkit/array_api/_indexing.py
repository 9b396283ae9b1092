"""Indexing functions: take and take_along_axis (negative indices count from the end)."""

from __future__ import annotations

from ..ops import binary, indexing
from ..tensor import Tensor, normalize_dim


def take(x: Tensor, indices: Tensor, /, *, axis: int | None = None) -> Tensor:
    """The elements of ``x`` at ``indices`` (1-D) along ``axis``; ``axis`` may be left out
    only for a 1-D ``x``."""
    if axis is None:
        if x.ndim != 1:
            raise ValueError("take: axis must be given for arrays with more than one dimension")
        axis = 0
    if indices.ndim != 1:
        raise ValueError(f"take: indices must be 1-D, got shape {tuple(indices.shape)}")
    size = x.shape[normalize_dim(axis, x.ndim)]
    wrapped = binary.where(binary.lt(indices, 0), indices + size, indices)  # index_select's >= 0
    return indexing.index_select(x, axis, wrapped)


def take_along_axis(x: Tensor, indices: Tensor, /, *, axis: int = -1) -> Tensor:
    """The elements of ``x`` at ``indices`` along ``axis``, position by position in the
    other axes (which broadcast)."""
    if indices.ndim != x.ndim:
        raise ValueError(
            f"take_along_axis: indices must have x's rank {x.ndim}, got {indices.ndim}"
        )
    size = x.shape[normalize_dim(axis, x.ndim)]
    wrapped = binary.where(binary.lt(indices, 0), indices + size, indices)
    return indexing.take_along_dim(x, wrapped, axis)
