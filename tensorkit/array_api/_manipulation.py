"""Manipulation functions: broadcasting, joining, reshaping and reordering arrays."""

from __future__ import annotations

from ..ops import shape as shape_ops
from ..ops.conversion import clone
from ..tensor import Tensor, normalize_dim
from ._axes import Axes
from ._promotion import common


def broadcast_arrays(*arrays: Tensor) -> list[Tensor]:
    """The arrays broadcast against each other (as views)."""
    return list(shape_ops.broadcast_tensors(*arrays))


def broadcast_to(x: Tensor, /, shape: tuple[int, ...]) -> Tensor:
    """``x`` broadcast to ``shape`` (a view)."""
    return shape_ops.broadcast_to(x, tuple(shape))


def concat(arrays: tuple[Tensor, ...] | list[Tensor], /, *, axis: int | None = 0) -> Tensor:
    """The arrays joined along ``axis`` (flattened first when ``axis`` is None)."""
    promoted = common(*arrays)
    if axis is None:
        return shape_ops.cat([shape_ops.reshape(a, (-1,)) for a in promoted], 0)
    return shape_ops.cat(list(promoted), axis)


def expand_dims(x: Tensor, /, axis: int = 0) -> Tensor:
    """``x`` with a new axis of size one at ``axis`` (in ``[-ndim - 1, ndim]``)."""
    return shape_ops.unsqueeze(x, axis)


def flip(x: Tensor, /, *, axis: Axes | None = None) -> Tensor:
    """``x`` with the order of elements reversed along ``axis`` (all axes by default)."""
    return shape_ops.flip(x, tuple(range(x.ndim)) if axis is None else axis)


def moveaxis(x: Tensor, source: Axes, destination: Axes, /) -> Tensor:
    """``x`` with the axes ``source`` moved to positions ``destination``."""
    return shape_ops.movedim(x, source, destination)


def permute_dims(x: Tensor, /, axes: tuple[int, ...]) -> Tensor:
    """``x`` with its axes reordered as ``axes``."""
    return shape_ops.permute(x, tuple(axes))


def repeat(x: Tensor, repeats: int | Tensor, /, *, axis: int | None = None) -> Tensor:
    """Each element repeated ``repeats`` times along ``axis`` (of the flattened array if
    None)."""
    return shape_ops.repeat_interleave(x, repeats, axis)


def reshape(x: Tensor, /, shape: tuple[int, ...], *, copy: bool | None = None) -> Tensor:
    """``x`` with a new shape; ``copy=True`` always copies, ``copy=False`` raises ValueError
    when a view is impossible."""
    if copy is False:
        try:
            return shape_ops.view(x, tuple(shape))
        except RuntimeError as error:
            raise ValueError(str(error)) from None
    out = shape_ops.reshape(x, tuple(shape))
    return clone(out) if copy else out


def roll(x: Tensor, /, shift: Axes, *, axis: Axes | None = None) -> Tensor:
    """Elements shifted by ``shift`` along ``axis`` (of the flattened array if None),
    wrapping around."""
    return shape_ops.roll(x, shift, axis)


def squeeze(x: Tensor, /, axis: Axes) -> Tensor:
    """``x`` without the size-one axes ``axis``; raises ValueError for a longer axis."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    for a in axes:
        if x.shape[normalize_dim(a, x.ndim)] != 1:
            raise ValueError(f"squeeze: axis {a} has size {x.shape[a]}, not 1")
    return shape_ops.squeeze(x, axes)


def stack(arrays: tuple[Tensor, ...] | list[Tensor], /, *, axis: int = 0) -> Tensor:
    """Same-shaped arrays joined along a new axis."""
    return shape_ops.stack(list(common(*arrays)), axis)


def tile(x: Tensor, repetitions: tuple[int, ...], /) -> Tensor:
    """``x`` repeated ``repetitions[i]`` times along each axis."""
    return shape_ops.tile(x, tuple(repetitions))


def unstack(x: Tensor, /, *, axis: int = 0) -> tuple[Tensor, ...]:
    """The slices of ``x`` along ``axis`` (views)."""
    return shape_ops.unbind(x, axis)
