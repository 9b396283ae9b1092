"""The op cases that tests/test_ops.py runs: one declarative row per op call.

Each :class:`OpCase` names an op, one call written against a module ``m`` (run once with
``m = tensorkit`` and once with ``m = torch``, since both spell the API the same way), input
makers that draw arrays from a value domain (positive for ``log``, inside (-1, 1) for
``atanh``, distinct values for ``max``/``sort``, integer index tensors for ``gather``...) and
the input shapes to try. The tests build, from every case and shape set, a forward check
against PyTorch (or a NumPy reference), a float64 gradcheck and, on small shapes, a
gradgradcheck; every case with array inputs also gets a strided (non-contiguous) variant.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

Shape = tuple[int, ...]
Maker = Callable[[np.random.Generator, Shape], np.ndarray]


# ------------------------------------------------------------------------------ makers
def real(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    """Standard normal values."""
    return np.asarray(rng.standard_normal(shape))


def positive(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    """Values in [0.5, 2): inside the domain of log, sqrt, rsqrt."""
    return np.asarray(rng.uniform(0.5, 2.0, shape))


def unit(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    """Values in (-0.9, 0.9): inside the domain of asin, acos, atanh."""
    return np.asarray(rng.uniform(-0.9, 0.9, shape))


def above_one(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    """Values in [1.2, 3): inside the domain of acosh."""
    return np.asarray(rng.uniform(1.2, 3.0, shape))


def nonzero(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    """Values with 0.5 <= |x| < 2: away from zero (divisors, kinks of abs and relu)."""
    signs = rng.choice(np.array([-1.0, 1.0]), shape)
    return np.asarray(signs * rng.uniform(0.5, 2.0, shape))


def off_integer(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    """Values at least 0.15 away from integers and half-integers (steps of floor, round)."""
    fraction = rng.uniform(0.15, 0.35, shape) + 0.5 * rng.integers(0, 2, shape)
    return np.asarray(rng.integers(-3, 3, shape) + fraction)


def distinct(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    """Values at least 0.15 apart, so max/sort/topk have no ties."""
    n = math.prod(shape)
    values = (rng.permutation(n) - n / 2) * 0.25 + rng.uniform(0.0, 0.1, n)
    return values.reshape(shape)


def ties(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    """Small integers as floats: many ties."""
    return np.asarray(rng.integers(0, 3, shape).astype(np.float64))


def ints(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    """int64 values in [-4, 4]."""
    return np.asarray(rng.integers(-4, 5, shape), dtype=np.int64)


def nonzero_ints(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    """int64 values in [-4, 4] without 0 (integer divisors)."""
    values = rng.integers(1, 5, shape) * rng.choice(np.array([-1, 1]), shape)
    return np.asarray(values, dtype=np.int64)


def small_ints(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    """int64 values in [0, 3] (shift amounts, repeat counts)."""
    return np.asarray(rng.integers(0, 4, shape), dtype=np.int64)


def bools(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    """Booleans, about half True."""
    return np.asarray(rng.random(shape) < 0.5)


def indices(high: int) -> Maker:
    """int64 indices in [0, high) (repeats allowed)."""

    def make(rng: np.random.Generator, shape: Shape) -> np.ndarray:
        return np.asarray(rng.integers(0, high, shape), dtype=np.int64)

    make.__name__ = f"indices_below_{high}"
    return make


def distinct_indices(high: int) -> Maker:
    """int64 indices in [0, high), distinct along dim 0 (scatter writes each place once)."""

    def make(rng: np.random.Generator, shape: Shape) -> np.ndarray:
        columns = [rng.permutation(high)[: shape[0]] for _ in range(math.prod(shape[1:]))]
        return np.stack(columns, axis=-1).reshape(shape).astype(np.int64)

    make.__name__ = f"distinct_indices_below_{high}"
    return make


def with_values(base: Maker, values: dict[int, float]) -> Maker:
    """``base``'s values with the given flat positions overwritten (zeros, NaN, inf...)."""

    def make(rng: np.random.Generator, shape: Shape) -> np.ndarray:
        out = np.array(base(rng, shape), dtype=np.float64)
        for position, value in values.items():
            if position < out.size:
                out.flat[position] = value
        return out

    make.__name__ = f"{base.__name__}_with_{len(values)}_set"
    return make


nonfinite = with_values(real, {0: np.nan, 2: np.inf, 4: -np.inf})
with_nan = with_values(real, {1: np.nan, 3: np.nan})
one_zero = with_values(real, {1: 0.0})
two_zeros = with_values(real, {0: 0.0, 2: 0.0})
neg_inf = with_values(real, {0: -np.inf, 4: -np.inf})


def complex_values(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    """complex128 values with standard normal parts."""
    return np.asarray(rng.standard_normal(shape) + 1j * rng.standard_normal(shape))


# ------------------------------------------------------------------------------- cases
@dataclass(frozen=True)
class OpCase:
    """One op call: ``call(m, *inputs)`` with ``m`` the tensorkit or the torch module.

    ``shapes`` lists shape sets, one shape per input. ``torch_call`` replaces ``call`` for
    PyTorch where the spelling differs; ``numpy`` is a forward reference on arrays, used
    also when PyTorch is missing. ``torch_grad``: compare gradients with PyTorch's (off
    where PyTorch has no derivative); ``gradcheck``: float64 finite-difference checks (off
    where the op is not differentiable at the inputs, such as ties); ``gradgrad``: second
    derivatives too (on shapes of at most 12 elements). ``xfail``: a known bug in a file
    this suite's owner may not change (the test is expected to fail, strictly).
    """

    name: str
    call: Callable
    inputs: tuple[Maker, ...]
    shapes: tuple[tuple[Shape, ...], ...]
    torch_call: Callable | None = None
    numpy: Callable | None = None
    torch_grad: bool = True
    gradcheck: bool = True
    gradgrad: bool = True
    strided: bool = True
    atol: float = 1e-6
    rtol: float = 1e-5
    xfail: str | None = None

    def variants(self) -> list[tuple[str, tuple[Shape, ...], bool]]:
        """(label, shapes, strided) for every shape set, plus a strided copy of the first."""
        out = [(_label(shapes), shapes, False) for shapes in self.shapes]
        if self.strided and any(len(s) for s in self.shapes[0]):
            out.append((_label(self.shapes[0]) + "-strided", self.shapes[0], True))
        return out


def _label(shapes: Sequence[Shape]) -> str:
    return ",".join("x".join(map(str, s)) if s else "scalar" for s in shapes) or "noargs"


# Standard shape sets: plain, 0-d, size-0, 1-D; broadcasting pairs (3,1)x(1,4) and (1,n).
UNARY = (((2, 3),), ((),), ((0, 3),), ((5,),))
BINARY = (
    ((2, 3), (2, 3)),
    ((3, 1), (1, 4)),
    ((1, 3), (2, 3)),
    ((2, 3), ()),
    ((), ()),
    ((0, 3), (1, 3)),
)
TERNARY = (((2, 3), (2, 3), (2, 3)), ((3, 1), (1, 4), (3, 4)), ((2, 3), (1, 3), ()))


def case(name: str, call: Callable, *inputs: Maker, shapes: tuple = UNARY, **options) -> OpCase:
    return OpCase(name, call, tuple(inputs), tuple(shapes), **options)


def _unary(name: str, maker: Maker, **options) -> OpCase:
    numpy_name = _NUMPY_NAMES.get(name, name)
    reference = getattr(np, numpy_name, None)
    return case(
        name,
        lambda m, x: getattr(m, name)(x),
        maker,
        numpy=None if reference is None else lambda x: reference(x),
        **options,
    )


_NUMPY_NAMES = {
    "asin": "arcsin",
    "acos": "arccos",
    "atan": "arctan",
    "asinh": "arcsinh",
    "acosh": "arccosh",
    "atanh": "arctanh",
    "neg": "negative",
}

UNARY_CASES = [
    *(
        _unary(name, maker)
        for name, maker in [
            ("neg", real),
            ("exp", real),
            ("exp2", real),
            ("expm1", real),
            ("log", positive),
            ("log2", positive),
            ("log10", positive),
            ("log1p", positive),
            ("sqrt", positive),
            ("rsqrt", positive),
            ("reciprocal", nonzero),
            ("square", real),
            ("sin", real),
            ("cos", real),
            ("tan", unit),
            ("asin", unit),
            ("acos", unit),
            ("atan", real),
            ("sinh", real),
            ("cosh", real),
            ("tanh", real),
            ("asinh", real),
            ("acosh", above_one),
            ("atanh", unit),
            ("sigmoid", real),
            ("relu", nonzero),
            ("erf", real),
            ("erfc", real),
            ("abs", nonzero),
            ("sign", nonzero),
            ("floor", off_integer),
            ("ceil", off_integer),
            ("trunc", off_integer),
            ("frac", off_integer),
            ("positive", real),
        ]
    ),
    case("round", lambda m, x: m.round(x), off_integer, numpy=np.round),
    case("round-decimals", lambda m, x: m.round(x, decimals=1), real),
    case("round-negative-decimals", lambda m, x: m.round(x * 100, decimals=-1), real),
    case("nan_to_num", lambda m, x: m.nan_to_num(x), nonfinite, numpy=np.nan_to_num),
    case(
        "nan_to_num-values",
        lambda m, x: m.nan_to_num(x, nan=1.5, posinf=2.0, neginf=-3.0),
        nonfinite,
    ),
    *(
        case(name, lambda m, x, name=name: getattr(m, name)(x), nonfinite, gradcheck=False)
        for name in ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit")
    ),
    case("logical_not", lambda m, x: m.logical_not(x), bools, gradcheck=False),
    case("logical_not-float", lambda m, x: m.logical_not(x), one_zero, gradcheck=False),
    case("bitwise_not", lambda m, x: m.bitwise_not(x), ints, gradcheck=False, numpy=np.invert),
    case("bitwise_not-bool", lambda m, x: m.bitwise_not(x), bools, gradcheck=False),
    case("invert-operator", lambda m, x: ~x, bools, gradcheck=False),
    case("abs-int", lambda m, x: m.abs(x), ints, gradcheck=False),
    case("sign-bool", lambda m, x: m.sign(x), bools),
    case(  # not NaN: PyTorch's sign(nan) is 0, tensorkit keeps the array API's NaN
        "sign-infinite",
        lambda m, x: m.sign(x),
        with_values(real, {1: 0.0, 2: np.inf, 4: -np.inf}),
        gradcheck=False,
    ),
    case("square-bool", lambda m, x: m.square(x), bools),
    case("square-int", lambda m, x: m.square(x), ints),
    case("erf-float16", lambda m, x: m.erf(x.half()), real, atol=1e-3, rtol=1e-3, gradcheck=False),
    case(  # computed in float32 and rounded once: within a float16 step of PyTorch
        "sigmoid-float16",
        lambda m, x: m.sigmoid(x.half()),
        real,
        atol=0,
        rtol=1e-4,
        torch_grad=False,
        gradcheck=False,
    ),
    case("neg-operator", lambda m, x: -x, real),
    case("exp-int", lambda m, x: m.exp(x), ints, gradcheck=False),
    case("sqrt-int", lambda m, x: m.sqrt(m.abs(x)), ints, gradcheck=False),
    case("sinc", lambda m, x: m.sinc(x), nonzero, numpy=np.sinc),
    case("sinc-zero", lambda m, x: m.sinc(x), one_zero, gradgrad=False),
    case("logit", lambda m, x: m.logit(x * 0.5 + 0.5), unit),
    case("logit-eps", lambda m, x: m.logit(x * 0.5 + 0.5, eps=0.2), unit),
    case("deg2rad", lambda m, x: m.deg2rad(x), real, numpy=np.deg2rad),
    case("rad2deg", lambda m, x: m.rad2deg(x), real, numpy=np.rad2deg),
    case("deg2rad-int", lambda m, x: m.deg2rad(x), ints, gradcheck=False),
    case("sgn", lambda m, x: m.sgn(x), nonzero, torch_grad=False),  # PyTorch: a ZeroTensor
    case("sgn-complex", lambda m, x: m.sgn(x), complex_values),
    case("frexp", lambda m, x: m.frexp(x), real, gradcheck=False, torch_grad=False),
    *(  # size-0 shapes left out: tensorkit refuses in-place writes into a cloned (0, 3)
        case(
            f"{name}_",
            lambda m, x, name=name: getattr(x.clone(), name + "_")(),
            maker,
            shapes=UNARY[:2] + UNARY[3:],
            # PyTorch has no in-place derivative of these (or gives a ZeroTensor)
            torch_grad=name not in ("arcsinh", "arccosh", "arctanh", "fix", "sgn"),
        )
        for name, maker in [
            ("negative", real),
            ("absolute", nonzero),
            ("arcsin", unit),
            ("arccos", unit),
            ("arctan", real),
            ("arcsinh", real),
            ("arccosh", above_one),
            ("arctanh", unit),
            ("fix", off_integer),
            ("sgn", nonzero),
            ("sinc", nonzero),
            ("deg2rad", real),
            ("rad2deg", real),
        ]
    ),
    case("logit_", lambda m, x: (x * 0.5 + 0.5).logit_(0.1), unit, shapes=UNARY[:2]),
    case(
        "logical_not_",
        lambda m, x: x.clone().logical_not_(),
        one_zero,
        shapes=UNARY[:2],
        gradcheck=False,
        torch_grad=False,
    ),
    case("bitwise_not_", lambda m, x: x.clone().bitwise_not_(), ints, shapes=UNARY[:2]),
]


def _binary(name: str, left: Maker, right: Maker, **options) -> OpCase:
    reference = getattr(np, _NUMPY_BINARY.get(name, name), None)
    return case(
        name,
        lambda m, a, b: getattr(m, name)(a, b),
        left,
        right,
        shapes=options.pop("shapes", BINARY),
        numpy=None if reference is None else lambda a, b: reference(a, b),
        **options,
    )


_NUMPY_BINARY = {
    "sub": "subtract",
    "mul": "multiply",
    "div": "divide",
    "remainder": "mod",
    "pow": "power",
    "atan2": "arctan2",
    "eq": "equal",
    "ne": "not_equal",
    "lt": "less",
    "le": "less_equal",
    "gt": "greater",
    "ge": "greater_equal",
}

COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")
LOGICAL = ("logical_and", "logical_or", "logical_xor")
BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor")

BINARY_CASES = [
    _binary("add", real, real),
    case("add-alpha", lambda m, a, b: m.add(a, b, alpha=2.5), real, real, shapes=BINARY),
    case("add-scalar", lambda m, a: m.add(a, 1.5, alpha=2), real),
    case(
        "add-alpha-0d-tensor",
        lambda m, a, b: m.add(a, b, alpha=m.tensor(2.5)),
        real,
        real,
        shapes=BINARY,
    ),
    case(
        "sub-alpha-0d-tensor",
        lambda m, a, b: m.sub(a, b, alpha=m.tensor(-3)),
        real,
        real,
        shapes=BINARY,
    ),
    case(
        "add-bool-alpha",  # a bool result: alpha is True, so this is a logical or
        lambda m, a, b: m.add(a, b, alpha=2),
        bools,
        bools,
        shapes=BINARY,
        gradcheck=False,
    ),
    case("radd-operator", lambda m, a: 2 + a, real),
    _binary("sub", real, real),
    case("sub-alpha", lambda m, a, b: m.sub(a, b, alpha=0.5), real, real, shapes=BINARY),
    case("rsub-operator", lambda m, a: 2.0 - a, real),
    _binary("mul", real, real),
    case("mul-scalar", lambda m, a: a * 3, real),
    _binary("div", real, nonzero),
    case("rdiv-operator", lambda m, a: 2.0 / a, nonzero),
    case(
        "div-trunc",
        lambda m, a, b: m.div(a, b, rounding_mode="trunc"),
        real,
        nonzero,
        shapes=BINARY,
    ),
    case(
        "div-floor",
        lambda m, a, b: m.div(a, b, rounding_mode="floor"),
        real,
        nonzero,
        shapes=BINARY,
    ),
    case(
        "div-trunc-int",
        lambda m, a, b: m.div(a, b, rounding_mode="trunc"),
        ints,
        nonzero_ints,
        shapes=BINARY,
        gradcheck=False,
    ),
    case(
        "div-floor-int",
        lambda m, a, b: m.div(a, b, rounding_mode="floor"),
        ints,
        nonzero_ints,
        shapes=BINARY,
        gradcheck=False,
    ),
    case("div-int", lambda m, a, b: a / b, ints, nonzero_ints, shapes=BINARY, gradcheck=False),
    _binary("floor_divide", real, nonzero, torch_grad=False),
    case(
        "floor_divide-int",
        lambda m, a, b: a // b,
        ints,
        nonzero_ints,
        shapes=BINARY,
        gradcheck=False,
    ),
    _binary("remainder", real, nonzero),
    case(
        "remainder-int", lambda m, a, b: a % b, ints, nonzero_ints, shapes=BINARY, gradcheck=False
    ),
    case("remainder-scalar", lambda m, a: m.remainder(a, -0.7), real),
    _binary("fmod", real, nonzero),
    case(
        "fmod-int", lambda m, a, b: m.fmod(a, b), ints, nonzero_ints, shapes=BINARY, gradcheck=False
    ),
    _binary("pow", positive, real),
    *(
        case(f"pow-scalar-{e}", lambda m, x, e=e: m.pow(x, e), maker)
        for e, maker in [
            (2, real),
            (3, real),
            (0.5, positive),
            (-1, nonzero),
            (0, real),
            (2.5, positive),
            (1, real),
            (-2.5, positive),
        ]
    ),
    case("pow-scalar-base", lambda m, x: m.pow(2.0, x), real),
    case("rpow-operator", lambda m, x: 1.5**x, real),
    case("pow-operator", lambda m, x: x**2, real),
    case("pow-int", lambda m, x: m.pow(x, 2), ints, gradcheck=False),
    case("pow-int-float-exponent", lambda m, x: m.pow(m.abs(x), 0.5), ints, gradcheck=False),
    case(
        "pow-int-tensors",
        lambda m, a, b: m.pow(a, b),
        ints,
        small_ints,
        shapes=BINARY,
        gradcheck=False,
    ),
    case("pow-zero-base", lambda m, e: m.pow(m.zeros_like(e), e), positive),
    case(
        "pow-zero-base-zero-exponent",
        lambda m, x: m.pow(x, m.zeros_like(x)),
        with_values(positive, {1: 0.0}),
    ),
    _binary("atan2", real, nonzero),
    _binary("arctan2", real, nonzero),
    case("arctan2_", lambda m, a, b: a.clone().arctan2_(b), real, nonzero, shapes=BINARY[:1]),
    *(
        _binary(name, real, real, gradcheck=False)
        for name in ("greater", "greater_equal", "less", "less_equal", "not_equal")
    ),
    *(
        case(
            f"{name}_",
            lambda m, a, b, name=name: getattr(a.clone(), name + "_")(b),
            real,
            real,
            shapes=(BINARY[0], BINARY[3]),
            gradcheck=False,
            torch_grad=False,
        )
        for name in ("greater", "greater_equal", "less", "less_equal", "not_equal")
    ),
    _binary("multiply", real, real),
    _binary("subtract", real, real),
    _binary("divide", real, nonzero),
    *(
        case(
            f"{name}_",
            lambda m, a, b, name=name: getattr(a.clone(), name + "_")(b),
            real,
            maker,
            shapes=(BINARY[0], BINARY[3]),
        )
        for name, maker in [
            ("multiply", real),
            ("subtract", real),
            ("divide", nonzero),
            ("xlogy", positive),
            ("hypot", nonzero),
            ("copysign", nonzero),
        ]
    ),
    case(
        "shift_",
        lambda m, a, b: a.clone().bitwise_left_shift_(b).bitwise_right_shift_(1),
        ints,
        small_ints,
        shapes=BINARY[:1],
        gradcheck=False,
    ),
    _binary("xlogy", real, positive),
    case("xlogy-zero", lambda m, a, b: m.xlogy(a, b), two_zeros, positive, shapes=BINARY),
    case("xlogy-scalar", lambda m, b: m.xlogy(2.0, b), positive),
    _binary("hypot", nonzero, nonzero),
    _binary("copysign", nonzero, nonzero),
    case(
        "copysign-int", lambda m, a, b: m.copysign(a, b), ints, ints, shapes=BINARY, gradcheck=False
    ),
    _binary("heaviside", two_zeros, real, gradcheck=False, torch_grad=False),
    _binary("gcd", ints, ints, gradcheck=False),
    _binary("lcm", ints, ints, gradcheck=False),
    case(
        "gcd_",
        lambda m, a, b: a.clone().gcd_(b).lcm_(b),
        ints,
        nonzero_ints,
        shapes=BINARY[:1],
        gradcheck=False,
    ),
    _binary("ldexp", real, small_ints),
    _binary("nextafter", real, real, gradcheck=False, torch_grad=False),
    _binary("float_power", positive, real),
    case("float_power-scalar", lambda m, x: m.float_power(x, 2), real),
    case("float_power-int", lambda m, x: m.float_power(x, 3), ints, gradcheck=False),
    _binary("logaddexp", real, real),
    _binary("logaddexp2", real, real),
    _binary("maximum", distinct, distinct, shapes=BINARY[:4] + BINARY[5:]),
    _binary("minimum", distinct, distinct, shapes=BINARY[:4] + BINARY[5:]),
    _binary("fmax", distinct, distinct, shapes=BINARY[:4] + BINARY[5:]),
    _binary("fmin", distinct, distinct, shapes=BINARY[:4] + BINARY[5:]),
    case("fmax-nan", lambda m, a, b: m.fmax(a, b), with_nan, real, shapes=BINARY[:1]),
    case("fmin-nan", lambda m, a, b: m.fmin(a, b), real, with_nan, shapes=BINARY[:1]),
    case("fmax-both-nan", lambda m, a: m.fmax(a, a), with_nan, gradcheck=False),
    case(
        "maximum-nan",
        lambda m, a, b: m.maximum(a, b),
        with_nan,
        real,
        shapes=BINARY[:1],
        gradcheck=False,
    ),
    case(
        "minimum-nan",
        lambda m, a, b: m.minimum(a, b),
        real,
        with_nan,
        shapes=BINARY[:1],
        gradcheck=False,
    ),
    case(
        "maximum-ties",
        lambda m, a, b: m.maximum(a, b),
        ties,
        ties,
        shapes=BINARY[:2],
        gradcheck=False,
    ),
    case(
        "minimum-ties",
        lambda m, a, b: m.minimum(a, b),
        ties,
        ties,
        shapes=BINARY[:2],
        gradcheck=False,
    ),
    case("clamp", lambda m, x: m.clamp(x, -0.5, 0.7), distinct),
    case("clamp-min", lambda m, x: m.clamp(x, min=0.1), distinct),
    case("clamp-max", lambda m, x: m.clamp(x, max=0.1), distinct),
    case("clip", lambda m, x: m.clip(x, -0.5, 0.7), distinct),
    case("clamp-crossed", lambda m, x: m.clamp(x, 0.7, -0.5), distinct),
    case("clamp_min", lambda m, x: m.clamp_min(x, 0.1), distinct),
    case(
        "clamp_max-tensor", lambda m, a, b: m.clamp_max(a, b), distinct, distinct, shapes=BINARY[:2]
    ),
    case("clamp_min-method", lambda m, x: x.clamp_min(-0.2), distinct),
    case(
        "where-method",
        lambda m, c, x, y: x.where(c, y),
        bools,
        real,
        real,
        shapes=(((2, 3), (2, 3), (2, 3)), ((3, 1), (1, 4), (3, 4))),
    ),
    case("where-method-scalar", lambda m, c, x: x.where(c, 0.5), bools, real, shapes=BINARY[:2]),
    case("clamp-int", lambda m, x: m.clamp(x, -1, 2), ints, gradcheck=False),
    case("clamp-int-float-bound", lambda m, x: m.clamp(x, min=0.5), ints, gradcheck=False),
    case(
        "clamp-tensor-bounds",
        lambda m, x, low, high: m.clamp(x, low, high),
        distinct,
        distinct,
        distinct,
        shapes=TERNARY,
    ),
    case(
        "clamp-tensor-min",
        lambda m, x, low: m.clamp(x, min=low),
        distinct,
        distinct,
        shapes=BINARY[:4],
    ),
    case(
        "clamp-tensor-max",
        lambda m, x, high: m.clamp(x, max=high),
        distinct,
        distinct,
        shapes=BINARY[:4],
    ),
    case(
        "clamp-tensor-crossed",
        lambda m, x, low: m.clamp(x, low, low - 1),
        distinct,
        distinct,
        shapes=BINARY[:2],
    ),
    case(
        "where",
        lambda m, c, x, y: m.where(c, x, y),
        bools,
        real,
        real,
        shapes=(((2, 3), (2, 3), (2, 3)), ((3, 4), (3, 1), (1, 4)), ((2, 3), (), (2, 3))),
    ),
    case("where-scalar", lambda m, c, x: m.where(c, x, 0.5), bools, real, shapes=BINARY[:3]),
    case("where-scalar-first", lambda m, c, y: m.where(c, 2, y), bools, real, shapes=BINARY[:2]),
    case(
        "where-int-float",
        lambda m, c, x: m.where(c, x, 0.5),
        bools,
        ints,
        shapes=BINARY[:1],
        gradcheck=False,
    ),
    case(
        "where-condition-only",
        lambda m, c: m.where(c),
        bools,
        shapes=((((2, 3),),) + ((((4,),),))),
        gradcheck=False,
    ),
    case("lerp", lambda m, a, b: m.lerp(a, b, 0.3), real, real, shapes=BINARY),
    case(
        "lerp-tensor-weight", lambda m, a, b, w: m.lerp(a, b, w), real, real, unit, shapes=TERNARY
    ),
    *(_binary(name, ints, ints, gradcheck=False) for name in COMPARE),
    *(
        case(
            f"{name}-float-scalar",
            lambda m, a, n=name: getattr(m, n)(a, 0.25),
            real,
            gradcheck=False,
        )
        for name in COMPARE
    ),
    case("lt-operator", lambda m, a, b: a < b, real, real, shapes=BINARY, gradcheck=False),
    case("eq-operator", lambda m, a, b: a == b, ties, ties, shapes=BINARY, gradcheck=False),
    case("ne-int-float", lambda m, a, b: a != b, ints, ties, shapes=BINARY, gradcheck=False),
    *(_binary(name, bools, bools, gradcheck=False) for name in LOGICAL),
    *(
        case(
            f"{name}-float",
            lambda m, a, b, n=name: getattr(m, n)(a, b),
            one_zero,
            real,
            shapes=BINARY,
            gradcheck=False,
        )
        for name in LOGICAL
    ),
    *(_binary(name, ints, ints, gradcheck=False) for name in BITWISE),
    *(
        case(
            f"{name}-bool",
            lambda m, a, b, n=name: getattr(m, n)(a, b),
            bools,
            bools,
            shapes=BINARY,
        )
        for name in BITWISE
    ),
    case(
        "bitwise_left_shift",
        lambda m, a, b: m.bitwise_left_shift(a, b),
        ints,
        small_ints,
        shapes=BINARY,
        gradcheck=False,
    ),
    case(
        "bitwise_right_shift",
        lambda m, a, b: m.bitwise_right_shift(a, b),
        ints,
        small_ints,
        shapes=BINARY,
        gradcheck=False,
    ),
    case("and-operator", lambda m, a, b: a & b, ints, ints, shapes=BINARY, gradcheck=False),
    case("xor-scalar", lambda m, a: a ^ 3, ints, gradcheck=False),
    case(
        "isclose",
        lambda m, a, b: m.isclose(a, a + b * 1e-6),
        real,
        real,
        shapes=BINARY,
        gradcheck=False,
    ),
    case(
        "isclose-tolerances",
        lambda m, a, b: m.isclose(a, b, rtol=0.5, atol=0.1),
        real,
        real,
        shapes=BINARY,
        gradcheck=False,
    ),
    case("isclose-nan", lambda m, a: m.isclose(a, a, equal_nan=True), nonfinite, gradcheck=False),
    case(
        "addcmul",
        lambda m, x, a, b: m.addcmul(x, a, b, value=0.5),
        real,
        real,
        real,
        shapes=TERNARY,
    ),
    case(
        "addcmul-default", lambda m, x, a, b: m.addcmul(x, a, b), real, real, real, shapes=TERNARY
    ),
    case(
        "addcdiv",
        lambda m, x, a, b: m.addcdiv(x, a, b, value=-2.0),
        real,
        real,
        nonzero,
        shapes=TERNARY,
    ),
]


def _np(function: Callable, **kwargs: object) -> Callable:
    """A NumPy reduction as reference; on a 0-d input, ``axis`` is dropped (as dim is)."""

    def reference(x: np.ndarray) -> np.ndarray:
        if x.ndim:
            return function(x, **kwargs)
        return function(x, **{k: v for k, v in kwargs.items() if k != "axis"})

    return reference


def _reduce(name: str, call: Callable, maker: Maker = real, **options) -> OpCase:
    return case(name, call, maker, shapes=options.pop("shapes", REDUCE), **options)


REDUCE = (((2, 3),), ((),), ((2, 3, 2),), ((4,),))  # for dim None, 0 or -1
REDUCE_2D = (((2, 3),), ((2, 3, 2),))  # for dim 1 and dim tuples

REDUCTION_CASES = [
    _reduce("sum", lambda m, x: m.sum(x), numpy=np.sum),
    _reduce("sum-dim", lambda m, x: m.sum(x, 0), numpy=_np(np.sum, axis=0)),
    _reduce("sum-negative-dim-keepdim", lambda m, x: m.sum(x, -1, keepdim=True)),
    _reduce("sum-tuple", lambda m, x: m.sum(x, (0, -1)), shapes=REDUCE_2D),
    _reduce("sum-empty", lambda m, x: m.sum(x, 1), shapes=(((0, 3),), ((2, 0),))),
    _reduce("mean-empty", lambda m, x: m.mean(x, 0), shapes=(((0, 3),), ((2, 0),))),
    _reduce("prod-empty", lambda m, x: m.prod(x, 0), shapes=(((0, 3),), ((2, 0),))),
    _reduce("logsumexp-empty", lambda m, x: m.logsumexp(x, 0), shapes=(((0, 3),),)),
    _reduce("cumsum-empty", lambda m, x: m.cumsum(x, 1), shapes=(((0, 3),), ((2, 0),))),
    _reduce("cumprod-empty", lambda m, x: m.cumprod(x, 1), shapes=(((0, 3),), ((2, 0),))),
    _reduce("amax-empty-rows", lambda m, x: m.amax(x, 1), shapes=(((0, 3),),)),
    _reduce("max-empty-rows", lambda m, x: m.max(x, 1), shapes=(((0, 3),),)),
    _reduce("sum-int", lambda m, x: m.sum(x, 0), ints, gradcheck=False),
    _reduce("sum-bool", lambda m, x: m.sum(x), bools, gradcheck=False),
    _reduce("sum-dtype", lambda m, x: m.sum(x, 0, dtype=m.float64), real),
    _reduce("sum-empty-dim-list", lambda m, x: m.sum(x, dim=[])),
    _reduce("mean-empty-dim-tuple", lambda m, x: m.mean(x, dim=(), keepdim=True)),
    _reduce("mean", lambda m, x: m.mean(x), numpy=np.mean),
    _reduce("mean-dim-keepdim", lambda m, x: m.mean(x, 0, keepdim=True)),
    _reduce("mean-tuple", lambda m, x: m.mean(x, (-1, 0)), shapes=REDUCE_2D),
    _reduce("mean-int-dtype", lambda m, x: m.mean(x, dtype=m.float32), ints, gradcheck=False),
    _reduce("prod", lambda m, x: m.prod(x), numpy=np.prod),
    _reduce("prod-dim", lambda m, x: m.prod(x, 1), shapes=REDUCE_2D, numpy=_np(np.prod, axis=1)),
    _reduce("prod-keepdim", lambda m, x: m.prod(x, -1, keepdim=True)),
    _reduce("prod-one-zero", lambda m, x: m.prod(x), one_zero, shapes=REDUCE[:1] + REDUCE[3:]),
    _reduce("prod-two-zeros", lambda m, x: m.prod(x), two_zeros, shapes=REDUCE[:1] + REDUCE[3:]),
    _reduce("prod-dim-one-zero", lambda m, x: m.prod(x, 1), one_zero, shapes=REDUCE[:1]),
    _reduce("prod-dim-two-zeros", lambda m, x: m.prod(x, 1), two_zeros, shapes=REDUCE[:1]),
    _reduce("prod-int", lambda m, x: m.prod(x, 0), ints, gradcheck=False),
    _reduce("amax", lambda m, x: m.amax(x), distinct, numpy=np.max),
    _reduce(
        "amax-dim", lambda m, x: m.amax(x, 1), distinct, shapes=REDUCE_2D, numpy=_np(np.max, axis=1)
    ),
    _reduce(
        "amin-tuple-keepdim",
        lambda m, x: m.amin(x, (0, 1), keepdim=True),
        distinct,
        shapes=REDUCE_2D,
    ),
    _reduce("amax-empty-dim-list", lambda m, x: m.amax(x, []), distinct),
    _reduce("amax-ties", lambda m, x: m.amax(x, 1), ties, shapes=REDUCE[:1], gradcheck=False),
    _reduce("amin-ties", lambda m, x: m.amin(x), ties, shapes=REDUCE[:1], gradcheck=False),
    _reduce("max-ties", lambda m, x: m.max(x), ties, shapes=REDUCE[:1], gradcheck=False),
    _reduce("max", lambda m, x: m.max(x), distinct, numpy=np.max),
    _reduce("min", lambda m, x: m.min(x), distinct),
    _reduce("max-dim", lambda m, x: m.max(x, 1), distinct, shapes=REDUCE_2D),
    _reduce("min-dim-keepdim", lambda m, x: m.min(x, 0, keepdim=True), distinct),
    _reduce("max-negative-dim", lambda m, x: m.max(x, -1), distinct),
    case("max-binary", lambda m, a, b: m.max(a, b), distinct, distinct, shapes=BINARY[:2]),
    _reduce("argmax", lambda m, x: m.argmax(x), distinct, gradcheck=False, numpy=np.argmax),
    _reduce("argmax-dim", lambda m, x: m.argmax(x, 1), distinct, gradcheck=False, shapes=REDUCE_2D),
    _reduce("argmin-keepdim", lambda m, x: m.argmin(x, 0, keepdim=True), distinct, gradcheck=False),
    _reduce("argmax-ties", lambda m, x: m.argmax(x, 1), ties, gradcheck=False, shapes=REDUCE[:1]),
    _reduce("aminmax", lambda m, x: tuple(m.aminmax(x, dim=0)), distinct),
    _reduce("median", lambda m, x: m.median(x), distinct),
    _reduce("median-dim", lambda m, x: m.median(x, 1), distinct, shapes=REDUCE_2D),
    _reduce("median-keepdim", lambda m, x: m.median(x, -1, keepdim=True), distinct),
    _reduce("median-empty", lambda m, x: m.median(x), shapes=(((0, 3),),)),
    _reduce(
        "median-nan", lambda m, x: m.median(x, 1), with_nan, shapes=REDUCE[:1], gradcheck=False
    ),
    _reduce(
        "median-nan-all", lambda m, x: m.median(x), with_nan, shapes=REDUCE[:1], gradcheck=False
    ),
    _reduce("median-int", lambda m, x: m.median(x, 0), ints, gradcheck=False),
    _reduce("nanmedian", lambda m, x: m.nanmedian(x, 0), distinct),
    _reduce(
        "nanmedian-nan",
        lambda m, x: m.nanmedian(x, 1),
        with_nan,
        shapes=REDUCE[:1],
        gradcheck=False,
    ),
    _reduce(
        "nanmedian-all-nan",
        lambda m, x: m.nanmedian(x * float("nan"), 1, keepdim=True),
        shapes=REDUCE[:1],
        gradcheck=False,
    ),
    _reduce("nanmedian-global", lambda m, x: m.nanmedian(x), with_nan, gradcheck=False),
    _reduce("quantile", lambda m, x: m.quantile(x, 0.3), distinct),
    _reduce(
        "quantile-q-dim",
        lambda m, x: m.quantile(x, m.tensor([0.0, 0.45, 1.0], dtype=x.dtype), 1),
        distinct,
        shapes=REDUCE_2D,
    ),
    _reduce(
        "quantile-keepdim-midpoint",
        lambda m, x: x.quantile(0.4, -1, keepdim=True, interpolation="midpoint"),
        distinct,
    ),
    _reduce("quantile-lower", lambda m, x: m.quantile(x, 0.6, interpolation="lower"), distinct),
    _reduce(
        "quantile-higher", lambda m, x: m.quantile(x, 0.6, 0, interpolation="higher"), distinct
    ),
    _reduce(
        "quantile-nearest",
        lambda m, x: m.quantile(x, m.tensor([0.25, 0.7], dtype=x.dtype), interpolation="nearest"),
        distinct,
    ),
    _reduce(
        "quantile-nan",
        lambda m, x: m.quantile(x, 0.5, 1),
        with_nan,
        shapes=REDUCE[:1],
        gradcheck=False,
    ),
    _reduce("nanquantile", lambda m, x: m.nanquantile(x, 0.3, 0), distinct),
    _reduce(
        "nanquantile-nan",
        lambda m, x: x.nanquantile(m.tensor([0.2, 0.9], dtype=x.dtype), 1, keepdim=True),
        with_nan,
        shapes=REDUCE[:1],
        gradcheck=False,
    ),
    _reduce(
        "nanquantile-all-nan",
        lambda m, x: m.nanquantile(x * float("nan"), 0.5, 1),
        shapes=REDUCE[:1],
        gradcheck=False,
    ),
    _reduce("mode", lambda m, x: m.mode(x), ties, shapes=(((2, 6),), ((6,),)), gradcheck=False),
    _reduce("mode-dim-keepdim", lambda m, x: m.mode(x, 0, keepdim=True), distinct),
    _reduce("mode-int", lambda m, x: m.mode(x, 1), ints, shapes=(((3, 8),),), gradcheck=False),
    _reduce("cummax", lambda m, x: m.cummax(x, 1), distinct, shapes=REDUCE_2D),
    _reduce("cummin", lambda m, x: m.cummin(x, 0), distinct),
    _reduce("cummax-ties", lambda m, x: m.cummax(x, 1), ties, shapes=(((2, 6),),), gradcheck=False),
    _reduce("cummin-ties", lambda m, x: m.cummin(x, -1), ties, shapes=(((6,),),), gradcheck=False),
    _reduce(
        "cummax-nan",
        lambda m, x: m.cummax(x, 0),
        with_values(real, {1: np.nan, 3: np.nan}),
        shapes=(((6,),),),
        gradcheck=False,
    ),
    _reduce("cummin-int", lambda m, x: m.cummin(x, 0), ints, gradcheck=False),
    _reduce("cummax-empty", lambda m, x: m.cummax(x, 1), shapes=(((0, 3),), ((2, 0),))),
    _reduce(
        "logcumsumexp",
        lambda m, x: m.logcumsumexp(x, 1),
        shapes=REDUCE_2D,
        numpy=lambda x: np.logaddexp.accumulate(x, 1),
    ),
    _reduce("logcumsumexp-dim0", lambda m, x: m.logcumsumexp(x, 0)),
    _reduce(
        "logcumsumexp-large",
        lambda m, x: m.logcumsumexp(x * 500, -1),
        shapes=REDUCE_2D + REDUCE[3:],
    ),
    _reduce(  # NaN gradients at the -inf inputs, as PyTorch's; gradcheck needs finite ones
        "logcumsumexp-neg-inf",
        lambda m, x: m.logcumsumexp(x, 1),
        neg_inf,
        shapes=REDUCE[:1],
        gradcheck=False,
    ),
    _reduce("logcumsumexp-empty", lambda m, x: m.logcumsumexp(x, 1), shapes=(((0, 3),), ((2, 0),))),
    _reduce(
        "trace", lambda m, x: m.trace(x), shapes=(((2, 3),), ((3, 3),), ((0, 2),)), numpy=np.trace
    ),
    _reduce("trace-int", lambda m, x: m.trace(x.int()), ints, shapes=(((3, 2),),), gradcheck=False),
    _reduce("diff", lambda m, x: m.diff(x), shapes=(((2, 3),), ((4,),), ((2, 3, 2),), ((0, 3),))),
    _reduce("diff-n2-dim0", lambda m, x: m.diff(x, 2, 0), shapes=(((4, 3),),)),
    _reduce("diff-n-past-size", lambda m, x: m.diff(x, n=5), shapes=(((2, 3),),)),
    _reduce("diff-bool", lambda m, x: m.diff(x), bools, shapes=(((2, 5),),), gradcheck=False),
    case(
        "diff-prepend-append",
        lambda m, x, p, a: m.diff(x, dim=0, prepend=p, append=a),
        real,
        real,
        real,
        shapes=(((2, 3), (1, 3), (2, 3)),),
    ),
    *(
        _reduce(
            f"var-correction-{c}",
            lambda m, x, c=c: m.var(x, 1, correction=c),
            shapes=(((2, 4),), ((3, 3, 2),)),
            numpy=lambda x, c=c: np.var(x, 1, ddof=c),
        )
        for c in (0, 1, 2)
    ),
    *(
        _reduce(
            f"std-correction-{c}",
            lambda m, x, c=c: m.std(x, 1, correction=c),
            shapes=(((2, 4),), ((3, 3, 2),)),
            numpy=lambda x, c=c: np.std(x, 1, ddof=c),
        )
        for c in (0, 1, 2)
    ),
    _reduce("var", lambda m, x: m.var(x), shapes=REDUCE[:1] + REDUCE[2:]),
    _reduce("var-positional-dim", lambda m, x: m.var(x, 0), shapes=REDUCE[:1] + REDUCE[2:]),
    _reduce("var-unbiased-false", lambda m, x: m.var(x, 1, False), shapes=REDUCE[:1]),
    _reduce("var-positional-unbiased", lambda m, x: m.var(x, False), shapes=REDUCE[:1]),
    _reduce("std-positional-unbiased", lambda m, x: m.std(x, True), shapes=REDUCE[:1]),
    _reduce(  # PyTorch's own gradient is inf here: its backward takes dim=[] as no dims
        "std-empty-dim-list",
        lambda m, x: m.std(x, dim=[]),
        shapes=REDUCE_2D,
        torch_grad=False,
    ),
    _reduce("std-tuple-keepdim", lambda m, x: m.std(x, (0, 2), keepdim=True), shapes=REDUCE[2:3]),
    _reduce("var_mean", lambda m, x: tuple(m.var_mean(x, 1)), shapes=REDUCE[:1]),
    _reduce("std_mean", lambda m, x: tuple(m.std_mean(x, 0, correction=0)), shapes=REDUCE[:1]),
    _reduce(
        "logsumexp",
        lambda m, x: m.logsumexp(x, 1),
        shapes=REDUCE_2D,
        numpy=lambda x: np.log(np.exp(x).sum(1)),
    ),
    _reduce("logsumexp-tuple", lambda m, x: m.logsumexp(x, (0, 1)), shapes=REDUCE[:1]),
    _reduce("logsumexp-keepdim", lambda m, x: m.logsumexp(x, -1, keepdim=True)),
    _reduce("logsumexp-large", lambda m, x: m.logsumexp(x * 500, 0)),
    _reduce("logsumexp-neg-inf", lambda m, x: m.logsumexp(x, 1), neg_inf, shapes=REDUCE[:1]),
    _reduce(
        "logsumexp-all-neg-inf",
        lambda m, x: m.logsumexp(x - float("inf"), 1),
        real,
        shapes=REDUCE[:1],
        gradcheck=False,
    ),
    _reduce("logsumexp-int", lambda m, x: m.logsumexp(x, 0), ints, gradcheck=False),
    _reduce(
        "cumsum",
        lambda m, x: m.cumsum(x, 0),
        numpy=lambda x: np.cumsum(x, 0) if x.ndim else x.copy(),
    ),
    _reduce("cumsum-last", lambda m, x: m.cumsum(x, -1)),
    _reduce("cumsum-int", lambda m, x: m.cumsum(x, 0), ints, gradcheck=False),
    _reduce("cumsum-dtype", lambda m, x: m.cumsum(x, 0, dtype=m.float64), ints, gradcheck=False),
    _reduce(
        "cumprod", lambda m, x: m.cumprod(x, 1), shapes=REDUCE_2D, numpy=_np(np.cumprod, axis=1)
    ),
    _reduce("cumprod-first", lambda m, x: m.cumprod(x, 0)),
    _reduce("cumprod-one-zero", lambda m, x: m.cumprod(x, 1), one_zero, shapes=REDUCE[:1]),
    _reduce(
        "cumprod-two-zeros", lambda m, x: m.cumprod(x, -1), two_zeros, shapes=(((2, 3),), ((4,),))
    ),
    _reduce("cumprod-int", lambda m, x: m.cumprod(x, 0), ints, gradcheck=False),
    _reduce("all", lambda m, x: m.all(x), bools, gradcheck=False, numpy=np.all),
    _reduce("all-dim", lambda m, x: m.all(x, 0), bools, gradcheck=False),
    _reduce("all-empty-dims", lambda m, x: m.all(x, ()), bools, gradcheck=False),
    _reduce("all-uint8", lambda m, x: m.all(x.to(m.uint8), 0), small_ints, gradcheck=False),
    _reduce("any-uint8", lambda m, x: m.any(x.to(m.uint8)), small_ints, gradcheck=False),
    _reduce(
        "any-float-keepdim", lambda m, x: m.any(x, -1, keepdim=True), one_zero, gradcheck=False
    ),
    _reduce("any-int", lambda m, x: m.any(x), ints, gradcheck=False),
    _reduce(
        "count_nonzero",
        lambda m, x: m.count_nonzero(x),
        ints,
        gradcheck=False,
        numpy=np.count_nonzero,
    ),
    _reduce("count_nonzero-dim", lambda m, x: m.count_nonzero(x, 0), two_zeros, gradcheck=False),
    _reduce(
        "count_nonzero-tuple",
        lambda m, x: m.count_nonzero(x, (0, 1)),
        two_zeros,
        gradcheck=False,
        shapes=REDUCE_2D,
    ),
    _reduce("nansum", lambda m, x: m.nansum(x), with_nan, numpy=np.nansum),
    _reduce("nansum-dim", lambda m, x: m.nansum(x, 1), with_nan, shapes=REDUCE_2D),
    _reduce("nansum-int", lambda m, x: m.nansum(x, 0), ints),
    _reduce("nanmean", lambda m, x: m.nanmean(x), with_nan, numpy=np.nanmean),
    _reduce("nanmean-dim-keepdim", lambda m, x: m.nanmean(x, 0, keepdim=True), with_nan),
    case(
        "histc",
        lambda m, x: m.histc(x, bins=4, min=-1.5, max=1.5),
        real,
        shapes=(((2, 3),), ((0, 3),), ((5,),)),
        gradcheck=False,
        torch_grad=False,
    ),
    case(
        "histc-data-range-method",
        lambda m, x: x.histc(bins=3),
        real,
        shapes=(((2, 3),), ((0, 3),), ((1,),)),
        gradcheck=False,
        torch_grad=False,
    ),
    case(
        "bincount",
        lambda m, x: m.bincount(x, minlength=6),
        small_ints,
        shapes=(((7,),), ((0,),)),
        gradcheck=False,
        numpy=lambda x: np.bincount(x, minlength=6),
    ),
    case(
        "bincount-weights-method",
        lambda m, x, w: x.bincount(w),
        small_ints,
        real,
        shapes=(((7,), (7,)),),
        gradcheck=False,
        torch_grad=False,
    ),
    case("renorm", lambda m, x: m.renorm(x, 2, 0, 1.0), real, shapes=(((3, 4),), ((2, 3, 2),))),
    case("renorm-p1-dim1", lambda m, x: m.renorm(x, 1, 1, 1.5), nonzero, shapes=(((3, 4),),)),
    case(
        "renorm-inf-method",
        lambda m, x: x.renorm(float("inf"), -1, 0.5),
        distinct,
        shapes=(((4, 3),),),
    ),
]


def _shape(name: str, call: Callable, shapes: tuple = ((2, 3),), **options) -> OpCase:
    maker = options.pop("maker", real)
    return case(name, call, maker, shapes=tuple((s,) for s in shapes), **options)


SHAPE_CASES = [
    *(
        _shape(f"rot90-{k}", lambda m, x, k=k: m.rot90(x, k), ((2, 3), (2, 3, 2)))
        for k in (0, 1, 2, 3, -1, 5)
    ),
    _shape("rot90-dims", lambda m, x: m.rot90(x, 1, [2, 0]), ((2, 3, 4),)),
    _shape("rot90-method", lambda m, x: x.rot90(-1, (-1, 0)), ((2, 3),)),
    case(
        "meshgrid-ij",
        lambda m, a, b, c: m.meshgrid(a, b, c, indexing="ij"),
        real,
        real,
        real,
        shapes=(((2,), (3,), (4,)), ((2,), (), (0,))),
    ),
    case(
        "meshgrid-xy",
        lambda m, a, b, c: m.meshgrid([a, b, c], indexing="xy"),
        real,
        real,
        real,
        shapes=(((2,), (3,), (4,)),),
    ),
    case("meshgrid-one", lambda m, a: m.meshgrid(a, indexing="xy"), real, shapes=(((3,),),)),
    *(
        case(
            f"{name}-{row}x{col}{offset:+d}",
            lambda m, name=name, row=row, col=col, offset=offset: getattr(m, name)(
                row, col, offset
            ),
            shapes=((),),
        )
        for name in ("tril_indices", "triu_indices")
        for row, col, offset in ((3, 4, 0), (3, 4, 1), (4, 2, -1), (0, 3, 0), (3, 3, 9))
    ),
    case(
        "tril_indices-dtype",
        lambda m: m.tril_indices(3, 3, dtype=m.int32),
        shapes=((),),
    ),
    _shape("reshape", lambda m, x: m.reshape(x, (3, 2)), numpy=lambda x: x.reshape(3, 2)),
    _shape("reshape-infer", lambda m, x: x.reshape(-1, 2), ((2, 3, 2), (4,))),
    _shape("reshape-flat", lambda m, x: x.reshape(-1), ((2, 3), (), (0, 3))),
    _shape("reshape-scalar", lambda m, x: x.reshape(()), ((), (1, 1))),
    _shape("view", lambda m, x: x.view(3, 2), strided=False),
    _shape("view-infer", lambda m, x: x.view(-1, 3), ((2, 3), (0, 3)), strided=False),
    _shape("view_as", lambda m, x: x.view_as(x.t()), strided=False),
    _shape("flatten", lambda m, x: m.flatten(x), ((2, 3, 2), (), (4,))),
    _shape("flatten-range", lambda m, x: m.flatten(x, 1, 2), ((2, 3, 2),)),
    _shape("flatten-negative", lambda m, x: m.flatten(x, -2), ((2, 3, 2),)),
    _shape("unflatten", lambda m, x: m.unflatten(x, 1, (2, -1)), ((2, 4),)),
    _shape("squeeze", lambda m, x: m.squeeze(x), ((1, 3, 1), (), (2, 3))),
    _shape("squeeze-dim", lambda m, x: m.squeeze(x, -1), ((2, 1), (2, 3))),
    _shape("squeeze-tuple", lambda m, x: m.squeeze(x, (0, 2)), ((1, 3, 1),)),
    _shape("unsqueeze", lambda m, x: m.unsqueeze(x, 0), ((2, 3), ())),
    _shape("unsqueeze-last", lambda m, x: m.unsqueeze(x, -1), ((2, 3), ())),
    _shape(
        "permute",
        lambda m, x: m.permute(x, (2, 0, 1)),
        ((2, 3, 2),),
        numpy=lambda x: x.transpose(2, 0, 1),
    ),
    _shape("permute-method", lambda m, x: x.permute(1, -1, 0), ((2, 3, 2),)),
    _shape("transpose", lambda m, x: m.transpose(x, 0, -1), ((2, 3), (2, 3, 2))),
    _shape("swapaxes", lambda m, x: m.swapaxes(x, 0, 1)),
    _shape("t", lambda m, x: m.t(x), ((2, 3), (4,), ())),
    _shape("T-property", lambda m, x: x.T, ((2, 3),)),
    _shape("mT", lambda m, x: x.mT, ((2, 3), (2, 3, 2))),
    _shape("movedim", lambda m, x: m.movedim(x, 0, -1), ((2, 3, 2),)),
    _shape("movedim-tuple", lambda m, x: m.movedim(x, (0, 1), (2, 0)), ((2, 3, 2),)),
    _shape("moveaxis", lambda m, x: m.moveaxis(x, -1, 0)),
    _shape("expand", lambda m, x: x.expand(3, 4), ((3, 1), (1, 4), ())),
    _shape("expand-keep", lambda m, x: x.expand(2, -1, 4), ((3, 1),)),
    _shape("expand_as", lambda m, x: x.expand_as(m.ones(2, 3, dtype=x.dtype)), ((3,), ())),
    _shape("broadcast_to", lambda m, x: m.broadcast_to(x, (2, 3, 4)), ((3, 1), (4,))),
    _shape("narrow", lambda m, x: m.narrow(x, 1, 1, 2)),
    _shape("narrow-negative-start", lambda m, x: m.narrow(x, -1, -2, 2)),
    _shape("narrow-empty", lambda m, x: m.narrow(x, 0, 2, 0)),
    *(
        _shape(
            f"diagonal-offset-{k}",
            lambda m, x, k=k: m.diagonal(x, k),
            ((3, 3), (2, 4)),
            numpy=lambda x, k=k: np.diagonal(x, k),
        )
        for k in (0, 1, -1, 2)
    ),
    _shape("diagonal-dims", lambda m, x: m.diagonal(x, 1, 0, 2), ((2, 3, 3),)),
    _shape("diagonal-dims-reversed", lambda m, x: m.diagonal(x, 1, -1, 0), ((3, 2, 3),)),
    _shape("split", lambda m, x: m.split(x, 2, 1), ((2, 5), (2, 3))),
    _shape("split-sizes", lambda m, x: m.split(x, [1, 3, 1], dim=-1), ((2, 5),)),
    _shape("split-method", lambda m, x: x.split(1), ((2, 3),)),
    _shape("chunk", lambda m, x: m.chunk(x, 3, 1), ((2, 5), (2, 6), (2, 2))),
    _shape("chunk-empty", lambda m, x: m.chunk(x, 2), ((0, 3),)),
    _shape("tensor_split", lambda m, x: m.tensor_split(x, 3, 1), ((2, 5), (2, 2))),
    _shape("tensor_split-indices", lambda m, x: m.tensor_split(x, [1, 3], dim=1), ((2, 5),)),
    _shape("tensor_split-negative", lambda m, x: m.tensor_split(x, [-2], dim=1), ((2, 5),)),
    _shape("tensor_split-decreasing", lambda m, x: m.tensor_split(x, [3, 1], dim=1), ((2, 5),)),
    _shape("unbind", lambda m, x: m.unbind(x, 1), ((2, 3),)),
    _shape("unbind-first", lambda m, x: m.unbind(x), ((3, 2), (3,))),
    case(
        "cat",
        lambda m, a, b: m.cat([a, b], 1),
        real,
        real,
        shapes=(((2, 3), (2, 1)), ((2, 0), (2, 2))),
    ),
    case(
        "cat-three",
        lambda m, a, b, c: m.cat((a, b, c)),
        real,
        real,
        real,
        shapes=(((1, 3), (2, 3), (1, 3)), ((2,), (0,), (1,))),
    ),
    case(
        "cat-negative-dim",
        lambda m, a, b: m.cat([a, b], -1),
        real,
        real,
        shapes=(((2, 3, 1), (2, 3, 2)),),
    ),
    case("cat-skips-empty-1d", lambda m, a, b: m.cat([a, b]), real, real, shapes=(((2, 3), (0,)),)),
    case(
        "cat-promotes",
        lambda m, a, b: m.cat([a, b.double()]),
        real,
        real,
        shapes=(((2, 3), (1, 3)),),
    ),
    case("cat-int-float", lambda m, a, b: m.cat([a, b]), ints, real, shapes=(((2, 3), (1, 3)),)),
    case("concat", lambda m, a, b: m.concat([a, b]), real, real, shapes=(((2, 3), (1, 3)),)),
    case(
        "stack",
        lambda m, a, b: m.stack([a, b]),
        real,
        real,
        shapes=(((2, 3), (2, 3)), ((), ()), ((0,), (0,))),
    ),
    case(
        "stack-dim", lambda m, a, b: m.stack([a, b], dim=-1), real, real, shapes=(((2, 3), (2, 3)),)
    ),
    case(
        "hstack",
        lambda m, a, b: m.hstack([a, b]),
        real,
        real,
        shapes=(((2, 3), (2, 1)), ((3,), (2,)), ((), ())),
    ),
    case(
        "vstack",
        lambda m, a, b: m.vstack([a, b]),
        real,
        real,
        shapes=(((2, 3), (1, 3)), ((3,), (3,)), ((), ())),
    ),
    _shape("repeat", lambda m, x: x.repeat(2, 1), ((2, 3),)),
    _shape("repeat-new-dims", lambda m, x: x.repeat(2, 1, 2), ((2, 3), (3,), ())),
    _shape("tile", lambda m, x: m.tile(x, (2,)), ((2, 3), (3,)), numpy=lambda x: np.tile(x, 2)),
    _shape("tile-new-dims", lambda m, x: m.tile(x, (2, 1, 1)), ((2, 3),)),
    _shape(
        "repeat_interleave",
        lambda m, x: m.repeat_interleave(x, 2, 1),
        ((2, 3),),
        numpy=lambda x: np.repeat(x, 2, 1),
    ),
    _shape("repeat_interleave-flat", lambda m, x: m.repeat_interleave(x, 2), ((2, 3), ())),
    case(
        "repeat_interleave-counts",  # one argument: index i repeated counts[i] times
        lambda m, r: m.repeat_interleave(r),
        indices(3),
        shapes=(((4,),), ((0,),)),
        gradcheck=False,
    ),
    case(
        "repeat_interleave-tensor",
        lambda m, x, r: m.repeat_interleave(x, r, dim=0),
        real,
        small_ints,
        shapes=(((3, 2), (3,)), ((3, 2), (1,)), ((3, 2), ())),
    ),
    _shape(
        "flip",
        lambda m, x: m.flip(x, (0, 1)),
        ((2, 3), (2, 3, 2)),
        numpy=lambda x: np.flip(x, (0, 1)),
    ),
    _shape("flip-one", lambda m, x: x.flip(-1), ((2, 3), (4,))),
    _shape("flip-method-varargs", lambda m, x: x.flip(0, 1), ((2, 3),)),
    _shape("flip-dims-keyword", lambda m, x: m.flip(x, dims=(0, -1))),
    _shape("tile-method-varargs", lambda m, x: x.tile(2, 1), ((2, 3), (3,))),
    _shape("fliplr", lambda m, x: m.fliplr(x)),
    _shape("flipud", lambda m, x: m.flipud(x)),
    _shape("roll", lambda m, x: m.roll(x, 1, 1), ((2, 3),), numpy=lambda x: np.roll(x, 1, 1)),
    _shape("roll-flat", lambda m, x: m.roll(x, -2), ((2, 3), (4,))),
    _shape("roll-tuple", lambda m, x: m.roll(x, (1, -1), (0, 1)), ((2, 3),)),
    *(
        _shape(
            f"tril-{k}",
            lambda m, x, k=k: m.tril(x, k),
            ((3, 3), (2, 4), (2, 2, 3)),
            numpy=lambda x, k=k: np.tril(x, k),
        )
        for k in (0, 1, -1)
    ),
    *(
        _shape(f"triu-{k}", lambda m, x, k=k: m.triu(x, k), ((3, 3), (2, 4), (2, 2, 3)))
        for k in (0, 2, -1)
    ),
    *(
        _shape(f"diag-{k}", lambda m, x, k=k: m.diag(x, k), ((3,), (3, 3), (2, 4)))
        for k in (0, 1, -1)
    ),
    _shape("diag_embed", lambda m, x: m.diag_embed(x), ((3,), (2, 3))),
    _shape("diag_embed-offset", lambda m, x: m.diag_embed(x, 1), ((2, 3),)),
    _shape("diag_embed-negative-offset", lambda m, x: m.diag_embed(x, -1, 0, 2), ((2, 3),)),
    _shape("diag_embed-reversed-dims", lambda m, x: m.diag_embed(x, 1, -1, -2), ((2, 3),)),
    _shape("atleast_2d", lambda m, x: m.atleast_2d(x), ((3,), ())),
]


def _through_view(view: Callable) -> Callable:
    """A function of (base, value): multiply, in place, a view of a copy of ``base``."""

    def call(m: object, base: object, value: object) -> object:
        out = base * 1
        view(out).mul_(value)
        return out

    return call


MATMUL_CASES = [
    case(
        "tensordot-dims-0d-tensor",
        lambda m, a, b: m.tensordot(a, b, dims=m.tensor(1)),
        real,
        real,
        shapes=(((2, 3), (3, 4)),),
    ),
    case(
        "tensordot-dims-tensor-lists",
        lambda m, a, b: m.tensordot(a, b, dims=m.tensor([[0], [1]])),
        real,
        real,
        shapes=(((3, 2), (4, 3)),),
    ),
    case(
        "addmm",
        lambda m, x, a, b: m.addmm(x, a, b),
        real,
        real,
        real,
        shapes=(((2, 4), (2, 3), (3, 4)), ((4,), (2, 3), (3, 4)), ((), (2, 0), (0, 4))),
    ),
    case(
        "addmm-beta-alpha",
        lambda m, x, a, b: m.addmm(x, a, b, beta=0.5, alpha=-2.0),
        real,
        real,
        real,
        shapes=(((2, 4), (2, 3), (3, 4)),),
    ),
    case(  # beta=0 ignores the input, NaN included; PyTorch still gives it a zero gradient
        "addmm-beta-zero",
        lambda m, x, a, b: m.addmm(x, a, b, beta=0),
        nonfinite,
        real,
        real,
        shapes=(((2, 4), (2, 3), (3, 4)),),
        torch_grad=False,
        gradcheck=False,
    ),
    case(
        "addmm-method",
        lambda m, x, a, b: x.addmm(a, b, alpha=3),
        real,
        real,
        real,
        shapes=(((2, 4), (2, 3), (3, 4)),),
    ),
    case(
        "addmv",
        lambda m, x, a, v: m.addmv(x, a, v, beta=2.0),
        real,
        real,
        real,
        shapes=(((2,), (2, 3), (3,)), ((), (2, 3), (3,))),
    ),
    case(
        "addbmm",
        lambda m, x, a, b: m.addbmm(x, a, b, alpha=0.5),
        real,
        real,
        real,
        shapes=(((2, 4), (3, 2, 2), (3, 2, 4)),),
    ),
    case(
        "baddbmm",
        lambda m, x, a, b: m.baddbmm(x, a, b, beta=-1.0),
        real,
        real,
        real,
        shapes=(((3, 2, 4), (3, 2, 2), (3, 2, 4)), ((1, 4), (3, 2, 2), (3, 2, 4))),
    ),
    case(
        "kron",
        lambda m, a, b: m.kron(a, b),
        real,
        real,
        shapes=(((2, 3), (2, 2)), ((2,), (3,)), ((2, 1, 2), (3, 2)), ((), (2,)), ((0, 2), (2,))),
        numpy=np.kron,
    ),
    case(
        "cross",
        lambda m, a, b: m.cross(a, b, dim=-1),
        real,
        real,
        shapes=(((2, 3), (2, 3)), ((1, 3), (4, 3)), ((3,), (3,))),
        numpy=lambda a, b: np.cross(a, b),
    ),
    case(
        "cross-default-dim",
        lambda m, a, b: m.cross(a, b),
        real,
        real,
        shapes=(((2, 3, 3), (2, 3, 3)),),
        torch_call=lambda m, a, b: m.cross(a, b, dim=1),
    ),
    case(
        "cross-method-dim0",
        lambda m, a, b: a.cross(b, dim=0),
        real,
        real,
        shapes=(((3, 2), (3, 2)),),
    ),
    case("det", lambda m, a: m.det(a), real, shapes=(((3, 3),), ((2, 2, 2),))),
    case("det-method", lambda m, a: a.det(), real, shapes=(((2, 2),),)),
    case(
        "inverse",
        lambda m, a: m.inverse(a + 3 * m.eye(3, dtype=a.dtype)),
        real,
        shapes=(((3, 3),), ((2, 3, 3),)),
    ),
    case(
        "inverse-method",
        lambda m, a: (a + 2 * m.eye(2, dtype=a.dtype)).inverse(),
        real,
        shapes=(((2, 2),),),
    ),
    case(
        "inner",
        lambda m, a, b: m.inner(a, b),
        real,
        real,
        shapes=(((2, 3), (4, 3)), ((3,), (3,)), ((2, 3), (2, 2, 3)), ((), (2, 3)), ((2, 0), (0,))),
    ),
    case("inner-method", lambda m, a, b: a.inner(b), real, real, shapes=(((3,), (2, 3)),)),
    case(
        "addr",
        lambda m, x, a, b: m.addr(x, a, b, beta=0.5, alpha=-2.0),
        real,
        real,
        real,
        shapes=(((2, 3), (2,), (3,)), ((1, 3), (2,), (3,)), ((), (2,), (3,))),
    ),
    case(
        "addr-method",
        lambda m, x, a, b: x.addr(a, b),
        real,
        real,
        real,
        shapes=(((2, 3), (2,), (3,)),),
    ),
    case("slogdet", lambda m, a: m.slogdet(a).logabsdet, real, shapes=(((3, 3),), ((2, 2, 2),))),
    case(
        "logdet-method",
        lambda m, a: (a @ a.mT + m.eye(3, dtype=a.dtype)).logdet(),
        real,
        shapes=(((3, 3),),),
    ),
    case(
        "cholesky-upper",
        lambda m, a: m.cholesky(a @ a.mT + m.eye(3, dtype=a.dtype), upper=True),
        real,
        shapes=(((3, 3),), ((2, 3, 3),)),
    ),
    case("pinverse-method", lambda m, a: a.pinverse(), real, shapes=(((3, 2),),)),
    case(
        "svd",  # S and U V^H, which the singular vectors' signs leave alone
        lambda m, a: (lambda r: (r.S, r.U @ r.V.mH))(m.svd(a)),
        real,
        shapes=(((3, 2),), ((2, 2, 3),)),
        atol=1e-5,  # float32 gradients through the SVD differ from torch's LAPACK by ~3e-6
    ),
    case(
        "svd-method-full",
        lambda m, a: (lambda r: (r.S, r.U[..., :2] @ r.V.mH))(a.svd(some=False)),
        real,
        shapes=(((3, 2),),),
    ),
    case(
        "svd-no-uv",
        lambda m, a: tuple(m.svd(a, compute_uv=False)),
        real,
        shapes=(((3, 2),),),
        gradcheck=False,
    ),
    case("svd-no-uv-S", lambda m, a: m.svd(a, compute_uv=False).S, real, shapes=(((3, 2),),)),
    case("qr", lambda m, a: tuple(m.qr(a)), real, shapes=(((3, 2),), ((2, 2, 3),))),
    case("qr-method-complete", lambda m, a: tuple(a.qr(some=False)), real, shapes=(((2, 3),),)),
    case(
        "cholesky_solve",
        lambda m, b, a: m.cholesky_solve(b, a.tril() + 3 * m.eye(3, dtype=a.dtype)),
        real,
        real,
        shapes=(((3, 2), (3, 3)), ((2, 1, 3, 2), (2, 3, 3))),
    ),
    case(
        "cholesky_solve-method-upper",
        lambda m, b, a: b.cholesky_solve(a.triu() + 3 * m.eye(3, dtype=a.dtype), upper=True),
        real,
        real,
        shapes=(((3, 2), (3, 3)),),
    ),
    case(
        "lu_solve",
        lambda m, b, a: (lambda f: m.lu_solve(b, f.LU, f.pivots))(m.linalg.lu_factor(a)),
        real,
        real,
        shapes=(((3, 2), (3, 3)), ((2, 3, 1), (2, 3, 3))),
    ),
    case(
        "lu_solve-method",
        lambda m, b, a: (lambda f: b.lu_solve(f.LU, f.pivots))(m.linalg.lu_factor(a)),
        real,
        real,
        shapes=(((3, 2), (3, 3)),),
    ),
    case(
        "cholesky_inverse",
        lambda m, a: m.cholesky_inverse(a.tril() + 3 * m.eye(3, dtype=a.dtype)),
        real,
        shapes=(((3, 3),), ((2, 3, 3),)),
    ),
    case(
        "cholesky_inverse-method-upper",
        lambda m, a: (a.triu() + 3 * m.eye(3, dtype=a.dtype)).cholesky_inverse(True),
        real,
        shapes=(((3, 3),),),
    ),
    case("matrix_power", lambda m, a: m.matrix_power(a, 3), real, shapes=(((2, 2),), ((2, 3, 3),))),
    case(
        "matrix_power-method-neg",
        lambda m, a: (a + 3 * m.eye(2, dtype=a.dtype)).matrix_power(-2),
        real,
        shapes=(((2, 2),),),
    ),
    case("matrix_exp-method", lambda m, a: a.matrix_exp(), real, shapes=(((2, 2),), ((2, 3, 3),))),
]

VIEW_WRITE_CASES = [
    case(
        f"{name}-write-through",
        _through_view(view),
        real,
        real,
        shapes=(shapes,),
        strided=name != "view",  # view() needs a contiguous base
    )
    for name, view, shapes in [
        ("diagonal", lambda t: t.diagonal(), ((3, 3), (3,))),
        ("diagonal-offset", lambda t: t.diagonal(1), ((3, 4), (3,))),
        ("narrow", lambda t: t.narrow(1, 1, 2), ((2, 3), (2, 2))),
        ("t", lambda t: t.t(), ((2, 3), (3, 2))),
        ("select", lambda t: t[1], ((2, 3), (3,))),
        ("slice-step", lambda t: t[:, ::2], ((2, 3), (2, 2))),
        ("view", lambda t: t.view(3, 2), ((2, 3), (3, 2))),
        ("unsqueeze", lambda t: t.unsqueeze(0), ((2, 3), (1, 2, 3))),
        ("permute", lambda t: t.permute(1, 0), ((2, 3), (3, 1))),
    ]
]


def _setitem(index: object) -> Callable:
    """A function of (base, value) that writes ``value`` into a copy of ``base`` at ``index``."""

    def call(m: object, base: object, value: object) -> object:
        out = base * 1
        out[index] = value
        return out

    return call


def _setitem_mask(m: object, base: object, mask: object, value: object) -> object:
    out = base * 1
    out[mask] = value
    return out


INDEXING_CASES = [
    _shape("getitem-int", lambda m, x: x[1], ((2, 3), (3,))),
    case(
        "searchsorted-out_int32",
        lambda m, s, v: m.searchsorted(m.sort(s).values, v, out_int32=True),
        real,
        real,
        shapes=(((5,), (3,)), ((2, 5), (2, 3))),
        gradcheck=False,
        torch_grad=False,
    ),
    case(
        "bucketize-out_int32",
        lambda m, v, s: m.bucketize(v, m.sort(s).values, out_int32=True, right=True),
        real,
        real,
        shapes=(((2, 3), (5,)),),
        gradcheck=False,
        torch_grad=False,
    ),
    _shape("getitem-negative-int", lambda m, x: x[-1, -2]),
    _shape("getitem-slice", lambda m, x: x[:, 1:3]),
    _shape("getitem-step", lambda m, x: x[::2, 1::2], ((3, 5),)),
    _shape("getitem-none-ellipsis", lambda m, x: x[None, ..., 1], ((2, 3), (2, 2, 3))),
    _shape("getitem-ellipsis-middle", lambda m, x: x[0, ..., None, 1:], ((2, 3, 2),)),
    _shape("getitem-empty-slice", lambda m, x: x[2:1]),
    _shape("getitem-list", lambda m, x: x[[0, 1, 1]], ((2, 3),)),
    _shape("getitem-two-lists", lambda m, x: x[[0, 1], [2, 0]], ((2, 3),)),
    _shape("getitem-list-and-slice", lambda m, x: x[1:, [2, 0, 2]], ((2, 3),)),
    case(
        "getitem-tensor-index",
        lambda m, x, i: x[i],
        real,
        indices(2),
        shapes=(((2, 3), (4,)), ((2, 3), (2, 2)), ((2, 3), ())),
    ),
    case(
        "getitem-tensor-index-dim1",
        lambda m, x, i: x[:, i],
        real,
        indices(3),
        shapes=(((2, 3), (4,)),),
    ),
    case(
        "getitem-mask",
        lambda m, x, mask: x[mask],
        real,
        bools,
        shapes=(((2, 3), (2, 3)), ((2, 3), (2,)), ((0, 3), (0, 3))),
    ),
    case("getitem-mask-scalar", lambda m, x: x[True], real, shapes=(((2, 3),), ((),))),
    case("setitem-int", _setitem(1), real, real, shapes=(((2, 3), (3,)), ((2, 3), ()))),
    case(
        "setitem-slice",
        _setitem((slice(None), slice(0, 2))),
        real,
        real,
        shapes=(((2, 3), (2, 2)), ((2, 3), (1, 2)), ((2, 3), ())),
    ),
    case("setitem-broadcast", _setitem(slice(0, 2)), real, real, shapes=(((3, 3), (3,)),)),
    case(
        "setitem-list",
        _setitem(([0, 1], [2, 0])),
        real,
        real,
        shapes=(((2, 3), (2,)), ((2, 3), ())),
    ),
    case("setitem-list-rows", _setitem([1, 0]), real, real, shapes=(((2, 3), (3,)),)),
    case("setitem-mask", _setitem_mask, real, bools, real, shapes=(((2, 3), (2, 3), ()),)),
    # PyTorch applies ints before arrays: a slice between them does not move the array dims.
    _shape("getitem-int-slice-list", lambda m, x: x[1, :, [2, 0]], ((2, 3, 4),)),
    case(
        "setitem-int-slice-list",
        _setitem((1, slice(None), [2, 0])),
        real,
        real,
        shapes=(((2, 3, 4), (3, 2)),),
    ),
    _shape("getitem-list-of-lists", lambda m, x: x[[[1, 0], [2, 2]]]),  # x[[1, 0], [2, 2]]
    _shape("getitem-list-ellipsis", lambda m, x: x[[1, 1], ...]),
    _shape("getitem-empty-list", lambda m, x: x[[]]),
    case(
        "getitem-byte-mask",
        lambda m, x, mask: x[mask.to(m.uint8)],
        real,
        bools,
        shapes=(((2, 3), (2, 3)),),
    ),
    case(
        "gather",
        lambda m, x, i: m.gather(x, 1, i),
        real,
        indices(3),
        shapes=(((2, 3), (2, 4)), ((2, 3), (1, 2)), ((2, 3), (2, 0))),
    ),
    case(
        "gather-dim0",
        lambda m, x, i: m.gather(x, 0, i),
        real,
        indices(2),
        shapes=(((2, 3), (3, 3)),),
    ),
    case(
        "scatter",
        lambda m, x, i, s: m.scatter(x, 0, i, s),
        real,
        distinct_indices(3),
        real,
        shapes=(((3, 2), (2, 2), (2, 2)), ((3, 2), (3, 1), (3, 1))),
    ),
    case(
        "scatter-value",
        lambda m, x, i: m.scatter(x, 1, i, value=2.5),
        real,
        indices(3),
        shapes=(((2, 3), (2, 2)),),
    ),
    case(
        "scatter-value-int",
        lambda m, x, i: m.scatter(x, 0, i, value=1.7),
        ints,
        indices(3),
        shapes=(((3, 2), (1, 2)),),
        gradcheck=False,
    ),
    case(
        "scatter_add",
        lambda m, x, i, s: m.scatter_add(x, 1, i, s),
        real,
        indices(3),
        real,
        shapes=(((2, 3), (2, 4), (2, 4)), ((2, 3), (1, 2), (1, 2))),
    ),
    case(
        "scatter-reduce-add",
        lambda m, x, i: m.scatter(x, 1, i, value=1.5, reduce="add"),
        real,
        indices(3),
        shapes=(((2, 3), (2, 4)),),
        torch_grad=False,
        gradcheck=False,
    ),
    case(
        "index_select",
        lambda m, x, i: m.index_select(x, 1, i),
        real,
        indices(3),
        shapes=(((2, 3), (4,)), ((2, 3), ()), ((2, 3), (0,))),
    ),
    case(
        "index_select-dim0",
        lambda m, x, i: m.index_select(x, 0, i),
        real,
        indices(2),
        shapes=(((2, 3), (3,)), ((2,), (3,))),
    ),
    case(
        "index_add",
        lambda m, x, i, s: m.index_add(x, 0, i, s),
        real,
        indices(2),
        real,
        shapes=(((2, 3), (3,), (3, 3)),),
    ),
    case(
        "index_add-alpha",
        lambda m, x, i, s: m.index_add(x, 1, i, s, alpha=-2.0),
        real,
        indices(3),
        real,
        shapes=(((2, 3), (4,), (2, 4)),),
    ),
    case(
        "masked_fill",
        lambda m, x, mask: m.masked_fill(x, mask, -1.5),
        real,
        bools,
        shapes=(((2, 3), (2, 3)), ((2, 3), (3,)), ((), ())),
    ),
    case(
        "masked_fill-tensor-value",
        lambda m, x, mask, v: m.masked_fill(x, mask, v),
        real,
        bools,
        real,
        shapes=(((2, 3), (2, 3), ()),),
    ),
    case(
        "masked_fill-int",
        lambda m, x, mask: x.masked_fill(mask, 7),
        ints,
        bools,
        shapes=(((2, 3), (2, 3)),),
        gradcheck=False,
    ),
    case(
        "masked_select",
        lambda m, x, mask: m.masked_select(x, mask),
        real,
        bools,
        shapes=(((2, 3), (2, 3)), ((2, 3), (3,)), ((1, 3), (2, 3))),
    ),
    case(
        "masked_scatter-broadcast-mask",
        lambda m, x, mask, source: m.masked_scatter(x, mask, source),
        real,
        bools,
        real,
        shapes=(((2, 3), (3,), (6,)),),
    ),
    case(
        "take_along_dim",
        lambda m, x, i: m.take_along_dim(x, i, 1),
        real,
        indices(3),
        shapes=(((2, 3), (2, 2)), ((2, 3), (1, 4))),
    ),
    case(
        "take_along_dim-flat",
        lambda m, x, i: m.take_along_dim(x, i),
        real,
        indices(6),
        shapes=(((2, 3), (4,)),),
        strided=False,
    ),
    _shape(
        "nonzero", lambda m, x: m.nonzero(x), ((2, 3), (4,), ()), maker=two_zeros, gradcheck=False
    ),
    _shape(
        "nonzero-scalar-tuple", lambda m, x: m.nonzero(x, as_tuple=True), ((),), gradcheck=False
    ),
    _shape(
        "nonzero-tuple",
        lambda m, x: m.nonzero(x, as_tuple=True),
        ((2, 3), (4,)),
        maker=two_zeros,
        gradcheck=False,
    ),
    _shape("argwhere", lambda m, x: m.argwhere(x), ((2, 3),), maker=two_zeros, gradcheck=False),
    _shape("sort", lambda m, x: m.sort(x), ((2, 3), (4,), ()), maker=distinct),
    _shape(
        "sort-descending", lambda m, x: m.sort(x, 0, descending=True), ((3, 2),), maker=distinct
    ),
    _shape(
        "sort-stable-ties",
        lambda m, x: m.sort(x, stable=True),
        ((2, 6),),
        maker=ties,
        gradcheck=False,
    ),
    _shape(
        "sort-stable-descending-ties",
        lambda m, x: m.sort(x, dim=0, descending=True, stable=True),
        ((6, 2),),
        maker=ties,
        gradcheck=False,
    ),
    _shape("argsort", lambda m, x: m.argsort(x, 1), ((2, 3),), maker=distinct, gradcheck=False),
    _shape(
        "argsort-stable-descending",
        lambda m, x: m.argsort(x, descending=True, stable=True),
        ((2, 6),),
        maker=ties,
        gradcheck=False,
    ),
    _shape("msort", lambda m, x: m.msort(x), ((3, 2),), maker=distinct),
    *(
        case(
            f"scatter_reduce-{reduce}-{'self' if include_self else 'no-self'}",
            lambda m, x, i, s, reduce=reduce, include_self=include_self: m.scatter_reduce(
                x, 0, i, s, reduce, include_self=include_self
            ),
            distinct if reduce in ("amax", "amin") else real,
            indices(3),
            distinct if reduce in ("amax", "amin") else real,
            shapes=(((3, 2), (4, 2), (4, 2)), ((3, 2), (2, 1), (2, 1))),
        )
        for reduce in ("sum", "prod", "mean", "amax", "amin")
        for include_self in (True, False)
    ),
    case(
        "scatter_reduce-prod-zeros",
        lambda m, x, i, s: m.scatter_reduce(x, 1, i, s, "prod"),
        real,
        indices(3),
        with_values(real, {0: 0.0, 1: 0.0, 5: 0.0}),
        shapes=(((2, 3), (2, 4), (2, 4)),),
    ),
    case(
        "scatter_reduce-amax-ties",
        lambda m, x, i, s: m.scatter_reduce(x, 0, i, s, "amax"),
        ties,
        indices(3),
        ties,
        shapes=(((3, 2), (4, 2), (4, 2)),),
        gradcheck=False,
    ),
    *(
        case(
            f"scatter_reduce-{reduce}-int",
            lambda m, x, i, s, reduce=reduce: x.scatter_reduce(1, i, s, reduce, include_self=False),
            ints,
            indices(3),
            ints,
            shapes=(((2, 3), (2, 4), (2, 4)),),
            gradcheck=False,
        )
        for reduce in ("sum", "prod", "mean", "amax", "amin")
    ),
    case(
        "index_copy",
        lambda m, x, i, s: m.index_copy(x, 1, i, s),
        real,
        distinct_indices(3),
        real,
        shapes=(((2, 3), (2,), (2, 2)), ((2, 3), (0,), (2, 0))),
    ),
    case(
        "index_copy-method-dim0",
        lambda m, x, i, s: x.index_copy(0, i, s),
        real,
        distinct_indices(3),
        real,
        shapes=(((3, 2), (3,), (3, 2)),),
    ),
    case(
        "index_fill",
        lambda m, x, i: m.index_fill(x, 0, i, -1.5),
        real,
        indices(2),
        shapes=(((2, 3), (3,)), ((2,), (1,))),
    ),
    case(
        "index_fill-tensor-value",
        lambda m, x, i, v: x.index_fill(1, i, v),
        real,
        indices(3),
        real,
        shapes=(((2, 3), (2,), ()),),
    ),
    case(
        "slice_scatter",
        lambda m, x, s: m.slice_scatter(x, s, 1, 0, 4, 2),
        real,
        real,
        shapes=(((3, 4), (3, 2)), ((0, 4), (0, 2))),
    ),
    case(
        "slice_scatter-method-default",
        lambda m, x, s: x.slice_scatter(s, start=-2),
        real,
        real,
        shapes=(((3, 2), (2, 2)),),
    ),
    case(
        "select_scatter",
        lambda m, x, s: m.select_scatter(x, s, 0, -1),
        real,
        real,
        shapes=(((3, 4), (4,)), ((3,), ())),
    ),
    case(
        "diagonal_scatter",
        lambda m, x, s: m.diagonal_scatter(x, s),
        real,
        real,
        shapes=(((3, 4), (3,)), ((2, 3, 3), (3, 2)), ((0, 3), (0,))),
    ),
    case(
        "diagonal_scatter-method-offset",
        lambda m, x, s: x.diagonal_scatter(s, -1, 2, 0),
        real,
        real,
        shapes=(((3, 2, 4), (2, 3)),),
    ),
    case(
        "index_put",
        lambda m, x, i, v: m.index_put(x, (i,), v),
        real,
        distinct_indices(3),
        real,
        shapes=(((3, 4), (2,), (2, 4)), ((3, 4), (2,), (4,))),
    ),
    case(
        "index_put-accumulate",
        lambda m, x, i, j, v: x.index_put((i, j), v, accumulate=True),
        real,
        indices(3),
        indices(4),
        real,
        shapes=(((3, 4), (5,), (5,), (5,)), ((3, 4), (2, 3), (1, 3), ())),
    ),
    case(
        "index_put_",
        lambda m, x, i, v: (x * 1).index_put_((i,), v, True),
        real,
        indices(3),
        real,
        shapes=(((3, 4), (5,), (1, 4)),),
    ),
    case(
        "put",
        lambda m, x, i, v: m.put(x, i, v),
        real,
        distinct_indices(12),
        real,
        shapes=(((3, 4), (5,), (5,)),),
    ),
    case(
        "put_-accumulate",
        lambda m, x, i, v: (x * 1).put_(i - 6, v, accumulate=True),
        real,
        indices(12),
        real,
        shapes=(((3, 4), (2, 3), (6,)),),
    ),
    case(
        "fill_diagonal_",
        lambda m, x: (x * 1).fill_diagonal_(-1.5),
        real,
        shapes=(((3, 4),), ((4, 2),), ((3, 3, 3),)),
    ),
    case(
        "fill_diagonal_-wrap",
        lambda m, x: (x * 1).fill_diagonal_(2, wrap=True),
        real,
        shapes=(((7, 3),),),
    ),
    case(
        "take",
        lambda m, x, i: m.take(x, i),
        real,
        indices(6),
        shapes=(((2, 3), (2, 2)), ((2, 3), (4,)), ((2, 3), ())),
    ),
    case("take-negative", lambda m, x: x.take(m.tensor([-1, 0, -6])), real, shapes=(((2, 3),),)),
    _shape(
        "unique_consecutive",
        lambda m, x: m.unique_consecutive(x),
        ((2, 6), (6,), (0,)),
        maker=ties,
        gradcheck=False,
        torch_grad=False,
    ),
    _shape(
        "unique_consecutive-inverse-counts",
        lambda m, x: x.unique_consecutive(return_inverse=True, return_counts=True),
        ((2, 6), (5,)),
        maker=ties,
        gradcheck=False,
        torch_grad=False,
    ),
    _shape(
        "unique_consecutive-dim",
        lambda m, x: m.unique_consecutive(x, return_counts=True, dim=0),
        ((6, 1), (6, 2)),
        maker=ties,
        gradcheck=False,
        torch_grad=False,
    ),
    _shape("topk", lambda m, x: m.topk(x, 2), ((2, 3), (4,)), maker=distinct),
    _shape(
        "topk-smallest", lambda m, x: m.topk(x, 2, dim=0, largest=False), ((3, 2),), maker=distinct
    ),
    _shape("topk-scalar", lambda m, x: m.topk(x, 1), ((),), maker=distinct),
    _shape("kthvalue", lambda m, x: m.kthvalue(x, 2), ((2, 3), (4,)), maker=distinct),
    _shape(
        "kthvalue-keepdim",
        lambda m, x: m.kthvalue(x, 1, 0, keepdim=True),
        ((3, 2),),
        maker=distinct,
    ),
    _shape(
        "unique", lambda m, x: m.unique(x), ((2, 6),), maker=ties, gradcheck=False, torch_grad=False
    ),
    _shape(
        "unique-inverse-counts",
        lambda m, x: m.unique(x, return_inverse=True, return_counts=True),
        ((2, 6), (5,)),
        maker=ties,
        gradcheck=False,
        torch_grad=False,
    ),
    _shape(
        "unique-dim",
        lambda m, x: m.unique(x, dim=0, return_inverse=True),
        ((4, 1),),
        maker=ties,
        gradcheck=False,
        torch_grad=False,
    ),
]

CONVERSION_CASES = [
    _shape("to-float64", lambda m, x: x.to(m.float64), ((2, 3), ())),
    _shape(
        "to-float16",
        lambda m, x: x.to(m.float16),
        ((2, 3),),
        atol=1e-3,
        rtol=1e-3,
        gradcheck=False,
    ),
    _shape("to-int", lambda m, x: x.to(m.int64), ((2, 3),), gradcheck=False, maker=off_integer),
    _shape("to-bool", lambda m, x: x.to(dtype=m.bool), ((2, 3),), gradcheck=False, maker=one_zero),
    _shape("to-device", lambda m, x: x.to("cpu"), ((2, 3),)),
    _shape("to-same", lambda m, x: x.to(x.dtype), ((2, 3),)),
    _shape("to-copy", lambda m, x: x.to(x.dtype, copy=True), ((2, 3),)),
    _shape("double-method", lambda m, x: x.double(), ((2, 3),)),
    _shape("int-method", lambda m, x: x.int(), ((2, 3),), gradcheck=False, maker=off_integer),
    _shape("type_as", lambda m, x: x.type_as(m.zeros(1, dtype=m.float64)), ((2, 3),)),
    _shape("clone", lambda m, x: m.clone(x), ((2, 3), (), (0, 3))),
    _shape("contiguous", lambda m, x: x.t().contiguous(), ((2, 3),)),
    _shape("contiguous-method", lambda m, x: x.contiguous(), ((2, 3), ())),
]


def _complex_parts(m: object, a: object, b: object) -> tuple:
    z = m.complex(a, b)
    return m.real(z), m.imag(z)


COMPLEX_CASES = [
    case(
        "complex",
        lambda m, a, b: m.complex(a, b),
        real,
        real,
        shapes=BINARY[:1] + BINARY[4:5],
        torch_grad=False,
        gradcheck=False,
    ),
    case("complex-parts", _complex_parts, real, real, shapes=BINARY[:1] + BINARY[4:5]),
    case("complex-real", lambda m, a, b: m.real(m.complex(a, b)), real, real, shapes=BINARY[:1]),
    case("complex-imag", lambda m, a, b: m.imag(m.complex(a, b)), real, real, shapes=BINARY[:1]),
    case(
        "complex-conj",
        lambda m, a, b: m.imag(m.conj(m.complex(a, b))),
        real,
        real,
        shapes=BINARY[:1],
        torch_call=lambda m, a, b: m.imag(m.conj(m.complex(a, b))).resolve_neg(),
    ),
    case(
        "complex-angle", lambda m, a, b: m.angle(m.complex(a, b)), real, nonzero, shapes=BINARY[:1]
    ),
    case("complex-abs", lambda m, a, b: m.abs(m.complex(a, b)), real, nonzero, shapes=BINARY[:1]),
    case(
        "complex-mul",
        lambda m, a, b: m.real(m.complex(a, b) * m.complex(b, a * a)),
        real,
        real,
        shapes=BINARY[:1],
    ),
    case(
        "complex-div",
        lambda m, a, b: m.imag(m.complex(a, b) / m.complex(b, a + 3)),
        real,
        nonzero,
        shapes=BINARY[:1],
    ),
    case(
        "complex-exp", lambda m, a, b: m.real(m.exp(m.complex(a, b))), real, real, shapes=BINARY[:1]
    ),
    case(
        "complex-property-parts",
        lambda m, a, b: m.complex(a, b).imag + m.complex(b, a).real,
        real,
        real,
        shapes=BINARY[:1],
    ),
    case("real-of-real", lambda m, x: m.real(x), real),
    case("conj-of-real", lambda m, x: m.conj(x), real),
    case("angle-of-real", lambda m, x: m.angle(x), nonzero),
    case("angle-of-int", lambda m, x: m.angle(x), ints, gradcheck=False),
    case("real-of-complex", lambda m, z: m.real(z), complex_values, gradcheck=False),
    case("imag-of-complex", lambda m, z: m.imag(z), complex_values, gradcheck=False),
    case(
        "conj-of-complex",
        lambda m, z: m.conj(z),
        complex_values,
        gradcheck=False,
        torch_call=lambda m, z: m.conj(z).resolve_conj(),
    ),
    case("angle-of-complex", lambda m, z: m.angle(z), complex_values, gradcheck=False),
    case(
        "conj-method",
        lambda m, z: z.conj(),
        complex_values,
        gradcheck=False,
        torch_call=lambda m, z: z.conj().resolve_conj(),
    ),
    case(
        "mH-of-complex",
        lambda m, z: z.mH,
        complex_values,
        shapes=(((2, 3),),),
        gradcheck=False,
        torch_call=lambda m, z: z.mH.resolve_conj(),
    ),
    case(
        "vdot-complex",
        lambda m, a, b: m.vdot(a, b),
        complex_values,
        complex_values,
        shapes=(((3,), (3,)),),
        gradcheck=False,
    ),
]


def _integer_weights(rng: np.random.Generator, shape: Shape) -> np.ndarray:
    """int64 frequency weights in [1, 4)."""
    return rng.integers(1, 4, shape).astype(np.int64)


METHOD_CASES = [
    _shape("softmax", lambda m, x: m.softmax(x, 1)),
    _shape("softmax-method-dtype", lambda m, x: x.softmax(-1, dtype=m.float64)),
    _shape("log_softmax", lambda m, x: m.log_softmax(x, 0)),
    _shape("log_softmax-method", lambda m, x: x.log_softmax(-1), ((4,), (2, 3, 2))),
    _shape("dist", lambda m, x: m.dist(x, m.ones(3, dtype=x.dtype))),
    _shape("dist-p3", lambda m, x: x.dist(x.flip(0), 3), ((2, 3), (4,))),
    _shape("dist-p1", lambda m, x: m.dist(x, x * 0.5 + 0.3, 1), maker=nonzero),
    _shape("sum_to_size", lambda m, x: x.sum_to_size(1, 3), ((2, 3), (4, 2, 3))),
    _shape("sum_to_size-tuple", lambda m, x: x.sum_to_size((2, 1))),
    _shape("cov", lambda m, x: m.cov(x), ((3, 5), (5,), (1, 4))),
    _shape("cov-correction", lambda m, x: x.cov(correction=0), ((3, 5),)),
    case(
        "cov-weights",
        lambda m, x, f, a: m.cov(x, correction=2, fweights=f, aweights=a),
        real,
        _integer_weights,
        positive,
        shapes=(((3, 5), (5,), (5,)),),
    ),
    _shape("corrcoef", lambda m, x: m.corrcoef(x), ((3, 5), (2, 4))),
    _shape("corrcoef-vector", lambda m, x: x.corrcoef(), ((5,),)),
    _shape("ravel", lambda m, x: m.ravel(x.t()), ((2, 3), ())),
    _shape("select", lambda m, x: m.select(x, 1, -1), ((2, 3), (2, 3, 4))),
    _shape("select-method", lambda m, x: x.select(0, 1)),
    _shape("hsplit", lambda m, x: m.hsplit(x, 3), ((2, 3), (6,))),
    _shape("hsplit-indices", lambda m, x: x.hsplit([1, 2])),
    _shape("vsplit", lambda m, x: m.vsplit(x, 2), ((4, 3),)),
    _shape("dsplit", lambda m, x: m.dsplit(x, [1]), ((2, 2, 3),)),
    _shape("split_with_sizes", lambda m, x: m.split_with_sizes(x, [1, 2], 1)),
    _shape("split_with_sizes-method", lambda m, x: x.split_with_sizes([2, 0, 2]), ((4, 2),)),
    _shape("diagflat", lambda m, x: m.diagflat(x), ((2, 3), ())),
    _shape("diagflat-offset", lambda m, x: x.diagflat(-2), ((3,),)),
    _shape("narrow_copy", lambda m, x: m.narrow_copy(x, 1, 1, 2)),
    _shape("unfold", lambda m, x: x.unfold(1, 2, 1), ((2, 3), (2, 4, 2))),
    _shape("unfold-step", lambda m, x: x.unfold(0, 2, 3), ((7, 2), (2,))),
    _shape("unfold-scalar", lambda m, x: x.unfold(0, 1, 1), ((),)),
    _shape("cumsum_", lambda m, x: (x * 1).cumsum_(1)),
    _shape("cumprod_", lambda m, x: (x * 1).cumprod_(-1), maker=nonzero),
    _shape("squeeze_", lambda m, x: (x * 1).squeeze_(), ((2, 1, 3), (1,), ())),
    _shape("squeeze_-dim", lambda m, x: (x * 1).squeeze_((0, 2)), ((1, 3, 1),)),
    _shape("unsqueeze_", lambda m, x: (x * 1).unsqueeze_(-1), ((2, 3), ())),
    _shape("t_", lambda m, x: (x * 1).t_(), ((2, 3), (3,), ())),
    _shape("t_-view", lambda m, x: (x * 1)[1:].t_() * 2, ((3, 2),)),
    _shape("transpose_", lambda m, x: (x * 1).transpose_(0, -1), ((2, 3, 4),)),
    _shape("swapaxes_", lambda m, x: (x * 1).swapaxes_(1, 0)),
    _shape("swapdims_", lambda m, x: (x * 1).swapdims_(0, 1)),
]

CASES: list[OpCase] = [
    *UNARY_CASES,
    *BINARY_CASES,
    *REDUCTION_CASES,
    *SHAPE_CASES,
    *METHOD_CASES,
    *MATMUL_CASES,
    *INDEXING_CASES,
    *VIEW_WRITE_CASES,
    *CONVERSION_CASES,
    *COMPLEX_CASES,
]
