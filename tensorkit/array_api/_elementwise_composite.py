"""Element-wise functions tensorkit has no single op for, or whose tensorkit op differs from
the standard: built from differentiable tensorkit ops so gradients flow through them.

``nextafter`` is the exception: it steps to a neighbouring float, which no arithmetic op can
express, so it is its own (non-differentiable) op.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..ops import binary, unary
from ..ops import complex as complex_ops
from ..ops._apply import COMMON, OpDef, apply
from ..ops.conversion import clone
from ..tensor import Tensor
from . import _special_values
from ._promotion import cast, common, common_tensors

Operand = Tensor | bool | int | float | complex

_NEXTAFTER = OpDef(
    "nextafter",
    lambda xp, a, b: xp.nextafter(a, b),
    None,
    promote=COMMON,
    key="array_api.nextafter",
)


def clip(x: Tensor, /, min: Operand | None = None, max: Operand | None = None) -> Tensor:
    """``x`` limited to ``[min, max]``; the result keeps ``x``'s dtype."""
    if min is None and max is None:
        return clone(x)
    low = cast(min, x.dtype) if isinstance(min, Tensor) else min
    high = cast(max, x.dtype) if isinstance(max, Tensor) else max
    return binary.clamp(x, low, high)


def copysign(x1: Operand, x2: Operand, /) -> Tensor:
    """The magnitude of ``x1`` with the sign bit of ``x2``."""
    a, b = common_tensors(x1, x2)
    flip = binary.logical_xor(unary.signbit(a), unary.signbit(b))
    return binary.where(flip, unary.neg(a), a)


def expm1(x: Tensor, /) -> Tensor:
    """``exp(x) - 1``, accurate near 0; complex infinities and NaNs as the standard says."""
    out = unary.expm1(x)
    return _special_values.expm1(x, out) if x.is_complex() else out


def floor_divide(x1: Operand, x2: Operand, /) -> Tensor:
    """``floor(x1 / x2)``, with the standard's values for infinite operands (``inf // 2`` is
    ``inf``, ``-1.5 // inf`` is ``-0``); integer division by zero gives 0 (as in NumPy)."""
    a, b = common_tensors(x1, x2)
    return _special_values.floor_divide(a, b, _divide_safely(binary.floor_divide, a, b))


def remainder(x1: Operand, x2: Operand, /) -> Tensor:
    """``x1 - floor(x1 / x2) * x2`` (the sign of ``x2``); integer division by zero gives 0."""
    return _divide_safely(binary.remainder, x1, x2)


def _divide_safely(op: Callable[[Tensor, Tensor], Tensor], x1: Operand, x2: Operand) -> Tensor:
    """``op(x1, x2)`` with integer zero divisors replaced by 1 and their results by 0,
    where tensorkit, like PyTorch, would raise."""
    a, b = common_tensors(x1, x2)
    if a.dtype.np.kind not in "iu":
        return op(a, b)
    zero = binary.eq(b, 0)
    return binary.where(zero, 0, op(a, binary.where(zero, 1, b)))


def hypot(x1: Operand, x2: Operand, /) -> Tensor:
    """``sqrt(x1**2 + x2**2)`` without overflow or underflow in the squares."""
    a, b = common_tensors(x1, x2)
    abs_a, abs_b = unary.abs(a), unary.abs(b)
    large = binary.maximum(abs_a, abs_b)
    small = binary.minimum(abs_a, abs_b)
    zero = binary.eq(large, 0)
    ratio = binary.div(small, binary.where(zero, 1.0, large))
    out = binary.mul(large, unary.sqrt(binary.add(unary.square(ratio), 1.0)))
    infinite = binary.logical_or(unary.isinf(a), unary.isinf(b))
    return binary.where(infinite, math.inf, out)


def logaddexp(x1: Operand, x2: Operand, /) -> Tensor:
    """``log(exp(x1) + exp(x2))`` without overflow; equal infinities give that infinity."""
    a, b = common_tensors(x1, x2)
    larger = binary.maximum(a, b)
    # Where a == b (infinities included) the difference is 0, not inf - inf = nan.
    gap = binary.where(binary.eq(a, b), 0.0, binary.sub(a, b))
    return binary.add(larger, unary.log1p(unary.exp(unary.neg(unary.abs(gap)))))


def nextafter(x1: Operand, x2: Operand, /) -> Tensor:
    """The next representable float after ``x1`` in the direction of ``x2``."""
    return apply(_NEXTAFTER, *common(x1, x2))


def round(x: Tensor, /) -> Tensor:  # noqa: A001
    """Round to the nearest integer, halves to even; complex parts are rounded separately."""
    if x.is_complex():
        return complex_ops.complex(
            unary.round(complex_ops.real(x)), unary.round(complex_ops.imag(x))
        )
    return unary.round(x)


def tanh(x: Tensor, /) -> Tensor:
    """The hyperbolic tangent; complex infinities as the standard says."""
    out = unary.tanh(x)
    return _special_values.tanh(x, out) if x.is_complex() else out


def sign(x: Tensor, /) -> Tensor:
    """-1, 0 or 1 for real ``x``; ``x / |x|`` (0 at 0) for complex ``x``."""
    if not x.is_complex():
        return unary.sign(x)
    magnitude = unary.abs(x)
    zero = binary.eq(magnitude, 0)
    return binary.where(zero, 0, binary.div(x, binary.where(zero, 1.0, magnitude)))
