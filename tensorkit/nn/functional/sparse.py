"""Lookups by index: ``embedding``, ``embedding_bag`` and ``one_hot``."""

from __future__ import annotations

from ..._dtype import int32, int64
from ..._ranges import composite
from ...autograd.grad_mode import no_grad
from ...ops.binary import where
from ...ops.creation import arange, full, zeros
from ...tensor import Tensor, note_value_read, wrap
from ._names import type_name

__all__ = ["embedding", "embedding_bag", "one_hot"]


def _renorm_rows(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> None:
    """Scale the rows ``indices`` of ``weight`` in place so their norms are at most
    ``max_norm`` (PyTorch's ``embedding_renorm_``)."""
    with no_grad():
        rows = indices.reshape(-1).unique()
        picked = weight[rows]
        norms = picked.norm(norm_type, 1, keepdim=True)
        scale = where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[rows] = picked * scale


def _frequency_scale(flat: Tensor, like: Tensor) -> Tensor:
    """1 / (how often each index occurs in ``flat``), per position, as a column."""
    _, inverse, counts = flat.unique(return_inverse=True, return_counts=True)
    return (1.0 / counts.to(like.dtype))[inverse].unsqueeze(-1)


@composite
def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    """Rows of ``weight`` picked by the integer tensor ``input`` (output shape
    ``input.shape + (embedding_dim,)``). No gradient reaches row ``padding_idx``."""
    if input.dtype not in (int64, int32):
        name = type_name(input.dtype)
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got tensorkit.{name}Tensor instead (while checking "
            "arguments for embedding)"
        )
    if sparse:
        raise ValueError("embedding(): sparse gradients are not supported by tensorkit")
    count = weight.shape[0]
    if padding_idx is not None:
        if not -count <= padding_idx < count:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= count
    flat = input.reshape(-1)
    if flat.numel() and (bool(flat.min() < 0) or bool(flat.max() >= count)):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        _renorm_rows(weight, flat, max_norm, norm_type)
    rows = weight.index_select(0, flat)
    if scale_grad_by_freq and flat.numel():
        # Same value; the gradient of each row is divided by its index's frequency.
        frozen = rows.detach()
        rows = frozen + (rows - frozen) * _frequency_scale(flat, rows)
    if padding_idx is not None:
        rows = where((flat == padding_idx).unsqueeze(-1), rows.detach(), rows)
    return rows.reshape(tuple(input.shape) + (weight.shape[1],))


def _check_indices(t: Tensor, name: str = "embedding") -> None:
    if t.dtype not in (int64, int32):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got tensorkit.{type_name(t.dtype)}Tensor instead (while "
            f"checking arguments for {name})"
        )


def _bag_arguments(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None,
    mode: str,
    scale_grad_by_freq: bool,
    sparse: bool,
    per_sample_weights: Tensor | None,
    include_last_offset: bool,
) -> tuple[Tensor, Tensor, Tensor | None, bool]:
    """PyTorch's Python-level checks; 2-D input becomes flat input plus offsets."""
    if per_sample_weights is not None and input.shape != per_sample_weights.shape:
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, "
            f"then it must have the same shape as the input ({input.shape})"
        )
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a "
                "mini-batch of fixed length sequences. However, found offsets of type "
                f"{type(offsets)}"
            )
        step = max(input.shape[1], 1)
        offsets = arange(0, input.numel(), step, dtype=input.dtype, device=input.device)
        include_last_offset = False
        flat = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.ndim == 1:
        flat = input
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(
            f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}"
        )
    if mode == "max":
        if scale_grad_by_freq:
            raise ValueError("max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    elif mode not in ("sum", "mean"):
        raise ValueError("mode has to be one of sum, mean or max")
    if sparse:
        raise ValueError("embedding_bag(): sparse gradients are not supported by tensorkit")
    return flat, offsets, per_sample_weights, include_last_offset


def _check_bag_values(
    flat: Tensor, offsets: Tensor, count: int, padding_idx: int | None
) -> int | None:
    """PyTorch's kernel-level checks; returns ``padding_idx`` in [0, count)."""
    _check_indices(flat, "embedding_bag")
    _check_indices(offsets, "embedding_bag")
    if padding_idx is not None:
        if not -count <= padding_idx < count:
            raise RuntimeError(
                f"padding_idx must be within the number of embeddings, -{count} through "
                f"{count - 1}, but got {padding_idx}"
            )
        padding_idx %= count
    if offsets.numel():
        first, last = int(offsets[0]), int(offsets[-1])
        if first != 0:
            raise RuntimeError(
                "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to "
                f"start from position 0. However, got {first}"
            )
        if last > flat.numel():
            raise RuntimeError(
                f"offsets[-1] can not be greater than input's length {flat.numel()} but got "
                f"offsets[-1] of {last}"
            )
    bad = ((flat < 0) | (flat >= count)).nonzero()
    if bad.numel():
        position = int(bad[0, 0])
        raise RuntimeError(
            f"Index {position} of input takes value {int(flat[position])} which is not in the "
            f"valid range [0, {count})"
        )
    return padding_idx


def _bag_layout(
    flat: Tensor, offsets: Tensor, include_last_offset: bool, padding_idx: int | None
) -> tuple[Tensor, Tensor, int]:
    """The positions of ``flat`` that enter a bag, the bag of each, and the bag count."""
    xp, dev = flat.device.xp, flat.device
    note_value_read(offsets, "values, in embedding_bag,")
    if padding_idx is not None:
        note_value_read(flat, "values, in embedding_bag,")
    starts = offsets._data.astype(xp.int64)
    bags = max(starts.shape[0] - 1, 0) if include_last_offset else starts.shape[0]
    positions = xp.arange(flat.shape[0])
    end = flat.shape[0] if bags else 0
    if include_last_offset and bags:
        end = int(starts[bags])
    keep = positions < end
    if padding_idx is not None:
        keep &= flat._data != padding_idx
    kept = xp.nonzero(keep)[0]
    bag_of = xp.searchsorted(starts[:bags], kept, side="right") - 1
    return wrap(kept, dev), wrap(bag_of, dev), bags


def _bag_max(rows: Tensor, bag_of: Tensor, bags: int) -> Tensor:
    """Per bag and column, the first largest entry of ``rows`` (0 for an empty bag)."""
    count, dim = rows.shape
    with no_grad():
        index = bag_of.unsqueeze(1).expand(count, dim)
        low = full((bags, dim), float("-inf"), dtype=rows.dtype, device=rows.device)
        best = low.scatter_reduce(0, index, rows, "amax")
        position = arange(count, device=rows.device).unsqueeze(1).expand(count, dim)
        candidate = where(rows == best.gather(0, index), position, count)
        none = full((bags, dim), count, device=rows.device)
        first = none.scatter_reduce(0, index, candidate, "amin")
    picked = rows.gather(0, first.clamp(max=count - 1))
    return where(first == count, 0.0, picked)


@composite
def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """Sums, means or maxes of bags of rows of ``weight``: ``input`` is 2-D (one bag per
    row) or 1-D with ``offsets`` (where each bag starts). Entries equal to ``padding_idx``
    are left out of their bag; an empty bag gives zeros."""
    flat, offsets, per_sample_weights, include_last_offset = _bag_arguments(
        input,
        weight,
        offsets,
        mode,
        scale_grad_by_freq,
        sparse,
        per_sample_weights,
        include_last_offset,
    )
    padding_idx = _check_bag_values(flat, offsets, weight.shape[0], padding_idx)
    if max_norm is not None and flat.numel():
        _renorm_rows(weight, flat, max_norm, norm_type)
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(
                "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                "on GitHub."
            )
        if per_sample_weights.dtype != weight.dtype:
            raise RuntimeError(
                "Expected tensor for argument #1 'weight' to have the same type as tensor for "
                "argument #1 'per_sample_weights'; but type "
                f"tensorkit.{type_name(weight.dtype)}Tensor does not equal "
                f"tensorkit.{type_name(per_sample_weights.dtype)}Tensor (while checking "
                "arguments for embedding_bag)"
            )
    kept, bag_of, bags = _bag_layout(flat, offsets, include_last_offset, padding_idx)
    picked = flat[kept]
    rows = weight.index_select(0, picked)
    out = zeros((bags, weight.shape[1]), dtype=weight.dtype, device=weight.device)
    if mode == "max" and kept.numel():
        return _bag_max(rows, bag_of, bags)
    if scale_grad_by_freq and kept.numel():
        frozen = rows.detach()
        rows = frozen + (rows - frozen) * _frequency_scale(picked, rows)
    if per_sample_weights is not None:
        rows = rows * per_sample_weights[kept].unsqueeze(1)
    out = out.index_add(0, bag_of, rows)
    if mode == "mean":
        sizes = zeros(bags, dtype=weight.dtype, device=weight.device)
        sizes = sizes.index_add(0, bag_of, rows.new_ones(rows.shape[0]))
        out = out / sizes.clamp(min=1).unsqueeze(1)
    return out


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """An int64 tensor with a trailing dim of ``num_classes``: 1 at each index, else 0."""
    if tensor.dtype != int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max()) + 1
    if tensor.numel():
        if bool(tensor.min() < 0):
            raise RuntimeError("Class values must be non-negative.")
        if bool(tensor.max() >= num_classes):
            raise RuntimeError("Class values must be smaller than num_classes.")
    classes = arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).to(int64)
