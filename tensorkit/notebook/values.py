"""Tensors as plain numbers: small ones as nested lists, large ones as summary + histogram."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..autograd.tape import summarize_values
from ..tensor import Tensor

__all__ = ["finite_or_label", "tensor_payload"]

SMALL = 64
BINS = 16


def tensor_payload(tensor: Tensor | None, *, small: int = SMALL, bins: int = BINS) -> dict | None:
    """Shape, dtype and either ``values`` (numel <= ``small``) or ``summary`` + ``histogram``."""
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
