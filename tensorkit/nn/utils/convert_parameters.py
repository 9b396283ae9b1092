"""Flatten parameters into one vector, and back."""

from __future__ import annotations

from collections.abc import Iterable

from ...ops.shape import cat
from ...tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_same_device(param: Tensor, device: object) -> object:
    if device is not None and param.device is not device:
        raise TypeError(
            "Found two parameters on different devices, this is currently not supported."
        )
    return param.device


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and concatenated (a new tensor, in the graph)."""
    device = None
    flat = []
    for param in parameters:
        device = _check_same_device(param, device)
        flat.append(param.reshape(-1))
    return cat(flat)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Make each parameter's data the next slice of ``vec`` (shared storage, as PyTorch)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected tensorkit.Tensor, but got: {type(vec).__name__}")
    device = None
    offset = 0
    for param in parameters:
        device = _check_same_device(param, device)
        count = param.numel()
        param.data = vec[offset : offset + count].reshape(param.shape).data
        offset += count
