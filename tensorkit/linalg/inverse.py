"""``inv``, ``det`` and ``slogdet``: one op each, with matrix-calculus gradient rules."""

# ruff: noqa: N803 - argument names (A, B, UPLO) are those of torch.linalg

from __future__ import annotations

from collections import namedtuple
from typing import Any

from ..ops._apply import SAVE_BOTH, SAVE_OUTPUT, OpDef, apply
from ..ops.binary import where
from ..ops.matmul import matmul
from ..ops.shape import expand
from ..tensor import Tensor
from ._common import _as_matrix_scale, _check_matrix, _eye, _run_invertible
from .decompositions import svd

SlogdetResult = namedtuple("linalg_slogdet", ["sign", "logabsdet"])


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
