"""Rank-aware functions: ``lstsq``, ``matrix_rank`` and ``cond``, built from ``pinv``,
``svdvals``, ``inv_ex`` and the matrix norms, so their gradients are those of the parts."""

# ruff: noqa: N803 - argument names (A, B) are those of torch.linalg

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

from .._dtype import int64
from ..ops._apply import OpDef, apply
from ..ops.binary import where
from ..ops.creation import zeros
from ..ops.matmul import matmul
from ..ops.reduction import sum as reduce_sum
from ..ops.unary import abs as absolute
from ..tensor import Tensor
from ._common import _check_float, _check_matrix
from .decompositions import svdvals
from .lu import inv_ex
from .norms import matrix_norm
from .pinv import _cutoff, _tolerance_array, pinv

LstsqResult = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


# ----------------------------------------------------------------------- matrix_rank
def _rank_forward(xp: Any, a: Any, atol: Any, rtol: Any, hermitian: bool) -> Any:
    if hermitian:
        magnitudes = xp.abs(xp.linalg.eigvalsh(a))
    else:
        magnitudes = xp.linalg.svd(a, compute_uv=False)
    kept = magnitudes > _cutoff(xp, a, magnitudes, atol, rtol)
    return kept.sum(axis=-1).astype(xp.int64)


_MATRIX_RANK = OpDef("linalg_matrix_rank", _rank_forward, None)


def matrix_rank(
    A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False
) -> Tensor:
    """The number of singular values (the eigenvalues' magnitudes if ``hermitian``) above
    ``max(atol, rtol * largest)``, as int64; the tolerances default as in :func:`pinv`."""
    name = "linalg.matrix_rank"
    if isinstance(A, Tensor) and A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor input must have at least 2 dimensions.")
    _check_matrix(name, A, square=hermitian)
    return apply(
        _MATRIX_RANK,
        A.detach(),
        atol=_tolerance_array(atol, A, name),
        rtol=_tolerance_array(rtol, A, name),
        hermitian=hermitian,
    )


# ---------------------------------------------------------------------------- lstsq
def _check_lstsq(A: Any, B: Any, driver: Any) -> None:
    name = "linalg.lstsq"
    _check_matrix(name, A, square=False)
    if not isinstance(B, Tensor):
        raise TypeError(f"{name}: B must be a Tensor, got {type(B).__name__}")
    _check_float(name, B)
    if A.dtype != B.dtype:
        raise RuntimeError(
            f"{name}: Expected input and other to have the same dtype, but got input's dtype "
            f"{A.dtype} and other's dtype {B.dtype}"
        )
    if not 0 <= A.ndim - B.ndim <= 1:
        raise RuntimeError(
            f"{name}: input.dim() must be greater or equal to other.dim() and (input.dim() - "
            "other.dim()) <= 1"
        )
    rows = B.shape[-1] if A.ndim - B.ndim == 1 else B.shape[-2]
    if rows != A.shape[-2]:
        raise RuntimeError(f"{name}: input.size(-2) should match other.size(-2)")
    if driver is not None and driver not in _DRIVERS:
        raise RuntimeError(
            f"{name}: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)"
        )


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None) -> Any:
    """The least-squares (minimum-norm) solution X of ``A X = B``, with torch's other fields:
    ``residuals`` (squared residual norms when m > n and, for 'gelsd'/'gelss', every matrix has
    full rank; empty for 'gelsy', the default), ``rank`` (empty for 'gels') and
    ``singular_values`` ('gelsd' and 'gelss' only). Singular values at most ``rcond`` times
    the largest count as zero (default eps * max(m, n)); rank-deficient problems are solved
    through the SVD for every driver. The gradient is that of ``pinv(A) @ B`` with pinv's
    default tolerance, as PyTorch's, whatever ``rcond``."""
    _check_lstsq(A, B, driver)
    driver = driver or "gelsy"
    is_vector = A.ndim - B.ndim == 1
    rhs = B.unsqueeze(-1) if is_vector else B
    m, n = A.shape[-2:]
    rtol = None if rcond is None or rcond < 0 else rcond
    x = matmul(pinv(A), rhs)
    if rtol is not None:  # the truncated solution, with the gradient of the default one
        truncated = matmul(pinv(A.detach(), rtol=rtol), rhs.detach())
        x = x + (truncated - x).detach()
    real_dtype = (A.real if A.is_complex() else A).dtype  # of residuals, as torch's
    empty = zeros(0, dtype=real_dtype, device=A.device)
    rank = zeros(0, dtype=int64, device=A.device) if driver == "gels" else None
    if rank is None:
        rank = matrix_rank(A, rtol=rtol)
    residuals = empty
    full_rank = driver == "gels" or bool((rank._data == min(m, n)).all())
    if m > n and driver != "gelsy" and full_rank:
        residuals = reduce_sum(absolute(matmul(A, x) - rhs) ** 2, -2)
    values = svdvals(A).detach() if driver in ("gelsd", "gelss") else empty
    return LstsqResult(x.squeeze(-1) if is_vector else x, residuals, rank, values)


# ----------------------------------------------------------------------------- cond
_INVERSE_NORMS = ("fro", "nuc", math.inf, -math.inf, 1, -1)


def cond(A: Tensor, p: Any = None) -> Tensor:
    """The condition number ``norm(A, p) * norm(inv(A), p)``: from the singular values for
    p = None, 2 or -2 (any shape), otherwise for square A, inf where A is singular."""
    name = "linalg.cond"
    if p is None or p in (2, -2):
        _check_matrix(name, A, square=False)
        s = svdvals(A)
        largest, smallest = s[..., 0], s[..., -1]
        return smallest / largest if p == -2 else largest / smallest
    if p not in _INVERSE_NORMS:
        raise RuntimeError(f"{name} got an invalid norm type: {p}")
    if isinstance(A, Tensor) and A.ndim >= 2 and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(
            f"{name}(ord={p}): A must be batches of square matrices, but they are "
            f"{A.shape[-2]} by {A.shape[-1]} matrices"
        )
    _check_matrix(name, A)
    inverse, info = inv_ex(A)
    value = matrix_norm(A, p) * matrix_norm(inverse, p)
    return where(info > 0, math.inf, value)
