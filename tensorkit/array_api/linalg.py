"""The standard's ``linalg`` extension, on ``tensorkit.linalg``.

Decompositions, inverses and norms delegate to ``tensorkit.linalg`` (imported on first use);
this module adapts names and semantics to the standard: keyword names (``axis``, ``keepdims``),
named-tuple results, ``solve``'s rule that only a 1-D ``x2`` is a vector, and ``rtol``
defaults. ``diagonal``, ``outer``, ``trace`` and ``matrix_rank`` are built from core ops.
"""

from __future__ import annotations

import builtins
import importlib
from types import ModuleType
from typing import Literal, NamedTuple

from .._dtype import dtype
from ..ops import binary, reduction, unary
from ..ops import shape as shape_ops
from ..tensor import Tensor
from ._data_types import finfo
from ._linear_algebra import matmul, matrix_transpose, tensordot, vecdot
from ._promotion import common

__all__ = [
    "cholesky",
    "cross",
    "det",
    "diagonal",
    "eigh",
    "eigvalsh",
    "inv",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
]


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


def _core() -> ModuleType:
    """``tensorkit.linalg``, imported on first use."""
    return importlib.import_module("..linalg", __package__)


def cholesky(x: Tensor, /, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of (stacked) Hermitian positive-definite matrices: lower, or
    upper if ``upper``."""
    return _core().cholesky(x, upper=upper)


def cross(x1: Tensor, x2: Tensor, /, *, axis: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``axis`` (other axes broadcast)."""
    a, b = shape_ops.broadcast_tensors(*common(x1, x2))
    return _core().cross(a, b, dim=axis)


def det(x: Tensor, /) -> Tensor:
    """The determinant of (stacked) square matrices."""
    return _core().det(x)


def diagonal(x: Tensor, /, *, offset: int = 0) -> Tensor:
    """The ``offset``-th diagonal of the (stacked) matrices in the last two axes."""
    return shape_ops.diagonal(x, offset, -2, -1)


def eigh(x: Tensor, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of (stacked) Hermitian matrices."""
    values, vectors = _core().eigh(x)
    return EighResult(values, vectors)


def eigvalsh(x: Tensor, /) -> Tensor:
    """Eigenvalues (ascending) of (stacked) Hermitian matrices."""
    return _core().eigvalsh(x)


def inv(x: Tensor, /) -> Tensor:
    """The inverse of (stacked) square matrices."""
    return _core().inv(x)


def matrix_norm(
    x: Tensor,
    /,
    *,
    keepdims: bool = False,
    ord: int | float | Literal["fro", "nuc"] | None = "fro",
) -> Tensor:
    """A norm of the (stacked) matrices in the last two axes."""
    return _core().matrix_norm(x, ord="fro" if ord is None else ord, keepdim=keepdims)


def matrix_power(x: Tensor, n: int, /) -> Tensor:
    """The ``n``-th power of (stacked) square matrices (negative ``n`` inverts)."""
    return _core().matrix_power(x, n)


def matrix_rank(x: Tensor, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """The number of singular values above ``rtol`` times the largest one (by default
    ``max(M, N)`` times the dtype's epsilon)."""
    values = svdvals(x)
    if rtol is None:
        rtol = builtins.max(x.shape[-2:]) * finfo(values.dtype).eps
    elif isinstance(rtol, Tensor):
        rtol = shape_ops.unsqueeze(rtol, -1)
    tolerance = reduction.amax(values, -1, keepdim=True) * rtol
    return reduction.sum(binary.gt(values, tolerance), -1)


def outer(x1: Tensor, x2: Tensor, /) -> Tensor:
    """The outer product of two vectors."""
    a, b = common(x1, x2)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"outer needs 1-D arrays, got {a.ndim}-D and {b.ndim}-D")
    return binary.mul(shape_ops.unsqueeze(a, 1), b)


def pinv(x: Tensor, /, *, rtol: float | Tensor | None = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse; singular values below ``rtol`` times the largest
    count as zero (by default ``max(M, N)`` times the dtype's epsilon)."""
    if rtol is None:
        rtol = builtins.max(x.shape[-2:]) * finfo(x.dtype).eps
    return _core().pinv(x, rtol=rtol)


def qr(x: Tensor, /, *, mode: Literal["reduced", "complete"] = "reduced") -> QRResult:
    """The QR decomposition of (stacked) matrices."""
    q, r = _core().qr(x, mode=mode)
    return QRResult(q, r)


def slogdet(x: Tensor, /) -> SlogdetResult:
    """The sign and the log of the absolute value of the determinant."""
    sign, logabsdet = _core().slogdet(x)
    return SlogdetResult(sign, logabsdet)


def solve(x1: Tensor, x2: Tensor, /) -> Tensor:
    """The solution of ``x1 @ out = x2``. A 1-D ``x2`` is one vector for every matrix of
    ``x1``; otherwise ``x2`` holds (stacked) matrices, and the stacks broadcast."""
    a, b = common(x1, x2)
    if b.ndim == 1:
        column = shape_ops.unsqueeze(b, 1)
        column = shape_ops.broadcast_to(column, tuple(a.shape[:-1]) + (1,))
        return shape_ops.squeeze(_core().solve(a, column), -1)
    batch = shape_ops.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    a = shape_ops.broadcast_to(a, batch + tuple(a.shape[-2:]))
    b = shape_ops.broadcast_to(b, batch + tuple(b.shape[-2:]))
    return _core().solve(a, b)


def svd(x: Tensor, /, *, full_matrices: bool = True) -> SVDResult:
    """The singular value decomposition ``x = U @ diag(S) @ Vh``."""
    u, s, vh = _core().svd(x, full_matrices=full_matrices)
    return SVDResult(u, s, vh)


def svdvals(x: Tensor, /) -> Tensor:
    """The singular values (descending) of (stacked) matrices."""
    return _core().svdvals(x)


def trace(x: Tensor, /, *, offset: int = 0, dtype: dtype | None = None) -> Tensor:
    """The sum of the ``offset``-th diagonal of the (stacked) matrices."""
    return reduction.sum(diagonal(x, offset=offset), -1, dtype=dtype)


def vector_norm(
    x: Tensor,
    /,
    *,
    axis: int | tuple[int, ...] | None = None,
    keepdims: bool = False,
    ord: int | float = 2,
) -> Tensor:
    """The ``ord``-norm of the vectors along ``axis`` (all elements by default). Over no
    axes (``axis=()``) each element is its own vector: the norm is ``abs(x)``, or whether it
    is nonzero for ``ord=0``."""
    if axis == ():
        magnitude = unary.abs(x)
        return binary.ne(x, 0).to(magnitude.dtype) if ord == 0 else magnitude
    return _core().vector_norm(x, ord=ord, dim=axis, keepdim=keepdims)
