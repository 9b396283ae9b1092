"""Sorting functions: argsort and sort (stable by default, as the standard asks)."""

from __future__ import annotations

from ..ops import indexing
from ..tensor import Tensor


def argsort(
    x: Tensor, /, *, axis: int = -1, descending: bool = False, stable: bool = True
) -> Tensor:
    """Indices that sort ``x`` along ``axis``; equal values keep their order."""
    return indexing.argsort(x, axis, descending, stable)


def sort(x: Tensor, /, *, axis: int = -1, descending: bool = False, stable: bool = True) -> Tensor:
    """``x`` sorted along ``axis`` (differentiable: gradients go back to where each value
    came from)."""
    return indexing.sort(x, axis, descending, stable).values
