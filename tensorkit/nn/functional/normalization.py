"""Normalization: batch, layer, group, instance and RMS norm, and ``normalize``.

Statistics use the biased variance; running variances are updated with the unbiased one, as
in PyTorch. Running statistics are updated in place, outside the graph. On CUDA with cuDNN,
training-mode batch norm goes to ``_cudnn.batch_norm_training`` (forward, statistics and
backward).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..._dtype import float32, float64, reject_complex
from ..._ranges import composite
from ...autograd.grad_mode import no_grad
from ...ops._apply import SAVE_OUTPUT, OpDef, apply
from ...tensor import Tensor
from . import _cudnn
from .conv import pad

__all__ = [
    "batch_norm",
    "instance_norm",
    "layer_norm",
    "group_norm",
    "rms_norm",
    "normalize",
    "local_response_norm",
]


def _per_channel(t: Tensor, ndim: int) -> Tensor:
    """A (C,) tensor shaped to broadcast against a (N, C, *) input."""
    return t.reshape((-1,) + (1,) * (ndim - 2))


def _affine(
    input: Tensor, mean: Tensor, invstd: Tensor, weight: Tensor | None, bias: Tensor | None
) -> Tensor:
    """``(input - mean) * invstd * weight + bias`` for per-channel weight and bias, computed
    as ``input * alpha + beta`` like PyTorch's CPU kernels."""
    alpha = invstd if weight is None else invstd * _per_channel(weight, input.ndim)
    beta = -mean * alpha
    if bias is not None:
        beta = beta + _per_channel(bias, input.ndim)
    return input * alpha + beta


def _update_running(running: Tensor, batch_value: Tensor, momentum: float) -> None:
    with no_grad():
        running.copy_(running * (1 - momentum) + batch_value.detach() * momentum)


def _check_running(name: str, running: Tensor | None, channels: int) -> None:
    if running is not None and running.numel() != channels:
        raise RuntimeError(f"{name} should contain {channels} elements not {running.numel()}")


@composite
def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each channel (dim 1) over the batch and spatial dims. In training the batch
    statistics are used (and folded into the running ones); otherwise the running ones."""
    reject_complex(input._data.dtype, "batch_norm")
    if input.ndim < 2:
        raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")
    channels = input.shape[1]
    _check_running("running_mean", running_mean, channels)
    _check_running("running_var", running_var, channels)
    if training:
        count = input.numel() // channels if channels else 0
        if count == 1:
            raise ValueError(
                "Expected more than 1 value per channel when training, got input size "
                f"{input.shape}"
            )
        if _cudnn.batch_norm_ok(input, (running_mean, running_var), weight, eps):
            return _cudnn.batch_norm_training(
                input, running_mean, running_var, weight, bias, momentum, eps
            )
        dims = (0, *range(2, input.ndim))
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, keepdim=True, correction=0)
        if running_mean is not None:
            _update_running(running_mean, mean.reshape(-1), momentum)
        if running_var is not None:
            _update_running(running_var, var.reshape(-1) * (count / (count - 1)), momentum)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        mean = _per_channel(running_mean, input.ndim)
        var = _per_channel(running_var, input.ndim)
    return _affine(input, mean, (var + eps).rsqrt(), weight, bias)


@composite
def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each channel of each sample over its spatial dims."""
    reject_complex(input._data.dtype, "batch_norm")
    if input.ndim < 3:
        raise ValueError(f"expected at least 3D input (got {input.ndim}D input)")
    channels = input.shape[1]
    _check_running("running_mean", running_mean, channels)
    _check_running("running_var", running_var, channels)
    if use_input_stats:
        spatial = math.prod(input.shape[2:])
        if spatial == 1:
            raise ValueError(
                f"Expected more than 1 spatial element when training, got input size {input.shape}"
            )
        dims = tuple(range(2, input.ndim))
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, keepdim=True, correction=0)
        if running_mean is not None:
            _update_running(running_mean, mean.reshape(input.shape[0], -1).mean(0), momentum)
        if running_var is not None:
            unbiased = var.reshape(input.shape[0], -1) * (spatial / (spatial - 1))
            _update_running(running_var, unbiased.mean(0), momentum)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined")
        mean = _per_channel(running_mean, input.ndim)
        var = _per_channel(running_var, input.ndim)
    return _affine(input, mean, (var + eps).rsqrt(), weight, bias)


def _normalized_dims(input: Tensor, normalized_shape: int | Sequence[int]) -> tuple[int, ...]:
    shape = [normalized_shape] if isinstance(normalized_shape, int) else list(normalized_shape)
    k = len(shape)
    if k == 0 or input.ndim < k or list(input.shape[input.ndim - k :]) != shape:
        raise RuntimeError(
            f"Given normalized_shape={shape}, expected input with shape [*, "
            f"{', '.join(str(n) for n in shape)}], but got input of size{list(input.shape)}"
        )
    return tuple(range(-k, 0))


def _layer_norm_forward(
    xp: Any, x: Any, axes: tuple[int, ...], eps: float, materialize_grads: bool
) -> tuple:
    """``(x - mean) * rstd`` over ``axes``, and ``rstd = 1 / sqrt(var + eps)`` (biased var):
    PyTorch's native_layer_norm without the affine part, in five passes over ``x``.
    ``materialize_grads=False``: the rule gets None, not zeros, for an output no gradient
    reached."""
    mean = x.mean(axis=axes, keepdims=True)
    normalized = x - mean
    rstd = xp.square(normalized).mean(axis=axes, keepdims=True)
    rstd += eps
    xp.sqrt(rstd, out=rstd)
    xp.reciprocal(rstd, out=rstd)
    normalized *= rstd
    return normalized, rstd


def _layer_norm_rule(ctx: Any, space: Any, saved: tuple, g: Any, g_rstd: Any) -> Any:
    """``rstd * (g - mean(g) - x̂ * mean(g * x̂))``, the gradient through the normalized x̂.

    Plus ``-g_rstd * rstd² * x̂ / n`` for a gradient reaching ``rstd`` (as it does in double
    backward, where the rule's own use of rstd is differentiated). Written on the saved
    outputs, so every order works, and over a namespace (``ops._rule_space``): it runs on
    Tensors and on raw arrays."""
    normalized, rstd = saved
    axes = ctx.attrs["axes"]
    count = _count(normalized.shape, axes)
    grad = None
    if g is not None:
        centered = g - space.sum(g, axes, keepdims=True) / count
        spread = space.sum(g * normalized, axes, keepdims=True) / count
        grad = (centered - normalized * spread) * rstd
    if g_rstd is not None:
        through_rstd = normalized * (g_rstd * rstd * rstd / -count)
        grad = through_rstd if grad is None else grad + through_rstd
    return grad


def _count(shape: tuple, axes: tuple[int, ...]) -> int:
    """How many elements each normalized slice holds."""
    return math.prod(shape[axis] for axis in axes)


_LAYER_NORM = OpDef(
    "native_layer_norm",
    _layer_norm_forward,
    None,
    rule=_layer_norm_rule,
    saves=SAVE_OUTPUT,
    outputs=-1,
)


@composite
def layer_norm(
    input: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize over the trailing ``normalized_shape`` dims, then scale and shift
    elementwise. float32/float64 inputs take one fused op (``native_layer_norm``, with its own
    gradient rule); other dtypes the composite formula."""
    reject_complex(input._data.dtype, "LayerNormKernelImpl")
    dims = _normalized_dims(input, normalized_shape)
    if input.dtype in (float32, float64) and _count(input.shape, dims) > 0:
        out, _ = apply(_LAYER_NORM, input, axes=dims, eps=eps, materialize_grads=False)
    else:
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, keepdim=True, correction=0)
        out = (input - mean) * (var + eps).rsqrt()
    if weight is not None:
        out = out * weight
    return out if bias is None else out + bias


@composite
def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalize each group of ``C // num_groups`` channels of each sample."""
    reject_complex(input._data.dtype, "GroupNormKernelImpl")
    if input.ndim < 2:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received {input.ndim}"
        )
    batch, channels = input.shape[0], input.shape[1]
    if channels % num_groups:
        raise RuntimeError(
            "Expected number of channels in input to be divisible by num_groups, but got input "
            f"of shape {list(input.shape)} and num_groups={num_groups}"
        )
    grouped = input.reshape(batch, num_groups, -1)
    mean = grouped.mean(-1, keepdim=True)
    var = grouped.var(-1, keepdim=True, correction=0)
    out = ((grouped - mean) * (var + eps).rsqrt()).reshape(input.shape)
    if weight is not None:
        out = out * _per_channel(weight, input.ndim)
    return out if bias is None else out + _per_channel(bias, input.ndim)


@composite
def rms_norm(
    input: Tensor,
    normalized_shape: int | Sequence[int],
    weight: Tensor | None = None,
    eps: float | None = None,
) -> Tensor:
    """``input / sqrt(mean(input^2) + eps)`` over the trailing dims (eps defaults to the
    dtype's machine epsilon), times ``weight``."""
    dims = _normalized_dims(input, normalized_shape)
    if eps is None:
        eps = float(np.finfo(input._data.dtype).eps)
    out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return out if weight is None else out * weight


@composite
def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """``input`` divided by its ``p``-norm along ``dim`` (at least ``eps``)."""
    norm = input.norm(p, dim, keepdim=True).clamp(min=eps)
    return input / norm.expand_as(input)


@composite
def local_response_norm(
    input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0
) -> Tensor:
    """``x / (k + alpha * mean of x^2 over ``size`` neighbouring channels)^beta`` (channels on
    dim 1, zero-padded at the ends)."""
    reject_complex(input._data.dtype, "avg_pool3d_out_frame")
    if input.ndim < 3:
        raise ValueError(
            f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)"
        )
    if input.numel() == 0:
        return input
    squares = input * input
    pads = [0, 0] * (input.ndim - 2) + [size // 2, (size - 1) // 2]
    padded = pad(squares, pads)
    channels = input.shape[1]
    total = padded.narrow(1, 0, channels)
    for offset in range(1, size):
        total = total + padded.narrow(1, offset, channels)
    div = (total / size * alpha + k) ** beta
    return input / div
