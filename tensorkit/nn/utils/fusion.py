"""Folding an eval-mode batch norm into the convolution or linear layer before it."""

from __future__ import annotations

import copy
from typing import Any

from ...ops.creation import ones_like, zeros_like
from ...tensor import Tensor
from ..parameter import Parameter

__all__ = [
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
]


def _check_eval(layer: Any, bn: Any) -> None:
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval!")


def _fused_copy(layer: Any, bn: Any, fuse_weights: Any, *extra: Any) -> Any:
    """A copy of ``layer`` whose weight and bias are ``fuse_weights`` of its own and ``bn``'s
    running statistics and affine parameters (``extra`` passed on after them)."""
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")
    fused = copy.deepcopy(layer)
    fused.weight, fused.bias = fuse_weights(
        fused.weight,
        fused.bias,
        bn.running_mean,
        bn.running_var,
        bn.eps,
        bn.weight,
        bn.bias,
        *extra,
    )
    return fused


def fuse_conv_bn_eval(conv: Any, bn: Any, transpose: bool = False) -> Any:
    """A copy of ``conv`` that computes ``bn(conv(x))`` (both in eval mode) in one layer;
    ``transpose=True`` for a transposed convolution."""
    _check_eval(conv, bn)
    return _fused_copy(conv, bn, fuse_conv_bn_weights, transpose)


def fuse_conv_bn_weights(
    conv_w: Tensor,
    conv_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor | None,
    bn_b: Tensor | None,
    transpose: bool = False,
) -> tuple[Parameter, Parameter]:
    """The weight and bias of a convolution followed by an eval-mode batch norm, as one."""
    weight_dtype = conv_w.dtype
    bias_dtype = conv_b.dtype if conv_b is not None else weight_dtype
    if conv_b is None:
        conv_b = zeros_like(bn_rm)
    if bn_w is None:
        bn_w = ones_like(bn_rm)
    if bn_b is None:
        bn_b = zeros_like(bn_rm)
    var_rsqrt = (bn_rv + bn_eps).rsqrt()
    tail = [1] * (conv_w.ndim - 2)
    shape = [1, -1, *tail] if transpose else [-1, 1, *tail]
    fused_w = (conv_w * (bn_w * var_rsqrt).reshape(shape)).to(dtype=weight_dtype)
    fused_b = ((conv_b - bn_rm) * var_rsqrt * bn_w + bn_b).to(dtype=bias_dtype)
    return Parameter(fused_w, conv_w.requires_grad), Parameter(fused_b, conv_b.requires_grad)


def fuse_linear_bn_eval(linear: Any, bn: Any) -> Any:
    """A copy of ``linear`` that computes ``bn(linear(x))`` (both in eval mode) in one layer."""
    _check_eval(linear, bn)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError(
            "To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
            f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}"
        )
    return _fused_copy(linear, bn, fuse_linear_bn_weights)


def fuse_linear_bn_weights(
    linear_w: Tensor,
    linear_b: Tensor | None,
    bn_rm: Tensor,
    bn_rv: Tensor,
    bn_eps: float,
    bn_w: Tensor,
    bn_b: Tensor,
) -> tuple[Parameter, Parameter]:
    """The weight and bias of a linear layer followed by an eval-mode batch norm, as one."""
    weight_dtype = linear_w.dtype
    bias_dtype = linear_b.dtype if linear_b is not None else weight_dtype
    if linear_b is None:
        linear_b = zeros_like(bn_rm)
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    fused_w = linear_w * scale.unsqueeze(-1).to(dtype=weight_dtype)
    fused_b = ((linear_b - bn_rm) * scale + bn_b).to(dtype=bias_dtype)
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, linear_b.requires_grad)
