"""tk.linalg: values against NumPy, float64 gradchecks (first and second order), parity with
PyTorch (values and gradients), and the errors for misuse.

Inputs are built well conditioned (B + n*I, or B B^T + n*I when symmetric positive-definite)
so that finite differences are accurate. Singular vectors and eigenvectors are only defined
up to sign, so comparisons with PyTorch first normalize each to a positive first entry.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from harness import check_grads, check_torch, noncontiguous

import tensorkit as tk

L = tk.linalg
INF = math.inf


def normal(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def well_conditioned(*shape: int, seed: int = 0) -> np.ndarray:
    return normal(*shape, seed=seed) + shape[-1] * np.eye(shape[-1])


def spd(*shape: int, seed: int = 0) -> np.ndarray:
    b = normal(*shape, seed=seed)
    return b @ np.swapaxes(b, -1, -2) + shape[-1] * np.eye(shape[-1])


def symmetric(x: Any) -> Any:
    return x + x.mT


def positive_definite(x: Any) -> Any:
    return x @ x.mT + x.shape[-1] * tk.eye(x.shape[-1], dtype=x.dtype)


def first_entry_positive(lib: Any, vectors: Any, rows: bool = False) -> Any:
    """Columns (or rows) of ``vectors`` flipped to have a nonnegative first entry."""
    if rows:
        return vectors * lib.sign(vectors[..., :1])
    return vectors * lib.sign(vectors[..., :1, :])


def svd_fixed(lib: Any, a: Any, full_matrices: bool = False) -> tuple:
    u, s, vh = lib.linalg.svd(a, full_matrices=full_matrices)
    return first_entry_positive(lib, u), s, first_entry_positive(lib, vh, rows=True)


def eigh_fixed(lib: Any, a: Any, uplo: str = "L") -> tuple:
    w, v = lib.linalg.eigh(a, UPLO=uplo)
    return w, first_entry_positive(lib, v)


def _assert_close(got: Any, expected: Any, tol: float = 1e-10) -> None:
    if isinstance(expected, tuple):
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            _assert_close(g, e, tol)
        return
    got = got.detach().numpy()
    assert got.shape == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


# ------------------------------------------------------------------ forward vs NumPy
def _np_solve_vector(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.linalg.solve(a, b[..., None])[..., 0]


FORWARD = [
    ("inv", L.inv, np.linalg.inv, [well_conditioned(2, 3, 3)]),
    ("det", L.det, np.linalg.det, [well_conditioned(2, 3, 3)]),
    ("det_2d", L.det, np.linalg.det, [normal(4, 4)]),
    (
        "slogdet",
        lambda a: tuple(L.slogdet(a)),
        lambda a: tuple(np.linalg.slogdet(a)),
        [normal(3, 4, 4)],
    ),
    ("solve", L.solve, np.linalg.solve, [well_conditioned(2, 3, 3), normal(2, 3, 4)]),
    ("solve_vector", L.solve, _np_solve_vector, [well_conditioned(2, 3, 3), normal(2, 3)]),
    (
        "solve_right",
        lambda a, b: L.solve(a, b, left=False),
        lambda a, b: np.swapaxes(np.linalg.solve(a.mT, b.mT), -1, -2),
        [well_conditioned(3, 3), normal(2, 4, 3)],
    ),
    (
        "solve_triangular",
        lambda a, b: L.solve_triangular(a, b, upper=True),
        lambda a, b: np.linalg.solve(np.triu(a), b),
        [well_conditioned(2, 3, 3), normal(2, 3, 2)],
    ),
    ("cholesky", L.cholesky, np.linalg.cholesky, [spd(2, 3, 3)]),
    (
        "cholesky_upper",
        lambda a: L.cholesky(a, upper=True),
        lambda a: np.linalg.cholesky(a).mT,
        [spd(3, 3)],
    ),
    ("qr", lambda a: tuple(L.qr(a)), lambda a: tuple(np.linalg.qr(a)), [normal(2, 4, 3)]),
    (
        "qr_complete",
        lambda a: tuple(L.qr(a, "complete")),
        lambda a: tuple(np.linalg.qr(a, "complete")),
        [normal(4, 3)],
    ),
    ("qr_r", lambda a: L.qr(a, "r").R, lambda a: np.linalg.qr(a, "r"), [normal(4, 3)]),
    ("svd", lambda a: tuple(L.svd(a)), lambda a: tuple(np.linalg.svd(a)), [normal(2, 3, 5)]),
    (
        "svd_reduced",
        lambda a: tuple(L.svd(a, full_matrices=False)),
        lambda a: tuple(np.linalg.svd(a, full_matrices=False)),
        [normal(5, 3)],
    ),
    ("svdvals", L.svdvals, lambda a: np.linalg.svd(a, compute_uv=False), [normal(2, 4, 3)]),
    ("eigh", lambda a: tuple(L.eigh(a)), lambda a: tuple(np.linalg.eigh(a)), [spd(2, 3, 3)]),
    (
        "eigvalsh_upper",
        lambda a: L.eigvalsh(a, "U"),
        lambda a: np.linalg.eigvalsh(a, "U"),
        [normal(4, 4)],
    ),
    ("pinv", L.pinv, np.linalg.pinv, [normal(2, 4, 3)]),
    (
        "pinv_hermitian",
        lambda a: L.pinv(a, hermitian=True),
        lambda a: np.linalg.pinv(a, hermitian=True),
        [spd(3, 3)],
    ),
    ("norm", L.norm, np.linalg.norm, [normal(2, 3, 4)]),
    ("cross", L.cross, np.cross, [normal(2, 3), normal(2, 3, seed=1)]),
    ("vecdot", L.vecdot, np.vecdot, [normal(2, 3), normal(3, seed=1)]),
    (
        "matrix_power",
        lambda a: L.matrix_power(a, 3),
        lambda a: np.linalg.matrix_power(a, 3),
        [normal(2, 3, 3)],
    ),
    (
        "matrix_power_negative",
        lambda a: L.matrix_power(a, -2),
        lambda a: np.linalg.matrix_power(a, -2),
        [well_conditioned(3, 3)],
    ),
    (
        "multi_dot",
        lambda *xs: L.multi_dot(xs),
        lambda *xs: np.linalg.multi_dot(xs),
        [normal(3), normal(3, 4), normal(4, 5), normal(5)],
    ),
    (
        "diagonal",
        lambda a: L.diagonal(a, offset=1),
        lambda a: np.diagonal(a, 1, -2, -1),
        [normal(2, 3, 4)],
    ),
    ("matmul", L.matmul, np.matmul, [normal(2, 3, 4), normal(4)]),
]


@pytest.mark.parametrize(
    ("fn", "np_fn", "arrays"), [c[1:] for c in FORWARD], ids=[c[0] for c in FORWARD]
)
def test_forward_matches_numpy(fn: Callable, np_fn: Callable, arrays: list) -> None:
    _assert_close(fn(*[tk.from_numpy(a) for a in arrays]), np_fn(*arrays))


@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, -1, -2.5, INF, -INF, 0])
def test_vector_norm_matches_numpy(ord: float) -> None:
    x = normal(2, 5)
    x[0, 1] = 0.0
    with np.errstate(divide="ignore"):
        expected = np.linalg.norm(x, ord, axis=1)
    _assert_close(L.vector_norm(tk.from_numpy(x), ord, dim=1), expected)


@pytest.mark.parametrize("ord", ["fro", "nuc", INF, -INF, 1, -1, 2, -2])
def test_matrix_norm_matches_numpy(ord: Any) -> None:
    a = normal(2, 3, 4)
    expected = np.linalg.norm(a, ord, axis=(-2, -1))
    _assert_close(L.matrix_norm(tk.from_numpy(a), ord), expected)
    _assert_close(L.norm(tk.from_numpy(a[0]), ord), expected[0])


def test_factorizations_reconstruct_their_input() -> None:
    a = tk.from_numpy(normal(2, 4, 3))
    q, r = L.qr(a)
    _assert_close(q @ r, a.numpy())
    u, s, vh = L.svd(a, full_matrices=False)
    _assert_close((u * s.unsqueeze(-2)) @ vh, a.numpy())
    sym = tk.from_numpy(spd(2, 3, 3))
    w, v = L.eigh(sym)
    _assert_close((v * w.unsqueeze(-2)) @ v.mT, sym.numpy())
    low = L.cholesky(sym)
    _assert_close(low @ low.mT, sym.numpy())
    _assert_close(L.inv(sym) @ sym, np.broadcast_to(np.eye(3), (2, 3, 3)))


def test_results_are_named_tuples() -> None:
    a = tk.from_numpy(spd(3, 3))
    assert L.slogdet(a)._fields == ("sign", "logabsdet")
    assert L.qr(a)._fields == ("Q", "R")
    assert L.svd(a)._fields == ("U", "S", "Vh")
    assert L.eigh(a)._fields == ("eigenvalues", "eigenvectors")
    assert L.slogdet(-a).sign.item() == -1.0


def test_float32_stays_float32() -> None:
    a = tk.from_numpy(spd(3, 3).astype(np.float32))
    for out in (L.inv(a), L.det(a), L.cholesky(a), L.svdvals(a), L.pinv(a), L.vector_norm(a)):
        assert out.dtype == tk.float32
    assert all(t.dtype == tk.float32 for t in (*L.qr(a), *L.svd(a), *L.eigh(a), *L.slogdet(a)))


def test_upper_and_lower_triangles() -> None:
    """cholesky reads only the lower triangle, eigh the one UPLO names."""
    a = spd(3, 3)
    lower_only, upper_only = np.tril(a), np.triu(a)
    _assert_close(L.cholesky(tk.from_numpy(lower_only)), np.linalg.cholesky(a))
    _assert_close(L.eigvalsh(tk.from_numpy(upper_only), "U"), np.linalg.eigvalsh(a))
    _assert_close(L.eigvalsh(tk.from_numpy(lower_only), "L"), np.linalg.eigvalsh(a))


def test_matrix_power_zero_is_identity_with_zero_gradient() -> None:
    a = tk.from_numpy(normal(2, 3, 3)).requires_grad_()
    out = L.matrix_power(a, 0)
    _assert_close(out, np.broadcast_to(np.eye(3), (2, 3, 3)))
    out.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.zeros((2, 3, 3)))


def test_vector_norm_dims_keepdim_and_dtype() -> None:
    x = tk.from_numpy(normal(2, 3, 4).astype(np.float32))
    assert L.vector_norm(x, keepdim=True).shape == (1, 1, 1)
    assert L.vector_norm(x, dim=()).shape == ()
    assert L.vector_norm(x, dim=(0, 2), keepdim=True).shape == (1, 3, 1)
    assert L.vector_norm(x, dtype=tk.float64).dtype == tk.float64
    assert L.vector_norm(x, 0).item() == 24.0


# ------------------------------------------------------------------------- gradients
def _pinv_sym(x: Any) -> Any:
    return L.pinv(symmetric(x), hermitian=True)


GRADS = [
    ("inv", L.inv, [well_conditioned(2, 3, 3)]),
    ("inv_noncontiguous", L.inv, [noncontiguous(well_conditioned(3, 3))]),
    ("det", L.det, [well_conditioned(2, 3, 3)]),
    ("det_singular", L.det, [np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])]),
    ("slogdet", lambda a: L.slogdet(a).logabsdet, [normal(2, 3, 3)]),
    ("solve", L.solve, [well_conditioned(2, 3, 3), normal(2, 3, 2)]),
    ("solve_vector", L.solve, [well_conditioned(3, 3), normal(3)]),
    ("solve_batched_vectors", L.solve, [well_conditioned(2, 3, 3), normal(2, 3)]),
    ("solve_broadcast", L.solve, [well_conditioned(3, 3), normal(2, 3, 2)]),
    ("solve_broadcast_both", L.solve, [well_conditioned(2, 1, 3, 3), normal(4, 3, 1)]),
    ("solve_right", lambda a, b: L.solve(a, b, left=False), [well_conditioned(3, 3), normal(4, 3)]),
    (
        "solve_triangular_lower_right_unit",
        lambda a, b: L.solve_triangular(a, b, upper=False, left=False, unitriangular=True),
        [normal(2, 3, 3), normal(2, 4, 3)],
    ),
    (
        "solve_triangular_upper",
        lambda a, b: L.solve_triangular(a, b, upper=True),
        [well_conditioned(3, 3), noncontiguous(normal(3, 2))],
    ),
    ("cholesky", lambda x: L.cholesky(positive_definite(x)), [normal(2, 3, 3)]),
    ("cholesky_upper", lambda x: L.cholesky(positive_definite(x), upper=True), [normal(3, 3)]),
    ("qr_tall", L.qr, [normal(2, 4, 3)]),
    ("qr_square", L.qr, [noncontiguous(normal(3, 3))]),
    ("qr_wide", L.qr, [normal(3, 5)]),
    ("qr_complete_wide", lambda a: L.qr(a, "complete"), [normal(2, 3)]),
    ("svd_tall", lambda a: L.svd(a, full_matrices=False), [normal(4, 3)]),
    ("svd_wide_batched", lambda a: L.svd(a, full_matrices=False), [normal(2, 3, 4)]),
    ("svd_square_full", L.svd, [normal(3, 3)]),
    ("svdvals", L.svdvals, [normal(4, 3)]),
    ("eigh", lambda x: L.eigh(symmetric(x)), [normal(2, 3, 3)]),
    ("eigvalsh_upper", lambda x: L.eigvalsh(symmetric(x), "U"), [normal(3, 3)]),
    ("pinv_tall", L.pinv, [normal(4, 3)]),
    ("pinv_wide_batched", L.pinv, [normal(2, 3, 5)]),
    ("pinv_hermitian", _pinv_sym, [normal(3, 3)]),
    ("matrix_norm_fro", L.matrix_norm, [normal(2, 3, 4)]),
    ("matrix_norm_nuc", lambda a: L.matrix_norm(a, "nuc"), [normal(2, 3, 4)]),
    ("matrix_norm_2", lambda a: L.matrix_norm(a, 2, dim=(0, 2)), [normal(3, 2, 4)]),
    ("matrix_norm_-2", lambda a: L.matrix_norm(a, -2, keepdim=True), [normal(3, 4)]),
    ("matrix_norm_1", lambda a: L.matrix_norm(a, 1), [normal(3, 4)]),
    ("matrix_norm_inf", lambda a: L.matrix_norm(a, INF), [normal(3, 4)]),
    ("matrix_norm_-1", lambda a: L.matrix_norm(a, -1), [normal(3, 4)]),
    ("matrix_norm_-inf", lambda a: L.matrix_norm(a, -INF), [normal(3, 4)]),
    ("norm", L.norm, [normal(2, 3, 4)]),
    ("tensor_norm_nuc", lambda a: L.tensor_norm(a, "nuc"), [normal(3, 4)]),
    ("cross", L.cross, [normal(2, 3), normal(1, 3)]),
    ("vecdot", lambda x, y: L.vecdot(x, y, dim=0), [normal(3, 2), normal(3, 1)]),
    ("matrix_power_5", lambda a: L.matrix_power(a, 5), [0.5 * normal(2, 3, 3)]),
    ("matrix_power_-2", lambda a: L.matrix_power(a, -2), [well_conditioned(3, 3)]),
    ("multi_dot", lambda *xs: L.multi_dot(xs), [normal(3), normal(3, 4), normal(4, 2), normal(2)]),
    ("diagonal", lambda a: L.diagonal(a, offset=-1), [normal(2, 3, 3)]),
]


@pytest.mark.parametrize(("fn", "arrays"), [c[1:] for c in GRADS], ids=[c[0] for c in GRADS])
def test_gradients(fn: Callable, arrays: list) -> None:
    check_grads(fn, *arrays)


@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, -1, INF, -INF, 0])
def test_vector_norm_gradients(ord: float) -> None:
    check_grads(lambda x: L.vector_norm(x, ord, dim=(0, 2)), normal(2, 3, 4))


# --------------------------------------------------------------------- torch parity
def _nuclear_torch_norm(lib: Any, a: Any) -> Any:
    return L.tensor_norm(a, "nuc") if lib is tk else lib.norm(a, "nuc")


TORCH = [
    ("inv", lambda lib, a: lib.linalg.inv(a), [well_conditioned(2, 3, 3)]),
    ("inv_transposed", lambda lib, a: lib.linalg.inv(a.mT), [well_conditioned(3, 3)]),
    ("det", lambda lib, a: lib.linalg.det(a), [well_conditioned(2, 3, 3)]),
    ("slogdet", lambda lib, a: lib.linalg.slogdet(a), [well_conditioned(2, 3, 3) * -1]),
    (
        "solve",
        lambda lib, a, b: lib.linalg.solve(a, b),
        [well_conditioned(2, 3, 3), normal(4, 1, 3, 2)],
    ),
    (
        "solve_vectors",
        lambda lib, a, b: lib.linalg.solve(a, b),
        [well_conditioned(2, 3, 3), normal(2, 3)],
    ),
    (
        "solve_right",
        lambda lib, a, b: lib.linalg.solve(a, b, left=False),
        [well_conditioned(2, 3, 3), normal(2, 4, 3)],
    ),
    (
        "solve_triangular",
        lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=False, unitriangular=True),
        [normal(2, 3, 3), normal(2, 3, 2)],
    ),
    ("cholesky", lambda lib, a: lib.linalg.cholesky(a), [spd(2, 3, 3)]),
    ("cholesky_upper", lambda lib, a: lib.linalg.cholesky(a, upper=True), [spd(3, 3)]),
    ("qr_tall", lambda lib, a: lib.linalg.qr(a), [normal(2, 4, 3)]),
    ("qr_wide", lambda lib, a: lib.linalg.qr(a), [normal(3, 5)]),
    ("qr_complete_square", lambda lib, a: lib.linalg.qr(a, "complete"), [normal(3, 3)]),
    ("svd_tall", lambda lib, a: svd_fixed(lib, a), [normal(4, 3)]),
    ("svd_wide_batched", lambda lib, a: svd_fixed(lib, a), [normal(2, 3, 5)]),
    ("svd_full_matrices", lambda lib, a: svd_fixed(lib, a, True), [normal(4, 3)]),
    ("svdvals", lambda lib, a: lib.linalg.svdvals(a), [normal(2, 3, 5)]),
    ("eigh", lambda lib, a: eigh_fixed(lib, a), [spd(2, 3, 3)]),
    ("eigh_upper", lambda lib, a: eigh_fixed(lib, a, "U"), [normal(3, 3)]),
    ("eigvalsh", lambda lib, a: lib.linalg.eigvalsh(a), [normal(3, 3)]),
    ("pinv", lambda lib, a: lib.linalg.pinv(a), [normal(2, 4, 3)]),
    ("pinv_hermitian", lambda lib, a: lib.linalg.pinv(a, hermitian=True), [spd(3, 3)]),
    ("pinv_atol", lambda lib, a: lib.linalg.pinv(a, atol=0.9), [normal(4, 3)]),
    (
        "pinv_rtol_tensor",
        lambda lib, a: lib.linalg.pinv(a, rtol=lib.tensor([0.3, 0.01], dtype=lib.float64)),
        [normal(2, 4, 3)],
    ),
    ("vector_norm_zeros", lambda lib, x: lib.linalg.vector_norm(x), [np.zeros(3)]),
    (
        "vector_norm_zero_entry",
        lambda lib, x: lib.linalg.vector_norm(x, 3),
        [np.array([0.0, 1, -2])],
    ),
    ("norm_all", lambda lib, a: lib.linalg.norm(a), [normal(2, 3, 4)]),
    ("norm_ord_2d", lambda lib, a: lib.linalg.norm(a, 2), [normal(3, 4)]),
    ("norm_ord_1d", lambda lib, a: lib.linalg.norm(a, 3), [normal(4)]),
    ("norm_dim", lambda lib, a: lib.linalg.norm(a, 1, dim=1), [normal(3, 4)]),
    ("norm_dims", lambda lib, a: lib.linalg.norm(a, "nuc", dim=(2, 1)), [normal(2, 3, 4)]),
    ("tensor_norm_nuc", _nuclear_torch_norm, [normal(3, 4)]),
    ("cross", lambda lib, a, b: lib.linalg.cross(a, b), [normal(2, 3), normal(4, 1, 3)[0]]),
    ("cross_dim0", lambda lib, a, b: lib.linalg.cross(a, b, dim=0), [normal(3, 2), normal(3, 1)]),
    ("vecdot", lambda lib, x, y: lib.linalg.vecdot(x, y), [normal(2, 3), normal(3)]),
    ("matrix_power", lambda lib, a: lib.linalg.matrix_power(a, 6), [0.5 * normal(2, 3, 3)]),
    ("matrix_power_0", lambda lib, a: lib.linalg.matrix_power(a, 0), [normal(3, 3)]),
    ("matrix_power_-3", lambda lib, a: lib.linalg.matrix_power(a, -3), [well_conditioned(3, 3)]),
    (
        "multi_dot",
        lambda lib, *xs: lib.linalg.multi_dot(xs),
        [normal(3), normal(3, 4), normal(4, 2), normal(2, 5), normal(5)],
    ),
    ("multi_dot_two", lambda lib, *xs: lib.linalg.multi_dot(xs), [normal(2, 3), normal(3)]),
    ("diagonal", lambda lib, a: lib.linalg.diagonal(a, offset=1), [normal(2, 3, 4)]),
    ("matmul", lambda lib, a, b: lib.linalg.matmul(a, b), [normal(2, 3, 4), normal(4)]),
]


@pytest.mark.parametrize(("fn", "arrays"), [c[1:] for c in TORCH], ids=[c[0] for c in TORCH])
def test_matches_torch(fn: Callable, arrays: list) -> None:
    torch = pytest.importorskip("torch")
    check_torch(lambda *xs: fn(tk, *xs), lambda *xs: fn(torch, *xs), *arrays)


def test_det_gradient_at_singular_matrices_is_the_cofactor_matrix() -> None:
    """As torch's differentiable path (create_graph=True) gives it; torch 2.13's first-order
    path returns zeros for exactly singular matrices instead (docs/guide/differences.md)."""
    torch = pytest.importorskip("torch")
    batch = np.array([[[1.0, 2, 3], [2, 4, 6], [1, 0, 1]], [[2.0, 1, 0], [0, 3, 1], [1, 0, 2]]])
    ours = tk.tensor(batch, requires_grad=True)
    (grad,) = tk.autograd.grad(L.det(ours).sum(), ours)
    theirs = torch.tensor(batch, requires_grad=True)
    (reference,) = torch.autograd.grad(torch.linalg.det(theirs).sum(), theirs, create_graph=True)
    np.testing.assert_allclose(grad.numpy(), reference.detach().numpy(), atol=1e-12)
    cofactor = np.linalg.det(batch[1]) * np.linalg.inv(batch[1]).T
    np.testing.assert_allclose(grad.numpy()[1], cofactor)
    assert np.abs(grad.numpy()[0]).max() > 0.5  # not torch's first-order zeros


@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, -1, INF, -INF, 0])
def test_vector_norm_matches_torch(ord: float) -> None:
    torch = pytest.importorskip("torch")
    check_torch(
        lambda x: L.vector_norm(x, ord, dim=(0, 2), keepdim=True),
        lambda x: torch.linalg.vector_norm(x, ord, dim=(0, 2), keepdim=True),
        normal(2, 3, 4),
    )


@pytest.mark.parametrize("ord", ["fro", "nuc", INF, -INF, 1, -1, 2, -2])
@pytest.mark.parametrize("keepdim", [False, True])
def test_matrix_norm_matches_torch(ord: Any, keepdim: bool) -> None:
    torch = pytest.importorskip("torch")
    check_torch(
        lambda a: L.matrix_norm(a, ord, dim=(2, 0), keepdim=keepdim),
        lambda a: torch.linalg.matrix_norm(a, ord, dim=(2, 0), keepdim=keepdim),
        normal(3, 2, 4),
    )


@pytest.mark.parametrize(
    ("p", "dim"),
    [("fro", None), ("fro", (0, 1)), ("fro", 1), ("nuc", None), (1, (0, 1)), (None, 1), (3, None)],
)
def test_tensor_norm_matches_torch_norm(p: Any, dim: Any) -> None:
    torch = pytest.importorskip("torch")
    check_torch(
        lambda x: L.tensor_norm(x, p, dim),
        lambda x: torch.norm(x, p, dim),
        normal(3, 4),
    )


def test_float32_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    a = spd(2, 3, 3).astype(np.float32)
    for name in ("inv", "det", "cholesky", "svdvals", "eigvalsh", "pinv", "matrix_norm"):
        check_torch(getattr(L, name), getattr(torch.linalg, name), a, atol=1e-4, rtol=1e-4)


def test_noncontiguous_inputs_match_torch() -> None:
    torch = pytest.importorskip("torch")
    a = noncontiguous(well_conditioned(3, 3))
    b = noncontiguous(normal(3, 2))
    check_torch(L.solve, torch.linalg.solve, a, b)
    check_torch(
        lambda x: svd_fixed(tk, x), lambda x: svd_fixed(torch, x), noncontiguous(normal(4, 3))
    )


# ---------------------------------------------------------------------------- errors
def _t(array: Any, dtype: Any = None) -> tk.Tensor:
    return tk.tensor(np.asarray(array), dtype=dtype)


SINGULAR = np.array([[1.0, 2.0], [2.0, 4.0]])
ERRORS = [
    (
        lambda: L.inv(_t(normal(2, 3))),
        RuntimeError,
        r"A must be batches of square matrices, but they are 2 by 3 matrices \(shape \[2, 3\]\)",
    ),
    (
        lambda: L.det(_t(normal(4, 2, 3))),
        RuntimeError,
        r"linalg.det: .* 2 by 3 matrices \(shape \[4, 2, 3\]\)",
    ),
    (
        lambda: L.cholesky(_t(normal(3, 4))),
        RuntimeError,
        "linalg.cholesky: A must be batches of square",
    ),
    (lambda: L.eigh(_t(normal(3, 4))), RuntimeError, "linalg.eigh: A must be batches of square"),
    (
        lambda: L.matrix_power(_t(normal(2, 3)), 2),
        RuntimeError,
        "linalg.matrix_power: A must be batches of square",
    ),
    (
        lambda: L.inv(_t(normal(3))),
        RuntimeError,
        "linalg.inv: The input tensor A must have at least 2 dimensions",
    ),
    (
        lambda: L.svd(_t(normal(3))),
        RuntimeError,
        "linalg.svd: The input tensor A must have at least 2 dimensions",
    ),
    (
        lambda: L.inv(_t(np.eye(3, dtype=np.int64))),
        RuntimeError,
        "linalg.inv: Expected a floating point or complex tensor as input. Got tensorkit.int64",
    ),
    (
        lambda: L.qr(_t(np.eye(2), tk.float16)),
        RuntimeError,
        "linalg.qr: Low precision dtypes not supported. Got tensorkit.float16",
    ),
    (lambda: L.inv([[1.0]]), TypeError, "linalg.inv: A must be a Tensor, got list"),
    (
        lambda: L.inv(_t(SINGULAR)),
        L.LinAlgError,
        r"^linalg.inv: The inversion could not be completed because the input matrix is singular",
    ),
    (
        lambda: L.inv(_t(np.stack([np.eye(2), SINGULAR]))),
        L.LinAlgError,
        r"linalg.inv: \(Batch element 1\): .*singular",
    ),
    (
        lambda: L.solve(_t(SINGULAR), _t(np.ones(2))),
        L.LinAlgError,
        "linalg.solve: The linear solve could not be completed because the input matrix is "
        "singular",
    ),
    (lambda: L.matrix_power(_t(SINGULAR), -1), L.LinAlgError, "linalg.inv: .*singular"),
    (
        lambda: L.solve(_t(np.eye(3)), _t(np.ones(4))),
        RuntimeError,
        r"Incompatible shapes of A and B for the equation AX = B \(3x3 and 4x1\)",
    ),
    (
        lambda: L.solve(_t(np.eye(3)), _t(np.ones(3)), left=False),
        RuntimeError,
        r"for the equation XA = B \(3x3 and 3x1\)",
    ),
    (
        lambda: L.solve(_t(np.eye(3)), _t(np.ones(3), tk.float32)),
        RuntimeError,
        "Expected A and B to have the same dtype, but found A of type tensorkit.float64 and B "
        "of type tensorkit.float32",
    ),
    (
        lambda: L.solve_triangular(_t(np.eye(3)), _t(np.ones(3)), upper=True),
        RuntimeError,
        "linalg.solve_triangular: The input tensor B must have at least 2 dimensions",
    ),
    (
        lambda: L.cholesky(_t(-np.eye(3))),
        L.LinAlgError,
        r"^linalg.cholesky: The factorization could not be completed because the input is not "
        r"positive-definite \(the leading minor of order 1 is not positive-definite\)",
    ),
    (
        lambda: L.cholesky(_t(np.stack([np.eye(3), np.diag([1.0, 1.0, -1.0])]))),
        L.LinAlgError,
        r"\(Batch element 1\): .*the leading minor of order 3 is not positive-definite",
    ),
    (
        lambda: L.qr(_t(normal(3, 3)), "x"),
        RuntimeError,
        "qr received unrecognized mode 'x' but expected one of 'reduced'",
    ),
    (
        lambda: L.eigh(_t(normal(3, 3)), "X"),
        RuntimeError,
        "Expected UPLO argument to be 'L' or 'U', but got X",
    ),
    (
        lambda: L.vector_norm(_t(np.ones(3, dtype=np.int64))),
        RuntimeError,
        "linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
        "tensorkit.int64",
    ),
    (
        lambda: L.vector_norm(_t(np.ones(3)), dtype=tk.int64),
        RuntimeError,
        "linalg.vector_norm: dtype should be floating point or complex, but got tensorkit.int64",
    ),
    (
        lambda: L.vector_norm(_t(np.ones(3)), dtype=tk.float32),
        RuntimeError,
        r"the dtype of the input \(tensorkit.float64\) should be convertible without narrowing "
        r"to the specified dtype \(tensorkit.float32\)",
    ),
    (
        lambda: L.vector_norm(_t(np.ones(3)), "fro"),
        RuntimeError,
        "linalg.vector_norm: ord must be a number, got 'fro'",
    ),
    (
        lambda: L.matrix_norm(_t(np.ones(3))),
        RuntimeError,
        "linalg.matrix_norm: The input tensor A must have at least 2 dimensions",
    ),
    (
        lambda: L.matrix_norm(_t(np.ones((3, 3))), 3),
        RuntimeError,
        "linalg.matrix_norm: Order 3 not supported",
    ),
    (
        lambda: L.matrix_norm(_t(np.ones((3, 3))), "foo"),
        RuntimeError,
        "linalg.matrix_norm: Order foo not supported",
    ),
    (
        lambda: L.matrix_norm(_t(np.ones((2, 3))), dim=(0, 0)),
        RuntimeError,
        r"linalg.matrix_norm: dims must be different. Got \(0, 0\)",
    ),
    (
        lambda: L.tensor_norm(_t(np.ones((2, 2, 2))), "nuc"),
        RuntimeError,
        "linalg.matrix_norm: dim must be a 2-tuple. Got 0 1 2",
    ),
    (
        lambda: L.norm(_t(np.ones((2, 3, 4))), 2),
        RuntimeError,
        "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got 3D",
    ),
    (
        lambda: L.norm(_t(np.ones((2, 3, 4))), dim=(0, 1, 2)),
        RuntimeError,
        r"linalg.norm: If dim is specified, it must be of length 1 or 2. Got \[0, 1, 2\]",
    ),
    (
        lambda: L.cross(_t(np.ones(4)), _t(np.ones(4))),
        RuntimeError,
        "linalg.cross: inputs dimension -1 must have length 3. Got 4 and 4",
    ),
    (
        lambda: L.cross(_t(np.ones((2, 3))), _t(np.ones(3))),
        RuntimeError,
        "linalg.cross: inputs must have the same number of dimensions",
    ),
    (
        lambda: L.multi_dot([_t(np.ones(3))]),
        RuntimeError,
        "multi_dot\\(\\): expected at least 2 tensors but got 1",
    ),
    (
        lambda: L.multi_dot([_t(np.ones((3, 3, 3))), _t(np.ones((3, 3)))]),
        RuntimeError,
        "the first tensor must be 1D or 2D but got 3D",
    ),
    (
        lambda: L.multi_dot([_t(np.ones((3, 3))), _t(np.ones(3)), _t(np.ones((3, 3)))]),
        RuntimeError,
        "tensor 1 must be 2D but got 1D",
    ),
    (
        lambda: L.multi_dot([_t(np.ones((2, 3))), _t(np.ones((4, 5)))]),
        RuntimeError,
        r"tensors 0 and 1 with shapes \[2, 3\] and \[4, 5\] cannot be multiplied",
    ),
    (
        lambda: L.matrix_power(_t(np.eye(2)), 1.5),
        TypeError,
        "linalg.matrix_power: n must be an int, got float",
    ),
    (
        lambda: L.pinv(_t(np.ones(3))),
        RuntimeError,
        "linalg.pinv: The input tensor A must have at least 2 dimensions",
    ),
    (
        lambda: L.pinv(_t(np.ones((2, 3))), hermitian=True),
        RuntimeError,
        "linalg.pinv: A must be batches of square",
    ),
]


@pytest.mark.parametrize(
    ("call", "error", "message"), ERRORS, ids=[f"error{i}" for i in range(len(ERRORS))]
)
def test_errors(call: Callable, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call()


def test_linalg_error_is_a_runtime_error() -> None:
    assert issubclass(L.LinAlgError, RuntimeError)


def test_qr_gradients_that_do_not_exist_raise() -> None:
    a = tk.from_numpy(normal(4, 3)).requires_grad_()
    q, r = L.qr(a, mode="r")
    assert q.shape == (0,)
    with pytest.raises(RuntimeError, match="not computed when mode='r'"):
        r.sum().backward()
    q, r = L.qr(a, mode="complete")
    with pytest.raises(
        RuntimeError, match="not differentiable when mode='complete' and nrows > ncols"
    ):
        q.sum().backward()
