"""The numba loop behind :mod:`.col2im` (imported on first use: numba takes half a
second to import)."""

from __future__ import annotations

from typing import Any

import numba


@numba.njit(nogil=True, cache=True)
def _span(size: int, count: int, tap: int, stride: int, pad: int) -> tuple[int, int]:
    """The outputs ``o`` in [0, count) whose position ``o * stride + tap - pad`` falls inside
    [0, size): a range (lo, hi)."""
    lo = max(0, -((tap - pad) // stride))
    last = size - 1 - tap + pad
    hi = min(count, last // stride + 1) if last >= 0 else 0
    return lo, max(lo, hi)


@numba.njit(nogil=True, cache=True)
def col2im_planes(
    cols: Any,
    out: Any,
    c_start: int,
    c_stop: int,
    stride: tuple,
    dilation: tuple,
    pad: tuple,
    batch_first: bool,
) -> None:
    """Zero and sum the planes of channels [c_start, c_stop) of ``out`` (N, C, D, H, W) from
    ``cols`` (C, KD, KH, KW, N, OD, OH, OW), or (N, C, KD, KH, KW, OD, OH, OW); taps in
    row-major order, as the array form adds them."""
    if batch_first:
        kd_n, kh_n, kw_n = cols.shape[2:5]
    else:
        kd_n, kh_n, kw_n = cols.shape[1:4]
    od_n, oh_n, ow_n = cols.shape[5:]
    depth, height, width = out.shape[2:]
    for c in range(c_start, c_stop):
        for n in range(out.shape[0]):
            plane = out[n, c]
            plane[:] = 0
            for kd in range(kd_n):
                d_lo, d_hi = _span(depth, od_n, kd * dilation[0], stride[0], pad[0])
                for kh in range(kh_n):
                    h_lo, h_hi = _span(height, oh_n, kh * dilation[1], stride[1], pad[1])
                    for kw in range(kw_n):
                        w_lo, w_hi = _span(width, ow_n, kw * dilation[2], stride[2], pad[2])
                        if batch_first:
                            source = cols[n, c, kd, kh, kw]
                        else:
                            source = cols[c, kd, kh, kw, n]
                        for od in range(d_lo, d_hi):
                            z = od * stride[0] + kd * dilation[0] - pad[0]
                            for oh in range(h_lo, h_hi):
                                y = oh * stride[1] + kh * dilation[1] - pad[1]
                                x0 = w_lo * stride[2] + kw * dilation[2] - pad[2]
                                values = source[od, oh]
                                if stride[2] == 1:  # contiguous: a loop numba vectorizes
                                    row = plane[z, y, x0 : x0 + w_hi - w_lo]
                                    part = values[w_lo:w_hi]
                                    for i in range(w_hi - w_lo):
                                        row[i] += part[i]
                                else:
                                    for ow in range(w_lo, w_hi):
                                        x = x0 + (ow - w_lo) * stride[2]
                                        plane[z, y, x] += values[ow]


@numba.njit(nogil=True, cache=True)
def col2im_rows(
    cols: Any,
    out: Any,
    n_start: int,
    n_stop: int,
    stride: tuple,
    dilation: tuple,
    pad: tuple,
) -> None:
    """Zero and sum samples [n_start, n_stop) of ``out`` (N, D, H, W, C) from ``cols``
    (N, OD, OH, OW, KD, KH, KW, C), im2col's channels-last layout, each tap a run of C
    contiguous values. Output positions are visited first to last (visiting them in
    reverse took 4.9x as long here), so each sum receives its taps in reverse row-major
    order; the array form of this layout adds them in that order too."""
    od_n, oh_n, ow_n, kd_n, kh_n, kw_n = cols.shape[1:7]
    depth, height, width = out.shape[1:4]
    for n in range(n_start, n_stop):
        out[n] = 0
        for od in range(od_n):
            for oh in range(oh_n):
                for ow in range(ow_n):
                    for kd in range(kd_n):
                        z = od * stride[0] + kd * dilation[0] - pad[0]
                        if z < 0 or z >= depth:
                            continue
                        for kh in range(kh_n):
                            y = oh * stride[1] + kh * dilation[1] - pad[1]
                            if y < 0 or y >= height:
                                continue
                            for kw in range(kw_n):
                                x = ow * stride[2] + kw * dilation[2] - pad[2]
                                if x < 0 or x >= width:
                                    continue
                                target = out[n, z, y, x]
                                source = cols[n, od, oh, ow, kd, kh, kw]
                                for c in range(target.shape[0]):
                                    target[c] += source[c]
