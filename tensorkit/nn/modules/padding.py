"""Padding layers: zero, constant, reflection, replication and circular padding of the last
one, two or three dims (F.pad as a layer)."""

from __future__ import annotations

from typing import Any

from ...tensor import Tensor
from .. import functional as F  # noqa: N812
from .module import Module

__all__ = [
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
]


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


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dims with ``value``; ``padding`` is an int or
    (left, right, top, bottom, front, back)."""

    _amount_count = 6


class ZeroPad1d(ConstantPad1d):
    """Pad the last dim with zeros; ``padding`` is an int or (left, right)."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pad the last two dims with zeros; ``padding`` is an int or (left, right, top, bottom)."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pad the last three dims with zeros; ``padding`` is an int or
    (left, right, top, bottom, front, back)."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _PadNd(Module):
    """F.pad in one non-constant mode over ``_amount_count // 2`` dims."""

    _amount_count = 0
    _mode = ""

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _amounts(padding, self._amount_count)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Pad the last dim with its reflection (the edge itself not repeated)."""

    _amount_count, _mode = 2, "reflect"


class ReflectionPad2d(_PadNd):
    """Pad the last two dims with their reflection (the edge itself not repeated)."""

    _amount_count, _mode = 4, "reflect"


class ReflectionPad3d(_PadNd):
    """Pad the last three dims with their reflection (the edge itself not repeated)."""

    _amount_count, _mode = 6, "reflect"


class ReplicationPad1d(_PadNd):
    """Pad the last dim by repeating its edge values."""

    _amount_count, _mode = 2, "replicate"


class ReplicationPad2d(_PadNd):
    """Pad the last two dims by repeating their edge values."""

    _amount_count, _mode = 4, "replicate"


class ReplicationPad3d(_PadNd):
    """Pad the last three dims by repeating their edge values."""

    _amount_count, _mode = 6, "replicate"


class _CircularPadNd(_PadNd):
    _mode = "circular"

    def forward(self, input: Tensor) -> Tensor:
        dims = self._amount_count // 2
        if input.ndim not in (dims + 1, dims + 2):
            raise ValueError(f"expected {dims + 1}D or {dims + 2}D input (got {input.ndim}D input)")
        return super().forward(input)


class CircularPad1d(_CircularPadNd):
    """Pad the last dim with its values from the other end (wrapping around)."""

    _amount_count = 2


class CircularPad2d(_CircularPadNd):
    """Pad the last two dims with their values from the other end (wrapping around)."""

    _amount_count = 4


class CircularPad3d(_CircularPadNd):
    """Pad the last three dims with their values from the other end (wrapping around)."""

    _amount_count = 6
