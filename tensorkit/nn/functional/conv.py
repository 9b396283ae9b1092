"""Convolutions, unfold/fold and padding for ``tk.nn.functional``, and the array primitives
that they and pooling.py share.

Three primitives, each a pair of linear ops that are each other's gradient (so every order of
derivative comes from the same two forwards):

- ``im2col`` copies every strided, dilated window of the zero-padded input into one matrix laid
  out (C, *kernel, N, *out) (a single copy of a strided view); ``col2im`` adds the windows back
  (one vectorized add per kernel offset). A convolution is im2col and one matmul. With
  ``channels_last`` (what tk.jit's layout pass asks for) the matrix is laid out (N, *out,
  *kernel, C), one row per output position, read from and summed back into an input whose
  memory is (N, *S, C).
- ``resample`` mixes positions along one axis through a table of indices and weights of shape
  (out, taps): the non-constant padding modes, average and adaptive pooling windows and
  interpolation are all such tables. Its gradient is the same op with the transposed table.
- ``constant_pad`` pads (or crops, for negative amounts) with a value; its gradient pads or
  crops by the negated amounts.

On CUDA with cuDNN a convolution goes to ``_cudnn.convolution`` instead, and a transposed one
to ``_cudnn.transposed_convolution`` (see _cudnn.py).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from ..._backend import col2im as host_col2im
from ..._backend.threads import ascontiguousarray, parallel_parts
from ..._ranges import composite
from ...ops._apply import COMMON, OpDef, apply
from ...ops.matmul import matmul
from ...tensor import Tensor
from . import _cudnn

__all__ = [
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "fold",
    "pad",
    "unfold",
]

Pairs = tuple[tuple[int, int], ...]  # (before, after) amounts, one pair per spatial dim


# ----------------------------------------------------------------------------- arguments
def ntuple(value: Any, n: int, name: str) -> tuple[int, ...]:
    """``value`` as ``n`` ints: an int is repeated, a sequence must have ``n`` entries."""
    if isinstance(value, int):
        return (value,) * n
    values = tuple(int(v) for v in value)
    if len(values) == 1:
        return values * n
    if len(values) != n:
        raise RuntimeError(
            f"expected {name} to be a single integer value or a list of {n} values to match "
            f"the convolution dimensions, but got {name}={list(values)}"
        )
    return values


def check_rank(input: Tensor, dims: int, name: str) -> bool:
    """Raise unless ``input`` is unbatched (dims+1 D) or batched (dims+2 D); say which."""
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(
            f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to {name}, but got "
            f"input of size: {list(input.shape)}"
        )
    return input.ndim == dims + 2


def _sizes(sizes: Sequence[int]) -> str:
    return " x ".join(str(n) for n in sizes)


# ------------------------------------------------------------------ im2col and col2im
def _padded(xp: Any, x: Any, padding: Pairs) -> Any:
    """``x`` (N, C, *S) zero-padded by (before, after) per spatial dim; a negative after
    crops."""
    keep = tuple(slice(0, n + min(hi, 0)) for n, (_, hi) in zip(x.shape[2:], padding, strict=True))
    x = x[(slice(None), slice(None), *keep)]
    if all(lo == 0 and hi <= 0 for lo, hi in padding):
        return x
    shape = tuple(n + lo + max(hi, 0) for n, (lo, hi) in zip(x.shape[2:], padding, strict=True))
    out = xp.zeros(x.shape[:2] + shape, x.dtype)
    inner = tuple(slice(lo, lo + n) for n, (lo, _) in zip(x.shape[2:], padding, strict=True))
    out[(slice(None), slice(None), *inner)] = x
    return out


def window_count(size: int, kernel: int, stride: int, dilation: int) -> int:
    """How many windows fit in ``size`` positions (the size already includes padding)."""
    return (size - dilation * (kernel - 1) - 1) // stride + 1


def _windows(xp: Any, x: Any, kernel: tuple, stride: tuple, dilation: tuple) -> Any:
    """The (N, C, *out, *kernel) strided view of every window of ``x``; nothing is copied."""
    spatial = x.shape[2:]
    out = tuple(map(window_count, spatial, kernel, stride, dilation))
    steps = x.strides[2:]
    strides = (
        x.strides[:2]
        + tuple(st * s for st, s in zip(steps, stride, strict=True))
        + tuple(st * d for st, d in zip(steps, dilation, strict=True))
    )
    return xp.lib.stride_tricks.as_strided(x, x.shape[:2] + out + kernel, strides)


def _padded_last(xp: Any, x: Any, padding: Pairs) -> Any:
    """``x`` (N, C, *S) as (N, *S, C), zero-padded like :func:`_padded` (no copy when no
    padding is needed: a view, contiguous when ``x``'s memory is channels-last)."""
    d = x.ndim - 2
    last = x.transpose(0, *range(2, 2 + d), 1)
    keep = tuple(slice(0, n + min(hi, 0)) for n, (_, hi) in zip(x.shape[2:], padding, strict=True))
    last = last[(slice(None), *keep)]
    if all(lo == 0 and hi <= 0 for lo, hi in padding):
        return last
    shape = tuple(
        n + lo + max(hi, 0) for n, (lo, hi) in zip(last.shape[1:-1], padding, strict=True)
    )
    out = xp.zeros((last.shape[0], *shape, last.shape[-1]), x.dtype)
    inner = tuple(slice(lo, lo + n) for n, (lo, _) in zip(last.shape[1:-1], padding, strict=True))
    out[(slice(None), *inner)] = last
    return out


def _rows_of_windows(
    xp: Any, x: Any, kernel: tuple, stride: tuple, padding: Pairs, dilation: tuple
) -> Any:
    """im2col's ``channels_last`` layout: (N, *out, *kernel, C), one copy of a strided view."""
    last = _padded_last(xp, x, padding)
    spatial, steps = last.shape[1:-1], last.strides[1:-1]
    out = tuple(map(window_count, spatial, kernel, stride, dilation))
    strides = (
        last.strides[:1]
        + tuple(st * s for st, s in zip(steps, stride, strict=True))
        + tuple(st * d for st, d in zip(steps, dilation, strict=True))
        + last.strides[-1:]
    )
    shape = (last.shape[0], *out, *kernel, last.shape[-1])
    return ascontiguousarray(xp, xp.lib.stride_tricks.as_strided(last, shape, strides))


def _im2col_forward(
    xp: Any,
    x: Any,
    kernel: tuple,
    stride: tuple,
    padding: Pairs,
    dilation: tuple,
    batch_first: bool,
    channels_last: bool = False,
) -> Any:
    if channels_last:
        return _rows_of_windows(xp, x, kernel, stride, padding, dilation)
    windows = _windows(xp, _padded(xp, x, padding), kernel, stride, dilation)
    d = len(kernel)
    if batch_first:  # (N, C, *kernel, *out)
        order = (0, 1, *range(2 + d, 2 + 2 * d), *range(2, 2 + d))
    else:  # (C, *kernel, N, *out)
        order = (1, *range(2 + d, 2 + 2 * d), 0, *range(2, 2 + d))
    return ascontiguousarray(xp, windows.transpose(order))


def _col2im_forward(
    xp: Any,
    cols: Any,
    size: tuple,
    kernel: tuple,
    stride: tuple,
    padding: Pairs,
    dilation: tuple,
    batch_first: bool,
    channels_last: bool = False,
) -> Any:
    if channels_last:
        return _sum_rows_of_windows(xp, cols, size, kernel, stride, padding, dilation)
    if host_col2im.usable(xp, cols):
        return host_col2im.col2im(cols, size, kernel, stride, padding, dilation, batch_first)
    d = len(kernel)
    out = cols.shape[2 + d :]
    lead = cols.shape[:2] if batch_first else (cols.shape[0], cols.shape[1 + d])
    skip = (slice(None),) * (2 if batch_first else 1)
    full = tuple(n + lo + max(hi, 0) for n, (lo, hi) in zip(size, padding, strict=True))
    # The sums land in an (N, C) buffer, seen in cols' (N, C) or (C, N) order: no transposing
    # copy at the end. Each thread zeroes and sums its own rows of that view.
    buffer = xp.empty((lead if batch_first else lead[::-1]) + full, cols.dtype)
    view = buffer if batch_first else buffer.swapaxes(0, 1)
    offsets = list(itertools.product(*map(range, kernel)))

    def part(rows: slice) -> None:
        sums = view[rows]
        sums[...] = 0
        for offset in offsets:
            target = tuple(
                slice(k * dl, k * dl + s * (m - 1) + 1, s)
                for k, dl, s, m in zip(offset, dilation, stride, out, strict=True)
            )
            window = sums[(slice(None), slice(None), *target)]
            xp.add(window, cols[(*skip, *offset)][rows], out=window)

    parallel_parts(part, view.shape[0], cols.size, cols)
    inner = buffer[
        (
            slice(None),
            slice(None),
            *(slice(lo, lo + n) for n, (lo, _) in zip(size, padding, strict=True)),
        )
    ]
    return ascontiguousarray(xp, inner)


def _sum_rows_of_windows(
    xp: Any, cols: Any, size: tuple, kernel: tuple, stride: tuple, padding: Pairs, dilation: tuple
) -> Any:
    """col2im's ``channels_last`` layout: ``cols`` (N, *out, *kernel, C) summed into an
    (N, C, *size) result whose memory is (N, *size, C)."""
    d = len(kernel)
    if host_col2im.usable(xp, cols):
        summed = host_col2im.col2im_rows(cols, size, kernel, stride, padding, dilation)
        return summed.transpose(0, d + 1, *range(1, d + 1))
    out = cols.shape[1 : 1 + d]
    full = tuple(n + lo + max(hi, 0) for n, (lo, hi) in zip(size, padding, strict=True))
    sums = xp.zeros((cols.shape[0], *full, cols.shape[-1]), cols.dtype)
    # Taps in reverse row-major order: each sum in the order the compiled loop adds them.
    for offset in reversed(list(itertools.product(*map(range, kernel)))):
        target = tuple(
            slice(k * dl, k * dl + s * (m - 1) + 1, s)
            for k, dl, s, m in zip(offset, dilation, stride, out, strict=True)
        )
        window = sums[(slice(None), *target)]
        xp.add(window, cols[(slice(None),) * (1 + d) + offset], out=window)
    inner = sums[
        (slice(None), *(slice(lo, lo + n) for n, (lo, _) in zip(size, padding, strict=True)))
    ]
    return ascontiguousarray(xp, inner).transpose(0, d + 1, *range(1, d + 1))


def _im2col_rule(ctx: Any, g: Tensor) -> Tensor:
    return apply(_COL2IM, g, size=tuple(ctx.input_meta[0][0][2:]), **ctx.attrs)


def _col2im_rule(ctx: Any, g: Tensor) -> Tensor:
    attrs = dict(ctx.attrs)
    del attrs["size"]
    return apply(_IM2COL, g, **attrs)


_IM2COL = OpDef("im2col", _im2col_forward, _im2col_rule)
_COL2IM = OpDef("col2im", _col2im_forward, _col2im_rule)


def im2col(
    x: Tensor,
    kernel: tuple,
    stride: tuple,
    padding: Pairs,
    dilation: tuple,
    batch_first: bool = False,
) -> Tensor:
    """Every window of ``x`` (N, C, *S), as a (C, *kernel, N, *out) tensor (the layout of one
    matmul over the whole batch), or (N, C, *kernel, *out) with ``batch_first``."""
    return apply(
        _IM2COL,
        x,
        kernel=kernel,
        stride=stride,
        padding=padding,
        dilation=dilation,
        batch_first=batch_first,
    )


def col2im(
    cols: Tensor,
    size: tuple,
    kernel: tuple,
    stride: tuple,
    padding: Pairs,
    dilation: tuple,
    batch_first: bool = False,
) -> Tensor:
    """The windows in ``cols`` (laid out as :func:`im2col` makes them) summed back into an
    (N, C, *size) tensor: the adjoint of :func:`im2col`."""
    return apply(
        _COL2IM,
        cols,
        size=size,
        kernel=kernel,
        stride=stride,
        padding=padding,
        dilation=dilation,
        batch_first=batch_first,
    )


# --------------------------------------------------------------------------- resample
def _resample_forward(
    xp: Any, x: Any, axis: int, index: Any, weight: Any, fillers: tuple[bool, ...]
) -> Any:
    """``out[.., i, ..] = sum_t weight[i, t] * x[.., index[i, t], ..]`` along ``axis``;
    index -1 marks an unused tap (a column with any is in ``fillers``)."""
    shape = [1] * x.ndim
    shape[axis] = index.shape[0]
    if x.shape[axis] == 0:  # every tap is unused
        return xp.zeros(x.shape[:axis] + (index.shape[0],) + x.shape[axis + 1 :], x.dtype)
    out = None
    for tap, ragged in enumerate(fillers):
        column = index[:, tap]
        term = xp.take(x, xp.maximum(column, 0) if ragged else column, axis=axis)
        if weight is not None:
            term *= weight[:, tap].reshape(shape)
        if ragged:
            term = xp.where((column >= 0).reshape(shape), term, 0)
        if out is None:
            out = term
        else:
            out += term
    return out


def transpose_table(xp: Any, index: Any, weight: Any, size: int) -> tuple[Any, Any]:
    """The table of the adjoint map: for each of the ``size`` source positions, the output
    positions that read it and with what weight."""
    outs, taps = index.shape
    source = index.reshape(-1)
    used = source >= 0
    target = xp.repeat(xp.arange(outs), taps)[used]
    source = source[used]
    order = xp.argsort(source, kind="stable")
    source, target = source[order], target[order]
    counts = xp.bincount(source, minlength=size)
    width = max(int(counts.max()), 1) if source.size else 1
    rank = xp.arange(source.size) - (xp.cumsum(counts) - counts)[source]
    index_t = xp.full((size, width), -1, index.dtype)
    index_t[source, rank] = target
    if weight is None:
        return index_t, None
    weight_t = xp.zeros((size, width), weight.dtype)
    weight_t[source, rank] = weight.reshape(-1)[used][order]
    return index_t, weight_t


def _resample_rule(ctx: Any, g: Tensor) -> Tensor:
    attrs = ctx.attrs
    size = ctx.input_meta[0][0][attrs["axis"]]
    index, weight = transpose_table(g.device.xp, attrs["index"], attrs["weight"], size)
    return resample(g, attrs["axis"], index, weight)


_RESAMPLE = OpDef("resample", _resample_forward, _resample_rule)


def resample(x: Tensor, axis: int, index: Any, weight: Any = None) -> Tensor:
    """Mix positions of ``x`` along ``axis`` through the (out, taps) ``index`` table (an array
    on x's device, -1 for unused taps) and optional ``weight`` table (x's dtype)."""
    fillers = tuple(bool(v) for v in (index < 0).any(axis=0).tolist())
    return apply(_RESAMPLE, x, axis=axis, index=index, weight=weight, fillers=fillers)


# ----------------------------------------------------------------------- constant pad
def _constant_pad_forward(xp: Any, x: Any, padding: Pairs, value: Any) -> Any:
    """``x`` padded by (before, after) on every dim with ``value``; negative amounts crop."""
    keep = tuple(
        slice(max(-lo, 0), n - max(-hi, 0)) for n, (lo, hi) in zip(x.shape, padding, strict=True)
    )
    x = x[keep]
    shape = tuple(n + max(lo, 0) + max(hi, 0) for n, (lo, hi) in zip(x.shape, padding, strict=True))
    out = xp.full(shape, value, x.dtype)
    inner = tuple(
        slice(max(lo, 0), max(lo, 0) + n) for n, (lo, _) in zip(x.shape, padding, strict=True)
    )
    out[inner] = x
    return out


_CONSTANT_PAD = OpDef(
    "constant_pad",
    _constant_pad_forward,
    lambda ctx, g: apply(
        _CONSTANT_PAD, g, padding=tuple((-lo, -hi) for lo, hi in ctx.attrs["padding"]), value=0
    ),
    node_name="ConstantPadNdBackward0",
)


# ------------------------------------------------------------------------ convolution
def _conv_padding(padding: Any, kernel: tuple, stride: tuple, dilation: tuple) -> Pairs:
    """(before, after) amounts for an int, tuple, 'valid' or 'same' ``padding``."""
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * len(kernel)
        if padding != "same":
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        totals = [d * (k - 1) for k, d in zip(kernel, dilation, strict=True)]
        return tuple((t // 2, t - t // 2) for t in totals)
    amounts = ntuple(padding, len(kernel), "padding")
    if any(p < 0 for p in amounts):
        raise RuntimeError("negative padding is not supported")
    return tuple((p, p) for p in amounts)


def _check_positive(stride: tuple, dilation: tuple, groups: int) -> None:
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")


def _check_weight(input: Tensor, weight: Tensor, groups: int, dims: int, transposed: bool) -> None:
    if weight.ndim < 3:
        raise RuntimeError("weight should have at least three dimensions")
    if weight.ndim != dims + 2:
        raise RuntimeError(
            f"Expected {dims + 2}D weight, but got weight of size {list(weight.shape)}"
        )
    if input.dtype is not weight.dtype:
        raise RuntimeError(
            f"Input type ({input.dtype}) and weight type ({weight.dtype}) should be the same"
        )
    if weight.shape[0] % groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
            f"but got weight of size {list(weight.shape)} instead"
        )
    expected = weight.shape[0] if transposed else weight.shape[1] * groups
    if input.shape[1] != expected:
        given = "transposed=1" if transposed else f"groups={groups}"
        raise RuntimeError(
            f"Given {given}, weight of size {list(weight.shape)}, expected input"
            f"{list(input.shape)} to have {expected} channels, but got {input.shape[1]} channels "
            "instead"
        )


def _check_bias(bias: Tensor | None, weight: Tensor, out_channels: int, transposed: bool) -> None:
    if bias is None or (bias.ndim == 1 and bias.shape[0] == out_channels):
        return
    prefix = "Given transposed=1, weight" if transposed else "Given weight"
    raise RuntimeError(
        f"{prefix} of size {list(weight.shape)}, expected bias to be 1-dimensional with "
        f"{out_channels} elements, but got bias of size {list(bias.shape)} instead"
    )


def _check_kernel_fits(x: Tensor, kernel: tuple, padding: Pairs, dilation: tuple) -> None:
    padded = [n + lo + hi for n, (lo, hi) in zip(x.shape[2:], padding, strict=True)]
    effective = [d * (k - 1) + 1 for k, d in zip(kernel, dilation, strict=True)]
    if any(p < k for p, k in zip(padded, effective, strict=True)):
        raise RuntimeError(
            f"Calculated padded input size per channel: ({_sizes(padded)}). Kernel size: "
            f"({_sizes(effective)}). Kernel size can't be greater than actual input size"
        )


def _bias_batch_first_forward(xp: Any, y: Any, bias: Any, shape: tuple) -> Any:
    """``y`` (channel rows, each N * L long) plus ``bias``, laid out as ``shape`` (N, C, *out):
    the bias add and the transposing copy in one pass."""
    batch, channels, length = shape[0], shape[1], math.prod(shape[2:])
    out = xp.empty(shape, y.dtype)
    rows = y.reshape(channels, batch, length).transpose(1, 0, 2)
    sums = out.reshape(batch, channels, length)
    column = bias.reshape(channels, 1)

    def part(samples: slice) -> None:
        xp.add(rows[samples], column, out=sums[samples])

    parallel_parts(part, batch, y.size, y)
    return out


def _bias_batch_first_rule(ctx: Any, space: Any, saved: tuple, g: Any) -> tuple:
    """Over a namespace (``ops._rule_space``): runs on Tensors and on raw arrays."""
    batch, channels, length = g.shape[0], g.shape[1], math.prod(g.shape[2:])
    grad_y = grad_bias = None
    if ctx.edges[0] is not None:
        rows = space.swapaxes(space.reshape(g, (batch, channels, length)), 0, 1)
        grad_y = space.reshape(space.contiguous(rows), ctx.input_meta[0][0])
    if ctx.edges[1] is not None:
        grad_bias = space.sum(g, (0, *range(2, g.ndim)))
    return grad_y, grad_bias


_BIAS_BATCH_FIRST = OpDef(
    "conv_bias",
    _bias_batch_first_forward,
    None,
    promote=COMMON,
    rule=_bias_batch_first_rule,
)


def _conv(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: Any,
    padding: Any,
    dilation: Any,
    groups: int,
    dims: int,
) -> Tensor:
    name = f"conv{dims}d"
    batched = check_rank(input, dims, name)
    x = input if batched else input.unsqueeze(0)
    stride, dilation = ntuple(stride, dims, "stride"), ntuple(dilation, dims, "dilation")
    _check_positive(stride, dilation, groups)
    _check_weight(x, weight, groups, dims, transposed=False)
    kernel = tuple(weight.shape[2:])
    pads = _conv_padding(padding, kernel, stride, dilation)
    _check_bias(bias, weight, weight.shape[0], transposed=False)
    _check_kernel_fits(x, kernel, pads, dilation)
    if _cudnn.conv_ok(x, pads):
        y = _cudnn.convolution(x, weight, pads, stride, dilation, groups)
        if bias is not None:
            y = y + bias.reshape(weight.shape[0], *(1,) * dims)
        return y if batched else y.squeeze(0)
    cols = im2col(x, kernel, stride, pads, dilation)
    out_size = tuple(cols.shape[-dims:])
    batch, out_channels = x.shape[0], weight.shape[0]
    depth = x.shape[1] // groups * math.prod(kernel)
    cols = cols.reshape(groups, depth, batch * math.prod(out_size))
    y = matmul(weight.reshape(groups, out_channels // groups, depth), cols)
    if bias is None:
        y = y.reshape(out_channels, batch, *out_size).movedim(0, 1).contiguous()
    else:
        y = apply(_BIAS_BATCH_FIRST, y, bias, shape=(batch, out_channels, *out_size))
    return y if batched else y.squeeze(0)


@composite
def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """1-D convolution (cross-correlation) of (N, C, L) or (C, L) ``input``."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1)


@composite
def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """2-D convolution (cross-correlation) of (N, C, H, W) or (C, H, W) ``input``."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2)


@composite
def conv3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    """3-D convolution (cross-correlation) of (N, C, D, H, W) or (C, D, H, W) ``input``."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3)


# -------------------------------------------------------------- transposed convolution
def transposed_size(
    size: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    output_padding: Sequence[int],
    dilation: Sequence[int],
) -> tuple[int, ...]:
    """The spatial output size of a transposed convolution."""
    return tuple(
        (n - 1) * s - 2 * p + d * (k - 1) + op + 1
        for n, k, s, p, op, d in zip(
            size, kernel, stride, padding, output_padding, dilation, strict=True
        )
    )


def _conv_transpose(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    options: tuple,
    groups: int,
    dims: int,
) -> Tensor:
    batched = check_rank(input, dims, f"conv_transpose{dims}d")
    x = input if batched else input.unsqueeze(0)
    stride, padding, output_padding, dilation = (
        ntuple(value, dims, name)
        for value, name in zip(
            options, ("stride", "padding", "output_padding", "dilation"), strict=True
        )
    )
    _check_positive(stride, dilation, groups)
    _check_weight(x, weight, groups, dims, transposed=True)
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(op >= s and op >= d for op, s, d in zip(output_padding, stride, dilation, strict=True)):
        raise RuntimeError(
            f"output padding must be smaller than either stride or dilation, but got "
            f"output_padding={list(output_padding)}, stride={list(stride)}, "
            f"dilation={list(dilation)}"
        )
    kernel = tuple(weight.shape[2:])
    size_in = tuple(x.shape[2:])
    size = transposed_size(size_in, kernel, stride, padding, output_padding, dilation)
    if any(n <= 0 for n in size):
        raise RuntimeError(
            f"Given input size per channel: ({_sizes(size_in)}). Calculated output size per "
            f"channel: ({_sizes(size)}). Output size is too small"
        )
    out_channels = weight.shape[1] * groups
    _check_bias(bias, weight, out_channels, transposed=True)
    if _cudnn.conv_ok(x, tuple((p, p) for p in padding)):
        y = _cudnn.transposed_convolution(x, weight, size, padding, stride, dilation, groups)
        if bias is not None:
            y = y + bias.reshape(out_channels, *(1,) * dims)
        return y if batched else y.squeeze(0)
    batch, in_group = x.shape[0], x.shape[1] // groups
    columns = x.movedim(1, 0).reshape(groups, in_group, batch * math.prod(size_in))
    w = weight.reshape(groups, in_group, weight.shape[1] * math.prod(kernel))
    cols = matmul(w.mT, columns).reshape(out_channels, *kernel, batch, *size_in)
    span = [
        (n - 1) * s + d * (k - 1) + 1
        for n, k, s, d in zip(size_in, kernel, stride, dilation, strict=True)
    ]
    pads = tuple((p, c - p - n) for p, c, n in zip(padding, span, size, strict=True))
    y = col2im(cols, size, kernel, stride, pads, dilation)
    if bias is not None:
        y = y + bias.reshape(out_channels, *(1,) * dims)
    return y if batched else y.squeeze(0)


@composite
def conv_transpose1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """1-D transposed convolution (the gradient of conv1d with respect to its input)."""
    options = (stride, padding, output_padding, dilation)
    return _conv_transpose(input, weight, bias, options, groups, 1)


@composite
def conv_transpose2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """2-D transposed convolution (the gradient of conv2d with respect to its input)."""
    options = (stride, padding, output_padding, dilation)
    return _conv_transpose(input, weight, bias, options, groups, 2)


@composite
def conv_transpose3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    """3-D transposed convolution (the gradient of conv3d with respect to its input)."""
    options = (stride, padding, output_padding, dilation)
    return _conv_transpose(input, weight, bias, options, groups, 3)


# ------------------------------------------------------------------------ unfold, fold
def _fold_pair(value: Any, name: str) -> tuple[int, int]:
    if isinstance(value, int):
        return (value, value)
    values = tuple(int(v) for v in value)
    if len(values) != 2:
        raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(values)}")
    return values


def _fold_options(
    kernel_size: Any, dilation: Any, padding: Any, stride: Any
) -> tuple[tuple[int, int], ...]:
    kernel, dilation, padding, stride = (
        _fold_pair(v, n)
        for v, n in (
            (kernel_size, "kernel_size"),
            (dilation, "dilation"),
            (padding, "padding"),
            (stride, "stride"),
        )
    )
    if min(kernel) <= 0 or min(stride) <= 0 or min(dilation) <= 0:
        raise RuntimeError(
            f"kernel size, stride and dilation should be greater than zero, but got "
            f"kernel_size={kernel}, stride={stride}, dilation={dilation}"
        )
    if min(padding) < 0:
        raise RuntimeError(f"padding should be non-negative, but got padding={padding}")
    return kernel, dilation, padding, stride


def _blocks(size: tuple, kernel: tuple, dilation: tuple, padding: tuple, stride: tuple) -> tuple:
    blocks = tuple(
        map(
            window_count,
            [n + 2 * p for n, p in zip(size, padding, strict=True)],
            kernel,
            stride,
            dilation,
        )
    )
    if min(blocks) < 1:
        raise RuntimeError(
            f"Given input with spatial size {size}, kernel_size={kernel}, dilation={dilation}, "
            f"padding={padding}, calculated shape of the array of sliding blocks as {blocks}, "
            "but its components must be at least one."
        )
    return blocks


def unfold(
    input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1
) -> Tensor:
    """The sliding local blocks of an (N, C, H, W) batch as columns: (N, C * kh * kw, L)."""
    if input.ndim not in (3, 4) or 0 in input.shape[1:]:
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
            f"dimensions for input, but got: {list(input.shape)}"
        )
    x = input if input.ndim == 4 else input.unsqueeze(0)
    kernel, dilation, padding, stride = _fold_options(kernel_size, dilation, padding, stride)
    blocks = _blocks(tuple(x.shape[2:]), kernel, dilation, padding, stride)
    cols = im2col(x, kernel, stride, tuple((p, p) for p in padding), dilation, batch_first=True)
    out = cols.reshape(x.shape[0], x.shape[1] * math.prod(kernel), math.prod(blocks))
    return out if input.ndim == 4 else out.squeeze(0)


def fold(
    input: Tensor,
    output_size: Any,
    kernel_size: Any,
    dilation: Any = 1,
    padding: Any = 0,
    stride: Any = 1,
) -> Tensor:
    """Sum (N, C * kh * kw, L) columns of blocks back into an ``(N, C, *output_size)`` tensor."""
    if input.ndim not in (2, 3) or 0 in input.shape[1:]:
        raise RuntimeError(
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
            f"non-zero dimensions for input, but got: {list(input.shape)}"
        )
    x = input if input.ndim == 3 else input.unsqueeze(0)
    size = _fold_pair(output_size, "output_size")
    kernel, dilation, padding, stride = _fold_options(kernel_size, dilation, padding, stride)
    batch, depth, count = x.shape
    if depth % math.prod(kernel):
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
            f"but got input.size(1)={depth} and kernel_size={kernel}."
        )
    blocks = _blocks(size, kernel, dilation, padding, stride)
    if math.prod(blocks) != count:
        raise RuntimeError(
            f"Given output_size={size}, kernel_size={kernel}, dilation={dilation}, "
            f"padding={padding}, stride={stride}, expected size of input's dimension 2 to match "
            f"the calculated number of sliding blocks {blocks[0]} * {blocks[1]} = "
            f"{math.prod(blocks)}, but got input.size(2)={count}."
        )
    channels = depth // math.prod(kernel)
    cols = x.reshape(batch, channels, *kernel, *blocks)
    pads = tuple((p, p) for p in padding)
    out = col2im(cols, size, kernel, stride, pads, dilation, batch_first=True)
    return out if input.ndim == 3 else out.squeeze(0)


# ------------------------------------------------------------------------------ pad
def _index_map(xp: Any, mode: str, size: int, lo: int, hi: int) -> Any:
    """For each output position along a padded axis, the input position it copies."""
    if mode == "circular":  # crop first, then wrap around what is left, as PyTorch does
        kept = size + min(lo, 0) + min(hi, 0)
        return max(-lo, 0) + xp.arange(-max(lo, 0), kept + max(hi, 0)) % kept
    raw = xp.arange(-lo, size + hi)
    if mode == "reflect":
        return size - 1 - xp.abs(size - 1 - xp.abs(raw))
    return xp.clip(raw, 0, size - 1)


def _check_mode_padding(mode: str, shape: tuple, axis: int, lo: int, hi: int) -> None:
    size = shape[axis]
    out = size + lo + hi
    if mode == "reflect" and max(lo, hi) >= size:
        raise RuntimeError(
            f"Argument #4: Padding size should be less than the corresponding input dimension, "
            f"but got: padding ({lo}, {hi}) at dimension {axis} of input {list(shape)}"
        )
    if mode == "circular":
        if max(lo, hi) > size + min(lo, 0) + min(hi, 0):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if out < 0 or (out and size + min(lo, 0) + min(hi, 0) <= 0):
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
    elif out < 1:
        label = "WHD"[len(shape) - 1 - axis]
        raise RuntimeError(
            f"input ({label}: {size}) is too small. Calculated output {label}: {out}"
        )


def _check_mode_rank(input: Tensor, dims: int, mode: str) -> None:
    if input.ndim not in (dims + 1, dims + 2) or dims > 3:
        raise NotImplementedError(
            f"Padding size {2 * dims} is not supported for {input.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
        )
    if mode != "circular" and 0 in input.shape[input.ndim - dims - 1 :]:
        raise RuntimeError(
            f"Expected {dims + 1}D or {dims + 2}D (batch mode) tensor with possibly 0 batch size "
            f"and other non-zero dimensions for input, but got: {list(input.shape)}"
        )


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant", value: Any = None) -> Tensor:
    """Pad the last ``len(pad) // 2`` dims, ``pad`` listing (before, after) from the last dim
    backwards; ``mode`` is constant (negative amounts crop), reflect, replicate or circular."""
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    dims = len(pad) // 2
    if dims > input.ndim:
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but "
            f"got padding length {len(pad)} and input of dimension {input.ndim}"
        )
    pairs = [(int(pad[2 * i]), int(pad[2 * i + 1])) for i in range(dims)]
    if mode == "constant":
        return _constant_pad(input, pairs, 0 if value is None else value)
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    _check_mode_rank(input, dims, mode)
    xp = input.device.xp
    out = input
    for i, (lo, hi) in enumerate(pairs):
        axis = input.ndim - 1 - i
        _check_mode_padding(mode, tuple(input.shape), axis, lo, hi)
        index = _index_map(xp, mode, input.shape[axis], lo, hi)
        out = resample(out, axis, index[:, None])
    return out


def _constant_pad(input: Tensor, pairs: list[tuple[int, int]], value: Any) -> Tensor:
    padding = ((0, 0),) * (input.ndim - len(pairs)) + tuple(reversed(pairs))
    for axis, (n, (lo, hi)) in enumerate(zip(input.shape, padding, strict=True)):
        if n + lo + hi < 0:
            raise RuntimeError(
                f"The input size {n}, plus negative padding {lo} and {hi} resulted in a negative "
                f"output size, which is invalid. Check dimension {axis} of your input."
            )
    return apply(_CONSTANT_PAD, input, padding=padding, value=value)
