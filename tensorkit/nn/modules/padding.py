"""Padding layers: ZeroPad2d, ConstantPad1d/2d and ReflectionPad2d."""

from __future__ import annotations

from typing import Any

from ...tensor import Tensor
from .. import functional as F  # noqa: N812
from .module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ReflectionPad2d", "ZeroPad2d"]


def _amounts(padding: Any, n: int) -> tuple[int, ...]:
    """An int repeated ``n`` times, or the given F.pad amounts (last dim first)."""
    return (padding,) * n if isinstance(padding, int) else tuple(padding)


class _ConstantPadNd(Module):
    _amount_count = 0

    def __init__(self, padding: Any, value: float) -> None:
        super().__init__()
        self.padding = _amounts(padding, self._amount_count)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with ``value``; ``padding`` is an int or (left, right)."""

    _amount_count = 2


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dims with ``value``; ``padding`` is an int or
    (left, right, top, bottom)."""

    _amount_count = 4


class ZeroPad2d(ConstantPad2d):
    """Pad the last two dims with zeros; ``padding`` is an int or (left, right, top, bottom)."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad2d(Module):
    """Pad the last two dims with their reflection (the edge itself not repeated)."""

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _amounts(padding, 4)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "reflect")

    def extra_repr(self) -> str:
        return f"{self.padding}"
