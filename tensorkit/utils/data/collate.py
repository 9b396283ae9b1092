"""Turning a list of samples into a batch (``default_collate``) and NumPy data into tensors
(``default_convert``), with PyTorch's rules for every element type."""

from __future__ import annotations

import collections.abc
import copy
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ..._dtype import float64
from ...ops.creation import as_tensor, from_numpy, tensor
from ...ops.shape import stack
from ...tensor import Tensor

__all__ = ["collate", "default_collate", "default_collate_fn_map", "default_convert"]

_STRING_OR_OBJECT = re.compile(r"[SaUO]")  # NumPy dtype kinds that can't become tensors

_ERROR = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)

CollateMap = dict[type | tuple[type, ...], Callable]


def _is_numpy_data(data: Any) -> bool:
    kind = type(data)
    return kind.__module__ == "numpy" and kind.__name__ not in ("str_", "bytes_")


def default_convert(data: Any) -> Any:
    """NumPy arrays and scalars (also inside dicts, lists, tuples, namedtuples) become tensors;
    everything else is left as it is. The collate_fn when automatic batching is off."""
    if isinstance(data, Tensor):
        return data
    if _is_numpy_data(data):
        if isinstance(data, np.ndarray) and _STRING_OR_OBJECT.search(data.dtype.str):
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return rebuild_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, str | bytes):
        return rebuild_sequence(data, [default_convert(d) for d in data])
    return data


def rebuild_mapping(like: collections.abc.Mapping, items: dict) -> Any:
    """``items`` in a mapping of ``like``'s type when it can be made, else a dict."""
    try:
        if isinstance(like, collections.abc.MutableMapping):
            clone = copy.copy(like)
            clone.update(items)
            return clone
        return type(like)(items)
    except TypeError:
        return items


def rebuild_sequence(like: collections.abc.Sequence, items: list) -> Any:
    """``items`` in a sequence of ``like``'s type when it can be made, else a list."""
    try:
        if isinstance(like, collections.abc.MutableSequence):
            clone = copy.copy(like)
            for i, item in enumerate(items):
                clone[i] = item
            return clone
        return type(like)(items)
    except TypeError:
        return items


def collate(batch: list, *, collate_fn_map: CollateMap | None = None) -> Any:
    """Collate ``batch`` by the type of its first element: ``collate_fn_map`` (exact type,
    then the first key it is an instance of) handles leaves; containers are recursed into."""
    elem = batch[0]
    if collate_fn_map is not None:
        if type(elem) in collate_fn_map:
            return collate_fn_map[type(elem)](batch, collate_fn_map=collate_fn_map)
        for kind, fn in collate_fn_map.items():
            if isinstance(elem, kind):
                return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        items = {
            key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem
        }
        return rebuild_mapping(elem, items)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(
            *(
                collate(samples, collate_fn_map=collate_fn_map)
                for samples in zip(*batch, strict=False)
            )
        )
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(sample) != size for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        # Each column is a tuple, as in PyTorch (a column of strings stays that tuple).
        columns = [collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch, strict=False)]
        return columns if isinstance(elem, tuple) else rebuild_sequence(elem, columns)
    raise TypeError(_ERROR.format(type(elem)))


def _collate_tensors(batch: list, *, collate_fn_map: CollateMap | None = None) -> Tensor:
    return stack(batch, 0)


def _collate_arrays(batch: list, *, collate_fn_map: CollateMap | None = None) -> Any:
    if _STRING_OR_OBJECT.search(batch[0].dtype.str):
        raise TypeError(_ERROR.format(batch[0].dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def _collate_numpy_scalars(batch: list, *, collate_fn_map: CollateMap | None = None) -> Tensor:
    return from_numpy(np.asarray(batch))


def _collate_floats(batch: list, *, collate_fn_map: CollateMap | None = None) -> Tensor:
    # Through NumPy: tk.tensor(floats, dtype=float64) would round through float32.
    return from_numpy(np.asarray(batch, dtype=float64.np))


def _collate_ints(batch: list, *, collate_fn_map: CollateMap | None = None) -> Tensor:
    return tensor(batch)


def _keep(batch: list, *, collate_fn_map: CollateMap | None = None) -> list:
    return batch


default_collate_fn_map: CollateMap = {
    Tensor: _collate_tensors,
    np.ndarray: _collate_arrays,
    (np.bool_, np.number, np.object_): _collate_numpy_scalars,
    float: _collate_floats,
    int: _collate_ints,
    str: _keep,
    bytes: _keep,
}


def default_collate(batch: list) -> Any:
    """Stack a list of samples into a batch, as PyTorch's ``default_collate``.

    Tensors are stacked on a new first dimension; NumPy arrays and scalars become tensors of
    their dtype; Python floats a float64 tensor, ints (and bools) an int64 (bool) tensor;
    strings and bytes stay a list. Dicts, namedtuples and sequences are collated field by
    field (a tuple of fields comes back as a list, as in PyTorch).
    """
    return collate(batch, collate_fn_map=default_collate_fn_map)
