"""The ``axis`` argument of reductions as the standard reads it."""

from __future__ import annotations

from ..ops import shape as shape_ops
from ..tensor import Tensor

Axes = int | tuple[int, ...]


def reduction_args(
    x: Tensor, axis: Axes | None, keepdims: bool
) -> tuple[Tensor, Axes | None, bool]:
    """``(x, axis, keepdims)`` for a tensorkit reduction.

    ``axis=()`` reduces over no axes (NumPy's reading) where tensorkit, like PyTorch, reduces
    over all of them; it becomes a reduction over a new trailing axis of size one.
    """
    if isinstance(axis, tuple) and not axis:
        return shape_ops.unsqueeze(x, -1), -1, False
    return x, axis, keepdims
