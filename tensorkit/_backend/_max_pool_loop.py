"""The numba loops behind :mod:`.max_pool` (imported on first use: numba takes half a
second to import). Arrays are in memory order, (N, D, H, W, C), each window tap a run of C
contiguous values: the loops over C are what LLVM vectorizes."""

from __future__ import annotations

from typing import Any

import numba
import numpy as np


@numba.njit(nogil=True, cache=True)
def argmax_rows(
    x: Any, out: Any, n_start: int, n_stop: int, kernel: tuple, stride: tuple, dilation: tuple
) -> None:
    """``out`` (N, OD, OH, OW, C): each window's flat spatial index (d * H * W + h * W + w)
    of its first maximum, or of its last NaN, taps in row-major order."""
    height, width, channels = x.shape[2:]
    od_n, oh_n, ow_n = out.shape[1:4]
    best = np.empty(channels, x.dtype)
    chosen = np.empty(channels, np.int64)
    last_nan = np.empty(channels, np.int64)
    for n in range(n_start, n_stop):
        for od in range(od_n):
            for oh in range(oh_n):
                for ow in range(ow_n):
                    first = True
                    for kd in range(kernel[0]):
                        z = od * stride[0] + kd * dilation[0]
                        for kh in range(kernel[1]):
                            y = oh * stride[1] + kh * dilation[1]
                            for kw in range(kernel[2]):
                                w = ow * stride[2] + kw * dilation[2]
                                position = (z * height + y) * width + w
                                values = x[n, z, y, w]
                                if first:
                                    for c in range(channels):
                                        v = values[c]
                                        nan = v != v
                                        best[c] = -np.inf if nan else v
                                        chosen[c] = position
                                        last_nan[c] = position if nan else -1
                                    first = False
                                    continue
                                for c in range(channels):
                                    v = values[c]
                                    if v > best[c]:
                                        best[c] = v
                                        chosen[c] = position
                                    if v != v:
                                        last_nan[c] = position
                    into = out[n, od, oh, ow]
                    for c in range(channels):
                        into[c] = last_nan[c] if last_nan[c] >= 0 else chosen[c]


@numba.njit(nogil=True, cache=True)
def gather_rows(x: Any, indices: Any, out: Any, n_start: int, n_stop: int) -> None:
    """``out[n, o, c] = x[n, indices[n, o, c], c]`` over flattened spatial positions: ``x``
    (N, S, C), ``indices`` and ``out`` (N, O, C)."""
    for n in range(n_start, n_stop):
        source, taken, into = x[n], indices[n], out[n]
        for o in range(taken.shape[0]):
            for c in range(taken.shape[1]):
                into[o, c] = source[taken[o, c], c]


@numba.njit(nogil=True, cache=True)
def scatter_rows(g: Any, indices: Any, out: Any, n_start: int, n_stop: int) -> None:
    """Zeros with ``out[n, indices[n, o, c], c] = g[n, o, c]`` (no position repeats): ``out``
    (N, S, C), ``g`` and ``indices`` (N, O, C)."""
    for n in range(n_start, n_stop):
        target, taken, values = out[n], indices[n], g[n]
        target[:] = 0
        for o in range(taken.shape[0]):
            for c in range(taken.shape[1]):
                target[taken[o, c], c] = values[o, c]
