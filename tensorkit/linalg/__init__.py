"""Linear algebra: the ``tk.linalg`` namespace (factorizations, solvers, norms, products).

Each factorization (and inv, det, solve, pinv, ...) is one op whose forward calls
``xp.linalg`` (NumPy or CuPy) and whose gradient rule is written with tensorkit ops, so
gradients of gradients work as well. The other functions (norms, matrix_power, multi_dot, ...)
are compositions of differentiable ops.

Inputs are float32, float64, complex64 or complex128 tensors; complex ones get PyTorch's
conjugate Wirtinger gradients (the rules are written with conjugate transposes, ``.mH``,
which are plain transposes on real tensors). Like PyTorch, the gradients
of ``svd`` and ``eigh`` (and so of ``svdvals``, ``eigvalsh`` and the spectral norms) are
undefined when singular values or eigenvalues repeat: they come out as inf or nan there; and
a loss on complex singular vectors must not depend on their phases (an error otherwise).
"""

# ruff: noqa: N803 - argument names (A, B, UPLO) are those of torch.linalg

from __future__ import annotations

import math
import numbers
from collections import namedtuple
from collections.abc import Sequence
from typing import Any

from numpy.linalg import LinAlgError as _LapackError

from ..ops._apply import SAVE_BOTH, SAVE_OUTPUT, OpDef, apply
from ..ops.binary import where
from ..ops.creation import eye
from ..ops.matmul import matmul
from ..ops.reduction import amax, amin, expand_reduced, reduce_dims
from ..ops.reduction import sum as reduce_sum
from ..ops.shape import (
    broadcast_shapes,
    broadcast_tensors,
    cat,
    diag_embed,
    expand,
    movedim,
    narrow,
    squeeze,
    tril,
    triu,
)
from ..ops.shape import diagonal as _diagonal
from ..ops.unary import abs as absolute
from ..ops.unary import sign
from ..tensor import Tensor, normalize_dim

__all__ = [
    "LinAlgError",
    "inv",
    "det",
    "slogdet",
    "solve",
    "solve_triangular",
    "cholesky",
    "qr",
    "svd",
    "svdvals",
    "eigh",
    "eigvalsh",
    "pinv",
    "vector_norm",
    "matrix_norm",
    "norm",
    "tensor_norm",
    "matmul",
    "cross",
    "vecdot",
    "matrix_power",
    "multi_dot",
    "diagonal",
    "lstsq",
    "lu_factor",
    "lu_factor_ex",
    "lu",
    "lu_solve",
    "matrix_rank",
    "matrix_exp",
    "cond",
    "eig",
    "eigvals",
    "inv_ex",
    "cholesky_ex",
    "solve_ex",
    "tensorinv",
    "tensorsolve",
    "vander",
    "householder_product",
]


class LinAlgError(RuntimeError):
    """A matrix is singular or not positive-definite (as ``torch.linalg.LinAlgError``)."""


SlogdetResult = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
QRResult = namedtuple("linalg_qr", ["Q", "R"])
SVDResult = namedtuple("linalg_svd", ["U", "S", "Vh"])
EighResult = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])


# ------------------------------------------------------------------------------ checks
def _check_float(name: str, x: Tensor) -> None:
    """``x`` must be a float32/float64 or complex64/complex128 tensor."""
    if x._data.dtype.kind not in "fc":
        raise RuntimeError(
            f"{name}: Expected a floating point or complex tensor as input. Got {x.dtype}"
        )
    if x._data.dtype.itemsize < 4:
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {x.dtype}")


def _check_matrix(name: str, A: Any, *, square: bool = True) -> None:
    """``A`` must be a floating or complex tensor of (batches of) matrices, square if asked."""
    if not isinstance(A, Tensor):
        raise TypeError(f"{name}: A must be a Tensor, got {type(A).__name__}")
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    _check_float(name, A)
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"{name}: A must be batches of square matrices, but they are {A.shape[-2]} by "
            f"{A.shape[-1]} matrices (shape {list(A.shape)})"
        )


def _batch_prefix(a: Any, index: int | None) -> str:
    return "" if a.ndim == 2 or index is None else f"(Batch element {index}): "


# ------------------------------------------------------------ LAPACK failure reports
def _first_singular(xp: Any, a: Any) -> int | None:
    """The flat batch index of the first exactly singular matrix in ``a``, or None."""
    n = a.shape[-1]
    hits = xp.flatnonzero(xp.linalg.det(a.reshape(-1, n, n)) == 0)
    return int(hits[0]) if hits.size else None


def _run_invertible(name: str, action: str, xp: Any, fn: Any, a: Any, *rest: Any) -> Any:
    """``fn(a, *rest)``, raising :class:`LinAlgError` when a matrix of ``a`` is singular.

    NumPy raises on a zero pivot; CuPy returns non-finite values instead.
    """
    try:
        out = fn(a, *rest)
    except _LapackError:
        out = None
    if out is None or not bool(xp.isfinite(out).all()):
        index = _first_singular(xp, a)
        if out is None or index is not None:
            raise LinAlgError(
                f"{name}: {_batch_prefix(a, index)}The {action} could not be completed because "
                "the input matrix is singular."
            )
    return out


def _is_positive_definite(xp: Any, a: Any) -> bool:
    try:
        low = xp.linalg.cholesky(a)
    except _LapackError:
        return False
    return bool(xp.isfinite(low).all())


def _not_positive_definite(name: str, xp: Any, a: Any) -> LinAlgError:
    """The error for a failed Cholesky factorization, naming the batch element and the
    order of its first leading minor that is not positive-definite."""
    n = a.shape[-1]
    flat = a.reshape(-1, n, n)
    bad = next((i for i in range(flat.shape[0]) if not _is_positive_definite(xp, flat[i])), None)
    detail = ""
    if bad is not None:
        low, high = 1, n  # the smallest failing order lies in [low, high]
        while low < high:
            middle = (low + high) // 2
            if _is_positive_definite(xp, flat[bad, :middle, :middle]):
                low = middle + 1
            else:
                high = middle
        detail = f" (the leading minor of order {low} is not positive-definite)"
    return LinAlgError(
        f"{name}: {_batch_prefix(a, bad)}The factorization could not be completed because the "
        f"input is not positive-definite{detail}."
    )


# ----------------------------------------------------------------- small tensor helpers
def _eye(n: int, like: Tensor) -> Tensor:
    return eye(n, dtype=like.dtype, device=like.device)


def _as_matrix_scale(t: Tensor) -> Tensor:
    """A batch of scalars as (..., 1, 1), to scale a batch of matrices."""
    return t.unsqueeze(-1).unsqueeze(-1)


def _off_diagonal_reciprocal(diff: Tensor) -> Tensor:
    """1 / diff off the diagonal, 0 on it; finite (and differentiable) on the diagonal."""
    identity = _eye(diff.shape[-1], diff)
    return (1 - identity) / (diff + identity)


# ------------------------------------------------------------------- inv, det, slogdet
def _inv_forward(xp: Any, a: Any) -> Any:
    return _run_invertible("linalg.inv", "inversion", xp, xp.linalg.inv, a)


def _inv_rule(ctx: Any, g: Tensor) -> Tensor:
    (inverse,) = ctx.saved_tensors
    return -matmul(inverse.mH, matmul(g, inverse.mH))


_INV = OpDef("linalg_inv", _inv_forward, _inv_rule, saves=SAVE_OUTPUT)


def inv(A: Tensor) -> Tensor:
    """The inverse of each square matrix; raises :class:`LinAlgError` if one is singular."""
    _check_matrix("linalg.inv", A)
    return apply(_INV, A)


def _det_rule(ctx: Any, g: Tensor) -> Tensor:
    """g times the conjugate of the cofactor matrix, det(A) A^-T."""
    a, d = ctx.saved_tensors
    if not bool((d == 0).any()):
        return _as_matrix_scale(g * _conj(d)) * inv(a).mH
    return _as_matrix_scale(g) * _conj_cofactor(a)


def _conj(t: Tensor) -> Tensor:
    return t.conj() if t.is_complex() else t


def _conj_cofactor(a: Tensor) -> Tensor:
    """The conjugate of the cofactor matrix, valid for singular matrices too: from
    A = U S Vh it is conj(det(U) det(Vh)) U diag(prod_{j != i} s_j) Vh."""
    u, s, vh = svd(a, full_matrices=False)
    n = s.shape[-1]
    identity = _eye(n, s).bool()
    others = where(identity, 1.0, expand(s.unsqueeze(-2), (*s.shape[:-1], n, n)))
    products = others.prod(-1)
    orientation = _conj(det(u.detach()) * det(vh.detach()))
    return _as_matrix_scale(orientation) * matmul(u * products.unsqueeze(-2), vh)


_DET = OpDef("linalg_det", lambda xp, a: xp.linalg.det(a), _det_rule, saves=SAVE_BOTH)


def det(A: Tensor) -> Tensor:
    """The determinant of each square matrix. Its gradient is the cofactor matrix: from the
    inverse, or, when a matrix is singular, from the SVD."""
    _check_matrix("linalg.det", A)
    return apply(_DET, A)


def _slogdet_rule(ctx: Any, g_sign: Tensor, g_logabsdet: Tensor) -> Tensor:
    """w A^-H, where d log det A = tr(A^-1 dA) moves logabsdet by its real part and the
    sign by i times its imaginary part, so w = g_logabsdet + i Im(g_sign conj(sign)). A real
    sign is piecewise constant: no gradient through it."""
    a, sign_, _ = ctx.saved_tensors
    scale = g_logabsdet
    if a.is_complex():
        scale = g_logabsdet + 1j * (g_sign * sign_.conj()).imag
    return _as_matrix_scale(scale) * inv(a).mH


_SLOGDET = OpDef(
    "linalg_slogdet",
    lambda xp, a: tuple(xp.linalg.slogdet(a)),
    _slogdet_rule,
    saves=SAVE_BOTH,
    outputs=-1,
)


def slogdet(A: Tensor) -> SlogdetResult:
    """The sign and the log of the absolute value of the determinant (no overflow). The
    gradient needs invertible matrices."""
    _check_matrix("linalg.slogdet", A)
    return SlogdetResult(*apply(_SLOGDET, A))


# ------------------------------------------------------------------------------ solve
def _solve_forward(xp: Any, a: Any, b: Any, name: str) -> Any:
    return _run_invertible(name, "linear solve", xp, xp.linalg.solve, a, b)


def _solve_rule(ctx: Any, g: Tensor) -> tuple:
    a, _, x = ctx.saved_tensors
    grad_b = _solve_matrices(a.mH, g, ctx.attrs["name"])
    grad_a = -matmul(grad_b, x.mH) if ctx.edges[0] is not None else None
    return grad_a, (grad_b if ctx.edges[1] is not None else None)


_SOLVE = OpDef("linalg_solve", _solve_forward, _solve_rule, saves=SAVE_BOTH)


def _solve_matrices(a: Tensor, b: Tensor, name: str) -> Tensor:
    """X with A X = B for (..., n, n) and (..., n, k) operands whose batch dims broadcast."""
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = expand(a, (*batch, *a.shape[-2:]))
    b = expand(b, (*batch, *b.shape[-2:]))
    return apply(_SOLVE, a, b, name=name)


def _check_rhs(name: str, A: Tensor, B: Any, left: bool) -> None:
    if not isinstance(B, Tensor):
        raise TypeError(f"{name}: B must be a Tensor, got {type(B).__name__}")
    if B.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    _check_float(name, B)
    if A.dtype != B.dtype:
        raise RuntimeError(
            f"{name}: Expected A and B to have the same dtype, but found A of type {A.dtype} "
            f"and B of type {B.dtype} instead"
        )
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(
            f"{name}: Incompatible shapes of A and B for the equation "
            f"{'AX = B' if left else 'XA = B'} ({n}x{n} and {B.shape[-2]}x{B.shape[-1]})"
        )


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """The solution X of ``A X = B`` (or ``X A = B`` when ``left=False``).

    ``B`` is a batch of vectors when it is 1-D or has ``A``'s shape without its last dim;
    otherwise it is a batch of matrices. Batch dims broadcast.
    """
    name = "linalg.solve"
    _check_matrix(name, A)
    is_vector = isinstance(B, Tensor) and (
        B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])
    )
    rhs = B.unsqueeze(-1) if is_vector else B
    _check_rhs(name, A, rhs, left)
    x = _solve_matrices(A, rhs, name) if left else _solve_matrices(A.mT, rhs.mT, name).mT
    return x.squeeze(-1) if is_vector else x


def solve_triangular(
    A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False
) -> Tensor:
    """The solution X of ``T X = B`` (or ``X T = B``) where T is the upper or lower triangle
    of ``A`` (with ones on its diagonal when ``unitriangular``)."""
    name = "linalg.solve_triangular"
    _check_matrix(name, A)
    _check_rhs(name, A, B, left)
    offset = int(unitriangular)
    t = triu(A, offset) if upper else tril(A, -offset)
    if unitriangular:
        t = t + _eye(A.shape[-1], A)
    return _solve_matrices(t, B, name) if left else _solve_matrices(t.mT, B.mT, name).mT


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


# ------------------------------------------------------------------------------- pinv
def _pinv_forward(xp: Any, a: Any, atol: Any, rtol: Any, hermitian: bool) -> Any:
    """V diag(1/s) U^H over the singular values (or |eigenvalues|) above the tolerance."""
    if hermitian:
        values, left = xp.linalg.eigh(a)
        right, magnitudes = _conj_transpose(xp, left), xp.abs(values)
    else:
        left, values, right = xp.linalg.svd(a, full_matrices=False)
        magnitudes = values
    kept = magnitudes > _cutoff(xp, a, magnitudes, atol, rtol)
    inverted = xp.where(kept, 1 / xp.where(kept, values, 1), 0).astype(a.dtype)
    return xp.matmul(_conj_transpose(xp, right) * inverted[..., None, :], _conj_transpose(xp, left))


def _conj_transpose(xp: Any, a: Any) -> Any:
    return xp.conj(xp.swapaxes(a, -1, -2))


def _cutoff(xp: Any, a: Any, magnitudes: Any, atol: Any, rtol: Any) -> Any:
    """max(atol, rtol * largest magnitude) over the last axis of ``magnitudes``; by default
    rtol is eps * max(m, n), or 0 when a positive ``atol`` is given."""
    absolute_tol = 0.0 if atol is None else atol
    if rtol is None:
        default = float(xp.finfo(a.dtype).eps) * max(a.shape[-2:])
        rtol = default if atol is None else xp.where(xp.asarray(absolute_tol) > 0, 0.0, default)
    largest = magnitudes.max(axis=-1, keepdims=True) if magnitudes.shape[-1] else 0.0
    return xp.maximum(absolute_tol, rtol * largest)


def _pinv_rule(ctx: Any, g: Tensor) -> Tensor:
    """Golub and Pereyra (1973), for X = pinv(A) of locally constant rank:
    grad_A = -X^H G X^H + (I - A X) G^H X X^H + X^H X G^H (I - X A)."""
    a, x = ctx.saved_tensors
    xt, gt = x.mH, g.mH
    through_inverse = -matmul(matmul(xt, g), xt)
    outside_columns = matmul(gt - matmul(a, matmul(x, gt)), matmul(x, xt))
    outside_rows = matmul(matmul(xt, x), gt - matmul(matmul(gt, x), a))
    return through_inverse + outside_columns + outside_rows


_PINV = OpDef("linalg_pinv", _pinv_forward, _pinv_rule, saves=SAVE_BOTH)


def pinv(A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False) -> Tensor:
    """The Moore-Penrose pseudo-inverse, from the SVD (or from ``eigh`` if ``hermitian``).

    Singular values at most ``max(atol, rtol * largest)`` count as zero; ``atol`` and ``rtol``
    are floats or tensors over the batch dims. By default ``rtol`` is eps * max(m, n), or 0
    when a positive ``atol`` is given. As in PyTorch, the gradient is that of the general
    (not symmetric) pseudo-inverse, assuming the rank does not change nearby.
    """
    _check_matrix("linalg.pinv", A, square=hermitian)
    return apply(
        _PINV,
        A,
        atol=_tolerance_array(atol, A),
        rtol=_tolerance_array(rtol, A),
        hermitian=hermitian,
    )


def _tolerance_array(value: Any, A: Tensor, name: str = "linalg.pinv") -> Any:
    """None, a float, or a tensor over the batch dims as a (..., 1) array on A's device."""
    if isinstance(value, Tensor):
        if value.device != A.device:
            raise RuntimeError(
                f"{name}: tolerances must be on the device of A ({A.device}), got {value.device}"
            )
        return value._data[..., None]
    return None if value is None else float(value)


# ------------------------------------------------------------------------------ norms
def _p_norm_forward(xp: Any, x: Any, ord: float, axis: Any, keepdims: bool) -> Any:
    magnitude = xp.abs(x)
    if ord == 1:
        return magnitude.sum(axis=axis, keepdims=keepdims)
    if ord == 2:
        return xp.sqrt((magnitude * magnitude).sum(axis=axis, keepdims=keepdims))
    return (magnitude**ord).sum(axis=axis, keepdims=keepdims) ** (1.0 / ord)


def _p_norm_rule(ctx: Any, g: Tensor) -> Tensor:
    """d||x||_p / dx = sign(x) |x|^(p-1) / ||x||^(p-1); 0 where the norm is 0, and at
    elements that are 0 for p < 1."""
    x, norm_ = ctx.saved_tensors
    p, axis, keepdims = ctx.attrs["ord"], ctx.attrs["axis"], ctx.attrs["keepdims"]
    shape = tuple(x.shape)
    g = expand_reduced(g, shape, axis, keepdims)
    if p == 1:
        return g * sign(x)
    norm_ = expand_reduced(norm_, shape, axis, keepdims)
    if p == 2:
        elementwise = x
    else:
        is_zero = x == 0
        safe = where(is_zero, 1.0, absolute(x))
        elementwise = where(is_zero, 0.0, sign(x) * safe ** (p - 1))
    empty = norm_ == 0
    scale = where(empty, 0.0, g / where(empty, 1.0, norm_) ** (p - 1))
    return elementwise * scale


_P_NORM = OpDef("linalg_vector_norm", _p_norm_forward, _p_norm_rule, saves=SAVE_BOTH)


def _norm_input(name: str, x: Any, dtype: Any) -> Tensor:
    """``x`` checked to be floating or complex, and cast to ``dtype`` when given."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: input must be a Tensor, got {type(x).__name__}")
    if x._data.dtype.kind not in "fc":
        raise RuntimeError(
            f"{name}: Expected a floating point or complex tensor as input. Got {x.dtype}"
        )
    if dtype is None:
        return x
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name}: dtype should be floating point or complex, but got {dtype}")
    if dtype.itemsize < x.dtype.itemsize:
        raise RuntimeError(
            f"{name}: the dtype of the input ({x.dtype}) should be convertible without "
            f"narrowing to the specified dtype ({dtype})"
        )
    return x.to(dtype)


def vector_norm(
    x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False, *, dtype: Any = None
) -> Tensor:
    """The ``ord``-norm of ``x`` over ``dim`` (all elements by default): any float ``ord``,
    with inf/-inf the largest/smallest magnitude and 0 the number of nonzero elements."""
    name = "linalg.vector_norm"
    x = _norm_input(name, x, dtype)
    if x.is_complex():  # the norm of the magnitudes, real, as PyTorch's
        x = absolute(x)
    if not isinstance(ord, numbers.Real):
        raise RuntimeError(f"{name}: ord must be a number, got {ord!r}")
    dims = reduce_dims(None if dim in ((), []) else dim, x.ndim)
    p = float(ord)
    if p == math.inf:
        return amax(absolute(x), () if dims is None else dims, keepdim)
    if p == -math.inf:
        return amin(absolute(x), () if dims is None else dims, keepdim)
    if p == 0:
        return reduce_sum(sign(absolute(x)), dims, keepdim)
    return apply(_P_NORM, x, ord=p, axis=dims, keepdims=keepdim)


def _matrix_dims(name: str, a: Tensor, dim: Any) -> tuple[int, int]:
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) != 2:
        raise RuntimeError(f"{name}: dim must be a 2-tuple. Got {' '.join(map(str, dims))}")
    first, second = (normalize_dim(d, a.ndim) for d in dims)
    if first == second:
        raise RuntimeError(f"{name}: dims must be different. Got {tuple(dims)}")
    return first, second


def matrix_norm(
    A: Tensor,
    ord: Any = "fro",
    dim: Any = (-2, -1),
    keepdim: bool = False,
    *,
    dtype: Any = None,
) -> Tensor:
    """A matrix norm over the two dims ``dim``: 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2."""
    name = "linalg.matrix_norm"
    if isinstance(A, Tensor) and A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    a = _norm_input(name, A, dtype)
    rows, cols = _matrix_dims(name, a, dim)
    if ord == "fro":
        return vector_norm(a, 2, (rows, cols), keepdim)
    if ord == "nuc":
        return _spectral_norm(a, rows, cols, keepdim, reduce_sum)
    if ord in (2, -2):
        return _spectral_norm(a, rows, cols, keepdim, amax if ord > 0 else amin)
    if ord in (1, -1, math.inf, -math.inf):
        summed, compared = (rows, cols) if ord in (1, -1) else (cols, rows)
        sums = reduce_sum(absolute(a), summed, keepdim=True)
        out = (amax if ord > 0 else amin)(sums, compared, keepdim=True)
        return out if keepdim else squeeze(out, (rows, cols))
    raise RuntimeError(f"{name}: Order {ord} not supported.")


def _spectral_norm(a: Tensor, rows: int, cols: int, keepdim: bool, reduce: Any) -> Tensor:
    """``reduce`` of the singular values of the matrices in dims ``rows`` and ``cols``."""
    out = reduce(svdvals(movedim(a, (rows, cols), (-2, -1))), -1)
    if keepdim:
        for d in sorted((rows, cols)):
            out = out.unsqueeze(d)
    return out


def norm(
    A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *, dtype: Any = None
) -> Tensor:
    """A vector norm (one dim, or all elements) or a matrix norm (two dims), as
    ``torch.linalg.norm``: with ``ord`` and no ``dim``, A must be 1-D or 2-D."""
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 1:
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        if len(dims) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        raise RuntimeError(
            f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}"
        )
    if ord is None or A.ndim == 1:
        return vector_norm(A, 2 if ord is None else ord, None, keepdim, dtype=dtype)
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    raise RuntimeError(
        "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
        f"Got {A.ndim}D."
    )


def tensor_norm(
    input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None
) -> Tensor:
    """``torch.norm``: a number ``p`` (or None, meaning 2) is a vector norm over ``dim`` (all
    elements by default), as is 'fro' over at most two dims; 'nuc' is a matrix norm."""
    if not isinstance(p, str):
        return vector_norm(input, 2.0 if p is None else p, dim, keepdim, dtype=dtype)
    if p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2):
        return vector_norm(input, 2, dim, keepdim, dtype=dtype)
    dims = tuple(range(input.ndim)) if dim is None else dim
    return matrix_norm(input, p, dims, keepdim, dtype=dtype)


# --------------------------------------------------------------------------- products
def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (batch dims broadcast)."""
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    d = normalize_dim(dim, input.ndim)
    if input.shape[d] != 3 or other.shape[d] != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[d]} "
            f"and {other.shape[d]}"
        )
    a, b = broadcast_tensors(input, other)
    a0, a1, a2 = (narrow(a, d, i, 1) for i in range(3))
    b0, b1, b2 = (narrow(b, d, i, 1) for i in range(3))
    return cat([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """The dot product of vectors along ``dim`` (inputs broadcast; x is conjugated)."""
    return reduce_sum((x.conj() if x.is_complex() else x) * y, dim)


def _identity_forward(xp: Any, a: Any) -> Any:
    return xp.broadcast_to(xp.eye(a.shape[-1], dtype=a.dtype), a.shape).copy()


_IDENTITY_LIKE = OpDef("linalg_matrix_power", _identity_forward, lambda ctx, g: g * 0)


def matrix_power(A: Tensor, n: int) -> Tensor:
    """``A`` multiplied by itself ``n`` times (the identity for 0, powers of the inverse for
    negative ``n``), by repeated squaring."""
    name = "linalg.matrix_power"
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"{name}: n must be an int, got {type(n).__name__}")
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"{name}: A must be batches of square matrices, but they are {A.shape[-2]} by "
            f"{A.shape[-1]} matrices (shape {list(A.shape)})"
        )
    if n == 0:
        return apply(_IDENTITY_LIKE, A)
    base = inv(A) if n < 0 else A
    n = -n if n < 0 else n
    result = None
    while True:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if not n:
            return result
        base = matmul(base, base)


def multi_dot(tensors: Sequence[Tensor]) -> Tensor:
    """The product of a chain of matrices, in the cheapest order. The first may be a 1-D row
    vector and the last a 1-D column vector."""
    tensors = list(tensors)
    count = len(tensors)
    if count < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {count}")
    for i, t in enumerate(tensors):
        position = "first" if i == 0 else "last" if i == count - 1 else None
        if position is not None and t.ndim not in (1, 2):
            raise RuntimeError(
                f"multi_dot(): the {position} tensor must be 1D or 2D but got {t.ndim}D"
            )
        if position is None and t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    row, column = tensors[0].ndim == 1, tensors[-1].ndim == 1
    matrices = [
        tensors[0].unsqueeze(0) if row else tensors[0],
        *tensors[1:-1],
        tensors[-1].unsqueeze(-1) if column else tensors[-1],
    ]
    for i in range(count - 1):
        if matrices[i].shape[1] != matrices[i + 1].shape[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes {list(tensors[i].shape)} and "
                f"{list(tensors[i + 1].shape)} cannot be multiplied"
            )
    out = _chain_product(matrices, _chain_order(matrices), 0, count - 1)
    if row:
        out = out.squeeze(0)
    return out.squeeze(-1) if column else out


def _chain_order(matrices: list[Tensor]) -> list[list[int]]:
    """split[i][j]: where to split the product of matrices i..j to use the fewest scalar
    multiplications (the classic dynamic programme over chain lengths)."""
    sizes = [m.shape[0] for m in matrices] + [matrices[-1].shape[1]]
    count = len(matrices)
    cost = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            options = (
                (cost[i][k] + cost[k + 1][j] + sizes[i] * sizes[k + 1] * sizes[j + 1], k)
                for k in range(i, j)
            )
            cost[i][j], split[i][j] = min(options)
    return split


def _chain_product(matrices: list[Tensor], split: list[list[int]], i: int, j: int) -> Tensor:
    if i == j:
        return matrices[i]
    k = split[i][j]
    left = _chain_product(matrices, split, i, k)
    return matmul(left, _chain_product(matrices, split, k + 1, j))


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """The diagonals of matrices along ``dim1`` and ``dim2`` (a view)."""
    return _diagonal(A, offset, dim1, dim2)


# The functions built on the ones above live in modules of their own (they import this one).
from .compositions import householder_product, tensorinv, tensorsolve, vander  # noqa: E402
from .eig import eig, eigvals  # noqa: E402
from .exp import matrix_exp  # noqa: E402
from .lu import cholesky_ex, inv_ex, lu, lu_factor, lu_factor_ex, lu_solve, solve_ex  # noqa: E402
from .rank import cond, lstsq, matrix_rank  # noqa: E402
