"""``cholesky``, ``qr``, ``svd``/``svdvals`` and ``eigh``/``eigvalsh``: multi-output ops with
matrix-calculus gradient rules (undefined, as in PyTorch, where singular values or
eigenvalues repeat; a loss on complex singular vectors must not depend on their phases)."""

# ruff: noqa: N803 - argument names (A, B, UPLO) are those of torch.linalg

from __future__ import annotations

from collections import namedtuple
from typing import Any

from numpy.linalg import LinAlgError as _LapackError

from ..ops._apply import SAVE_OUTPUT, OpDef, apply
from ..ops.binary import where
from ..ops.matmul import matmul
from ..ops.reduction import amax
from ..ops.shape import cat, diag_embed, narrow, tril
from ..ops.shape import diagonal as _diagonal
from ..ops.unary import abs as absolute
from ..tensor import Tensor
from ._common import _check_matrix, _not_positive_definite, _off_diagonal_reciprocal
from .solve import solve_triangular

QRResult = namedtuple("linalg_qr", ["Q", "R"])
SVDResult = namedtuple("linalg_svd", ["U", "S", "Vh"])
EighResult = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])


# --------------------------------------------------------------------------- cholesky
def _cholesky_forward(xp: Any, a: Any) -> Any:
    try:
        low = xp.linalg.cholesky(a)
    except _LapackError:
        low = None
    if low is None or not bool(xp.isfinite(low).all()):
        raise _not_positive_definite("linalg.cholesky", xp, a)
    return low


def _cholesky_rule(ctx: Any, g: Tensor) -> Tensor:
    """A = L L^H gives grad_A = L^-H P L^-1 with P = (Phi + tril(Phi, -1)^H) / 2 and
    Phi = tril(L^H grad_L) (Murray, 2016): the (Hermitian) gradient PyTorch gives."""
    (low,) = ctx.saved_tensors
    phi = tril(matmul(low.mH, g))
    middle = 0.5 * (phi + tril(phi, -1).mH)
    left_solved = solve_triangular(low.mH, middle, upper=True)
    return solve_triangular(low, left_solved, upper=False, left=False)


_CHOLESKY = OpDef("linalg_cholesky", _cholesky_forward, _cholesky_rule, saves=SAVE_OUTPUT)


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """L with ``A = L L^H`` for Hermitian (symmetric) positive-definite ``A`` (only its lower
    triangle is read); ``upper=True`` returns ``L^H``. Raises :class:`LinAlgError` otherwise."""
    _check_matrix("linalg.cholesky", A)
    low = apply(_CHOLESKY, A)
    return low.mH if upper else low


# --------------------------------------------------------------------------------- qr
_QR_MODES = ("reduced", "complete", "r")


def _qr_forward(xp: Any, a: Any, mode: str) -> tuple:
    if mode == "r":
        return xp.zeros((0,), a.dtype), xp.linalg.qr(a, mode="r")
    return tuple(xp.linalg.qr(a, mode=mode))


def _qr_rule(ctx: Any, g_q: Tensor, g_r: Tensor) -> Tensor:
    q, r = ctx.saved_tensors
    mode = ctx.attrs["mode"]
    if mode == "r":
        raise RuntimeError(
            "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
            "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through "
            "linalg.qr."
        )
    m, n = q.shape[-2], r.shape[-1]
    if m >= n:
        if mode == "complete" and m > n:
            raise RuntimeError(
                "The QR decomposition is not differentiable when mode='complete' and nrows > ncols."
            )
        return _qr_grad_tall(q, r, g_q, g_r)
    # Wide: A = Q [X | Y] with X square, so [A_x | A_y] splits into a square QR and Y = Q^H A_y.
    x, y = narrow(r, -1, 0, m), narrow(r, -1, m, n - m)
    g_x, g_y = narrow(g_r, -1, 0, m), narrow(g_r, -1, m, n - m)
    g_a_x = _qr_grad_tall(q, x, g_q + matmul(matmul(q, y), g_y.mH), g_x)
    return cat([g_a_x, matmul(q, g_y)], -1)


def _qr_grad_tall(q: Tensor, r: Tensor, g_q: Tensor, g_r: Tensor) -> Tensor:
    """grad_A = (grad_Q + Q copyltu(M)) R^-H with M = R grad_R^H - grad_Q^H Q (m >= n), where
    copyltu mirrors the strict lower triangle onto the upper one (conjugated) and keeps the
    real part of the diagonal (R's diagonal is real)."""
    m = matmul(r, g_r.mH) - matmul(g_q.mH, q)
    strict = tril(m, -1)
    diagonal_ = _diagonal(m, 0, -2, -1)
    copyltu = strict + strict.mH + diag_embed(diagonal_.real if m.is_complex() else diagonal_)
    b = g_q + matmul(q, copyltu)
    return solve_triangular(r.mH, b, upper=False, left=False)


_QR = OpDef("linalg_qr", _qr_forward, _qr_rule, saves=SAVE_OUTPUT, outputs=-1)


def qr(A: Tensor, mode: str = "reduced") -> QRResult:
    """Q (orthonormal, unitary if complex, columns) and R (upper triangular, with a real
    diagonal) with ``A = Q R``. ``mode='complete'`` gives a square Q; ``mode='r'`` computes
    only R (Q is empty, and there is no gradient)."""
    _check_matrix("linalg.qr", A, square=False)
    if mode not in _QR_MODES:
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
            "'r', or 'complete'"
        )
    return QRResult(*apply(_QR, A, mode=mode))


# -------------------------------------------------------------------------------- svd
def _svd_forward(xp: Any, a: Any, full_matrices: bool) -> tuple:
    return tuple(xp.linalg.svd(a, full_matrices=full_matrices))


def _svd_rule(ctx: Any, g_u: Tensor, g_s: Tensor, g_vh: Tensor) -> Tensor:
    u, s, vh = ctx.saved_tensors
    k = s.shape[-1]
    if ctx.attrs["full_matrices"]:  # the extra singular vectors are arbitrary: no gradient
        u, g_u = narrow(u, -1, 0, k), narrow(g_u, -1, 0, k)
        vh, g_vh = narrow(vh, -2, 0, k), narrow(g_vh, -2, 0, k)
    return _svd_grad(u, s, vh, g_u, g_s, g_vh)


def _svd_grad(u: Tensor, s: Tensor, vh: Tensor, g_u: Tensor, g_s: Tensor, g_vh: Tensor) -> Tensor:
    """Townsend (2016): with F_ij = 1 / (s_j^2 - s_i^2), Ju = U^H gU and Jv = Vh gVh^H,
    grad_A = U [(F o (Ju - Ju^H)) S + diag(gS) + S (F o (Jv - Jv^H))] Vh, plus the terms for the
    parts of gU and gVh outside the spans of U and V when A is not square. Complex singular
    vectors are defined up to a phase each: the loss must not depend on it (the imaginary
    diagonal of Ju + Jv vanishes), and the phase term adds i Im(diag(Ju)) / S."""
    m, n, k = u.shape[-2], vh.shape[-1], s.shape[-1]
    f = _off_diagonal_reciprocal(s.unsqueeze(-2) ** 2 - s.unsqueeze(-1) ** 2)
    j_u = matmul(u.mH, g_u)
    j_v = matmul(vh, g_vh.mH)
    inner = (f * (j_u - j_u.mH)) * s.unsqueeze(-2) + s.unsqueeze(-1) * (f * (j_v - j_v.mH))
    inner = inner + diag_embed(g_s)
    if u.is_complex():
        phase = _diagonal(j_u, 0, -2, -1).imag
        _check_phase_invariant(phase + _diagonal(j_v, 0, -2, -1).imag, j_u + j_v, "svd")
        inner = inner + diag_embed(1j * phase / where(s == 0, 1.0, s))
    grad = matmul(matmul(u, inner), vh)
    if m > k:
        outside = (g_u - matmul(u, j_u)) / s.unsqueeze(-2)
        grad = grad + matmul(outside, vh)
    if n > k:
        outside = (g_vh - matmul(matmul(g_vh, vh.mH), vh)) / s.unsqueeze(-1)
        grad = grad + matmul(u, outside)
    return grad


# PyTorch's words when a loss depends on the phases of complex singular vectors or eigenvectors.
_PHASE_ERRORS = {
    "svd": "svd_backward: The singular vectors in the complex case are specified up to "
    "multiplication by e^{i phi}. The specified loss function depends on this phase term, "
    "making it ill-defined.",
    "eigh": "linalg_eigh_backward: The eigenvectors in the complex case are specified up to "
    "multiplication by e^{i phi}. The specified loss function depends on this quantity, so it "
    "is ill-defined.",
}


def _check_phase_invariant(drift: Tensor, projected: Tensor, op: str) -> None:
    """Refuse a loss that changes when a singular (or eigen) vector turns by a phase:
    ``drift`` is that change's rate for each vector, tested relative to the size of the
    gradient ``projected`` onto the vectors."""
    values = drift.detach()
    tolerance = 1e-4 if values.dtype.itemsize == 4 else 1e-8
    scale = 1 + float(amax(absolute(projected.detach()))) if projected.numel() else 1
    if bool((absolute(values) > tolerance * scale).any()):
        raise RuntimeError(_PHASE_ERRORS[op])


_SVD = OpDef("linalg_svd", _svd_forward, _svd_rule, saves=SAVE_OUTPUT, outputs=-1)


def svd(A: Tensor, full_matrices: bool = True) -> SVDResult:
    """U, S, Vh with ``A = U diag(S) Vh``, singular values in descending order.

    With ``full_matrices=True`` and a non-square A, the extra columns of U (rows of Vh) get no
    gradient, as in PyTorch. The gradient is undefined when singular values repeat.
    """
    _check_matrix("linalg.svd", A, square=False)
    return SVDResult(*apply(_SVD, A, full_matrices=full_matrices))


def svdvals(A: Tensor) -> Tensor:
    """The singular values, in descending order."""
    _check_matrix("linalg.svdvals", A, square=False)
    return apply(_SVD, A, full_matrices=False)[1]


# ------------------------------------------------------------------------------- eigh
def _eigh_rule(ctx: Any, g_w: Tensor, g_v: Tensor) -> Tensor:
    """grad_A = V (diag(gw) + F o skew(V^H gV)) V^H with F_ij = 1 / (w_j - w_i). Complex
    eigenvectors are defined up to a phase each: the loss must not depend on it."""
    w, v = ctx.saved_tensors
    f = _off_diagonal_reciprocal(w.unsqueeze(-2) - w.unsqueeze(-1))
    projected = matmul(v.mH, g_v)
    if v.is_complex():
        _check_phase_invariant(_diagonal(projected, 0, -2, -1).imag, projected, "eigh")
    inner = f * (0.5 * (projected - projected.mH)) + diag_embed(g_w)
    return matmul(matmul(v, inner), v.mH)


_EIGH = OpDef(
    "linalg_eigh",
    lambda xp, a, uplo: tuple(xp.linalg.eigh(a, UPLO=uplo)),
    _eigh_rule,
    saves=SAVE_OUTPUT,
    outputs=-1,
)


def eigh(A: Tensor, UPLO: str = "L") -> EighResult:
    """Eigenvalues (ascending, real) and orthonormal eigenvectors of symmetric (Hermitian)
    matrices, reading the lower (``UPLO='L'``) or upper triangle. The gradient is symmetric
    (Hermitian), and undefined when eigenvalues repeat."""
    _check_matrix("linalg.eigh", A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return EighResult(*apply(_EIGH, A, uplo=UPLO))


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """The eigenvalues of symmetric matrices, in ascending order."""
    return eigh(A, UPLO).eigenvalues
