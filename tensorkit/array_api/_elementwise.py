"""Element-wise functions that map one-to-one onto a tensorkit op.

Binary functions accept a Python scalar for either operand (but not both) and promote by the
standard's rules before calling the op, so a 0-d array promotes like any other array.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..ops import binary, unary
from ..ops import complex as complex_ops
from ..tensor import Tensor
from ._promotion import common

Operand = Tensor | bool | int | float | complex


def _unary(name: str, op: Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    def function(x: Tensor, /) -> Tensor:
        return op(x)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"Element-wise ``{name}`` of ``x``."
    return function


def _binary(name: str, op: Callable[[Any, Any], Tensor]) -> Callable[[Any, Any], Tensor]:
    def function(x1: Operand, x2: Operand, /) -> Tensor:
        return op(*common(x1, x2))

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"Element-wise ``{name}`` of ``x1`` and ``x2`` (either may be a scalar)."
    return function


abs = _unary("abs", unary.abs)  # noqa: A001
acos = _unary("acos", unary.acos)
acosh = _unary("acosh", unary.acosh)
asin = _unary("asin", unary.asin)
asinh = _unary("asinh", unary.asinh)
atan = _unary("atan", unary.atan)
atanh = _unary("atanh", unary.atanh)
bitwise_invert = _unary("bitwise_invert", unary.bitwise_not)
ceil = _unary("ceil", unary.ceil)
conj = _unary("conj", complex_ops.conj)
cos = _unary("cos", unary.cos)
cosh = _unary("cosh", unary.cosh)
exp = _unary("exp", unary.exp)
floor = _unary("floor", unary.floor)
imag = _unary("imag", complex_ops.imag)
isfinite = _unary("isfinite", unary.isfinite)
isinf = _unary("isinf", unary.isinf)
isnan = _unary("isnan", unary.isnan)
log = _unary("log", unary.log)
log1p = _unary("log1p", unary.log1p)
log2 = _unary("log2", unary.log2)
log10 = _unary("log10", unary.log10)
logical_not = _unary("logical_not", unary.logical_not)
negative = _unary("negative", unary.neg)
positive = _unary("positive", unary.positive)
real = _unary("real", complex_ops.real)
reciprocal = _unary("reciprocal", unary.reciprocal)
signbit = _unary("signbit", unary.signbit)
sin = _unary("sin", unary.sin)
sinh = _unary("sinh", unary.sinh)
square = _unary("square", unary.square)
sqrt = _unary("sqrt", unary.sqrt)
tan = _unary("tan", unary.tan)
trunc = _unary("trunc", unary.trunc)

add = _binary("add", binary.add)
atan2 = _binary("atan2", binary.atan2)
bitwise_and = _binary("bitwise_and", binary.bitwise_and)
bitwise_left_shift = _binary("bitwise_left_shift", binary.bitwise_left_shift)
bitwise_or = _binary("bitwise_or", binary.bitwise_or)
bitwise_right_shift = _binary("bitwise_right_shift", binary.bitwise_right_shift)
bitwise_xor = _binary("bitwise_xor", binary.bitwise_xor)
divide = _binary("divide", binary.div)
equal = _binary("equal", binary.eq)
greater = _binary("greater", binary.gt)
greater_equal = _binary("greater_equal", binary.ge)
less = _binary("less", binary.lt)
less_equal = _binary("less_equal", binary.le)
logical_and = _binary("logical_and", binary.logical_and)
logical_or = _binary("logical_or", binary.logical_or)
logical_xor = _binary("logical_xor", binary.logical_xor)
maximum = _binary("maximum", binary.maximum)
minimum = _binary("minimum", binary.minimum)
multiply = _binary("multiply", binary.mul)
not_equal = _binary("not_equal", binary.ne)
pow = _binary("pow", binary.pow)  # noqa: A001
subtract = _binary("subtract", binary.sub)
