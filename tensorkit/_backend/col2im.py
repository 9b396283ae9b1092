"""``col2im`` (a convolution's input gradient) on the host as a compiled loop (numba).

NumPy runs it as one strided add per kernel tap, over rows as short as a window's output
width (24 floats in a 3x3 convolution on 26x26), so its cost per row dominates: col2im of the
CNN benchmark's (32, 3, 3, 64, 24, 24) columns takes 6.2-6.3 ms that way and 2.8-2.9 ms here,
where one (sample, channel) plane is summed while it sits in the L1 cache. The loop adds the taps in
the array form's order, so the sums are bit for bit the same.

It runs on NumPy float32 and float64 arrays when numba is installed (the ``jit`` extra) and
``tk.backends.numba.enabled`` is on; CuPy, other dtypes and machines without numba use the
array form. numba is imported, and the loop compiled (cached on disk), on first use.
"""

from __future__ import annotations

import importlib.util
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from .threads import parallel_parts

__all__ = ["col2im", "col2im_rows", "enabled", "is_available", "set_enabled", "usable"]

_KINDS = (np.dtype(np.float32), np.dtype(np.float64))
_enabled = True


def is_available() -> bool:
    """Whether numba can be imported (checked without importing it)."""
    return importlib.util.find_spec("numba") is not None


def enabled() -> bool:
    """Whether the compiled loop is switched on (``tk.backends.numba.enabled``)."""
    return _enabled


def set_enabled(value: bool) -> None:
    global _enabled
    _enabled = value


_available = is_available()
_loop: Callable | None = None
_rows_loop: Callable | None = None


def usable(xp: Any, array: Any) -> bool:
    """Whether ``array`` takes the compiled loop: a NumPy float32/float64 array, with numba
    installed (and importable) and the loop switched on."""
    return _enabled and _available and xp is np and array.dtype in _KINDS and _load()


def _load() -> bool:
    """Import the loop (and numba) once; a numba that fails to import (one built for another
    NumPy, say) is reported once and the array form used from then on."""
    global _loop, _rows_loop, _available
    if _loop is None:
        try:
            from ._col2im_loop import col2im_planes, col2im_rows
        except ImportError as error:
            _available = False
            warnings.warn(
                f"tensorkit: numba did not import ({error}); col2im runs through NumPy",
                RuntimeWarning,
                stacklevel=4,
            )
            return False
        _loop, _rows_loop = col2im_planes, col2im_rows
    return True


def _three(values: tuple, fill: int) -> tuple:
    """1-, 2- or 3-D settings as three, the missing leading axes given ``fill``."""
    return (fill,) * (3 - len(values)) + tuple(values)


def col2im(
    cols: Any,
    size: tuple,
    kernel: tuple,
    stride: tuple,
    padding: tuple,
    dilation: tuple,
    batch_first: bool,
) -> Any:
    """:func:`nn.functional.conv._col2im_forward` for 1-3 spatial dims: ``cols`` (C, *kernel,
    N, *out), or (N, C, *kernel, *out) with ``batch_first``, summed into (N, C, *size)."""
    d = len(kernel)
    lead, out_size = cols.shape[: 2 + d], cols.shape[2 + d :]
    if batch_first:
        samples, channels = lead[0], lead[1]
        shape = (samples, channels, *_three(kernel, 1), *_three(out_size, 1))
    else:
        channels, samples = lead[0], lead[1 + d]
        shape = (channels, *_three(kernel, 1), samples, *_three(out_size, 1))
    columns = np.ascontiguousarray(cols).reshape(shape)
    out = np.empty((samples, channels, *_three(size, 1)), cols.dtype)
    settings = (
        _three(stride, 1),
        _three(dilation, 1),
        _three(tuple(lo for lo, _ in padding), 0),
        batch_first,
    )
    loop = _loop
    assert loop is not None, "col2im called where usable() is False"
    parallel_parts(
        lambda part: loop(columns, out, *part.indices(channels)[:2], *settings),
        channels,
        cols.size,
        cols,
    )
    return out.reshape((samples, channels, *size))


def col2im_rows(
    cols: Any, size: tuple, kernel: tuple, stride: tuple, padding: tuple, dilation: tuple
) -> Any:
    """The same for im2col's channels-last layout: ``cols`` (N, *out, *kernel, C) summed into
    an (N, *size, C) array."""
    d = len(kernel)
    samples, channels = cols.shape[0], cols.shape[-1]
    out_size = cols.shape[1 : 1 + d]
    shape = (samples, *_three(out_size, 1), *_three(kernel, 1), channels)
    columns = np.ascontiguousarray(cols).reshape(shape)
    out = np.empty((samples, *_three(size, 1), channels), cols.dtype)
    settings = (
        _three(stride, 1),
        _three(dilation, 1),
        _three(tuple(lo for lo, _ in padding), 0),
    )
    loop = _rows_loop
    assert loop is not None, "col2im_rows called where usable() is False"
    parallel_parts(
        lambda part: loop(columns, out, *part.indices(samples)[:2], *settings),
        samples,
        cols.size,
        cols,
    )
    return out.reshape((samples, *size, channels))
