"""Elementwise ops of one operand: math functions, activations, rounding, tests.

Each op is one table row: name, forward on arrays, gradient rule, what the rule keeps. Float
functions of integer tensors return the default float dtype, as in PyTorch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

from .._backend.threads import MIN_ELEMENTS, parallel_parts
from .._dtype import CLAMP_COMPLEX, no_kernel
from ..tensor import Tensor
from ._apply import (
    FLOAT,
    KEEP,
    SAVE_INPUTS,
    SAVE_NONE,
    SAVE_OUTPUT,
    OpDef,
    apply,
)
from .binary import where
from .complex import conj

__all__ = [
    "neg",
    "negative",
    "exp",
    "exp2",
    "expm1",
    "log",
    "log2",
    "log10",
    "log1p",
    "sqrt",
    "rsqrt",
    "reciprocal",
    "square",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "sigmoid",
    "relu",
    "erf",
    "erfc",
    "abs",
    "absolute",
    "sign",
    "floor",
    "ceil",
    "trunc",
    "fix",
    "frac",
    "positive",
    "arcsin",
    "arccos",
    "arctan",
    "arcsinh",
    "arccosh",
    "arctanh",
    "round",
    "nan_to_num",
    "isnan",
    "isinf",
    "isposinf",
    "isneginf",
    "isfinite",
    "signbit",
    "logical_not",
    "bitwise_not",
    "invert",
    "sgn",
    "sinc",
    "logit",
    "deg2rad",
    "rad2deg",
    "frexp",
]

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _erf(xp: Any, x: Any) -> Any:
    return _special(xp, "erf")(x).astype(x.dtype, copy=False)  # SciPy widens float16


def _erfc(xp: Any, x: Any) -> Any:
    return _special(xp, "erfc")(x).astype(x.dtype, copy=False)


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
    if x.dtype.kind == "c":
        return 1 / (1 + xp.exp(-x))
    # Split by sign so exp never overflows: 1/(1+e^-x) for x >= 0, e^x/(1+e^x) otherwise,
    # with z = e^-|x| <= 1 that is max(z, x >= 0) / (1 + z): the same values as a select,
    # without NumPy's select on an unpredictable mask (20x slower on 1M float32 here).
    # float16 is computed in float32 and rounded once, as PyTorch does.
    wide = x.astype("float32") if x.dtype == "float16" else x
    z = xp.exp(-xp.abs(wide))
    return (xp.maximum(z, wide >= 0) / (1 + z)).astype(x.dtype, copy=False)


def _negate(xp: Any, x: Any) -> Any:
    if x.dtype.kind == "b":
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
            "to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    return -x


def _sign(xp: Any, x: Any) -> Any:
    return x.copy() if x.dtype.kind == "b" else xp.sign(x)


def _square(xp: Any, x: Any) -> Any:
    if x.dtype.kind == "b":
        x = x.astype("int64")  # as pow(x, 2): bool squares to int64
    return x * x


def _relu(xp: Any, x: Any) -> Any:
    if x.dtype.kind == "b":
        raise RuntimeError("Boolean inputs not supported for relu")
    if x.dtype.kind == "c":
        raise NotImplementedError(CLAMP_COMPLEX)
    if x.size < MIN_ELEMENTS or x.ndim == 0:
        return xp.maximum(x, 0).astype(x.dtype, copy=False)
    out = xp.empty(x.shape, x.dtype)
    parallel_parts(lambda part: xp.maximum(x[part], 0, out=out[part]), len(x), x.size, x)
    return out


def _positive(xp: Any, x: Any) -> Any:
    if x.dtype.kind == "b":
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return x


def _refuse(name: str, x: Any, kinds: str) -> None:
    """PyTorch has no kernel of ``name`` for these dtype kinds."""
    if x.dtype.kind in kinds:
        raise no_kernel(name, x.dtype)


def _rounding(name: str) -> Callable:
    """floor, ceil, trunc or round: floats rounded, integers copied, bool refused."""

    def forward(xp: Any, x: Any, **decimals: int) -> Any:
        _refuse(name, x, "bc")
        return getattr(xp, name)(x, **decimals) if x.dtype.kind == "f" else x.copy()

    return forward


def _frac(xp: Any, x: Any) -> Any:
    _refuse("frac", x, "biuc")
    return x - xp.trunc(x)


def _zero_grad(ctx: Any, g: Tensor) -> Tensor:
    return g * 0


def _abs(xp: Any, x: Any) -> Any:
    _refuse("abs", x, "b")
    return xp.abs(x)


def _abs_rule(ctx: Any, g: Tensor) -> Tensor:
    """``g * sgn(x)``: sign(x) for real x; for complex x, x/|x| (0 at 0), made of
    differentiable ops since, unlike sign, it is not piecewise constant."""
    x = ctx.saved_tensors[0]
    if not x.is_complex():
        return g * sign(x)
    magnitude = abs(x)
    return g * (x / where(magnitude == 0, 1.0, magnitude))


def _saved(ctx: Any) -> Tensor:
    """The saved input (or output), conjugated. PyTorch's gradient for complex z is
    ``g * conj(f'(z))``, and for these functions (real Taylor coefficients)
    ``conj(f'(z)) = f'(conj(z))``: rules written on conjugated values are right for complex
    and unchanged for real tensors (whose conj is the tensor itself)."""
    return conj(ctx.saved_tensors[0])


def _acosh_rule(ctx: Any, g: Tensor) -> Tensor:
    """``g / sqrt(x^2 - 1)``; for complex x as ``sqrt(x - 1) * sqrt(x + 1)``, which follows
    acosh's branch cut (``sqrt(x^2 - 1)`` has the wrong sign on half of the plane)."""
    x = _saved(ctx)
    if x.is_complex():
        return g * rsqrt(x - 1) * rsqrt(x + 1)
    return g * rsqrt(x**2 - 1)


# Fused gradient ops for the activations networks use most: one op instead of two or three in
# every backward pass (as PyTorch's tanh_backward etc.). Each has its own rule, so double
# backward still works; tests check them against the composite formulas.
# The fused ops are holomorphic in (g, out), so each gradient is gg times the conjugated
# partial derivative (conj is the identity on real tensors).
def _tanh_backward_rule(ctx: Any, gg: Tensor) -> tuple:
    g, out = ctx.saved_tensors
    grad_g = gg * conj(1 - out * out) if ctx.edges[0] is not None else None
    grad_out = gg * conj(g * out * -2) if ctx.edges[1] is not None else None
    return grad_g, grad_out


def _sigmoid_backward_rule(ctx: Any, gg: Tensor) -> tuple:
    g, out = ctx.saved_tensors
    grad_g = gg * conj(out * (1 - out)) if ctx.edges[0] is not None else None
    grad_out = gg * conj(g * (1 - 2 * out)) if ctx.edges[1] is not None else None
    return grad_g, grad_out


def _threshold_backward(xp: Any, g: Any, out: Any) -> Any:
    """``g`` where ``out > 0``, else 0, laid out in memory as ``g`` is (a channels-last
    gradient stays channels-last); large arrays split over threads."""
    if g.size < MIN_ELEMENTS or g.shape != out.shape or g.ndim == 0:
        return _threshold_backward_part(xp, g, out)
    result = xp.empty_like(g)

    def part(rows: slice) -> None:
        _threshold_backward_part(xp, g[rows], out[rows], result[rows])

    parallel_parts(part, len(g), g.size, g)
    return result


def _threshold_backward_part(xp: Any, g: Any, out: Any, result: Any = None) -> Any:
    """Into ``result`` (or a new array). A float gradient's bits are ANDed with a mask of all
    ones where ``out > 0`` and all zeros elsewhere: the exact select (inf and NaN pass, +0.0
    elsewhere), without the mispredicted branches that make ``where`` on an unpredictable mask
    ~10x slower (three passes, no allocation with ``result``)."""
    if g.dtype.kind != "f" or g.shape != out.shape:
        selected = xp.where(out > 0, g, 0).astype(g.dtype, copy=False)
        if result is None:
            return selected
        result[...] = selected
        return result
    bits = _SAME_SIZE_INT[g.dtype.itemsize]
    if result is None:
        result = xp.empty_like(g)
    mask = result.view(bits)
    xp.greater(out, 0, out=mask)
    xp.negative(mask, out=mask)
    xp.bitwise_and(g.view(bits), mask, out=mask)
    return result


_SAME_SIZE_INT = {2: "int16", 4: "int32", 8: "int64"}


_TANH_BACKWARD = OpDef(
    "tanh_backward", lambda xp, g, out: g * (1 - out * out), _tanh_backward_rule, saves=SAVE_INPUTS
)
_SIGMOID_BACKWARD = OpDef(
    "sigmoid_backward",
    lambda xp, g, out: g * out * (1 - out),
    _sigmoid_backward_rule,
    saves=SAVE_INPUTS,
)
_THRESHOLD_BACKWARD = OpDef(
    "threshold_backward",
    lambda xp, g, out: _threshold_backward(xp, g, out),
    lambda ctx, gg: (apply(_THRESHOLD_BACKWARD, gg, ctx.saved_tensors[1]), None),
    saves=SAVE_INPUTS,
)


class _Over(NamedTuple):
    """A table rule written over a namespace (``ops._rule_space``): ``rule(ctx, space, saved,
    g)``, run on Tensors and, by the engine's plain runner, on raw arrays. Saved values are
    conjugated as ``_saved`` explains."""

    rule: Callable


# name: (forward, rule, saves, promote). Rules read the saved x or out through ``_saved``.
_TABLE: dict[str, tuple[Callable, Callable | None, int, str]] = {
    "neg": (_negate, _Over(lambda ctx, space, saved, g: -g), SAVE_NONE, KEEP),
    "exp": (
        lambda xp, x: xp.exp(x),
        _Over(lambda ctx, space, saved, g: g * space.conj(saved[0])),
        SAVE_OUTPUT,
        FLOAT,
    ),
    "exp2": (
        lambda xp, x: xp.exp2(x),
        lambda ctx, g: g * _saved(ctx) * _LN2,
        SAVE_OUTPUT,
        FLOAT,
    ),
    "expm1": (
        lambda xp, x: xp.expm1(x),
        lambda ctx, g: g * (_saved(ctx) + 1),
        SAVE_OUTPUT,
        FLOAT,
    ),
    "log": (
        lambda xp, x: xp.log(x),
        _Over(lambda ctx, space, saved, g: g / space.conj(saved[0])),
        SAVE_INPUTS,
        FLOAT,
    ),
    "log2": (
        lambda xp, x: xp.log2(x),
        lambda ctx, g: g / (_saved(ctx) * _LN2),
        SAVE_INPUTS,
        FLOAT,
    ),
    "log10": (
        lambda xp, x: xp.log10(x),
        lambda ctx, g: g / (_saved(ctx) * _LN10),
        SAVE_INPUTS,
        FLOAT,
    ),
    "log1p": (
        lambda xp, x: xp.log1p(x),
        lambda ctx, g: g / (_saved(ctx) + 1),
        SAVE_INPUTS,
        FLOAT,
    ),
    "sqrt": (
        lambda xp, x: xp.sqrt(x),
        _Over(lambda ctx, space, saved, g: g / (2 * space.conj(saved[0]))),
        SAVE_OUTPUT,
        FLOAT,
    ),
    "rsqrt": (
        lambda xp, x: 1 / xp.sqrt(x),
        lambda ctx, g: g * -0.5 * _saved(ctx) ** 3,
        SAVE_OUTPUT,
        FLOAT,
    ),
    "reciprocal": (
        lambda xp, x: 1 / x,
        lambda ctx, g: -g * _saved(ctx) ** 2,
        SAVE_OUTPUT,
        FLOAT,
    ),
    "square": (_square, lambda ctx, g: g * 2 * _saved(ctx), SAVE_INPUTS, KEEP),
    "sin": (
        lambda xp, x: xp.sin(x),
        _Over(lambda ctx, space, saved, g: g * space.cos(space.conj(saved[0]))),
        SAVE_INPUTS,
        FLOAT,
    ),
    "cos": (
        lambda xp, x: xp.cos(x),
        _Over(lambda ctx, space, saved, g: -g * space.sin(space.conj(saved[0]))),
        SAVE_INPUTS,
        FLOAT,
    ),
    "tan": (
        lambda xp, x: xp.tan(x),
        lambda ctx, g: g * (1 + _saved(ctx) ** 2),
        SAVE_OUTPUT,
        FLOAT,
    ),
    "asin": (
        lambda xp, x: xp.arcsin(x),
        lambda ctx, g: g * rsqrt(1 - _saved(ctx) ** 2),
        SAVE_INPUTS,
        FLOAT,
    ),
    "acos": (
        lambda xp, x: xp.arccos(x),
        lambda ctx, g: -g * rsqrt(1 - _saved(ctx) ** 2),
        SAVE_INPUTS,
        FLOAT,
    ),
    "atan": (
        lambda xp, x: xp.arctan(x),
        lambda ctx, g: g / (1 + _saved(ctx) ** 2),
        SAVE_INPUTS,
        FLOAT,
    ),
    "sinh": (
        lambda xp, x: xp.sinh(x),
        lambda ctx, g: g * cosh(_saved(ctx)),
        SAVE_INPUTS,
        FLOAT,
    ),
    "cosh": (
        lambda xp, x: xp.cosh(x),
        lambda ctx, g: g * sinh(_saved(ctx)),
        SAVE_INPUTS,
        FLOAT,
    ),
    "tanh": (
        lambda xp, x: xp.tanh(x),
        _Over(lambda ctx, space, saved, g: space.op(_TANH_BACKWARD, g, space.conj(saved[0]))),
        SAVE_OUTPUT,
        FLOAT,
    ),
    "asinh": (
        lambda xp, x: xp.arcsinh(x),
        lambda ctx, g: g * rsqrt(_saved(ctx) ** 2 + 1),
        SAVE_INPUTS,
        FLOAT,
    ),
    "acosh": (
        lambda xp, x: xp.arccosh(x),
        _acosh_rule,
        SAVE_INPUTS,
        FLOAT,
    ),
    "atanh": (
        lambda xp, x: xp.arctanh(x),
        lambda ctx, g: g / (1 - _saved(ctx) ** 2),
        SAVE_INPUTS,
        FLOAT,
    ),
    "sigmoid": (
        _sigmoid,
        _Over(lambda ctx, space, saved, g: space.op(_SIGMOID_BACKWARD, g, space.conj(saved[0]))),
        SAVE_OUTPUT,
        FLOAT,
    ),
    "relu": (
        _relu,
        _Over(lambda ctx, space, saved, g: space.op(_THRESHOLD_BACKWARD, g, saved[0])),
        SAVE_OUTPUT,
        KEEP,
    ),
    "erf": (
        _erf,
        lambda ctx, g: g * _TWO_OVER_SQRT_PI * exp(-(_saved(ctx) ** 2)),
        SAVE_INPUTS,
        FLOAT,
    ),
    "erfc": (
        _erfc,
        lambda ctx, g: g * -_TWO_OVER_SQRT_PI * exp(-(_saved(ctx) ** 2)),
        SAVE_INPUTS,
        FLOAT,
    ),
    "abs": (_abs, _abs_rule, SAVE_INPUTS, KEEP),
    "sign": (_sign, _zero_grad, SAVE_NONE, KEEP),
    "floor": (_rounding("floor"), _zero_grad, SAVE_NONE, KEEP),
    "ceil": (_rounding("ceil"), _zero_grad, SAVE_NONE, KEEP),
    "trunc": (_rounding("trunc"), _zero_grad, SAVE_NONE, KEEP),
    "frac": (_frac, lambda ctx, g: g, SAVE_NONE, KEEP),
    "positive": (_positive, lambda ctx, g: g, SAVE_NONE, KEEP),
}


def _op_of(name: str, row: tuple) -> OpDef:
    forward, rule, saves, promote = row
    if type(rule) is _Over:
        return OpDef(name, forward, None, saves=saves, promote=promote, rule=rule.rule)
    return OpDef(name, forward, rule, saves=saves, promote=promote)


_OPS = {name: _op_of(name, row) for name, row in _TABLE.items()}
_ROUND = OpDef("round", _rounding("round"), _zero_grad)
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


def _real_only(function: Callable, error: type[Exception], message: str) -> Callable:
    """A predicate's forward ``function(xp, x)``, refusing complex input."""

    def forward(xp: Any, x: Any) -> Any:
        if x.dtype.kind == "c":
            raise error(message)
        return function(xp, x)

    return forward


isposinf = _predicate(
    "isposinf",
    _real_only(
        lambda xp, x: xp.isposinf(x), RuntimeError, "isposinf does not support complex inputs."
    ),
)
isneginf = _predicate(
    "isneginf",
    _real_only(
        lambda xp, x: xp.isneginf(x), RuntimeError, "isneginf does not support complex inputs."
    ),
)
isfinite = _predicate("isfinite", lambda xp, x: xp.isfinite(x))
signbit = _predicate(
    "signbit",
    _real_only(
        lambda xp, x: xp.signbit(x),
        NotImplementedError,
        "signbit is not implemented for complex tensors.",
    ),
)
logical_not = _predicate("logical_not", lambda xp, x: xp.logical_not(x))
bitwise_not = _predicate("bitwise_not", lambda xp, x: _invert(xp, x))


def _invert(xp: Any, x: Any) -> Any:
    if x.dtype.kind not in "iub":
        raise NotImplementedError(
            f"\"bitwise_not\" not implemented for '{x.dtype}': bitwise operations need integer "
            "or bool tensors"
        )
    return xp.invert(x)


def invert(input: Tensor) -> Tensor:
    """``~input``: bitwise not of integer and bool tensors (logical not for bool)."""
    if input._data.dtype.kind not in "iub":
        raise TypeError(
            "~ (operator.invert) is only implemented on integer and Boolean-type tensors, got "
            f"dtype {input.dtype}"
        )
    return bitwise_not(input)


def sgn(input: Tensor) -> Tensor:
    """``sign`` for real tensors; ``input / abs(input)`` (0 at 0) for complex ones."""
    if not input.is_complex():
        return sign(input)
    magnitude = abs(input)
    return where(magnitude == 0, 0.0, input / where(magnitude == 0, 1.0, magnitude))


def _sinc_rule(ctx: Any, g: Tensor) -> Tensor:
    """``(cos(pi x) - sinc(x)) / x``, and 0 at x == 0."""
    x = _saved(ctx)
    zero = x == 0
    safe = where(zero, 1.0, x)
    return where(zero, 0.0, g * (cos(math.pi * safe) - sinc(safe)) / safe)


def _logit_forward(xp: Any, x: Any, eps: float | None = None) -> Any:
    if eps is not None:
        x = xp.clip(x, eps, 1 - eps)
    return xp.log(x / (1 - x))


def _logit_rule(ctx: Any, g: Tensor) -> Tensor:
    """``g / (x (1 - x))``; with ``eps``, 0 outside [eps, 1 - eps] (as PyTorch)."""
    x = _saved(ctx)
    eps = ctx.attrs.get("eps")
    grad = g / (x * (1 - x))
    if eps is None:
        return grad
    return where((x < eps) | (x > 1 - eps), 0.0, grad)


_DEGREE = math.pi / 180
_SINC = OpDef("sinc", lambda xp, x: xp.sinc(x), _sinc_rule, saves=SAVE_INPUTS, promote=FLOAT)
_LOGIT = OpDef("logit", _logit_forward, _logit_rule, saves=SAVE_INPUTS, promote=FLOAT)
_DEG2RAD = OpDef("deg2rad", lambda xp, x: x * _DEGREE, lambda ctx, g: g * _DEGREE, promote=FLOAT)
_RAD2DEG = OpDef("rad2deg", lambda xp, x: x / _DEGREE, lambda ctx, g: g / _DEGREE, promote=FLOAT)


def _frexp_forward(xp: Any, x: Any) -> tuple:
    if x.dtype.kind != "f":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    mantissa, exponent = xp.frexp(x)
    return mantissa, exponent.astype("int32", copy=False)


_FREXP = OpDef("frexp", _frexp_forward, None, outputs=-1)


def sinc(input: Tensor) -> Tensor:
    """The normalized sinc: ``sin(pi x) / (pi x)``, and 1 at 0."""
    return apply(_SINC, input)


def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """``log(p / (1 - p))``, with ``p`` clamped to [eps, 1 - eps] when ``eps`` is given."""
    if eps is None:
        return apply(_LOGIT, input)
    return apply(_LOGIT, input, eps=eps)


def deg2rad(input: Tensor) -> Tensor:
    """Degrees to radians."""
    return apply(_DEG2RAD, input)


def rad2deg(input: Tensor) -> Tensor:
    """Radians to degrees."""
    return apply(_RAD2DEG, input)


def frexp(input: Tensor) -> tuple[Tensor, Tensor]:
    """``(mantissa, exponent)`` with ``input = mantissa * 2 ** exponent`` (int32 exponent)."""
    return tuple(apply(_FREXP, input))
