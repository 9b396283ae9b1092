"""tk.fft: PyTorch parity of values, dtypes and gradients for every transform over its
n/s/dim/norm options with real and complex inputs, float64 gradchecks of first and second
order, the frequency helpers and shifts, and the errors for misuse.

Complex inputs and outputs go through their real and imaginary parts (``tk.complex(re, im)``
in, ``(out.real, out.imag)`` out), so the real-valued harness checks them too.
"""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from harness import check_grads, check_torch

import tensorkit as tk
import tensorkit.fft

F = tk.fft
NORMS = [None, "backward", "ortho", "forward"]
SHAPE = (2, 3, 4)


def normal(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def parts(out: Any) -> Any:
    """A complex output as its real and imaginary parts; a real one as it is. (PyTorch's
    conjugate views are resolved first: NumPy cannot read their lazily negated parts.)"""
    if not isinstance(out, tk.Tensor):
        out = out.resolve_conj()
    return (out.real, out.imag) if out.is_complex() else out


def complex_fn(lib: Any, fft_module: Any, name: str, kwargs: dict) -> Any:
    """``name`` applied to ``complex(re, im)``, returning real tensors."""
    return lambda re, im: parts(getattr(fft_module, name)(lib.complex(re, im), **kwargs))


def real_fn(fft_module: Any, name: str, kwargs: dict) -> Any:
    return lambda x: parts(getattr(fft_module, name)(x, **kwargs))


ONE_D = [{}, {"n": 3}, {"n": 7, "dim": 0}, {"norm": "ortho", "dim": 1}, {"n": 6, "norm": "forward"}]
TWO_D = [
    {},
    {"s": (2, 7)},
    {"dim": (2, 0)},
    {"s": (5, 3), "dim": (0, 2), "norm": "ortho"},
    {"s": (-1, 5), "norm": "forward"},
]
N_D = [
    {},
    {"s": (3, 5)},
    {"dim": 1, "s": 5},
    {"dim": (-1, 0), "norm": "ortho"},
    {"s": (1, -1, 6), "norm": "forward"},
]

# name: (option sets, input kinds)
TRANSFORMS = {
    "fft": (ONE_D, ("real", "complex")),
    "ifft": (ONE_D, ("real", "complex")),
    "fft2": (TWO_D, ("real", "complex")),
    "ifft2": (TWO_D, ("real", "complex")),
    "fftn": (N_D, ("real", "complex")),
    "ifftn": (N_D, ("real", "complex")),
    "rfft": (ONE_D, ("real",)),
    "irfft": (ONE_D, ("real", "complex")),
    "rfft2": (TWO_D, ("real",)),
    "irfft2": (TWO_D, ("real", "complex")),
    "rfftn": (N_D, ("real",)),
    "irfftn": (N_D, ("real", "complex")),
    "hfft": (ONE_D, ("real", "complex")),
    "ihfft": (ONE_D, ("real",)),
    "hfft2": (TWO_D, ("real", "complex")),
    "ihfft2": (TWO_D, ("real",)),
    "hfftn": (N_D, ("real", "complex")),
    "ihfftn": (N_D, ("real",)),
}

CASES = [
    pytest.param(name, kind, kwargs, id=f"{name}-{kind}-{i}")
    for name, (options, kinds) in TRANSFORMS.items()
    for kind in kinds
    for i, kwargs in enumerate(options)
]


def test_names_and_signatures():
    assert set(F.__all__) == {*TRANSFORMS, "fftfreq", "rfftfreq", "fftshift", "ifftshift"}
    for name in TRANSFORMS:
        parameters = inspect.signature(getattr(F, name)).parameters
        size = "n" if name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft") else "s"
        assert list(parameters) == ["input", size, "dim", "norm"]
        assert parameters["norm"].default is None
    assert inspect.signature(F.fft2).parameters["dim"].default == (-2, -1)
    assert inspect.signature(F.fftn).parameters["dim"].default is None
    assert list(inspect.signature(F.fftfreq).parameters) == [
        "n",
        "d",
        "dtype",
        "device",
        "requires_grad",
    ]
    assert list(inspect.signature(F.fftshift).parameters) == ["input", "dim"]


def test_module_is_exposed_lazily():
    assert tk.fft is tensorkit.fft
    code = "import sys, tensorkit; print('tensorkit.fft' in sys.modules)"
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert fresh.stdout.strip() == "False", fresh.stderr


@pytest.mark.parametrize(("name", "kind", "kwargs"), CASES)
def test_values_and_gradients_match_torch(name, kind, kwargs):
    torch = pytest.importorskip("torch")
    if kind == "real":
        check_torch(real_fn(F, name, kwargs), real_fn(torch.fft, name, kwargs), normal(*SHAPE))
    else:
        check_torch(
            complex_fn(tk, F, name, kwargs),
            complex_fn(torch, torch.fft, name, kwargs),
            normal(*SHAPE),
            normal(*SHAPE, seed=1),
        )


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_norms_match_torch(name, norm):
    torch = pytest.importorskip("torch")
    kwargs = {"norm": norm}
    check_torch(real_fn(F, name, kwargs), real_fn(torch.fft, name, kwargs), normal(*SHAPE))


GRADCHECK_CASES = [
    pytest.param(name, kind, options[i], id=f"{name}-{kind}-{i}")
    for name, (options, kinds) in TRANSFORMS.items()
    for kind in kinds
    for i in (1, 3)
]


@pytest.mark.parametrize(("name", "kind", "kwargs"), GRADCHECK_CASES)
def test_gradcheck_and_gradgradcheck(name, kind, kwargs):
    if kind == "real":
        check_grads(real_fn(F, name, kwargs), normal(*SHAPE))
    else:
        check_grads(complex_fn(tk, F, name, kwargs), normal(*SHAPE), normal(*SHAPE, seed=1))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_result_dtypes_match_torch(name, dtype):
    torch = pytest.importorskip("torch")
    x = normal(*SHAPE).astype(np.float64)
    x = (x > 0) if dtype == "bool" else (3 * x).astype(dtype)
    theirs = lambda t: getattr(torch.fft, name)(t).resolve_conj()  # noqa: E731
    check_torch(getattr(F, name), theirs, x, grad=False, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name", ["fft", "ifftn", "irfft", "hfft2"])
@pytest.mark.parametrize("dtype", [tk.complex64, tk.complex128])
def test_complex_dtypes_match_torch(name, dtype):
    torch = pytest.importorskip("torch")
    z = normal(*SHAPE) + 1j * normal(*SHAPE, seed=1)
    z = z.astype(dtype.np)
    mine = getattr(F, name)(tk.tensor(z))
    theirs = getattr(torch.fft, name)(torch.tensor(z)).numpy()
    assert mine.dtype.np == theirs.dtype
    np.testing.assert_allclose(np.asarray(mine), theirs, atol=1e-4, rtol=1e-4)


def test_round_trips():
    x = tk.tensor(normal(*SHAPE))
    np.testing.assert_allclose(np.asarray(F.irfftn(F.rfftn(x), s=x.shape)), np.asarray(x))
    np.testing.assert_allclose(np.asarray(F.ifft2(F.fft2(x)).real), np.asarray(x), atol=1e-12)
    np.testing.assert_allclose(np.asarray(F.hfft(F.ihfft(x), n=4)), np.asarray(x), atol=1e-12)


@pytest.mark.parametrize("n", [0, 1, 4, 5])
@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequencies_match_torch(name, n):
    torch = pytest.importorskip("torch")
    for kwargs, torch_kwargs in (
        ({}, {}),
        ({"d": 0.5}, {"d": 0.5}),
        ({"dtype": tk.float64}, {"dtype": torch.float64}),
    ):
        mine = getattr(F, name)(n, **kwargs)
        theirs = getattr(torch.fft, name)(n, **torch_kwargs)
        assert mine.dtype.np == theirs.numpy().dtype
        np.testing.assert_allclose(np.asarray(mine), theirs.numpy())


def test_frequency_options():
    freq = F.fftfreq(4, 2.0, dtype=tk.float64, device="cpu", requires_grad=True)
    assert freq.dtype == tk.float64 and freq.requires_grad and freq.is_leaf
    assert not F.rfftfreq(4).requires_grad


@pytest.mark.parametrize("dim", [None, 0, -1, (0, 2), [1]])
@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
def test_shifts_match_torch(name, dim):
    torch = pytest.importorskip("torch")
    check_torch(
        lambda x: getattr(F, name)(x, dim=dim),
        lambda x: getattr(torch.fft, name)(x, dim=dim),
        normal(2, 3, 5),
    )
    check_torch(
        complex_fn(tk, F, name, {"dim": dim}),
        complex_fn(torch, torch.fft, name, {"dim": dim}),
        normal(2, 3, 5),
        normal(2, 3, 5, seed=1),
    )


def test_shift_gradcheck():
    check_grads(lambda x: F.ifftshift(F.fftshift(x, dim=1) * x, dim=(0, 1)), normal(3, 5))


REAL = normal(4, 6)
COMPLEX = REAL + 1j * normal(4, 6, seed=1)

# (function, input, kwargs, exception type, message), with PyTorch's texts.
ERRORS = [
    ("fft", REAL.astype(np.float16), {}, RuntimeError, "Unsupported dtype Half"),
    ("rfftn", REAL.astype(np.float16), {}, RuntimeError, "Unsupported dtype Half"),
    ("irfft", REAL.astype(np.float16), {}, RuntimeError, "Unsupported dtype Half"),
    ("fft", REAL, {"norm": "foo"}, RuntimeError, 'Invalid normalization mode: "foo"'),
    ("ihfft2", REAL, {"norm": "unitary"}, RuntimeError, 'Invalid normalization mode: "unitary"'),
    ("fft", REAL, {"n": 0}, RuntimeError, "Invalid number of data points (0) specified"),
    ("irfft", COMPLEX, {"n": -1}, RuntimeError, "Invalid number of data points (-1) specified"),
    ("fftn", REAL, {"s": (0, 3)}, RuntimeError, "Invalid number of data points (0) specified"),
    ("fftn", REAL, {"s": (-2, 3)}, RuntimeError, "Invalid number of data points (-2) specified"),
    ("irfftn", COMPLEX, {"s": (4, 0)}, RuntimeError, "Invalid number of data points (0) specified"),
    (
        "irfft",
        COMPLEX[:, :1],
        {},
        RuntimeError,
        "Invalid number of data points (0) specified",
    ),
    (
        "fft",
        REAL,
        {"dim": 2},
        IndexError,
        "Dimension out of range (expected to be in range of [-2, 1], but got 2)",
    ),
    (
        "fft2",
        REAL[0],
        {},
        IndexError,
        "Dimension out of range (expected to be in range of [-1, 0], but got -2)",
    ),
    (
        "fft",
        np.array(3.0),
        {},
        IndexError,
        "Dimension specified as -1 but tensor has no dimensions",
    ),
    ("fftn", REAL, {"dim": (0, -2)}, RuntimeError, "FFT dims must be unique"),
    (
        "fftn",
        REAL,
        {"s": (3,), "dim": (0, 1)},
        RuntimeError,
        "When given, dim and shape arguments must have the same length",
    ),
    (
        "fftn",
        REAL,
        {"s": (3, 3, 3)},
        RuntimeError,
        "Got shape with 3 values but input tensor only has 2 dimensions.",
    ),
    ("rfftn", REAL, {"dim": ()}, RuntimeError, "rfftn must transform at least one axis"),
    ("irfftn", COMPLEX, {"dim": ()}, RuntimeError, "irfftn must transform at least one axis"),
    ("hfftn", COMPLEX, {"dim": ()}, RuntimeError, "hfftn must transform at least one axis"),
    ("ihfftn", REAL, {"dim": ()}, RuntimeError, "ihfftn must transform at least one axis"),
    (
        "rfft",
        COMPLEX.astype(np.complex64),
        {},
        RuntimeError,
        "rfft expects a real input tensor, but got ComplexFloat",
    ),
    (
        "rfft2",
        COMPLEX,
        {},
        RuntimeError,
        "rfftn expects a real-valued input tensor, but got ComplexDouble",
    ),
    (
        "ihfft",
        COMPLEX,
        {},
        RuntimeError,
        "ihfft expects a real input tensor, but got ComplexDouble",
    ),
    (
        "ihfftn",
        COMPLEX.astype(np.complex64),
        {},
        RuntimeError,
        "Only supports floating-point dtypes, but found: ComplexFloat",
    ),
    (
        "fftshift",
        REAL,
        {"dim": 3},
        IndexError,
        "Dimension out of range (expected to be in range of [-2, 1], but got 3)",
    ),
    ("fftshift", np.array(3.0), {}, RuntimeError, "`shifts` required"),
]

ERROR_CASES = [pytest.param(*case, id=f"{case[0]}-{i}") for i, case in enumerate(ERRORS)]


@pytest.mark.parametrize(("name", "data", "kwargs", "error", "message"), ERROR_CASES)
def test_errors(name, data, kwargs, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        getattr(F, name)(tk.tensor(data), **kwargs)


@pytest.mark.parametrize(("name", "data", "kwargs", "error", "message"), ERROR_CASES)
def test_error_texts_are_torchs(name, data, kwargs, error, message):
    torch = pytest.importorskip("torch")
    with pytest.raises(error, match=f"^{re.escape(message)}"):
        getattr(torch.fft, name)(torch.tensor(data), **kwargs)


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequency_errors(name):
    with pytest.raises(RuntimeError, match=f"^{name} requires a floating point or complex dtype$"):
        getattr(F, name)(4, dtype=tk.int64)
    with pytest.raises(
        RuntimeError, match=re.escape("Trying to create tensor with negative dimension -1: [-1]")
    ):
        F.fftfreq(-1)
