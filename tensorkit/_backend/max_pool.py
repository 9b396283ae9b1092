"""Max pooling over channels-last arrays on the host as compiled loops (numba).

A channels-last array (memory (N, *S, C), what tk.jit's channels-last convolutions make)
holds each window tap's values for all channels in one contiguous run, so a loop over the
channels is one vector operation; NumPy's array form instead makes one strided pass per
kernel offset plus the compares that pick the first maximum. Measured on the CNN benchmark's
(64, 64, 24, 24) activation: see docs/benchmarks.md. The loops give the array form's
indices, values and gradient exactly (first maximum, last NaN, taps in row-major order).

They run on NumPy float32 and float64 arrays when numba is installed and
``tk.backends.numba.enabled`` is on (the switch col2im's loop uses), for windows without
padding; C-order arrays, CuPy and other cases use the array form.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import col2im as _switch
from .threads import parallel_parts

__all__ = ["argmax", "gather", "scatter", "usable"]

_KINDS = (np.dtype(np.float32), np.dtype(np.float64))
_loops: dict[str, Callable] = {}


def usable(xp: Any, array: Any) -> bool:
    """Whether ``array`` takes the compiled loops: a NumPy float32/float64 array, numba
    importable and the switch on."""
    return xp is np and array.dtype in _KINDS and _switch.usable(xp, array) and _load()


def _load() -> bool:
    if not _loops:
        from ._max_pool_loop import argmax_rows, gather_rows, scatter_rows

        _loops.update(argmax=argmax_rows, gather=gather_rows, scatter=scatter_rows)
    return True


def _three(values: tuple, fill: int) -> tuple:
    return (fill,) * (3 - len(values)) + tuple(values)


def argmax(x: Any, out_size: tuple, kernel: tuple, stride: tuple, dilation: tuple) -> Any:
    """Indices (N, *out, C) of ``x`` (N, *S, C)'s window maxima (flat spatial positions)."""
    samples, channels = x.shape[0], x.shape[-1]
    volume = np.ascontiguousarray(x).reshape(samples, *_three(x.shape[1:-1], 1), channels)
    out = np.empty((samples, *_three(out_size, 1), channels), np.int64)
    settings = (_three(kernel, 1), _three(stride, 1), _three(dilation, 1))
    loop = _loops["argmax"]
    parallel_parts(
        lambda part: loop(volume, out, *part.indices(samples)[:2], *settings),
        samples,
        x.size,
        x,
    )
    return out.reshape(samples, *out_size, channels)


def gather(x: Any, indices: Any) -> Any:
    """``x`` (N, *S, C) read at ``indices`` (N, *out, C): (N, *out, C) values."""
    samples, channels = x.shape[0], x.shape[-1]
    source = np.ascontiguousarray(x).reshape(samples, -1, channels)
    taken = np.ascontiguousarray(indices).reshape(samples, -1, channels)
    out = np.empty(taken.shape, x.dtype)
    loop = _loops["gather"]
    parallel_parts(
        lambda part: loop(source, taken, out, *part.indices(samples)[:2]), samples, out.size, x
    )
    return out.reshape(indices.shape)


def scatter(g: Any, indices: Any, size: tuple) -> Any:
    """Zeros (N, *size, C) with ``g`` (N, *out, C) written at ``indices`` (no repeats)."""
    samples, channels = g.shape[0], g.shape[-1]
    values = g.reshape(samples, -1, channels)
    taken = np.ascontiguousarray(indices).reshape(samples, -1, channels)
    out = np.empty((samples, *size, channels), g.dtype)
    loop = _loops["scatter"]
    target = out.reshape(samples, -1, channels)
    parallel_parts(
        lambda part: loop(values, taken, target, *part.indices(samples)[:2]), samples, out.size, g
    )
    return out
