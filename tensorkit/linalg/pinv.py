"""``pinv`` (one op, from the SVD or, for ``hermitian``, the eigendecomposition) and the
``atol``/``rtol`` cutoffs that ``matrix_rank`` shares."""

# ruff: noqa: N803 - argument names (A, B, UPLO) are those of torch.linalg

from __future__ import annotations

from typing import Any

from ..ops._apply import SAVE_BOTH, OpDef, apply
from ..ops.matmul import matmul
from ..tensor import Tensor
from ._common import _check_matrix


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
