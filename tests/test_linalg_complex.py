"""Complex linear algebra: values, first and second gradients of tk.linalg's factorizations
and solvers on complex128 (and complex64) matrices.

Every case is checked two ways: gradcheck and gradgradcheck of a real loss through the real
and imaginary parts (finite differences, no torch needed), and against PyTorch's values and
conjugate Wirtinger gradients (first and second order) for the same inputs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from harness import check_grads

import tensorkit as tk

RNG = np.random.default_rng(16)
A = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3))
B = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3))

# torch.cholesky and torch.qr (the top-level forms compared with ours) warn that they are old.
pytestmark = pytest.mark.filterwarnings(r"ignore:torch\.(cholesky|qr) is deprecated")


def _eye(lib: Any, a: Any) -> Any:
    return lib.eye(3, dtype=a.dtype)


def _positive_definite(lib: Any, a: Any) -> Any:
    """A Hermitian positive-definite matrix made from ``a``."""
    return a @ a.mH + 3 * _eye(lib, a)


def _qr_parts(lib: Any, a: Any, b: Any, mode: str = "reduced") -> Any:
    q, r = lib.linalg.qr(a, mode=mode)
    parts = [(t * b[: t.shape[0], : t.shape[1]]).flatten() for t in (q, r)]
    return lib.cat(parts)


def _svd_invariants(lib: Any, a: Any, b: Any, full_matrices: bool = False) -> Any:
    """Functions of the SVD that do not depend on the singular vectors' phases."""
    u, s, vh = lib.linalg.svd(a, full_matrices=full_matrices)
    k = s.shape[-1]
    u, vh = u[:, :k], vh[:k]
    return lib.cat(
        [
            (u @ vh).flatten() * b.flatten()[: u.shape[0] * vh.shape[1]],
            (u * u.conj()).flatten(),
            (vh.abs() ** 2 * b[:k, : vh.shape[1]]).flatten(),
            s * b[0, :k],
        ]
    )


def _slogdet(lib: Any, a: Any, b: Any) -> Any:
    sign, logabsdet = lib.linalg.slogdet(a)
    return sign * b + logabsdet * b * b


# name -> f(lib, a, b): a result from two complex 3x3 inputs.
CASES: dict[str, Callable[[Any, Any, Any], Any]] = {
    "inv": lambda lib, a, b: lib.linalg.inv(a) * b,
    "det": lambda lib, a, b: lib.linalg.det(a) * b,
    "det_batched": lambda lib, a, b: lib.linalg.det(lib.stack([a, b, a @ b])),
    "slogdet": _slogdet,
    "slogdet_logabsdet": lambda lib, a, b: lib.linalg.slogdet(a @ b)[1],
    "solve": lambda lib, a, b: lib.linalg.solve(a, b),
    "solve_vector": lambda lib, a, b: lib.linalg.solve(a, b[0]),
    "solve_right": lambda lib, a, b: lib.linalg.solve(a, b, left=False),
    "solve_triangular": lambda lib, a, b: lib.linalg.solve_triangular(
        a.triu() + 3 * _eye(lib, a), b, upper=True
    ),
    "cholesky": lambda lib, a, b: lib.linalg.cholesky(_positive_definite(lib, a)) * b,
    "cholesky_upper": lambda lib, a, b: lib.linalg.cholesky(
        _positive_definite(lib, a + b), upper=True
    ),
    "qr": lambda lib, a, b: _qr_parts(lib, a, b),
    "qr_complete": lambda lib, a, b: _qr_parts(lib, a, b, "complete"),
    "qr_tall": lambda lib, a, b: _qr_parts(lib, a[:, :2], b),
    "qr_wide": lambda lib, a, b: _qr_parts(lib, a[:2], b),
    "svd": lambda lib, a, b: _svd_invariants(lib, a, b),
    "svd_full": lambda lib, a, b: _svd_invariants(lib, a, b, full_matrices=True),
    "svd_tall": lambda lib, a, b: _svd_invariants(lib, a[:, :2], b),
    "svd_wide": lambda lib, a, b: _svd_invariants(lib, a[:2], b),
    "svd_wide_full": lambda lib, a, b: _svd_invariants(lib, a[:2], b, full_matrices=True),
    "svdvals": lambda lib, a, b: lib.linalg.svdvals(a @ b) * b[0],
    "matrix_norm_nuc": lambda lib, a, b: lib.linalg.matrix_norm(a * b, ord="nuc"),
    "matrix_norm_2": lambda lib, a, b: lib.linalg.matrix_norm(a + b, ord=2),
    "pinv": lambda lib, a, b: lib.linalg.pinv(a) * b,
    "pinv_tall": lambda lib, a, b: lib.linalg.pinv(a[:, :2]) * b[:2],
    "pinv_wide": lambda lib, a, b: lib.linalg.pinv(a[:2] @ b),
    "pinv_hermitian": lambda lib, a, b: lib.linalg.pinv(a @ a.mH, hermitian=True) * b,
    "matrix_power": lambda lib, a, b: lib.linalg.matrix_power(a, 3) * b,
    "matrix_power_negative": lambda lib, a, b: lib.linalg.matrix_power(a, -2) * b,
    "matrix_power_zero": lambda lib, a, b: lib.linalg.matrix_power(a, 0) * b,
    "lu_factor": lambda lib, a, b: lib.linalg.lu_factor(a)[0] * b,
    "lu": lambda lib, a, b: lib.cat([t.flatten() for t in lib.linalg.lu(a @ b)[1:]]),
    "lu_wide": lambda lib, a, b: lib.cat([t.flatten() for t in lib.linalg.lu((a * b)[:2])[1:]]),
    "lu_tall": lambda lib, a, b: lib.cat([t.flatten() for t in lib.linalg.lu((a + b)[:, :2])[1:]]),
    "lu_solve": lambda lib, a, b: lib.linalg.lu_solve(*lib.linalg.lu_factor(a), b),
    "lu_solve_adjoint": lambda lib, a, b: lib.linalg.lu_solve(
        *lib.linalg.lu_factor(a), b, adjoint=True
    ),
    "lu_solve_right": lambda lib, a, b: lib.linalg.lu_solve(
        *lib.linalg.lu_factor(a), b, left=False
    ),
    "lu_solve_right_adjoint": lambda lib, a, b: lib.linalg.lu_solve(
        *lib.linalg.lu_factor(a), b, left=False, adjoint=True
    ),
    "inv_ex": lambda lib, a, b: lib.linalg.inv_ex(a).inverse * b,
    "solve_ex": lambda lib, a, b: lib.linalg.solve_ex(a, b, left=False).result,
    "cholesky_ex": lambda lib, a, b: lib.linalg.cholesky_ex(_positive_definite(lib, a)).L * b,
    "cond": lambda lib, a, b: lib.linalg.cond(a @ b) * b[0],
    "matrix_exp": lambda lib, a, b: lib.linalg.matrix_exp(a) * b,
    "matrix_exp_scaled": lambda lib, a, b: lib.linalg.matrix_exp(2 * a) * b,  # squarings
    "eigvals": lambda lib, a, b: lib.linalg.eigvals(a @ b),
    "eig_invariants": lambda lib, a, b: lib.cat(
        [lib.linalg.eig(a)[0] * b[0], (lib.linalg.eig(a)[1].abs() ** 2 * b).flatten()]
    ),
    "lstsq": lambda lib, a, b: lib.linalg.lstsq(a, b).solution,
    "lstsq_tall": lambda lib, a, b: lib.linalg.lstsq(lib.cat([a, b]), lib.cat([b, a])).solution,
    # the top-level and Tensor-method forms
    "tk_det": lambda lib, a, b: lib.det(a) * b + (a @ b).det(),
    "tk_inverse": lambda lib, a, b: lib.inverse(a) + b.inverse(),
    "tk_logdet": lambda lib, a, b: lib.logdet(a) * b + (a @ b).logdet(),
    "tk_slogdet": lambda lib, a, b: lib.slogdet(a)[1] * b + a.slogdet()[0],
    "tk_cholesky": lambda lib, a, b: _positive_definite(lib, a).cholesky() * b,
    "tk_qr": lambda lib, a, b: lib.qr(a)[1] * b + a.qr()[0].abs(),
    "tk_svd": lambda lib, a, b: lib.svd(a)[1] * b + a.svd()[0].abs(),
    "tk_pinverse": lambda lib, a, b: lib.pinverse(a) * b + b.pinverse(),
    "tk_matrix_exp": lambda lib, a, b: lib.matrix_exp(a) + b.matrix_exp(),
    "tk_matrix_power": lambda lib, a, b: lib.matrix_power(a, 2) * b + b.matrix_power(-1),
}


def loss(lib: Any, fn: Callable, a: Any, b: Any) -> Any:
    """A real scalar of ``fn``'s result (|y|^2 summed)."""
    y = fn(lib, a, b)
    return (y * y.conj()).real.sum() if y.is_complex() else (y * y).sum()


@pytest.mark.parametrize("name", CASES)
def test_complex_linalg_gradcheck_and_gradgradcheck(name):
    """tk.autograd.gradcheck on the complex128 inputs themselves (both parts perturbed, both
    parts of every output seeded)."""
    a, b = tk.tensor(A, requires_grad=True), tk.tensor(B, requires_grad=True)
    assert tk.autograd.gradcheck(lambda x, y: CASES[name](tk, x, y), (a, b))
    assert tk.autograd.gradgradcheck(lambda x, y: CASES[name](tk, x, y), (a, b))


def values_and_gradients(lib: Any, name: str) -> list[np.ndarray]:
    """The result, the first-order gradients and the gradient of their squared size."""
    a = lib.tensor(A, requires_grad=True)
    b = lib.tensor(B, requires_grad=True)
    value = CASES[name](lib, a, b)
    grads = lib.autograd.grad(loss(lib, CASES[name], a, b), (a, b), create_graph=True)
    size = sum((g.abs() ** 2).sum() for g in grads)
    (second,) = lib.autograd.grad(size, a)
    return [np.asarray(t.detach().tolist()) for t in (value, *grads, second)]


@pytest.mark.parametrize("name", CASES)
def test_complex_linalg_matches_torch(name):
    torch = pytest.importorskip("torch")
    ours, theirs = values_and_gradients(tk, name), values_and_gradients(torch, name)
    labels = ("value", "grad a", "grad b", "second")
    for what, mine, reference in zip(labels, ours, theirs, strict=True):
        np.testing.assert_allclose(mine, reference, rtol=1e-7, atol=1e-9, err_msg=what)


SINGULAR = A.copy()
SINGULAR[2] = 0  # exactly singular: det's gradient comes from the SVD's cofactor formula


@pytest.mark.parametrize(
    "fn",
    [
        lambda lib, m: (lib.linalg.det(m) * (1 + 2j)).real,
        lambda lib, m: lib.linalg.svdvals(m).sum(),
        lambda lib, m: lib.linalg.matrix_norm(m, ord="nuc"),
    ],
    ids=["det", "svdvals", "nuclear_norm"],
)
def test_gradients_at_a_singular_complex_matrix_match_torch(fn):
    """Compared with torch's differentiable (create_graph) path: its first-order-only path
    gives det a zero gradient at exactly singular matrices, not the cofactor matrix."""
    torch = pytest.importorskip("torch")
    grads = []
    for lib in (tk, torch):
        m = lib.tensor(SINGULAR, requires_grad=True)
        (g,) = lib.autograd.grad(fn(lib, m), m, create_graph=True)
        grads.append(np.asarray(g.detach().tolist()))
    assert np.isfinite(grads[0]).all()
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-7, atol=1e-9)


def _hermitian_eigh(lib: Any, a: Any, b: Any) -> Any:
    w, v = lib.linalg.eigh(a + a.mH)
    return lib.cat([w * b[0], (v.abs() ** 2 * b).flatten()])


def test_complex_eigh_gradients():
    """eigh on Hermitian matrices too (the array API's eigh takes complex input)."""

    def real_loss(re_a, im_a, re_b, im_b):
        return loss(tk, _hermitian_eigh, tk.complex(re_a, im_a), tk.complex(re_b, im_b))

    # through the real and imaginary parts: the check of tk.complex's gradient as well
    check_grads(real_loss, A.real.copy(), A.imag.copy(), B.real.copy(), B.imag.copy())
    CASES["eigh"] = _hermitian_eigh
    try:
        torch = pytest.importorskip("torch")
        ours, theirs = values_and_gradients(tk, "eigh"), values_and_gradients(torch, "eigh")
    finally:
        del CASES["eigh"]
    for mine, reference in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine, reference, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize(
    ("decompose", "message"),
    [
        (
            lambda a: tk.linalg.svd(a).U,
            "svd_backward: The singular vectors in the complex case are specified up to "
            "multiplication by e^{i phi}. The specified loss function depends on this phase "
            "term, making it ill-defined.",
        ),
        (
            lambda a: tk.linalg.eigh(a + a.mH).eigenvectors,
            "linalg_eigh_backward: The eigenvectors in the complex case are specified up to "
            "multiplication by e^{i phi}. The specified loss function depends on this quantity, "
            "so it is ill-defined.",
        ),
    ],
    ids=["svd", "eigh"],
)
def test_a_loss_that_depends_on_the_phase_of_complex_vectors_is_refused(decompose, message):
    a = tk.tensor(A, requires_grad=True)
    with pytest.raises(RuntimeError, match=f"^{re.escape(message)}$"):
        decompose(a).real.sum().backward()
    decompose(a).abs().sum().backward()  # |U| does not depend on the phase
    assert a.grad is not None and np.isfinite(a.grad.numpy()).all()


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_result_dtypes_follow_torch(dtype):
    torch = pytest.importorskip("torch")
    values = (A @ B).astype(dtype)
    calls = {
        "inv": lambda lib, x: lib.linalg.inv(x),
        "det": lambda lib, x: lib.linalg.det(x),
        "slogdet": lambda lib, x: lib.linalg.slogdet(x),
        "solve": lambda lib, x: lib.linalg.solve(x, x),
        "cholesky": lambda lib, x: lib.linalg.cholesky(x @ x.mH),
        "qr": lambda lib, x: lib.linalg.qr(x),
        "svd": lambda lib, x: lib.linalg.svd(x),
        "svdvals": lambda lib, x: lib.linalg.svdvals(x),
        "pinv": lambda lib, x: lib.linalg.pinv(x),
        "eigh": lambda lib, x: lib.linalg.eigh(x @ x.mH),
        "matrix_power": lambda lib, x: lib.linalg.matrix_power(x, -3),
        "matrix_rank": lambda lib, x: lib.linalg.matrix_rank(x),
    }
    for name, call in calls.items():
        ours, theirs = call(tk, tk.tensor(values)), call(torch, torch.tensor(values))
        ours = ours if isinstance(ours, tuple) else (ours,)
        theirs = theirs if isinstance(theirs, tuple) else (theirs,)
        for mine, reference in zip(ours, theirs, strict=True):
            assert str(mine.dtype).split(".")[-1] == str(reference.dtype).split(".")[-1], name
            tolerance = 1e-3 if dtype == "complex64" else 1e-9
            if name not in ("qr", "svd", "eigh"):  # the vectors' signs/phases may differ
                np.testing.assert_allclose(mine.tolist(), reference.tolist(), atol=tolerance)


def test_batched_complex_solve_and_inverse_match_numpy():
    stack = np.stack([A, B, A @ B])
    rhs = RNG.standard_normal((3, 3, 2)) + 1j * RNG.standard_normal((3, 3, 2))
    np.testing.assert_allclose(
        tk.linalg.solve(tk.tensor(stack), tk.tensor(rhs)).numpy(), np.linalg.solve(stack, rhs)
    )
    np.testing.assert_allclose(tk.linalg.inv(tk.tensor(stack)).numpy(), np.linalg.inv(stack))
    q, r = tk.linalg.qr(tk.tensor(stack))
    np.testing.assert_allclose((q @ r).numpy(), stack, atol=1e-12)
    assert np.allclose(np.diagonal(r.numpy(), axis1=-2, axis2=-1).imag, 0)


@pytest.mark.parametrize("driver", ["gelsd", "gelss", "gelsy", "gels"])
def test_complex_lstsq_fields_match_torch(driver):
    torch = pytest.importorskip("torch")
    tall, rhs = np.concatenate([A, B]), np.concatenate([B, A])
    ours = tk.linalg.lstsq(tk.tensor(tall), tk.tensor(rhs), driver=driver)
    theirs = torch.linalg.lstsq(torch.tensor(tall), torch.tensor(rhs), driver=driver)
    for mine, reference in zip(ours, theirs, strict=True):
        assert str(mine.dtype).split(".")[-1] == str(reference.dtype).split(".")[-1]
        np.testing.assert_allclose(mine.numpy(), reference.numpy(), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", float("inf"), -float("inf"), 1, -1])
def test_complex_cond_matches_torch(p):
    torch = pytest.importorskip("torch")
    ours = tk.linalg.cond(tk.tensor(A @ B), p)
    theirs = torch.linalg.cond(torch.tensor(A @ B), p)
    assert ours.dtype == tk.float64
    np.testing.assert_allclose(ours.item(), theirs.item(), rtol=1e-10)


def test_matrix_rank_of_complex_matrices_matches_torch():
    torch = pytest.importorskip("torch")
    rank_two = A[:, :2] @ B[:2]
    for matrix, hermitian in [(rank_two, False), (rank_two @ rank_two.conj().T, True), (A, False)]:
        ours = tk.linalg.matrix_rank(tk.tensor(matrix), hermitian=hermitian)
        theirs = torch.linalg.matrix_rank(torch.tensor(matrix), hermitian=hermitian)
        assert ours.dtype == tk.int64
        assert ours.item() == theirs.item()


def test_array_api_linalg_on_complex_input():
    """tk.array_api.linalg reaches the complex support through tk.linalg."""
    xp = tk.array_api
    x = xp.asarray(A)
    hermitian = x @ xp.conj(xp.matrix_transpose(x)) + 3 * xp.eye(3, dtype=xp.complex128)
    np.testing.assert_allclose(xp.linalg.det(x).item(), np.linalg.det(A))
    np.testing.assert_allclose(xp.linalg.inv(x).numpy(), np.linalg.inv(A))
    np.testing.assert_allclose(xp.linalg.solve(x, xp.asarray(B)).numpy(), np.linalg.solve(A, B))
    np.testing.assert_allclose(xp.linalg.pinv(x).numpy(), np.linalg.pinv(A), atol=1e-12)
    np.testing.assert_allclose(xp.linalg.svdvals(x).numpy(), np.linalg.svd(A, compute_uv=False))
    np.testing.assert_allclose(
        xp.linalg.matrix_power(x, -2).numpy(), np.linalg.matrix_power(A, -2), atol=1e-12
    )
    low = xp.linalg.cholesky(hermitian)
    np.testing.assert_allclose((low @ xp.conj(xp.matrix_transpose(low))).numpy(), hermitian.numpy())
    sign, logabsdet = xp.linalg.slogdet(x)
    np.testing.assert_allclose(sign.item() * np.exp(logabsdet.item()), np.linalg.det(A))
    u, s, vh = xp.linalg.svd(x, full_matrices=False)
    np.testing.assert_allclose((u * s[None, :] @ vh).numpy(), A, atol=1e-12)
    q, r = xp.linalg.qr(x)
    np.testing.assert_allclose((q @ r).numpy(), A, atol=1e-12)
    assert xp.linalg.matrix_rank(x).item() == 3
    assert xp.linalg.eigvalsh(hermitian).dtype == xp.float64


class _WrongSquare(tk.autograd.Function):
    """z**2 with the gradient g * 2z instead of g * conj(2z)."""

    @staticmethod
    def forward(ctx, z):
        ctx.save_for_backward(z)
        return z * z

    @staticmethod
    def backward(ctx, g):
        (z,) = ctx.saved_tensors
        return g * 2 * z


def test_gradcheck_on_complex_inputs_catches_an_unconjugated_gradient():
    z = tk.tensor(A, requires_grad=True)
    assert tk.autograd.gradcheck(lambda x: x * x, (z,))
    assert not tk.autograd.gradcheck(_WrongSquare.apply, (z,), raise_exception=False)
    with pytest.raises(tk.autograd.GradcheckError, match="Jacobian mismatch for output 0"):
        tk.autograd.gradcheck(_WrongSquare.apply, (z,))
    real = tk.tensor([1.0, 2.0], dtype=tk.float64, requires_grad=True)
    assert tk.autograd.gradcheck(lambda r: tk.complex(r, r * r), (real,))  # real in, complex out
    assert tk.autograd.gradcheck(lambda x: x.abs(), (z,))  # complex in, real out
