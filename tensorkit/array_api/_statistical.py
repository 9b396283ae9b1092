"""Statistical functions: reductions (sum, prod, mean, var, std, max, min) and cumulative sums
and products, with the standard's dtypes and defaults (``correction=0`` for var and std)."""

from __future__ import annotations

from collections.abc import Callable

from .._dtype import dtype
from ..ops import reduction
from ..ops import shape as shape_ops
from ..ops.creation import full
from ..tensor import Tensor, normalize_dim
from ._axes import Axes, reduction_args


def cumulative_sum(
    x: Tensor,
    /,
    *,
    axis: int | None = None,
    dtype: dtype | None = None,
    include_initial: bool = False,
) -> Tensor:
    """Running sums along ``axis``, optionally starting with the empty sum (0)."""
    return _cumulative(reduction.cumsum, 0, x, axis, dtype, include_initial)


def cumulative_prod(
    x: Tensor,
    /,
    *,
    axis: int | None = None,
    dtype: dtype | None = None,
    include_initial: bool = False,
) -> Tensor:
    """Running products along ``axis``, optionally starting with the empty product (1)."""
    return _cumulative(reduction.cumprod, 1, x, axis, dtype, include_initial)


def _cumulative(
    scan: Callable[..., Tensor],
    initial: int,
    x: Tensor,
    axis: int | None,
    dtype: dtype | None,
    include_initial: bool,
) -> Tensor:
    if axis is None:
        if x.ndim > 1:
            raise ValueError("axis must be given for arrays with more than one dimension")
        axis = 0
    out = scan(x, axis, dtype=dtype)
    if not include_initial:
        return out
    d = normalize_dim(axis, out.ndim)
    first_shape = tuple(out.shape[:d]) + (1,) + tuple(out.shape[d + 1 :])
    first = full(first_shape, initial, dtype=out.dtype, device=out.device)
    return shape_ops.cat([first, out], d)


def max(x: Tensor, /, *, axis: Axes | None = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """The largest value along ``axis`` (all axes by default)."""
    return reduction.amax(*reduction_args(x, axis, keepdims))


def min(x: Tensor, /, *, axis: Axes | None = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """The smallest value along ``axis`` (all axes by default)."""
    return reduction.amin(*reduction_args(x, axis, keepdims))


def mean(x: Tensor, /, *, axis: Axes | None = None, keepdims: bool = False) -> Tensor:
    """The arithmetic mean along ``axis``; ``x`` must be floating (real or complex)."""
    if not (x.is_floating_point() or x.is_complex()):
        raise TypeError(f"mean needs a floating-point array, got dtype {x.dtype}")
    return reduction.mean(*reduction_args(x, axis, keepdims))


def prod(
    x: Tensor,
    /,
    *,
    axis: Axes | None = None,
    dtype: dtype | None = None,
    keepdims: bool = False,
) -> Tensor:
    """The product along ``axis``; integers and bools accumulate in int64 by default."""
    return reduction.prod(*reduction_args(x, axis, keepdims), dtype=dtype)


def sum(  # noqa: A001
    x: Tensor,
    /,
    *,
    axis: Axes | None = None,
    dtype: dtype | None = None,
    keepdims: bool = False,
) -> Tensor:
    """The sum along ``axis``; integers and bools accumulate in int64 by default."""
    return reduction.sum(*reduction_args(x, axis, keepdims), dtype=dtype)


def std(
    x: Tensor,
    /,
    *,
    axis: Axes | None = None,
    correction: int | float = 0.0,
    keepdims: bool = False,
) -> Tensor:
    """The standard deviation along ``axis``, dividing by ``N - correction``."""
    x, axis, keepdims = reduction_args(x, axis, keepdims)
    return reduction.std(x, axis, keepdim=keepdims, correction=correction)


def var(
    x: Tensor,
    /,
    *,
    axis: Axes | None = None,
    correction: int | float = 0.0,
    keepdims: bool = False,
) -> Tensor:
    """The variance along ``axis``, dividing by ``N - correction``."""
    x, axis, keepdims = reduction_args(x, axis, keepdims)
    return reduction.var(x, axis, keepdim=keepdims, correction=correction)
