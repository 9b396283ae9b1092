"""Reductions (sum, mean, max, var, logsumexp, ...) and scans (cumsum, cumprod).

``dim`` may be None (all dims), an int or a tuple; ``keepdim`` keeps reduced dims as size 1.
Gradient rules broadcast the incoming gradient back over the reduced dims.
"""

from __future__ import annotations

import builtins
from collections import namedtuple
from typing import Any

import numpy as np

from .._backend import add_at
from .._dtype import bool_, int64, no_kernel
from ..tensor import Tensor, normalize_dim, wrap
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


def sum_to_shape(g: Tensor, shape: tuple) -> Tensor:
    """Sum ``g`` over the dims that broadcasting added or stretched, to get ``shape``."""
    if tuple(g.shape) == tuple(shape):
        return g
    dims = broadcast_dims(tuple(g.shape), tuple(shape))
    if dims:
        g = sum(g, dim=dims, keepdim=True)
    return reshape(g, shape) if tuple(g.shape) != tuple(shape) else g


def broadcast_dims(g_shape: tuple, shape: tuple) -> tuple:
    """The dims of ``g_shape`` that broadcasting ``shape`` to it added or stretched (what a
    gradient sums over to get back to ``shape``); ValueError where it cannot."""
    lead = len(g_shape) - len(shape)
    if lead < 0:
        raise ValueError(f"cannot sum shape {g_shape} to {shape}")
    dims = list(range(lead))
    for i, n in enumerate(shape):
        have = g_shape[lead + i]
        if n == 1 and have != 1:
            dims.append(lead + i)
        elif n != have:
            raise ValueError(f"cannot sum shape {g_shape} to {shape}")
    return tuple(dims)


# --------------------------------------------------------------------------- sum, mean
def _sum_forward(xp: Any, x: Any, axis: Any, keepdims: bool, dtype: Any) -> Any:
    return x.sum(axis=axis, keepdims=keepdims, dtype=dtype)


def _sum_rule(ctx: Any, space: Any, saved: tuple, g: Any) -> Any:
    attrs = ctx.attrs
    return space.expand_reduced(g, ctx.input_meta[0][0], attrs["axis"], attrs["keepdims"])


def _mean_rule(ctx: Any, space: Any, saved: tuple, g: Any) -> Any:
    shape = ctx.input_meta[0][0]
    axis = ctx.attrs["axis"]
    return space.expand_reduced(g, shape, axis, ctx.attrs["keepdims"]) / _count(shape, axis)


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


_SUM = OpDef("sum", _half_in_float(_sum_forward), None, rule=_sum_rule)


def _mean_forward(xp: Any, x: Any, axis: Any, keepdims: bool) -> Any:
    # sum / count rather than x.mean: an empty mean is NaN without NumPy's warning, as in
    # PyTorch.
    return (x.sum(axis=axis, keepdims=keepdims) / _count(x.shape, axis)).astype(x.dtype)


_MEAN = OpDef("mean", _half_in_float(_mean_forward), None, rule=_mean_rule)


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


def _extreme(
    op: OpDef, input: Tensor, dim: Any, keepdim: bool, kernel: str | None = None
) -> Tensor:
    """amax/amin over ``dim``; ``kernel`` names PyTorch's for the complex error (its
    "max_values_cpu" unless max()/min() over everything, "max_all")."""
    if input._data.dtype.kind == "c":
        raise no_kernel(kernel or f"{op.name[1:]}_values_cpu", input._data.dtype)
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
    _check_orderable("argmax", input)
    return _arg_extreme(_ARGMAX, input, dim, keepdim)


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the smallest value (in the flattened tensor when ``dim`` is None)."""
    _check_orderable("argmin", input)
    return _arg_extreme(_ARGMIN, input, dim, keepdim)


def _check_orderable(name: str, input: Tensor, allow_bool: bool = False) -> None:
    """PyTorch's argmax/argmin/max(dim) take neither complex nor (argmax, argmin) bool input."""
    kind = input._data.dtype.kind
    if kind == "c" or (kind == "b" and not allow_bool):
        raise RuntimeError(
            f"{name}(): does not support {'complex' if kind == 'c' else 'bool'} input"
        )


def _max_min(input: Tensor, dim: Any, keepdim: bool, largest: bool) -> Any:
    from .indexing import take_along_dim

    name = "max" if largest else "min"
    if dim is None:
        return _extreme(_AMAX if largest else _AMIN, input, (), False, f"{name}_all")
    if isinstance(dim, Tensor):  # max(a, b) is the elementwise maximum
        return (maximum if largest else minimum)(input, dim)
    _check_orderable(name, input, allow_bool=True)
    d = normalize_dim(dim, builtins.max(input.ndim, 1))
    if input.ndim == 0:
        return values_indices(input.clone(), input.new_zeros((), dtype=int64))
    _check_nonempty(name, tuple(input.shape), (d,), IndexError)
    indices = _arg_extreme(_ARGMAX if largest else _ARGMIN, input, d, keepdim=True)
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
    if input._data.dtype.kind == "c":
        raise no_kernel("aminmax_cpu", input._data.dtype)
    reduced = () if dim is None else dim
    return min_max(amin(input, reduced, keepdim), amax(input, reduced, keepdim))


# -------------------------------------------------------------------- median and mode
def _median_index(input: Tensor, d: int, ignore_nan: bool) -> Tensor:
    """Index along ``d`` (kept as size 1) of each slice's lower median: of its non-NaN values
    for nanmedian; for median the first NaN where a slice has one, as in PyTorch."""
    xp = input.device.xp
    x = input._data
    order = xp.argsort(x, axis=d, kind="stable")  # NaN sort last, in their original order
    n = x.shape[d]
    if x.dtype.kind in "fc":
        n_nan = xp.isnan(x).sum(axis=d, keepdims=True)
    else:
        n_nan = xp.zeros((1,) * x.ndim, dtype=_INT64)
    if ignore_nan:
        k = xp.maximum((n - n_nan - 1) // 2, 0)
    else:
        k = xp.where(n_nan > 0, n - n_nan, (n - 1) // 2)
    k = xp.broadcast_to(k, tuple(1 if i == d else s for i, s in enumerate(x.shape)))
    return wrap(xp.take_along_axis(order, k, axis=d).astype(_INT64), input.device)


def _median(name: str, input: Tensor, dim: Any, keepdim: bool, ignore_nan: bool) -> Any:
    from .indexing import gather

    if dim is None:
        if input.numel() == 0:  # NaN, still connected to the input as PyTorch's is
            return sum(input) * float("nan")
        value = _median(name, reshape(input, (-1,)), 0, False, ignore_nan).values
        if not input.requires_grad or input._data.dtype.kind != "f":
            return value
        return _shared_among_equals(value, input)
    d = normalize_dim(dim, builtins.max(input.ndim, 1))
    if input.ndim == 0:
        return values_indices(input.clone(), input.new_zeros((), dtype=int64))
    _check_nonempty("median", tuple(input.shape), (d,), IndexError)  # nanmedian's too
    indices = _median_index(input, d, ignore_nan)
    values = gather(input, d, indices)
    if not keepdim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return values_indices(values, indices)


def _shared_among_equals(value: Tensor, input: Tensor) -> Tensor:
    """``value``, one of ``input``'s elements, with its gradient shared evenly among the
    elements equal to it (the NaNs if it is NaN): PyTorch's rule for a global median."""
    from .unary import isnan

    v = value.detach()
    mask = isnan(input) if bool(isnan(v)) else input == v
    return v + sum(where(mask, input - v, 0.0)) / sum(mask)


def median(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """The lower median (NaN if there is one); with ``dim``, (values, indices) along it."""
    return _median("median", input, dim, keepdim, ignore_nan=False)


def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Any:
    """The lower median of the values that are not NaN (NaN if all are)."""
    return _median("nanmedian", input, dim, keepdim, ignore_nan=True)


# ------------------------------------------------------------------------------ quantile
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_q(input: Tensor, q: Any) -> tuple[Any, bool]:
    """``q`` as an array of the input's dtype, and whether it was a scalar; PyTorch's checks."""
    from .. import _dtype

    xp = input.device.xp
    if input.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if isinstance(q, Tensor) and q.ndim > 1:
        raise RuntimeError("quantile() q must be a scalar or 1D tensor")
    if input.dtype not in (_dtype.float32, _dtype.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if not isinstance(q, Tensor):
        if not 0 <= q <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
        return xp.asarray([q], dtype=input._data.dtype), True
    if q.dtype != input.dtype:
        raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
    qa = xp.reshape(q._data, (-1,))
    if not bool(xp.all((qa >= 0) & (qa <= 1))):
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    return qa, q.ndim == 0


def _quantile(
    input: Tensor, q: Any, dim: int | None, keepdim: bool, interpolation: str, ignore_nan: bool
) -> Tensor:
    """Sort along ``dim`` and interpolate between the two ranks around each ``q``, as PyTorch
    does (so the gradient flows to those two elements); NaN where a slice has one (nan* form:
    where all are NaN)."""
    from .indexing import gather, sort

    qa, scalar = _quantile_q(input, q)
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(
            "quantile() interpolation must be one of linear, lower, higher, midpoint or "
            f"nearest, but got {interpolation}"
        )
    xp = input.device.xp
    if dim is None:
        x = reshape(input, (-1,))
        out_shape = (1,) * input.ndim if keepdim else ()
    else:
        d = normalize_dim(dim, builtins.max(input.ndim, 1))
        x = input.movedim(d, -1) if input.ndim else reshape(input, (1,))
        shape = list(input.shape)
        if input.ndim:
            shape[d] = 1
            out_shape = tuple(shape) if keepdim else tuple(shape[:d] + shape[d + 1 :])
        else:
            out_shape = ()
    values = sort(x, -1).values  # NaN sort last
    n = values.shape[-1]
    n_nan = xp.isnan(values._data).sum(axis=-1, keepdims=True)
    qb = xp.reshape(qa, (-1,) + (1,) * values.ndim)  # (Q, ..., 1)
    if ignore_nan:
        valid = n - n_nan
        ranks = xp.where(valid > 0, qb * (valid - 1), n - 1)
    else:
        ranks = xp.where(n_nan > 0, n - 1, qb * (n - 1))
    if interpolation == "lower":
        ranks = xp.floor(ranks)
    elif interpolation == "higher":
        ranks = xp.ceil(ranks)
    elif interpolation == "nearest":
        ranks = xp.round(ranks)
    below, above = xp.floor(ranks), xp.ceil(ranks)
    big = expand(values.unsqueeze(0), (qb.shape[0],) + tuple(values.shape))
    lo = gather(big, -1, wrap(below.astype(_INT64), input.device))
    if interpolation in ("lower", "higher", "nearest"):
        result = lo
    else:
        hi = gather(big, -1, wrap(above.astype(_INT64), input.device))
        w = ranks - below if interpolation == "linear" else xp.where(above > below, 0.5, 0.0)
        result = lo + wrap(w.astype(values._data.dtype), input.device) * (hi - lo)
    return reshape(result, (() if scalar else (qb.shape[0],)) + out_shape)


def quantile(
    input: Tensor,
    q: Any,
    dim: int | None = None,
    keepdim: bool = False,
    *,
    interpolation: str = "linear",
) -> Tensor:
    """The ``q``-th quantiles (``q`` a float or 1-D tensor in [0, 1]) along ``dim`` (all
    elements if None); a tensor ``q`` adds a leading dim. NaN where a slice holds a NaN."""
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=False)


def nanquantile(
    input: Tensor,
    q: Any,
    dim: int | None = None,
    keepdim: bool = False,
    *,
    interpolation: str = "linear",
) -> Tensor:
    """:func:`quantile` of the values that are not NaN (NaN where all are)."""
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=True)


def _mode_index(xp: Any, x: Any) -> Any:
    """Per row of 2-D ``x``: the last index of the most frequent value (smallest on ties)."""
    rows, n = x.shape
    order = xp.argsort(x, axis=1, kind="stable")
    ordered = xp.take_along_axis(x, order, axis=1)
    starts = xp.ones((rows, n), dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    run = xp.cumsum(starts, axis=1) - 1
    row = xp.arange(rows)[:, None]
    counts = xp.zeros((rows, n), dtype=_INT64)
    add_at(xp, counts, (xp.broadcast_to(row, run.shape), run), 1)
    run_counts = counts[row, run]
    first = xp.argmax(run_counts, axis=1)
    last = first + run_counts[xp.arange(rows), first] - 1
    return order[xp.arange(rows), last]


def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> Any:
    """The most frequent value along ``dim`` (the smallest on ties) and its last index."""
    from .indexing import gather
    from .shape import movedim

    d = normalize_dim(dim, builtins.max(input.ndim, 1))
    if input.ndim == 0:
        return values_indices(input.clone(), input.new_zeros((), dtype=int64))
    _check_nonempty("mode", tuple(input.shape), (d,), IndexError)
    xp = input.device.xp
    moved = xp.moveaxis(input._data, d, -1)
    rows = _mode_index(xp, moved.reshape(-1, moved.shape[-1]))
    index = wrap(rows.reshape(moved.shape[:-1] + (1,)).astype(_INT64), input.device)
    indices = movedim(index, -1, d).contiguous()
    values = gather(input, d, indices)
    if not keepdim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return values_indices(values, indices)


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
    softmax = exp(x - expand_reduced(out, shape, axis, keepdims))
    return expand_reduced(g, shape, axis, keepdims) * conj(softmax)


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


def _cumulative_extreme_index(xp: Any, x: Any, largest: bool) -> Any:
    """Index of the running max (min) along the last axis: the latest on ties; once a NaN is
    seen it stays, moving on to each later NaN (PyTorch's order)."""
    nan = xp.isnan(x) if x.dtype.kind in "fc" else xp.zeros(x.shape, dtype=bool)
    out = xp.zeros(x.shape, dtype=_INT64)
    if x.shape[-1] == 0:
        return out
    best, best_index = x[..., 0], xp.zeros(x.shape[:-1], dtype=_INT64)
    for j in range(1, x.shape[-1]):
        value = x[..., j]
        beats = value >= best if largest else value <= best
        take = nan[..., j] | (~xp.isnan(best) & beats if x.dtype.kind in "fc" else beats)
        best = xp.where(take, value, best)
        best_index = xp.where(take, j, best_index)
        out[..., j] = best_index
    return out


def _cumulative_extreme(input: Tensor, dim: int, largest: bool) -> Any:
    from .indexing import gather

    d = normalize_dim(dim, builtins.max(input.ndim, 1))
    if input.ndim == 0:
        return values_indices(input.clone(), input.new_zeros((), dtype=int64))
    xp = input.device.xp
    moved = _cumulative_extreme_index(xp, xp.moveaxis(input._data, d, -1), largest)
    indices = wrap(xp.ascontiguousarray(xp.moveaxis(moved, -1, d)), input.device)
    return values_indices(gather(input, d, indices), indices)


def cummax(input: Tensor, dim: int) -> Any:
    """(values, indices) of the running maximum along ``dim``."""
    return _cumulative_extreme(input, dim, largest=True)


def cummin(input: Tensor, dim: int) -> Any:
    """(values, indices) of the running minimum along ``dim``."""
    return _cumulative_extreme(input, dim, largest=False)


def _logcumsumexp_rule(ctx: Any, g: Tensor) -> Tensor:
    """PyTorch's rule: the positive and negative parts of ``g`` summed in log space, so no
    ``exp`` overflows; the log of a missing part is the lowest finite value, not -inf."""
    from .unary import absolute, exp, log

    x, out = ctx.saved_tensors
    d = ctx.attrs["axis"]
    log_abs = log(absolute(g))
    lowest = float(np.finfo(g._data.dtype).min)  # finite, so no inf - inf in the sums below
    positive = where(g > 0, log_abs, lowest)
    negative = where(g < 0, log_abs, lowest)

    def suffix(t: Tensor) -> Tensor:
        return flip(logcumsumexp(flip(t - out, d), d), d)

    return exp(suffix(positive) + x) - exp(suffix(negative) + x)


def _logcumsumexp_forward(xp: Any, x: Any, axis: int) -> Any:
    """A running ``logaddexp`` along ``axis``: exact however far apart the values are
    (NumPy's ``accumulate``; a loop over the axis on CuPy, whose logaddexp has none)."""
    if xp is np:
        return np.logaddexp.accumulate(x, axis=axis)
    out = xp.moveaxis(x.copy(), axis, 0)
    for j in range(1, out.shape[0]):
        out[j] = xp.logaddexp(out[j - 1], out[j])
    return xp.moveaxis(out, 0, axis)


_LOGCUMSUMEXP = OpDef(
    "logcumsumexp",
    _half_in_float(_logcumsumexp_forward),
    _logcumsumexp_rule,
    saves=SAVE_BOTH,
)


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """``log(cumsum(exp(input), dim))``, computed without overflow."""
    d = normalize_dim(dim, builtins.max(input.ndim, 1))
    if input._data.dtype.kind != "f":
        raise NotImplementedError(f"logcumsumexp(): not implemented for {input.dtype}")
    if input.ndim == 0:
        return apply(_LOGCUMSUMEXP, reshape(input, (1,)), axis=0).reshape(())
    return apply(_LOGCUMSUMEXP, input, axis=d)


def trace(input: Tensor) -> Tensor:
    """The sum of the main diagonal of a matrix."""
    from .shape import diagonal

    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return sum(diagonal(input))


def diff(
    input: Tensor, n: int = 1, dim: int = -1, prepend: Any = None, append: Any = None
) -> Tensor:
    """The ``n``-th forward difference along ``dim`` (logical xor for bool)."""
    from .binary import logical_xor
    from .shape import cat, narrow

    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = normalize_dim(dim, input.ndim)
    parts = [t for t in (prepend, input, append) if t is not None]
    if builtins.any(t.ndim != input.ndim for t in parts):
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    out = cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        size = out.shape[d]
        if size == 0:
            break
        later, earlier = narrow(out, d, 1, size - 1), narrow(out, d, 0, size - 1)
        out = logical_xor(later, earlier) if out.dtype is bool_ else later - earlier
    return out


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


# ------------------------------------------------------------------ statistics
def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The ``p``-norm of ``input - other``."""
    from ..linalg import vector_norm

    return vector_norm(input - other, p)


def sum_to_size(input: Tensor, *size: Any) -> Tensor:
    """``input`` summed down to ``size``, which must expand to ``input``'s shape."""
    shape = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size
    lead = input.ndim - len(shape)
    if lead < 0 or builtins.any(
        n not in (1, have) for n, have in zip(shape, input.shape[lead:], strict=True)
    ):
        raise RuntimeError(
            f"size {{{list(shape)}}} is not expandable to size {{{list(input.shape)}}}."
        )
    return sum_to_shape(input, shape)


def _check_weights(name: str, weights: Tensor, observations: int, integral: bool) -> None:
    if weights.ndim > 1:
        raise RuntimeError(
            f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
            f"{weights.ndim} dimensions"
        )
    if weights.numel() != observations:
        raise RuntimeError(
            f"cov(): expected {name} to have the same numel as there are observations in the "
            f"input but got {weights.numel()} != {observations}"
        )
    if integral and weights.is_floating_point():
        raise RuntimeError(
            f"cov(): expected fweights to have integral dtype but got fweights with "
            f"{_torch_scalar_name(weights)} dtype"
        )
    if bool((weights < 0).any()):
        raise RuntimeError(f"cov(): {name} cannot be negative")


def _torch_scalar_name(t: Tensor) -> str:
    from .. import _dtype

    names = {_dtype.float16: "Half", _dtype.float32: "Float", _dtype.float64: "Double"}
    return names.get(t.dtype, str(t.dtype))


def cov(
    input: Tensor,
    *,
    correction: int = 1,
    fweights: Tensor | None = None,
    aweights: Tensor | None = None,
) -> Tensor:
    """The covariance matrix of the variables in the rows of ``input`` (PyTorch's algorithm)."""
    if input.ndim > 2:
        raise RuntimeError(
            "cov(): expected input to have two or fewer dimensions but got an input with "
            f"{input.ndim} dimensions"
        )
    x = reshape(input, (1, -1)) if input.ndim < 2 else input
    observations = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights("fweights", fweights, observations, integral=True)
        w = fweights
    if aweights is not None:
        _check_weights("aweights", aweights, observations, integral=False)
        w = aweights if w is None else w * aweights
    if w is None:
        w_sum: Any = observations
        avg = mean(x, 1)
    else:
        w_sum = sum(w)
        avg = sum(x * w, 1) / w_sum
    if w is not None and correction != 0:
        scale = 1 if aweights is None else sum(w * aweights) / w_sum
        norm_factor = w_sum - correction * scale
    else:
        norm_factor = w_sum - correction
    if bool(norm_factor <= 0):
        norm_factor = norm_factor * 0
    xm = x - reshape(avg, (-1, 1))
    xw = xm if w is None else xm * w
    c = (xm @ conj(xw).transpose(0, 1)) / norm_factor
    return c.squeeze()


def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the variables in the rows of ``input``."""
    from .shape import diag

    c = cov(input)
    if c.ndim == 0:
        return c / c
    stddev = diag(c).sqrt()
    c = c / reshape(stddev, (-1, 1)) / reshape(stddev, (1, -1))
    return c if c.is_complex() else c.clamp(-1, 1)


def histc(input: Tensor, bins: int = 100, min: Any = 0, max: Any = 0) -> Tensor:
    """Counts of ``input`` in ``bins`` equal bins over [min, max] (the data's range if equal);
    values outside are ignored. Not differentiable."""
    if not input.is_floating_point():
        raise no_kernel("histogram_cpu", input._data.dtype)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    xp = input.device.xp
    x = input._data.reshape(-1)
    lo, hi = float(min), float(max)
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo:g}, {hi:g}] is not finite")
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    counts, _ = xp.histogram(x, bins=bins, range=(lo, hi))
    return wrap(counts.astype(input._data.dtype), input.device)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """The count (or summed ``weights``) of each value of a 1-D non-negative integer tensor.
    Not differentiable."""
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if input.is_floating_point() or input.is_complex() or input.dtype == bool_:
        raise no_kernel("bincount_cpu", input._data.dtype)
    xp = input.device.xp
    x = input._data
    if x.ndim != 1 or (x.size and int(x.min()) < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return wrap(xp.bincount(x, minlength=minlength).astype(np.int64), input.device)
    if weights.ndim != 1 or weights.shape[0] != x.shape[0]:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    w = weights._data
    dtype = w.dtype if w.dtype in (np.float32, np.float64) else np.float64
    out = xp.bincount(x, weights=w, minlength=minlength)
    return wrap(out.astype(dtype), input.device)


def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to norm
    ``maxnorm`` (by ``maxnorm / (norm + 1e-7)``, as PyTorch)."""
    from ..linalg import vector_norm

    if input.ndim <= 1:
        raise RuntimeError(
            f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions"
        )
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    d = normalize_dim(dim, input.ndim)
    others = tuple(i for i in range(input.ndim) if i != d)
    norm = vector_norm(input, p, dim=others, keepdim=True)
    factor = where(norm > maxnorm, maxnorm / (norm + 1e-7), norm.new_ones(()))
    return input * factor
