"""``vector_norm``, ``matrix_norm``, ``norm`` and ``tensor_norm``."""

# ruff: noqa: N803 - argument names (A, B, UPLO) are those of torch.linalg

from __future__ import annotations

import math
import numbers
from typing import Any

from ..ops._apply import SAVE_BOTH, OpDef, apply
from ..ops.binary import where
from ..ops.reduction import amax, amin, expand_reduced, reduce_dims
from ..ops.reduction import sum as reduce_sum
from ..ops.shape import movedim, squeeze
from ..ops.unary import abs as absolute
from ..ops.unary import sign
from ..tensor import Tensor, normalize_dim
from .decompositions import svdvals


def _p_norm_forward(xp: Any, x: Any, ord: float, axis: Any, keepdims: bool) -> Any:
    magnitude = xp.abs(x)
    if ord == 1:
        return magnitude.sum(axis=axis, keepdims=keepdims)
    if ord == 2:
        return xp.sqrt((magnitude * magnitude).sum(axis=axis, keepdims=keepdims))
    return (magnitude**ord).sum(axis=axis, keepdims=keepdims) ** (1.0 / ord)


def _p_norm_rule(ctx: Any, g: Tensor) -> Tensor:
    """d||x||_p / dx = sign(x) |x|^(p-1) / ||x||^(p-1); 0 where the norm is 0, and at
    elements that are 0 for p < 1."""
    x, norm_ = ctx.saved_tensors
    p, axis, keepdims = ctx.attrs["ord"], ctx.attrs["axis"], ctx.attrs["keepdims"]
    shape = tuple(x.shape)
    g = expand_reduced(g, shape, axis, keepdims)
    if p == 1:
        return g * sign(x)
    norm_ = expand_reduced(norm_, shape, axis, keepdims)
    if p == 2:
        elementwise = x
    else:
        is_zero = x == 0
        safe = where(is_zero, 1.0, absolute(x))
        elementwise = where(is_zero, 0.0, sign(x) * safe ** (p - 1))
    empty = norm_ == 0
    scale = where(empty, 0.0, g / where(empty, 1.0, norm_) ** (p - 1))
    return elementwise * scale


_P_NORM = OpDef("linalg_vector_norm", _p_norm_forward, _p_norm_rule, saves=SAVE_BOTH)


def _norm_input(name: str, x: Any, dtype: Any) -> Tensor:
    """``x`` checked to be floating or complex, and cast to ``dtype`` when given."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: input must be a Tensor, got {type(x).__name__}")
    if x._data.dtype.kind not in "fc":
        raise RuntimeError(
            f"{name}: Expected a floating point or complex tensor as input. Got {x.dtype}"
        )
    if dtype is None:
        return x
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name}: dtype should be floating point or complex, but got {dtype}")
    if dtype.itemsize < x.dtype.itemsize:
        raise RuntimeError(
            f"{name}: the dtype of the input ({x.dtype}) should be convertible without "
            f"narrowing to the specified dtype ({dtype})"
        )
    return x.to(dtype)


def vector_norm(
    x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False, *, dtype: Any = None
) -> Tensor:
    """The ``ord``-norm of ``x`` over ``dim`` (all elements by default): any float ``ord``,
    with inf/-inf the largest/smallest magnitude and 0 the number of nonzero elements."""
    name = "linalg.vector_norm"
    x = _norm_input(name, x, dtype)
    if x.is_complex():  # the norm of the magnitudes, real, as PyTorch's
        x = absolute(x)
    if not isinstance(ord, numbers.Real):
        raise RuntimeError(f"{name}: ord must be a number, got {ord!r}")
    dims = reduce_dims(None if dim in ((), []) else dim, x.ndim)
    p = float(ord)
    if p == math.inf:
        return amax(absolute(x), () if dims is None else dims, keepdim)
    if p == -math.inf:
        return amin(absolute(x), () if dims is None else dims, keepdim)
    if p == 0:
        return reduce_sum(sign(absolute(x)), dims, keepdim)
    return apply(_P_NORM, x, ord=p, axis=dims, keepdims=keepdim)


def _matrix_dims(name: str, a: Tensor, dim: Any) -> tuple[int, int]:
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) != 2:
        raise RuntimeError(f"{name}: dim must be a 2-tuple. Got {' '.join(map(str, dims))}")
    first, second = (normalize_dim(d, a.ndim) for d in dims)
    if first == second:
        raise RuntimeError(f"{name}: dims must be different. Got {tuple(dims)}")
    return first, second


def matrix_norm(
    A: Tensor,
    ord: Any = "fro",
    dim: Any = (-2, -1),
    keepdim: bool = False,
    *,
    dtype: Any = None,
) -> Tensor:
    """A matrix norm over the two dims ``dim``: 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2."""
    name = "linalg.matrix_norm"
    if isinstance(A, Tensor) and A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    a = _norm_input(name, A, dtype)
    rows, cols = _matrix_dims(name, a, dim)
    if ord == "fro":
        return vector_norm(a, 2, (rows, cols), keepdim)
    if ord == "nuc":
        return _spectral_norm(a, rows, cols, keepdim, reduce_sum)
    if ord in (2, -2):
        return _spectral_norm(a, rows, cols, keepdim, amax if ord > 0 else amin)
    if ord in (1, -1, math.inf, -math.inf):
        summed, compared = (rows, cols) if ord in (1, -1) else (cols, rows)
        sums = reduce_sum(absolute(a), summed, keepdim=True)
        out = (amax if ord > 0 else amin)(sums, compared, keepdim=True)
        return out if keepdim else squeeze(out, (rows, cols))
    raise RuntimeError(f"{name}: Order {ord} not supported.")


def _spectral_norm(a: Tensor, rows: int, cols: int, keepdim: bool, reduce: Any) -> Tensor:
    """``reduce`` of the singular values of the matrices in dims ``rows`` and ``cols``."""
    out = reduce(svdvals(movedim(a, (rows, cols), (-2, -1))), -1)
    if keepdim:
        for d in sorted((rows, cols)):
            out = out.unsqueeze(d)
    return out


def norm(
    A: Tensor, ord: Any = None, dim: Any = None, keepdim: bool = False, *, dtype: Any = None
) -> Tensor:
    """A vector norm (one dim, or all elements) or a matrix norm (two dims), as
    ``torch.linalg.norm``: with ``ord`` and no ``dim``, A must be 1-D or 2-D."""
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 1:
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        if len(dims) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        raise RuntimeError(
            f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}"
        )
    if ord is None or A.ndim == 1:
        return vector_norm(A, 2 if ord is None else ord, None, keepdim, dtype=dtype)
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    raise RuntimeError(
        "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
        f"Got {A.ndim}D."
    )


def tensor_norm(
    input: Tensor, p: Any = "fro", dim: Any = None, keepdim: bool = False, dtype: Any = None
) -> Tensor:
    """``torch.norm``: a number ``p`` (or None, meaning 2) is a vector norm over ``dim`` (all
    elements by default), as is 'fro' over at most two dims; 'nuc' is a matrix norm."""
    if not isinstance(p, str):
        return vector_norm(input, 2.0 if p is None else p, dim, keepdim, dtype=dtype)
    if p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2):
        return vector_norm(input, 2, dim, keepdim, dtype=dtype)
    dims = tuple(range(input.ndim)) if dim is None else dim
    return matrix_norm(input, p, dims, keepdim, dtype=dtype)
