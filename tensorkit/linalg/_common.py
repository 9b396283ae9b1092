"""What the linalg modules share: ``LinAlgError``, the input checks and the reports of a
LAPACK failure (singular, not positive-definite) in PyTorch's words, and small tensor
helpers."""

# ruff: noqa: N803 - argument names (A, B, UPLO) are those of torch.linalg

from __future__ import annotations

from typing import Any

from numpy.linalg import LinAlgError as _LapackError

from ..ops.creation import eye
from ..tensor import Tensor


class LinAlgError(RuntimeError):
    """A matrix is singular or not positive-definite (as ``torch.linalg.LinAlgError``)."""

    __module__ = "tensorkit.linalg"  # where users name it


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


def _first_failing_minor(xp: Any, matrix: Any) -> int:
    """The order of the first leading minor of one matrix that is not positive-definite
    (0 if none), by bisection: a minor fails once any smaller one does."""
    if _is_positive_definite(xp, matrix):
        return 0
    low, high = 1, matrix.shape[-1]  # the smallest failing order lies in [low, high]
    while low < high:
        middle = (low + high) // 2
        if _is_positive_definite(xp, matrix[:middle, :middle]):
            low = middle + 1
        else:
            high = middle
    return low


def _not_positive_definite(name: str, xp: Any, a: Any) -> LinAlgError:
    """The error for a failed Cholesky factorization, naming the batch element and the
    order of its first leading minor that is not positive-definite."""
    n = a.shape[-1]
    flat = a.reshape(-1, n, n)
    bad = next((i for i in range(flat.shape[0]) if not _is_positive_definite(xp, flat[i])), None)
    detail = ""
    if bad is not None:
        order = _first_failing_minor(xp, flat[bad])
        detail = f" (the leading minor of order {order} is not positive-definite)"
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
