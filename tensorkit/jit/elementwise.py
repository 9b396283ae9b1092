"""The elementwise ops a fused kernel can compute, as scalar expressions.

Each entry of :data:`SCALAR_FORMS` writes one op's result for one element, in Python for
numba (CPU) and in C for a CuPy ElementwiseKernel (CUDA), following the op's array forward
(the same formula, the same branch where the forward picks one, the same rounding where it
computes wider), so a fused group gives eager's values within float rounding. An
:class:`Operands` renders the node's arguments: values as variable names, Python numbers as
constants of the group's dtype (NumPy's rule for a number next to an array).

Helpers the expressions call (``_tanh``, ``_sigmoid``, ...) are defined in each kernel's
preamble: :func:`python_helpers` and :func:`c_helpers`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .ir import Node, Ref

__all__ = [
    "SCALAR_FORMS",
    "Operands",
    "ScalarForm",
    "c_helpers",
    "calls_libm",
    "fusible",
    "reduced_axes",
    "python_helpers",
]

FLOAT_DTYPES = ("float32", "float64")


class Operands:
    """One member's arguments rendered for one language: ``arg(i)`` is the i-th argument,
    ``attr(key)`` an attribute, ``const(x)`` a number of the group's dtype.

    ``names`` maps value ids to variable names; ``constant`` makes (or reuses) a typed
    constant and returns its name."""

    def __init__(
        self, node: Node, names: dict[int, str], constant: Callable[[float, str], str]
    ) -> None:
        self.node = node
        self.names = names
        self.constant = constant
        self.dtype = node.outputs[0].dtype

    def render(self, value: Any) -> str:
        if type(value) is Ref:
            return self.names[value.id]
        return self.const(value)

    def arg(self, index: int) -> str:
        return self.render(self.node.args[index])

    def attr(self, key: str) -> str:
        return self.render(self.node.attrs[key])

    def const(self, value: float, dtype: str | None = None) -> str:
        return self.constant(value, dtype or self.dtype)


@dataclass(frozen=True)
class ScalarForm:
    """An op's scalar expression in Python (numba) and C for ``arity`` arguments; ``accepts``
    says whether a node's arguments take this form (a Python-number weight, a constant
    exponent)."""

    arity: int  # tensor and number arguments the op takes
    python: Callable[[Operands], str]
    c: Callable[[Operands], str]
    accepts: Callable[[Node], bool] = lambda node: True
    takes_none: bool = False  # a number argument may be None (clamp's missing bound)


def _unary(py: str, c: str | None = None) -> ScalarForm:
    """``f(x)``: ``py`` and ``c`` are templates with ``{x}``."""
    return ScalarForm(1, lambda o: py.format(x=o.arg(0)), lambda o: (c or py).format(x=o.arg(0)))


def _binary(template: str) -> ScalarForm:
    """``a op b`` with the same spelling in both languages."""

    def form(o: Operands) -> str:
        return template.format(a=o.arg(0), b=o.arg(1))

    return ScalarForm(2, form, form)


def _with_alpha(sign: str) -> ScalarForm:
    """add / sub without an alpha: ``a + b``. With one, the forward is a multiply-add rounded
    once (``_backend.multiply_add``, as PyTorch's kernel), which a numba kernel cannot spell:
    such a node stays out of fused groups."""

    def form(o: Operands) -> str:
        return f"({o.arg(0)} {sign} {o.arg(1)})"

    return ScalarForm(2, form, form, lambda node: node.attrs.get("alpha", 1) == 1)


def _pow(c: bool) -> Callable[[Operands], str]:
    """pow as ``_pow_forward``: small constant exponents by multiplication."""

    def form(o: Operands) -> str:
        a, b = o.node.args
        x = o.arg(0)
        if type(b) in (int, float) and type(a) is Ref:
            if b == 2:
                return f"({x} * {x})"
            if b == 3:
                return f"({x} * {x} * {x})"
            if b == 1:
                return x
            if b == 0.5:
                return f"sqrt({x})" if c else f"math.sqrt({x})"
            if b == -1:
                return f"({o.const(1)} / {x})"
        return f"pow({x}, {o.arg(1)})" if c else f"({x} ** {o.arg(1)})"

    return form


def _lerp(o: Operands) -> str:
    """lerp with a number weight, as ``_lerp_one_weight``: the weight rounded to the dtype,
    the difference widened to float64, one branch by the weight's size, one rounding."""
    start, end = o.arg(0), o.arg(1)
    weight = float(np.dtype(o.dtype).type(o.node.args[2]))
    wide = "float64"
    if abs(weight) < 0.5:
        expression = f"_wide({start}) + _wide({end} - {start}) * {o.const(weight, wide)}"
    else:
        expression = f"_wide({end}) - _wide({end} - {start}) * {o.const(1 - weight, wide)}"
    return f"_narrow({expression})"


def _where(o: Operands) -> str:
    return f"({o.arg(0)} if {o.attr('condition')} else {o.arg(1)})"


def _where_c(o: Operands) -> str:
    return f"({o.attr('condition')} ? {o.arg(0)} : {o.arg(1)})"


def _clamp(o: Operands) -> str:
    x = o.arg(0)
    low, high = o.node.args[1], o.node.args[2]
    if low is not None:
        x = f"_maximum({x}, {o.render(low)})"
    if high is not None:
        x = f"_minimum({x}, {o.render(high)})"
    return x


SCALAR_FORMS: dict[str, ScalarForm] = {
    "add": _with_alpha("+"),
    "sub": _with_alpha("-"),
    "mul": _binary("({a} * {b})"),
    "div": _binary("({a} / {b})"),
    "neg": _unary("(-{x})"),
    "exp": _unary("math.exp({x})", "exp({x})"),
    "log": _unary("math.log({x})", "log({x})"),
    "log1p": _unary("math.log1p({x})", "log1p({x})"),
    "expm1": _unary("math.expm1({x})", "expm1({x})"),
    "sqrt": _unary("math.sqrt({x})", "sqrt({x})"),
    "sin": _unary("math.sin({x})", "sin({x})"),
    "cos": _unary("math.cos({x})", "cos({x})"),
    "erf": _unary("math.erf({x})", "erf({x})"),
    "abs": _unary("abs({x})", "fabs({x})"),
    "tanh": _unary("_tanh({x})", "tanh({x})"),
    "sigmoid": _unary("_sigmoid({x})"),
    "relu": _unary("_relu({x})"),
    "square": _unary("({x} * {x})"),
    "clone": _unary("{x}"),
    "contiguous": _unary("{x}"),
    "expand": _unary("{x}"),  # the kernel's own broadcasting does the expanding
    "rsqrt": ScalarForm(
        1,
        lambda o: f"({o.const(1)} / math.sqrt({o.arg(0)}))",
        lambda o: f"({o.const(1)} / sqrt({o.arg(0)}))",
    ),
    "reciprocal": ScalarForm(
        1, lambda o: f"({o.const(1)} / {o.arg(0)})", lambda o: f"({o.const(1)} / {o.arg(0)})"
    ),
    "pow": ScalarForm(
        2,
        _pow(c=False),
        _pow(c=True),
        lambda node: all(type(a) is Ref or _is_number(a) for a in node.args),
    ),
    "lerp": ScalarForm(3, _lerp, _lerp, lambda node: _is_number(node.args[2])),
    "where": ScalarForm(
        2, _where, _where_c, lambda node: all(type(a) is Ref or _is_number(a) for a in node.args)
    ),
    "maximum": _binary("_maximum({a}, {b})"),
    "minimum": _binary("_minimum({a}, {b})"),
    "clamp": ScalarForm(
        3,
        _clamp,
        _clamp,
        lambda node: all(a is None or _is_number(a) for a in node.args[1:]),
        takes_none=True,
    ),
    "threshold_backward": ScalarForm(
        2,
        lambda o: f"({o.arg(0)} if {o.arg(1)} > 0 else {o.const(0)})",
        lambda o: f"({o.arg(1)} > 0 ? {o.arg(0)} : {o.const(0)})",
    ),
    "tanh_backward": ScalarForm(
        2,
        lambda o: f"({o.arg(0)} * ({o.const(1)} - {o.arg(1)} * {o.arg(1)}))",
        lambda o: f"({o.arg(0)} * ({o.const(1)} - {o.arg(1)} * {o.arg(1)}))",
    ),
    "sigmoid_backward": ScalarForm(
        2,
        lambda o: f"({o.arg(0)} * {o.arg(1)} * ({o.const(1)} - {o.arg(1)}))",
        lambda o: f"({o.arg(0)} * {o.arg(1)} * ({o.const(1)} - {o.arg(1)}))",
    ),
}


def python_helpers(dtype: str, body: str) -> str:
    """The numba helpers ``body`` calls, for a kernel computing in ``dtype``. ``_tanh`` for
    float32 computes in float64 from one exp (glibc's tanh costs 16 ns an element, exp 2):
    tanh(u) = (1 - e) / (1 + e) with e = exp(-2|u|), exact to float32 rounding for
    |u| >= 2**-12; below that tanh(u) rounds to u itself."""
    one, zero = f"np.{dtype}(1)", f"np.{dtype}(0)"
    if dtype == "float64":
        tanh = "    return math.tanh(x)"
    else:
        tanh = f"""\
    u = np.float64(x)
    magnitude = abs(u)
    if magnitude < 0.000244140625 or magnitude != magnitude:
        return x
    e = math.exp(-2.0 * magnitude)
    t = (1.0 - e) / (1.0 + e)
    return np.{dtype}(t if u > 0 else -t)"""
    helpers = {
        "_wide": "    return np.float64(x)",
        "_narrow": f"    return np.{dtype}(x)",
        "_tanh": tanh,
        "_sigmoid": "    z = math.exp(-abs(x))\n"
        f"    return {one} / ({one} + z) if x >= 0 else z / ({one} + z)",
        "_relu": f"    return x if not x <= 0 else {zero}",
        "_maximum": "    return a if (a >= b or a != a) else b",
        "_minimum": "    return a if (a <= b or a != a) else b",
    }
    decorator = '@numba.njit(inline="always")'
    return "".join(
        f"{decorator}\ndef {name}({'a, b' if name in _BINARY else 'x'}):\n{code}\n\n\n"
        for name, code in helpers.items()
        if f"{name}(" in body
    )


def c_helpers(ctype: str, body: str) -> str:
    """The CUDA helpers ``body`` calls, for a kernel computing in the C type ``ctype``."""
    t = ctype
    helpers = {
        "_sigmoid": f"{t} _sigmoid({t} x) {{ {t} z = exp(-fabs(x)); "
        f"return x >= 0 ? ({t})1 / (({t})1 + z) : z / (({t})1 + z); }}",
        "_relu": f"{t} _relu({t} x) {{ return x <= 0 ? ({t})0 : x; }}",
        "_maximum": f"{t} _maximum({t} a, {t} b) {{ return (a >= b || a != a) ? a : b; }}",
        "_minimum": f"{t} _minimum({t} a, {t} b) {{ return (a <= b || a != a) ? a : b; }}",
        "_wide": "double _wide(double x) { return x; }",
        "_narrow": f"{t} _narrow(double x) {{ return ({t})x; }}",
    }
    return "".join(f"__device__ {code}\n" for name, code in helpers.items() if f"{name}(" in body)


_BINARY = ("_maximum", "_minimum")


def fusible(node: Node, dtypes: dict[int, str]) -> bool:
    """Whether ``node`` can be a member of a fused group: an op with a scalar form that takes
    its arguments, one output of a float dtype, and tensor arguments of that dtype (where's
    condition: bool). ``dtypes`` gives each value id's dtype."""
    form = SCALAR_FORMS.get(node.op)
    if form is None or node.kind != "op" or node.multi_output or len(node.outputs) != 1:
        return False
    if len(node.args) != form.arity:
        return False
    dtype = node.outputs[0].dtype
    if dtype not in FLOAT_DTYPES or node.cast not in (None, dtype):
        return False
    for arg in node.args:
        if type(arg) is Ref and dtypes[arg.id] != dtype:
            return False
        if (
            type(arg) is not Ref
            and not _is_number(arg)
            and (arg is not None or not form.takes_none)
        ):
            return False
    for key, value in node.attrs.items():
        if key == "condition":
            if type(value) is not Ref or dtypes[value.id] != "bool":
                return False
        elif key == "alpha":
            if not _is_number(value):
                return False
        elif key != "shape" or node.op != "expand" or value != node.outputs[0].shape:
            return False
    return form.accepts(node)


# Ops whose numba form calls a scalar libm function (2 to 16 ns an element here), where
# NumPy's own loops are SIMD (tanh on float32: 0.5 ns).
_LIBM_OPS = {"exp", "log", "log1p", "expm1", "sin", "cos", "erf", "tanh", "sigmoid"}


def calls_libm(node: Node) -> bool:
    """Whether ``node``'s scalar form calls a libm function (a pow by a constant 2, 3, 1, 0.5
    or -1 is arithmetic)."""
    if node.op == "pow":
        base, exponent = node.args
        return not (type(base) is Ref and exponent in (2, 3, 1, 0.5, -1))
    return node.op in _LIBM_OPS


def reduced_axes(node: Node, ndim: int) -> tuple[int, ...] | None:
    """The axes a ``sum`` or ``mean`` node reduces of its ``ndim``-dimensional input (sorted,
    non-negative), or None when it is not a reduction a fused kernel can end with (another
    op, a ``dtype=``, no axes)."""
    if node.op not in ("sum", "mean") or node.kind != "op" or node.attrs.get("dtype") is not None:
        return None
    if len(node.args) != 1 or type(node.args[0]) is not Ref:
        return None
    axis = node.attrs.get("axis")
    if axis is None:
        return tuple(range(ndim)) or None
    axes = (axis,) if type(axis) is int else tuple(axis)
    if not axes or not all(type(a) is int and -ndim <= a < ndim for a in axes):
        return None
    return tuple(sorted({a % ndim for a in axes}))


def _is_number(value: Any) -> bool:
    return type(value) in (int, float, bool)
