"""Gradient clipping: by total norm, or by value, in place."""

from __future__ import annotations

import types
import warnings
from collections.abc import Iterable

from ...autograd.grad_mode import no_grad
from ...ops.creation import tensor
from ...ops.shape import stack
from ...tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]


def _grads(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(
    tensors: Tensor | Iterable[Tensor],
    norm_type: float | str = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` together (as if concatenated into one
    vector); 0 for none. ``foreach`` is accepted for compatibility."""
    from ...linalg import vector_norm

    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    with no_grad():
        norms = [vector_norm(t, norm_type) for t in tensors]
        total = vector_norm(stack([n.to(norms[0].device) for n in norms]), norm_type)
    if error_if_nonfinite and bool(total.isnan() | total.isinf()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the "
            "gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    return total


def clip_grads_with_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    total_norm: Tensor,
    foreach: bool | None = None,
) -> None:
    """Scale every gradient by ``min(max_norm / (total_norm + 1e-6), 1)``, in place, for a
    ``total_norm`` computed beforehand (``get_total_norm``)."""
    grads = _grads(parameters)
    if not grads:
        return
    with no_grad():
        coefficient = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coefficient.to(g.device, g.dtype))


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
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if generator and not parameters:
            warnings.warn(
                "`parameters` is an empty generator, no gradient clipping will occur.",
                stacklevel=2,
            )
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_value_(
    parameters: Tensor | Iterable[Tensor], clip_value: float, foreach: bool | None = None
) -> None:
    """Clamp every gradient elementwise to [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
