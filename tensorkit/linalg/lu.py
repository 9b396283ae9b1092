"""LU factorization with partial pivoting and what is built on it: ``lu_factor(_ex)``, ``lu``,
``lu_solve``, and the ``_ex`` variants of inv, cholesky and solve (info tensors).

The factorization runs column by column on arrays (vectorized over the batch), so it works on
NumPy and CuPy alike. Its gradient rule is PyTorch's (``linalg_lu_backward``), written with
tensorkit ops; ``lu`` and ``lu_solve`` compose differentiable ops on the packed factors.
"""

# ruff: noqa: N803 - argument names (A, B, LU) are those of torch.linalg

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

from .._dtype import int32
from ..ops._apply import SAVE_OUTPUT, OpDef, apply
from ..ops.binary import where
from ..ops.creation import eye, zeros
from ..ops.matmul import matmul
from ..ops.shape import cat, narrow, tril, triu
from ..tensor import Tensor
from ._common import (
    LinAlgError,
    _batch_prefix,
    _check_matrix,
    _first_failing_minor,
    _not_positive_definite,
)
from .decompositions import cholesky
from .inverse import inv
from .solve import _check_rhs, solve, solve_triangular

LUFactorResult = namedtuple("linalg_lu_factor", ["LU", "pivots"])
LUFactorExResult = namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
LUResult = namedtuple("linalg_lu", ["P", "L", "U"])
InvExResult = namedtuple("linalg_inv_ex", ["inverse", "info"])
CholeskyExResult = namedtuple("linalg_cholesky_ex", ["L", "info"])
SolveExResult = namedtuple("linalg_solve_ex", ["result", "info"])


# ----------------------------------------------------------------- the factorization
def _lu_forward(xp: Any, a: Any) -> tuple:
    """(packed LU, 1-based int32 pivots, int32 info) as LAPACK's getrf: info is the 1-based
    index of the first zero pivot (0 if none); a zero pivot's column is left unscaled."""
    m, n = a.shape[-2:]
    k = min(m, n)
    flat = a.reshape(math.prod(a.shape[:-2]), m, n).copy()
    count = flat.shape[0]
    rows = xp.arange(count)
    pivots = xp.zeros((count, k), dtype=xp.int32)
    info = xp.zeros(count, dtype=xp.int32)
    for j in range(k):
        column = flat[:, j:, j]
        if column.dtype.kind == "c":  # LAPACK's zgetrf compares |re| + |im|, not |z|
            size = xp.abs(column.real) + xp.abs(column.imag)
        else:
            size = xp.abs(column)
        p = xp.argmax(size, axis=1) + j
        pivots[:, j] = p + 1
        top = flat[rows, j].copy()
        flat[rows, j] = flat[rows, p]
        flat[rows, p] = top
        pivot = flat[:, j, j]
        zero = pivot == 0
        info = xp.where((info == 0) & zero, j + 1, info).astype(xp.int32)
        flat[:, j + 1 :, j] /= xp.where(zero, 1, pivot)[:, None]
        flat[:, j + 1 :, j + 1 :] -= flat[:, j + 1 :, j : j + 1] * flat[:, j : j + 1, j + 1 :]
    batch = a.shape[:-2]
    return flat.reshape(a.shape), pivots.reshape((*batch, k)), info.reshape(batch)


def _unpack(lu: Tensor) -> tuple[Tensor, Tensor]:
    """L (m x k, unit diagonal) and U (k x n) from a packed m x n LU."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    low = narrow(tril(lu, -1), -1, 0, k) + eye(m, k, dtype=lu.dtype, device=lu.device)
    return low, narrow(triu(lu), -2, 0, k)


def _lu_rule(ctx: Any, g: Tensor, *_: Any) -> Tensor:
    """PyTorch's linalg_lu_backward for A = P L U (wide and tall cases; square is either)."""
    lu, pivots, _ = ctx.saved_tensors
    m, n = lu.shape[-2:]
    k = min(m, n)
    low, up = _unpack(lu)
    g_low, g_up = narrow(tril(g, -1), -1, 0, k), narrow(triu(g), -2, 0, k)
    if m <= n:
        inner = matmul(low.mH, g_low) - matmul(g_up, up.mH)
        up1, g_up1 = narrow(up, -1, 0, k), narrow(g_up, -1, 0, k)
        x = solve_triangular(up1.mH, tril(inner, -1), upper=False, left=False) + g_up1
        if n > k:
            x = cat([x, narrow(g_up, -1, k, n - k)], -1)
        x = solve_triangular(low.mH, x, upper=True, unitriangular=True)
    else:
        inner = matmul(g_up, up.mH) - matmul(low.mH, g_low)
        low1, g_low1 = narrow(low, -2, 0, k), narrow(g_low, -2, 0, k)
        x = solve_triangular(low1.mH, triu(inner), upper=True, unitriangular=True) + g_low1
        x = cat([x, narrow(g_low, -2, k, m - k)], -2)
        x = solve_triangular(up.mH, x, upper=False, left=False)
    return matmul(_permutation(pivots, m, lu), x)


_LU_FACTOR = OpDef("linalg_lu_factor_ex", _lu_forward, _lu_rule, saves=SAVE_OUTPUT, outputs=-1)


def _permutation_forward(xp: Any, pivots: Any, m: int, dtype: Any) -> Any:
    """P with A = P L U from LAPACK's row swaps: row i of P^T A is row perm[i] of A."""
    batch, k = pivots.shape[:-1], pivots.shape[-1]
    flat = pivots.reshape(math.prod(batch), k).astype(xp.int64) - 1
    count = flat.shape[0]
    rows = xp.arange(count)
    perm = xp.broadcast_to(xp.arange(m), (count, m)).copy()
    for j in range(k):
        target = flat[:, j]
        first = perm[:, j].copy()
        perm[:, j] = perm[rows, target]
        perm[rows, target] = first
    out = xp.zeros((count, m, m), dtype=dtype)
    out[rows[:, None], perm, xp.arange(m)[None, :]] = 1
    return out.reshape((*batch, m, m))


_PERMUTATION = OpDef("linalg_lu_permutation", _permutation_forward, None)


def _permutation(pivots: Tensor, m: int, like: Tensor) -> Tensor:
    return apply(_PERMUTATION, pivots, m=m, dtype=like._data.dtype)


def _check_lu_input(name: str, A: Any, pivot: bool) -> None:
    if isinstance(A, Tensor) and A.ndim < 2:
        raise RuntimeError(
            f"lu_factor: Expected tensor with 2 or more dimensions. Got size: "
            f"{list(A.shape)} instead"
        )
    _check_matrix(name, A, square=False)
    if not pivot:
        raise RuntimeError(f"{name}: LU without pivoting is not implemented on the CPU")


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False) -> LUFactorExResult:
    """The packed LU factorization with partial pivoting, its 1-based int32 ``pivots``, and
    ``info`` (the 1-based index of the first zero on U's diagonal, 0 if none)."""
    name = "linalg.lu_factor_ex"
    _check_lu_input(name, A, pivot)
    out = LUFactorExResult(*apply(_LU_FACTOR, A))
    if check_errors:
        _raise_zero_pivot(name, out.info)
    return out


def _raise_zero_pivot(name: str, info: Tensor) -> None:
    bad = info._data.reshape(-1) > 0
    if bool(bad.any()):
        index = int(bad.argmax())
        prefix = f"(Batch element {index}): " if info.ndim else ""
        j = int(info._data.reshape(-1)[index])
        raise LinAlgError(
            f"{name}: {prefix}U[{j},{j}] is zero and using it on lu_solve would result in "
            "a division by zero. If you still want to perform the factorization, consider "
            "calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)"
        )


def lu_factor(A: Tensor, *, pivot: bool = True) -> LUFactorResult:
    """The packed LU factorization and pivots; raises :class:`LinAlgError` when U would have
    a zero on its diagonal."""
    _check_lu_input("linalg.lu_factor", A, pivot)
    lu_, pivots, info = apply(_LU_FACTOR, A)
    _raise_zero_pivot("linalg.lu_factor", info)
    return LUFactorResult(lu_, pivots)


def lu(A: Tensor, *, pivot: bool = True) -> LUResult:
    """P, L (unit lower triangular) and U (upper triangular) with ``A = P L U``."""
    _check_lu_input("linalg.lu", A, pivot)
    lu_, pivots, _ = apply(_LU_FACTOR, A)
    low, up = _unpack(lu_)
    return LUResult(_permutation(pivots, A.shape[-2], A), low, up)


# ------------------------------------------------------------------------- lu_solve
def _check_lu_solve(LU: Any, pivots: Any, B: Any, left: bool) -> None:
    name = "linalg.lu_solve"
    _check_matrix(name, LU)
    if not isinstance(pivots, Tensor) or pivots._data.dtype.name != "int32":
        raise RuntimeError(f"{name}: pivots should be a Tensor of scalar type tensorkit.int32")
    if pivots.ndim < 1 or pivots.shape[-1] != LU.shape[-1]:
        raise RuntimeError(
            f"{name}: Number of pivots per batch should be same as the dimension of the matrix"
        )
    _check_rhs(name, LU, B, left)


def lu_solve(
    LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False
) -> Tensor:
    """The solution X of ``A X = B`` (``A^H X = B`` when ``adjoint``; ``X A = B`` when not
    ``left``) from ``LU, pivots = lu_factor(A)``. Differentiable in ``LU`` and ``B``."""
    _check_lu_solve(LU, pivots, B, left)
    if not left:
        return _lu_solve_left(LU, pivots, B.mH, not adjoint).mH
    return _lu_solve_left(LU, pivots, B, adjoint)


def _lu_solve_left(LU: Tensor, pivots: Tensor, B: Tensor, adjoint: bool) -> Tensor:
    p = _permutation(pivots, LU.shape[-1], LU)
    if adjoint:  # A^H = U^H L^H P^T
        y = solve_triangular(LU.mH, B, upper=False)
        y = solve_triangular(LU.mH, y, upper=True, unitriangular=True)
        return matmul(p, y)
    y = solve_triangular(LU, matmul(p.mT, B), upper=False, unitriangular=True)
    return solve_triangular(LU, y, upper=True)


# ------------------------------------------------------------------- the _ex variants
def _unless_failed(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, or None when it raises :class:`LinAlgError` (the fast path:
    the info is worked out only when a matrix fails)."""
    try:
        return fn(*args, **kwargs)
    except LinAlgError:
        return None


def _no_failures(A: Tensor) -> Tensor:
    return zeros(A.shape[:-2], dtype=int32, device=A.device)


def inv_ex(A: Tensor, *, check_errors: bool = False) -> InvExResult:
    """The inverse and an int32 ``info`` (nonzero where a matrix is singular; its inverse is
    then not finite). ``check_errors=True`` raises :class:`LinAlgError` instead."""
    name = "linalg.inv_ex"
    _check_matrix(name, A)
    inverse = _unless_failed(inv, A)
    if inverse is not None:
        return InvExResult(inverse, _no_failures(A))
    info = apply(_LU_FACTOR, A.detach())[2]
    bad = info._data.reshape(-1) > 0
    if check_errors:
        index = int(bad.argmax())
        raise LinAlgError(
            f"{name}: {_batch_prefix(A._data, index)}The diagonal element "
            f"{int(info._data.reshape(-1)[index])} is zero, the inversion could not be "
            "completed because the input matrix is singular."
        )
    identity = eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(A.shape)
    return InvExResult(_solve_or_fallback(A, identity, info), info)


def _lu_solve_forward(xp: Any, a: Any, b: Any) -> Any:
    """X with A X = B by LU on arrays, never raising: a zero pivot gives inf or nan, as
    LAPACK's getrs does."""
    lu_, pivots, _ = _lu_forward(xp, a)
    n = a.shape[-1]
    p = _permutation_forward(xp, pivots, n, a.dtype)
    x = xp.matmul(xp.swapaxes(p, -1, -2), b)
    for i in range(n):
        x[..., i, :] -= (lu_[..., i, :i, None] * x[..., :i, :]).sum(axis=-2)
    for i in reversed(range(n)):
        rest = (lu_[..., i, i + 1 :, None] * x[..., i + 1 :, :]).sum(axis=-2)
        x[..., i, :] = (x[..., i, :] - rest) / lu_[..., i, i, None]
    return x


_LU_SOLVE_FALLBACK = OpDef("linalg_solve_ex", _lu_solve_forward, None)


def _solve_or_fallback(A: Tensor, B: Tensor, info: Tensor) -> Tensor:
    """solve(A, B) for the invertible matrices of A (differentiable), and the non-finite
    result LAPACK gives for the singular ones (no gradient)."""
    failed = (info > 0).unsqueeze(-1).unsqueeze(-1)
    identity = eye(A.shape[-1], dtype=A.dtype, device=A.device)
    solved = solve(where(failed, identity, A), B)
    batch = solved.shape[:-2]
    a = A.detach().expand((*batch, *A.shape[-2:]))
    b = B.detach().expand(solved.shape)
    return where(failed, apply(_LU_SOLVE_FALLBACK, a, b), solved)


def _cholesky_info_forward(xp: Any, a: Any) -> Any:
    """The order of the first leading minor that is not positive-definite (0 if none)."""
    n = a.shape[-1]
    flat = a.reshape(math.prod(a.shape[:-2]), n, n)
    info = [_first_failing_minor(xp, flat[i]) for i in range(flat.shape[0])]
    return xp.asarray(info, dtype=xp.int32).reshape(a.shape[:-2])


_CHOLESKY_INFO = OpDef("linalg_cholesky_info", _cholesky_info_forward, None)


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> CholeskyExResult:
    """The Cholesky factor and an int32 ``info``: the order of the first leading minor that is
    not positive-definite (0 if none; that matrix's factor is then NaN)."""
    name = "linalg.cholesky_ex"
    _check_matrix(name, A)
    low = _unless_failed(cholesky, A, upper=upper)
    if low is not None:
        return CholeskyExResult(low, _no_failures(A))
    info = apply(_CHOLESKY_INFO, A.detach())
    if check_errors:
        raise _not_positive_definite(name, A.device.xp, A._data)
    mask = (info > 0).unsqueeze(-1).unsqueeze(-1)
    identity = eye(A.shape[-1], dtype=A.dtype, device=A.device)
    low = cholesky(where(mask, identity, A), upper=upper)
    return CholeskyExResult(where(mask, float("nan"), low), info)


def solve_ex(
    A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False
) -> SolveExResult:
    """``solve`` and an int32 ``info`` (nonzero where A is singular; that solution is then not
    finite). ``check_errors=True`` raises :class:`LinAlgError` instead."""
    name = "linalg.solve_ex"
    _check_matrix(name, A)
    x = _unless_failed(solve, A, B, left=left)
    if x is not None:
        return SolveExResult(x, _no_failures(A))
    info = apply(_LU_FACTOR, A.detach())[2]
    if check_errors:
        raise LinAlgError(f"{name}: The solver failed because the input matrix is singular.")
    is_vector = isinstance(B, Tensor) and (
        B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])
    )
    rhs = B.unsqueeze(-1) if is_vector else B
    _check_rhs(name, A, rhs, left)
    if left:
        x = _solve_or_fallback(A, rhs, info)
    else:
        x = _solve_or_fallback(A.mT, rhs.mT, apply(_LU_FACTOR, A.detach().mT)[2]).mT
    return SolveExResult(x.squeeze(-1) if is_vector else x, info)
