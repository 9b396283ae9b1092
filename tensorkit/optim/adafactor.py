"""Adafactor: Adam-like steps whose second moment of a matrix is kept as row and column factors."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops.creation import zeros, zeros_like
from ..tensor import Tensor
from . import _validate
from .optimizer import Optimizer, ParamsT, step_counter


class Adafactor(Optimizer):
    """Adafactor (Shazeer & Stern, 2018), as ``torch.optim.Adafactor``.

    With ``β2_t = 1 - t^beta2_decay``, the second moment of a gradient of two or more dims is
    the outer product of running row and column means of ``g²`` (over the last two dims)
    divided by the mean row factor; a vector keeps it whole. The update
    ``u = g / sqrt(v)`` is scaled down to RMS at most ``d`` and applied with the relative step
    ``max(eps2, RMS(p))·min(lr, 1/sqrt(t))``. Weight decay scales ``p`` by ``1 - lr·λ`` first.
    ``eps[0]`` (None: the dtype's machine epsilon) bounds the second moment from below.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-2,
        beta2_decay: float = -0.8,
        eps: tuple[float | None, float] = (None, 1e-3),
        d: float = 1.0,
        weight_decay: float = 0.0,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
    ) -> None:
        _validate.at_least("Learning rate", lr, 0)
        _validate.at_most("beta2_decay", beta2_decay, 0)
        if eps[0] is not None:
            _validate.at_least("epsilon1", eps[0], 0)
        _validate.at_least("epsilon2", eps[1], 0)
        _validate.at_least("Clipping threshold d", d, 1)
        _validate.at_least("weight_decay", weight_decay, 0)
        defaults = {
            "lr": lr,
            "beta2_decay": beta2_decay,
            "eps": eps,
            "d": d,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
        }
        super().__init__(params, defaults)

    def _update(self, param: Tensor, grad: Tensor, group: dict[str, Any]) -> None:
        state = self.state[param]
        if not state:
            state["step"] = step_counter()
            if grad.dim() > 1:
                row_shape, col_shape = list(grad.shape), list(grad.shape)
                row_shape[-1], col_shape[-2] = 1, 1
                state["row_var"] = zeros(row_shape, dtype=grad.dtype, device=grad.device)
                state["col_var"] = zeros(col_shape, dtype=grad.dtype, device=grad.device)
            else:
                state["variance"] = zeros_like(grad)
        lr, weight_decay = float(group["lr"]), group["weight_decay"]
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = float(np.finfo(param.dtype.np).eps)
        if group["maximize"]:
            grad = -grad
        step = state["step"].add_(1).item()
        beta2_complement = step ** group["beta2_decay"]
        relative_step = min(lr, 1 / step**0.5)
        alpha = max(eps2, param.norm(2).item() / param.numel() ** 0.5) * relative_step
        if weight_decay != 0:
            param.mul_(1 - lr * weight_decay)
        if grad.dim() > 1:
            row_var, col_var = state["row_var"], state["col_var"]
            row_var.lerp_(_mean_square(grad, -1), beta2_complement)
            col_var.lerp_(_mean_square(grad, -2), beta2_complement)
            estimate = row_var @ col_var
            estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
        else:
            estimate = state["variance"].lerp_(grad * grad, beta2_complement).clone()
        update = estimate.clamp_(min=eps1 * eps1).rsqrt_().mul_(grad)
        denom = max(1.0, update.norm(2).item() / (update.numel() ** 0.5 * group["d"]))
        param.add_(update, alpha=-alpha / denom)


def _mean_square(grad: Tensor, dim: int) -> Tensor:
    """``(g * g).mean(dim, keepdim=True)`` as PyTorch computes it: a squared norm over the size."""
    return grad.norm(dim=dim, keepdim=True).square_().div_(grad.size(dim))
