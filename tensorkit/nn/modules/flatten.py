"""Flatten and Unflatten: reshape a range of dims, or one dim, of the input."""

from __future__ import annotations

from collections.abc import Sequence

from ...tensor import Tensor
from .module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Flatten dims ``start_dim`` .. ``end_dim`` into one (by default all but the batch)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


def _check_sizes(sizes: object) -> None:
    if not isinstance(sizes, tuple | list):
        raise TypeError(
            f"unflattened_size must be tuple of ints, but found type {type(sizes).__name__}"
        )
    for index, size in enumerate(sizes):
        if not isinstance(size, int):
            raise TypeError(
                "unflattened_size must be tuple of ints, but found element of type "
                f"{type(size).__name__} at pos {index}"
            )


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size`` (one entry may be -1)."""

    def __init__(self, dim: int, unflattened_size: Sequence[int]) -> None:
        super().__init__()
        _check_sizes(unflattened_size)
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
