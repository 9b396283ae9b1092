"""Convolution, pooling and training-mode batch norm on cuDNN, for tensors on CUDA.

conv.py, pooling.py and normalization.py call :func:`convolution` (and
:func:`transposed_convolution`), :func:`pooling` and :func:`batch_norm_training` when
``tensorkit._backend.cudnn`` says so (:func:`conv_ok`, :func:`pool_ok`, :func:`batch_norm_ok`);
otherwise they keep their im2col / table path.

Each op's gradient is itself cuDNN ops, so every order of derivative comes from them:
convolution's input and weight gradients (``convolution_backward_data`` /
``_filter``) are each the other's and the forward's adjoint. Pooling's backward is linear in
the gradient: its own gradient is average pooling again, or for max pooling the gradient read
at each window's maximum (found by pooling.py's argmax). Batch norm's backward is cuDNN's for
a first-order pass; under ``create_graph`` the rule is the same formula in tensor ops (on the
saved mean and inverse std, which the forward also returns), so it can be differentiated.
"""

from __future__ import annotations

import math
from typing import Any

from ... import _state
from ..._backend import cudnn as lib
from ...autograd.grad_mode import no_grad
from ...ops._apply import SAVE_BOTH, SAVE_INPUTS, OpDef, apply
from ...tensor import Tensor, wrap

__all__ = ["batch_norm_training", "convolution", "pooling", "transposed_convolution"]


# ------------------------------------------------------------------------ convolution
def _conv_attrs(ctx: Any) -> dict:
    return {k: v for k, v in ctx.attrs.items() if k != "size"}


def _conv_rule(ctx: Any, g: Tensor) -> tuple:
    x, w = ctx.saved_tensors
    need_x, need_w = ctx.needs_input_grad
    attrs = _conv_attrs(ctx)
    gx = apply(_CONV_DATA, g, w, size=tuple(x.shape), **attrs) if need_x else None
    gw = apply(_CONV_FILTER, x, g, size=tuple(w.shape), **attrs) if need_w else None
    return gx, gw


def _conv_data_rule(ctx: Any, gg: Tensor) -> tuple:
    g, w = ctx.saved_tensors
    need_g, need_w = ctx.needs_input_grad
    attrs = _conv_attrs(ctx)
    dg = apply(_CONV, gg, w, **attrs) if need_g else None
    dw = apply(_CONV_FILTER, gg, g, size=tuple(w.shape), **attrs) if need_w else None
    return dg, dw


def _conv_filter_rule(ctx: Any, gg: Tensor) -> tuple:
    x, g = ctx.saved_tensors
    need_x, need_g = ctx.needs_input_grad
    attrs = _conv_attrs(ctx)
    dx = apply(_CONV_DATA, g, gg, size=tuple(x.shape), **attrs) if need_x else None
    dg = apply(_CONV, x, gg, **attrs) if need_g else None
    return dx, dg


_CONV = OpDef(
    "cudnn_convolution",
    lib.conv_forward,
    _conv_rule,
    saves=SAVE_INPUTS,
    node_name="CudnnConvolutionBackward0",
)
_CONV_DATA = OpDef(
    "cudnn_convolution_backward_input", lib.conv_backward_data, _conv_data_rule, saves=SAVE_INPUTS
)
_CONV_FILTER = OpDef(
    "cudnn_convolution_backward_weight",
    lib.conv_backward_filter,
    _conv_filter_rule,
    saves=SAVE_INPUTS,
)


def conv_ok(x: Tensor, padding: tuple) -> bool:
    """Whether conv.py's convolution of ``x`` with (before, after) ``padding`` goes to cuDNN:
    the dispatch says yes, the padding is symmetric and nothing is empty."""
    name = x.dtype.np.name
    return (
        lib.use_cudnn(x.device, name)
        and lib.conv_allowed(name)
        and all(lo == hi for lo, hi in padding)
        and x.numel() > 0
    )


def convolution(
    x: Tensor, weight: Tensor, padding: tuple, stride: tuple, dilation: tuple, groups: int
) -> Tensor:
    """cuDNN cross-correlation of batched ``x`` (N, C, *S); 1-D as 2-D with a unit height."""
    pad = tuple(lo for lo, _ in padding)
    if x.ndim == 3:
        y = apply(
            _CONV,
            x.unsqueeze(2),
            weight.unsqueeze(2),
            pad=(0, *pad),
            stride=(1, *stride),
            dilation=(1, *dilation),
            groups=groups,
        )
        return y.squeeze(2)
    return apply(_CONV, x, weight, pad=pad, stride=stride, dilation=dilation, groups=groups)


def transposed_convolution(
    x: Tensor,
    weight: Tensor,
    size: tuple,
    padding: tuple,
    stride: tuple,
    dilation: tuple,
    groups: int,
) -> Tensor:
    """cuDNN transposed convolution of batched ``x`` to spatial ``size``: the input gradient
    of the convolution it transposes (so its gradients are that op's rule)."""
    shape = (x.shape[0], weight.shape[1] * groups)
    if x.ndim == 3:
        y = apply(
            _CONV_DATA,
            x.unsqueeze(2),
            weight.unsqueeze(2),
            size=(*shape, 1, *size),
            pad=(0, *padding),
            stride=(1, *stride),
            dilation=(1, *dilation),
            groups=groups,
        )
        return y.squeeze(2)
    return apply(
        _CONV_DATA,
        x,
        weight,
        size=(*shape, *size),
        pad=tuple(padding),
        stride=stride,
        dilation=dilation,
        groups=groups,
    )


# --------------------------------------------------------------------------- pooling
def _pool_rule(ctx: Any, g: Tensor) -> Tensor:
    x, y = ctx.saved_tensors
    return apply(_POOL_BACKWARD, x, y, g, **_pool_attrs(ctx))


def _pool_attrs(ctx: Any) -> dict:
    return {k: ctx.attrs[k] for k in ("kernel", "stride", "pad", "kind")}


def _pool_backward_rule(ctx: Any, gg: Tensor) -> tuple:
    x = ctx.saved_tensors[0]
    attrs = ctx.attrs
    if not ctx.needs_input_grad[2]:
        return None, None, None
    if attrs["kind"] != "max":  # average pooling's backward is linear: its adjoint is itself
        out = tuple(ctx.input_meta[1][0][2:])
        return None, None, apply(_POOL, gg, out=out, **attrs)
    from .pooling import read_at_window_max  # pooling.py imports this module

    return None, None, read_at_window_max(x, gg, attrs["kernel"], attrs["stride"], attrs["pad"])


def _pool_backward_forward(
    xp: Any, x: Any, y: Any, g: Any, kernel: tuple, stride: tuple, pad: tuple, kind: str
) -> Any:
    return lib.pool_backward(xp, x, y, g, kernel, stride, pad, kind)


_POOL = OpDef("cudnn_pooling", lib.pool_forward, _pool_rule, saves=SAVE_BOTH)
_POOL_BACKWARD = OpDef(
    "cudnn_pooling_backward", _pool_backward_forward, _pool_backward_rule, saves=SAVE_INPUTS
)


def pool_ok(x: Tensor, dilation: tuple, ceil_mode: bool) -> bool:
    """Whether pooling.py's max or average pooling of ``x`` goes to cuDNN (no dilation, no
    ceil mode: cuDNN's windows are PyTorch's then)."""
    return (
        lib.use_cudnn(x.device, x.dtype.np.name)
        and not ceil_mode
        and all(d == 1 for d in dilation)
        and x.numel() > 0
    )


def pooling(
    x: Tensor, kernel: tuple, stride: tuple, padding: tuple, out: tuple, kind: str
) -> Tensor:
    """cuDNN pooling of batched ``x``; ``kind`` is "max", "avg_include_pad" or
    "avg_exclude_pad". 1-D as 2-D with a unit height."""
    if x.ndim == 3:
        y = apply(
            _POOL,
            x.unsqueeze(2),
            kernel=(1, *kernel),
            stride=(1, *stride),
            pad=(0, *padding),
            out=(1, *out),
            kind=kind,
        )
        return y.squeeze(2)
    return apply(_POOL, x, kernel=kernel, stride=stride, pad=padding, out=out, kind=kind)


# -------------------------------------------------------------------------- batch norm
def _per_channel(t: Tensor) -> Tensor:
    return t.reshape(1, -1, 1, 1)


def _batch_norm_forward(
    xp: Any,
    x: Any,
    gamma: Any,
    beta: Any,
    running_mean: Any,
    running_var: Any,
    eps: float,
    momentum: float,
    materialize_grads: bool,
) -> tuple:
    """(y, mean, inv_std, new running mean, new running var): the running statistics are
    outputs (cuDNN updates copies), so the op stays a function of its inputs."""
    running_mean, running_var = running_mean.copy(), running_var.copy()
    y, mean, inv_std = lib.batch_norm_forward_training(
        xp, x, gamma, beta, running_mean, running_var, eps, momentum
    )
    return y, mean, inv_std, running_mean, running_var


def _batch_norm_backward_forward(
    xp: Any, x: Any, gamma: Any, g: Any, mean: Any, inv_std: Any, eps: float
) -> tuple:
    return tuple(lib.batch_norm_backward(xp, x, gamma, g, mean, inv_std, eps))


_BATCH_NORM_BACKWARD = OpDef(
    "cudnn_batch_norm_backward", _batch_norm_backward_forward, None, outputs=-1
)


def _batch_norm_rule(
    ctx: Any, g: Tensor | None, g_mean: Tensor | None, g_inv: Tensor | None, *_: Any
) -> tuple:
    x, gamma, _, _, _, _, mean, inv_std, _, _ = ctx.saved_tensors
    count = x.numel() // x.shape[1]
    needs = ctx.needs_input_grad[:3]
    gx = ggamma = gbeta = None
    if g is not None and not _state.grad_enabled:  # a first-order pass: cuDNN's backward
        gx, ggamma, gbeta = apply(
            _BATCH_NORM_BACKWARD, x, gamma, g, mean, inv_std, eps=ctx.attrs["eps"]
        )
    elif g is not None:  # create_graph: the same formula, recorded
        xhat = (x - _per_channel(mean)) * _per_channel(inv_std)
        dims = (0, 2, 3)
        gbeta = g.sum(dims)
        ggamma = (g * xhat).sum(dims)
        centered = g - _per_channel(gbeta) / count - xhat * _per_channel(ggamma) / count
        gx = centered * _per_channel(gamma * inv_std)
    if g_mean is not None or g_inv is not None:  # reached through the saved statistics
        xhat = (x - _per_channel(mean)) * _per_channel(inv_std)
        extra = 0
        if g_mean is not None:
            extra = _per_channel(g_mean) / count
        if g_inv is not None:
            extra = extra - xhat * _per_channel(g_inv * inv_std * inv_std) / count
        gx = extra if gx is None else gx + extra
    grads = (gx, ggamma, gbeta)
    return (*(grad if need else None for grad, need in zip(grads, needs, strict=True)), None, None)


_BATCH_NORM = OpDef(
    "cudnn_batch_norm", _batch_norm_forward, _batch_norm_rule, saves=SAVE_BOTH, outputs=-1
)


def batch_norm_ok(x: Tensor, running: tuple, weight: Tensor | None, eps: float) -> bool:
    """Whether normalization.py's training batch norm of ``x`` goes to cuDNN: the dispatch
    says yes, eps is at least cuDNN's minimum (1e-5), and the running statistics (when
    given) and the weight have the dtype cuDNN keeps statistics in."""
    name = x.dtype.np.name
    if not (lib.use_cudnn(x.device, name) and eps >= 1e-5 and x.numel() > 0):
        return False
    stat = "float64" if name == "float64" else "float32"
    given = [t for t in (*running, weight) if t is not None]
    return all(t.dtype.np.name == stat for t in given)


def batch_norm_training(
    x: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None,
    bias: Tensor | None,
    momentum: float,
    eps: float,
) -> Tensor:
    """Training-mode batch norm of (N, C, *) ``x`` on cuDNN (as (N, C, prod(*), 1), per
    channel), updating the running statistics as PyTorch does."""
    dev, channels = x.device, x.shape[1]
    stat = dev.xp.float64 if x.dtype.np.name == "float64" else dev.xp.float32

    def given(t: Tensor | None, fill: float) -> Tensor:
        return wrap(dev.xp.full(channels, fill, stat), dev) if t is None else t

    # The running statistics go in as copies: the op's saved inputs must not be the tensors
    # that are updated in place right after it.
    running = [given(t, v).detach().clone() for t, v in ((running_mean, 0), (running_var, 1))]
    x4 = x.reshape(x.shape[0], channels, math.prod(x.shape[2:]), 1)
    y, _, _, new_mean, new_var = apply(
        _BATCH_NORM,
        x4,
        given(weight, 1),
        given(bias, 0),
        *running,
        eps=eps,
        momentum=momentum,
        materialize_grads=False,
    )
    with no_grad():
        for tensor, updated in ((running_mean, new_mean), (running_var, new_var)):
            if tensor is not None:
                tensor.copy_(updated)
    return y.reshape(x.shape)
