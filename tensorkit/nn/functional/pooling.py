"""Pooling and interpolation for ``tk.nn.functional``.

Average pooling, adaptive average pooling and interpolation are separable: each is one
``resample`` (see conv.py) per spatial axis through a table of window positions and weights,
so nothing larger than the output is built and the gradient is the transposed table. Max
pooling finds each window's argmax with one vectorized pass per kernel offset (the first
maximum on ties, the last NaN, as PyTorch) and reads the values through the flat argmax;
the gradient is written back there (plain assignment when no two windows share a position).
A channels-last input (memory (N, *S, C), from tk.jit's channels-last convolutions) keeps that
layout through all three ops, its windows without padding in numba loops
(``_backend/max_pool.py``).
On CUDA with cuDNN, max and average pooling without dilation or ceil mode (and without
returned indices or a divisor override) go to ``_cudnn.pooling`` instead.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

from ..._backend import add_at
from ..._backend import max_pool as host_max_pool
from ..._backend.threads import parallel_parts, splits
from ..._dtype import no_kernel, reject_complex
from ..._ranges import composite
from ...ops._apply import SAVE_INPUTS, OpDef, apply
from ...tensor import Tensor
from . import _cudnn
from .conv import ntuple, resample

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool3d",
    "avg_pool1d",
    "avg_pool2d",
    "avg_pool3d",
    "interpolate",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "max_pool1d",
    "max_pool2d",
    "max_pool3d",
]


# ------------------------------------------------------------------------- arguments
def _batched(input: Tensor, dims: int, message: str) -> tuple[Tensor, bool]:
    """``input`` with a batch dim (added if it was unbatched), and whether it had one."""
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(message)
    if input.ndim == dims + 2:
        return input, True
    return input.unsqueeze(0), False


def _pool_input(input: Tensor, dims: int, name: str) -> tuple[Tensor, bool]:
    if dims == 3:
        return _batched(input, dims, "non-empty 4D or 5D (batch mode) tensor expected for input")
    return _batched(
        input,
        dims,
        f"{name}: Expected {dims + 1}D or {dims + 2}D (batch mode) tensor with optional 0 dim "
        f"batch size for input, but got: {list(input.shape)}",
    )


def _adaptive_input(input: Tensor, dims: int, name: str) -> tuple[Tensor, bool]:
    got = "got:" if "max" in name and dims > 1 else "got"
    x, batched = _batched(
        input,
        dims,
        f"{name}(): Expected {dims + 1}D or {dims + 2}D tensor, but {got} {list(input.shape)}",
    )
    for axis in range(1, x.ndim):
        if x.shape[axis] == 0:
            raise RuntimeError(
                f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {list(input.shape)} with dimension {axis - (not batched)} "
                "being empty"
            )
    return x, batched


def _unbatch(out: Tensor, batched: bool) -> Tensor:
    return out if batched else out.squeeze(0)


def _pool_size(size: int, kernel: int, stride: int, pad: int, dilation: int, ceil: bool) -> int:
    """PyTorch's pooling output size; in ceil mode the last window must start inside the
    input or its left padding."""
    span = size + 2 * pad - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil else 0)) // stride + 1
    if ceil and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _labelled(prefix: str, values: tuple[int, ...]) -> str:
    """Per-axis values as PyTorch names them (``kT: 2 kH: 2 kW: 2``); a list in 1-D."""
    if len(values) == 1:
        return str(list(values))
    axes = "THW"[3 - len(values) :]
    return " ".join(f"{prefix}{axis}: {v}" for axis, v in zip(axes, values, strict=True))


# PyTorch's rule for each argument of a 3-D pooling function given with a wrong length.
_LENGTH_RULES = {
    "max_pool3d": (
        "kernel_size must either be a single int",
        "stride must either be omitted, a single int",
        "padding must either be a single int",
        "dilation must be either a single int",
    ),
    "avg_pool3d": (
        "kernel_size must be a single int",
        "stride must be omitted, a single int",
        "padding must be a single int",
    ),
}


def _check_lengths(options: tuple, name: str) -> None:
    """PyTorch's error when a 3-D pooling argument is neither one int nor three."""
    for value, rule in zip(options, _LENGTH_RULES[name], strict=False):
        allowed = (0, 1, 3) if rule.startswith("stride") else (1, 3)
        if isinstance(value, Sequence) and len(value) not in allowed:
            raise RuntimeError(f"{name}: {rule}, or a tuple of three ints")


def _pool_options(
    x: Tensor,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    ceil: bool,
    dims: int,
    whole_kernel: bool = False,
) -> tuple[tuple[int, ...], ...]:
    """Checked kernel, stride, padding, dilation and output size of a pooling window
    (``whole_kernel``: the unpadded input must hold a kernel, as PyTorch's avg_pool3d asks)."""
    kernel = ntuple(kernel_size, dims, "kernel_size")
    stride = kernel if stride is None or stride == [] else ntuple(stride, dims, "stride")
    padding, dilation = ntuple(padding, dims, "padding"), ntuple(dilation, dims, "dilation")
    if 0 in stride:
        raise RuntimeError("stride should not be zero")
    if min(kernel) <= 0:
        raise RuntimeError(
            f"kernel size should be greater than zero, but got {_labelled('k', kernel)}"
        )
    if min(dilation) <= 0:
        raise RuntimeError(
            f"dilation should be greater than zero, but got {_labelled('dilation', dilation)}"
        )
    for k, p, d in zip(kernel, padding, dilation, strict=True):
        if p < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={p}, "
                f"kernel_size={k} and dilation={d}"
            )
    spatial = tuple(x.shape[2:])
    if whole_kernel and any(n < k for n, k in zip(spatial, kernel, strict=True)):
        raise RuntimeError(
            f"input image ({_labelled('', spatial)}) smaller than kernel size "
            f"({_labelled('k', kernel)})"
        )
    out = tuple(map(_pool_size, spatial, kernel, stride, padding, dilation, (ceil,) * dims))
    if min(out) < 1:
        given = "x".join(map(str, (x.shape[1], *spatial)))
        wanted = "x".join(map(str, (x.shape[1], *out)))
        raise RuntimeError(
            f"Given input size: ({given}). Calculated output size: ({wanted}). Output size is "
            "too small"
        )
    return kernel, stride, padding, dilation, out


# --------------------------------------------------------------------------- tables
def _window_table(
    xp: Any, size: int, out: int, kernel: int, stride: int, pad: int, dilation: int
) -> Any:
    """(out, kernel) input positions of each pooling window; -1 where it is padding."""
    index = xp.arange(out)[:, None] * stride - pad + xp.arange(kernel)[None, :] * dilation
    return xp.where((index >= 0) & (index < size), index, -1)


def _bin_table(xp: Any, size: int, out: int) -> tuple[Any, Any]:
    """Adaptive pooling bins [floor(i * size / out), ceil((i + 1) * size / out)) as a table of
    positions (-1 past a bin's end) and each bin's length."""
    start = xp.arange(out) * size // out
    end = -(-(xp.arange(out) + 1) * size // out)
    width = int((end - start).max()) if out else 1
    index = start[:, None] + xp.arange(width)[None, :]
    return xp.where(index < end[:, None], index, -1), end - start


def _spatial_axes(x: Tensor) -> range:
    """The spatial axes of a batched input, the last first (the order PyTorch sums in)."""
    return range(x.ndim - 1, 1, -1)


def _check_float(x: Tensor, name: str) -> None:
    if not x.dtype.is_floating_point:
        raise no_kernel(name, x._data.dtype)


# ---------------------------------------------------------------------- max pooling
def _taps(xp: Any, x: Any, tables: tuple, axis: int = 0) -> Iterator[tuple[Any, Any, Any]]:
    """For each combination of one tap per axis (row-major): the values it reads, their flat
    spatial positions and whether the tap is real (tables: (out, taps) positions, -1 unused)."""
    if axis == len(tables):
        yield x, 0, True
        return
    shape = (-1,) + (1,) * (len(tables) - 1 - axis)
    step = math.prod(x.shape[3 + axis :]) if axis + 1 < len(tables) else 1
    for column in tables[axis].T:
        span = _progression(column)
        if span is None:
            taken = xp.take(x, xp.maximum(column, 0), axis=2 + axis)
        else:  # a strided view: no copy
            taken = x[(slice(None),) * (2 + axis) + (span,)]
        position = (column * step).reshape(shape)
        valid = (column >= 0).reshape(shape)
        for values, inner, inner_valid in _taps(xp, taken, tables, axis + 1):
            yield values, position + inner, valid & inner_valid


def _progression(column: Any) -> slice | None:
    """``column`` (window positions, -1 for padding) as a slice when it is an increasing run
    of evenly spaced real positions, else None."""
    n = int(column.shape[0])
    start = int(column[0]) if n else -1
    step = int(column[1]) - start if n > 1 else 1
    if start < 0 or step < 1 or int(column[-1]) != start + step * (n - 1):
        return None
    if n > 2 and bool((column[1:] - column[:-1] != step).any()):
        return None
    return slice(start, start + step * (n - 1) + 1, step)


def channels_last(a: Any) -> bool:
    """Whether ``a`` (N, C, *S) is laid out in memory as (N, *S, C) (and not also in C
    order): what tk.jit's channels-last convolutions make. Max pooling's three ops keep that
    layout, as PyTorch's do for a channels_last tensor."""
    if a.ndim < 3 or a.flags.c_contiguous:
        return False
    return bool(a.transpose(0, *range(2, a.ndim), 1).flags.c_contiguous)


def _memory_axes(a: Any) -> tuple[int, ...]:
    """The axes of ``a`` (N, C, *S) in memory order: (N, *S, C) for a channels-last array,
    as they are otherwise."""
    return (0, *range(2, a.ndim), 1) if channels_last(a) else tuple(range(a.ndim))


def _in_memory_order(a: Any) -> Any:
    """``a`` with its axes in memory order (C-contiguous when ``a`` is C order or channels
    last). Gathers and scatters run on these views: NumPy's take over a strided index or
    output is several times slower."""
    return a.transpose(_memory_axes(a))


def _empty_in_layout_of(xp: Any, like: Any, shape: tuple, dtype: Any) -> Any:
    """An (N, C, *S) array of ``shape`` laid out like ``like`` (channels last or C order)."""
    if not channels_last(like):
        return xp.empty(shape, dtype)
    last = xp.empty((shape[0], *shape[2:], shape[1]), dtype)
    return last.transpose(0, len(shape) - 1, *range(1, len(shape) - 1))


def _regular(xp: Any, tables: tuple) -> tuple[tuple, tuple, tuple] | None:
    """(kernel, stride, dilation) when every table is windows from position 0 on, evenly
    strided, with evenly spaced real taps (no padding); else None."""
    found = []
    for table in tables:
        outs, taps = table.shape
        stride = int(table[1, 0]) if outs > 1 else 1
        dilation = int(table[0, 1]) if taps > 1 else 1
        if int(table[0, 0]) != 0 or stride < 1 or dilation < 1:
            return None
        expected = stride * xp.arange(outs)[:, None] + dilation * xp.arange(taps)
        if bool((table != expected).any()):
            return None
        found.append((taps, stride, dilation))
    kernel, stride, dilation = zip(*found, strict=True)
    return kernel, stride, dilation


def _window_argmax_forward(xp: Any, x: Any, tables: tuple) -> Any:
    """The flat spatial index of each window's largest value, as PyTorch picks it: the first
    maximum (or the last NaN), and the first real position when nothing beats -inf. Samples
    are split over threads when large; the indices are laid out in memory as ``x`` is (a
    channels-last input's windows go to a compiled loop, ``_backend.max_pool``)."""
    if channels_last(x) and host_max_pool.usable(xp, x):
        regular = _regular(xp, tables)
        if regular is not None:
            out_size = tuple(table.shape[0] for table in tables)
            rows = host_max_pool.argmax(_in_memory_order(x), out_size, *regular)
            return rows.transpose(0, x.ndim - 1, *range(1, x.ndim - 1))
    if not splits(x.shape[0], x.size, x):
        return _window_argmax_part(xp, x, tables)
    shape = x.shape[:2] + tuple(table.shape[0] for table in tables)
    out = _empty_in_layout_of(xp, x, shape, xp.int64)

    def part(samples: slice) -> None:
        out[samples] = _window_argmax_part(xp, x[samples], tables)

    parallel_parts(part, x.shape[0], x.size, x)
    return out


def _window_argmax_part(xp: Any, x: Any, tables: tuple) -> Any:
    if all(bool((table >= 0).all()) for table in tables):
        arg = _argmax_no_padding(xp, x, tables)
        if arg is not None:
            return arg
    best = arg = None
    for values, position, valid in _taps(xp, x, tables):
        if best is None:
            best, arg = values, xp.where(valid, position, -1)
            continue
        take = (values > best) | (arg < 0)
        if x.dtype.kind == "f":
            take |= xp.isnan(values)
        take &= valid
        best = xp.where(take, values, best)
        arg = xp.where(take, position, arg)
    out = _empty_in_layout_of(xp, x, best.shape, xp.int64)
    out[...] = arg
    return out


def _argmax_no_padding(xp: Any, x: Any, tables: tuple) -> Any:
    """The fast path of :func:`_window_argmax_forward` when every tap is real: the maximum
    first, then the position of its first occurrence (taps visited last to first). None when
    a window holds a NaN (the general path picks the last NaN)."""
    taps = list(_taps(xp, x, tables))
    best = taps[0][0].copy(order="K")  # temporaries keep x's layout (channels last or not)
    for values, _, _ in taps[1:]:
        xp.maximum(best, values, out=best)
    if x.dtype.kind == "f" and bool(xp.isnan(best).any()):
        return None
    # The first tap holding the maximum, as a small integer per window: ``which -= (which -
    # k) * hit`` sets it to k where tap k hits (several times faster than a masked copy).
    which = xp.full_like(best, len(taps) - 1, dtype=xp.int8 if len(taps) < 128 else xp.int64)
    for k in range(len(taps) - 2, -1, -1):
        which -= (which - k) * (taps[k][0] == best)
    # Each tap's flat position for every window, read at (which, window).
    spatial = best.shape[2:]
    positions = xp.stack([xp.broadcast_to(position, spatial) for _, position, _ in taps])
    windows = math.prod(spatial)
    flat = which.astype(xp.int64) * windows + xp.arange(windows).reshape(spatial)
    out = xp.empty_like(flat)
    xp.take(positions.reshape(-1), _in_memory_order(flat), out=_in_memory_order(out))
    return out


_WINDOW_ARGMAX = OpDef("window_argmax", _window_argmax_forward, None)


def _flat_positions(xp: Any, indices: Any, shape: tuple, last: bool = False) -> Any:
    """Per-plane argmax ``indices`` (N, C, *out) as positions into a flattened (N, C, *S),
    or, ``last``, into the flattened (N, *S, C) memory of a channels-last array."""
    planes, plane = math.prod(shape[:2]), math.prod(shape[2:])
    lead = tuple(shape[:2]) + (1,) * (len(shape) - 2)
    if not last:
        return indices + (xp.arange(planes) * plane).reshape(lead)
    samples, channels = shape[0], shape[1]
    base = xp.arange(samples).reshape(-1, 1) * (plane * channels) + xp.arange(channels)
    return indices * channels + base.reshape(lead)


def _memory(x: Any) -> Any:
    """``x``'s elements in memory order, flat (no copy for C order or channels last)."""
    if channels_last(x):
        return x.transpose(0, *range(2, x.ndim), 1).reshape(-1)
    return x.reshape(-1)


def _window_max_forward(xp: Any, x: Any, indices: Any, disjoint: bool) -> Any:
    """``x`` (N, C, *S) read at each plane's argmax ``indices`` (``disjoint``, no position
    repeats, is for the gradient); the result laid out as ``indices`` are."""
    last = channels_last(x)
    if last and channels_last(indices) and host_max_pool.usable(xp, x):
        values = host_max_pool.gather(_in_memory_order(x), _in_memory_order(indices))
        return values.transpose(0, x.ndim - 1, *range(1, x.ndim - 1))
    flat = _flat_positions(xp, indices, x.shape, last)
    source, out = _memory(x), xp.empty_like(flat, dtype=x.dtype)

    flat, into = _in_memory_order(flat), _in_memory_order(out)  # the sample axis stays first

    def part(rows: slice) -> None:
        xp.take(source, flat[rows], out=into[rows])

    parallel_parts(part, len(flat), flat.size, x)
    return out


def _window_max_backward_forward(
    xp: Any, g: Any, indices: Any, shape: tuple, disjoint: bool
) -> Any:
    """Zeros of ``shape`` with ``g`` added at the argmax ``indices`` (assigned when no
    position repeats), laid out in memory as ``indices`` are (so as the pooled input was)."""
    last = channels_last(indices)
    if last and disjoint and host_max_pool.usable(xp, g):
        axes = _memory_axes(indices)
        size = tuple(shape[2:])
        rows = host_max_pool.scatter(g.transpose(axes), indices.transpose(axes), size)
        return rows.transpose(0, len(shape) - 1, *range(1, len(shape) - 1))
    flat = _flat_positions(xp, indices, shape, last)
    out = _empty_in_layout_of(xp, indices, shape, g.dtype)
    flat_out = _memory(out)
    if not disjoint:
        flat_out[...] = 0
        add_at(xp, flat_out, flat, g)
        return out

    axes = _memory_axes(indices)  # the sample axis stays first
    flat, g = flat.transpose(axes), g.transpose(axes)

    def part(samples: slice) -> None:  # sample n's windows read only sample n's positions
        out[samples] = 0
        flat_out[flat[samples]] = g[samples]

    parallel_parts(part, shape[0], out.size, g)
    return out


# The argmax indices are an input (a tensor the capture of tk.jit follows), saved for the
# gradient; the values are not differentiated with respect to them.
_WINDOW_MAX = OpDef(
    "max_pool",
    _window_max_forward,
    lambda ctx, g: (
        apply(
            _WINDOW_MAX_BACKWARD,
            g,
            ctx.saved_tensors[1],
            shape=ctx.input_meta[0][0],
            disjoint=ctx.attrs["disjoint"],
        ),
        None,
    ),
    saves=SAVE_INPUTS,
)
_WINDOW_MAX_BACKWARD = OpDef(
    "max_pool_backward",
    _window_max_backward_forward,
    lambda ctx, gg: (
        apply(_WINDOW_MAX, gg, ctx.saved_tensors[1], disjoint=ctx.attrs["disjoint"]),
        None,
    ),
    saves=SAVE_INPUTS,
)


def _disjoint(xp: Any, tables: list) -> bool:
    """Whether no two windows share an input position (no table repeats a real position)."""
    for table in tables:
        used = table[table >= 0]
        if xp.unique(used).size != used.size:
            return False
    return True


def _max_over_windows(
    x: Tensor, tables: list, return_indices: bool, batched: bool
) -> Tensor | tuple[Tensor, Tensor]:
    indices = apply(_WINDOW_ARGMAX, x, tables=tuple(tables))
    values = apply(_WINDOW_MAX, x, indices, disjoint=_disjoint(x.device.xp, tables))
    values, indices = _unbatch(values, batched), _unbatch(indices, batched)
    return (values, indices) if return_indices else values


def read_at_window_max(
    x: Tensor, values: Tensor, kernel: tuple, stride: tuple, pad: tuple
) -> Tensor:
    """``values`` (x's shape) read at the maximum of each pooling window of batched ``x``
    (no dilation, floor mode): the gradient of cuDNN's max pooling backward."""
    xp = x.device.xp
    out = [
        _pool_size(n, k, s, p, 1, False)
        for n, k, s, p in zip(x.shape[2:], kernel, stride, pad, strict=True)
    ]
    tables = list(
        map(_window_table, (xp,) * len(out), x.shape[2:], out, kernel, stride, pad, (1,) * len(out))
    )
    indices = apply(_WINDOW_ARGMAX, x.detach(), tables=tuple(tables))
    return apply(_WINDOW_MAX, values, indices, disjoint=_disjoint(xp, tables))


def _max_pool(
    input: Tensor, options: tuple, ceil_mode: bool, return_indices: bool, dims: int
) -> Tensor | tuple[Tensor, Tensor]:
    name = f"max_pool{dims}d"
    reject_complex(input._data.dtype, "max_pool1d_impl" if dims == 1 else name)
    if dims == 3:
        _check_lengths(options, name)
    x, batched = _pool_input(input, dims, name)
    kernel, stride, padding, dilation, out = _pool_options(x, *options, ceil_mode, dims)
    if not return_indices and _cudnn.pool_ok(x, dilation, ceil_mode):
        return _unbatch(_cudnn.pooling(x, kernel, stride, padding, out, "max"), batched)
    xp = x.device.xp
    tables = list(
        map(_window_table, (xp,) * dims, x.shape[2:], out, kernel, stride, padding, dilation)
    )
    return _max_over_windows(x, tables, return_indices, batched)


@composite
def max_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """Largest value of each window of (N, C, L) or (C, L) ``input``; ``stride`` defaults to
    ``kernel_size``; indices index L."""
    options = (kernel_size, stride, padding, dilation)
    return _max_pool(input, options, ceil_mode, return_indices, 1)


@composite
def max_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """Largest value of each window of (N, C, H, W) or (C, H, W) ``input``; ``stride``
    defaults to ``kernel_size``; indices are flat ``h * W + w``."""
    options = (kernel_size, stride, padding, dilation)
    return _max_pool(input, options, ceil_mode, return_indices, 2)


@composite
def max_pool3d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """Largest value of each window of (N, C, D, H, W) or (C, D, H, W) ``input``; ``stride``
    defaults to ``kernel_size``; indices are flat ``(d * H + h) * W + w``."""
    options = (kernel_size, stride, padding, dilation)
    return _max_pool(input, options, ceil_mode, return_indices, 3)


def _adaptive_sizes(output_size: Any, input: Tensor, dims: int, name: str) -> tuple[int, ...]:
    sizes = (output_size,) * dims if isinstance(output_size, int | None) else tuple(output_size)
    if len(sizes) != dims:
        if "max" in name and dims > 1:
            raise RuntimeError(f"{name}(): internal error: output_size.size() must be {dims}")
        raise RuntimeError(f"{name}: output_size must be {dims}")
    spatial = input.shape[input.ndim - dims :]
    sizes = tuple(n if o is None else int(o) for o, n in zip(sizes, spatial, strict=True))
    if min(sizes) < 0:
        raise RuntimeError(_negative_size(name, sizes, tuple(input.shape)))
    return sizes


def _negative_size(name: str, sizes: tuple[int, ...], input_shape: tuple[int, ...]) -> str:
    """PyTorch's text for a negative adaptive output size (its own per op and rank)."""
    dims = len(sizes)
    if "max" in name and dims > 1:
        shape = [*input_shape[:-dims], *sizes]
        negative = next(n for n in sizes if n < 0)
        return f"Trying to create tensor with negative dimension {negative}: {shape}"
    received = {2: "{{{}, {}}}", 3: "{{{}, {},{}}}"}.get(dims, "{}").format(
        *(sizes if dims > 1 else [list(sizes)])
    )
    return (
        f"{name}: elements of output_size must be greater than or equal to 0 but received "
        f"{received}"
    )


def _adaptive_max_pool(
    input: Tensor, output_size: Any, return_indices: bool, dims: int
) -> Tensor | tuple[Tensor, Tensor]:
    name = f"adaptive_max_pool{dims}d"
    if dims == 3:
        _check_float(input, "adaptive_max_pool3d_cpu")
    reject_complex(input._data.dtype, "adaptive_max_pool2d")
    x, batched = _adaptive_input(input, dims, name)
    sizes = _adaptive_sizes(output_size, input, dims, name)
    xp = x.device.xp
    tables = [_bin_table(xp, n, o)[0] for n, o in zip(x.shape[2:], sizes, strict=True)]
    return _max_over_windows(x, tables, return_indices, batched)


@composite
def adaptive_max_pool1d(
    input: Tensor, output_size: Any, return_indices: bool = False
) -> Tensor | tuple[Tensor, Tensor]:
    """Max over ``output_size`` near-equal bins of (N, C, L) or (C, L) ``input``."""
    return _adaptive_max_pool(input, output_size, return_indices, 1)


@composite
def adaptive_max_pool2d(
    input: Tensor, output_size: Any, return_indices: bool = False
) -> Tensor | tuple[Tensor, Tensor]:
    """Max over an ``output_size`` grid of near-equal bins of (N, C, H, W) or (C, H, W)
    ``input``; indices are flat ``h * W + w``."""
    return _adaptive_max_pool(input, output_size, return_indices, 2)


@composite
def adaptive_max_pool3d(
    input: Tensor, output_size: Any, return_indices: bool = False
) -> Tensor | tuple[Tensor, Tensor]:
    """Max over an ``output_size`` grid of near-equal bins of (N, C, D, H, W) or (C, D, H, W)
    ``input``; indices are flat ``(d * H + h) * W + w``."""
    return _adaptive_max_pool(input, output_size, return_indices, 3)


# ------------------------------------------------------------------ average pooling
def _avg_divisor(
    xp: Any, size: int, out: int, kernel: int, stride: int, pad: int, include_pad: bool
) -> Any:
    """Each window's count along one axis: up to the padded end, or of real positions."""
    start = xp.arange(out) * stride - pad
    end = xp.minimum(start + kernel, size + pad)
    if include_pad:
        return end - start
    return xp.minimum(end, size) - xp.maximum(start, 0)


def _weights(xp: Any, scale: Any, index: Any, x: Tensor) -> Any:
    """A weight table of ``index``'s shape with ``scale`` (one value per output) on each row."""
    return xp.broadcast_to(xp.asarray(scale, dtype=x.dtype.np)[:, None], index.shape)


def _avg_pool(
    input: Tensor,
    options: tuple,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None,
    dims: int,
) -> Tensor:
    name = f"avg_pool{dims}d"
    if dims == 3:
        _check_lengths(options, name)
    x, batched = _pool_input(input, dims, name)
    _check_float(x, "avg_pool3d_out_frame" if dims == 3 else name)
    kernel, stride, padding, _, out = _pool_options(x, *options, 1, ceil_mode, dims, dims == 3)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    if divisor_override is None and _cudnn.pool_ok(x, (1,) * dims, ceil_mode):
        kind = "avg_include_pad" if count_include_pad else "avg_exclude_pad"
        return _unbatch(_cudnn.pooling(x, kernel, stride, padding, out, kind), batched)
    xp = x.device.xp
    for axis in _spatial_axes(x):
        i = axis - 2
        args = (x.shape[axis], out[i], kernel[i], stride[i], padding[i])
        index = _window_table(xp, *args, 1)
        if divisor_override is None:
            scale = 1.0 / _avg_divisor(xp, *args, count_include_pad)
        else:
            scale = xp.full(out[i], 1.0 / divisor_override if axis == x.ndim - 1 else 1.0)
        x = resample(x, axis, index, _weights(xp, scale, index, x))
    return _unbatch(x, batched)


@composite
def avg_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """Mean of each window of (N, C, L) or (C, L) ``input``."""
    options = (kernel_size, stride, padding)
    return _avg_pool(input, options, ceil_mode, count_include_pad, None, 1)


@composite
def avg_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """Mean of each window of (N, C, H, W) or (C, H, W) ``input`` (the window sum divided by
    ``divisor_override`` when given)."""
    options = (kernel_size, stride, padding)
    return _avg_pool(input, options, ceil_mode, count_include_pad, divisor_override, 2)


@composite
def avg_pool3d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """Mean of each window of (N, C, D, H, W) or (C, D, H, W) ``input`` (the window sum
    divided by ``divisor_override`` when given)."""
    options = (kernel_size, stride, padding)
    return _avg_pool(input, options, ceil_mode, count_include_pad, divisor_override, 3)


def _adaptive_avg_pool(input: Tensor, output_size: Any, dims: int) -> Tensor:
    name = f"adaptive_avg_pool{dims}d"
    x, batched = _adaptive_input(input, dims, name)
    _check_float(x, "adaptive_avg_pool3d_cpu" if dims == 3 else name)
    sizes = _adaptive_sizes(output_size, input, dims, name)
    xp = x.device.xp
    for axis in _spatial_axes(x):
        size, out = x.shape[axis], sizes[axis - 2]
        if out and size % out == 0:  # equal bins that tile the axis: a plain mean
            x = x.unflatten(axis, (out, size // out)).mean(axis + 1)
            continue
        index, length = _bin_table(xp, size, out)
        x = resample(x, axis, index, _weights(xp, 1.0 / length, index, x))
    return _unbatch(x, batched)


@composite
def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    """Mean over ``output_size`` near-equal bins of (N, C, L) or (C, L) ``input``."""
    return _adaptive_avg_pool(input, output_size, 1)


@composite
def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    """Mean over an ``output_size`` grid of near-equal bins of (N, C, H, W) or (C, H, W)
    ``input`` (None keeps that input size)."""
    return _adaptive_avg_pool(input, output_size, 2)


@composite
def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    """Mean over an ``output_size`` grid of near-equal bins of (N, C, D, H, W) or
    (C, D, H, W) ``input`` (None keeps that input size)."""
    return _adaptive_avg_pool(input, output_size, 3)


# --------------------------------------------------------------------- interpolation
_LINEAR_DIMS = {"linear": 1, "bilinear": 2, "trilinear": 3}
_MODES = ("nearest", "area", *_LINEAR_DIMS)


def _ratio(scalar: type, size: int, out: int, scale: float | None) -> Any:
    """Input positions per output position, as PyTorch computes it, in the float type
    ``scalar``."""
    if scale is not None and scale > 0:
        return scalar(1.0 / scale)
    return scalar(size) / scalar(out)


def _nearest_table(xp: Any, size: int, out: int, scale: float | None) -> Any:
    """Source of each output position: ``floor(i * ratio)`` in float32, as PyTorch."""
    if out == size:
        return xp.arange(out)[:, None]
    if out == 2 * size:
        return (xp.arange(out) // 2)[:, None]
    ratio = _ratio(xp.float32, size, out, scale)
    source = xp.floor(xp.arange(out, dtype=xp.float32) * ratio).astype(xp.int64)
    return xp.minimum(source, size - 1)[:, None]


def _linear_table(
    xp: Any, size: int, out: int, scale: float | None, align_corners: bool, dtype: Any
) -> tuple[Any, Any]:
    """The two neighbours of each output position and their weights (PyTorch's formulas)."""
    target = xp.arange(out, dtype=dtype)
    if out == size:
        source = target
    elif align_corners:
        ratio = dtype.type(size - 1) / dtype.type(out - 1) if out > 1 else dtype.type(0)
        source = target * ratio
    else:
        ratio = _ratio(dtype.type, size, out, scale)
        source = xp.maximum((target + 0.5) * ratio - 0.5, 0)
    low = xp.minimum(xp.floor(source).astype(xp.int64), size - 1)
    frac = xp.clip(source - low.astype(dtype), 0, 1)
    high = low + (low < size - 1)
    return xp.stack([low, high], axis=1), xp.stack([1 - frac, frac], axis=1)


def _output_sizes(
    input: Tensor, size: Any, scale_factor: Any, recompute: bool | None, dims: int
) -> tuple[list[int], list[float | None]]:
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        sizes = [int(size)] * dims if isinstance(size, int) else [int(n) for n in size]
        if len(sizes) != dims:
            raise ValueError(
                f"Input and output must have the same number of spatial dimensions, but got "
                f"input with spatial dimensions of {spatial} and output size of {size}. Please "
                "provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                "(o1, o2, ...,oK) format."
            )
        return sizes, [None] * dims
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    factors = (
        [float(f) for f in scale_factor]
        if isinstance(scale_factor, Sequence)
        else [float(scale_factor)] * dims
    )
    if len(factors) != dims:
        raise ValueError(
            f"Input and scale_factor must have the same number of spatial dimensions, but got "
            f"input with spatial dimensions of {spatial} and scale_factor of shape "
            f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
            "scale_factor in (s1, s2, ...,sK) format."
        )
    sizes = [math.floor(n * f) for n, f in zip(spatial, factors, strict=True)]
    return sizes, [None] * dims if recompute else factors


def _check_interpolate_sizes(spatial: list[int], sizes: list[int]) -> None:
    if min(spatial) > 0 and min(sizes) > 0:
        return
    labels = "DHW"[3 - len(sizes) :]
    given = ", ".join(f"{a}: {n}" for a, n in zip(labels, spatial, strict=True))
    wanted = ", ".join(f"{a}: {n}" for a, n in zip(labels, sizes, strict=True))
    raise RuntimeError(
        f"Input and output sizes should be greater than 0, but got input ({given}) output "
        f"({wanted})"
    )


def _check_mode(input: Tensor, mode: str, align_corners: bool | None) -> None:
    dims = input.ndim - 2
    if not 1 <= dims <= 3:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
            "the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
            f"nearest-exact (got {mode})"
        )
    if align_corners is not None and mode not in _LINEAR_DIMS:
        raise ValueError(
            "align_corners option can only be set with the interpolating modes: linear | "
            "bilinear | bicubic | trilinear"
        )
    if mode not in _MODES:
        raise NotImplementedError(
            f"interpolate(): mode '{mode}' is not supported (tensorkit has {', '.join(_MODES)})"
        )
    if mode in _LINEAR_DIMS and _LINEAR_DIMS[mode] != dims:
        raise NotImplementedError(
            f"Got {input.ndim}D input, but {mode} mode needs {_LINEAR_DIMS[mode] + 2}D input"
        )


@composite
def interpolate(
    input: Tensor,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """Resize the spatial dims of an ``(N, C, *spatial)`` tensor to ``size`` (or by
    ``scale_factor``): modes nearest, linear/bilinear/trilinear and area."""
    _check_mode(input, mode, align_corners)
    if antialias:
        raise NotImplementedError("interpolate(): antialias=True is not supported by tensorkit")
    dims = input.ndim - 2
    sizes, scales = _output_sizes(input, size, scale_factor, recompute_scale_factor, dims)
    _check_interpolate_sizes(list(input.shape[2:]), sizes)
    if mode == "area":
        return _adaptive_avg_pool(input, sizes, dims)
    if mode != "nearest":
        _check_float(input, f"upsample_{mode}{dims}d")
    xp = input.device.xp
    out = input
    for axis in _spatial_axes(input):
        i = axis - 2
        if mode == "nearest":
            out = resample(out, axis, _nearest_table(xp, input.shape[axis], sizes[i], scales[i]))
        else:
            index, weight = _linear_table(
                xp, input.shape[axis], sizes[i], scales[i], bool(align_corners), input.dtype.np
            )
            out = resample(out, axis, index, weight)
    return out


def _lp_root(out: Tensor, norm_type: float, window: int) -> Tensor:
    return (out.sign() * out.abs().relu() * window) ** (1.0 / norm_type)


@composite
def lp_pool1d(
    input: Tensor, norm_type: float, kernel_size: int, stride: Any = None, ceil_mode: bool = False
) -> Tensor:
    """``(sum over each window of x^p)^(1/p)`` of (N, C, L) or (C, L) ``input``."""
    out = avg_pool1d(input**norm_type, kernel_size, stride, 0, ceil_mode)
    return _lp_root(out, norm_type, kernel_size)


@composite
def lp_pool2d(
    input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False
) -> Tensor:
    """``(sum over each window of x^p)^(1/p)`` of (N, C, H, W) or (C, H, W) ``input``."""
    kh, kw = ntuple(kernel_size, 2, "kernel_size")
    out = avg_pool2d(input**norm_type, kernel_size, stride, 0, ceil_mode)
    return _lp_root(out, norm_type, kh * kw)


@composite
def lp_pool3d(
    input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False
) -> Tensor:
    """``(sum over each window of x^p)^(1/p)`` of (N, C, D, H, W) or (C, D, H, W) ``input``."""
    kd, kh, kw = (kernel_size,) * 3 if isinstance(kernel_size, int) else kernel_size
    out = avg_pool3d(input**norm_type, kernel_size, stride, 0, ceil_mode)
    return _lp_root(out, norm_type, kd * kh * kw)
