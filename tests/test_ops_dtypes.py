"""Every elementwise op on every dtype (and pair of dtypes, Python scalars included) against
PyTorch: the same result dtype and values, or the same exception type where PyTorch refuses
a dtype (``relu`` of bool, ``frac`` of int, bool subtraction...).

Calls whose signature PyTorch rejects (a TypeError: functional forms that take no Python
scalar in that place) are left out when the cases are collected.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import tensorkit as tk

torch = pytest.importorskip("torch")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]
SCALARS = {"int-scalar": 3, "float-scalar": 2.5, "bool-scalar": True}
# 0-d tensors: they promote like scalars, by category only, yet keep their dtype otherwise.
ZERO_DIM = {"0d-int64": ("int64", 2), "0d-float64": ("float64", 1.5), "0d-bool": ("bool", True)}

# fmt: off
UNARY = [
    "neg", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
    "reciprocal", "square", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
    "asinh", "acosh", "atanh", "sigmoid", "relu", "erf", "erfc", "abs", "sign", "floor", "ceil",
    "trunc", "frac", "round", "nan_to_num", "isnan", "isinf", "isfinite", "isposinf",
    "isneginf", "signbit", "logical_not", "bitwise_not", "positive",
]
BINARY = [
    "add", "sub", "mul", "div", "floor_divide", "remainder", "fmod", "pow", "atan2", "maximum",
    "minimum", "fmax", "fmin", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
    "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
    "bitwise_right_shift",
]
# fmt: on


def _values(dtype: str, divisor: bool = False) -> np.ndarray:
    """Small values valid for every op: a divisor side has no zeros (integer division)."""
    if dtype == "bool":
        return np.array([True, True, False, True] if not divisor else [True] * 4)
    if dtype == "uint8":
        return np.array([0, 1, 2, 3] if not divisor else [1, 2, 1, 3], np.uint8)
    if dtype.startswith("int"):
        return np.array([-2, 0, 1, 3] if not divisor else [1, 2, -1, 3], dtype)
    return np.array([-1.5, 0.0, 0.5, 2.0] if not divisor else [0.5, -1.0, 2.0, 1.5], dtype)


def _operand(module: Any, spec: str, divisor: bool) -> Any:
    if spec in SCALARS:
        return SCALARS[spec]
    if spec in ZERO_DIM:
        dtype, value = ZERO_DIM[spec]
        return module.tensor(value, dtype=getattr(module, dtype))
    return module.tensor(_values(spec, divisor))


def _signature_ok(call: Callable[[Any], Any]) -> bool:
    try:
        call(torch)
    except TypeError:
        return False
    except (RuntimeError, NotImplementedError, ValueError):
        pass
    return True


def _compare(call: Callable[[Any], Any]) -> None:
    try:
        expected = call(torch)
    except (RuntimeError, NotImplementedError, ValueError) as error:
        with pytest.raises(type(error)):
            call(tk)
        return
    got = call(tk)
    expected_dtype = str(expected.dtype).split(".")[-1]
    assert got.dtype.name == expected_dtype
    tolerance = 2e-3 if expected_dtype == "float16" else 1e-6
    np.testing.assert_allclose(
        np.asarray(got).astype(np.float64),
        expected.numpy().astype(np.float64),
        rtol=tolerance,
        atol=tolerance,
        equal_nan=True,
    )


def _unary_call(name: str, dtype: str) -> Callable[[Any], Any]:
    return lambda m: getattr(m, name)(m.tensor(_values(dtype)))


def _binary_call(name: str, left: str, right: str) -> Callable[[Any], Any]:
    return lambda m: getattr(m, name)(_operand(m, left, False), _operand(m, right, divisor=True))


@pytest.mark.parametrize(("name", "dtype"), list(itertools.product(UNARY, DTYPES)))
def test_unary_dtype(name: str, dtype: str) -> None:
    _compare(_unary_call(name, dtype))


def _pairs() -> list:
    specs = DTYPES + list(SCALARS) + list(ZERO_DIM)
    params = []
    for name in BINARY:
        for left, right in itertools.product(specs, specs):
            if left in SCALARS and right in SCALARS:
                continue
            if not _signature_ok(_binary_call(name, left, right)):
                continue
            params.append(pytest.param(name, left, right, id=f"{name}-{left}-{right}"))
    return params


@pytest.mark.parametrize(("name", "left", "right"), _pairs())
def test_binary_dtypes(name: str, left: str, right: str) -> None:
    _compare(_binary_call(name, left, right))
