"""TEST-ONLY: ``StandInCudnn``, a stand-in for the ``cupyx.cudnn`` calls tensorkit makes (and
the ``cupy.cuda.cudnn`` constants it reads), computing in NumPy and recording every call.

With :func:`install` (over a NumPy-backed ``StandInCupy``), tensors on ``device("cuda")`` take
tensorkit's cuDNN path; the recorded calls check the argument translation and the NumPy
results, written here independently of tensorkit (one strided slice per kernel offset), check
that the op's gradient rules compose cuDNN's calls correctly. cuDNN and CuPy themselves are
checked on a GPU by scripts/gpu_check.sh.
"""

from __future__ import annotations

import itertools
import math
import sys
import types
from typing import Any

import numpy as np
import pytest
from cuda_standin import install as install_cupy

from tensorkit._backend import cudnn as cudnn_backend

LOW = types.SimpleNamespace(
    getVersion=lambda: 8907,
    CUDNN_POOLING_MAX=0,
    CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING=1,
    CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING=2,
    CUDNN_POOLING_MAX_DETERMINISTIC=3,
    CUDNN_BATCHNORM_SPATIAL=1,
)


def _window(offset: tuple, dilation: tuple, stride: tuple, out: tuple) -> tuple:
    """The strided slice of a padded input that kernel ``offset`` reads for every output."""
    return tuple(
        slice(k * d, k * d + s * (o - 1) + 1, s)
        for k, d, s, o in zip(offset, dilation, stride, out, strict=True)
    )


def _padded(x: Any, pad: tuple, value: float = 0.0) -> Any:
    return np.pad(x, ((0, 0), (0, 0), *((p, p) for p in pad)), constant_values=value)


class StandInCudnn:
    """``cupyx.cudnn``: convolution, pooling and batch norm, in NumPy; ``calls`` lists
    ``(name, args, kwargs)`` with the arrays' shapes in place of the arrays."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple, dict]] = []

    def _record(self, name: str, args: tuple, kwargs: dict) -> None:
        shown = tuple(a.shape if isinstance(a, np.ndarray) else a for a in args)
        self.calls.append((name, shown, kwargs))

    def names(self) -> list[str]:
        return [name for name, _, _ in self.calls]

    # -------------------------------------------------------------------- convolution
    @staticmethod
    def _grouped(x: Any, w: Any, groups: int) -> tuple[Any, Any]:
        n, c = x.shape[:2]
        return x.reshape(n, groups, c // groups, *x.shape[2:]), w.reshape(
            groups, w.shape[0] // groups, *w.shape[1:]
        )

    def convolution_forward(self, x, w, b, y, pad, stride, dilation, groups, **kwargs) -> None:
        self._record("convolution_forward", (x, w, b, y, pad, stride, dilation, groups), kwargs)
        assert x.flags.c_contiguous and w.flags.c_contiguous and b is None
        xp_, wg = self._grouped(_padded(x, pad), w, groups)
        out = y.shape[2:]
        total = np.zeros((x.shape[0], groups, w.shape[0] // groups, *out), x.dtype)
        for offset in itertools.product(*map(range, w.shape[2:])):
            window = xp_[
                (slice(None), slice(None), slice(None), *_window(offset, dilation, stride, out))
            ]
            total += np.einsum("ngc...,goc->ngo...", window, wg[(Ellipsis, *offset)])
        y[...] = total.reshape(y.shape)

    def convolution_backward_data(self, w, gy, b, gx, pad, stride, dilation, groups, **kwargs):
        self._record(
            "convolution_backward_data", (w, gy, b, gx, pad, stride, dilation, groups), kwargs
        )
        n, c = gx.shape[:2]
        padded = np.zeros(
            (n, c, *(s + 2 * p for s, p in zip(gx.shape[2:], pad, strict=True))), gx.dtype
        )
        grouped = padded.reshape(n, groups, c // groups, *padded.shape[2:])
        wg = w.reshape(groups, w.shape[0] // groups, *w.shape[1:])
        gyg = gy.reshape(n, groups, w.shape[0] // groups, *gy.shape[2:])
        for offset in itertools.product(*map(range, w.shape[2:])):
            window = (slice(None),) * 3 + _window(offset, dilation, stride, gy.shape[2:])
            grouped[window] += np.einsum("ngo...,goc->ngc...", gyg, wg[(Ellipsis, *offset)])
        inner = tuple(slice(p, p + s) for p, s in zip(pad, gx.shape[2:], strict=True))
        gx[...] = padded[(slice(None), slice(None), *inner)]

    def convolution_backward_filter(self, x, gy, gw, pad, stride, dilation, groups, **kwargs):
        self._record(
            "convolution_backward_filter", (x, gy, gw, pad, stride, dilation, groups), kwargs
        )
        xg, _ = self._grouped(_padded(x, pad), gw, groups)
        n = x.shape[0]
        gyg = gy.reshape(n, groups, gw.shape[0] // groups, *gy.shape[2:])
        out = gw.reshape(groups, gw.shape[0] // groups, *gw.shape[1:])
        for offset in itertools.product(*map(range, gw.shape[2:])):
            window = xg[(slice(None),) * 3 + _window(offset, dilation, stride, gy.shape[2:])]
            flat = window.reshape(*window.shape[:3], -1)
            out[(Ellipsis, *offset)] = np.einsum(
                "ngcl,ngol->goc", flat, gyg.reshape(*gyg.shape[:3], -1)
            )
        gw[...] = out.reshape(gw.shape)

    # ------------------------------------------------------------------------ pooling
    @staticmethod
    def _windows(x: Any, ksize: tuple, stride: tuple, pad: tuple, mode: int, out: tuple):
        fill = -np.inf if mode in (0, 3) else 0.0
        xp_ = _padded(x, pad, fill)
        real = _padded(np.ones((1, 1, *x.shape[2:])), pad)
        for offset in itertools.product(*map(range, ksize)):
            sl = (slice(None), slice(None), *_window(offset, (1,) * len(ksize), stride, out))
            yield offset, sl, xp_[sl], real[sl]

    def pooling_forward(self, x, y, ksize, stride, pad, mode):
        self._record("pooling_forward", (x, y, ksize, stride, pad, mode), {})
        out = y.shape[2:]
        parts = list(self._windows(x, ksize, stride, pad, mode, out))
        if mode in (0, 3):
            y[...] = np.max([p for _, _, p, _ in parts], axis=0)
        else:
            total = np.sum([p for _, _, p, _ in parts], axis=0)
            count = math.prod(ksize) if mode == 1 else np.sum([r for *_, r in parts], axis=0)
            y[...] = total / count
        return y

    def pooling_backward(self, x, y, gy, ksize, stride, pad, mode):
        self._record("pooling_backward", (x, y, gy, ksize, stride, pad, mode), {})
        out = y.shape[2:]
        parts = list(self._windows(x, ksize, stride, pad, mode, out))
        gxp = np.zeros(
            (*x.shape[:2], *(s + 2 * p for s, p in zip(x.shape[2:], pad, strict=True))), x.dtype
        )
        if mode in (0, 3):
            taken = np.zeros(y.shape, bool)
            for _, sl, values, _ in parts:  # the first maximum of each window
                hit = (values == y) & ~taken
                gxp[sl] += np.where(hit, gy, 0)
                taken |= hit
        else:
            count = math.prod(ksize) if mode == 1 else np.sum([r for *_, r in parts], axis=0)
            for _, sl, _, _ in parts:
                gxp[sl] += gy / count
        inner = tuple(slice(p, p + s) for p, s in zip(pad, x.shape[2:], strict=True))
        return gxp[(slice(None), slice(None), *inner)]

    # --------------------------------------------------------------------- batch norm
    def batch_normalization_forward_training(
        self,
        x,
        gamma,
        beta,
        running_mean,
        running_var,
        mean,
        inv_std,
        eps,
        decay,
        is_for_conv2d,
        mode,
        debug,
    ):
        self._record(
            "batch_normalization_forward_training",
            (
                x,
                gamma,
                beta,
                running_mean,
                running_var,
                mean,
                inv_std,
                eps,
                decay,
                is_for_conv2d,
                mode,
                debug,
            ),
            {},
        )
        assert x.ndim == 4 and mean is None and inv_std is None
        n = x.size // x.shape[1]
        batch_mean = x.mean(axis=(0, 2, 3))
        var = x.var(axis=(0, 2, 3))
        save_inv = 1 / np.sqrt(var + eps)
        running_mean[...] = decay * running_mean + (1 - decay) * batch_mean
        running_var[...] = decay * running_var + (1 - decay) * var * n / (n - 1)
        c = (1, -1, 1, 1)
        y = (x - batch_mean.reshape(c)) * (save_inv * gamma).reshape(c) + beta.reshape(c)
        return y.astype(x.dtype), batch_mean.astype(gamma.dtype), save_inv.astype(gamma.dtype)

    def batch_normalization_backward(
        self, x, gamma, gy, mean, inv_std, eps, is_for_conv2d, mode, debug
    ):
        self._record(
            "batch_normalization_backward",
            (x, gamma, gy, mean, inv_std, eps, is_for_conv2d, mode, debug),
            {},
        )
        c = (1, -1, 1, 1)
        xhat = (x - mean.reshape(c)) * inv_std.reshape(c)
        gbeta = gy.sum(axis=(0, 2, 3))
        ggamma = (gy * xhat).sum(axis=(0, 2, 3))
        n = x.size // x.shape[1]
        gx = (gamma * inv_std).reshape(c) * (
            gy - gbeta.reshape(c) / n - xhat * ggamma.reshape(c) / n
        )
        return gx, ggamma, gbeta


def install(monkeypatch: pytest.MonkeyPatch) -> StandInCudnn:
    """A NumPy-backed stand-in CUDA device whose cuDNN is a fresh ``StandInCudnn``; the
    ``tk.backends.cudnn`` flags are restored when the test ends."""
    cupy = install_cupy(monkeypatch, numpy_backed=True)
    # CuPy's generator over NumPy's: what tensorkit draws on a "cuda" device (gradcheck does)
    cupy.random = types.SimpleNamespace(Generator=np.random.Generator, XORWOW=np.random.PCG64)
    monkeypatch.setitem(sys.modules, "cupyx", types.SimpleNamespace(scatter_add=np.add.at))
    fake = StandInCudnn()
    monkeypatch.setattr(cudnn_backend, "_probed", {id(cupy): (fake, LOW)})
    monkeypatch.setattr(cudnn_backend, "FLAGS", dict(cudnn_backend.FLAGS))
    return fake
