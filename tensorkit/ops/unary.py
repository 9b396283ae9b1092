"""Elementwise ops of one operand: math functions, activations, rounding, tests.

Each op is one table row: name, forward on arrays, gradient rule, what the rule keeps. Float
functions of integer tensors return the default float dtype, as in PyTorch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..tensor import Tensor
from ._apply import FLOAT, KEEP, SAVE_INPUTS, SAVE_NONE, SAVE_OUTPUT, OpDef, apply
from .binary import where

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erf(xp: Any, x: Any) -> Any:
    return _special(xp, "erf")(x)


def _erfc(xp: Any, x: Any) -> Any:
    return _special(xp, "erfc")(x)


def _special(xp: Any, name: str) -> Callable:
    """erf/erfc from SciPy (or cupyx on the GPU); without SciPy, Python's math module."""
    if xp.__name__ == "cupy":
        import cupyx.scipy.special as special

        return getattr(special, name)
    try:
        import scipy.special as special
    except ImportError:
        import numpy as np

        scalar = getattr(math, name)
        vectorized = np.vectorize(scalar, otypes=[float])
        return lambda x: vectorized(x).astype(x.dtype)
    return getattr(special, name)


def _sigmoid(xp: Any, x: Any) -> Any:
    # Split by sign so exp never overflows: 1/(1+e^-x) for x >= 0, e^x/(1+e^x) otherwise.
    z = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + z), z / (1 + z)).astype(x.dtype, copy=False)


def _relu(xp: Any, x: Any) -> Any:
    return xp.maximum(x, 0).astype(x.dtype, copy=False)


def _zero_grad(ctx: Any, g: Tensor) -> Tensor:
    return g * 0


# name: (forward, rule, saves, promote). Rules read ``ctx.saved_tensors`` as (x,) or (out,).
_TABLE: dict[str, tuple[Callable, Callable | None, int, str]] = {
    "neg": (lambda xp, x: -x, lambda ctx, g: -g, SAVE_NONE, KEEP),
    "exp": (lambda xp, x: xp.exp(x), lambda ctx, g: g * ctx.saved_tensors[0], SAVE_OUTPUT, FLOAT),
    "exp2": (
        lambda xp, x: xp.exp2(x),
        lambda ctx, g: g * ctx.saved_tensors[0] * _LN2,
        SAVE_OUTPUT,
        FLOAT,
    ),
    "expm1": (
        lambda xp, x: xp.expm1(x),
        lambda ctx, g: g * (ctx.saved_tensors[0] + 1),
        SAVE_OUTPUT,
        FLOAT,
    ),
    "log": (lambda xp, x: xp.log(x), lambda ctx, g: g / ctx.saved_tensors[0], SAVE_INPUTS, FLOAT),
    "log2": (
        lambda xp, x: xp.log2(x),
        lambda ctx, g: g / (ctx.saved_tensors[0] * _LN2),
        SAVE_INPUTS,
        FLOAT,
    ),
    "log10": (
        lambda xp, x: xp.log10(x),
        lambda ctx, g: g / (ctx.saved_tensors[0] * _LN10),
        SAVE_INPUTS,
        FLOAT,
    ),
    "log1p": (
        lambda xp, x: xp.log1p(x),
        lambda ctx, g: g / (ctx.saved_tensors[0] + 1),
        SAVE_INPUTS,
        FLOAT,
    ),
    "sqrt": (
        lambda xp, x: xp.sqrt(x),
        lambda ctx, g: g / (2 * ctx.saved_tensors[0]),
        SAVE_OUTPUT,
        FLOAT,
    ),
    "rsqrt": (
        lambda xp, x: 1 / xp.sqrt(x),
        lambda ctx, g: g * -0.5 * ctx.saved_tensors[0] ** 3,
        SAVE_OUTPUT,
        FLOAT,
    ),
    "reciprocal": (
        lambda xp, x: 1 / x,
        lambda ctx, g: -g * ctx.saved_tensors[0] ** 2,
        SAVE_OUTPUT,
        FLOAT,
    ),
    "square": (lambda xp, x: x * x, lambda ctx, g: g * 2 * ctx.saved_tensors[0], SAVE_INPUTS, KEEP),
    "sin": (
        lambda xp, x: xp.sin(x),
        lambda ctx, g: g * cos(ctx.saved_tensors[0]),
        SAVE_INPUTS,
        FLOAT,
    ),
    "cos": (
        lambda xp, x: xp.cos(x),
        lambda ctx, g: -g * sin(ctx.saved_tensors[0]),
        SAVE_INPUTS,
        FLOAT,
    ),
    "tan": (
        lambda xp, x: xp.tan(x),
        lambda ctx, g: g * (1 + ctx.saved_tensors[0] ** 2),
        SAVE_OUTPUT,
        FLOAT,
    ),
    "asin": (
        lambda xp, x: xp.arcsin(x),
        lambda ctx, g: g * rsqrt(1 - ctx.saved_tensors[0] ** 2),
        SAVE_INPUTS,
        FLOAT,
    ),
    "acos": (
        lambda xp, x: xp.arccos(x),
        lambda ctx, g: -g * rsqrt(1 - ctx.saved_tensors[0] ** 2),
        SAVE_INPUTS,
        FLOAT,
    ),
    "atan": (
        lambda xp, x: xp.arctan(x),
        lambda ctx, g: g / (1 + ctx.saved_tensors[0] ** 2),
        SAVE_INPUTS,
        FLOAT,
    ),
    "sinh": (
        lambda xp, x: xp.sinh(x),
        lambda ctx, g: g * cosh(ctx.saved_tensors[0]),
        SAVE_INPUTS,
        FLOAT,
    ),
    "cosh": (
        lambda xp, x: xp.cosh(x),
        lambda ctx, g: g * sinh(ctx.saved_tensors[0]),
        SAVE_INPUTS,
        FLOAT,
    ),
    "tanh": (
        lambda xp, x: xp.tanh(x),
        lambda ctx, g: g * (1 - ctx.saved_tensors[0] ** 2),
        SAVE_OUTPUT,
        FLOAT,
    ),
    "asinh": (
        lambda xp, x: xp.arcsinh(x),
        lambda ctx, g: g * rsqrt(ctx.saved_tensors[0] ** 2 + 1),
        SAVE_INPUTS,
        FLOAT,
    ),
    "acosh": (
        lambda xp, x: xp.arccosh(x),
        lambda ctx, g: g * rsqrt(ctx.saved_tensors[0] ** 2 - 1),
        SAVE_INPUTS,
        FLOAT,
    ),
    "atanh": (
        lambda xp, x: xp.arctanh(x),
        lambda ctx, g: g / (1 - ctx.saved_tensors[0] ** 2),
        SAVE_INPUTS,
        FLOAT,
    ),
    "sigmoid": (
        _sigmoid,
        lambda ctx, g: g * ctx.saved_tensors[0] * (1 - ctx.saved_tensors[0]),
        SAVE_OUTPUT,
        FLOAT,
    ),
    "relu": (
        _relu,
        lambda ctx, g: where(ctx.saved_tensors[0] > 0, g, 0.0),
        SAVE_OUTPUT,
        KEEP,
    ),
    "erf": (
        _erf,
        lambda ctx, g: g * _TWO_OVER_SQRT_PI * exp(-(ctx.saved_tensors[0] ** 2)),
        SAVE_INPUTS,
        FLOAT,
    ),
    "erfc": (
        _erfc,
        lambda ctx, g: g * -_TWO_OVER_SQRT_PI * exp(-(ctx.saved_tensors[0] ** 2)),
        SAVE_INPUTS,
        FLOAT,
    ),
    "abs": (
        lambda xp, x: xp.abs(x),
        lambda ctx, g: g * sign(ctx.saved_tensors[0]),
        SAVE_INPUTS,
        KEEP,
    ),
    "sign": (lambda xp, x: xp.sign(x), _zero_grad, SAVE_NONE, KEEP),
    "floor": (
        lambda xp, x: xp.floor(x) if x.dtype.kind == "f" else x.copy(),
        _zero_grad,
        SAVE_NONE,
        KEEP,
    ),
    "ceil": (
        lambda xp, x: xp.ceil(x) if x.dtype.kind == "f" else x.copy(),
        _zero_grad,
        SAVE_NONE,
        KEEP,
    ),
    "trunc": (
        lambda xp, x: xp.trunc(x) if x.dtype.kind == "f" else x.copy(),
        _zero_grad,
        SAVE_NONE,
        KEEP,
    ),
    "frac": (lambda xp, x: x - xp.trunc(x), lambda ctx, g: g, SAVE_NONE, KEEP),
    "positive": (lambda xp, x: x, lambda ctx, g: g, SAVE_NONE, KEEP),
}

_OPS = {name: OpDef(name, *row[:2], saves=row[2], promote=row[3]) for name, row in _TABLE.items()}
_ROUND = OpDef(
    "round",
    lambda xp, x, decimals=0: xp.round(x, decimals) if x.dtype.kind == "f" else x.copy(),
    _zero_grad,
)
_NAN_TO_NUM = OpDef(
    "nan_to_num",
    lambda xp, x, nan, posinf, neginf: xp.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf),
    lambda ctx, g: g * isfinite(ctx.saved_tensors[0]),
    saves=SAVE_INPUTS,
)


def _unary(name: str) -> Callable[[Tensor], Tensor]:
    op = _OPS[name]

    def function(input: Tensor) -> Tensor:
        return apply(op, input)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"Elementwise {name} (as torch.{name})."
    return function


neg = _unary("neg")
negative = neg
exp = _unary("exp")
exp2 = _unary("exp2")
expm1 = _unary("expm1")
log = _unary("log")
log2 = _unary("log2")
log10 = _unary("log10")
log1p = _unary("log1p")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
reciprocal = _unary("reciprocal")
square = _unary("square")
sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
asin = _unary("asin")
acos = _unary("acos")
atan = _unary("atan")
sinh = _unary("sinh")
cosh = _unary("cosh")
tanh = _unary("tanh")
asinh = _unary("asinh")
acosh = _unary("acosh")
atanh = _unary("atanh")
sigmoid = _unary("sigmoid")
relu = _unary("relu")
erf = _unary("erf")
erfc = _unary("erfc")
abs = _unary("abs")  # noqa: A001
absolute = abs
sign = _unary("sign")
floor = _unary("floor")
ceil = _unary("ceil")
trunc = _unary("trunc")
fix = trunc
frac = _unary("frac")
positive = _unary("positive")
arcsin, arccos, arctan = asin, acos, atan
arcsinh, arccosh, arctanh = asinh, acosh, atanh


def round(input: Tensor, *, decimals: int = 0) -> Tensor:  # noqa: A001
    """Round half to even, to ``decimals`` decimal places."""
    if decimals == 0:
        return apply(_ROUND, input)
    return apply(_ROUND, input, decimals=decimals)


def nan_to_num(
    input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None
) -> Tensor:
    """Replace NaN by ``nan`` and infinities by ``posinf``/``neginf`` (default: the dtype's
    largest and smallest finite values)."""
    return apply(_NAN_TO_NUM, input, nan=nan, posinf=posinf, neginf=neginf)


def _predicate(name: str, forward: Callable) -> Callable[[Tensor], Tensor]:
    op = OpDef(name, forward, None)

    def function(input: Tensor) -> Tensor:
        return apply(op, input)

    function.__name__ = function.__qualname__ = name
    return function


isnan = _predicate("isnan", lambda xp, x: xp.isnan(x))
isinf = _predicate("isinf", lambda xp, x: xp.isinf(x))
isposinf = _predicate("isposinf", lambda xp, x: xp.isposinf(x))
isneginf = _predicate("isneginf", lambda xp, x: xp.isneginf(x))
isfinite = _predicate("isfinite", lambda xp, x: xp.isfinite(x))
signbit = _predicate("signbit", lambda xp, x: xp.signbit(x))
logical_not = _predicate("logical_not", lambda xp, x: xp.logical_not(x))
bitwise_not = _predicate("bitwise_not", lambda xp, x: _invert(xp, x))


def _invert(xp: Any, x: Any) -> Any:
    if x.dtype.kind not in "iub":
        raise TypeError(f"bitwise_not needs an integer or bool tensor, got dtype {x.dtype}")
    return xp.invert(x)
