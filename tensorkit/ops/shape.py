"""Shape ops. Views (reshape of a contiguous tensor, transpose, expand, narrow, ...) share
storage and version counter with their input; the others (cat, repeat, flip, ...) copy."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from .. import _dtype
from ..tensor import Size, Tensor, normalize_dim
from ._apply import COMMON, OpDef, apply

__all__ = [
    "reshape",
    "view",
    "view_as",
    "reshape_as",
    "flatten",
    "unflatten",
    "permute",
    "transpose",
    "swapaxes",
    "swapdims",
    "t",
    "matrix_transpose",
    "movedim",
    "moveaxis",
    "squeeze",
    "unsqueeze",
    "expand",
    "expand_as",
    "broadcast_to",
    "broadcast_shapes",
    "broadcast_tensors",
    "narrow",
    "diagonal",
    "split",
    "chunk",
    "tensor_split",
    "unbind",
    "cat",
    "concat",
    "concatenate",
    "stack",
    "hstack",
    "vstack",
    "repeat",
    "tile",
    "repeat_interleave",
    "flip",
    "fliplr",
    "flipud",
    "roll",
    "rot90",
    "meshgrid",
    "tril",
    "triu",
    "diag",
    "diag_embed",
    "atleast_1d",
    "atleast_2d",
    "ravel",
    "select",
    "hsplit",
    "vsplit",
    "dsplit",
    "split_with_sizes",
    "diagflat",
    "narrow_copy",
]


def _dims(dims: Any, ndim: int) -> tuple[int, ...]:
    if isinstance(dims, int):
        dims = (dims,)
    return tuple(normalize_dim(d, ndim) for d in dims)


def _shape_arg(shape: Sequence) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = shape[0]
    return tuple(int(n) for n in shape)


def infer_shape(shape: tuple, numel: int, source_shape: tuple) -> tuple[int, ...]:
    """Resolve one ``-1`` in ``shape`` and check the element count."""
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(n for n in shape if n != -1)
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if n == -1 else n for n in shape)
    if any(n < 0 for n in shape):
        raise RuntimeError(f"invalid shape dimension {min(shape)} in {list(shape)}")
    if math.prod(shape) != numel:
        raise RuntimeError(
            f"shape '{list(shape)}' is invalid for input of size {numel} (input shape "
            f"{list(source_shape)})"
        )
    return shape


# ------------------------------------------------------------------------------- views
def _reshape_rule(ctx: Any, space: Any, saved: tuple, g: Any) -> Any:
    """Over a namespace (``ops._rule_space``): runs on Tensors and on raw arrays."""
    return space.reshape(g, ctx.input_meta[0][0])


_VIEW = OpDef("view", lambda xp, x, shape: x.reshape(shape), None, view=True, rule=_reshape_rule)
_RESHAPE_COPY = OpDef(
    "reshape",
    lambda xp, x, shape: xp.ascontiguousarray(x).reshape(shape),
    None,
    rule=_reshape_rule,
)


def _can_view(x: Any, shape: tuple) -> bool:
    if x.flags.c_contiguous:
        return True
    try:  # NumPy >= 2.1 says whether the new shape needs a copy
        x.reshape(shape, copy=False)
    except (TypeError, ValueError, AttributeError):
        return False
    return True


def reshape(input: Tensor, *shape: Any) -> Tensor:
    """Same data, new shape: a view when the layout allows it, else a copy."""
    target = infer_shape(_shape_arg(shape), input._data.size, input._data.shape)
    if target == input._data.shape:
        return apply(_VIEW, input, shape=target)
    if _can_view(input._data, target):
        return apply(_VIEW, input, shape=target)
    return apply(_RESHAPE_COPY, input, shape=target)


def view(input: Tensor, *shape: Any) -> Tensor:
    """Same data, new shape, always a view; raises when the strides do not allow one."""
    if len(shape) == 1 and isinstance(shape[0], _dtype.dtype):
        return _view_dtype(input, shape[0])
    target = infer_shape(_shape_arg(shape), input._data.size, input._data.shape)
    if not _can_view(input._data, target):
        raise RuntimeError(
            f"view size is not compatible with input tensor's size and stride (input shape "
            f"{list(input.shape)}, strides {list(input.stride())}, target {list(target)}). "
            "Use .reshape(...) instead."
        )
    return apply(_VIEW, input, shape=target)


# PyTorch's names of scalar types, for view(dtype)'s error messages.


def _view_dtype_forward(xp: Any, x: Any, dtype: _dtype.dtype) -> Any:
    return x.view(dtype.np)


# Not differentiable (as in PyTorch): the bytes are reinterpreted, so no gradient relates them.
_VIEW_DTYPE = OpDef("view_dtype", _view_dtype_forward, None, view=True)


def _view_dtype(input: Tensor, dtype: _dtype.dtype) -> Tensor:
    """``x.view(dtype)``: the same bytes read as ``dtype``; with another element size the last
    dimension shrinks or grows by the ratio of the sizes."""
    old, new = input.dtype, dtype
    if old.itemsize != new.itemsize:
        names = f"{_dtype.SCALAR_TYPE_NAMES[old.name]} as {_dtype.SCALAR_TYPE_NAMES[new.name]}"
        what = f"to view {names} (different element sizes)"
        if input.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        if input.shape[-1] != 1 and input.stride(-1) != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {input.stride(-1)}")
        ratio = new.itemsize // old.itemsize
        if ratio > 1 and input.shape[-1] % ratio:
            raise RuntimeError(
                f"self.size(-1) must be divisible by {ratio} {what}, but got {input.shape[-1]}"
            )
    return apply(_VIEW_DTYPE, input, dtype=new)


def view_as(input: Tensor, other: Tensor) -> Tensor:
    return view(input, other.shape)


def reshape_as(input: Tensor, other: Tensor) -> Tensor:
    return reshape(input, other.shape)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    ndim = max(input.ndim, 1)
    start, end = normalize_dim(start_dim, ndim), normalize_dim(end_dim, ndim)
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = tuple(input.shape) or (1,)
    merged = math.prod(shape[start : end + 1])
    return reshape(input, shape[:start] + (merged,) + shape[end + 1 :])


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Split dim ``dim`` into ``sizes`` (one of which may be -1)."""
    d = normalize_dim(dim, input.ndim)
    shape = tuple(input.shape)
    sizes = tuple(sizes)
    if -1 not in sizes and math.prod(sizes) != shape[d]:
        raise RuntimeError(
            f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {d} "
            f"({shape[d]}) in the input tensor"
        )
    sizes = infer_shape(sizes, shape[d], (shape[d],))
    return reshape(input, shape[:d] + sizes + shape[d + 1 :])


def _permute_rule(ctx: Any, space: Any, saved: tuple, g: Any) -> Any:
    """Over a namespace (``ops._rule_space``): runs on Tensors and on raw arrays."""
    dims = ctx.attrs["axes"]
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d] = i
    return space.permute(g, tuple(inverse))


_PERMUTE = OpDef(
    "permute", lambda xp, x, axes: x.transpose(axes), None, view=True, rule=_permute_rule
)


def permute(input: Tensor, *dims: Any) -> Tensor:
    """A view with the dims reordered: output dim i is input dim ``dims[i]``."""
    order = _shape_arg(dims)
    if len(order) != input.ndim:
        raise RuntimeError(
            f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {input.ndim} is "
            f"not equal to len(dims) = {len(order)}"
        )
    axes = _dims(order, input.ndim)
    if len(set(axes)) != len(axes):
        raise RuntimeError(f"permute(): duplicate dims are not allowed (dims {list(order)})")
    return apply(_PERMUTE, input, axes=axes)


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    ndim = input.ndim
    if ndim == 0:
        normalize_dim(dim0, 0), normalize_dim(dim1, 0)
        return apply(_PERMUTE, input, axes=())
    a, b = normalize_dim(dim0, ndim), normalize_dim(dim1, ndim)
    axes = list(range(ndim))
    axes[a], axes[b] = axes[b], axes[a]
    return apply(_PERMUTE, input, axes=tuple(axes))


swapaxes = swapdims = transpose


def t(input: Tensor) -> Tensor:
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return transpose(input, 0, 1) if input.ndim == 2 else input.view(input.shape)


def reversed_dims(input: Tensor) -> Tensor:
    """``input.T``: a view with every dim reversed (a matrix's transpose)."""
    return apply(_PERMUTE, input, axes=tuple(range(input.ndim - 1, -1, -1)))


def matrix_transpose(input: Tensor) -> Tensor:
    if input.ndim < 2:
        raise RuntimeError(
            f"tensor.mT is only supported on matrices or batches of matrices. Got {input.ndim}-D "
            "tensor."
        )
    return transpose(input, -2, -1)


def movedim(input: Tensor, source: Any, destination: Any) -> Tensor:
    src = _dims(source, input.ndim)
    dst = _dims(destination, input.ndim)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
            f"contain the same number of dims as destination ({list(dst)} dims)"
        )
    order = [d for d in range(input.ndim) if d not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return apply(_PERMUTE, input, axes=tuple(order))


moveaxis = movedim


def squeeze(input: Tensor, dim: Any = None) -> Tensor:
    """Remove dims of size 1 (all, or those named in ``dim`` that have size 1)."""
    shape = tuple(input.shape)
    if dim is None:
        kept = tuple(n for n in shape if n != 1)
    else:
        dims = _dims(dim, max(input.ndim, 1)) if input.ndim else ()
        kept = tuple(n for i, n in enumerate(shape) if not (i in dims and n == 1))
    return apply(_VIEW, input, shape=kept)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    d = normalize_dim(dim, input.ndim + 1)
    shape = tuple(input.shape)
    return apply(_VIEW, input, shape=shape[:d] + (1,) + shape[d:])


def _expand_rule(ctx: Any, g: Tensor) -> Tensor:
    from .reduction import sum_to_shape

    return sum_to_shape(g, ctx.input_meta[0][0])


_EXPAND = OpDef("expand", lambda xp, x, shape: xp.broadcast_to(x, shape), _expand_rule, view=True)


def expand(input: Tensor, *sizes: Any) -> Tensor:
    """A broadcast view with the given sizes (-1 keeps a dim); no memory is copied."""
    return apply(_EXPAND, input, shape=expanded_shape(tuple(input.shape), _shape_arg(sizes)))


def expanded_shape(shape: tuple, target: tuple) -> tuple:
    """The shape ``expand(target)`` gives a tensor of ``shape`` (-1 keeps a dim), or
    PyTorch's error naming both shapes where it cannot."""
    if len(target) < len(shape):
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(target)}) must be greater or equal to "
            f"the number of dimensions in the tensor ({len(shape)})"
        )
    padded = (1,) * (len(target) - len(shape)) + shape
    resolved = []
    for i, (want, have) in enumerate(zip(target, padded, strict=True)):
        if want == -1:
            if i < len(target) - len(shape):
                raise RuntimeError(
                    f"The expanded size of the tensor (-1) isn't allowed in a leading, "
                    f"non-existing dimension {i}"
                )
            want = have
        if have != 1 and want != have:
            raise RuntimeError(
                f"The expanded size of the tensor ({want}) must match the existing size ({have}) "
                f"at non-singleton dimension {i}.  Target sizes: {list(target)}.  Tensor sizes: "
                f"{list(shape)}"
            )
        resolved.append(want)
    return tuple(resolved)


def expand_as(input: Tensor, other: Tensor) -> Tensor:
    return expand(input, other.shape)


def broadcast_to(input: Tensor, shape: Sequence[int]) -> Tensor:
    return expand(input, tuple(shape))


def broadcast_shapes(*shapes: Sequence[int]) -> Size:
    """The shape that all ``shapes`` broadcast to; raises naming the clashing sizes."""
    ndim = max((len(s) for s in shapes), default=0)
    result = [1] * ndim
    for shape in shapes:
        for i, n in enumerate(shape):
            axis = ndim - len(shape) + i
            if n != 1:
                if result[axis] not in (1, n):
                    raise RuntimeError(
                        f"Shape mismatch: objects cannot be broadcast to a single shape: "
                        f"size {result[axis]} vs size {n} at dimension {axis} "
                        f"(shapes {[list(s) for s in shapes]})"
                    )
                result[axis] = n
    return Size(result)


def broadcast_tensors(*tensors: Tensor) -> tuple[Tensor, ...]:
    shape = broadcast_shapes(*(t.shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


def _narrow_rule(ctx: Any, g: Tensor) -> Tensor:
    from .indexing import slice_backward

    return slice_backward(g, ctx.input_meta[0][0], ctx.attrs["index"])


_SLICE = OpDef("slice", lambda xp, x, index: x[index], _narrow_rule, view=True)


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """The view ``input[..., start:start + length, ...]`` along ``dim``."""
    d = normalize_dim(dim, input.ndim)
    size = input.shape[d]
    start, length = int(start), int(length)
    if not -size <= start <= size:
        raise IndexError(
            f"start out of range (expected to be in range of [{-size}, {size}], but got {start})"
        )
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if start < 0:
        start += size
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    index = (slice(None),) * d + (slice(start, start + length),)
    return apply(_SLICE, input, index=index)


def _diagonal_forward(xp: Any, x: Any, offset: int, dim1: int, dim2: int) -> Any:
    out = xp.diagonal(x, offset, dim1, dim2)
    if not getattr(out.flags, "writeable", True) and x.flags.writeable:
        out.flags.writeable = True  # NumPy's diagonals are read-only; PyTorch's can be written
    return out


def _diagonal_rule(ctx: Any, g: Tensor) -> Tensor:
    return apply(_DIAGONAL_BACKWARD, g, shape=ctx.input_meta[0][0], **ctx.attrs)


def _diagonal_backward_forward(
    xp: Any, g: Any, shape: tuple, offset: int, dim1: int, dim2: int
) -> Any:
    """Zeros of ``shape`` with ``g`` written on the diagonal that ``diagonal`` reads."""
    out = xp.zeros(shape, g.dtype)
    target = xp.moveaxis(out, (dim1, dim2), (-2, -1))
    n = g.shape[-1]
    rows = xp.arange(n) + max(-offset, 0)
    cols = xp.arange(n) + max(offset, 0)
    target[..., rows, cols] = g
    return out


_DIAGONAL = OpDef("diagonal", _diagonal_forward, _diagonal_rule, view=True)
_DIAGONAL_BACKWARD = OpDef(
    "diagonal_backward",
    _diagonal_backward_forward,
    lambda ctx, gg: diagonal(gg, ctx.attrs["offset"], ctx.attrs["dim1"], ctx.attrs["dim2"]),
)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    a, b = normalize_dim(dim1, input.ndim), normalize_dim(dim2, input.ndim)
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return apply(_DIAGONAL, input, offset=offset, dim1=a, dim2=b)


_diagonal_view = diagonal  # ``diag`` has a parameter named ``diagonal``


# --------------------------------------------------------------- multi-output views
def _split_rule(ctx: Any, *grads: Tensor) -> Tensor:
    return cat(list(grads), ctx.attrs["dim"])


def _split_forward(xp: Any, x: Any, dim: int, sizes: tuple) -> tuple:
    pieces = []
    start = 0
    for n in sizes:
        index = (slice(None),) * dim + (slice(start, start + n),)
        pieces.append(x[index])
        start += n
    return tuple(pieces)


_SPLIT = OpDef("split", _split_forward, _split_rule, view=True, outputs=-1)


def split(tensor: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Pieces of ``split_size`` along ``dim`` (the last may be smaller), or of the given sizes."""
    d = normalize_dim(dim, tensor.ndim)
    size = tensor.shape[d]
    if isinstance(split_size_or_sections, int):
        sizes = _split_sizes(size, split_size_or_sections)
    else:
        sizes = tuple(int(n) for n in split_size_or_sections)
        if any(n < 0 for n in sizes):
            raise RuntimeError(
                f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                f"split_sizes={list(sizes)}"
            )
        if sum(sizes) != size:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's "
                f"size at dimension {d}), but got split_sizes={list(sizes)}"
            )
    return apply(_SPLIT, tensor, dim=d, sizes=sizes)


def _split_sizes(size: int, step: int) -> tuple[int, ...]:
    if step < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={step}")
    if step == 0:
        if size:
            raise RuntimeError(
                f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}"
            )
        return (0,)
    return tuple(min(step, size - start) for start in range(0, size, step)) or (0,)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """Up to ``chunks`` pieces of ``ceil(size / chunks)``; a size-0 dim gives ``chunks``
    empty pieces, as in PyTorch."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = normalize_dim(dim, input.ndim)
    step = math.ceil(input.shape[d] / chunks)
    return split(input, step if step else [0] * chunks, d)


def tensor_split(input: Tensor, indices_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """``n`` near-equal sections, or the pieces ``input[i:j]`` between the given indices
    (Python slice rules: negative indices count from the end, pieces may be empty)."""
    d = normalize_dim(dim, input.ndim)
    size = input.shape[d]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        return split(input, _section_sizes(size, indices_or_sections), d)
    bounds = [0, *(slice(int(i)).indices(size)[1] for i in indices_or_sections), size]
    pairs = list(itertools.pairwise(bounds))
    if all(start <= stop for start, stop in pairs):
        return split(input, [stop - start for start, stop in pairs], d)
    # Decreasing indices make overlapping pieces: slice each one on its own.
    return tuple(narrow(input, d, start, max(stop - start, 0)) for start, stop in pairs)


def _section_sizes(size: int, sections: int) -> tuple[int, ...]:
    if sections <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
    base, extra = divmod(size, sections)
    return tuple(base + (1 if i < extra else 0) for i in range(sections))


def _unbind_rule(ctx: Any, *grads: Tensor) -> Tensor:
    return stack(list(grads), ctx.attrs["dim"])


_UNBIND = OpDef(
    "unbind",
    lambda xp, x, dim: tuple(xp.moveaxis(x, dim, 0)),
    _unbind_rule,
    view=True,
    outputs=-1,
)


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    d = normalize_dim(dim, input.ndim)
    return apply(_UNBIND, input, dim=d)


# ------------------------------------------------------------------------------ copies
def _cat_rule(ctx: Any, g: Tensor) -> tuple:
    sizes = ctx.attrs["sizes"]
    pieces = iter(split(g, [n for n in sizes if n is not None], ctx.attrs["axis"]))
    return tuple(g.new_zeros((0,)) if n is None else next(pieces) for n in sizes)


def _cat_forward(xp: Any, *arrays: Any, axis: int, sizes: tuple) -> Any:
    return xp.concatenate([a for a, n in zip(arrays, sizes, strict=True) if n is not None], axis)


# ``sizes``: each input's size along the dim, or None for a skipped 1-D empty tensor.
_CAT = OpDef("cat", _cat_forward, _cat_rule, promote=COMMON)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join tensors along an existing dim (1-D empty tensors are skipped, as in PyTorch)."""
    tensors = list(tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"cat(): expected a sequence of Tensors, but element {i} is {type(t).__name__}"
            )
        if t.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated")
    reference = next((t for t in tensors if tuple(t.shape) != (0,)), tensors[0])
    d = normalize_dim(dim, reference.ndim)
    sizes = []
    for i, t in enumerate(tensors):
        if tuple(t.shape) == (0,) and reference.ndim != 1:
            sizes.append(None)  # skipped, but kept as an input: it gets an (empty) gradient
            continue
        _check_cat_shape(reference, t, d, i)
        sizes.append(t.shape[d])
    return apply(_CAT, *tensors, axis=d, sizes=tuple(sizes))


def _check_cat_shape(reference: Tensor, t: Tensor, d: int, position: int) -> None:
    if t.ndim != reference.ndim:
        raise RuntimeError(
            f"Tensors must have same number of dimensions: got {reference.ndim} and {t.ndim}"
        )
    for axis in range(reference.ndim):
        if axis != d and t.shape[axis] != reference.shape[axis]:
            raise RuntimeError(
                f"Sizes of tensors must match except in dimension {d}. Expected size "
                f"{reference.shape[axis]} but got size {t.shape[axis]} for tensor number "
                f"{position} in the list."
            )


concat = concatenate = cat


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Join same-shaped tensors along a new dim."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    shape = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 "
                f"and {list(t.shape)} at entry {i}"
            )
    d = normalize_dim(dim, len(shape) + 1)
    return cat([unsqueeze(t, d) for t in tensors], d)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along dim 1 (dim 0 for vectors); 0-d tensors count as vectors."""
    vectors = [atleast_1d(t) for t in tensors]
    return cat(vectors, 0 if vectors and vectors[0].ndim == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Join along dim 0, vectors and 0-d tensors becoming rows."""
    return cat([atleast_2d(t) for t in tensors], 0)


def _tile_rule(ctx: Any, g: Tensor) -> Tensor:
    reps = ctx.attrs["reps"]
    shape = ctx.input_meta[0][0]
    padded = (1,) * (len(reps) - len(shape)) + tuple(shape)
    split_shape = []
    for r, n in zip(reps, padded, strict=True):
        split_shape += [r, n]
    from .reduction import sum as reduce_sum

    summed = reduce_sum(reshape(g, split_shape), dim=tuple(range(0, 2 * len(reps), 2)))
    return reshape(summed, shape)


_TILE = OpDef("tile", lambda xp, x, reps: xp.tile(x, reps), _tile_rule)


def repeat(input: Tensor, *sizes: Any) -> Tensor:
    """Tile the tensor ``sizes[i]`` times along each dim (PyTorch's repeat, NumPy's tile)."""
    reps = _shape_arg(sizes)
    if len(reps) < input.ndim:
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions "
            f"of tensor (repeat dims {list(reps)}, tensor shape {list(input.shape)})"
        )
    return apply(_TILE, input, reps=reps)


def tile(input: Tensor, *dims: Any) -> Tensor:
    """Repeat the tensor ``dims[i]`` times along each dim (missing leading counts are 1);
    ``tile(x, (2, 1))`` or, as a method, ``x.tile(2, 1)``."""
    reps = _shape_arg(dims)
    reps = (1,) * (input.ndim - len(reps)) + reps
    return apply(_TILE, input, reps=reps)


def _repeat_interleave_rule(ctx: Any, g: Tensor) -> Tensor:
    dim, repeats = ctx.attrs["axis"], ctx.attrs["repeats"]
    shape = ctx.input_meta[0][0]
    from .reduction import sum as reduce_sum

    if isinstance(repeats, int):
        expanded = reshape(g, shape[:dim] + (shape[dim], repeats) + shape[dim + 1 :])
        return reduce_sum(expanded, dim=dim + 1)
    pieces = split(g, [int(r) for r in repeats], dim)
    return cat([reduce_sum(p, dim=dim, keepdim=True) for p in pieces], dim)


_REPEAT_INTERLEAVE = OpDef(
    "repeat_interleave",
    lambda xp, x, repeats, axis: xp.repeat(x, repeats, axis=axis),
    _repeat_interleave_rule,
)


def repeat_interleave(input: Tensor, repeats: Any = None, dim: int | None = None) -> Tensor:
    """Repeat each element ``repeats`` times (an int, or one count per element) along
    ``dim``; without ``dim``, on the flattened tensor. ``repeat_interleave(counts)`` alone
    repeats each index ``i`` of the 1-D integer tensor ``counts`` ``counts[i]`` times."""
    if repeats is None:
        return _repeat_indices(input)
    source = reshape(input, (-1,)) if dim is None else input
    d = normalize_dim(0 if dim is None else dim, source.ndim)
    if isinstance(repeats, Tensor):
        repeats = int(repeats.item()) if repeats.numel() == 1 else tuple(repeats.tolist())
    if not isinstance(repeats, int) and len(repeats) != source.shape[d]:
        raise RuntimeError(
            f"repeats must have the same size as input along dim, but got repeats.size(0) = "
            f"{len(repeats)} and input.size({d}) = {source.shape[d]}"
        )
    return apply(_REPEAT_INTERLEAVE, source, repeats=repeats, axis=d)


def _repeat_indices(counts: Tensor) -> Tensor:
    """``repeat_interleave(arange(len(counts)), counts)`` in ``counts``' dtype."""
    from .creation import arange

    if counts.ndim != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if counts._data.dtype.kind not in "iu":
        raise _dtype.no_kernel("repeat_interleave_cpu", counts._data.dtype)
    if bool((counts < 0).any()):
        raise RuntimeError("repeats can not be negative")
    indices = arange(counts.shape[0], dtype=counts.dtype, device=counts.device)
    return repeat_interleave(indices, counts)


_FLIP = OpDef(
    "flip", lambda xp, x, axes: xp.flip(x, axes).copy(), lambda ctx, g: flip(g, ctx.attrs["axes"])
)


def flip(input: Tensor, *args: Any, dims: Any = None) -> Tensor:
    """Reverse the order along ``dims``: ``flip(x, (0, 1))``, ``flip(x, dims=(0, 1))`` or, as a
    method, ``x.flip(0, 1)``."""
    if dims is None:
        if not args:
            raise TypeError('flip() missing 1 required positional arguments: "dims"')
        dims = args[0] if len(args) == 1 else args
    axes = _dims(dims, input.ndim)
    for d in axes:
        if axes.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    return apply(_FLIP, input, axes=axes)


def fliplr(input: Tensor) -> Tensor:
    return flip(input, 1)


def flipud(input: Tensor) -> Tensor:
    return flip(input, 0)


_ROLL = OpDef(
    "roll",
    lambda xp, x, shifts, axes: xp.roll(x, shifts, axes),
    lambda ctx, g: apply(_ROLL, g, shifts=_negate(ctx.attrs["shifts"]), axes=ctx.attrs["axes"]),
)


def _negate(shifts: Any) -> Any:
    return -shifts if isinstance(shifts, int) else tuple(-s for s in shifts)


def roll(input: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    if dims is None:
        flat = reshape(input, (-1,))
        return reshape(apply(_ROLL, flat, shifts=shifts, axes=0), input.shape)
    axes = _dims(dims, input.ndim)
    if isinstance(shifts, int):
        shifts = (shifts,)
    if len(shifts) != len(axes):
        raise RuntimeError(
            f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(axes)}"
        )
    return apply(_ROLL, input, shifts=tuple(shifts), axes=axes)


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times, from the first toward the second of ``dims``."""
    from .conversion import clone

    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    first, second = (normalize_dim(d, input.ndim) for d in dims)
    if first == second:
        raise RuntimeError(
            f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}"
        )
    k %= 4
    if k == 1:
        return transpose(flip(input, second), first, second)
    if k == 2:
        return flip(input, (first, second))
    if k == 3:
        return transpose(flip(input, first), first, second)
    return clone(input)


def meshgrid(*tensors: Any, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids from 1-D tensors: ``indexing='ij'`` (the default) gives output ``i``
    the shape of all inputs' sizes in order; ``'xy'`` swaps the first two dims."""
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tuple(tensors[0])
    indexing = "ij" if indexing is None else indexing
    if indexing not in ("ij", "xy"):
        raise RuntimeError(
            f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(
                f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}"
            )
    sizes = [t.numel() for t in tensors]
    order = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        order[0], order[1] = 1, 0
    shape = [sizes[i] for i in order]
    grids = []
    for i, t in enumerate(tensors):
        position = order.index(i)
        view_shape = [1] * len(tensors)
        view_shape[position] = sizes[i]
        grids.append(expand(reshape(t, view_shape), shape))
    return tuple(grids)


def _tri(name: str, xp_name: str) -> OpDef:
    def forward(xp: Any, x: Any, diagonal: int) -> Any:
        return getattr(xp, xp_name)(x, diagonal)

    op = OpDef(name, forward, lambda ctx, g: apply(op, g, diagonal=ctx.attrs["diagonal"]))
    return op


_TRIL = _tri("tril", "tril")
_TRIU = _tri("triu", "triu")


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    _require_matrix(input, "tril")
    return apply(_TRIL, input, diagonal=diagonal)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    _require_matrix(input, "triu")
    return apply(_TRIU, input, diagonal=diagonal)


def _require_matrix(input: Tensor, name: str) -> None:
    if input.ndim < 2:
        raise RuntimeError(
            f"{name}: input tensor must have at least 2 dimensions, got shape {list(input.shape)}"
        )


_DIAG_EMBED = OpDef(
    "diag",
    lambda xp, x, offset: xp.diag(x, offset),
    lambda ctx, g: diagonal(g, ctx.attrs["offset"]),
)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A 1-D input becomes a diagonal matrix; a 2-D input gives its diagonal (a copy)."""
    if input.ndim == 1:
        return apply(_DIAG_EMBED, input, offset=diagonal)
    if input.ndim == 2:
        from .conversion import clone

        return clone(_diagonal_view(input, diagonal))
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices whose diagonal (at ``offset``, in dims ``dim1``/``dim2``) holds the last dim."""
    n = input.shape[-1] + abs(offset)
    shape = tuple(input.shape[:-1]) + (n, n)
    ndim = len(shape)
    out = apply(_DIAGONAL_BACKWARD, input, shape=shape, offset=offset, dim1=ndim - 2, dim2=ndim - 1)
    a, b = normalize_dim(dim1, ndim), normalize_dim(dim2, ndim)
    if (a, b) == (ndim - 2, ndim - 1):
        return out
    return movedim(out, (ndim - 2, ndim - 1), (a, b))


def atleast_1d(input: Tensor) -> Tensor:
    return reshape(input, (1,)) if input.ndim == 0 else input


def atleast_2d(input: Tensor) -> Tensor:
    return reshape(input, (1,) * (2 - input.ndim) + tuple(input.shape)) if input.ndim < 2 else input


def ravel(input: Tensor) -> Tensor:
    """The elements as one dim (a view when the layout allows)."""
    return reshape(input, -1)


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """The view ``input[..., index, ...]`` along ``dim``, which is removed."""
    d = normalize_dim(dim, input.ndim)
    size, index = input.shape[d], int(index)
    if not -size <= index < size:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(input.shape)} "
            f"at dimension {d}"
        )
    return squeeze(narrow(input, d, index % size, 1), d)


def _directional_split(name: str, input: Tensor, sections: Any, dim: int, ndim: int) -> tuple:
    if input.ndim < ndim:
        raise RuntimeError(
            f"torch.{name} requires a tensor with at least {ndim} dimension, but got a tensor "
            f"with {input.ndim} dimensions!"
        )
    if isinstance(sections, int) and (sections == 0 or input.shape[dim] % sections):
        raise RuntimeError(
            f"torch.{name} attempted to split along dimension {dim}, but the size of the "
            f"dimension {input.shape[dim]} is not divisible by the split_size {sections}!"
        )
    return tensor_split(input, sections, dim)


def hsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """``tensor_split`` along dim 1 (dim 0 of a 1-d tensor), equal sections only."""
    dim = 0 if input.ndim == 1 else 1
    return _directional_split("hsplit", input, indices_or_sections, dim, 1)


def vsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """``tensor_split`` along dim 0 of a tensor of at least 2 dims."""
    return _directional_split("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """``tensor_split`` along dim 2 of a tensor of at least 3 dims."""
    return _directional_split("dsplit", input, indices_or_sections, 2, 3)


def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0) -> tuple:
    """Pieces of the given sizes along ``dim``."""
    return split(input, list(split_sizes), dim)


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """A square matrix with the flattened input on diagonal ``offset``."""
    return diag(reshape(input, -1), offset)


def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """``narrow`` as a new tensor."""
    return narrow(input, dim, start, length).clone()


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Windows of ``size`` every ``step`` along ``dimension``, as a new last dim."""
    x = reshape(input, 1) if input.ndim == 0 else input
    d = normalize_dim(dimension, x.ndim)
    if size > x.shape[d]:
        raise RuntimeError(
            f"maximum size for tensor at dimension {d} is {x.shape[d]} but size is {size}"
        )
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    windows = [narrow(x, d, i, size) for i in range(0, x.shape[d] - size + 1, step)]
    out = movedim(stack(windows, d), d + 1, -1)
    return reshape(out, -1) if input.ndim == 0 else out
