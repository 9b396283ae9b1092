"""Distances between batches of vectors: ``cosine_similarity`` and ``pairwise_distance``,
composed of differentiable core ops (so any order of derivative works)."""

from __future__ import annotations

from ..._dtype import SCALAR_TYPE_NAMES, promote_types
from ..._ranges import composite
from ...linalg import vector_norm
from ...ops.shape import broadcast_tensors
from ...tensor import Tensor

__all__ = ["cosine_similarity", "pairwise_distance"]


def _broadcast(x1: Tensor, x2: Tensor) -> tuple[Tensor, ...]:
    """Both inputs expanded to one shape; a mismatch raises PyTorch's error."""
    a, b = tuple(x1.shape), tuple(x2.shape)
    for back in range(1, min(len(a), len(b)) + 1):
        if a[-back] != b[-back] and 1 not in (a[-back], b[-back]):
            raise RuntimeError(
                f"The size of tensor a ({a[-back]}) must match the size of tensor b "
                f"({b[-back]}) at non-singleton dimension {max(len(a), len(b)) - back}"
            )
    return broadcast_tensors(x1, x2)


def _clamped_norm(x: Tensor, dim: int, eps: float) -> Tensor:
    """``‖x‖`` along ``dim`` raised to at least ``eps``; as in PyTorch the clamp is outside the
    graph (the gradient is the norm's)."""
    norm = vector_norm(x, 2, dim, keepdim=True)
    return norm + (norm.clamp(min=eps) - norm).detach()


@composite
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``Σ x1·x2 / (max(‖x1‖, eps)·max(‖x2‖, eps))`` along ``dim`` (inputs broadcast)."""
    common = promote_types(x1.dtype, x2.dtype)
    if not common.is_floating_point:
        raise RuntimeError(
            "expected common dtype to be floating point, yet common dtype is "
            f"{SCALAR_TYPE_NAMES[common.name]}"
        )
    x1, x2 = _broadcast(x1, x2)
    return ((x1 / _clamped_norm(x1, dim, eps)) * (x2 / _clamped_norm(x2, dim, eps))).sum(dim)


@composite
def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """The ``p``-norm of ``x1 - x2 + eps`` along the last dim (inputs broadcast)."""
    return vector_norm(x1 - x2 + eps, p, -1, keepdim=keepdim)
