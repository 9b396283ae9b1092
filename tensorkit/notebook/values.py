"""Tensors as plain numbers: small ones as nested lists, large ones as a summary, a histogram
and (2-D ones) a block-averaged heatmap grid."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..autograd.tape import summarize_values
from ..tensor import Tensor

__all__ = ["finite_or_label", "tensor_payload"]

SMALL = 64
BINS = 16
GRID = 32


def tensor_payload(
    tensor: Tensor | None, *, small: int = SMALL, bins: int = BINS, grid: int = GRID
) -> dict | None:
    """Shape, dtype and either ``values`` (numel <= ``small``) or ``summary`` + ``histogram``
    (``bins`` bins of the finite values) and, for a 2-D tensor, ``heatmap``: the means of at
    most ``grid`` x ``grid`` blocks (``values``) and the finite ``min`` and ``max`` of those."""
    if tensor is None:
        return None
    data = np.asarray(tensor.detach().cpu()._data)
    payload: dict[str, Any] = {"shape": list(data.shape), "dtype": str(data.dtype)}
    if data.dtype.kind == "c":
        data = np.abs(data)
        payload["magnitude"] = True
    if data.size <= small:
        payload["values"] = _nested(data)
        return payload
    payload["summary"] = None if "magnitude" in payload else summarize_values(tensor.detach())
    payload["histogram"] = _histogram(data, bins)
    if data.ndim == 2:
        payload["heatmap"] = _heatmap(data, grid)
    return payload


def finite_or_label(value: float) -> float | str:
    """A float that strict JSON accepts: NaN and infinities become ``"nan"``, ``"inf"``."""
    return value if math.isfinite(value) else str(value)


def _nested(data: np.ndarray) -> Any:
    if data.dtype.kind != "f":
        return data.tolist()
    values = data.astype(np.float64).astype(object)
    bad = ~np.isfinite(data)
    if bad.any():
        values[bad] = [str(float(v)) for v in data[bad]]
    return values.tolist()


def _histogram(data: np.ndarray, bins: int) -> dict:
    values = data.astype(np.float64).reshape(-1)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return {"edges": [], "counts": []}
    counts, edges = np.histogram(values, bins=bins)
    return {"edges": [float(e) for e in edges], "counts": [int(c) for c in counts]}


def _heatmap(data: np.ndarray, grid: int) -> dict:
    """Block means of a 2-D array on an (at most) ``grid`` x ``grid`` lattice."""
    values = data.astype(np.float64)
    starts = [np.linspace(0, n, min(n, grid) + 1).astype(int) for n in values.shape]
    sums = np.add.reduceat(np.add.reduceat(values, starts[0][:-1], axis=0), starts[1][:-1], axis=1)
    means = sums / np.outer(np.diff(starts[0]), np.diff(starts[1]))
    finite = means[np.isfinite(means)]
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
    return {"values": _nested(means), "min": low, "max": high}
