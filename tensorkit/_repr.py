"""``repr(tensor)`` as PyTorch prints it: ``tensor([1.5000, 2.2500], grad_fn=<MulBackward0>)``.

The rules are ``torch._tensor_str``'s: one formatter per tensor (one per part, for complex)
chooses integer, fixed or scientific notation from the nonzero finite values and pads every
element to one width; vectors wrap at ``linewidth``; a tensor over ``threshold`` elements
shows ``edgeitems`` values at each end of every dimension.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ._backend import cpu, to_device_array
from ._dtype import bool_, default_complex_dtype, get_default_dtype, int64


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


_OPTIONS = _PrintOptions()
_PROFILES = {
    "default": (4, 1000, 3, 80),
    "short": (2, 1000, 2, 80),
    "full": (4, math.inf, 3, 80),
}


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Set how tensors print, as ``torch.set_printoptions``.

    ``profile`` (``"default"``, ``"short"`` or ``"full"``) sets the first four options; any
    other argument given overrides it. ``sci_mode=None`` (also when omitted) lets each tensor
    choose scientific notation from its values.
    """
    if profile in _PROFILES:
        (
            _OPTIONS.precision,
            _OPTIONS.threshold,
            _OPTIONS.edgeitems,
            _OPTIONS.linewidth,
        ) = _PROFILES[profile]
    given = zip(
        ("precision", "threshold", "edgeitems", "linewidth"),
        (precision, threshold, edgeitems, linewidth),
        strict=True,
    )
    for name, value in given:
        if value is not None:
            setattr(_OPTIONS, name, value)
    _OPTIONS.sci_mode = sci_mode


class _Formatter:
    """Formats the elements of one real array to the common width PyTorch gives them."""

    def __init__(self, values: np.ndarray) -> None:
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        if not self.floating:
            self.width = max([1, *(len(str(v)) for v in values.ravel().tolist())])
            return
        flat = values.ravel().astype(np.float64)
        shown = flat[np.isfinite(flat) & (flat != 0)]
        if shown.size == 0:
            return
        magnitudes = np.abs(shown)
        high, low = magnitudes.max(), magnitudes.min()
        self.int_mode = bool(np.all(shown == np.ceil(shown)))
        self.sci_mode = (
            bool(high / low > 1000.0 or high > 1.0e8 or low < 1.0e-4)
            if _OPTIONS.sci_mode is None
            else _OPTIONS.sci_mode
        )
        self.width = max(self._width(v) for v in np.unique(shown).tolist())

    def _width(self, value: float) -> int:
        if self.sci_mode:
            return len(f"{value:.{_OPTIONS.precision}e}")
        if self.int_mode:
            return len(f"{value:.0f}") + 1
        return len(f"{value:.{_OPTIONS.precision}f}")

    def __call__(self, value: Any) -> str:
        if not self.floating:
            text = f"{value}"
        elif self.sci_mode:
            text = f"{value:{self.width}.{_OPTIONS.precision}e}"
        elif self.int_mode:
            text = f"{value:.0f}" + ("" if math.isinf(value) or math.isnan(value) else ".")
        else:
            text = f"{value:.{_OPTIONS.precision}f}"
        return text.rjust(self.width)


class _Elements:
    """One element's text: the real formatter, and for complex values the imaginary one."""

    def __init__(self, values: np.ndarray) -> None:
        self.complex = values.dtype.kind == "c"
        self.real = _Formatter(values.real if self.complex else values)
        self.imag = _Formatter(values.imag) if self.complex else None
        self.width = self.real.width + (self.imag.width + 1 if self.imag else 0)

    def __call__(self, value: Any) -> str:
        if self.imag is None:
            return self.real(value)
        imag = (self.imag(value.imag) + "j").lstrip()
        return self.real(value.real) + ("" if imag[0] in "+-" else "+") + imag


def _summarized(values: np.ndarray) -> np.ndarray:
    """The values a summarized print shows: ``edgeitems`` at each end of every dimension."""
    edge = _OPTIONS.edgeitems
    if values.ndim == 0:
        return values
    if not edge:
        return values if values.ndim == 1 else values[(slice(0, 0),) * values.ndim]
    kept = [
        np.r_[0:edge, size - edge : size] if size > 2 * edge else np.arange(size)
        for size in values.shape
    ]
    return values[np.ix_(*kept)]


def _vector(values: np.ndarray, indent: int, summarize: bool, element: _Elements) -> str:
    edge = _OPTIONS.edgeitems
    per_line = max(1, math.floor((_OPTIONS.linewidth - indent) / (element.width + 2)))
    if summarize and not edge:
        items = ["..."]
    elif summarize and len(values) > 2 * edge:
        head, tail = values[:edge].tolist(), values[-edge:].tolist()
        items = [*map(element, head), " ...", *map(element, tail)]
    else:
        items = [element(v) for v in values.tolist()]
    lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(values: np.ndarray, indent: int, summarize: bool, element: _Elements) -> str:
    if values.ndim == 0:
        return element(values.item())
    if values.ndim == 1:
        return _vector(values, indent, summarize, element)
    edge, size = _OPTIONS.edgeitems, len(values)
    if summarize and size > 2 * edge:
        rows = [*range(edge), None, *range(size - edge, size)]
    else:
        rows = list(range(size))
    slices = [
        "..." if i is None else _nested(values[i], indent + 1, summarize, element) for i in rows
    ]
    return "[" + ("," + "\n" * (values.ndim - 1) + " " * (indent + 1)).join(slices) + "]"


def format_values(values: np.ndarray, indent: int = len("tensor(")) -> str:
    """The bracketed values as PyTorch prints them, after ``indent`` columns of prefix."""
    if values.size == 0:
        return "[]"
    summarize = values.size > _OPTIONS.threshold
    element = _Elements(_summarized(values) if summarize else values)
    return _nested(values, indent, summarize, element)


def _with_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    """Append ``, suffix`` items, each on a new line where it would pass ``linewidth``."""
    parts = [text]
    last_line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > _OPTIONS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line += len(suffix) + 2
    return "".join(parts) + ")"


def tensor_repr(tensor: Any) -> str:
    """``tensor([...], device=..., dtype=..., grad_fn=...)`` with PyTorch's choice of suffixes."""
    values = to_device_array(tensor._data, cpu)
    prefix = "tensor("
    suffixes = []
    if tensor._device is not cpu:
        suffixes.append(f"device='{tensor._device}'")
    default = get_default_dtype()
    if values.size == 0:
        if values.ndim != 1:
            suffixes.append(f"size={tuple(values.shape)}")
        show_dtype = tensor.dtype != default
    else:
        if not _OPTIONS.edgeitems:
            suffixes.append(f"size={tuple(values.shape)}")
        show_dtype = tensor.dtype not in (default, default_complex_dtype(), int64, bool_)
    if show_dtype:
        suffixes.append(f"dtype={tensor.dtype!r}")
    if tensor.grad_fn is not None:
        suffixes.append(f"grad_fn=<{tensor.grad_fn.name()}>")
    elif tensor._requires_grad:
        suffixes.append("requires_grad=True")
    return _with_suffixes(prefix + format_values(values, len(prefix)), suffixes, len(prefix))
