"""Elementwise ops of two or more operands: arithmetic, comparisons, logic, selection.

Operands broadcast as in NumPy/PyTorch and promote by PyTorch's rules. Gradient rules may
return broadcast-shaped gradients: the engine sums them back to each input's shape.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Integral
from typing import Any

import numpy as np

from .._backend.multiply_add import multiply_add
from .._dtype import CLAMP_COMPLEX, no_kernel
from ..tensor import Tensor, wrap
from ._apply import COMMON, FLOAT, SAVE_BOTH, SAVE_INPUTS, OpDef, apply
from .complex import conj

__all__ = [
    "add",
    "sub",
    "mul",
    "div",
    "true_divide",
    "floor_divide",
    "remainder",
    "fmod",
    "pow",
    "atan2",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "clamp",
    "clip",
    "clamp_min",
    "clamp_max",
    "where",
    "lerp",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "logical_and",
    "logical_or",
    "logical_xor",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_left_shift",
    "bitwise_right_shift",
    "isclose",
    "allclose",
    "equal",
    "rsub",
    "addcmul",
    "addcdiv",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "not_equal",
    "multiply",
    "subtract",
    "divide",
    "arctan2",
    "xlogy",
    "hypot",
    "copysign",
    "heaviside",
    "gcd",
    "lcm",
    "ldexp",
    "nextafter",
    "float_power",
    "logaddexp",
    "logaddexp2",
]


# Rules over a namespace (``ops._rule_space``): ``xp`` works on Tensors and on raw arrays.
def _add_rule(ctx: Any, space: Any, saved: tuple, g: Any) -> tuple:
    first, second = ctx.edges
    if second is None:
        return g, None
    alpha = ctx.attrs.get("alpha", 1)
    return (g if first is not None else None), (g if alpha == 1 else g * space.conj(alpha))


def _sub_rule(ctx: Any, space: Any, saved: tuple, g: Any) -> tuple:
    first, second = ctx.edges
    if second is None:
        return g, None
    alpha = ctx.attrs.get("alpha", 1)
    return (g if first is not None else None), (-g if alpha == 1 else g * -space.conj(alpha))


def _add_forward(xp: Any, a: Any, b: Any, alpha: Any = 1) -> Any:
    return a + b if alpha == 1 else multiply_add(xp, a, b, alpha)


def _sub_forward(xp: Any, a: Any, b: Any, alpha: Any = 1) -> Any:
    return a - b if alpha == 1 else multiply_add(xp, a, b, -alpha)


def _conj(x: Any) -> Any:
    """The complex conjugate of a tensor or Python number (itself when real).

    Gradient rules multiply by the conjugate derivative, as PyTorch does for complex inputs.
    """
    if isinstance(x, Tensor):
        return conj(x) if x._data.dtype.kind == "c" else x
    return x.conjugate()


def _mul_rule(ctx: Any, space: Any, saved: tuple, g: Any) -> tuple:
    a, b = saved
    first, second = ctx.edges
    return (g * space.conj(b) if first is not None else None), (
        g * space.conj(a) if second is not None else None
    )


def _div_rule(ctx: Any, space: Any, saved: tuple, g: Any) -> tuple:
    a, b = saved  # inputs only, as PyTorch: the quotient may be changed in place
    first, second = ctx.edges
    grad_a = g / space.conj(b) if first is not None else None
    grad_b = -g * space.conj(a / (b * b)) if second is not None else None
    return grad_a, grad_b


def _zero_rule(ctx: Any, g: Tensor) -> tuple:
    return tuple(None if e is None else g * 0 for e in ctx.edges)


def _floor_div_forward(xp: Any, a: Any, b: Any) -> Any:
    _check_division(xp, a, b, "floor_divide")
    return xp.floor_divide(a, b)


def _check_division(xp: Any, a: Any, b: Any, name: str) -> None:
    """PyTorch raises (a RuntimeError) on integer division by zero, where NumPy would return
    0, and has no bool division (where NumPy's gives int8)."""
    dtype = _array_dtype(a, b)
    kind = dtype.kind
    _reject_bool(kind, name)
    if kind == "c":
        raise no_kernel(_KERNEL_NAMES.get(name, name), dtype)
    if kind in "iu" and bool(xp.any(xp.asarray(b) == 0)):
        raise RuntimeError(f"ZeroDivisionError: integer division by zero in {name}")


def _array_dtype(a: Any, b: Any) -> Any:
    """The dtype of the array operands (promoted alike); the other may be a Python number."""
    return a.dtype if hasattr(a, "dtype") else b.dtype


# PyTorch's CPU kernel names, which its "not implemented" errors quote.
_KERNEL_NAMES = {
    "floor_divide": "div_floor_cpu",
    "div": "div_trunc_cpu",
    "remainder": "remainder_cpu",
    "fmod": "fmod_cpu",
}


def _reject_bool(kind: str, name: str) -> None:
    """For arithmetic PyTorch does not define on bool (after promotion: all operands bool)."""
    if kind == "b":
        raise NotImplementedError(f"\"{name}\" not implemented for 'Bool'")


def _modulus_forward(name: str) -> Any:
    """remainder (NumPy's mod) or fmod, refusing integer division by zero."""
    function = "mod" if name == "remainder" else "fmod"

    def forward(xp: Any, a: Any, b: Any) -> Any:
        _check_division(xp, a, b, name)
        return getattr(xp, function)(a, b)

    return forward


def _remainder_rule(ctx: Any, g: Tensor) -> tuple:
    a, b = ctx.saved_tensors
    grad_b = None
    if ctx.edges[1] is not None:
        grad_b = -g * div(a, b, rounding_mode="floor")
    return g, grad_b


def _fmod_rule(ctx: Any, g: Tensor) -> tuple:
    a, b = ctx.saved_tensors
    grad_b = None
    if ctx.edges[1] is not None:
        grad_b = -g * div(a, b, rounding_mode="trunc")
    return g, grad_b


def _pow_forward(xp: Any, a: Any, b: Any) -> Any:
    """Small integer powers by multiplication: NumPy's float power routine is far slower."""
    if type(b) is int or type(b) is float:
        if b == 2:
            return a * a
        if b == 3:
            return a * a * a
        if b == 1:
            return a.copy()
        if b == 0.5 and a.dtype.kind == "f":
            return xp.sqrt(a)
        if b == -1 and a.dtype.kind in "fc":
            return 1 / a
        if b < 0 and type(b) is int and a.dtype.kind in "iu":
            raise RuntimeError("Integers to negative integer powers are not allowed.")
    kind = _array_dtype(a, b).kind
    if kind == "b" and isinstance(b, bool):  # PyTorch allows bool ** bool-scalar only
        return a.copy() if b else xp.ones_like(a)
    _reject_bool(kind, "pow")
    return _integer_power(xp, a, b) if kind in "iu" else a**b


def _integer_power(xp: Any, a: Any, b: Any) -> Any:
    """``a ** b`` for integers with PyTorch's answer to negative exponents (NumPy raises):
    the bases 1 and -1 keep their power, every other base gives 0."""
    negative = xp.asarray(b) < 0
    if not bool(xp.any(negative)):
        return a**b
    power = a ** xp.where(negative, -b, b)
    return xp.where(negative & (xp.abs(a) != 1), 0, power).astype(power.dtype, copy=False)


def _pow_rule(ctx: Any, g: Tensor) -> tuple:
    a, b, out = ctx.saved_tensors
    need_a, need_b = ctx.needs_input_grad
    grad_a = _pow_base_grad(g, a, b) if need_a else None
    grad_b = _pow_exponent_grad(g, a, b, out) if need_b else None
    return grad_a, grad_b


def _pow_base_grad(g: Tensor, a: Tensor, b: Any) -> Tensor:
    """d(a**b)/da = b * a**(b-1), and 0 where b == 0, even at a == 0: there the base is
    replaced by 1, so that no inf reaches the gradient (or its own gradient)."""
    if not isinstance(b, Tensor):
        return g * 0 if b == 0 else g * _conj(b * pow(a, b - 1))
    return g * _conj(b * pow(where(b == 0, 1.0, a), b - 1))


def _pow_exponent_grad(g: Tensor, a: Any, b: Tensor, out: Tensor) -> Tensor:
    """d(a**b)/db = a**b * log(a), and 0 where a == 0 and b >= 0 (b's real part, as PyTorch
    takes it, for a complex b)."""
    from .creation import tensor
    from .unary import log

    if not isinstance(a, Tensor):
        a = tensor(a, dtype=out.dtype, device=out.device)
    zero_base = (a == 0) & ((b.real if b.is_complex() else b) >= 0)
    return where(zero_base, 0.0, g * _conj(out * log(where(zero_base, 1.0, a))))


def _atan2_rule(ctx: Any, g: Tensor) -> tuple:
    a, b = ctx.saved_tensors
    denominator = a * a + b * b
    return g * b / denominator, -g * a / denominator


def _extremum_forward(name: str, function: Any) -> Any:
    """maximum, minimum, fmax or fmin (``function(xp, a, b)``), refusing complex operands as
    PyTorch does."""

    def forward(xp: Any, a: Any, b: Any) -> Any:
        if _array_dtype(a, b).kind == "c":
            raise RuntimeError(f"{name} not implemented for complex tensors.")
        return function(xp, a, b)

    return forward


def _extremum_rule(ctx: Any, g: Tensor, loses: Any) -> tuple:
    """Each operand gets the gradient unless it ``loses`` to the other; ties split it in
    half. As in PyTorch, a NaN loses to nothing, so both operands get the gradient."""
    a, b = ctx.saved_tensors
    need_a, need_b = ctx.needs_input_grad
    shared = where(a == b, g / 2, g)
    grad_a = where(loses(a, b), 0.0, shared) if need_a else None
    grad_b = where(loses(b, a), 0.0, shared) if need_b else None
    return grad_a, grad_b


def _fextremum_rule(ctx: Any, g: Tensor, pick_first: Any) -> tuple:
    from .unary import isnan

    a, b = ctx.saved_tensors
    first = pick_first(a, b) | isnan(b)
    return where(first, g, 0.0), where(first, 0.0, g)


def _clamp_rule(ctx: Any, g: Tensor) -> tuple:
    """The gradient goes to whichever of x, min, max the output is; where min > max the
    output is max (PyTorch's rule)."""
    x, low, high = ctx.saved_tensors
    need_x, need_low, need_high = ctx.needs_input_grad
    grad_x = grad_low = grad_high = None
    if need_x:
        if low is None:
            inside = x <= high
        else:
            inside = x >= low if high is None else (x >= low) & (x <= high)
        grad_x = where(inside, g, 0.0)
    if need_low:
        below = x < low if high is None else (x < low) & (low < high)
        grad_low = where(below, g, 0.0)
    if need_high:
        above = x > high if low is None else (x > high) | (high < low)
        grad_high = where(above, g, 0.0)
    return grad_x, grad_low, grad_high


def _where_rule(ctx: Any, g: Tensor) -> tuple:
    condition = wrap(ctx.attrs["condition"], g.device)
    grad_x = where(condition, g, 0.0) if ctx.edges[0] is not None else None
    grad_y = where(condition, 0.0, g) if ctx.edges[1] is not None else None
    return grad_x, grad_y


def _lerp_forward(xp: Any, start: Any, end: Any, weight: Any) -> Any:
    """PyTorch's formula: ``start + w * (end - start)`` for |w| < 0.5, else
    ``end - (end - start) * (1 - w)``, each a fused multiply-add on the CPU. For float16/32 the
    fused rounding is reproduced exactly by computing in float64 and rounding once."""
    dtype = start.dtype
    wide = xp.float64 if dtype.kind == "f" and dtype.itemsize < 8 else dtype
    if not hasattr(weight, "dtype"):
        if dtype.kind in "fc":  # one weight: only its branch of the formula, same values
            return _lerp_one_weight(xp, start, end, weight, wide)
        weight = xp.asarray(weight, dtype=dtype)
    difference = end - start
    w, d = weight.astype(wide), difference.astype(wide)
    near_start = start.astype(wide) + w * d
    near_end = end.astype(wide) - d * (1 - weight).astype(wide)
    return xp.where(xp.abs(weight) < 0.5, near_start, near_end).astype(dtype)


def _lerp_one_weight(xp: Any, start: Any, end: Any, weight: complex, wide: Any) -> Any:
    """:func:`_lerp_forward` for a Python number ``weight``: the branch is known, so one is
    computed. The weight is rounded to the tensor's dtype as a host scalar (no device sync)."""
    rounded = start.dtype.type(weight)
    widen = xp.dtype(wide).type
    d = (end - start).astype(wide)
    if abs(complex(rounded)) < 0.5:
        result = start + d * widen(rounded)
    else:
        result = end - d * widen(1 - rounded)
    return result.astype(start.dtype, copy=False)


def _lerp_rule(ctx: Any, g: Tensor) -> tuple:
    start, end, weight = ctx.saved_tensors
    grad_start = g * _conj(1 - weight) if ctx.edges[0] is not None else None
    grad_end = g * _conj(weight) if ctx.edges[1] is not None else None
    grad_weight = g * _conj(end - start) if ctx.edges[2] is not None else None
    return grad_start, grad_end, grad_weight


_ADD = OpDef("add", _add_forward, None, promote=COMMON, rule=_add_rule)
_SUB = OpDef("sub", _sub_forward, None, promote=COMMON, rule=_sub_rule)
_MUL = OpDef(
    "mul",
    lambda xp, a, b: a * b,
    None,
    promote=COMMON,
    saves=SAVE_INPUTS,
    rule=_mul_rule,
)
_DIV = OpDef(
    "div",
    lambda xp, a, b: a / b,
    None,
    promote=FLOAT,
    saves=SAVE_INPUTS,
    rule=_div_rule,
)
_FLOOR_DIV = OpDef("floor_divide", _floor_div_forward, _zero_rule, promote=COMMON)
_TRUNC_DIV = OpDef(
    "div_trunc", lambda xp, a, b: _trunc_divide(xp, a, b), _zero_rule, promote=COMMON
)
_REMAINDER = OpDef(
    "remainder", _modulus_forward("remainder"), _remainder_rule, promote=COMMON, saves=SAVE_INPUTS
)
_FMOD = OpDef("fmod", _modulus_forward("fmod"), _fmod_rule, promote=COMMON, saves=SAVE_INPUTS)
_POW = OpDef("pow", _pow_forward, _pow_rule, promote=COMMON, saves=SAVE_BOTH)
_ATAN2 = OpDef(
    "atan2", lambda xp, a, b: xp.arctan2(a, b), _atan2_rule, promote=FLOAT, saves=SAVE_INPUTS
)
_MAXIMUM = OpDef(
    "maximum",
    _extremum_forward("maximum", lambda xp, a, b: xp.maximum(a, b)),
    lambda ctx, g: _extremum_rule(ctx, g, lt),
    promote=COMMON,
    saves=SAVE_INPUTS,
)
_MINIMUM = OpDef(
    "minimum",
    _extremum_forward("minimum", lambda xp, a, b: xp.minimum(a, b)),
    lambda ctx, g: _extremum_rule(ctx, g, gt),
    promote=COMMON,
    saves=SAVE_INPUTS,
)
_FMAX = OpDef(
    "fmax",
    _extremum_forward("fmax", lambda xp, a, b: xp.fmax(a, b)),
    lambda ctx, g: _fextremum_rule(ctx, g, ge),
    promote=COMMON,
    saves=SAVE_INPUTS,
)
_FMIN = OpDef(
    "fmin",
    _extremum_forward("fmin", lambda xp, a, b: xp.fmin(a, b)),
    lambda ctx, g: _fextremum_rule(ctx, g, le),
    promote=COMMON,
    saves=SAVE_INPUTS,
)


def _clamp_forward(xp: Any, x: Any, low: Any, high: Any) -> Any:
    if x.dtype.kind == "c":
        raise NotImplementedError(CLAMP_COMPLEX)
    return xp.clip(x, low, high)


_CLAMP = OpDef(
    "clamp",
    _clamp_forward,
    _clamp_rule,
    promote=COMMON,
    saves=SAVE_INPUTS,
)


def _where_forward(xp: Any, x: Any, y: Any, condition: Any) -> Any:
    """``xp.where(condition, x, y)``. On NumPy, large float arrays of one dtype are selected
    through bit masks, ``(x & m) | (y & ~m)`` on their bits: the same values, bit for bit,
    where NumPy's select on an unpredictable mask costs about 4 ns an element once the arrays
    leave the cache (the masks: about 1 ns)."""
    integer = _bitwise_select_type(xp, x, y, condition)
    if integer is None:
        return xp.where(condition, x, y)
    dtype = (x if type(x) is np.ndarray else y).dtype
    mask = condition.view(np.uint8).astype(integer)
    np.negative(mask, out=mask)  # all ones where the condition holds
    picked = np.bitwise_and(np.asarray(x, dtype).view(integer), mask)
    np.invert(mask, out=mask)
    other = np.bitwise_and(np.asarray(y, dtype).view(integer), mask, out=mask)
    return np.bitwise_or(picked, other, out=picked).view(dtype)


_BITWISE_SELECT_MIN = 1 << 14  # below, NumPy's select runs in cache and is as fast
_SELECT_INTEGERS = {2: np.int16, 4: np.int32, 8: np.int64}


def _bitwise_select_type(xp: Any, x: Any, y: Any, condition: Any) -> Any:
    """The integer type whose bits ``_where_forward`` selects, or None where the bit select
    does not apply: NumPy arrays, a bool condition of at least ``_BITWISE_SELECT_MIN``
    elements in the result's own shape, ``x`` and ``y`` float arrays of one dtype (or one of
    them a finite Python number that dtype holds)."""
    if xp is not np or type(condition) is not np.ndarray or condition.dtype != bool:
        return None
    if condition.size < _BITWISE_SELECT_MIN:
        return None
    arrays = [v for v in (x, y) if type(v) is np.ndarray]
    if not arrays or arrays[0].dtype.kind != "f" or any(a.dtype != arrays[0].dtype for a in arrays):
        return None
    dtype = arrays[0].dtype
    for value in (x, y):
        if type(value) is not np.ndarray and not (
            type(value) in (float, int) and abs(value) <= np.finfo(dtype).max
        ):
            return None  # NaN, infinities and huge numbers keep NumPy's own rules
    shapes = [np.shape(v) for v in (x, y)]
    if np.broadcast_shapes(condition.shape, *shapes) != condition.shape:
        return None
    return _SELECT_INTEGERS.get(dtype.itemsize)


_WHERE = OpDef(
    "where",
    _where_forward,
    _where_rule,
    promote=COMMON,
)
_LERP = OpDef(
    "lerp",
    lambda xp, start, end, weight: _lerp_forward(xp, start, end, weight),
    _lerp_rule,
    promote=FLOAT,
    saves=SAVE_INPUTS,
)


def _trunc_divide(xp: Any, a: Any, b: Any) -> Any:
    """Division rounded toward zero (floor division, moved up by one where they differ)."""
    if a.dtype.kind == "c":
        raise no_kernel("div_trunc_cpu", a.dtype)
    if a.dtype.kind not in "iu":
        return xp.trunc(a / b)
    _check_division(xp, a, b, "div")
    quotient = xp.floor_divide(a, b)
    return quotient + ((quotient < 0) & (quotient * b != a)).astype(quotient.dtype)


def _comparison(name: str, forward: Any) -> OpDef:
    return OpDef(name, forward, None, promote=COMMON)


def _ordered(name: str, compare: Callable) -> Callable:
    """The forward of an order comparison: PyTorch has none for complex numbers (NumPy
    orders them lexicographically)."""

    def forward(xp: Any, a: Any, b: Any) -> Any:
        if _array_dtype(a, b).kind == "c" or type(a) is complex or type(b) is complex:
            raise no_kernel(f"{name}_cpu", xp.result_type(a, b))
        return compare(a, b)

    return forward


_EQ = _comparison("eq", lambda xp, a, b: a == b)
_NE = _comparison("ne", lambda xp, a, b: a != b)
_LT = _comparison("lt", _ordered("lt", lambda a, b: a < b))
_LE = _comparison("le", _ordered("le", lambda a, b: a <= b))
_GT = _comparison("gt", _ordered("gt", lambda a, b: a > b))
_GE = _comparison("ge", _ordered("ge", lambda a, b: a >= b))
_ISCLOSE = OpDef(
    "isclose",
    lambda xp, a, b, rtol, atol, equal_nan: xp.isclose(
        a, b, rtol=rtol, atol=atol, equal_nan=equal_nan
    ),
    None,
    promote=COMMON,
)
_LOGICAL_AND = OpDef("logical_and", lambda xp, a, b: xp.logical_and(a, b), None)
_LOGICAL_OR = OpDef("logical_or", lambda xp, a, b: xp.logical_or(a, b), None)
_LOGICAL_XOR = OpDef("logical_xor", lambda xp, a, b: xp.logical_xor(a, b), None)


def _bitwise(name: str, forward: Any, allow_bool: bool = True) -> OpDef:
    """A bitwise op on integer (and, unless it is a shift, bool) operands."""
    kinds = "iub" if allow_bool else "iu"

    def checked(xp: Any, a: Any, b: Any) -> Any:
        dtype = _array_dtype(a, b)  # promoted: a float scalar has made the tensor float
        if dtype.kind not in kinds:
            raise NotImplementedError(
                f"\"{name}\" not implemented for '{dtype}': bitwise operations need integer"
                f"{' or bool' if allow_bool else ''} tensors"
            )
        return forward(a, b)

    return OpDef(name, checked, None, promote=COMMON)


_BITWISE_AND = _bitwise("bitwise_and", lambda a, b: a & b)
_BITWISE_OR = _bitwise("bitwise_or", lambda a, b: a | b)
_BITWISE_XOR = _bitwise("bitwise_xor", lambda a, b: a ^ b)
_LSHIFT = _bitwise("bitwise_left_shift", lambda a, b: a << b, allow_bool=False)
_RSHIFT = _bitwise("bitwise_right_shift", lambda a, b: a >> b, allow_bool=False)


def add(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input + alpha * other``."""
    if type(alpha) is int and alpha == 1:
        return apply(_ADD, input, other)
    return apply(_ADD, input, other, alpha=_checked_alpha("add", input, other, alpha))


def sub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input - alpha * other``."""
    _reject_bool_sub(input, other)
    if type(alpha) is int and alpha == 1:
        return apply(_SUB, input, other)
    return apply(_SUB, input, other, alpha=_checked_alpha("sub", input, other, alpha))


def _checked_alpha(name: str, input: Any, other: Any, alpha: Any) -> Any:
    """``alpha`` as a number the result's dtype can take, by PyTorch's rules (a 0-d tensor
    gives its value; a bool result takes a bool)."""
    from .._interop import result_type

    if isinstance(alpha, Tensor):
        if alpha.ndim or alpha._requires_grad:
            raise TypeError(f"{name}(): argument 'alpha' must be Number, not Tensor")
        alpha = alpha.item()
    dtype = result_type(input, other)
    if isinstance(alpha, bool) and dtype.name != "bool":
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if not (dtype.is_floating_point or dtype.is_complex or isinstance(alpha, Integral)):
        raise RuntimeError(
            "For integral input tensors, argument alpha must not be a floating point number."
        )
    if not dtype.is_complex and isinstance(alpha, complex):
        raise RuntimeError(
            "For non-complex input tensors, argument alpha must not be a complex number."
        )
    return bool(alpha) if dtype.name == "bool" else alpha


def rsub(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``other - alpha * input``."""
    return sub(other, input, alpha=alpha)


def _is_bool(x: Any) -> bool:
    return isinstance(x, bool) or (isinstance(x, Tensor) and x._data.dtype.kind == "b")


def _reject_bool_sub(a: Any, b: Any) -> None:
    """PyTorch refuses subtraction with a bool operand (tensor or Python bool)."""
    if not (_is_bool(a) or _is_bool(b)):
        return
    if _is_bool(a) and _is_bool(b):
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
            "`^` or `logical_xor()` operator instead."
        )
    raise RuntimeError(
        "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
        "to invert a mask, use the `~` or `logical_not()` operator instead."
    )


def mul(input: Any, other: Any) -> Tensor:
    return apply(_MUL, input, other)


def div(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """True division, or rounded with ``rounding_mode`` "trunc" or "floor"."""
    if rounding_mode is None:
        return apply(_DIV, input, other)
    if rounding_mode == "floor":
        return apply(_FLOOR_DIV, input, other)
    if rounding_mode == "trunc":
        return apply(_TRUNC_DIV, input, other)
    raise RuntimeError(
        f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
        f"'{rounding_mode}'"
    )


true_divide = div


def floor_divide(input: Any, other: Any) -> Tensor:
    return apply(_FLOOR_DIV, input, other)


def remainder(input: Any, other: Any) -> Tensor:
    """Python-style modulus: the result has the sign of ``other``."""
    return apply(_REMAINDER, input, other)


def fmod(input: Any, other: Any) -> Tensor:
    """C-style modulus: the result has the sign of ``input``."""
    return apply(_FMOD, input, other)


def pow(input: Any, exponent: Any) -> Tensor:  # noqa: A001
    return apply(_POW, input, exponent)


def atan2(input: Any, other: Any) -> Tensor:
    return apply(_ATAN2, input, other)


def maximum(input: Tensor, other: Tensor) -> Tensor:
    return apply(_MAXIMUM, input, other)


def minimum(input: Tensor, other: Tensor) -> Tensor:
    return apply(_MINIMUM, input, other)


def fmax(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise maximum that ignores NaN where the other operand is a number."""
    return apply(_FMAX, input, other)


def fmin(input: Tensor, other: Tensor) -> Tensor:
    return apply(_FMIN, input, other)


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Limit values to [min, max]; either bound may be a number or a tensor."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if type(min) is int or type(max) is int:
        return apply(_CLAMP, input, _integer_scalar(input, min), _integer_scalar(input, max))
    return apply(_CLAMP, input, min, max)


# PyTorch's C++ names of the integer types, which its overflow error quotes.
_C_INTEGER_NAMES = {
    "uint8": "uint8_t",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int",
    "int64": "int64_t",
}


def _integer_scalar(tensor: Any, value: Any) -> Any:
    """A Python int beside an integer tensor, checked as PyTorch converts it to the tensor's
    dtype: a signed type takes its range; an unsigned one also takes negatives down to minus
    its maximum, wrapping them (-1 is 255 for uint8)."""
    if type(value) is not int or not isinstance(tensor, Tensor):
        return value
    np_dtype = tensor._data.dtype
    if np_dtype.kind not in "iu":
        return value
    bits = 8 * np_dtype.itemsize
    high = (1 << bits) - 1 if np_dtype.kind == "u" else (1 << (bits - 1)) - 1
    low = -high if np_dtype.kind == "u" else -high - 1
    if not low <= value <= high:
        raise RuntimeError(
            f"value cannot be converted to type {_C_INTEGER_NAMES[np_dtype.name]} without overflow"
        )
    return value + high + 1 if value < 0 and np_dtype.kind == "u" else value


clip = clamp


def clamp_min(input: Tensor, min: Any) -> Tensor:
    """``clamp(input, min=min)``."""
    return clamp(input, min=min)


def clamp_max(input: Tensor, max: Any) -> Tensor:
    """``clamp(input, max=max)``."""
    return clamp(input, max=max)


def where(condition: Any, input: Any = None, other: Any = None) -> Any:
    """``input`` where ``condition`` holds, else ``other``.

    ``where(condition)`` alone is ``nonzero(condition, as_tuple=True)``.
    """
    if input is None and other is None:
        from .indexing import nonzero

        return nonzero(condition, as_tuple=True)
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): condition must be a Tensor, got {type(condition).__name__}")
    if condition._data.dtype.kind != "b":
        raise RuntimeError(
            f"where expected condition to be a boolean tensor, but got a tensor with dtype "
            f"{condition.dtype}"
        )
    for operand in (input, other):
        if isinstance(operand, Tensor) and operand._device is not condition._device:
            from ._apply import raise_device_mismatch

            raise_device_mismatch(_WHERE, (condition, operand))
    first = _integer_scalar(other, input) if type(input) is int else input
    if type(other) is int:
        other = _integer_scalar(input, other)
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        from .creation import tensor as make_tensor

        first = make_tensor(input, device=condition.device)
    return apply(_WHERE, first, other, condition=condition._data)


def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    """``input + weight * (end - input)``."""
    dtype = input._data.dtype
    if dtype.kind not in "fc":
        kernel = "lerp_kernel_tensor" if isinstance(weight, Tensor) else "lerp_kernel_scalar"
        raise no_kernel(kernel, dtype)
    for name, operand in (("end", end), ("weight", weight)):
        if isinstance(operand, Tensor) and operand._data.dtype != dtype:
            raise RuntimeError(
                f"expected dtype {_c_name(input)} for `{name}` but got dtype {_c_name(operand)}"
            )
    return apply(_LERP, input, end, weight)


def _c_name(tensor: Tensor) -> str:
    """PyTorch's C++ name of a tensor's dtype, as its dtype errors quote it."""
    return _C_NAMES[tensor._data.dtype.name]


_C_NAMES = {
    "bool": "bool",
    "uint8": "unsigned char",
    "int8": "signed char",
    "int16": "short int",
    "int32": "int",
    "int64": "long int",
    "float16": "c10::Half",
    "float32": "float",
    "float64": "double",
    "complex64": "c10::complex<float>",
    "complex128": "c10::complex<double>",
}


def eq(input: Any, other: Any) -> Tensor:
    return apply(_EQ, input, other)


def ne(input: Any, other: Any) -> Tensor:
    return apply(_NE, input, other)


def lt(input: Any, other: Any) -> Tensor:
    return apply(_LT, input, other)


def le(input: Any, other: Any) -> Tensor:
    return apply(_LE, input, other)


def gt(input: Any, other: Any) -> Tensor:
    return apply(_GT, input, other)


def ge(input: Any, other: Any) -> Tensor:
    return apply(_GE, input, other)


def logical_and(input: Any, other: Any) -> Tensor:
    return apply(_LOGICAL_AND, input, other)


def logical_or(input: Any, other: Any) -> Tensor:
    return apply(_LOGICAL_OR, input, other)


def logical_xor(input: Any, other: Any) -> Tensor:
    return apply(_LOGICAL_XOR, input, other)


def bitwise_and(input: Any, other: Any) -> Tensor:
    return apply(_BITWISE_AND, input, other)


def bitwise_or(input: Any, other: Any) -> Tensor:
    return apply(_BITWISE_OR, input, other)


def bitwise_xor(input: Any, other: Any) -> Tensor:
    return apply(_BITWISE_XOR, input, other)


def bitwise_left_shift(input: Any, other: Any) -> Tensor:
    return apply(_LSHIFT, input, other)


def bitwise_right_shift(input: Any, other: Any) -> Tensor:
    return apply(_RSHIFT, input, other)


def isclose(
    input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> Tensor:
    return apply(_ISCLOSE, input, other, rtol=rtol, atol=atol, equal_nan=equal_nan)


def allclose(
    input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> bool:
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def equal(input: Tensor, other: Tensor) -> bool:
    """True when both tensors have the same shape and elements."""
    return tuple(input.shape) == tuple(other.shape) and bool(eq(input, other).all())


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 * tensor2``."""
    product = mul(tensor1, tensor2)
    return add(input, product if value == 1 else mul(product, value))


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 / tensor2``."""
    if tensor1._data.dtype.kind not in "fc" and tensor2._data.dtype.kind not in "fc":
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future release "
            "addcdiv will perform a true division of tensor1 and tensor2."
        )
    quotient = div(tensor1, tensor2)
    return add(input, quotient if value == 1 else mul(quotient, value))


greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne
multiply, subtract, divide, arctan2 = mul, sub, div, atan2


def _kernel_for(name: str, kinds: str, forward: Any) -> Any:
    """``forward(xp, a, b)``, refusing operands whose promoted dtype kind is not in ``kinds``
    with PyTorch's "not implemented" error for its CPU kernel ``name``_cpu."""

    def checked(xp: Any, a: Any, b: Any) -> Any:
        dtype = xp.result_type(a, b)
        if dtype.kind not in kinds:
            raise no_kernel(f"{name}_cpu", dtype)
        return forward(xp, a, b)

    return checked


def _xlogy_forward(xp: Any, x: Any, y: Any) -> Any:
    product = x * xp.log(y)  # NumPy's warnings are filtered for tensorkit (see __init__)
    return xp.where((xp.asarray(x) == 0) & ~xp.isnan(y), 0, product).astype(product.dtype)


def _xlogy_rule(ctx: Any, g: Tensor) -> tuple:
    """d/dx = log(y) (0 where x == 0 and y <= 0, as PyTorch); d/dy = x / y."""
    x, y = ctx.saved_tensors
    need_x, need_y = ctx.needs_input_grad
    grad_x = where(eq(x, 0) & le(y, 0), 0.0, xlogy(g, y)) if need_x else None
    grad_y = g * x / y if need_y else None
    return grad_x, grad_y


def _hypot_rule(ctx: Any, g: Tensor) -> tuple:
    a, b, out = ctx.saved_tensors
    need_a, need_b = ctx.needs_input_grad
    return (g * a / out if need_a else None), (g * b / out if need_b else None)


def _copysign_rule(ctx: Any, g: Tensor) -> tuple:
    """d/da = out / a (0 where a == 0), as PyTorch; the sign operand gets zero."""
    a, _, out = ctx.saved_tensors
    need_a, need_b = ctx.needs_input_grad
    grad_a = where(eq(a, 0), 0.0, g * out / where(eq(a, 0), 1.0, a)) if need_a else None
    return grad_a, (g * 0 if need_b else None)


def _logaddexp_rule(ctx: Any, g: Tensor, base: float) -> tuple:
    """d/da = 1 / (1 + base ** (b - a)), and symmetrically for b."""
    a, b = ctx.saved_tensors
    need_a, need_b = ctx.needs_input_grad
    grad_a = g / (1 + pow(base, b - a)) if need_a else None
    grad_b = g / (1 + pow(base, a - b)) if need_b else None
    return grad_a, grad_b


def _heaviside_forward(xp: Any, x: Any, values: Any) -> Any:
    if x.dtype.kind == "c":
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    return xp.where(x == 0, values, x > 0).astype(x.dtype)


_XLOGY = OpDef("xlogy", _xlogy_forward, _xlogy_rule, promote=FLOAT, saves=SAVE_INPUTS)
_HYPOT = OpDef(
    "hypot",
    _kernel_for("hypot", "f", lambda xp, a, b: xp.hypot(a, b)),
    _hypot_rule,
    promote=COMMON,
    saves=SAVE_BOTH,
)
_COPYSIGN = OpDef(
    "copysign",
    _kernel_for("copysign", "f", lambda xp, a, b: xp.copysign(a, b)),
    _copysign_rule,
    promote=FLOAT,
    saves=SAVE_BOTH,
)
_NEXTAFTER = OpDef(
    "nextafter",
    _kernel_for("nextafter", "f", lambda xp, a, b: xp.nextafter(a, b)),
    None,
    promote=COMMON,
)
_HEAVISIDE = OpDef("heaviside", _heaviside_forward, None, promote=COMMON)
_GCD = OpDef("gcd", _kernel_for("gcd", "iu", lambda xp, a, b: xp.gcd(a, b)), None, promote=COMMON)
_LCM = OpDef("lcm", _kernel_for("lcm", "iu", lambda xp, a, b: xp.lcm(a, b)), None, promote=COMMON)
_LOGADDEXP = OpDef(
    "logaddexp",
    _kernel_for("logaddexp", "f", lambda xp, a, b: xp.logaddexp(a, b)),
    lambda ctx, g: _logaddexp_rule(ctx, g, math.e),
    promote=COMMON,
    saves=SAVE_INPUTS,
)
_LOGADDEXP2 = OpDef(
    "logaddexp2",
    _kernel_for("logaddexp2", "f", lambda xp, a, b: xp.logaddexp2(a, b)),
    lambda ctx, g: _logaddexp_rule(ctx, g, 2.0),
    promote=COMMON,
    saves=SAVE_INPUTS,
)


def xlogy(input: Any, other: Any) -> Tensor:
    """``input * log(other)``, and 0 where ``input`` is 0 (unless ``other`` is NaN)."""
    return apply(_XLOGY, input, other)


def hypot(input: Tensor, other: Tensor) -> Tensor:
    """``sqrt(input**2 + other**2)`` without overflow."""
    return apply(_HYPOT, input, other)


def copysign(input: Any, other: Any) -> Tensor:
    """The magnitude of ``input`` with the sign of ``other``."""
    return apply(_COPYSIGN, input, other)


def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """The step function: 0 below zero, 1 above, ``values`` at zero."""
    if isinstance(values, Tensor) and values._data.dtype != input._data.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    return apply(_HEAVISIDE, input, values)


def gcd(input: Tensor, other: Tensor) -> Tensor:
    """Greatest common divisor of integer tensors."""
    return apply(_GCD, input, other)


def lcm(input: Tensor, other: Tensor) -> Tensor:
    """Least common multiple of integer tensors."""
    return apply(_LCM, input, other)


def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """``input * 2 ** other`` (as PyTorch composes it)."""
    return mul(input, pow(2.0, other))


def nextafter(input: Tensor, other: Tensor) -> Tensor:
    """The next floating-point value after ``input`` towards ``other``."""
    return apply(_NEXTAFTER, input, other)


def float_power(input: Any, exponent: Any) -> Tensor:
    """``pow`` in double precision (complex128 if either operand is complex)."""
    from .. import _dtype
    from .conversion import to

    operands = (input, exponent)
    complex_ = any(
        isinstance(x, complex) or (isinstance(x, Tensor) and x._data.dtype.kind == "c")
        for x in operands
    )
    dtype = _dtype.complex128 if complex_ else _dtype.float64
    base, power = (to(x, dtype) if isinstance(x, Tensor) else x for x in operands)
    return pow(base, power)


def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """``log(exp(input) + exp(other))`` without overflow."""
    return apply(_LOGADDEXP, input, other)


def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """``log2(2**input + 2**other)`` without overflow."""
    return apply(_LOGADDEXP2, input, other)
