"""``cross``, ``vecdot``, ``matrix_power``, ``multi_dot`` (in the cheapest order) and
``diagonal``: compositions of differentiable ops."""

# ruff: noqa: N803 - argument names (A, B, UPLO) are those of torch.linalg

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..ops._apply import OpDef, apply
from ..ops.matmul import matmul
from ..ops.reduction import sum as reduce_sum
from ..ops.shape import broadcast_tensors, cat, narrow
from ..ops.shape import diagonal as _diagonal
from ..tensor import Tensor, normalize_dim
from .inverse import inv


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
