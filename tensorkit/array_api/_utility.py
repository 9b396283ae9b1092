"""Utility functions: all, any and diff."""

from __future__ import annotations

from ..ops import binary, reduction
from ..ops import shape as shape_ops
from ..ops.creation import full
from ..tensor import Tensor, normalize_dim
from ._axes import Axes, reduction_args
from ._promotion import common, result_dtype


def all(x: Tensor, /, *, axis: Axes | None = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether every element along ``axis`` is true (nonzero)."""
    return reduction.all(*reduction_args(x, axis, keepdims))


def any(x: Tensor, /, *, axis: Axes | None = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Whether some element along ``axis`` is true (nonzero)."""
    return reduction.any(*reduction_args(x, axis, keepdims))


def diff(
    x: Tensor,
    /,
    *,
    axis: int = -1,
    n: int = 1,
    prepend: Tensor | None = None,
    append: Tensor | None = None,
) -> Tensor:
    """The ``n``-th forward difference along ``axis``, after joining ``prepend`` and
    ``append`` to ``x`` along it. Booleans differ where neighbours differ (``!=``)."""
    if n < 0:
        raise ValueError(f"diff: n must be non-negative, got {n}")
    d = normalize_dim(axis, x.ndim)
    if prepend is not None or append is not None:
        pieces = [_edge(p, x, d) for p in (prepend, x, append) if p is not None]
        x = shape_ops.cat(list(common(*pieces)), d)
    for _ in range(n):
        length = x.shape[d] - 1 if x.shape[d] else 0
        later = shape_ops.narrow(x, d, min(1, x.shape[d]), length)
        earlier = shape_ops.narrow(x, d, 0, length)
        x = binary.ne(later, earlier) if x.dtype.name == "bool" else later - earlier
    return x


def _edge(value: Tensor | bool | int | float | complex, x: Tensor, axis: int) -> Tensor:
    """``prepend``/``append`` as an array; a scalar becomes one slice of ``x``'s shape."""
    if isinstance(value, Tensor):
        return value
    shape = tuple(x.shape[:axis]) + (1,) + tuple(x.shape[axis + 1 :])
    return full(shape, value, dtype=result_dtype([x, value]), device=x.device)
