"""Indexing: ``t[index]``, ``t[index] = v``, gather/scatter, index_select/index_add, masks,
sorting and selection (sort, argsort, topk, unique, nonzero).

Basic indexing (ints, slices, None, Ellipsis) gives views; integer-array and boolean-mask
indexing gives copies. Every differentiable op here has a gradient op that is itself
differentiable, so double backward works through indexing too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._backend import add_at, to_device_array
from .._dtype import int64, no_kernel
from ..tensor import Tensor, normalize_dim, wrap
from ._apply import COMMON, SAVE_BOTH, OpDef, apply
from .reduction import values_indices
from .shape import narrow, reshape


# ------------------------------------------------------------------- index preparation
def _is_basic(index: tuple) -> bool:
    return all(
        item is None
        or item is Ellipsis
        or (isinstance(item, slice | int) and not isinstance(item, bool))
        for item in index
    )


def _as_tuple(index: Any) -> tuple:
    """The index as a tuple of items. As in PyTorch, a short list holding a Tensor, a sequence,
    a slice, Ellipsis or None is a tuple of items (``x[[rows, cols]]``), not one integer list."""
    if isinstance(index, tuple):
        return index
    if (
        isinstance(index, list)
        and len(index) < 32
        and any(
            isinstance(item, Tensor | list | tuple | slice) or item is None or item is Ellipsis
            for item in index
        )
    ):
        return tuple(index)
    return (index,)


def prepare_index(tensor: Tensor, index: Any) -> tuple[tuple, bool]:
    """Turn a user's index into a tuple NumPy/CuPy understand, and say whether it is basic."""
    items = []
    for item in _as_tuple(index):
        if isinstance(item, Tensor):
            if item._device is not tensor._device and item.ndim:
                raise RuntimeError(
                    f"indices should be either on cpu or on the same device as the indexed tensor "
                    f"({tensor.device}), got indices on {item.device}"
                )
            if item._data.dtype.kind not in "iub":
                raise IndexError(
                    f"tensors used as indices must be long, int, byte or bool tensors, got "
                    f"{item.dtype}"
                )
            if item.ndim == 0 and item._data.dtype.kind in "iu":
                items.append(int(item.item()))
            elif item._data.dtype == np.uint8:  # PyTorch's deprecated byte mask
                items.append(to_device_array(item._data, tensor._device).astype(bool))
            else:
                items.append(to_device_array(item._data, tensor._device))
        elif isinstance(item, list | tuple):
            array = tensor._device.xp.asarray(item)
            items.append(array if array.size else array.astype(np.int64))
        elif isinstance(item, np.integer):
            items.append(int(item))
        elif isinstance(item, bool):
            items.append(tensor._device.xp.asarray(item))
        elif isinstance(item, slice):
            items.append(_checked_slice(item))
        elif item is None or item is Ellipsis or isinstance(item, int):
            items.append(item)
        elif hasattr(item, "__index__"):
            items.append(item.__index__())
        else:
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
                f"are valid indices (got {type(item).__name__})"
            )
    index = tuple(items)
    basic = _is_basic(index)
    if basic and Ellipsis not in index:
        index = index + (Ellipsis,)  # makes an all-int index return a 0-d view, not a scalar
    _check_bounds(tensor, index)
    return index, basic


def _checked_slice(item: slice) -> slice:
    """The slice with Tensor bounds made ints; PyTorch has no negative steps."""
    start, stop, step = (
        int(v) if isinstance(v, Tensor | np.integer) else v
        for v in (item.start, item.stop, item.step)
    )
    if step is not None and step <= 0:
        raise ValueError("step must be greater than zero" if step else "slice step cannot be zero")
    return slice(start, stop, step)


def _check_bounds(tensor: Tensor, index: tuple) -> None:
    """Raise IndexError naming the dimension, as PyTorch does, for ints out of range."""
    shape = tensor._data.shape
    consumed = sum(1 for item in index if item is not None and item is not Ellipsis)
    consumed += sum(
        getattr(item, "ndim", 1) - 1
        for item in index
        if hasattr(item, "dtype") and item.dtype.kind == "b"
    )
    if consumed > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)} (got {consumed})")
    dim = 0
    for position, item in enumerate(index):
        if item is Ellipsis:
            dim = len(shape) - sum(1 for later in index[position + 1 :] if later is not None)
            continue
        if item is None:
            continue
        if isinstance(item, int):
            size = shape[dim]
            if not -size <= item < size:
                raise IndexError(
                    f"index {item} is out of bounds for dimension {dim} with size {size}"
                )
        elif hasattr(item, "dtype") and item.dtype.kind in "iu" and item.size:
            size = shape[dim]
            high, low = int(item.max()), int(item.min())
            if high >= size or low < -size:
                bad = high if high >= size else low
                raise IndexError(
                    f"index {bad} is out of bounds for dimension {dim} with size {size}"
                )
        elif hasattr(item, "dtype") and item.dtype.kind == "b":
            expected = shape[dim : dim + item.ndim]
            if tuple(item.shape) != tuple(expected):
                raise IndexError(
                    f"The shape of the mask {list(item.shape)} at index {dim} does not match the "
                    f"shape of the indexed tensor {list(shape)}"
                )
            dim += item.ndim
            continue
        dim += 1


# ----------------------------------------------------------------------- reading
def _slice_backward_forward(xp: Any, g: Any, shape: tuple, index: tuple) -> Any:
    out = xp.zeros(shape, g.dtype)
    out[index] = g
    return out


def _view_op(name: str, node_name: str, key: str | None = None) -> OpDef:
    """A basic-index view op; the variants differ only in the names they record."""
    return OpDef(
        name,
        lambda xp, x, index: x[index],
        lambda ctx, g: slice_backward(g, ctx.input_meta[0][0], ctx.attrs["index"]),
        view=True,
        node_name=node_name,
        key=key,
    )


_GETITEM_VIEW = _view_op("slice", "SliceBackward0", key="getitem_slice")
_VIEW_OPS = {
    int: _view_op("select", "SelectBackward0"),
    slice: _GETITEM_VIEW,
    type(None): _view_op("unsqueeze", "UnsqueezeBackward0"),
}


_FULL = slice(None)


def _basic_view_op(index: tuple) -> OpDef:
    """The op named as PyTorch names the last step of a basic index (``x[0]``: select,
    ``x[1:]``: slice, ``x[:, None]``: unsqueeze); full slices and Ellipsis take no step."""
    for item in reversed(index):
        if item is not Ellipsis and not (type(item) is slice and item == _FULL):
            return _VIEW_OPS.get(type(item), _GETITEM_VIEW)
    return _GETITEM_VIEW


_SLICE_BACKWARD = OpDef(
    "slice_backward",
    _slice_backward_forward,
    lambda ctx, gg: apply(_GETITEM_VIEW, gg, index=ctx.attrs["index"]),
)


def slice_backward(g: Tensor, shape: tuple, index: tuple) -> Tensor:
    """Zeros of ``shape`` with ``g`` placed where the basic ``index`` reads."""
    return apply(_SLICE_BACKWARD, g, shape=shape, index=index)


def _index_backward_forward(xp: Any, g: Any, shape: tuple, index: tuple) -> Any:
    out = xp.zeros(shape, g.dtype)
    add_at(xp, out, index, g)
    return out


_GETITEM_ADVANCED = OpDef(
    "index",
    lambda xp, x, index: x[index],
    lambda ctx, g: apply(_INDEX_BACKWARD, g, shape=ctx.input_meta[0][0], index=ctx.attrs["index"]),
)
_INDEX_BACKWARD = OpDef(
    "index_backward",
    _index_backward_forward,
    lambda ctx, gg: apply(_GETITEM_ADVANCED, gg, index=ctx.attrs["index"]),
)


def _split_ints(index: tuple) -> tuple[tuple, tuple] | None:
    """PyTorch applies int items before array items, where NumPy counts an int as an array
    (which moves the array dims to the front when a slice separates them): the basic part of
    a mixed index, and the array part left to apply to its result. None without ints."""
    if not any(type(item) is int for item in index):
        return None
    basic, rest = [], []
    for item in index:
        if type(item) is int:
            basic.append(item)
        elif item is Ellipsis:
            basic.append(item)
            rest.append(item)
        elif item is None or isinstance(item, slice):
            basic.append(item)
            rest.append(slice(None))
        else:  # an integer array, or a mask covering ndim dims
            basic.extend([slice(None)] * (item.ndim if item.dtype.kind == "b" else 1))
            rest.append(item)
    if not any(item is Ellipsis for item in basic):
        basic.append(Ellipsis)  # a view even when every dim is taken by an int
    return tuple(basic), tuple(rest)


def _select_ints(tensor: Tensor, index: tuple) -> tuple[Tensor, tuple]:
    """The tensor with the int items of an advanced ``index`` applied, and the rest of it."""
    split = _split_ints(index)
    if split is None:
        return tensor, index
    return apply(_basic_view_op(split[0]), tensor, index=split[0]), split[1]


def getitem(tensor: Tensor, index: Any) -> Tensor:
    """``tensor[index]``: a view for basic indices, a copy for integer or mask indices."""
    prepared, basic = prepare_index(tensor, index)
    if basic:
        return apply(_basic_view_op(prepared), tensor, index=prepared)
    selected, rest = _select_ints(tensor, prepared)
    return apply(_GETITEM_ADVANCED, selected, index=rest)


# ----------------------------------------------------------------------- writing
def _index_put_forward(xp: Any, x: Any, value: Any, index: tuple) -> Any:
    out = x.copy()
    try:
        out[index] = value
    except ValueError:
        if not hasattr(value, "shape"):
            raise
        raise RuntimeError(
            f"shape mismatch: value tensor of shape {list(value.shape)} cannot be broadcast to "
            f"indexing result of shape {list(x[index].shape)}"
        ) from None
    return out


def _index_put_rule(ctx: Any, g: Tensor) -> tuple:
    index = ctx.attrs["index"]
    grad_x = apply(_INDEX_PUT, g, 0.0, index=index) if ctx.edges[0] is not None else None
    grad_value = apply(_GETITEM_ADVANCED, g, index=index) if ctx.edges[1] is not None else None
    return grad_x, grad_value


_INDEX_PUT = OpDef("index_put", _index_put_forward, _index_put_rule, node_name="IndexPutBackward0")


def setitem(tensor: Tensor, index: Any, value: Any) -> None:
    """``tensor[index] = value``, in place and differentiable."""
    from .inplace import copy_, inplace_update

    if isinstance(value, Tensor) and value._device is not tensor._device:
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at least two devices, "
            f"{tensor.device} and {value.device}! (when assigning to a slice)"
        )
    while isinstance(value, Tensor) and value.ndim and value.shape[0] == 1:
        value = value.squeeze(0)  # PyTorch drops a value's leading size-1 dims
    prepared, basic = prepare_index(tensor, index)
    if basic:
        view = apply(_GETITEM_VIEW, tensor, index=prepared)
        if isinstance(value, Tensor) and value._data.shape != view._data.shape:
            _check_expand(value, tuple(view.shape))
        copy_(view, value)
        return
    if isinstance(value, Tensor) and value._data.dtype != tensor._data.dtype:
        _check_index_put_dtype(tensor, prepared, value)
        value = value.to(tensor.dtype)
    target, rest = _select_ints(tensor, prepared)
    inplace_update(target, apply(_INDEX_PUT, target, value, index=rest), "index_put_")


def _check_expand(value: Tensor, shape: tuple) -> None:
    """PyTorch's errors when ``value`` does not expand to the ``shape`` it is written to."""
    from .._dtype import SCALAR_TYPE_NAMES

    if value.ndim > len(shape):
        name = SCALAR_TYPE_NAMES[value._data.dtype.name]
        raise RuntimeError(
            f"expand(torch.{name}Tensor{{{list(value.shape)}}}, size={list(shape)}): the number "
            f"of sizes provided ({len(shape)}) must be greater or equal to the number of "
            f"dimensions in the tensor ({value.ndim})"
        )
    padded = (1,) * (len(shape) - value.ndim) + tuple(value.shape)
    for dim, (target, size) in enumerate(zip(shape, padded, strict=True)):
        if size != target and size != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({target}) must match the existing size "
                f"({size}) at non-singleton dimension {dim}.  Target sizes: {list(shape)}.  "
                f"Tensor sizes: {list(value.shape)}"
            )


def _check_index_put_dtype(tensor: Tensor, index: tuple, value: Tensor) -> None:
    """PyTorch's index_put needs the value's dtype to be the tensor's, except for a 0-d value
    written through a bool mask (a masked fill, which casts)."""
    from .._dtype import SCALAR_TYPE_NAMES

    if value.ndim == 0 and any(getattr(i, "dtype", None) == "bool" for i in index):
        return
    raise RuntimeError(
        f"Index put requires the source and destination dtypes match, got "
        f"{SCALAR_TYPE_NAMES[tensor._data.dtype.name]} for the destination and "
        f"{SCALAR_TYPE_NAMES[value._data.dtype.name]} for the source."
    )


# ------------------------------------------------------------------- gather and scatter
def _grid(xp: Any, index: Any, dim: int) -> tuple:
    """An open-mesh index reading ``index`` along ``dim`` and position elsewhere."""
    grid = []
    for axis, n in enumerate(index.shape):
        if axis == dim:
            grid.append(index)
        else:
            shape = [1] * index.ndim
            shape[axis] = n
            grid.append(xp.arange(n).reshape(shape))
    return tuple(grid)


def _gather_forward(xp: Any, x: Any, index: Any, dim: int) -> Any:
    return x[_grid(xp, index, dim)]


def _scatter_add_forward(xp: Any, x: Any, src: Any, index: Any, dim: int) -> Any:
    out = x.copy()
    add_at(xp, out, _grid(xp, index, dim), src[tuple(slice(0, n) for n in index.shape)])
    return out


def _scatter_forward(xp: Any, x: Any, src: Any, index: Any, dim: int) -> Any:
    out = x.copy()
    values = (
        src
        if not hasattr(src, "shape") or not src.shape
        else src[tuple(slice(0, n) for n in index.shape)]
    )
    out[_grid(xp, index, dim)] = values
    return out


_GATHER = OpDef(
    "gather",
    _gather_forward,
    lambda ctx, g: scatter_add(
        g.new_zeros(ctx.input_meta[0][0]), ctx.attrs["dim"], _index_tensor(ctx, g), g
    ),
)
_SCATTER_ADD = OpDef(
    "scatter_add",
    _scatter_add_forward,
    lambda ctx, g: (g, gather(g, ctx.attrs["dim"], _index_tensor(ctx, g))),
    promote=COMMON,
)
_SCATTER = OpDef(
    "scatter",
    _scatter_forward,
    lambda ctx, g: (
        scatter(g, ctx.attrs["dim"], _index_tensor(ctx, g), 0.0),
        gather(g, ctx.attrs["dim"], _index_tensor(ctx, g)) if ctx.edges[1] is not None else None,
    ),
    promote=COMMON,
)


def _index_tensor(ctx: Any, like: Tensor) -> Tensor:
    return wrap(ctx.attrs["index"], like.device)


_INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))


def _check_same_dtype(name: str, input: Tensor, source: Tensor) -> None:
    """scatter and index_add write ``source`` into ``input``: PyTorch wants equal dtypes."""
    if source.dtype is not input.dtype:
        raise RuntimeError(
            f"{name}(): Expected self.dtype to be equal to src.dtype (got {input.dtype} and "
            f"{source.dtype})"
        )


def _check_gather_index(name: str, input: Tensor, dim: int, index: Tensor) -> int:
    if not isinstance(index, Tensor) or index._data.dtype not in _INDEX_DTYPES:
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")
    d = normalize_dim(dim, max(input.ndim, 1))
    if index.ndim != input.ndim:
        raise RuntimeError(
            f"Index tensor must have the same number of dimensions as input tensor (index shape "
            f"{list(index.shape)}, input shape {list(input.shape)})"
        )
    for axis in range(input.ndim):
        if axis != d and index.shape[axis] > input.shape[axis]:
            raise RuntimeError(
                f"Size does not match at dimension {axis} expected index {list(index.shape)} to be "
                f"smaller than self {list(input.shape)} apart from dimension {d}"
            )
    _check_index_range(index, input.shape[d] if input.ndim else 1, d)
    return d


def _check_index_range(
    index: Tensor, size: int, dim: int, error: type[Exception] = RuntimeError
) -> None:
    """Unlike ``t[i]``, gather, scatter, index_select and index_add take no negative indices
    (and none past ``size``)."""
    if index.numel():
        high, low = int(index._data.max()), int(index._data.min())
        if high >= size or low < 0:
            raise error(
                f"index {high if high >= size else low} is out of bounds for dimension {dim} "
                f"with size {size}"
            )


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """``out[i][j] = input[index[i][j]][j]`` for dim 0 (and likewise for other dims)."""
    d = _check_gather_index("gather", input, dim, index)
    return apply(_GATHER, input, index=index._data, dim=d)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of ``input`` with ``src`` added at the positions ``index`` names along ``dim``."""
    d = _check_gather_index("scatter_add", input, dim, index)
    _check_same_dtype("scatter_add", input, src)
    return apply(_SCATTER_ADD, input, src, index=index._data, dim=d)


def scatter(
    input: Tensor,
    dim: int,
    index: Tensor,
    src: Any = None,
    *,
    value: Any = None,
    reduce: str | None = None,
) -> Tensor:
    """A copy of ``input`` with ``src`` (or ``value``) written at the ``index`` positions."""
    d = _check_gather_index("scatter", input, dim, index)
    source = src if src is not None else value
    if not isinstance(source, Tensor):
        source = input.new_tensor(source)  # a value takes the input's dtype, as in PyTorch
    _check_same_dtype("scatter", input, source)
    if reduce == "add":
        return scatter_add(input, dim, index, source if source.ndim else source.expand(index.shape))
    if reduce == "multiply":
        raise NotImplementedError("scatter(): reduce='multiply' is not supported by tensorkit")
    if reduce is not None:
        raise RuntimeError("reduce argument must be either add or multiply.")
    return apply(_SCATTER, input, source, index=index._data, dim=d)


_SCATTER_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _identity(xp: Any, reduce: str, dtype: Any) -> Any:
    """The value that leaves ``reduce`` unchanged, in ``dtype``."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind == "f":
        return -xp.inf if reduce == "amax" else xp.inf
    info = xp.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


def _reduce_at(xp: Any, out: Any, grid: tuple, values: Any, ufunc: Any) -> Any:
    """``ufunc.at(out, grid, values)`` by plain indexing (CuPy has no ``multiply.at``):
    round ``r`` combines the ``r``-th value of every target, so no round repeats a target."""
    targets = xp.arange(out.size).reshape(out.shape)[grid].reshape(-1)  # values' shape
    order = xp.argsort(targets, kind="stable")
    targets, values = targets[order], values.reshape(-1)[order]
    starts = xp.ones(targets.shape, dtype=bool)
    starts[1:] = targets[1:] != targets[:-1]
    rank = xp.arange(targets.size) - xp.nonzero(starts)[0][xp.cumsum(starts) - 1]
    flat = out.reshape(-1)  # a view: ``out`` is a fresh contiguous copy
    for r in range(int(rank.max()) + 1 if rank.size else 0):
        chosen = rank == r
        flat[targets[chosen]] = ufunc(flat[targets[chosen]], values[chosen])
    return out


def _scatter_reduce_forward(
    xp: Any, x: Any, src: Any, index: Any, dim: int, reduce: str, include_self: bool
) -> Any:
    out = x.copy()
    grid = _grid(xp, index, dim)
    values = src[tuple(slice(0, n) for n in index.shape)]
    if not include_self:
        out[grid] = _identity(xp, reduce, x.dtype)
    if reduce in ("sum", "mean"):
        add_at(xp, out, grid, values)
    else:
        ufunc = {"prod": xp.multiply, "amax": xp.maximum, "amin": xp.minimum}[reduce]
        _reduce_at(xp, out, grid, values, ufunc)
    if reduce == "mean":
        counts = xp.full(x.shape, int(include_self), dtype=x.dtype)
        add_at(xp, counts, grid, 1)
        counts[counts == 0] = 1
        out = out // counts if x.dtype.kind in "iu" else out / counts
    return out


def _scatter_reduce_rule(ctx: Any, g: Tensor) -> tuple:
    """PyTorch's ``scatter_reduce_backward``: ties of amax/amin share the gradient evenly."""
    from .binary import where

    x, full_src, out = ctx.saved_tensors
    d, reduce, include_self = ctx.attrs["dim"], ctx.attrs["reduce"], ctx.attrs["include_self"]
    index = _index_tensor(ctx, g)
    used = tuple(slice(0, n) for n in index.shape)
    src = full_src[used]
    if reduce == "sum":
        grad_self, grad_src = g, gather(g, d, index)
    elif reduce == "mean":
        count = g.new_full(tuple(g.shape), float(include_self))
        count = scatter_add(count, d, index, g.new_ones(tuple(index.shape)))
        grad_self = g / where(count == 0, 1.0, count)
        grad_src = gather(grad_self, d, index)
    elif reduce == "prod":
        grad_self, grad_src = _scatter_prod_grads(g, x, src, out, d, index, include_self)
    else:
        x_wins, src_wins = x == out, src == gather(out, d, index)
        share = scatter_add(x_wins.to(g.dtype), d, index, src_wins.to(g.dtype))
        grad_each = g / share
        grad_self = where(x_wins, grad_each, 0.0)
        grad_src = where(src_wins, gather(grad_each, d, index), 0.0)
    if not include_self:
        grad_self = scatter(grad_self, d, index, 0.0)
    if tuple(src.shape) != tuple(full_src.shape):  # src elements past the index get none
        grad_src = slice_backward(grad_src, tuple(full_src.shape), used)
    return grad_self, grad_src


def _scatter_prod_grads(
    g: Tensor, x: Tensor, src: Tensor, out: Tensor, d: int, index: Tensor, include_self: bool
) -> tuple:
    """The product of the others for each factor, exact where one factor is zero."""
    from .binary import where

    kept_x = where(x == 0, 1.0, x)
    grad_self = g * scatter_reduce(kept_x, d, index, src, "prod", include_self=include_self)
    grad_self = grad_self / kept_x
    src_zero = src == 0
    zeros_per_place = scatter_add(g.new_zeros(tuple(x.shape)), d, index, src_zero.to(g.dtype))
    single_zero = src_zero & (gather(zeros_per_place, d, index) == 1)
    without_zero = scatter_reduce(
        x, d, index, where(single_zero, 1.0, src), "prod", include_self=include_self
    )
    grad_src = where(
        single_zero,
        gather(g * without_zero, d, index),
        gather(g * out, d, index) / where(src_zero, 1.0, src),
    )
    return grad_self, grad_src


_SCATTER_REDUCE = OpDef(
    "scatter_reduce",
    _scatter_reduce_forward,
    _scatter_reduce_rule,
    promote=COMMON,
    saves=SAVE_BOTH,
)


def scatter_reduce(
    input: Tensor,
    dim: int,
    index: Tensor,
    src: Tensor,
    reduce: str,
    *,
    include_self: bool = True,
) -> Tensor:
    """A copy of ``input`` with ``src`` reduced (sum, prod, mean, amax, amin) into the places
    ``index`` names along ``dim``; ``include_self=False`` leaves the old values out."""
    if reduce not in _SCATTER_REDUCTIONS:
        raise RuntimeError(
            f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
        )
    d = _check_gather_index("scatter_reduce", input, dim, index)
    _check_same_dtype("scatter", input, src)  # PyTorch's message names scatter
    return apply(
        _SCATTER_REDUCE,
        input,
        src,
        index=index._data,
        dim=d,
        reduce=reduce,
        include_self=include_self,
    )


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """Pick values along ``dim`` at ``indices`` (broadcasting the other dims)."""
    if dim is None:
        return take_along_dim(reshape(input, (-1,)), reshape(indices, (-1,)), 0)
    d = normalize_dim(dim, input.ndim)
    shape = list(
        np.broadcast_shapes(
            tuple(n for i, n in enumerate(input.shape) if i != d),
            tuple(n for i, n in enumerate(indices.shape) if i != d),
        )
    )
    input_shape = shape[:d] + [input.shape[d]] + shape[d:]
    index_shape = shape[:d] + [indices.shape[d]] + shape[d:]
    return gather(input.expand(input_shape), d, indices.expand(index_shape))


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    d = normalize_dim(dim, max(input.ndim, 1))
    if index.ndim > 1:
        raise IndexError(
            f"index_select(): Index is supposed to be a vector, got shape {list(index.shape)}"
        )
    _check_index_range(index, input.shape[d] if input.ndim else 1, d, IndexError)
    selector = (slice(None),) * d + (reshape(index, (-1,)),)
    return getitem(input, selector)


def _index_add_forward(xp: Any, x: Any, source: Any, index: Any, dim: int, alpha: Any) -> Any:
    out = x.copy()
    add_at(xp, out, (slice(None),) * dim + (index,), source * alpha if alpha != 1 else source)
    return out


_INDEX_ADD = OpDef(
    "index_add",
    _index_add_forward,
    lambda ctx, g: (
        g,
        index_select(g, ctx.attrs["dim"], wrap(ctx.attrs["index"], g.device)) * ctx.attrs["alpha"],
    ),
    promote=COMMON,
)


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    """A copy of ``input`` with ``alpha * source`` added at ``index`` along ``dim``."""
    d = normalize_dim(dim, max(input.ndim, 1))
    _check_same_dtype("index_add", input, source)
    _check_index_range(index, input.shape[d] if input.ndim else 1, d)
    return apply(_INDEX_ADD, input, source, index=index._data, dim=d, alpha=alpha)


def _check_long_index(name: str, index: Tensor, error: type[Exception], message: str) -> None:
    """index_copy, index_fill and take want int64 indices (PyTorch's ``long``)."""
    from .._dtype import SCALAR_TYPE_NAMES

    if not isinstance(index, Tensor) or index._data.dtype != np.int64:
        dtype = index.dtype.name if isinstance(index, Tensor) else type(index).__name__
        raise error(message.format(name=name, dtype=SCALAR_TYPE_NAMES.get(dtype, dtype)))


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with the slices ``index`` names along ``dim`` replaced by
    ``source``'s."""
    from .conversion import clone

    d = normalize_dim(dim, max(input.ndim, 1))
    _check_long_index(
        "index_copy_",
        index,
        RuntimeError,
        "{name}(): Expected a long tensor for index, but got {dtype}",
    )
    count = source.shape[d] if source.ndim else 1
    if index.numel() != count:
        raise IndexError(
            f"index_copy_(): Number of indices ({index.numel()}) should be equal to "
            f"source.size(dim) ({count})"
        )
    size = input.shape[d] if input.ndim else 1
    if index.numel() and (int(index._data.max()) >= size or int(index._data.min()) < 0):
        bad = int(index._data.max()) if int(index._data.max()) >= size else int(index._data.min())
        raise IndexError(
            f"index_copy_(): index {bad} is out of bounds for dimension {d} with size {size}"
        )
    out = clone(input)
    setitem(out, (slice(None),) * d + (reshape(index, (-1,)),), source)
    return out


def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """A copy of ``input`` with the slices ``index`` names along ``dim`` set to ``value``."""
    from .binary import where

    d = normalize_dim(dim, max(input.ndim, 1))
    _check_long_index("index_fill_", index, IndexError, "{name}(): Expected dtype int64 for index.")
    size = input.shape[d] if input.ndim else 1
    _check_index_range(index, size, d, IndexError)
    xp = input.device.xp
    mask = xp.zeros(size, dtype=bool)
    mask[index._data.reshape(-1)] = True
    mask = mask.reshape((size,) + (1,) * (input.ndim - d - 1)) if input.ndim else mask.reshape(())
    if not isinstance(value, Tensor):
        value = input.new_tensor(value)
    elif value.ndim != 0:
        raise RuntimeError(
            f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{value.ndim} dimension(s)."
        )
    return where(wrap(mask, input.device), value.to(input.dtype), input)


def take(input: Tensor, index: Tensor) -> Tensor:
    """The elements of the flattened ``input`` at ``index`` (negative counts from the end),
    in ``index``'s shape."""
    _check_long_index(
        "take", index, RuntimeError, "{name}(): Expected a long tensor for index, but got {dtype}"
    )
    n = input.numel()
    if index.numel():
        high, low = int(index._data.max()), int(index._data.min())
        if high >= n or low < -n:
            raise IndexError(
                f"out of range: tried to access index {high if high >= n else low} on a tensor "
                f"of {n} elements."
            )
    return getitem(reshape(input, (-1,)), index)


def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """``value`` where ``mask`` is True, ``input`` elsewhere."""
    from .binary import where

    if mask._data.dtype.kind != "b":
        raise RuntimeError(
            f"masked_fill_ only supports boolean masks, but got mask with dtype {mask.dtype}"
        )
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError(
            f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
            f"{value.ndim} dimension(s)."
        )
    if not isinstance(value, Tensor):
        value = input.new_tensor(value)
    return where(mask, value.to(input.dtype), input)


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements where ``mask`` (broadcast to the input's shape) is True, as 1-D."""
    if mask._data.dtype.kind != "b":
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {mask.dtype}")
    shape = np.broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    return getitem(input.expand(shape), mask.expand(shape))


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    mask = mask.expand(input.shape)
    count = int(mask.sum().item())
    result = input.clone()
    setitem(result, mask, narrow(reshape(source, (-1,)), 0, 0, count))
    return result


# ------------------------------------------------------------------- sorting and search
def _nonzero_forward(xp: Any, x: Any) -> Any:
    if x.ndim == 0:
        return xp.zeros((int(bool(x)), 0), "int64")
    return xp.stack(xp.nonzero(x), axis=1).astype("int64")


_NONZERO = OpDef("nonzero", _nonzero_forward, None)


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:
    """Indices of nonzero elements: an (n, ndim) int64 tensor, or one 1-D tensor per dim."""
    indices = apply(_NONZERO, input)
    if not as_tuple:
        return indices
    if input.ndim == 0:  # one index (0) when the value is nonzero, none otherwise
        return (input.new_zeros(indices.shape[0], dtype=int64),)
    return tuple(indices[:, i].contiguous() for i in range(input.ndim))


def argwhere(input: Tensor) -> Tensor:
    return nonzero(input)


_ARGSORT = OpDef(
    "argsort",
    lambda xp, x, axis, descending, stable: _argsort(xp, x, axis, descending),
    None,
)


def _argsort(xp: Any, x: Any, axis: int, descending: bool) -> Any:
    if descending:
        # Stable descending order: sort the reversed array ascending, then map back.
        n = x.shape[axis]
        flipped = xp.flip(x, axis)
        order = xp.argsort(flipped, axis=axis, kind="stable")
        order = n - 1 - order
        return xp.flip(order, axis).astype("int64")
    return xp.argsort(x, axis=axis, kind="stable").astype("int64")


def _scalar_values_indices(input: Tensor) -> Any:
    """(values, indices) of sort/topk/kthvalue on a 0-d tensor: itself and index 0."""
    return values_indices(input.clone(), input.new_zeros((), dtype=int64))


def _check_sortable(name: str, input: Tensor, allow_bool: bool = True) -> None:
    """PyTorch's CPU sort and topk take no complex input; topk no bool input either."""
    kind = input._data.dtype.kind
    if kind == "c":
        raise RuntimeError(f" {name} does not support complex dtypes on CPU")
    if kind == "b" and not allow_bool:
        raise RuntimeError(f"{name} does not support bool dtypes on CPU")


def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    _check_sortable("Sort", input)
    if input.ndim == 0:
        normalize_dim(dim, 0)
        return input.new_zeros((), dtype=int64)
    d = normalize_dim(dim, input.ndim)
    return apply(_ARGSORT, input, axis=d, descending=descending, stable=stable)


def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Any:
    """(values, indices) sorted along ``dim``; ties keep their order."""
    _check_sortable("Sort", input)
    if input.ndim == 0:
        normalize_dim(dim, 0)
        return _scalar_values_indices(input)
    indices = argsort(input, dim, descending, stable)
    return values_indices(gather(input, dim, indices), indices)


def msort(input: Tensor) -> Tensor:
    return sort(input, 0).values


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> Any:
    """The ``k`` largest (or smallest) values along ``dim`` and their indices."""
    _check_sortable("topk", input, allow_bool=False)
    d = normalize_dim(dim, max(input.ndim, 1))
    size = input.shape[d] if input.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError(f"selected index k out of range (k={k}, size of dim {d} is {size})")
    if input.ndim == 0 and k == 1:
        return _scalar_values_indices(input)
    order = argsort(input, d, descending=largest)
    indices = narrow(order, d, 0, k).contiguous()
    return values_indices(gather(input, d, indices), indices)


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> Any:
    """The ``k``-th smallest value (1-based) along ``dim`` and its index."""
    kind = input._data.dtype.kind
    if kind in "bc":
        raise no_kernel("kthvalue_cpu", input._data.dtype)
    d = normalize_dim(dim, max(input.ndim, 1))
    size = input.shape[d] if input.ndim else 1
    if size == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if input.ndim == 0:
        return _scalar_values_indices(input)
    values, indices = topk(input, k, d, largest=False)
    values, indices = narrow(values, d, k - 1, 1), narrow(indices, d, k - 1, 1)
    if not keepdim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return values_indices(values, indices)


def _unique_result(dev: Any, values: Any, inverse: Any, counts: Any) -> Any:
    """``unique``'s result: the values alone, or a tuple with the inverse indices and counts
    (int64) that were asked for (those not asked for are None)."""
    extras = [wrap(array.astype("int64"), dev) for array in (inverse, counts) if array is not None]
    return wrap(values, dev) if not extras else (wrap(values, dev), *extras)


def unique(
    input: Tensor,
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: int | None = None,
) -> Any:
    """The distinct values (sorted), optionally with inverse indices and counts."""
    xp = input.device.xp
    data = input._data
    axis = None if dim is None else normalize_dim(dim, input.ndim)
    values, inverse, counts = xp.unique(data, return_inverse=True, return_counts=True, axis=axis)
    shape = data.shape if axis is None else (data.shape[axis],)
    return _unique_result(
        input.device,
        values,
        inverse.reshape(shape) if return_inverse else None,
        counts if return_counts else None,
    )


def unique_consecutive(
    input: Tensor,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: int | None = None,
) -> Any:
    """The values (or slices along ``dim``) with each run of equal neighbours kept once."""
    xp = input.device.xp
    data = input._data
    if dim is None:
        rows = data.reshape(-1, 1)
    else:
        axis = normalize_dim(dim, input.ndim)
        moved = xp.moveaxis(data, axis, 0)
        rows = moved.reshape(moved.shape[0], -1)
    starts = xp.ones(rows.shape[0], dtype=bool)
    starts[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    kept = rows[starts]
    if dim is None:
        values = kept.reshape(-1)
    else:
        values = xp.moveaxis(kept.reshape((kept.shape[0],) + moved.shape[1:]), 0, axis)
    inverse = counts = None
    if return_inverse:
        inverse = (xp.cumsum(starts) - 1).reshape(data.shape if dim is None else (-1,))
    if return_counts:
        counts = xp.diff(xp.concatenate([xp.nonzero(starts)[0], xp.asarray([rows.shape[0]])]))
    return _unique_result(input.device, xp.ascontiguousarray(values), inverse, counts)


def searchsorted(
    sorted_sequence: Tensor,
    values: Any,
    *,
    out_int32: bool = False,
    right: bool = False,
    side: str | None = None,
) -> Tensor:
    """Indices where ``values`` would go in ``sorted_sequence`` (int64, or int32 with
    ``out_int32``)."""
    xp = sorted_sequence.device.xp
    side = side or ("right" if right else "left")
    v = values._data if isinstance(values, Tensor) else xp.asarray(values)
    if sorted_sequence.ndim == 1:
        out = xp.searchsorted(sorted_sequence._data, v, side=side)
    else:
        rows = sorted_sequence._data.reshape(-1, sorted_sequence.shape[-1])
        vals = v.reshape(-1, v.shape[-1])
        out = xp.stack([xp.searchsorted(r, q, side=side) for r, q in zip(rows, vals, strict=True)])
        out = out.reshape(v.shape)
    return wrap(xp.asarray(out).astype("int32" if out_int32 else "int64"), sorted_sequence.device)


def bucketize(
    input: Tensor, boundaries: Tensor, *, out_int32: bool = False, right: bool = False
) -> Tensor:
    """The bucket of each value of ``input`` among ``boundaries``."""
    return searchsorted(
        boundaries, input, out_int32=out_int32, side="left" if not right else "right"
    )


# ------------------------------------------------------------------ scatter into views
def _scatter_into_view(input: Tensor, src: Tensor, view: Any) -> Tensor:
    """A copy of ``input`` with the part ``view(copy)`` reads replaced by ``src``."""
    from .conversion import clone
    from .inplace import copy_

    out = clone(input)
    part = view(out)
    if tuple(src.shape) != tuple(part.shape):
        raise RuntimeError(
            f"expected src to have a size equal to the slice of self. src size = "
            f"{list(src.shape)}, slice size = {list(part.shape)}"
        )
    copy_(part, src)
    return out


def slice_scatter(
    input: Tensor,
    src: Tensor,
    dim: int = 0,
    start: int | None = None,
    end: int | None = None,
    step: int = 1,
) -> Tensor:
    """A copy of ``input`` with ``input[..., start:end:step, ...]`` (along ``dim``) set to
    ``src``."""
    d = normalize_dim(dim, max(input.ndim, 1))
    index = (slice(None),) * d + (slice(start, end, step),)
    return _scatter_into_view(input, src, lambda out: getitem(out, index))


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """A copy of ``input`` with ``input.select(dim, index)`` set to ``src``."""
    from .shape import select

    return _scatter_into_view(input, src, lambda out: select(out, dim, index))


def diagonal_scatter(
    input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1
) -> Tensor:
    """A copy of ``input`` with ``input.diagonal(offset, dim1, dim2)`` set to ``src``."""
    from .shape import diagonal

    return _scatter_into_view(input, src, lambda out: diagonal(out, offset, dim1, dim2))


# ------------------------------------------------------------------------- index_put, put
def _index_put_acc_forward(xp: Any, x: Any, value: Any, index: tuple) -> Any:
    out = x.copy()
    add_at(xp, out, index, xp.broadcast_to(value, out[index].shape))
    return out


def _index_put_acc_rule(ctx: Any, g: Tensor) -> tuple:
    grad_value = None
    if ctx.edges[1] is not None:
        grad_value = apply(_GETITEM_ADVANCED, g, index=ctx.attrs["index"])
    return g, grad_value


_INDEX_PUT_ACC = OpDef(
    "index_put",
    _index_put_acc_forward,
    _index_put_acc_rule,
    node_name="IndexPutBackward0",
    key="index_put_accumulate",
)


def index_put(
    input: Tensor, indices: tuple | list, values: Tensor, accumulate: bool = False
) -> Tensor:
    """A copy of ``input`` with ``values`` written (or, with ``accumulate``, added) at the
    positions the tuple of index tensors ``indices`` names."""
    from .conversion import clone

    index = tuple(indices)
    if not accumulate:
        out = clone(input)
        setitem(out, index, values)
        return out
    prepared, _ = prepare_index(input, index)
    if values._data.dtype != input._data.dtype:
        _check_index_put_dtype(input, prepared, values)
        values = values.to(input.dtype)
    shape = tuple(input._data[prepared].shape)
    if tuple(values.shape) != shape:
        padded = (1,) * (len(shape) - values.ndim) + tuple(values.shape)
        if values.ndim > len(shape) or any(
            n not in (1, size) for n, size in zip(padded, shape, strict=True)
        ):
            raise RuntimeError(
                f"shape mismatch: value tensor of shape {list(values.shape)} cannot be broadcast "
                f"to indexing result of shape {list(shape)}"
            )
        values = values.expand(shape)
    return apply(_INDEX_PUT_ACC, input, values, index=prepared)


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``source`` written (or added) at the flat positions ``index``
    (negative counts from the end)."""
    from .._dtype import SCALAR_TYPE_NAMES

    _check_long_index(
        "put_", index, RuntimeError, "{name}(): Expected a long tensor for index, but got {dtype}"
    )
    if source.numel() != index.numel():
        raise IndexError(
            f"put_(): Expected source and index to have the same number of elements, but got "
            f"source.numel() = {source.numel()}, index.numel() = {index.numel()}"
        )
    if source._data.dtype != input._data.dtype:
        raise RuntimeError(
            f"put_(): self and source expected to have the same dtype, but got self.dtype = "
            f"{SCALAR_TYPE_NAMES[input._data.dtype.name]} and source.dtype = "
            f"{SCALAR_TYPE_NAMES[source._data.dtype.name]}"
        )
    n = input.numel()
    if index.numel():
        high, low = int(index._data.max()), int(index._data.min())
        if high >= n or low < -n:
            raise IndexError(
                f"out of range: tried to access index {high if high >= n else low} on a tensor "
                f"of {n} elements."
            )
    flat = index_put(
        reshape(input, (-1,)), (reshape(index, (-1,)),), reshape(source, (-1,)), accumulate
    )
    return reshape(flat, tuple(input.shape))


def index_put_(
    input: Tensor, indices: tuple | list, values: Tensor, accumulate: bool = False
) -> Tensor:
    """In-place ``index_put``."""
    from .inplace import inplace_update

    return inplace_update(input, index_put(input, indices, values, accumulate), "index_put_")


def put_(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """In-place ``put``."""
    from .inplace import inplace_update

    return inplace_update(input, put(input, index, source, accumulate), "put_")


def fill_diagonal_(input: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """Set the main diagonal of ``input`` (all dims equal when more than 2) to
    ``fill_value``, in place; ``wrap`` restarts it below a tall matrix's square part."""
    if input.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if input.ndim > 2 and len(set(input.shape)) > 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    mask = np.zeros(tuple(input.shape), dtype=bool)
    np.fill_diagonal(mask, True, wrap=wrap)
    return input.masked_fill_(_wrap_array(mask, input), fill_value)


def _wrap_array(array: np.ndarray, like: Tensor) -> Tensor:
    return wrap(to_device_array(array, like.device), like.device)
