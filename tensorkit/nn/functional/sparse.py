"""Lookups by index: ``embedding`` and ``one_hot``."""

from __future__ import annotations

from ..._dtype import int32, int64
from ...autograd.grad_mode import no_grad
from ...ops.binary import where
from ...ops.creation import arange
from ...tensor import Tensor
from ._names import type_name

__all__ = ["embedding", "one_hot"]


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
