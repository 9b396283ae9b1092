"""The standard's special values where tensorkit's op (PyTorch's, NumPy's) gives others.

Each function takes the op's result and replaces the special cases the standard lists:
floor division with an infinite operand, and complex ``expm1`` and ``tanh`` at infinities and
NaNs (C99 Annex G, as the standard words it). The replaced elements are constants, so they get
no gradient; the others keep the op's.
"""

from __future__ import annotations

import math

from ..ops import binary, unary
from ..ops import complex as complex_ops
from ..tensor import Tensor


def floor_divide(x1: Tensor, x2: Tensor, quotient: Tensor) -> Tensor:
    """``quotient`` (NumPy's floor division of floats) with an infinite dividend over a
    finite nonzero divisor giving a signed infinity (NumPy: NaN), and a finite nonzero
    dividend over an infinite divisor a signed zero (NumPy: -1 for opposite signs)."""
    if quotient.dtype.np.kind != "f":
        return quotient
    negative = binary.logical_xor(unary.signbit(x1), unary.signbit(x2))
    divisor_finite = binary.logical_and(unary.isfinite(x2), binary.ne(x2, 0))
    infinite_dividend = binary.logical_and(unary.isinf(x1), divisor_finite)
    dividend_finite = binary.logical_and(unary.isfinite(x1), binary.ne(x1, 0))
    infinite_divisor = binary.logical_and(dividend_finite, unary.isinf(x2))
    signed_inf = binary.where(negative, -math.inf, math.inf)
    signed_zero = binary.where(negative, -0.0, 0.0)
    out = binary.where(infinite_dividend, signed_inf.to(quotient.dtype), quotient)
    return binary.where(infinite_divisor, signed_zero.to(quotient.dtype), out)


def _complex(real: Tensor, imag: Tensor, like: Tensor) -> Tensor:
    """The complex tensor of dtype ``like``'s with these parts."""
    part = like.real.dtype
    return complex_ops.complex(real.to(part), imag.to(part))


def _signed_zero(t: Tensor) -> Tensor:
    """0 with the sign bit of each element of ``t``."""
    return binary.where(unary.signbit(t), -0.0, 0.0)


def expm1(z: Tensor, result: Tensor) -> Tensor:
    """Complex ``expm1`` (``result``, NumPy's) with the standard's values where the real part
    is infinite, and NaN + 0j for NaN + 0j."""
    a, b = complex_ops.real(z).detach(), complex_ops.imag(z).detach()
    b_finite, b_zero = unary.isfinite(b), binary.eq(b, 0)
    positive_inf, negative_inf = binary.eq(a, math.inf), binary.eq(a, -math.inf)
    minus_one = binary.where(negative_inf, -1.0, 0.0)
    cases = [
        # -inf + bj: +0 cis(b) - 1, so -1 with the sign of sin(b) on a zero imaginary part
        (
            negative_inf,
            _complex(minus_one, _signed_zero(binary.where(b_finite, unary.sin(b), 0.0)), z),
        ),
        # +inf + 0j stays +inf + 0j (the zero's sign kept)
        (binary.logical_and(positive_inf, b_zero), _complex(a, b, z)),
        # +inf with an infinite or NaN imaginary part: inf + NaN j
        (
            binary.logical_and(positive_inf, unary.logical_not(b_finite)),
            _complex(a, b * math.nan, z),
        ),
        # NaN + 0j stays NaN + 0j
        (binary.logical_and(unary.isnan(a), b_zero), _complex(a, b, z)),
    ]
    out = result
    for mask, value in cases:
        out = binary.where(mask, value, out)
    return out


def tanh(z: Tensor, result: Tensor) -> Tensor:
    """Complex ``tanh`` (``result``) with the standard's 1 + 0j for an infinite real part and
    a finite imaginary part: ``±1`` with the zero signed as ``b`` (C99 signs it by sin(2b))."""
    a, b = complex_ops.real(z).detach(), complex_ops.imag(z).detach()
    mask = binary.logical_and(unary.isinf(a), unary.isfinite(b))
    value = _complex(unary.sign(a), _signed_zero(b), z)
    return binary.where(mask, value, result)
