"""Reductions (sum, mean, max, var, logsumexp, ...) and scans (cumsum, cumprod).

``dim`` may be None (all dims), an int or a tuple; ``keepdim`` keeps reduced dims as size 1.
Gradient rules broadcast the incoming gradient back over the reduced dims.
"""

from __future__ import annotations

import builtins
from collections import namedtuple
from typing import Any

import numpy as np

from .._dtype import bool_, int64
from ..tensor import Tensor, normalize_dim
from ._apply import FLOAT, SAVE_BOTH, SAVE_INPUTS, OpDef, apply
from .binary import maximum, minimum, where
from .complex import conj
from .shape import expand, flip, reshape

_INT64 = np.dtype(np.int64)

values_indices = namedtuple("values_indices", ["values", "indices"])
min_max = namedtuple("aminmax", ["min", "max"])


def reduce_dims(dim: Any, ndim: int, empty_is_all: bool = True) -> tuple[int, ...] | None:
    """Normalized reduced dims, or None for "all dims". An empty ``dim`` means all dims, as
    in PyTorch's sum/mean/amax/std, unless ``empty_is_all`` is False (all/any: no dims)."""
    if dim is None:
        return None
    if isinstance(dim, int):
        dim = (dim,)
    dims = tuple(normalize_dim(d, builtins.max(ndim, 1)) for d in dim)
    for i, d in enumerate(dims):
        if d in dims[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    if ndim == 0 or (empty_is_all and not dims):
        return None
    return dims


def _axis(dims: tuple[int, ...] | None) -> Any:
    return dims if dims is None else tuple(dims)


def expand_reduced(g: Tensor, shape: tuple, dims: tuple | None, keepdim: bool) -> Tensor:
    """Broadcast a reduced gradient back to ``shape`` (re-inserting dims dropped by keepdim)."""
    if not keepdim and shape:
        kept_shape = tuple(1 if dims is None or i in dims else n for i, n in enumerate(shape))
        g = reshape(g, kept_shape)
    return expand(g, shape)


def _expand_reduced_array(xp: Any, g: Any, shape: tuple, dims: Any, keepdim: bool) -> Any:
    """``expand_reduced`` on an array: the same views, made without op dispatch."""
    if not keepdim and shape:
        g = g.reshape(tuple(1 if dims is None or i in dims else n for i, n in enumerate(shape)))
    return xp.broadcast_to(g, shape)


def sum_to_shape(g: Tensor, shape: tuple) -> Tensor:
    """Sum ``g`` over the dims that broadcasting added or stretched, to get ``shape``."""
    g_shape = tuple(g.shape)
    if g_shape == tuple(shape):
        return g
    lead = len(g_shape) - len(shape)
    if lead < 0:
        raise ValueError(f"cannot sum shape {g_shape} to {tuple(shape)}")
    dims = list(range(lead))
    for i, n in enumerate(shape):
        have = g_shape[lead + i]
        if n == 1 and have != 1:
            dims.append(lead + i)
        elif n != have:
            raise ValueError(f"cannot sum shape {g_shape} to {tuple(shape)}")
    if dims:
        g = sum(g, dim=tuple(dims), keepdim=True)
    return reshape(g, shape) if tuple(g.shape) != tuple(shape) else g


# --------------------------------------------------------------------------- sum, mean
def _sum_forward(xp: Any, x: Any, axis: Any, keepdims: bool, dtype: Any) -> Any:
    return x.sum(axis=axis, keepdims=keepdims, dtype=dtype)


def _sum_rule(ctx: Any, g: Tensor) -> Tensor:
    return expand_reduced(g, ctx.input_meta[0][0], ctx.attrs["axis"], ctx.attrs["keepdims"])


def _mean_rule(ctx: Any, g: Tensor) -> Tensor:
    shape = ctx.input_meta[0][0]
    axis = ctx.attrs["axis"]
    count = _count(shape, axis)
    return expand_reduced(g, shape, axis, ctx.attrs["keepdims"]) / count


def _sum_arrays(ctx: Any, xp: Any, g: Any) -> Any:
    attrs = ctx.attrs
    return _expand_reduced_array(xp, g, ctx.input_meta[0][0], attrs["axis"], attrs["keepdims"])


def _mean_arrays(ctx: Any, xp: Any, g: Any) -> Any:
    if g.dtype.kind not in "fc":  # the Tensor rule's division would promote first
        return NotImplemented
    shape = ctx.input_meta[0][0]
    axis = ctx.attrs["axis"]
    return _expand_reduced_array(xp, g, shape, axis, ctx.attrs["keepdims"]) / _count(shape, axis)


def _count(shape: tuple, axis: Any) -> int:
    total = 1
    for i, n in enumerate(shape):
        if axis is None or i in axis:
            total *= n
    return total


def _half_in_float(forward: Any) -> Any:
    """``forward`` run in float32 on float16 input, the result cast back: PyTorch accumulates
    half-precision reductions in float (NumPy in float16, which saturates: 4000 x 0.1 sums
    to 256). An explicit ``dtype`` attribute is left to decide."""

    def widened(xp: Any, x: Any, **attrs: Any) -> Any:
        if x.dtype != np.float16 or attrs.get("dtype") is not None:
            return forward(xp, x, **attrs)
        return forward(xp, x.astype(np.float32), **attrs).astype(np.float16)

    return widened


_SUM = OpDef("sum", _half_in_float(_sum_forward), _sum_rule, array_rule=_sum_arrays)


def _mean_forward(xp: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    # sum / count rather than x.mean: an empty mean is NaN without NumPy's warning, as in
    # PyTorch.
    return (x.sum(axis=axis, keepdims=keepdims) / _count(x.shape, axis)).astype(x.dtype)


_MEAN = OpDef("mean", _half_in_float(_mean_forward), _mean_rule, array_rule=_mean_arrays)


def sum(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:  # noqa: A001
    """Sum over ``dim`` (all dims by default). Integer and bool sums give int64."""
    dims = reduce_dims(dim, input.ndim)
    np_dtype = dtype.np if dtype is not None else None
    if np_dtype is None and input._data.dtype.kind in "biu":
        np_dtype = _INT64
    return apply(_SUM, input, axis=_axis(dims), keepdims=keepdim, dtype=np_dtype)


def mean(input: Tensor, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Tensor:
    """Mean over ``dim``; needs a floating or complex tensor (or ``dtype``)."""
    source = input if dtype is None else input.to(dtype)
    if source._data.dtype.kind not in "fc":
        raise RuntimeError(
            f"mean(): could not infer output dtype. Input dtype must be either a floating point "
            f"or complex dtype. Got: {source.dtype}"
        )
    dims = reduce_dims(dim, source.ndim)
    return apply(_MEAN, source, axis=_axis(dims), keepdims=keepdim)


def nansum(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Sum over ``dim`` counting NaN as zero (integer tensors, which have none: plain sum)."""
    from .unary import isnan

    if input._data.dtype.kind not in "fc":
        return sum(input, dim, keepdim)
    return sum(where(isnan(input), 0.0, input), dim, keepdim)


def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Mean over ``dim`` of the values that are not NaN."""
    from .unary import isnan

    if input._data.dtype.kind not in "fc":
        raise RuntimeError(
            f"nanmean(): expected input to have floating point or complex dtype but got "
            f"{input.dtype}"
        )
    valid = ~isnan(input)
    return nansum(input, dim, keepdim) / sum(valid, dim, keepdim)


# --------------------------------------------------------------------------------- prod
def _prod_rule(ctx: Any, g: Tensor) -> Tensor:
    x = conj(ctx.saved_tensors[0])  # PyTorch's complex gradient: g * conj(derivative)
    axis, keepdims = ctx.attrs["axis"], ctx.attrs["keepdims"]
    if x.ndim == 0:
        return g
    others = _product_of_others(x, tuple(range(x.ndim)) if axis is None else axis)
    return expand_reduced(g, tuple(x.shape), axis, keepdims) * others


def _product_of_others(x: Tensor, dims: tuple) -> Tensor:
    """For each element, the product of the other elements of its reduction group: the
    exclusive prefix product times the exclusive suffix product, exact even with zeros."""
    from .shape import cat, movedim, narrow

    ndim = x.ndim
    last = tuple(range(ndim - len(dims), ndim))
    n = _count(tuple(x.shape), dims)
    if x.numel() == 0:
        return x
    moved = movedim(x, dims, last)
    flat = reshape(moved, tuple(moved.shape[: ndim - len(dims)]) + (n,))
    one = flat.new_ones(tuple(flat.shape[:-1]) + (1,))
    prefix = cat([one, narrow(cumprod(flat, -1), -1, 0, n - 1)], -1)
    suffix = flip(cat([one, narrow(cumprod(flip(flat, -1), -1), -1, 0, n - 1)], -1), -1)
    return movedim(reshape(prefix * suffix, tuple(moved.shape)), last, dims)


_PROD = OpDef(
    "prod",
    _half_in_float(lambda xp, x, axis, keepdims, dtype: x.prod(axis, dtype, keepdims=keepdims)),
    _prod_rule,
    saves=SAVE_INPUTS,
)


def prod(
    input: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype: Any = None
) -> Tensor:
    dims = reduce_dims(dim, input.ndim)
    np_dtype = dtype.np if dtype is not None else None
    if np_dtype is None and input._data.dtype.kind in "biu":
        np_dtype = _INT64
    return apply(_PROD, input, axis=_axis(dims), keepdims=keepdim, dtype=np_dtype)


# ----------------------------------------------------------------------- max, min, arg*
def _amax_rule(ctx: Any, g: Tensor) -> Tensor:
    x, out = ctx.saved_tensors
    axis, keepdims = ctx.attrs["axis"], ctx.attrs["keepdims"]
    shape = tuple(x.shape)
    hits = x == expand_reduced(out, shape, axis, keepdims)
    count = sum(hits, dim=axis, keepdim=True)
    share = expand_reduced(g, shape, axis, keepdims) / expand(count, shape)
    return where(hits, share, 0.0)


def _check_nonempty(name: str, shape: tuple, dims: tuple | None, no_dim_error: type) -> None:
    """PyTorch's errors for max-like reductions (which have no identity) over nothing."""
    if dims is None:
        if 0 in shape:
            raise no_dim_error(
                f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument."
            )
        return
    for d in dims:
        if shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


_AMAX = OpDef(
    "amax",
    lambda xp, x, axis, keepdims: x.max(axis=axis, keepdims=keepdims),
    _amax_rule,
    saves=SAVE_BOTH,
)
_AMIN = OpDef(
    "amin",
    lambda xp, x, axis, keepdims: x.min(axis=axis, keepdims=keepdims),
    _amax_rule,
    saves=SAVE_BOTH,
)


def _extreme(op: OpDef, input: Tensor, dim: Any, keepdim: bool) -> Tensor:
    dims = reduce_dims(dim, input.ndim)
    _check_nonempty(op.name, tuple(input.shape), dims, RuntimeError)
    return apply(op, input, axis=_axis(dims), keepdims=keepdim)


def amax(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """Largest value over ``dim``; the gradient is shared evenly among tied maxima."""
    return _extreme(_AMAX, input, dim, keepdim)


def amin(input: Tensor, dim: Any = (), keepdim: bool = False) -> Tensor:
    """Smallest value over ``dim``; the gradient is shared evenly among tied minima."""
    return _extreme(_AMIN, input, dim, keepdim)


_ARGMAX = OpDef(
    "argmax", lambda xp, x, axis, keepdims: xp.argmax(x, axis=axis, keepdims=keepdims), None
)
_ARGMIN = OpDef(
    "argmin", lambda xp, x, axis, keepdims: xp.argmin(x, axis=axis, keepdims=keepdims), None
)


def _arg_extreme(op: OpDef, input: Tensor, dim: int | None, keepdim: bool) -> Tensor:
    if dim is None:
        _check_nonempty(op.name, tuple(input.shape), None, IndexError)
        return apply(op, reshape(input, (-1,)), axis=None, keepdims=False)
    d = normalize_dim(dim, builtins.max(input.ndim, 1))
    if input.ndim == 0:
        return apply(op, input, axis=None, keepdims=keepdim)
    _check_nonempty(op.name, tuple(input.shape), (d,), IndexError)
    return apply(op, input, axis=d, keepdims=keepdim)


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the largest value (in the flattened tensor when ``dim`` is None)."""
    return _arg_extreme(_ARGMAX, input, dim, keepdim)


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the smallest value (in the flattened tensor when ``dim`` is None)."""
    return _arg_extreme(_ARGMIN, input, dim, keepdim)


def _max_min(input: Tensor, dim: Any, keepdim: bool, largest: bool) -> Any:
    from .indexing import take_along_dim

    if dim is None:
        return amax(input) if largest else amin(input)
    if isinstance(dim, Tensor):  # max(a, b) is the elementwise maximum
        return (maximum if largest else minimum)(input, dim)
    d = normalize_dim(dim, builtins.max(input.ndim, 1))
    if input.ndim == 0:
        return values_indices(input.clone(), input.new_zeros((), dtype=int64))
    _check_nonempty("max" if largest else "min", tuple(input.shape), (d,), IndexError)
    indices = (argmax if largest else argmin)(input, d, keepdim=True)
    values = take_along_dim(input, indices, d)
    if not keepdim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return values_indices(values, indices)


def max(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    """The largest value; with ``dim``, (values, indices) along it; with a tensor, maximum."""
    return _max_min(input, dim, keepdim, largest=True)


def min(input: Tensor, dim: Any = None, keepdim: bool = False) -> Any:  # noqa: A001
    return _max_min(input, dim, keepdim, largest=False)


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False) -> Any:
    reduced = () if dim is None else dim
    return min_max(amin(input, reduced, keepdim), amax(input, reduced, keepdim))


# ------------------------------------------------------------------------ statistics
def _var_forward(xp: Any, x: Any, axis: Any, keepdims: bool, correction: float) -> Any:
    return x.var(axis=axis, keepdims=keepdims, ddof=correction)


def _var_rule(ctx: Any, g: Tensor) -> Tensor:
    (x,) = ctx.saved_tensors
    axis, keepdims, correction = ctx.attrs["axis"], ctx.attrs["keepdims"], ctx.attrs["correction"]
    shape = tuple(x.shape)
    count = _count(shape, axis)
    centered = x - mean(x, dim=axis, keepdim=True)
    return expand_reduced(g, shape, axis, keepdims) * centered * (2.0 / (count - correction))


_VAR = OpDef("var", _half_in_float(_var_forward), _var_rule, saves=SAVE_INPUTS)


def _var_dim_args(dim: Any, unbiased: Any) -> tuple:
    """PyTorch's overloads: ``var(x, True)`` is ``var(x, unbiased=True)``, not dim 1."""
    if isinstance(dim, bool):
        return None, dim
    return dim, unbiased


def _correction(unbiased: Any, correction: Any) -> float:
    if correction is not None:
        return float(correction)
    if unbiased is None:
        return 1.0
    return 1.0 if unbiased else 0.0


def var(
    input: Tensor,
    dim: Any = None,
    unbiased: Any = None,
    keepdim: bool = False,
    *,
    correction: Any = None,
) -> Tensor:
    """Variance with Bessel's ``correction`` (1 by default)."""
    if input._data.dtype.kind not in "fc":
        raise RuntimeError(
            f"std and var only support floating point and complex dtypes, got {input.dtype}"
        )
    dim, unbiased = _var_dim_args(dim, unbiased)
    dims = reduce_dims(dim, input.ndim)
    return apply(
        _VAR,
        input,
        axis=_axis(dims),
        keepdims=keepdim,
        correction=_correction(unbiased, correction),
    )


def std(
    input: Tensor,
    dim: Any = None,
    unbiased: Any = None,
    keepdim: bool = False,
    *,
    correction: Any = None,
) -> Tensor:
    from .unary import sqrt

    return sqrt(var(input, dim, unbiased, keepdim, correction=correction))


def var_mean(
    input: Tensor,
    dim: Any = None,
    unbiased: Any = None,
    keepdim: bool = False,
    *,
    correction: Any = None,
) -> tuple:
    dim, unbiased = _var_dim_args(dim, unbiased)
    return var(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


def std_mean(
    input: Tensor,
    dim: Any = None,
    unbiased: Any = None,
    keepdim: bool = False,
    *,
    correction: Any = None,
) -> tuple:
    dim, unbiased = _var_dim_args(dim, unbiased)
    return std(input, dim, unbiased, keepdim, correction=correction), mean(input, dim, keepdim)


def _logsumexp_forward(xp: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    if x.size == 0:
        return xp.log(xp.exp(x).sum(axis=axis, keepdims=keepdims))
    peak = x.max(axis=axis, keepdims=True)
    peak = xp.where(xp.isfinite(peak), peak, 0)
    out = xp.log(xp.exp(x - peak).sum(axis=axis, keepdims=True)) + peak
    return out if keepdims else out.squeeze(axis) if axis is not None else out.reshape(())


def _logsumexp_rule(ctx: Any, g: Tensor) -> Tensor:
    from .unary import exp

    x, out = ctx.saved_tensors
    axis, keepdims = ctx.attrs["axis"], ctx.attrs["keepdims"]
    shape = tuple(x.shape)
    return expand_reduced(g, shape, axis, keepdims) * exp(
        x - expand_reduced(out, shape, axis, keepdims)
    )


_LOGSUMEXP = OpDef(
    "logsumexp",
    _half_in_float(_logsumexp_forward),
    _logsumexp_rule,
    promote=FLOAT,
    saves=SAVE_BOTH,
)


def logsumexp(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """``log(sum(exp(input)))`` over ``dim``, computed without overflow."""
    dims = reduce_dims(dim, input.ndim)
    return apply(_LOGSUMEXP, input, axis=_axis(dims), keepdims=keepdim)


# ------------------------------------------------------------------------------ scans
def _cumsum_rule(ctx: Any, g: Tensor) -> Tensor:
    d = ctx.attrs["axis"]
    return flip(cumsum(flip(g, d), d), d)


_CUMSUM = OpDef(
    "cumsum",
    _half_in_float(lambda xp, x, axis, dtype: xp.cumsum(x, axis=axis, dtype=dtype)),
    _cumsum_rule,
)


def cumsum(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    d = normalize_dim(dim, builtins.max(input.ndim, 1))
    np_dtype = dtype.np if dtype is not None else None
    if np_dtype is None and input._data.dtype.kind in "biu":
        np_dtype = _INT64
    if input.ndim == 0:
        return apply(_CUMSUM, reshape(input, (1,)), axis=0, dtype=np_dtype).reshape(())
    return apply(_CUMSUM, input, axis=d, dtype=np_dtype)


def _cumprod_rule(ctx: Any, g: Tensor) -> Tensor:
    """d out_j / d x_i = prod_{k <= j, k != i} x_k for j >= i, summed against g_j.

    Where x is nonzero that is a suffix sum of ``g * out`` divided by x; with zeros present
    the products are formed explicitly instead.
    """
    x, out = (conj(t) for t in ctx.saved_tensors)
    d = ctx.attrs["axis"]
    is_zero = x == 0
    suffix = flip(cumsum(flip(g * out, d), d), d)
    grad = suffix / where(is_zero, 1.0, x)
    if not bool(is_zero.any()):
        return grad
    return where(is_zero, _cumprod_grad_by_definition(x, g, d), grad)


def _cumprod_grad_by_definition(x: Tensor, g: Tensor, d: int) -> Tensor:
    """The exact gradient by the O(n^2) definition: used only when x has zeros."""
    from .shape import movedim, narrow, stack

    moved_x, moved_g = movedim(x, d, -1), movedim(g, d, -1)
    n = moved_x.shape[-1]
    columns = []
    for i in range(n):
        position = x.new_zeros(n, dtype=bool_)
        position._data[i] = True
        prefix = cumprod(where(position, 1.0, moved_x), -1)  # x_i replaced by 1
        columns.append(narrow(moved_g * prefix, -1, i, n - i).sum(-1))
    return movedim(stack(columns, -1), -1, d)


_CUMPROD = OpDef(
    "cumprod",
    _half_in_float(lambda xp, x, axis, dtype: xp.cumprod(x, axis=axis, dtype=dtype)),
    _cumprod_rule,
    saves=SAVE_BOTH,
)


def cumprod(input: Tensor, dim: int, *, dtype: Any = None) -> Tensor:
    d = normalize_dim(dim, builtins.max(input.ndim, 1))
    np_dtype = dtype.np if dtype is not None else None
    if np_dtype is None and input._data.dtype.kind in "biu":
        np_dtype = _INT64
    if input.ndim == 0:
        return apply(_CUMPROD, reshape(input, (1,)), axis=0, dtype=np_dtype).reshape(())
    return apply(_CUMPROD, input, axis=d, dtype=np_dtype)


# ------------------------------------------------------------------ boolean reductions
def _bool_reduction(name: str) -> OpDef:
    return OpDef(
        name,
        lambda xp, x, axis, keepdims: getattr(xp, name)(x, axis=axis, keepdims=keepdims),
        None,
    )


_ALL = _bool_reduction("all")
_ANY = _bool_reduction("any")
_COUNT_NONZERO = OpDef(
    "count_nonzero",
    lambda xp, x, axis: xp.asarray(xp.count_nonzero(x, axis=axis), dtype="int64"),
    None,
)


def _logical_reduction(op: OpDef, input: Tensor, dim: Any, keepdim: bool) -> Tensor:
    dims = reduce_dims(dim, input.ndim, empty_is_all=False)
    out = apply(op, input, axis=_axis(dims), keepdims=keepdim)
    return out.to(input.dtype) if input._data.dtype == np.uint8 else out  # PyTorch keeps uint8


def all(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Whether every element over ``dim`` is nonzero (bool; uint8 for uint8 input)."""
    return _logical_reduction(_ALL, input, dim, keepdim)


def any(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Whether some element over ``dim`` is nonzero (bool; uint8 for uint8 input)."""
    return _logical_reduction(_ANY, input, dim, keepdim)


def count_nonzero(input: Tensor, dim: Any = None) -> Tensor:
    dims = reduce_dims(dim, input.ndim)
    return apply(_COUNT_NONZERO, input, axis=_axis(dims))
