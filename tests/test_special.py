"""tk.special and the special-function ops: values against torch.special (float64, float32,
float16, integer inputs, edge values and poles), float64 gradchecks of first and second order
and PyTorch's gradients for the differentiable functions, the Bessel functions' lack of a
gradient, the Tensor methods and in-place forms, misuse errors and the missing-SciPy error.
"""

from __future__ import annotations

import builtins
import importlib
from typing import Any

import numpy as np
import pytest
from harness import check_grads, check_torch

import tensorkit as tk
import tensorkit.special

S = tk.special
EDGES = np.array([-2.0, -1.0, -0.5, 0.0, -0.0, 1.0, 2.0, np.inf, -np.inf, np.nan, 0.3, 7.5, -3.7])
UNIT = np.array([-1.0, -0.999, -0.5, 0.0, -0.0, 0.25, 0.9, 1.0, 1.5, np.inf, np.nan])
PROBABILITY = np.array([0.0, 1e-6, 0.1, 0.5, 0.9, 1.0, -0.1, 1.1, np.nan])

# tk name: (torch attribute path, edge values, a safe domain for gradients or None when
# PyTorch has no gradient, float16 allowed)
UNARY: dict[str, tuple[str, np.ndarray, tuple[float, float] | None, bool]] = {
    "gammaln": ("special.gammaln", EDGES, (0.2, 5.0), True),
    "digamma": ("special.digamma", EDGES, (0.2, 5.0), True),
    "psi": ("special.psi", EDGES, (0.2, 5.0), True),
    "erfinv": ("special.erfinv", UNIT, (-0.9, 0.9), True),
    "i0": ("special.i0", EDGES, (-3.0, 3.0), True),
    "i0e": ("special.i0e", EDGES, (0.1, 3.0), True),
    "i1": ("special.i1", EDGES, (-3.0, 3.0), True),
    "i1e": ("special.i1e", EDGES, (0.1, 3.0), True),
    "erfcx": ("special.erfcx", EDGES, (-2.0, 3.0), False),
    "ndtr": ("special.ndtr", EDGES, (-3.0, 3.0), True),
    "ndtri": ("special.ndtri", PROBABILITY, (0.05, 0.95), False),
    "log_ndtr": ("special.log_ndtr", EDGES, (-3.0, 3.0), False),
    "entr": ("special.entr", EDGES, (0.1, 3.0), True),
    "bessel_j0": ("special.bessel_j0", EDGES, None, False),
    "bessel_j1": ("special.bessel_j1", EDGES, None, False),
    "bessel_y0": ("special.bessel_y0", EDGES, None, False),
    "bessel_y1": ("special.bessel_y1", EDGES, None, False),
    "modified_bessel_i0": ("special.modified_bessel_i0", EDGES, None, False),
    "modified_bessel_i1": ("special.modified_bessel_i1", EDGES, None, False),
    "modified_bessel_k0": ("special.modified_bessel_k0", EDGES, None, False),
    "modified_bessel_k1": ("special.modified_bessel_k1", EDGES, None, False),
    "scaled_modified_bessel_k0": ("special.scaled_modified_bessel_k0", EDGES, None, False),
    "scaled_modified_bessel_k1": ("special.scaled_modified_bessel_k1", EDGES, None, False),
    "spherical_bessel_j0": ("special.spherical_bessel_j0", EDGES, None, False),
}
DIFFERENTIABLE = [name for name, row in UNARY.items() if row[2] is not None]
TOP_LEVEL = ("lgamma", "digamma", "polygamma", "mvlgamma", "erfinv", "i0", "igamma", "igammac")


def torch_fn(path: str) -> Any:
    torch = pytest.importorskip("torch")
    value = torch
    for part in path.split("."):
        value = getattr(value, part)
    return value


def uniform(low: float, high: float, *shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(low, high, shape)


def assert_same_values(mine: tk.Tensor, theirs: Any, rtol: float = 1e-6, atol: float = 0.0) -> None:
    got, expected = np.asarray(mine.detach()), theirs.detach().numpy()
    assert got.dtype == expected.dtype
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", UNARY)
def test_values_and_edges_match_torch(name: str, dtype: str) -> None:
    torch = pytest.importorskip("torch")
    path, edges, domain, _ = UNARY[name]
    low, high = domain or (0.1, 9.0)
    x = np.concatenate([edges, uniform(low, high, 20)]).astype(dtype)
    # PyTorch's Bessel kernels agree with SciPy's to about 1e-7 (absolute) near their zeros.
    rtol, atol = (1e-5, 1e-6) if dtype == "float32" else (1e-10, 0.0)
    if dtype == "float64" and name.startswith("bessel_"):
        rtol, atol = 1e-6, 1e-6
    mine, theirs = getattr(S, name)(tk.tensor(x)), torch_fn(path)(torch.tensor(x))
    assert_same_values(mine, theirs, rtol, atol)


def test_signed_zeros_and_infinities_match_torch() -> None:
    torch = pytest.importorskip("torch")
    x = np.array([-0.0, 0.0, -np.inf])
    for name in ("erfinv", "gammaln", "bessel_j1", "i1"):
        got = np.asarray(getattr(S, name)(tk.tensor(x)))
        expected = getattr(torch.special, name)(torch.tensor(x)).numpy()
        assert np.array_equal(np.signbit(got), np.signbit(expected)), name
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradients_of_first_and_second_order(name: str) -> None:
    low, high = UNARY[name][2]
    check_grads(getattr(S, name), uniform(low, high, 5))


@pytest.mark.parametrize("name", DIFFERENTIABLE)
def test_gradients_match_torch(name: str) -> None:
    path, _, (low, high), _ = UNARY[name]
    check_torch(getattr(S, name), torch_fn(path), uniform(low, high, 2, 3), rtol=1e-9)


def test_i1_gradients_at_zero_are_one_half_as_torch() -> None:
    for name in ("i1", "i1e"):
        x = tk.tensor([0.0, 1.0], dtype=tk.float64, requires_grad=True)
        getattr(S, name)(x).sum().backward()
        assert x.grad[0].item() == 0.5
    check_torch(S.i1e, torch_fn("special.i1e"), np.array([0.0, -0.7, 2.0]))


@pytest.mark.parametrize("name", [n for n, row in UNARY.items() if row[2] is None])
def test_the_bessel_functions_are_not_differentiable_as_in_torch(name: str) -> None:
    torch = pytest.importorskip("torch")
    x = tk.tensor([0.5, 1.5], requires_grad=True)
    out = getattr(S, name)(x)
    expected = torch_fn(UNARY[name][0])(torch.tensor([0.5, 1.5], requires_grad=True))
    assert out.requires_grad is expected.requires_grad is False
    assert out.grad_fn is None


@pytest.mark.parametrize("name", UNARY)
def test_integer_and_bool_inputs_compute_in_the_default_float(name: str) -> None:
    torch = pytest.importorskip("torch")
    path = UNARY[name][0]
    for values in ([0, 1, 2, 3, -1], [True, False]):
        assert_same_values(
            getattr(S, name)(tk.tensor(values)), torch_fn(path)(torch.tensor(values))
        )
    tk.set_default_dtype(tk.float64)
    assert getattr(S, name)(tk.tensor([1, 2])).dtype == tk.float64


@pytest.mark.parametrize("name", UNARY)
def test_float16_computes_or_is_refused_as_torch(name: str) -> None:
    torch = pytest.importorskip("torch")
    path, _, domain, half = UNARY[name]
    low, high = domain or (0.1, 3.0)
    x = uniform(low, high, 6).astype(np.float16)
    if half:
        out = getattr(S, name)(tk.tensor(x))
        assert out.dtype == tk.float16
        # PyTorch's float16 ndtr loses a few bits in 1 + erf(x / sqrt(2)) for small results.
        assert_same_values(out, torch_fn(path)(torch.tensor(x)), rtol=2e-3, atol=1e-4)
        return
    with pytest.raises(NotImplementedError) as expected:
        torch_fn(path)(torch.tensor(x))
    with pytest.raises(NotImplementedError) as got:
        getattr(S, name)(tk.tensor(x))
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("name", [*UNARY, "lgamma", "polygamma"])
def test_complex_inputs_are_refused_as_torch(name: str) -> None:
    torch = pytest.importorskip("torch")
    if name in ("lgamma", "polygamma"):
        mine, theirs = tk.lgamma, torch.lgamma
        if name == "polygamma":
            mine, theirs = (lambda x: tk.polygamma(1, x)), (lambda x: torch.polygamma(1, x))
    else:
        mine, theirs = getattr(S, name), torch_fn(UNARY[name][0])
    with pytest.raises(NotImplementedError) as expected:
        theirs(torch.tensor([1 + 1j]))
    with pytest.raises(NotImplementedError) as got:
        mine(tk.tensor([1 + 1j]))
    assert str(got.value) == str(expected.value)


# ------------------------------------------------------------------ polygamma and mvlgamma
@pytest.mark.parametrize("n", [0, 1, 2, 3])
def test_polygamma_values_and_gradients(n: int) -> None:
    torch = pytest.importorskip("torch")
    x = np.concatenate([[-0.5, 0.0, 1.0, 2.0, np.nan], uniform(0.1, 6.0, 10)])
    # PyTorch's trigamma series is good to about 1e-9; SciPy's is exact to rounding.
    for dtype, rtol in (("float64", 1e-8), ("float32", 1e-5)):
        a = x.astype(dtype)
        expected = torch.polygamma(n, torch.tensor(a))
        assert_same_values(tk.polygamma(n, tk.tensor(a)), expected, rtol)
        assert_same_values(S.polygamma(n, tk.tensor(a)), expected, rtol)
    check_grads(lambda t: tk.polygamma(n, t), uniform(0.5, 4.0, 4))
    check_torch(
        lambda t: tk.polygamma(n, t),
        lambda t: torch.polygamma(n, t),
        uniform(0.5, 4.0, 2, 3),
        rtol=1e-9,
    )


def test_polygamma_has_poles_at_the_non_positive_integers() -> None:
    """SciPy gives inf at the poles, where PyTorch's series gives large finite numbers for
    n = 1, and SciPy's limits at infinity, where PyTorch has nan for some n (see
    docs/guide/differences.md)."""
    out = tk.polygamma(1, tk.tensor([0.0, -1.0, -2.0, -np.inf], dtype=tk.float64))
    assert np.all(np.isposinf(np.asarray(out)))
    out = tk.polygamma(2, tk.tensor([np.inf], dtype=tk.float64))
    assert out.item() == 0


def test_polygamma_misuse_errors_match_torch() -> None:
    torch = pytest.importorskip("torch")
    t, x = torch.tensor([1.5]), tk.tensor([1.5])
    for n in (-1, 1.5, True):
        with pytest.raises((RuntimeError, TypeError)) as expected:
            torch.polygamma(n, t)
        with pytest.raises(expected.type, match="^" + _escaped(expected.value) + "$"):
            tk.polygamma(n, x)


@pytest.mark.parametrize("p", [1, 2, 3, 4])
def test_mvlgamma_values_and_gradients(p: int) -> None:
    torch = pytest.importorskip("torch")
    x = np.concatenate([[0.0, 0.5, 1.0, 1.5, np.inf, np.nan], uniform(p / 2, p + 4.0, 10)])
    for dtype, rtol in (("float64", 1e-10), ("float32", 1e-5)):
        a = x.astype(dtype)
        expected = torch.mvlgamma(torch.tensor(a), p)
        assert_same_values(tk.mvlgamma(tk.tensor(a), p), expected, rtol)
        assert_same_values(S.multigammaln(tk.tensor(a), p), expected, rtol)
    safe = uniform(p / 2 + 0.2, p + 3.0, 4)
    check_grads(lambda t: tk.mvlgamma(t, p), safe)
    check_torch(
        lambda t: tk.mvlgamma(t, p), lambda t: torch.mvlgamma(t, p), safe.reshape(2, 2), rtol=1e-9
    )


def test_mvlgamma_misuse_errors_match_torch() -> None:
    torch = pytest.importorskip("torch")
    cases = [([1.5], 0), ([1.5], 1.5), ([True], 1)]
    for values, p in cases:
        with pytest.raises((RuntimeError, TypeError)) as expected:
            torch.mvlgamma(torch.tensor(values), p)
        with pytest.raises(expected.type, match="^" + _escaped(expected.value) + "$"):
            tk.mvlgamma(tk.tensor(values), p)
    assert_same_values(tk.mvlgamma(tk.tensor([1, 2]), 3), torch.mvlgamma(torch.tensor([1, 2]), 3))


def _escaped(error: BaseException) -> str:
    import re

    return re.escape(str(error))


# ------------------------------------------------------------------ two operands
PAIRS: dict[str, tuple[str, Any, Any]] = {
    "gammainc": ("special.gammainc", (0.2, 4.0), (0.1, 5.0)),
    "gammaincc": ("special.gammaincc", (0.2, 4.0), (0.1, 5.0)),
    "zeta": ("special.zeta", (1.5, 5.0), (0.3, 4.0)),
    "xlog1py": ("special.xlog1py", (-2.0, 2.0), (-0.9, 3.0)),
}
PAIR_EDGES = np.array([0.0, -0.0, 1.0, 2.0, -1.0, -2.5, 0.5, np.inf, -np.inf, np.nan])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", PAIRS)
def test_two_operand_values_match_torch(name: str, dtype: str) -> None:
    torch = pytest.importorskip("torch")
    path, (a0, a1), (b0, b1) = PAIRS[name]
    a = np.concatenate([np.repeat(PAIR_EDGES, len(PAIR_EDGES)), uniform(a0, a1, 12)])
    b = np.concatenate([np.tile(PAIR_EDGES, len(PAIR_EDGES)), uniform(b0, b1, 12, seed=1)])
    a, b = a.astype(dtype), b.astype(dtype)
    rtol = 1e-5 if dtype == "float32" else 1e-9
    expected = torch_fn(path)(torch.tensor(a), torch.tensor(b))
    assert_same_values(getattr(S, name)(tk.tensor(a), tk.tensor(b)), expected, rtol)


def test_second_operand_gradients_match_torch() -> None:
    torch = pytest.importorskip("torch")
    for name, (path, (a0, a1), (b0, b1)) in PAIRS.items():
        a, b = uniform(a0, a1, 2, 3), uniform(b0, b1, 2, 3, seed=1)
        mine, theirs = getattr(S, name), torch_fn(path)
        check_grads(lambda y, a=a, mine=mine: mine(tk.tensor(a), y), b)
        check_torch(
            lambda y, a=a, mine=mine: mine(tk.tensor(a), y),
            lambda y, a=a, theirs=theirs: theirs(torch.tensor(a), y),
            b,
            rtol=1e-8,
        )


def test_xlog1py_gradients_of_both_operands_match_torch() -> None:
    torch = pytest.importorskip("torch")
    a, b = uniform(-2.0, 2.0, 2, 3), uniform(-0.9, 3.0, 2, 3, seed=1)
    check_grads(S.xlog1py, a, b)
    check_torch(S.xlog1py, torch.special.xlog1py, a, b, rtol=1e-9)
    # d/dx is 0 where x == 0 and y <= -1; d/dy is x / (1 + y).
    check_torch(
        S.xlog1py, torch.special.xlog1py, np.array([0.0, 0.0, 1.0]), np.array([-1.0, -2.0, 1.0])
    )


@pytest.mark.parametrize("name", ["gammainc", "gammaincc", "zeta"])
def test_first_operand_has_no_derivative_as_in_torch(name: str) -> None:
    torch = pytest.importorskip("torch")
    path, (a0, a1), (b0, b1) = PAIRS[name]
    a, b = uniform(a0, a1, 3), uniform(b0, b1, 3)
    ta = torch.tensor(a, requires_grad=True)
    with pytest.raises(NotImplementedError) as expected:
        torch_fn(path)(ta, torch.tensor(b)).sum().backward()
    x = tk.tensor(a, requires_grad=True)
    with pytest.raises(NotImplementedError) as got:
        getattr(S, name)(x, tk.tensor(b)).sum().backward()
    assert str(got.value) == str(expected.value)


def test_zeta_and_xlog1py_take_one_number_as_torch() -> None:
    torch = pytest.importorskip("torch")
    t, x = torch.tensor([1.5, 2.5]), tk.tensor([1.5, 2.5])
    for name in ("zeta", "xlog1py"):
        theirs, mine = getattr(torch.special, name), getattr(S, name)
        assert_same_values(mine(x, 2), theirs(t, 2))
        assert_same_values(mine(3.0, x), theirs(3.0, t))
        assert_same_values(
            mine(x, tk.tensor(2.0, dtype=tk.float64)),
            theirs(t, torch.tensor(2.0, dtype=torch.float64)),
        )
        assert_same_values(
            mine(tk.tensor([1, 2]), tk.tensor([2, 3])),
            theirs(torch.tensor([1, 2]), torch.tensor([2, 3])),
        )
        with pytest.raises(TypeError) as expected:
            theirs(2, 3)
        with pytest.raises(TypeError) as got:
            mine(2, 3)
        assert str(got.value) == str(expected.value)
    q = tk.tensor([1.5, 2.5], dtype=tk.float64, requires_grad=True)
    check_grads(lambda q: S.zeta(3.0, q), np.array([1.5, 2.5]))
    assert S.zeta(q, 3.0).requires_grad


def test_igamma_dtypes_and_misuse_match_torch() -> None:
    torch = pytest.importorskip("torch")
    t32, t64 = torch.tensor([1.0, 2.0]), torch.tensor([1.5, 0.5], dtype=torch.float64)
    k32, k64 = tk.tensor([1.0, 2.0]), tk.tensor([1.5, 0.5], dtype=tk.float64)
    for name in ("igamma", "igammac"):
        theirs, mine = getattr(torch, name), getattr(tk, name)
        assert_same_values(mine(k32, k64), theirs(t32, t64))
        assert_same_values(mine(tk.tensor([1, 2]), k32), theirs(torch.tensor([1, 2]), t32))
        assert_same_values(mine(k32.half(), k32.half()), theirs(t32.half(), t32.half()), 1e-3)
        for bad in ([1, 2], [True, False]):
            with pytest.raises(NotImplementedError) as expected:
                theirs(torch.tensor(bad), torch.tensor(bad))
            with pytest.raises(NotImplementedError, match=_escaped(expected.value)):
                mine(tk.tensor(bad), tk.tensor(bad))
        for args in ((k32, 2.0), (2.0, k32)):
            torch_args = tuple(t32 if isinstance(a, tk.Tensor) else a for a in args)
            with pytest.raises(TypeError) as expected:
                theirs(*torch_args)
            with pytest.raises(TypeError, match="^" + _escaped(expected.value) + "$"):
                mine(*args)


# ------------------------------------------------------------------ names, methods, in place
def test_top_level_names_are_those_torch_has() -> None:
    torch = pytest.importorskip("torch")
    for name in (*TOP_LEVEL, "xlog1py", "gammaln", "zeta", "ndtr"):
        assert hasattr(tk, name) == hasattr(torch, name), name
    assert tk.lgamma is S.gammaln and tk.digamma is S.psi is S.digamma
    assert tk.mvlgamma is S.multigammaln and tk.igamma is S.gammainc
    assert tk.igammac is S.gammaincc


def test_every_torch_special_name_but_the_skipped_ones_exists() -> None:
    torch = pytest.importorskip("torch")
    skipped = ("airy_ai", "polynomial")
    names = [n for n in dir(torch.special) if not n.startswith("_") and n[0].islower()]
    wanted = {n for n in names if callable(getattr(torch.special, n))}
    wanted -= {n for n in wanted if any(s in n for s in skipped)}
    assert wanted <= set(S.__all__)
    assert set(S.__all__) <= set(names)


def test_aliases_are_tensorkits_own_functions() -> None:
    for name in ("sinc", "logit", "exp2", "expm1", "log1p", "erf", "erfc", "xlogy", "round"):
        assert getattr(S, name) is getattr(tk, name)
    assert S.expit is tk.sigmoid
    assert S.logsumexp is tk.logsumexp and S.softmax is tk.softmax
    assert S.log_softmax is tk.log_softmax


def test_module_is_exposed_lazily() -> None:
    assert "special" in tk._LAZY_SUBMODULES
    assert importlib.import_module("tensorkit.special") is tk.special


METHODS = {
    "lgamma": ((), [0.5, 2.5]),
    "digamma": ((), [0.5, 2.5]),
    "polygamma": ((2,), [0.5, 2.5]),
    "mvlgamma": ((2,), [1.5, 2.5]),
    "erfinv": ((), [-0.5, 0.25]),
    "i0": ((), [-0.5, 2.5]),
    "igamma": (("other",), [0.5, 2.5]),
    "igammac": (("other",), [0.5, 2.5]),
}


@pytest.mark.parametrize("name", METHODS)
def test_methods_and_inplace_forms_match_torch(name: str) -> None:
    torch = pytest.importorskip("torch")
    args, values = METHODS[name]
    mine_args = tuple(tk.tensor([1.0, 2.0]) if a == "other" else a for a in args)
    torch_args = tuple(torch.tensor([1.0, 2.0]) if a == "other" else a for a in args)
    expected = getattr(torch.tensor(values), name)(*torch_args)
    assert_same_values(getattr(tk.tensor(values), name)(*mine_args), expected)
    t = tk.tensor(values)
    assert getattr(t, name + "_")(*mine_args) is t
    assert_same_values(t, expected)
    assert t._version == 1
    if name in ("igamma", "igammac"):
        return
    # PyTorch refuses to write a float result into an integer tensor; tensorkit's in-place
    # ops say so in their own words (ops/inplace.py).
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
        getattr(torch.tensor([1, 2]), name + "_")(*torch_args)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        getattr(tk.tensor([1, 2]), name + "_")(*mine_args)


def test_inplace_form_differentiates_through_a_non_leaf() -> None:
    x = tk.tensor([0.5, 1.5], dtype=tk.float64, requires_grad=True)
    y = x * 1
    y.lgamma_()
    y.sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), np.asarray(tk.digamma(x.detach())))


# ------------------------------------------------------------------ SciPy missing
def test_without_scipy_the_error_names_the_function_and_the_fix(monkeypatch) -> None:
    real_import = builtins.__import__

    def no_scipy(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "scipy" or name.startswith("scipy."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_scipy)
    x = tk.tensor([0.5, 1.5])
    calls = {
        "lgamma": lambda: S.gammaln(x),
        "polygamma": lambda: tk.polygamma(1, x),
        "mvlgamma": lambda: tk.mvlgamma(x, 1),
        "igamma": lambda: S.gammainc(x, x),
        "zeta": lambda: S.zeta(x, 2.0),
        "bessel_j0": lambda: S.bessel_j0(x),
    }
    for function, call in calls.items():
        with pytest.raises(ModuleNotFoundError, match=rf"^{function}\(\).*pip install scipy"):
            call()
    # sin(x) / x needs no SciPy.
    np.testing.assert_allclose(
        np.asarray(S.spherical_bessel_j0(x)), np.sin([0.5, 1.5]) / [0.5, 1.5], rtol=1e-6
    )


@pytest.mark.parametrize("name", [*UNARY, "polygamma", "multigammaln"])
def test_zero_dim_inputs_give_zero_dim_arrays(name: str) -> None:
    x = tk.tensor(0.7, dtype=tk.float64)
    if name == "polygamma":
        outs = [S.polygamma(0, x), S.polygamma(2, x)]
    elif name == "multigammaln":
        outs = [S.multigammaln(x + 2, 3)]
    else:
        outs = [getattr(S, name)(x)]
    for out in outs:
        assert out.shape == () and type(out._data) is np.ndarray
