"""Gradient clipping: by total norm, or by value, in place."""

from __future__ import annotations

from collections.abc import Iterable

from ...autograd.grad_mode import no_grad
from ...ops.creation import tensor
from ...ops.shape import stack
from ...tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _grads(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float | str = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Scale all gradients together so their total ``norm_type``-norm (as if concatenated)
    is at most ``max_norm``; returns that total norm (before clipping). ``foreach`` is
    accepted for compatibility (tensorkit has one implementation)."""
    from ...linalg import vector_norm

    grads = _grads(parameters)
    max_norm = float(max_norm)
    norm_type = float(norm_type)
    if not grads:
        return tensor(0.0)
    with no_grad():
        norms = [vector_norm(g, norm_type) for g in grads]
        total = vector_norm(stack([n.to(norms[0].device) for n in norms]), norm_type)
        if error_if_nonfinite and bool(total.isnan() | total.isinf()):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is "
                "non-finite, so it cannot be clipped. To disable this error and scale the "
                "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
            )
        coefficient = (max_norm / (total + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coefficient.to(g.device, g.dtype))
    return total


def clip_grad_value_(
    parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None
) -> None:
    """Clamp every gradient elementwise to [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
