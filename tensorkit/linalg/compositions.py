"""Compositions of differentiable ops: ``tensorinv``, ``tensorsolve``, ``vander`` and
``householder_product`` (their gradients are those of the ops they are made of)."""

# ruff: noqa: N803 - argument names (A, B) are those of torch.linalg

from __future__ import annotations

import math
from typing import Any

from ..ops.creation import eye, ones
from ..ops.matmul import matmul
from ..ops.reduction import cumprod
from ..ops.shape import cat, expand, movedim, narrow, triu
from ..tensor import Tensor, normalize_dim
from .inverse import inv
from .solve import solve


def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of ``A`` for ``tensordot(.., ind)``: ``A`` as a matrix of its first ``ind``
    dims by the rest, inverted, with its dims reordered to ``A.shape[ind:] + A.shape[:ind]``."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError(
            "Expected self to satisfy the requirement prod(self.shape[ind:]) == "
            f"prod(self.shape[:ind]), but got {cols} != {rows}"
        )
    inverse = inv(A.reshape(rows, cols))
    return inverse.reshape((*A.shape[ind:], *A.shape[:ind]))


def tensorsolve(A: Tensor, B: Tensor, dims: Any = None) -> Tensor:
    """X with ``tensordot(A, X, X.ndim) = B``; ``dims`` names dims of ``A`` to move last
    first. X has shape ``A.shape[B.ndim:]``."""
    a = A
    if dims is not None:
        dims = [normalize_dim(d, a.ndim) for d in dims]
        a = movedim(a, dims, list(range(a.ndim - len(dims), a.ndim)))
    rows, cols = math.prod(a.shape[: B.ndim]), math.prod(a.shape[B.ndim :])
    if rows != cols:
        raise RuntimeError(
            "Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
            f"prod(self.shape[:other.ndim]), but got {cols} != {rows}"
        )
    solution = solve(a.reshape(rows, cols), B.reshape(rows))
    return solution.reshape(a.shape[B.ndim :])


def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """The Vandermonde matrices of the vectors in ``x``: columns ``x**0 .. x**(N-1)`` (N is
    ``x.shape[-1]`` by default), by cumulative products as PyTorch."""
    n = (x.shape[-1] if x.ndim else 1) if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    repeated = expand(x.unsqueeze(-1), (*x.shape, n - 1))
    first = ones((*x.shape, 1), dtype=x.dtype, device=x.device)
    return cat([first, cumprod(repeated, -1)], -1)


def _check_householder(A: Any, tau: Any) -> None:
    name = "linalg.householder_product"
    if A.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if A.shape[-2] < A.shape[-1]:
        raise RuntimeError(
            f"{name}: input.shape[-2] must be greater than or equal to input.shape[-1]"
        )
    if tau.ndim != A.ndim - 1:
        raise RuntimeError(
            f"{name}: Expected tau to have one dimension less than input, but got tau.ndim "
            f"equal to {tau.ndim} and input.ndim is equal to {A.ndim}"
        )
    if A.shape[-1] < tau.shape[-1]:
        raise RuntimeError(
            f"{name}: input.shape[-1] must be greater than or equal to tau.shape[-1]"
        )
    if A.dtype != tau.dtype:
        raise RuntimeError(f"{name}: tau dtype {tau.dtype} does not match input dtype {A.dtype}")


def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first n columns of ``H_1 H_2 ... H_k`` with ``H_i = I - tau_i v_i v_i^H``, where
    ``v_i`` is column i of ``A`` below its diagonal, with a 1 on it (LAPACK's orgqr)."""
    _check_householder(A, tau)
    m, n = A.shape[-2:]
    identity = eye(m, dtype=A.dtype, device=A.device)
    reflectors = triu(A.mT, 1).mT + eye(m, n, dtype=A.dtype, device=A.device)
    q = expand(identity, (*A.shape[:-2], m, m))
    for i in range(tau.shape[-1]):
        v = narrow(reflectors, -1, i, 1)
        scale = narrow(tau, -1, i, 1).unsqueeze(-1)
        q = q - matmul(matmul(q, v) * scale, v.mH)
    return narrow(q, -1, 0, n)
