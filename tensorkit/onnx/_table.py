"""The translation table: op key -> a function writing that op's ONNX nodes.

A translation function takes the :class:`~._builder.Builder` (``b.node`` is the node being
translated) and returns the ONNX name of each output, a str for a single-output op.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["TABLE", "translates"]

TABLE: dict[str, Callable[[Any], Any]] = {}


def translates(*keys: str) -> Callable:
    """Register the decorated function for ``keys``."""

    def register(function: Callable) -> Callable:
        for key in keys:
            TABLE[key] = function
        return function

    return register
