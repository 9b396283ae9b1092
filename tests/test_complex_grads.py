"""Gradients of ops on complex tensors, first and second order: checked by finite differences
through the real and imaginary parts (no torch needed) and against PyTorch's conjugate
Wirtinger convention where PyTorch is installed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from harness import check_grads

import tensorkit as tk

RNG = np.random.default_rng(11)
A = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3))
B = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3))

# name -> f(lib, a, b): a complex result from two complex 3x3 inputs.
CASES: dict[str, Callable[[Any, Any, Any], Any]] = {
    "mul": lambda lib, a, b: a * b,
    "div": lambda lib, a, b: a / b,
    "matmul": lambda lib, a, b: a @ b,
    "mv": lambda lib, a, b: lib.mv(a, b[0]),
    "dot": lambda lib, a, b: lib.dot(a[0], b[0]),
    "vdot": lambda lib, a, b: lib.vdot(a[0], b[0]),
    "outer": lambda lib, a, b: lib.outer(a[0], b[1]),
    "einsum": lambda lib, a, b: lib.einsum("ij,jk->ik", a, b),
    "tensordot": lambda lib, a, b: lib.tensordot(a, b, 1),
    "addmm": lambda lib, a, b: lib.addmm(a, a, b),
    "exp": lambda lib, a, b: a.exp() * b,
    "tanh": lambda lib, a, b: a.tanh() * b,
    "sigmoid": lambda lib, a, b: a.sigmoid() * b,
    "sqrt": lambda lib, a, b: a.sqrt() * b,
    "power": lambda lib, a, b: a**b,
    "abs": lambda lib, a, b: a.abs() + b.abs(),
    "prod": lambda lib, a, b: (a * b).prod(0),
    "angle": lambda lib, a, b: (a * b).angle(),
    "vector_norm": lambda lib, a, b: lib.linalg.vector_norm(a * b, dim=0),
    "matrix_norm": lambda lib, a, b: lib.linalg.matrix_norm(a @ b),
}


def loss(lib: Any, fn: Callable, a: Any, b: Any) -> Any:
    """A real scalar of ``fn``'s result (|y|^2 summed)."""
    y = fn(lib, a, b)
    return (y * y.conj()).real.sum() if y.is_complex() else (y * y).sum()


@pytest.mark.parametrize("name", CASES)
def test_complex_gradients_by_finite_differences(name):
    def real_loss(re_a, im_a, re_b, im_b):
        return loss(tk, CASES[name], tk.complex(re_a, im_a), tk.complex(re_b, im_b))

    check_grads(real_loss, A.real.copy(), A.imag.copy(), B.real.copy(), B.imag.copy())


def gradients(lib: Any, name: str) -> list[np.ndarray]:
    """The first-order gradients and the gradient of their squared size, in ``lib``."""
    a = lib.tensor(A, requires_grad=True)
    b = lib.tensor(B, requires_grad=True)
    grads = lib.autograd.grad(loss(lib, CASES[name], a, b), (a, b), create_graph=True)
    size = sum((g.abs() ** 2).sum() for g in grads)
    (second,) = lib.autograd.grad(size, a)
    return [np.asarray(g.detach().tolist()) for g in (*grads, second)]


@pytest.mark.parametrize("name", CASES)
def test_complex_gradients_match_torch(name):
    torch = pytest.importorskip("torch")
    for ours, theirs in zip(gradients(tk, name), gradients(torch, name), strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=1e-10)
