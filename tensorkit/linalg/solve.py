"""``solve`` and ``solve_triangular`` (one op each; gradients solve the adjoint system)."""

# ruff: noqa: N803 - argument names (A, B, UPLO) are those of torch.linalg

from __future__ import annotations

from typing import Any

from ..ops._apply import SAVE_BOTH, OpDef, apply
from ..ops.matmul import matmul
from ..ops.shape import broadcast_shapes, expand, tril, triu
from ..tensor import Tensor
from ._common import _check_float, _check_matrix, _eye, _run_invertible


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
