"""Special functions: gamma and its logarithm's derivatives, error-function inverses, Bessel
functions, incomplete gamma and Hurwitz zeta (``torch.special`` and its top-level names).

The values come from SciPy's ``scipy.special`` on the CPU and ``cupyx.scipy.special`` on CUDA,
so the arrays never leave their device. SciPy is optional: without it these functions raise
``ModuleNotFoundError`` (only ``spherical_bessel_j0`` needs nothing beyond the array module).
Gradients follow PyTorch's derivative formulas, written with tensorkit ops so that any order
works; the Bessel functions of ``torch.special`` have no derivative in PyTorch and are not
differentiable here either. Integer and bool inputs compute in the default float dtype;
float16 computes in float32 and rounds once, or is refused where PyTorch has no kernel.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from .._dtype import no_kernel
from ..tensor import Tensor
from ._apply import COMMON, FLOAT, SAVE_BOTH, SAVE_INPUTS, SAVE_NONE, SAVE_OUTPUT, OpDef, apply
from .binary import eq, le, where
from .unary import exp, log, sign

__all__ = [
    "lgamma",
    "digamma",
    "polygamma",
    "mvlgamma",
    "erfinv",
    "i0",
    "igamma",
    "igammac",
    "erfcx",
    "i0e",
    "i1",
    "i1e",
    "ndtr",
    "ndtri",
    "log_ndtr",
    "entr",
    "xlog1py",
    "zeta",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "spherical_bessel_j0",
]

_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)
_LOG_PI = math.log(math.pi)


def scipy_special(xp: Any, function: str) -> Any:
    """``scipy.special`` (``cupyx.scipy.special`` for CuPy arrays); without SciPy, an error
    naming ``function`` and how to install it."""
    if xp.__name__ == "cupy":
        import cupyx.scipy.special as special

        return special
    try:
        import scipy.special as special
    except ImportError:
        raise ModuleNotFoundError(
            f"{function}() needs SciPy for its CPU kernel: pip install scipy "
            "(or tensorkit's `special` extra)",
            name="scipy",
        ) from None
    return special


def _refuse(kernel: str, x: Any, half: bool) -> None:
    """PyTorch has no kernel ``kernel`` for complex (or, unless ``half``, float16) inputs."""
    kind = x.dtype.kind
    if kind == "c" or (not half and x.dtype == "float16") or kind in "biu":
        raise no_kernel(kernel, x.dtype)


def _widened(x: Any) -> Any:
    """float16 arrays as float32 (SciPy's kernels widen them anyway); others as they are."""
    return x.astype("float32") if getattr(x, "dtype", None) == "float16" else x


def _scipy_kernel(
    name: str, kernel: str, scipy_name: str, half: bool = True, fix: Callable | None = None
) -> Callable:
    """A forward ``(xp, *arrays)`` calling ``scipy_name``, whose result keeps the dtype of the
    (promoted) inputs; ``fix(xp, out, *arrays)`` corrects edge values to PyTorch's."""

    def forward(xp: Any, *arrays: Any) -> Any:
        x = next(a for a in arrays if hasattr(a, "dtype"))
        _refuse(kernel, x, half)
        function = getattr(scipy_special(xp, name), scipy_name)
        out = xp.asarray(function(*(_widened(a) for a in arrays))).astype(x.dtype, copy=False)
        return out if fix is None else fix(xp, out, *arrays)

    return forward


def _lgamma_fix(xp: Any, out: Any, x: Any) -> Any:
    return xp.where(xp.isneginf(x), xp.inf, out).astype(out.dtype, copy=False)  # lgamma(-inf)


def _erfinv_fix(xp: Any, out: Any, x: Any) -> Any:
    return xp.where(x == 0, x, out)  # keeps the sign of zero


def _igamma_fix(upper: bool) -> Callable:
    """PyTorch's values where SciPy gives nan: P(nan, 0) = 0, P(inf, nan) = 0 and
    P(nan, inf) = 1 (Q = 1 - P)."""

    def fix(xp: Any, out: Any, a: Any, x: Any) -> Any:
        lower = xp.where((xp.isnan(a) & (x == 0)) | (xp.isposinf(a) & xp.isnan(x)), 0, out)
        lower = xp.where(xp.isnan(a) & xp.isposinf(x), 1, lower)
        fixed = xp.where(xp.isnan(out), 1 - lower if upper else lower, out)
        return fixed.astype(out.dtype, copy=False)

    return fix


def _zeta_fix(xp: Any, out: Any, x: Any, q: Any) -> Any:
    """nan for an infinite ``q`` (unless ``x`` is 1: inf), as PyTorch; SciPy has the limit 0."""
    return xp.where(xp.isposinf(q) & (x > 1), xp.nan, out).astype(out.dtype, copy=False)


def _spherical_j0(xp: Any, x: Any) -> Any:
    """``sin(x) / x``, 1 at 0 and 0 at infinity."""
    _refuse("spherical_bessel_j0_cpu", x, False)
    safe = xp.where((x == 0) | xp.isinf(x), 1, x)
    out = xp.where(x == 0, 1, xp.sin(safe) / safe)
    return xp.where(xp.isinf(x), 0, out).astype(x.dtype, copy=False)


def _saved(ctx: Any) -> Tensor:
    return ctx.saved_tensors[0]


def _i1_rule(ctx: Any, g: Tensor) -> Tensor:
    """``i0(x) - i1(x) / x``, and 1/2 at 0."""
    x, out = ctx.saved_tensors
    zero = eq(x, 0)
    return g * where(zero, 0.5, i0(x) - out / where(zero, 1.0, x))


def _i1e_rule(ctx: Any, g: Tensor) -> Tensor:
    """``i0e(x) - i1e(x) * (sign(x) + 1 / x)``, and 1/2 at 0."""
    x, out = ctx.saved_tensors
    zero = eq(x, 0)
    return g * where(zero, 0.5, i0e(x) - out * (sign(x) + 1 / where(zero, 1.0, x)))


# name: (CPU kernel name in PyTorch's errors, SciPy function or forward, float16 allowed,
#        gradient rule, what the rule keeps)
_TABLE: dict[str, tuple[str, Any, bool, Callable | None, int]] = {
    "lgamma": (
        "lgamma_vml_cpu",
        _scipy_kernel("lgamma", "lgamma_vml_cpu", "gammaln", fix=_lgamma_fix),
        True,
        lambda ctx, g: g * digamma(_saved(ctx)),
        SAVE_INPUTS,
    ),
    "digamma": ("digamma", "psi", True, lambda ctx, g: g * polygamma(1, _saved(ctx)), SAVE_INPUTS),
    "erfinv": (
        "erfinv_vml_cpu",
        _scipy_kernel("erfinv", "erfinv_vml_cpu", "erfinv", fix=_erfinv_fix),
        True,
        lambda ctx, g: g * (_SQRT_PI / 2) * exp(_saved(ctx) ** 2),
        SAVE_OUTPUT,
    ),
    "i0": ("i0_vml_cpu", "i0", True, lambda ctx, g: g * i1(_saved(ctx)), SAVE_INPUTS),
    "special_i0e": (
        "i0e_cpu",
        "i0e",
        True,
        lambda ctx, g: (
            g * (i1e(ctx.saved_tensors[0]) - sign(ctx.saved_tensors[0]) * ctx.saved_tensors[1])
        ),
        SAVE_BOTH,
    ),
    "special_i1": ("i1_cpu", "i1", True, _i1_rule, SAVE_BOTH),
    "special_i1e": ("i1e_cpu", "i1e", True, _i1e_rule, SAVE_BOTH),
    "special_erfcx": (
        "erfcx_cpu",
        "erfcx",
        False,
        lambda ctx, g: g * (2 * ctx.saved_tensors[0] * ctx.saved_tensors[1] - 2 / _SQRT_PI),
        SAVE_BOTH,
    ),
    "special_ndtr": (
        "erf_vml_cpu",
        "ndtr",
        True,
        lambda ctx, g: g * exp(-(_saved(ctx) ** 2) / 2) / _SQRT_2PI,
        SAVE_INPUTS,
    ),
    "special_ndtri": (
        "ndtri_cpu",
        "ndtri",
        False,
        lambda ctx, g: g * _SQRT_2PI * exp(_saved(ctx) ** 2 / 2),
        SAVE_OUTPUT,
    ),
    "special_log_ndtr": (
        "log_ndtr_cpu",
        "log_ndtr",
        False,
        lambda ctx, g: g / _SQRT_2PI * exp(-(ctx.saved_tensors[1] + ctx.saved_tensors[0] ** 2 / 2)),
        SAVE_BOTH,
    ),
    "special_entr": (
        "entr_cpu",
        "entr",
        True,
        lambda ctx, g: -g * (1 + log(_saved(ctx))),
        SAVE_INPUTS,
    ),
    "special_bessel_j0": ("bessel_j0_cpu", "j0", False, None, SAVE_NONE),
    "special_bessel_j1": ("bessel_j1_cpu", "j1", False, None, SAVE_NONE),
    "special_bessel_y0": ("bessel_y0_cpu", "y0", False, None, SAVE_NONE),
    "special_bessel_y1": ("bessel_y1_cpu", "y1", False, None, SAVE_NONE),
    "special_modified_bessel_i0": ("modified_bessel_i0_cpu", "i0", False, None, SAVE_NONE),
    "special_modified_bessel_i1": ("modified_bessel_i1_cpu", "i1", False, None, SAVE_NONE),
    "special_modified_bessel_k0": ("modified_bessel_k0_cpu", "k0", False, None, SAVE_NONE),
    "special_modified_bessel_k1": ("modified_bessel_k1_cpu", "k1", False, None, SAVE_NONE),
    "special_scaled_modified_bessel_k0": (
        "scaled_modified_bessel_k0_cpu",
        "k0e",
        False,
        None,
        SAVE_NONE,
    ),
    "special_scaled_modified_bessel_k1": (
        "scaled_modified_bessel_k1_cpu",
        "k1e",
        False,
        None,
        SAVE_NONE,
    ),
    "special_spherical_bessel_j0": (
        "spherical_bessel_j0_cpu",
        _spherical_j0,
        False,
        None,
        SAVE_NONE,
    ),
}


def _op(name: str) -> OpDef:
    kernel, forward, half, rule, saves = _TABLE[name]
    if isinstance(forward, str):
        forward = _scipy_kernel(name.removeprefix("special_"), kernel, forward, half)
    return OpDef(name, forward, rule, saves=saves, promote=FLOAT)


_OPS = {name: _op(name) for name in _TABLE}


def _unary(name: str, public: str) -> Callable[[Tensor], Tensor]:
    op = _OPS[name]

    def function(input: Tensor) -> Tensor:
        return apply(op, input)

    function.__name__ = function.__qualname__ = public
    function.__doc__ = f"Elementwise {public} (as torch.{name.replace('special_', 'special.')})."
    return function


lgamma = _unary("lgamma", "lgamma")
digamma = _unary("digamma", "digamma")
erfinv = _unary("erfinv", "erfinv")
i0 = _unary("i0", "i0")
i0e = _unary("special_i0e", "i0e")
i1 = _unary("special_i1", "i1")
i1e = _unary("special_i1e", "i1e")
erfcx = _unary("special_erfcx", "erfcx")
ndtr = _unary("special_ndtr", "ndtr")
ndtri = _unary("special_ndtri", "ndtri")
log_ndtr = _unary("special_log_ndtr", "log_ndtr")
entr = _unary("special_entr", "entr")
bessel_j0 = _unary("special_bessel_j0", "bessel_j0")
bessel_j1 = _unary("special_bessel_j1", "bessel_j1")
bessel_y0 = _unary("special_bessel_y0", "bessel_y0")
bessel_y1 = _unary("special_bessel_y1", "bessel_y1")
modified_bessel_i0 = _unary("special_modified_bessel_i0", "modified_bessel_i0")
modified_bessel_i1 = _unary("special_modified_bessel_i1", "modified_bessel_i1")
modified_bessel_k0 = _unary("special_modified_bessel_k0", "modified_bessel_k0")
modified_bessel_k1 = _unary("special_modified_bessel_k1", "modified_bessel_k1")
scaled_modified_bessel_k0 = _unary("special_scaled_modified_bessel_k0", "scaled_modified_bessel_k0")
scaled_modified_bessel_k1 = _unary("special_scaled_modified_bessel_k1", "scaled_modified_bessel_k1")
spherical_bessel_j0 = _unary("special_spherical_bessel_j0", "spherical_bessel_j0")


# ------------------------------------------------------------------ polygamma, mvlgamma
def _polygamma_forward(xp: Any, x: Any, n: int) -> Any:
    kernel = ("digamma", "trigamma")[n] if n < 2 else "polygamma"
    _refuse(kernel, x, True)
    special = scipy_special(xp, "polygamma")
    wide = _widened(x)
    if n == 0:
        return xp.asarray(special.psi(wide)).astype(x.dtype, copy=False)
    # SciPy's own formula, with n a Python int (cupyx's polygamma wants an array n).
    try:
        factorial = float(math.factorial(n))
    except OverflowError:
        factorial = math.inf
    out = (-1.0) ** (n + 1) * factorial * special.zeta(n + 1.0, wide)
    return xp.asarray(out).astype(x.dtype, copy=False)


_POLYGAMMA = OpDef(
    "polygamma",
    _polygamma_forward,
    lambda ctx, g: g * polygamma(ctx.attrs["n"] + 1, _saved(ctx)),
    saves=SAVE_INPUTS,
    promote=FLOAT,
)


def _int_argument(function: str, name: str, position: int, value: Any) -> int:
    """``value`` as an int, refusing what PyTorch's argument parser refuses."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(
            f"{function}(): argument '{name}' (position {position}) must be int, not "
            f"{type(value).__name__}"
        )
    return operator.index(value)


def polygamma(n: int, input: Tensor) -> Tensor:
    """The ``n``-th derivative of the digamma function (``n >= 0``)."""
    n = _int_argument("polygamma", "n", 1, n)
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return apply(_POLYGAMMA, input, n=n)


def polygamma_method(self: Tensor, n: int) -> Tensor:
    """``t.polygamma(n)``: PyTorch's method takes ``n`` after the tensor."""
    return polygamma(n, self)


def _mvlgamma_forward(xp: Any, x: Any, p: int) -> Any:
    _refuse("arange_cpu" if x.dtype.kind == "c" else "lgamma_vml_cpu", x, True)
    gammaln = scipy_special(xp, "mvlgamma").gammaln
    wide = _widened(x)
    out = sum(gammaln(wide - j / 2) for j in range(p)) + p * (p - 1) / 4 * _LOG_PI
    return xp.asarray(out).astype(x.dtype, copy=False)


def _mvlgamma_rule(ctx: Any, g: Tensor) -> Tensor:
    """``sum over j < p of digamma(x - j/2)``."""
    x = _saved(ctx)
    return g * sum(digamma(x - j / 2) for j in range(ctx.attrs["p"]))


_MVLGAMMA = OpDef("mvlgamma", _mvlgamma_forward, _mvlgamma_rule, saves=SAVE_INPUTS, promote=FLOAT)


def mvlgamma(input: Tensor, p: int) -> Tensor:
    """The multivariate log-gamma function of dimension ``p``, elementwise. As in PyTorch,
    there is no domain check: elements at or below ``(p - 1) / 2`` give inf or nan."""
    p = _int_argument("mvlgamma", "p", 2, p)
    if input.dtype.name == "bool":
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    return apply(_MVLGAMMA, input, p=p)


# ------------------------------------------------------------------ functions of two operands
def _not_implemented(what: str) -> NotImplementedError:
    return NotImplementedError(f"the derivative for '{what}' is not implemented.")


def _igamma_rule(sign_: float, what: str) -> Callable:
    """d/dx of the regularized incomplete gamma; none for ``a``, as PyTorch."""

    def rule(ctx: Any, g: Tensor) -> tuple:
        a, x = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise _not_implemented(what)
        return None, sign_ * g * exp((a - 1) * log(x) - x - lgamma(a))

    return rule


def _zeta_rule(ctx: Any, g: Tensor) -> tuple:
    """d/dq zeta(x, q) = -x zeta(x + 1, q); none for ``x``, as PyTorch."""
    x, q = ctx.saved_tensors
    if ctx.needs_input_grad[0]:
        raise _not_implemented("zeta")
    return None, -g * x * zeta(x + 1, q)


def _xlog1py_rule(ctx: Any, g: Tensor) -> tuple:
    """d/dx = log1p(y) (0 where x == 0 and y <= -1, as PyTorch); d/dy = x / (1 + y)."""
    x, y = ctx.saved_tensors
    need_x, need_y = ctx.needs_input_grad
    grad_x = where(eq(x, 0) & le(y, -1), 0.0, xlog1py(g, y)) if need_x else None
    grad_y = g * x / (y + 1) if need_y else None
    return grad_x, grad_y


_IGAMMA = OpDef(
    "igamma",
    _scipy_kernel("igamma", "igamma_cpu", "gammainc", fix=_igamma_fix(False)),
    _igamma_rule(1.0, "igamma: input"),
    saves=SAVE_INPUTS,
    promote=COMMON,
)
_IGAMMAC = OpDef(
    "igammac",
    _scipy_kernel("igammac", "igammac_cpu", "gammaincc", fix=_igamma_fix(True)),
    _igamma_rule(-1.0, "igammac: input"),
    saves=SAVE_INPUTS,
    promote=COMMON,
)
_ZETA = OpDef(
    "special_zeta",
    _scipy_kernel("zeta", "zeta_cpu", "zeta", half=False, fix=_zeta_fix),
    _zeta_rule,
    saves=SAVE_INPUTS,
    promote=FLOAT,
)
_XLOG1PY = OpDef(
    "special_xlog1py",
    _scipy_kernel("xlog1py", "xlog1py_cpu", "xlog1py"),
    _xlog1py_rule,
    saves=SAVE_INPUTS,
    promote=FLOAT,
)


def _both_tensors(function: str, input: Any, other: Any) -> None:
    for name, position, value in (("input", 1, input), ("other", 2, other)):
        if not isinstance(value, Tensor):
            raise TypeError(
                f"{function}(): argument '{name}' (position {position}) must be Tensor, not "
                f"{type(value).__name__}"
            )


def _one_tensor(function: str, input: Any, other: Any) -> None:
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(
            f"{function}() received an invalid combination of arguments - got "
            f"({type(input).__name__}, {type(other).__name__}), but expected one of:\n"
            " * (Tensor input, Tensor other, *, Tensor out = None)\n"
            " * (Number self, Tensor other, *, Tensor out = None)\n"
            " * (Tensor input, Number other, *, Tensor out = None)\n"
        )


def igamma(input: Tensor, other: Tensor) -> Tensor:
    """The regularized lower incomplete gamma function P(input, other); differentiable in
    ``other`` only, as in PyTorch."""
    _both_tensors("igamma", input, other)
    return apply(_IGAMMA, input, other)


def igammac(input: Tensor, other: Tensor) -> Tensor:
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P(input, other);
    differentiable in ``other`` only, as in PyTorch."""
    _both_tensors("igammac", input, other)
    return apply(_IGAMMAC, input, other)


def zeta(input: Tensor | float, other: Tensor | float) -> Tensor:
    """The Hurwitz zeta function ``sum over k >= 0 of (k + other) ** -input``; differentiable
    in ``other`` only, as in PyTorch."""
    _one_tensor("special_zeta", input, other)
    return apply(_ZETA, input, other)


def xlog1py(input: Tensor | float, other: Tensor | float) -> Tensor:
    """``input * log1p(other)``, and 0 where ``input`` is 0 (unless ``other`` is nan)."""
    _one_tensor("special_xlog1py", input, other)
    return apply(_XLOG1PY, input, other)
