"""softmax and log_softmax along one dim: one op each, with PyTorch's gradients
(``_softmax_backward_data``, ``_log_softmax_backward_data``), that ``tk.softmax``,
``Tensor.softmax``, ``tk.nn.functional.softmax`` and their log forms all run."""

from __future__ import annotations

from typing import Any

from .._backend.threads import parallel_parts
from .._dtype import float32, float64, reject_complex
from ..tensor import Tensor, normalize_dim
from ._apply import OPS, SAVE_OUTPUT, OpDef, apply
from .reduction import logsumexp


def _softmax_forward(xp: Any, x: Any, axis: int) -> Any:
    """``exp(x - max) * (1 / sum)`` (as PyTorch's CPU kernel; NaN for an inf, a NaN or an all
    -inf slice, as the composite ``exp(x - logsumexp(x))``); rows split over threads when
    large."""
    out = xp.empty(x.shape, x.dtype)
    if axis == 0:
        return _softmax_into(xp, x, axis, out)

    def part(rows: slice) -> None:
        _softmax_into(xp, x[rows], axis, out[rows])

    parallel_parts(part, len(x), x.size, x)
    return out


def _softmax_into(xp: Any, x: Any, axis: int, out: Any) -> Any:
    peak = x.max(axis=axis, keepdims=True)
    peak = xp.where(xp.isfinite(peak), peak, 0)
    xp.subtract(x, peak, out=out)
    total = xp.exp(out, out=out).sum(axis=axis, keepdims=True)
    out *= xp.reciprocal(total)
    return out


def _softmax_rule(ctx: Any, space: Any, saved: tuple, g: Any) -> Any:
    (out,) = saved
    return out * (g - space.sum(g * out, ctx.attrs["axis"], keepdims=True))


# One op with PyTorch's fused gradient (``_softmax_backward_data``) instead of the five ops of
# ``exp(x - logsumexp(x))`` and their gradients: softmax runs in every attention layer.
_SOFTMAX = OpDef(
    "softmax",
    _softmax_forward,
    None,
    rule=_softmax_rule,
    saves=SAVE_OUTPUT,
)


def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim``, computed without overflow (``input`` cast to
    ``dtype`` first when given)."""
    reject_complex(input._data.dtype, "softmax_lastdim_kernel_impl")
    x = input if dtype is None else input.to(dtype)
    if x.dtype in (float32, float64) and x.ndim > 0 and x.numel() > 0:
        return apply(_SOFTMAX, x, axis=normalize_dim(dim, x.ndim))
    return (x - logsumexp(x, dim, keepdim=True)).exp()


def _log_softmax_forward(xp: Any, x: Any, axis: int) -> Any:
    """``x - logsumexp(x)``, with logsumexp's own arithmetic (the same values as the two ops)."""
    peak = x.max(axis=axis, keepdims=True)
    peak = xp.where(xp.isfinite(peak), peak, 0)
    total = xp.exp(x - peak).sum(axis=axis, keepdims=True)
    return x - (xp.log(total) + peak)


def _log_softmax_rule(ctx: Any, space: Any, saved: tuple, g: Any) -> Any:
    (out,) = saved
    softmax = space.op(OPS["exp"], out)
    return g - softmax * space.sum(g, ctx.attrs["axis"], keepdims=True)


# One op with PyTorch's gradient (``_log_softmax_backward_data``) instead of logsumexp and a
# subtraction with their gradients: every classifier's cross_entropy starts with it.
_LOG_SOFTMAX = OpDef(
    "log_softmax",
    _log_softmax_forward,
    None,
    rule=_log_softmax_rule,
    saves=SAVE_OUTPUT,
    node_name="LogSoftmaxBackward0",
)


def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``x - logsumexp(x)`` along ``dim`` (``input`` cast to ``dtype`` first when given)."""
    reject_complex(input._data.dtype, "log_softmax_lastdim_kernel_impl")
    x = input if dtype is None else input.to(dtype)
    if x.dtype in (float32, float64) and x.ndim > 0 and x.numel() > 0:
        return apply(_LOG_SOFTMAX, x, axis=normalize_dim(dim, x.ndim))
    return x - logsumexp(x, dim, keepdim=True)
