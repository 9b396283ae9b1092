"""tk.linalg's LU family, lstsq, matrix_rank, matrix_exp, cond and the ``_ex`` variants:
parity with PyTorch (values and gradients), float64 gradchecks (first and second order),
info tensors, and the errors for misuse.

LU with partial pivoting has no sign freedom, so its factors are compared with PyTorch's as
they are; inputs are random enough that small perturbations do not change the pivots.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from harness import check_grads, check_torch
from test_linalg import INF, SINGULAR, _t, normal, spd, well_conditioned

import tensorkit as tk

L = tk.linalg


def lu_factors(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lu, pivots = L.lu_factor(tk.from_numpy(a))
    return lu.numpy(), pivots.numpy()


LU_A, LU_PIVOTS = lu_factors(normal(2, 3, 3, seed=3))
TENSOR_A = well_conditioned(6, 6).reshape(2, 3, 6)


def _lu_solve(lib: Any, left: bool, adjoint: bool) -> Callable:
    def fn(lu: Any, b: Any) -> Any:
        pivots = lib.tensor(LU_PIVOTS)
        return lib.linalg.lu_solve(lu, pivots, b, left=left, adjoint=adjoint)

    return fn


def fixed_phase(lib: Any, a: Any) -> tuple:
    """eig's gauge-invariant parts: eigenvalues and eigenvectors rotated to a real positive
    first entry, as real and imaginary parts."""
    w, v = lib.linalg.eig(a)
    v = v * (v[..., :1, :].conj() / v[..., :1, :].abs())
    return w.real, w.imag, v.real, v.imag


# --------------------------------------------------------------------- torch parity
TORCH = [
    ("lu_factor", lambda lib, a: tuple(lib.linalg.lu_factor(a)), [normal(2, 4, 4)]),
    ("lu_factor_ex", lambda lib, a: tuple(lib.linalg.lu_factor_ex(a)), [normal(3, 3)]),
    ("lu_factor_wide", lambda lib, a: tuple(lib.linalg.lu_factor(a)), [normal(2, 3, 5)]),
    ("lu_square", lambda lib, a: tuple(lib.linalg.lu(a)), [normal(2, 4, 4)]),
    ("lu_wide", lambda lib, a: tuple(lib.linalg.lu(a)), [normal(3, 5)]),
    ("lu_tall", lambda lib, a: tuple(lib.linalg.lu(a)), [normal(2, 5, 3)]),
    ("lu_solve", lambda lib, *x: _lu_solve(lib, True, False)(*x), [LU_A, normal(2, 3, 2)]),
    ("lu_solve_adjoint", lambda lib, *x: _lu_solve(lib, True, True)(*x), [LU_A, normal(3, 2)]),
    ("lu_solve_right", lambda lib, *x: _lu_solve(lib, False, False)(*x), [LU_A, normal(2, 4, 3)]),
    (
        "lu_solve_right_adjoint",
        lambda lib, *x: _lu_solve(lib, False, True)(*x),
        [LU_A, normal(2, 4, 3)],
    ),
    ("matrix_exp", lambda lib, a: lib.linalg.matrix_exp(a), [normal(2, 3, 3)]),
    ("matrix_exp_large_norm", lambda lib, a: lib.linalg.matrix_exp(a), [4 * normal(4, 4)]),
    (
        "matrix_exp_mixed_scales",
        lambda lib, a: lib.linalg.matrix_exp(a),
        [normal(2, 3, 3) * [[[0.1]], [[5.0]]]],
    ),
    (
        "lstsq_tall",
        lambda lib, a, b: tuple(lib.linalg.lstsq(a, b)),
        [normal(2, 5, 3), normal(2, 5, 2)],
    ),
    ("lstsq_wide", lambda lib, a, b: tuple(lib.linalg.lstsq(a, b)), [normal(3, 5), normal(3, 2)]),
    (
        "lstsq_vector",
        lambda lib, a, b: tuple(lib.linalg.lstsq(a, b)),
        [normal(2, 5, 3), normal(2, 5)],
    ),
    (
        "lstsq_gelsd",
        lambda lib, a, b: tuple(lib.linalg.lstsq(a, b, driver="gelsd")),
        [normal(2, 5, 3), normal(2, 5, 2)],
    ),
    (
        "lstsq_gelss_vector",
        lambda lib, a, b: tuple(lib.linalg.lstsq(a, b, driver="gelss")),
        [normal(5, 3), normal(5)],
    ),
    (
        "lstsq_gels",
        lambda lib, a, b: tuple(lib.linalg.lstsq(a, b, driver="gels")),
        [normal(5, 3), normal(5, 2)],
    ),
    (
        "lstsq_rcond",
        lambda lib, a, b: tuple(lib.linalg.lstsq(a, b, rcond=0.5, driver="gelsd")),
        [normal(2, 5, 3), normal(2, 5, 2)],
    ),
    ("cond", lambda lib, a: lib.linalg.cond(a), [normal(2, 3, 3)]),
    ("cond_wide", lambda lib, a: lib.linalg.cond(a), [normal(3, 5)]),
    ("cond_-2", lambda lib, a: lib.linalg.cond(a, -2), [normal(2, 5, 3)]),
    ("inv_ex", lambda lib, a: tuple(lib.linalg.inv_ex(a)), [well_conditioned(2, 3, 3)]),
    ("tensorinv", lambda lib, a: lib.linalg.tensorinv(a), [TENSOR_A]),
    ("tensorinv_ind1", lambda lib, a: lib.linalg.tensorinv(a, ind=1), [TENSOR_A.reshape(6, 2, 3)]),
    ("tensorsolve", lambda lib, a, b: lib.linalg.tensorsolve(a, b), [TENSOR_A, normal(2, 3)]),
    (
        "tensorsolve_dims",
        lambda lib, a, b: lib.linalg.tensorsolve(a, b, dims=(0,)),
        [np.moveaxis(TENSOR_A, 2, 0), normal(3, 2)],
    ),
    ("vander", lambda lib, x: lib.linalg.vander(x), [normal(2, 4)]),
    ("vander_N", lambda lib, x: lib.linalg.vander(x, N=5), [normal(3)]),
    (
        "householder_product",
        lambda lib, a, tau: lib.linalg.householder_product(a, tau),
        [normal(2, 5, 3), normal(2, 3, seed=1)],
    ),
    (
        "householder_product_fewer_tau",
        lambda lib, a, tau: lib.linalg.householder_product(a, tau),
        [normal(4, 4), normal(2, seed=1)],
    ),
    ("eig", fixed_phase, [normal(2, 4, 4)]),
    ("eig_symmetric_real_spectrum", fixed_phase, [spd(3, 3)]),
    (
        "eigvals",
        lambda lib, a: (lib.linalg.eigvals(a).real, lib.linalg.eigvals(a).imag),
        [normal(3, 3)],
    ),
    ("cholesky_ex", lambda lib, a: tuple(lib.linalg.cholesky_ex(a)), [spd(2, 3, 3)]),
    (
        "cholesky_ex_upper",
        lambda lib, a: tuple(lib.linalg.cholesky_ex(a, upper=True)),
        [spd(3, 3)],
    ),
    (
        "solve_ex",
        lambda lib, a, b: tuple(lib.linalg.solve_ex(a, b)),
        [well_conditioned(2, 3, 3), normal(2, 3)],
    ),
    (
        "solve_ex_right",
        lambda lib, a, b: tuple(lib.linalg.solve_ex(a, b, left=False)),
        [well_conditioned(3, 3), normal(2, 4, 3)],
    ),
]


@pytest.mark.parametrize(("fn", "arrays"), [c[1:] for c in TORCH], ids=[c[0] for c in TORCH])
def test_matches_torch(fn: Callable, arrays: list) -> None:
    torch = pytest.importorskip("torch")
    check_torch(lambda *xs: fn(tk, *xs), lambda *xs: fn(torch, *xs), *arrays)


@pytest.mark.parametrize("p", ["fro", "nuc", 1, -1, INF, -INF])
def test_cond_by_norms_matches_torch(p: Any) -> None:
    """Values against torch.linalg.cond; gradients against torch's own composition (torch's
    cond fails in backward for these orders: it modifies the inverse in place)."""
    torch = pytest.importorskip("torch")
    a = normal(2, 3, 3)
    check_torch(lambda x: L.cond(x, p), lambda x: torch.linalg.cond(x, p), a, grad=False)
    check_torch(
        lambda x: L.cond(x, p),
        lambda x: torch.linalg.matrix_norm(x, p) * torch.linalg.matrix_norm(torch.linalg.inv(x), p),
        a,
    )


MATRIX_RANK = [
    ("full", {}, normal(2, 4, 3)),
    ("deficient", {}, normal(4, 2) @ normal(2, 5, seed=1)),
    ("atol", {"atol": 1.0}, normal(2, 4, 4)),
    ("atol_rtol", {"atol": 0.5, "rtol": 0.3}, normal(2, 4, 4)),
    ("rtol", {"rtol": 0.2}, normal(3, 5)),
    ("hermitian", {"hermitian": True}, spd(2, 3, 3) - 3.5 * np.eye(3)),
]


@pytest.mark.parametrize(
    ("kwargs", "a"), [c[1:] for c in MATRIX_RANK], ids=[c[0] for c in MATRIX_RANK]
)
def test_matrix_rank_matches_torch(kwargs: dict, a: np.ndarray) -> None:
    torch = pytest.importorskip("torch")
    check_torch(
        lambda x: L.matrix_rank(x, **kwargs),
        lambda x: torch.linalg.matrix_rank(x, **kwargs),
        a,
        grad=False,
    )


def test_float32_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    a = normal(2, 3, 3).astype(np.float32)
    for name in ("matrix_exp", "cond", "inv_ex", "lu_factor", "lu"):
        check_torch(getattr(L, name), getattr(torch.linalg, name), a, atol=1e-4, rtol=1e-4)


def test_singular_and_failed_inputs_report_info_like_torch() -> None:
    torch = pytest.importorskip("torch")
    batch = np.stack([np.eye(2), SINGULAR])
    for name in ("lu_factor_ex", "inv_ex"):
        mine, theirs = (
            getattr(L, name)(tk.from_numpy(batch)),
            getattr(torch.linalg, name)(torch.tensor(batch)),
        )
        np.testing.assert_array_equal(mine.info.numpy(), theirs.info.numpy())
        np.testing.assert_array_equal(mine[0].numpy(), theirs[0].numpy())
    mine = L.solve_ex(tk.from_numpy(SINGULAR), tk.ones(2, dtype=tk.float64))
    theirs = torch.linalg.solve_ex(torch.tensor(SINGULAR), torch.ones(2, dtype=torch.float64))
    assert mine.info.item() == theirs.info.item() == 2
    assert not np.isfinite(mine.result.numpy()).all()
    failing = np.stack([np.eye(3), np.diag([1.0, 1.0, -1.0]), -np.eye(3)])
    mine = L.cholesky_ex(tk.from_numpy(failing))
    np.testing.assert_array_equal(
        mine.info.numpy(), torch.linalg.cholesky_ex(torch.tensor(failing)).info.numpy()
    )
    np.testing.assert_array_equal(mine.L[0].numpy(), np.eye(3))
    assert mine.info.dtype == tk.int32
    assert L.cond(tk.from_numpy(SINGULAR), "fro").item() == INF


def test_eig_values_are_complex_and_reconstruct() -> None:
    a = tk.from_numpy(normal(2, 4, 4))
    w, v = L.eig(a)
    assert w.dtype == v.dtype == tk.complex128
    assert L.eig(a.float()).eigenvalues.dtype == tk.complex64
    np.testing.assert_allclose(
        a.numpy() @ v.numpy(),
        v.numpy() * w.numpy()[..., None, :],
        atol=1e-12,
    )


def test_eig_gradient_that_depends_on_the_phase_raises() -> None:
    a = tk.from_numpy(normal(3, 3)).requires_grad_()
    with pytest.raises(
        RuntimeError,
        match=r"^linalg_eig_backward: The eigenvectors in the complex case are specified up to "
        r"multiplication by e\^\{i phi\}. The specified loss function depends on this quantity, "
        "so it is ill-defined.",
    ):
        L.eig(a).eigenvectors.imag.sum().backward()


def test_results_are_named_tuples() -> None:
    a = tk.from_numpy(spd(3, 3))
    assert L.lu_factor(a)._fields == ("LU", "pivots")
    assert L.lu_factor_ex(a)._fields == ("LU", "pivots", "info")
    assert L.lu(a)._fields == ("P", "L", "U")
    assert L.lstsq(a, a)._fields == ("solution", "residuals", "rank", "singular_values")
    assert L.inv_ex(a)._fields == ("inverse", "info")
    assert L.eig(a)._fields == ("eigenvalues", "eigenvectors")
    assert L.cholesky_ex(a)._fields == ("L", "info")
    assert L.solve_ex(a, a)._fields == ("result", "info")


def test_lu_reconstructs_and_lu_solve_solves() -> None:
    a = tk.from_numpy(normal(2, 5, 4))
    p, low, up = L.lu(a)
    np.testing.assert_allclose((p @ low @ up).numpy(), a.numpy(), atol=1e-12)
    b = tk.from_numpy(well_conditioned(3, 3))
    lu, pivots = L.lu_factor(b)
    rhs = tk.from_numpy(normal(3, 2))
    np.testing.assert_allclose((b @ L.lu_solve(lu, pivots, rhs)).numpy(), rhs.numpy(), atol=1e-12)


@pytest.mark.parametrize("shape", [(0, 3, 3), (2, 0, 0), (3, 0), (0, 4)])
def test_empty_inputs_give_torch_shapes(shape: tuple) -> None:
    torch = pytest.importorskip("torch")
    a, t = tk.zeros(*shape, dtype=tk.float64), torch.zeros(*shape, dtype=torch.float64)
    for name in ("lu_factor_ex", "lu"):
        mine, theirs = getattr(L, name)(a), getattr(torch.linalg, name)(t)
        assert [tuple(x.shape) for x in mine] == [tuple(x.shape) for x in theirs]


def test_matrix_exp_of_empty_and_zero_matrices() -> None:
    assert L.matrix_exp(tk.zeros(2, 0, 0, dtype=tk.float64)).shape == (2, 0, 0)
    np.testing.assert_array_equal(L.matrix_exp(tk.zeros(3, 3)).numpy(), np.eye(3))


# ------------------------------------------------------------------------- gradients

GRADS = [
    ("lu_factor", lambda a: L.lu_factor(a).LU, [normal(2, 3, 3)]),
    ("lu_factor_wide", lambda a: L.lu_factor_ex(a).LU, [normal(3, 5)]),
    ("lu_factor_tall", lambda a: L.lu_factor(a).LU, [normal(2, 5, 3)]),
    ("lu_square", lambda a: tuple(L.lu(a))[1:], [normal(3, 3)]),
    ("lu_wide", lambda a: tuple(L.lu(a))[1:], [normal(2, 3, 4)]),
    ("lu_tall", lambda a: tuple(L.lu(a))[1:], [normal(4, 2)]),
    ("lu_solve", _lu_solve(tk, True, False), [LU_A, normal(2, 3, 2)]),
    ("lu_solve_adjoint", _lu_solve(tk, True, True), [LU_A, normal(3, 2)]),
    ("lu_solve_right", _lu_solve(tk, False, False), [LU_A, normal(2, 4, 3)]),
    ("matrix_exp", L.matrix_exp, [normal(2, 3, 3)]),
    ("matrix_exp_scaled", L.matrix_exp, [3 * normal(3, 3)]),
    (
        "lstsq_tall",
        lambda a, b: tuple(L.lstsq(a, b, driver="gelsd"))[:2],
        [normal(5, 3), normal(5, 2)],
    ),
    ("lstsq_wide", lambda a, b: L.lstsq(a, b).solution, [normal(2, 3, 4), normal(2, 3)]),
    ("cond", L.cond, [normal(2, 3, 3)]),
    ("cond_fro", lambda a: L.cond(a, "fro"), [normal(3, 3)]),
    ("cond_inf", lambda a: L.cond(a, INF), [normal(3, 3)]),
    ("inv_ex", lambda a: L.inv_ex(a).inverse, [well_conditioned(2, 3, 3)]),
    ("tensorinv", L.tensorinv, [TENSOR_A]),
    ("tensorsolve", L.tensorsolve, [TENSOR_A, normal(2, 3)]),
    ("vander", lambda x: L.vander(x, N=4), [normal(2, 3)]),
    ("householder_product", L.householder_product, [normal(5, 3), normal(3, seed=1)]),
    ("eig", lambda a: fixed_phase(tk, a), [normal(2, 4, 4)]),
    ("eigvals", lambda a: (L.eigvals(a).real, L.eigvals(a).imag), [normal(3, 3)]),
    ("cholesky_ex", lambda x: L.cholesky_ex(x @ x.mT + 3 * tk.eye(3)).L, [normal(2, 3, 3)]),
    ("solve_ex", lambda a, b: L.solve_ex(a, b).result, [well_conditioned(3, 3), normal(3)]),
]


@pytest.mark.parametrize(("fn", "arrays"), [c[1:] for c in GRADS], ids=[c[0] for c in GRADS])
def test_gradients(fn: Callable, arrays: list) -> None:
    check_grads(fn, *arrays)


# ---------------------------------------------------------------------------- errors
ERRORS = [
    (
        lambda: L.tensorinv(_t(normal(2, 3, 6)), ind=0),
        RuntimeError,
        "Expected a strictly positive integer for 'ind', but got 0",
    ),
    (
        lambda: L.tensorinv(_t(normal(4, 6, 8, 2))),
        RuntimeError,
        r"Expected self to satisfy the requirement prod\(self.shape\[ind:\]\) == "
        r"prod\(self.shape\[:ind\]\), but got 16 != 24",
    ),
    (
        lambda: L.tensorsolve(_t(normal(2, 3, 5)), _t(normal(2, 3))),
        RuntimeError,
        r"Expected self to satisfy the requirement prod\(self.shape\[other.ndim:\]\) == "
        r"prod\(self.shape\[:other.ndim\]\), but got 5 != 6",
    ),
    (lambda: L.vander(_t(normal(3)), N=1), RuntimeError, "N must be greater than 1."),
    (
        lambda: L.householder_product(_t(normal(3, 4)), _t(normal(2))),
        RuntimeError,
        r"linalg.householder_product: input.shape\[-2\] must be greater than or equal to "
        r"input.shape\[-1\]",
    ),
    (
        lambda: L.householder_product(_t(normal(4, 3)), _t(normal(4))),
        RuntimeError,
        r"linalg.householder_product: input.shape\[-1\] must be greater than or equal to "
        r"tau.shape\[-1\]",
    ),
    (
        lambda: L.householder_product(_t(normal(4, 3)), _t(normal(2, 2))),
        RuntimeError,
        "linalg.householder_product: Expected tau to have one dimension less than input, but "
        "got tau.ndim equal to 2 and input.ndim is equal to 2",
    ),
    (
        lambda: L.householder_product(_t(normal(4)), _t(normal(2))),
        RuntimeError,
        "linalg.householder_product: input must have at least 2 dimensions.",
    ),
    (
        lambda: L.householder_product(_t(normal(4, 3)), _t(normal(2), tk.float32)),
        RuntimeError,
        "linalg.householder_product: tau dtype tensorkit.float32 does not match input dtype "
        "tensorkit.float64",
    ),
    (
        lambda: L.lu_factor(_t(SINGULAR)),
        L.LinAlgError,
        r"^linalg.lu_factor: U\[2,2\] is zero and using it on lu_solve would result in a "
        r"division by zero. If you still want to perform the factorization, consider calling "
        r"linalg.lu\(A, pivot\) or linalg.lu_factor_ex\(A, pivot\)",
    ),
    (
        lambda: L.lu_factor(_t(np.stack([np.eye(2), SINGULAR]))),
        L.LinAlgError,
        r"^linalg.lu_factor: \(Batch element 1\): U\[2,2\] is zero",
    ),
    (
        lambda: L.lu_factor_ex(_t(SINGULAR), check_errors=True),
        L.LinAlgError,
        r"^linalg.lu_factor_ex: U\[2,2\] is zero",
    ),
    (
        lambda: L.lu_factor(_t(np.eye(2)), pivot=False),
        RuntimeError,
        "linalg.lu_factor: LU without pivoting is not implemented on the CPU",
    ),
    (
        lambda: L.lu(_t(normal(3))),
        RuntimeError,
        r"lu_factor: Expected tensor with 2 or more dimensions. Got size: \[3\] instead",
    ),
    (
        lambda: L.lu(_t(np.eye(2, dtype=np.int64))),
        RuntimeError,
        "linalg.lu: Expected a floating point or complex tensor as input. Got tensorkit.int64",
    ),
    (
        lambda: L.lu_solve(_t(LU_A), _t(LU_PIVOTS), _t(normal(4, 2))),
        RuntimeError,
        r"linalg.lu_solve: Incompatible shapes of A and B for the equation AX = B "
        r"\(3x3 and 4x2\)",
    ),
    (
        lambda: L.lu_solve(_t(LU_A), _t(LU_PIVOTS), _t(normal(3))),
        RuntimeError,
        "linalg.lu_solve: The input tensor B must have at least 2 dimensions.",
    ),
    (
        lambda: L.lu_solve(_t(LU_A), _t(LU_PIVOTS.astype(np.int64)), _t(normal(3, 2))),
        RuntimeError,
        "linalg.lu_solve: pivots should be a Tensor of scalar type tensorkit.int32",
    ),
    (
        lambda: L.lu_solve(_t(LU_A), _t(LU_PIVOTS[..., :2]), _t(normal(3, 2))),
        RuntimeError,
        "linalg.lu_solve: Number of pivots per batch should be same as the dimension of the matrix",
    ),
    (
        lambda: L.lu_solve(_t(normal(3, 4)), _t(LU_PIVOTS), _t(normal(3, 2))),
        RuntimeError,
        "linalg.lu_solve: A must be batches of square matrices",
    ),
    (
        lambda: L.inv_ex(_t(SINGULAR), check_errors=True),
        L.LinAlgError,
        "^linalg.inv_ex: The diagonal element 2 is zero, the inversion could not be completed "
        "because the input matrix is singular.",
    ),
    (
        lambda: L.inv_ex(_t(np.stack([np.eye(2), SINGULAR])), check_errors=True),
        L.LinAlgError,
        r"^linalg.inv_ex: \(Batch element 1\): The diagonal element 2 is zero",
    ),
    (
        lambda: L.cholesky_ex(_t(np.diag([1.0, 1.0, -1.0])), check_errors=True),
        L.LinAlgError,
        r"^linalg.cholesky_ex: The factorization could not be completed because the input is "
        r"not positive-definite \(the leading minor of order 3 is not positive-definite\).",
    ),
    (
        lambda: L.solve_ex(_t(SINGULAR), _t(np.ones(2)), check_errors=True),
        L.LinAlgError,
        "^linalg.solve_ex: The solver failed because the input matrix is singular.",
    ),
    (
        lambda: L.lstsq(_t(normal(2, 5, 3)), _t(normal(5))),
        RuntimeError,
        r"linalg.lstsq: input.dim\(\) must be greater or equal to other.dim\(\) and "
        r"\(input.dim\(\) - other.dim\(\)\) <= 1",
    ),
    (
        lambda: L.lstsq(_t(normal(5, 3)), _t(normal(4, 2))),
        RuntimeError,
        r"linalg.lstsq: input.size\(-2\) should match other.size\(-2\)",
    ),
    (
        lambda: L.lstsq(_t(normal(5, 3)), _t(normal(5, 2), tk.float32)),
        RuntimeError,
        "linalg.lstsq: Expected input and other to have the same dtype, but got input's dtype "
        "tensorkit.float64 and other's dtype tensorkit.float32",
    ),
    (
        lambda: L.lstsq(_t(normal(5, 3)), _t(normal(5, 2)), driver="foo"),
        RuntimeError,
        r"linalg.lstsq: parameter `driver` should be one of \(gels, gelsy, gelsd, gelss\)",
    ),
    (
        lambda: L.lstsq(_t(normal(5, 3)), [1.0]),
        TypeError,
        "linalg.lstsq: B must be a Tensor, got list",
    ),
    (
        lambda: L.matrix_rank(_t(normal(3))),
        RuntimeError,
        "linalg.matrix_rank: The input tensor input must have at least 2 dimensions.",
    ),
    (
        lambda: L.matrix_rank(_t(normal(2, 3)), hermitian=True),
        RuntimeError,
        "linalg.matrix_rank: A must be batches of square matrices",
    ),
    (
        lambda: L.matrix_exp(_t(normal(2, 3))),
        RuntimeError,
        r"linalg.matrix_exp: A must be batches of square matrices, but they are 2 by 3 matrices",
    ),
    (
        lambda: L.matrix_exp(_t(normal(3))),
        RuntimeError,
        "linalg.matrix_exp: The input tensor A must have at least 2 dimensions.",
    ),
    (
        lambda: L.cond(_t(normal(2, 3)), "fro"),
        RuntimeError,
        r"linalg.cond\(ord=fro\): A must be batches of square matrices, but they are 2 by 3 "
        "matrices",
    ),
    (
        lambda: L.cond(_t(normal(3, 3)), 3),
        RuntimeError,
        "linalg.cond got an invalid norm type: 3",
    ),
]


@pytest.mark.parametrize(
    ("call", "error", "message"), ERRORS, ids=[f"error{i}" for i in range(len(ERRORS))]
)
def test_errors(call: Callable, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call()
