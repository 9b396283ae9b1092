"""Indexing: take and take_along_axis (negative indices count from the end), and the
standard's ``x[key]`` and ``x[key] = value`` for the namespace's arrays."""

from __future__ import annotations

import builtins
import operator
from typing import Any

import numpy as np

from .._dtype import bool_
from ..ops import binary, indexing
from ..ops import shape as shape_ops
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


# ------------------------------------------------------------------ the array's indexing
# The standard's indexing is NumPy's basic indexing plus integer arrays and one boolean mask;
# tensorkit's (PyTorch's) has all of it except slices with negative steps, added here.
def _consumed(item: Any) -> int:
    """How many dimensions of the indexed array ``item`` stands for."""
    if item is None or item is Ellipsis or isinstance(item, bool):
        return 0
    if isinstance(item, Tensor | np.ndarray) and item.dtype in (bool_, np.bool_):
        return item.ndim
    return 1


def _expanded(x: Tensor, key: Any) -> tuple:
    """``key`` as a tuple with its Ellipsis (if any) replaced by full slices."""
    items = key if isinstance(key, tuple) else (key,)
    ellipses = sum(item is Ellipsis for item in items)
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if not ellipses:
        return items
    at = next(i for i, item in enumerate(items) if item is Ellipsis)
    rest = x.ndim - sum(_consumed(item) for item in items)
    return (*items[:at], *(slice(None),) * builtins.max(rest, 0), *items[at + 1 :])


def _is_backward(item: Any) -> bool:
    return isinstance(item, slice) and item.step is not None and operator.index(item.step) < 0


def _forward_slice(item: slice, size: int, on_flipped: bool) -> slice:
    """A slice with a positive step over the elements ``item`` (negative step) takes: in the
    flipped dimension (``on_flipped``), or in the original one but in ascending order."""
    start, stop, step = item.indices(size)
    count = len(range(start, stop, step))
    if not count:
        return slice(0, 0)
    if on_flipped:
        first = size - 1 - start
        return slice(first, first + (count - 1) * -step + 1, -step)
    last = start + (count - 1) * step
    return slice(last, start + 1, -step)


def getitem(x: Tensor, key: Any) -> Tensor:
    """``x[key]`` by the standard: slices may step backwards (``x[::-1]``, ``x[5:1:-2]``)."""
    items = _expanded(x, key)
    if not any(_is_backward(item) for item in items):
        return Tensor.__getitem__(x, key)
    flipped, new_items, dim = [], [], 0
    for item in items:
        if _is_backward(item):
            flipped.append(dim)
            item = _forward_slice(item, x.shape[dim], on_flipped=True)
        new_items.append(item)
        dim += _consumed(item)
    return Tensor.__getitem__(shape_ops.flip(x, flipped), tuple(new_items))


def setitem(x: Tensor, key: Any, value: Any) -> None:
    """``x[key] = value`` by the standard: slices may step backwards, with basic indices."""
    items = _expanded(x, key)
    if not any(_is_backward(item) for item in items):
        Tensor.__setitem__(x, key, value)
        return
    if any(isinstance(item, Tensor | np.ndarray | list) for item in items):
        raise IndexError(
            "setitem: a slice with a negative step cannot be combined with array indices; "
            "index with the slice first or use a positive step"
        )
    new_items, reversed_out, dim, out = [], [], 0, 0
    for item in items:
        if _is_backward(item):
            reversed_out.append(out)
            item = _forward_slice(item, x.shape[dim], on_flipped=False)
        new_items.append(item)
        dim += _consumed(item)
        out += isinstance(item, slice) or item is None
    key = tuple(new_items)
    if isinstance(value, Tensor):
        target = tuple(Tensor.__getitem__(x, key).shape)
        value = shape_ops.flip(shape_ops.broadcast_to(value, target), reversed_out)
    Tensor.__setitem__(x, key, value)
