"""Activation functions, composed from differentiable tensorkit ops.

Where PyTorch's gradient at a kink differs from what a naive composite gives (hardtanh's
boundaries, softplus/logsigmoid at 0), the composite is arranged to give PyTorch's value.
Branches that would overflow (``exp`` of a large input) are clamped first, so a masked-off
branch never turns a zero gradient into ``0 * inf = nan``.
"""

from __future__ import annotations

import math
import warnings

from ..._dtype import CLAMP_COMPLEX, reject_complex
from ...ops import softmax as softmax_op
from ...ops import unary
from ...ops.binary import where
from ...random import rand_like
from ...tensor import Tensor
from ._inplace import maybe_inplace

__all__ = [
    "threshold",
    "relu",
    "relu6",
    "hardtanh",
    "elu",
    "selu",
    "celu",
    "leaky_relu",
    "rrelu",
    "prelu",
    "glu",
    "gelu",
    "logsigmoid",
    "hardshrink",
    "softshrink",
    "tanhshrink",
    "softsign",
    "softplus",
    "softmin",
    "softmax",
    "log_softmax",
    "tanh",
    "sigmoid",
    "hardsigmoid",
    "silu",
    "mish",
    "hardswish",
]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``input`` where it is greater than ``threshold``, else ``value``."""
    reject_complex(input._data.dtype, "threshold_cpu")
    return maybe_inplace(input, inplace, "threshold_", lambda x: where(x > threshold, x, value))


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return maybe_inplace(input, inplace, "relu_", unary.relu)


def _hardtanh(x: Tensor, min_val: float, max_val: float) -> Tensor:
    # The gradient is 1 strictly inside (min_val, max_val), 0 on and beyond the boundaries.
    return where((x > min_val) & (x < max_val), x, x.clamp(min_val, max_val).detach())


def hardtanh(
    input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
) -> Tensor:
    """``input`` clamped to [min_val, max_val]."""
    if input._data.dtype.kind == "c":
        raise NotImplementedError(CLAMP_COMPLEX)
    return maybe_inplace(input, inplace, "hardtanh_", lambda x: _hardtanh(x, min_val, max_val))


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    return hardtanh(input, 0.0, 6.0, inplace)


def _elu(x: Tensor, alpha: float, scale: float = 1.0, input_scale: float = 1.0) -> Tensor:
    negative = alpha * (x.clamp(max=0) * input_scale).expm1()
    return where(x > 0, x * scale, negative * scale)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``input`` for positive values, ``alpha * (exp(input) - 1)`` otherwise."""
    reject_complex(input._data.dtype, "elu_cpu")
    return maybe_inplace(input, inplace, "elu_", lambda x: _elu(x, alpha))


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    reject_complex(input._data.dtype, "elu_cpu")
    return maybe_inplace(input, inplace, "selu_", lambda x: _elu(x, _SELU_ALPHA, _SELU_SCALE))


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    reject_complex(input._data.dtype, "elu_cpu")
    return maybe_inplace(input, inplace, "celu_", lambda x: _elu(x, alpha, 1.0, 1.0 / alpha))


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    reject_complex(input._data.dtype, "leaky_relu_cpu")
    return maybe_inplace(
        input, inplace, "leaky_relu_", lambda x: where(x > 0, x, x * negative_slope)
    )


def rrelu(
    input: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
) -> Tensor:
    """Leaky ReLU whose negative slope is drawn from U(lower, upper) per element in training,
    and is ``(lower + upper) / 2`` otherwise."""
    reject_complex(input._data.dtype, "leaky_relu_cpu")
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)

    def randomized(x: Tensor) -> Tensor:
        slope = rand_like(x.detach()) * (upper - lower) + lower
        return where(x > 0, x, x * slope)

    return maybe_inplace(input, inplace, "rrelu_", randomized)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """Leaky ReLU with a learned slope per channel (dim 1), or one shared slope."""
    reject_complex(input._data.dtype, "prelu_cpu")
    channels = input.shape[1] if input.ndim >= 2 else 1
    count = weight.numel()
    if count != 1 and count != channels:
        raise RuntimeError(
            "Mismatch of parameter numbers and input channel size. Found parameter numbers = "
            f"{count} and channel size = {channels}."
        )
    if count == 1:
        slope = weight.reshape(())
    else:
        slope = weight.reshape((channels,) + (1,) * (input.ndim - 2))
    return where(input > 0, input, input * slope)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: the first half of ``dim`` times the sigmoid of the second half."""
    reject_complex(input._data.dtype, "glu_cpu")
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    size = input.shape[dim]
    if size % 2:
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {dim % input.ndim} is size {size}"
        )
    first, second = input.chunk(2, dim)
    return first * second.sigmoid()


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit; ``approximate='tanh'`` uses the tanh approximation."""
    reject_complex(input._data.dtype, "GeluKernelImpl")
    if approximate == "none":
        return 0.5 * input * (1 + (input * (1 / math.sqrt(2))).erf())
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (input + 0.044715 * input * input * input)
        return 0.5 * input * (1 + inner.tanh())
    raise RuntimeError("approximate argument must be either none or tanh.")


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(input))`` without overflow: ``x - log1p(exp(x))`` for x <= 0 and
    ``-log1p(exp(-x))`` for x > 0."""
    reject_complex(input._data.dtype, "log_sigmoid_cpu")
    positive = input > 0
    negative_abs = where(positive, -input, input)
    return where(positive, 0.0, input) - negative_abs.exp().log1p()


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    reject_complex(input._data.dtype, "hardshrink_cpu")
    return where((input > lambd) | (input < -lambd), input, 0.0)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    reject_complex(input._data.dtype, "softshrink_check")
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd, 0.0))


def tanhshrink(input: Tensor) -> Tensor:
    return input - input.tanh()


def softsign(input: Tensor) -> Tensor:
    return input / (1 + input.abs())


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``."""
    reject_complex(input._data.dtype, "softplus_cpu")
    scaled = input * beta
    smooth = scaled.clamp(max=threshold).exp().log1p()
    return where(scaled > threshold, input, smooth / beta if beta != 1 else smooth)


def _softmax_dim(name: str, ndim: int) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to "
        "include dim=X as an argument.",
        stacklevel=4,
    )
    return 0 if ndim in (0, 1, 3) else 1


def _dim(name: str, input: Tensor, dim: int | None) -> int:
    return _softmax_dim(name, input.ndim) if dim is None else dim


def softmax(
    input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: object = None
) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim``, computed without overflow."""
    return softmax_op.softmax(input, _dim("softmax", input, dim), dtype)


def log_softmax(
    input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: object = None
) -> Tensor:
    return softmax_op.log_softmax(input, _dim("log_softmax", input, dim), dtype)


def softmin(
    input: Tensor, dim: int | None = None, _stacklevel: int = 3, dtype: object = None
) -> Tensor:
    reject_complex(input._data.dtype, "softmax_lastdim_kernel_impl")
    dim = _dim("softmin", input, dim)
    return softmax_op.softmax(-(input if dtype is None else input.to(dtype)), dim)


def tanh(input: Tensor) -> Tensor:
    return unary.tanh(input)


def sigmoid(input: Tensor) -> Tensor:
    return unary.sigmoid(input)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    reject_complex(input._data.dtype, "hardsigmoid_cpu")
    return maybe_inplace(input, inplace, "hardsigmoid_", lambda x: _hardtanh(x + 3, 0.0, 6.0) / 6)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)`` (swish)."""
    return maybe_inplace(input, inplace, "silu_", lambda x: x * x.sigmoid())


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))``."""
    reject_complex(input._data.dtype, "mish_cpu")
    return maybe_inplace(input, inplace, "mish_", lambda x: x * softplus(x).tanh())


def _hardswish(x: Tensor) -> Tensor:
    return where(x <= -3, 0.0, where(x < 3, x * (x + 3) / 6, x))


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    reject_complex(input._data.dtype, "hardswish_cpu")
    return maybe_inplace(input, inplace, "hardswish_", _hardswish)
