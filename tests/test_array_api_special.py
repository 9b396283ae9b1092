"""Special values in tk.array_api as the standard (2024.12) lists them: floor_divide with
infinite operands (the function, the operator and the in-place operator), and complex
``expm1`` and ``tanh`` at zeros, infinities and NaNs (C99 Annex G). tk.Tensor keeps PyTorch's
values, which differ in some of these cases (docs/guide/differences.md)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import tensorkit as tk

xp = tk.array_api
INF, NAN = math.inf, math.nan


def same(x: float, y: float) -> bool:
    """Equal as IEEE values: NaN equals NaN, and zeros must have the same sign."""
    if math.isnan(x) or math.isnan(y):
        return math.isnan(x) and math.isnan(y)
    return x == y and math.copysign(1, x) == math.copysign(1, y)


# ------------------------------------------------------------------------- floor_divide
def standard_floor_divide(x1: float, x2: float) -> float:
    """The standard's floor_divide special cases, with Python's // for the rest."""
    if math.isnan(x1) or math.isnan(x2) or (math.isinf(x1) and math.isinf(x2)):
        return NAN
    if x1 == 0 and x2 == 0:
        return NAN
    negative = (math.copysign(1, x1) < 0) != (math.copysign(1, x2) < 0)
    if x1 == 0:
        return -0.0 if negative else 0.0
    if x2 == 0 or math.isinf(x1):
        return -INF if negative else INF
    if math.isinf(x2):
        return -0.0 if negative else 0.0
    return float(np.floor_divide(x1, x2))


VALUES = [INF, -INF, NAN, 0.0, -0.0, 1.5, -1.5, 2.0, -2.0, 7.0, -0.25]
PAIRS = list(itertools.product(VALUES, VALUES))
X1 = [p[0] for p in PAIRS]
X2 = [p[1] for p in PAIRS]


def check_floor_divide(result: tk.Tensor, x1: list, x2: list) -> None:
    values = result.tolist()
    wrong = [
        (a, b, got, standard_floor_divide(a, b))
        for a, b, got in zip(x1, x2, values, strict=True)
        if not same(got, standard_floor_divide(a, b))
    ]
    assert not wrong, f"(x1, x2, got, expected): {wrong}"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_floor_divide_function_special_cases(dtype):
    x1, x2 = xp.asarray(X1, dtype=getattr(xp, dtype)), xp.asarray(X2, dtype=getattr(xp, dtype))
    result = xp.floor_divide(x1, x2)
    assert result.dtype == getattr(xp, dtype)
    check_floor_divide(result, X1, X2)


def test_floor_divide_operator_and_in_place_special_cases():
    x1, x2 = xp.asarray(X1), xp.asarray(X2)
    check_floor_divide(x1 // x2, X1, X2)
    out = xp.asarray(X1)
    out //= x2
    check_floor_divide(out, X1, X2)


def test_floor_divide_with_python_scalars():
    assert xp.floor_divide(xp.asarray([INF, -INF]), 2).tolist() == [INF, -INF]
    assert same((xp.asarray([-1.5]) // INF).item(), -0.0)
    assert same((INF // xp.asarray([-3.0])).item(), -INF)
    assert same(xp.floor_divide(1.5, xp.asarray([-INF])).item(), -0.0)


def test_the_brief_examples():
    assert xp.floor_divide(xp.asarray(INF), xp.asarray(2.0)).item() == INF
    assert same(xp.floor_divide(xp.asarray(-1.5), xp.asarray(INF)).item(), -0.0)


def test_floor_divide_of_integers_is_unchanged():
    x1 = xp.asarray([7, -7, 7, -7, 5])
    x2 = xp.asarray([2, 2, -2, -2, 0])
    assert xp.floor_divide(x1, x2).tolist() == [3, -4, -4, 3, 0]
    assert (x1 // x2).tolist() == [3, -4, -4, 3, 0]


def test_tk_tensor_keeps_torch_values():
    torch = pytest.importorskip("torch")
    ours = (tk.tensor(X1) // tk.tensor(X2)).tolist()
    theirs = torch.tensor(X1, dtype=torch.float64) // torch.tensor(X2, dtype=torch.float64)
    theirs = theirs.tolist()
    assert all(same(a, b) for a, b in zip(ours, theirs, strict=True))
    assert math.isnan((tk.tensor([INF]) // 2).item())  # torch's value, not the standard's


# ---------------------------------------------------------------------- complex values
def _reduce(z: complex, odd: bool) -> tuple[complex, bool, bool]:
    """``z`` moved by the function's symmetries (conj, and z -> -z for odd functions) to
    the quarter with a sign bit clear on the imaginary part (and the real part, if odd)."""
    negate = odd and math.copysign(1, z.real) < 0
    if negate:
        z = complex(-z.real, -z.imag)
    conjugate = math.copysign(1, z.imag) < 0
    if conjugate:
        z = complex(z.real, -z.imag)
    return z, negate, conjugate


def _restore(w: complex, negate: bool, conjugate: bool) -> complex:
    if conjugate:
        w = complex(w.real, -w.imag)
    return complex(-w.real, -w.imag) if negate else w


def standard_tanh(z: complex) -> complex | None:
    """tanh's special cases (None: a finite, ordinary value)."""
    q, negate, conjugate = _reduce(z, odd=True)
    a, b = q.real, q.imag
    if math.isfinite(a) and math.isfinite(b) and not (a == 0 and b == 0):
        return None
    if a == 0 and b == 0:
        w = complex(0.0, 0.0)
    elif a == 0:  # b infinite or NaN
        w = complex(0.0, NAN)
    elif math.isfinite(a):
        w = complex(NAN, NAN)
    elif math.isinf(a):  # +infinity: b finite positive, infinite or NaN (sign unspecified)
        w = complex(1.0, 0.0)
    else:  # a NaN
        w = complex(NAN, 0.0) if b == 0 else complex(NAN, NAN)
    return _restore(w, negate, conjugate)


def standard_expm1(z: complex) -> complex | None:
    """expm1's special cases (None: a finite, ordinary value)."""
    q, _, conjugate = _reduce(z, odd=False)
    a, b = q.real, q.imag
    if math.isfinite(a) and math.isfinite(b):
        if not (a == 0 and b == 0):
            return None
        w = complex(a, 0.0)
    elif math.isfinite(a):  # b infinite or NaN
        w = complex(NAN, NAN)
    elif a == INF and b == 0:
        w = complex(INF, 0.0)
    elif a == -INF and math.isfinite(b):
        w = complex(-1.0, 0.0 * math.sin(b))
    elif a == INF and math.isfinite(b):
        w = complex(INF * math.cos(b), INF * math.sin(b))
    elif a == -INF:  # b infinite or NaN: the imaginary sign is unspecified
        w = complex(-1.0, 0.0)
    elif a == INF:  # b infinite or NaN: the real sign is unspecified
        w = complex(INF, NAN)
    else:  # a NaN
        w = complex(NAN, 0.0) if b == 0 else complex(NAN, NAN)
    return _restore(w, False, conjugate)


PARTS = [0.0, -0.0, 1.5, -1.5, 2.0, -2.0, INF, -INF, NAN]
POINTS = [complex(a, b) for a, b in itertools.product(PARTS, PARTS)]


def unsigned(name: str, z: complex, w: complex) -> complex:
    """``w`` without the signs the standard leaves unspecified for ``name`` at ``z``: the
    imaginary part's where the real part of ``z`` is infinite and the imaginary part is not
    finite (the real part's too for expm1 at +infinity)."""
    if not (math.isinf(z.real) and not math.isfinite(z.imag)):
        return w
    real = abs(w.real) if name == "expm1" and z.real > 0 else w.real
    return complex(real, abs(w.imag))


def _check(name: str, reference, dtype: str) -> None:
    inputs = xp.asarray(POINTS, dtype=getattr(xp, dtype))
    results = getattr(xp, name)(inputs).tolist()
    wrong = []
    for z, got in zip(POINTS, results, strict=True):
        expected = reference(z)
        if expected is None:  # an ordinary value: NumPy's
            with np.errstate(all="ignore"):
                expected = complex(getattr(np, name)(np.complex128(z)))
            if not np.isclose(got, expected, rtol=1e-6 if dtype == "complex64" else 1e-12):
                wrong.append((z, got, expected))
            continue
        got, expected = unsigned(name, z, got), unsigned(name, z, expected)
        if not (same(got.real, expected.real) and same(got.imag, expected.imag)):
            wrong.append((z, got, expected))
    assert not wrong, f"(input, got, expected): {wrong}"


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_tanh_special_values(dtype):
    _check("tanh", standard_tanh, dtype)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_expm1_special_values(dtype):
    _check("expm1", standard_expm1, dtype)


@pytest.mark.parametrize("name", ["tanh", "expm1"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_tk_tensor_keeps_torch_complex_values(name, dtype):
    """tk.Tensor's complex tanh and expm1 are PyTorch's at every special point (and close
    to them, to rounding, at the ordinary ones)."""
    torch = pytest.importorskip("torch")
    ours = getattr(tk, name)(tk.tensor(POINTS, dtype=getattr(tk, dtype))).tolist()
    theirs = getattr(torch, name)(torch.tensor(POINTS, dtype=getattr(torch, dtype))).tolist()
    wrong = []
    for z, a, b in zip(POINTS, ours, theirs, strict=True):
        ordinary = all(math.isfinite(v) and v != 0 for v in (z.real, z.imag))
        if ordinary and np.isclose(a, b, rtol=1e-6):
            continue
        if not (same(a.real, b.real) and same(a.imag, b.imag)):
            wrong.append((z, a, b))
    assert not wrong, f"(input, tensorkit, torch): {wrong}"
