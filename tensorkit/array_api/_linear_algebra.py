"""Linear algebra functions of the main namespace: matmul, matrix_transpose, tensordot,
vecdot."""

from __future__ import annotations

from collections.abc import Sequence

from ..ops import matmul as matmul_ops
from ..ops import reduction
from ..ops import shape as shape_ops
from ..ops.complex import conj
from ..tensor import Tensor, normalize_dim
from ._promotion import common


def matmul(x1: Tensor, x2: Tensor, /) -> Tensor:
    """The matrix product (1-D operands are vectors; leading axes broadcast)."""
    return matmul_ops.matmul(*common(x1, x2))


def matrix_transpose(x: Tensor, /) -> Tensor:
    """``x`` with its last two axes swapped (a view)."""
    return shape_ops.matrix_transpose(x)


def tensordot(
    x1: Tensor,
    x2: Tensor,
    /,
    *,
    axes: int | tuple[Sequence[int], Sequence[int]] = 2,
) -> Tensor:
    """Sum of products over the last ``axes`` axes of ``x1`` and the first of ``x2`` (or over
    the two given lists of axes)."""
    return matmul_ops.tensordot(*common(x1, x2), dims=axes)


def vecdot(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """``sum(conj(x1) * x2)`` along ``axis``; the other axes broadcast."""
    a, b = common(x1, x2)
    if a.shape[normalize_dim(axis, a.ndim)] != b.shape[normalize_dim(axis, b.ndim)]:
        raise ValueError(
            f"vecdot: sizes along axis {axis} differ ({tuple(a.shape)} and {tuple(b.shape)})"
        )
    return reduction.sum(conj(a) * b, axis, dtype=a.dtype)
