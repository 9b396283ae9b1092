"""Copying a batch's CPU tensors into page-locked host memory (faster, asynchronous copies to
the GPU). Used by ``DataLoader(pin_memory=True)`` when a CUDA GPU is available."""

from __future__ import annotations

import collections.abc
from typing import Any

from ..._backend import cpu
from ...tensor import Tensor, wrap
from .collate import rebuild_mapping, rebuild_sequence


def _pin_tensor(tensor: Tensor) -> Tensor:
    import cupyx

    if tensor.device is not cpu:
        return tensor
    pinned = cupyx.empty_pinned(tensor.shape, dtype=tensor._data.dtype)
    pinned[...] = tensor._data
    out = wrap(pinned, cpu)
    out._requires_grad = tensor.requires_grad
    return out


def pin_memory(data: Any) -> Any:
    """``data`` with every CPU tensor (also inside dicts, lists, tuples, namedtuples) copied
    into pinned memory; other values are kept."""
    if isinstance(data, Tensor):
        return _pin_tensor(data)
    if isinstance(data, str | bytes):
        return data
    if isinstance(data, collections.abc.Mapping):
        return rebuild_mapping(data, {key: pin_memory(value) for key, value in data.items()})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(pin_memory(item) for item in data))
    if isinstance(data, tuple):
        return [pin_memory(item) for item in data]
    if isinstance(data, collections.abc.Sequence):
        return rebuild_sequence(data, [pin_memory(item) for item in data])
    return data
