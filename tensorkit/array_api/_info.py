"""The inspection API: ``__array_namespace_info__()`` and what it reports."""

from __future__ import annotations

from typing import Any

from .. import cuda
from .._backend import cpu, device
from .._dtype import default_complex_dtype, dtype, get_default_dtype, int64
from ._data_types import KINDS, STANDARD_DTYPES

# NumPy 2 arrays (and so tensorkit's CPU tensors) have at most 64 dimensions.
_MAX_DIMENSIONS = 64


class Info:
    """What this namespace supports: capabilities, devices and dtypes."""

    def capabilities(self) -> dict[str, Any]:
        """Boolean indexing and data-dependent shapes are supported."""
        return {
            "boolean indexing": True,
            "data-dependent shapes": True,
            "max dimensions": _MAX_DIMENSIONS,
        }

    def default_device(self) -> device:
        """The CPU."""
        return cpu

    def default_dtypes(self, *, device: Any = None) -> dict[str, dtype]:
        """The current default floating dtype, its complex partner, and int64."""
        return {
            "real floating": get_default_dtype(),
            "complex floating": default_complex_dtype(),
            "integral": int64,
            "indexing": int64,
        }

    def devices(self) -> list[device]:
        """The CPU and every visible CUDA device."""
        found = [cpu]
        if cuda.is_available():
            found += [device("cuda", i) for i in range(cuda.device_count())]
        return found

    def dtypes(
        self, *, device: Any = None, kind: str | tuple[str, ...] | None = None
    ) -> dict[str, dtype]:
        """The standard's dtypes tensorkit has, by name, optionally only those of ``kind``."""
        if kind is None:
            return {d.name: d for d in STANDARD_DTYPES}
        kinds = (kind,) if isinstance(kind, str) else kind
        for k in kinds:
            if k not in KINDS:
                raise ValueError(f"unknown dtype kind {k!r}")
        return {d.name: d for d in STANDARD_DTYPES if any(KINDS[k](d) for k in kinds)}


def __array_namespace_info__() -> Info:  # noqa: N807
    """The namespace's inspection API."""
    return Info()
