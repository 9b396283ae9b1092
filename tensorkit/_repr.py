"""``repr(tensor)`` in PyTorch's style: ``tensor([1.0000, 2.5000], grad_fn=<MulBackward0>)``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._backend import cpu, to_device_array

_DEFAULT_SUFFIX_FREE = {"float32", "int64", "bool", "complex64"}
_SUMMARIZE_OVER = 1000
_EDGE_ITEMS = 3


def _float_formatter(values: np.ndarray) -> Any:
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return lambda v: _special(v)
    magnitudes = np.abs(finite)
    nonzero = magnitudes[magnitudes > 0]
    high = magnitudes.max()
    low = nonzero.min() if nonzero.size else 0.0
    integral = bool(np.all(finite == np.round(finite))) and high < 1e8
    scientific = high >= 1e8 or (low and (low < 1e-4 or high / low > 1e3))
    if integral:
        return lambda v: _special(v) if not np.isfinite(v) else f"{v:.0f}."
    if scientific:
        return lambda v: _special(v) if not np.isfinite(v) else f"{v:.4e}"
    return lambda v: _special(v) if not np.isfinite(v) else f"{v:.4f}"


def _special(v: float) -> str:
    if np.isnan(v):
        return "nan"
    return "inf" if v > 0 else "-inf"


def format_values(values: np.ndarray) -> str:
    """The bracketed values as PyTorch prints them (6 columns of indent after 'tensor(')."""
    options: dict[str, Any] = {"separator": ", ", "prefix": "tensor(", "max_line_width": 80}
    if values.size > _SUMMARIZE_OVER:
        options.update(threshold=_SUMMARIZE_OVER, edgeitems=_EDGE_ITEMS)
    kind = values.dtype.kind
    if kind == "f":
        options["formatter"] = {"float_kind": _float_formatter(values.astype(np.float64))}
    elif kind == "c":
        real = _float_formatter(
            np.concatenate([values.real.ravel(), values.imag.ravel()]).astype(np.float64)
        )
        options["formatter"] = {
            "complex_kind": lambda v: (
                f"{real(v.real)}{'+' if v.imag >= 0 else '-'}{real(abs(v.imag))}j"
            )
        }
    if values.ndim == 0:
        formatters = options.get("formatter")
        if formatters is None:
            return str(values.item())
        return next(iter(formatters.values()))(values.item())
    return np.array2string(values, **options)


def tensor_repr(tensor: Any) -> str:
    values = to_device_array(tensor._data, cpu)
    body = format_values(values)
    if values.size == 0 and values.ndim != 1:
        body = f"[], size={tuple(values.shape)}"
    suffixes = []
    if tensor._device is not cpu:
        suffixes.append(f"device='{tensor._device}'")
    if values.dtype.name not in _DEFAULT_SUFFIX_FREE or (
        values.size == 0 and values.dtype.name != "float32"
    ):
        suffixes.append(f"dtype={tensor.dtype!r}")
    if tensor.grad_fn is not None:
        suffixes.append(f"grad_fn=<{tensor.grad_fn.name()}>")
    elif tensor._requires_grad:
        suffixes.append("requires_grad=True")
    return "tensor(" + ", ".join([body, *suffixes]) + ")"
