"""The op suite: every case of tests/op_cases.py on every shape set it lists.

For each case and shape set: forward values, dtypes and gradients against PyTorch (against
a NumPy reference where PyTorch is missing), and a float64 gradcheck + gradgradcheck. A
separate table checks dtype promotion against PyTorch.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from harness import check_grads, check_torch, leaves, noncontiguous
from op_cases import CASES, OpCase, Shape

import tensorkit as tk

try:
    import torch
except ImportError:  # PyTorch is an optional oracle
    torch = None

GRADGRAD_MAX_ELEMENTS = 12

assert len({c.name for c in CASES}) == len(CASES), "case names must be unique"


def _params(select: Callable[[OpCase], bool]) -> list:
    params = []
    for c in CASES:
        if not select(c):
            continue
        marks = [pytest.mark.xfail(strict=True, reason=c.xfail)] if c.xfail else []
        for label, shapes, strided in c.variants():
            params.append(pytest.param(c, shapes, strided, id=f"{c.name}-{label}", marks=marks))
    return params


def _has_float_input(c: OpCase) -> bool:
    rng = np.random.default_rng(0)
    return any(make(rng, (1,)).dtype.kind == "f" for make in c.inputs)


def make_arrays(c: OpCase, shapes: tuple[Shape, ...], strided: bool, precision: Any) -> list:
    """The case's inputs on ``shapes``: floats in ``precision``, strided if asked. Seeded
    by the case name, so every run (and every variant's dtype) sees the same values."""
    rng = np.random.default_rng(zlib.crc32(c.name.encode()))
    arrays = []
    for make, shape in zip(c.inputs, shapes, strict=True):
        a = make(rng, shape)
        if a.dtype.kind == "f":
            a = a.astype(precision)
        elif a.dtype.kind == "c":
            a = a.astype(np.result_type(precision, np.complex64))
        arrays.append(noncontiguous(a) if strided else a)
    return arrays


def _tk_call(c: OpCase) -> Callable:
    return lambda *inputs: c.call(tk, *inputs)


def _torch_call(c: OpCase) -> Callable:
    call = c.torch_call or c.call
    return lambda *inputs: call(torch, *inputs)


@pytest.fixture(autouse=True)
def _seeded() -> None:
    tk.manual_seed(0)  # gradgradcheck draws its grad_outputs at random


# ------------------------------------------------------------------------ forward values
@pytest.mark.parametrize(("case", "shapes", "strided"), _params(lambda c: True))
def test_matches_torch(case: OpCase, shapes: tuple, strided: bool) -> None:
    """Values, dtypes and gradients (float32) agree with PyTorch."""
    if torch is None:
        pytest.skip("PyTorch not installed: test_matches_numpy covers the forward pass")
    arrays = make_arrays(case, shapes, strided, np.float32)
    check_torch(
        _tk_call(case),
        _torch_call(case),
        *arrays,
        grad=case.torch_grad,
        atol=case.atol,
        rtol=case.rtol,
    )


@pytest.mark.parametrize(("case", "shapes", "strided"), _params(lambda c: c.numpy is not None))
def test_matches_numpy(case: OpCase, shapes: tuple, strided: bool) -> None:
    """Forward values (float64) agree with the NumPy reference, with or without PyTorch."""
    arrays = make_arrays(case, shapes, strided, np.float64)
    got = case.call(tk, *leaves(arrays, requires_grad=False))
    expected = case.numpy(*arrays)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-12, atol=1e-12)
    assert got.shape == np.shape(expected)


# ------------------------------------------------------------------------------ gradients
@pytest.mark.parametrize(
    ("case", "shapes", "strided"), _params(lambda c: c.gradcheck and _has_float_input(c))
)
def test_gradcheck(case: OpCase, shapes: tuple, strided: bool) -> None:
    """float64 gradcheck, and gradgradcheck where inputs and outputs are small."""
    arrays = make_arrays(case, shapes, strided, np.float64)
    fn = _tk_call(case)
    with tk.no_grad():
        outputs = fn(*leaves([a.copy() for a in arrays], requires_grad=False))
    outputs = outputs if isinstance(outputs, tuple | list) else (outputs,)
    sizes = [a.size for a in arrays] + [o.numel() for o in outputs]
    small = max(sizes) <= GRADGRAD_MAX_ELEMENTS
    check_grads(fn, *arrays, gradgrad=case.gradgrad and small)


# ------------------------------------------------------------------------ dtype promotion
# (name, expression on a module m, expected dtype name). Each also runs under PyTorch.
PROMOTION = [
    ("int-tensor+float-scalar", lambda m: m.tensor([1, 2]) + 1.5, "float32"),
    ("int-tensor*int-scalar", lambda m: m.tensor([1, 2]) * 3, "int64"),
    ("int64+float32", lambda m: m.tensor([1, 2]) + m.tensor([1.0, 2.0]), "float32"),
    ("int32+int64", lambda m: m.ones(2, dtype=m.int32) + m.ones(2, dtype=m.int64), "int64"),
    (
        "float16+float16",
        lambda m: m.ones(2, dtype=m.float16) + m.ones(2, dtype=m.float16),
        "float16",
    ),
    ("float16*float-scalar", lambda m: m.ones(2, dtype=m.float16) * 2.5, "float16"),
    ("float16+int-tensor", lambda m: m.ones(2, dtype=m.float16) + m.tensor([1, 2]), "float16"),
    ("float16+float32", lambda m: m.ones(2, dtype=m.float16) + m.ones(2), "float32"),
    ("exp-float16", lambda m: m.exp(m.ones(2, dtype=m.float16)), "float16"),
    ("erf-float16", lambda m: m.erf(m.ones(2, dtype=m.float16)), "float16"),
    ("erfc-float16", lambda m: m.erfc(m.ones(2, dtype=m.float16)), "float16"),
    ("square-bool", lambda m: m.square(m.tensor([True, False])), "int64"),
    ("sign-bool", lambda m: m.sign(m.tensor([True, False])), "bool"),
    ("bool+bool", lambda m: m.tensor([True, False]) + m.tensor([True, True]), "bool"),
    ("bool*bool", lambda m: m.tensor([True, False]) * m.tensor([True, True]), "bool"),
    ("bool+int-scalar", lambda m: m.tensor([True, False]) + 2, "int64"),
    ("bool+float-scalar", lambda m: m.tensor([True, False]) + 2.0, "float32"),
    ("uint8+int8", lambda m: m.ones(2, dtype=m.uint8) + m.ones(2, dtype=m.int8), "int16"),
    ("uint8+int-scalar", lambda m: m.ones(2, dtype=m.uint8) + 300, "uint8"),
    ("float32+0d-float64", lambda m: m.ones(2) + m.tensor(1.0, dtype=m.float64), "float32"),
    ("int32+0d-int64", lambda m: m.ones(2, dtype=m.int32) + m.tensor(1), "int32"),
    (
        "int32+0d-float64",
        lambda m: m.ones(2, dtype=m.int32) + m.tensor(1.0, dtype=m.float64),
        "float64",
    ),
    (
        "0d-int32+0d-float16",
        lambda m: m.tensor(1, dtype=m.int32) + m.tensor(1.0, dtype=m.float16),
        "float16",
    ),
    ("0d-float64+float-scalar", lambda m: m.tensor(1.0, dtype=m.float64) * 2.0, "float64"),
    ("exp-int", lambda m: m.exp(m.tensor([1, 2])), "float32"),
    ("exp-bool", lambda m: m.exp(m.tensor([True])), "float32"),
    ("sqrt-int32", lambda m: m.sqrt(m.ones(2, dtype=m.int32)), "float32"),
    ("sigmoid-int", lambda m: m.sigmoid(m.tensor([1, 2])), "float32"),
    ("erf-int", lambda m: m.erf(m.tensor([1, 2])), "float32"),
    ("abs-int8", lambda m: m.abs(m.ones(2, dtype=m.int8)), "int8"),
    ("neg-int16", lambda m: m.neg(m.ones(2, dtype=m.int16)), "int16"),
    ("floor-int", lambda m: m.floor(m.tensor([1, 2])), "int64"),
    ("div-int-int", lambda m: m.tensor([1, 2]) / m.tensor([2, 2]), "float32"),
    ("div-int-scalar", lambda m: m.tensor([1, 2]) / 2, "float32"),
    ("div-floor-int", lambda m: m.div(m.tensor([5]), 2, rounding_mode="floor"), "int64"),
    ("floor_divide-int", lambda m: m.tensor([5, 7]) // m.tensor([2, 2]), "int64"),
    ("remainder-int-float-scalar", lambda m: m.tensor([5, 7]) % 2.5, "float32"),
    ("pow-int-float-scalar", lambda m: m.tensor([1, 2]) ** 2.5, "float32"),
    ("pow-int-int-scalar", lambda m: m.tensor([1, 2]) ** 2, "int64"),
    ("pow-scalar-base-int", lambda m: 2.0 ** m.tensor([1, 2]), "float32"),
    ("atan2-int", lambda m: m.atan2(m.tensor([1, 2]), m.tensor([2, 1])), "float32"),
    ("clamp-int-float-bound", lambda m: m.clamp(m.tensor([1, 2]), min=1.5), "float32"),
    (
        "where-int-float-scalar",
        lambda m: m.where(m.tensor([True, False]), m.tensor([1, 2]), 0.5),
        "float32",
    ),
    ("where-scalars", lambda m: m.where(m.tensor([True, False]), 1.0, 0.0), "float32"),
    ("where-int-scalars", lambda m: m.where(m.tensor([True, False]), 1, 0), "int64"),
    ("lt-int-float", lambda m: m.tensor([1, 2]) < m.tensor([1.5, 1.5]), "bool"),
    ("eq-float-scalar", lambda m: m.ones(2) == 1, "bool"),
    ("isclose-int", lambda m: m.isclose(m.tensor([1]), m.tensor([1])), "bool"),
    ("logical_and-float", lambda m: m.logical_and(m.ones(2), m.zeros(2)), "bool"),
    (
        "bitwise_and-int32-int64",
        lambda m: m.ones(2, dtype=m.int32) & m.ones(2, dtype=m.int64),
        "int64",
    ),
    (
        "cat-int32-float16",
        lambda m: m.cat([m.ones(2, dtype=m.int32), m.ones(1, dtype=m.float16)]),
        "float16",
    ),
    ("cat-bool-int", lambda m: m.cat([m.tensor([True]), m.tensor([1])]), "int64"),
    (
        "stack-float32-float64",
        lambda m: m.stack([m.ones(2), m.ones(2, dtype=m.float64)]),
        "float64",
    ),
    ("sum-bool", lambda m: m.sum(m.tensor([True, True])), "int64"),
    ("sum-int32", lambda m: m.sum(m.ones(2, dtype=m.int32)), "int64"),
    ("sum-float16", lambda m: m.sum(m.ones(2, dtype=m.float16)), "float16"),
    ("prod-uint8", lambda m: m.prod(m.ones(2, dtype=m.uint8)), "int64"),
    ("cumsum-int32", lambda m: m.cumsum(m.ones(2, dtype=m.int32), 0), "int64"),
    ("cumprod-bool", lambda m: m.cumprod(m.tensor([True, True]), 0), "int64"),
    (
        "cumsum-float16-long",
        lambda m: m.cumsum(m.full((4000,), 0.1, dtype=m.float16), 0),
        "float16",
    ),
    ("mean-float16", lambda m: m.mean(m.ones(2, dtype=m.float16)), "float16"),
    ("sum-float16-strided", lambda m: m.full((4000, 2), 0.1, dtype=m.float16).sum(0), "float16"),
    ("var-float16", lambda m: m.full((4000, 2), 0.1, dtype=m.float16).var(0), "float16"),
    ("nansum-int", lambda m: m.nansum(m.tensor([1, 2])), "int64"),
    ("nansum-bool", lambda m: m.nansum(m.tensor([True, True])), "int64"),
    ("all-uint8", lambda m: m.all(m.ones(2, dtype=m.uint8)), "uint8"),
    ("any-uint8", lambda m: m.any(m.ones(2, dtype=m.uint8), 0), "uint8"),
    ("any-int64", lambda m: m.any(m.ones(2, dtype=m.int64)), "bool"),
    ("logsumexp-int", lambda m: m.logsumexp(m.tensor([1, 2]), 0), "float32"),
    ("amax-int", lambda m: m.amax(m.tensor([1, 2])), "int64"),
    ("argmax", lambda m: m.argmax(m.ones(2)), "int64"),
    ("count_nonzero", lambda m: m.count_nonzero(m.ones(2)), "int64"),
    ("all-float", lambda m: m.all(m.ones(2)), "bool"),
    ("var-float64", lambda m: m.var(m.ones(3, dtype=m.float64)), "float64"),
    (
        "lerp-float64",
        lambda m: m.lerp(m.ones(2, dtype=m.float64), m.zeros(2, dtype=m.float64), 0.5),
        "float64",
    ),
    (
        "complex64+float64",
        lambda m: m.ones(2, dtype=m.complex64) + m.ones(2, dtype=m.float64),
        "complex128",
    ),
    (
        "complex64+0d-float64",
        lambda m: m.ones(2, dtype=m.complex64) + m.tensor(1.0, dtype=m.float64),
        "complex64",
    ),
    ("float32+complex-scalar", lambda m: m.ones(2) * 1j, "complex64"),
    ("int+complex-scalar", lambda m: m.tensor([1]) + 1j, "complex64"),
    ("angle-int", lambda m: m.angle(m.tensor([-1, 2])), "float32"),
    ("real-complex128", lambda m: m.real(m.ones(2, dtype=m.complex128)), "float64"),
    ("angle-complex64", lambda m: m.angle(m.ones(2, dtype=m.complex64)), "float32"),
    (
        "scatter-int-float-value",
        lambda m: m.scatter(m.zeros(3, dtype=m.int64), 0, m.tensor([1]), value=1.7),
        "int64",
    ),
    (
        "masked_fill-int-float",
        lambda m: m.zeros(2, dtype=m.int64).masked_fill(m.tensor([True, False]), 2.5),
        "int64",
    ),
]


def _dtype_name(t: Any) -> str:
    return str(t.dtype).split(".")[-1]


# Known bugs in files outside this suite's reach: name -> reason (strict xfail).
PROMOTION_XFAIL: dict[str, str] = {}


def _promotion_params() -> list:
    params = []
    for name, expression, expected in PROMOTION:
        reason = PROMOTION_XFAIL.get(name)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(expression, expected, id=name, marks=marks))
    return params


@pytest.mark.parametrize(("expression", "expected"), _promotion_params())
def test_promotion(expression: Callable, expected: str) -> None:
    out = expression(tk)
    assert out.dtype.name == expected
    if torch is not None:
        reference = expression(torch)
        assert _dtype_name(reference) == expected
        np.testing.assert_allclose(np.asarray(out), reference.numpy(), rtol=1e-3)


@pytest.fixture
def float64_default() -> Any:
    tk.set_default_dtype(tk.float64)
    if torch is not None:
        torch.set_default_dtype(torch.float64)
    yield
    tk.set_default_dtype(tk.float32)
    if torch is not None:
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        pytest.param(lambda m: m.tensor([1, 2]) + 1.5, "float64", id="int+float-scalar"),
        pytest.param(lambda m: m.exp(m.tensor([1, 2])), "float64", id="exp-int"),
        pytest.param(lambda m: m.tensor([1, 2]) / 2, "float64", id="div-int"),
        pytest.param(lambda m: m.ones(2, dtype=m.float32) * 2.5, "float32", id="float32-kept"),
        pytest.param(lambda m: m.tensor([1]) + 1j, "complex128", id="int+complex-scalar"),
    ],
)
def test_promotion_follows_default_dtype(
    float64_default: None, expression: Callable, expected: str
) -> None:
    out = expression(tk)
    assert out.dtype.name == expected
    if torch is not None:
        assert _dtype_name(expression(torch)) == expected
